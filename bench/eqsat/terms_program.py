#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An egglog program of N small top-level terms and two rules (stdout): every term is its own
rebuild, and the e-graph stays small, so it measures what a rebuild costs beside its work (the
GPU engine's captured rebuild graphs against launching the passes).

    python3 bench/eqsat/terms_program.py 2000 > /tmp/terms.egg
    bench_eqsat --program /tmp/terms.egg --iterations 4 --engines gpu,cpu
"""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
print("(datatype M (Add M M) (Mul M M) (Num i64) (V String))")
print("(rewrite (Add a b) (Add b a))")
print("(rewrite (Mul (Num 1) a) a)")
for i in range(count):
    print(f'(Add (Mul (Num {i % 3}) (V "v{i}")) (Num {i}))')
