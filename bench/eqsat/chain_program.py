#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An egglog program of N chains (F (V "vi")), held in one balanced term of P nodes, and the rule
(F x) -> (F (G x)) (stdout): every iteration adds a G row and an F row per chain and matches
every F row, so the e-graph grows slowly and keeps its capacity classes for several iterations
at a time: it measures what an iteration costs the GPU engine beside its work (launches, the
captured rebuild a shape replays) against the CPU engine. One term: the program adds it with
one rebuild, so the run is its iterations.

    python3 bench/eqsat/chain_program.py 500 > /tmp/chain.egg
    bench_eqsat --program /tmp/chain.egg --iterations 40 --engines gpu,cpu
"""
import sys


def tree(lo, hi):
    """The chains [lo, hi) as a balanced term (depth log2 N)."""
    if hi - lo == 1:
        return f'(F (V "v{lo}"))'
    mid = (lo + hi) // 2
    return f"(P {tree(lo, mid)} {tree(mid, hi)})"


count = int(sys.argv[1]) if len(sys.argv) > 1 else 500
print("(datatype T (F T) (G T) (V String) (P T T))")
print("(rewrite (F x) (F (G x)))")
print(tree(0, max(count, 1)))
