# SPDX-License-Identifier: Apache-2.0
"""Small rewrite programs (a datatype, rewrites and terms; no runs, no outputs) that more than one
eqsat test runs: egglog_oracle.py against egglog, gpu_vs_cpu.py on the GPU against the CPU. The
tests import this module from their own folder (a script's folder is on sys.path)."""

# Repeated pattern variables and commutativity.
REPEATED_VARS = """(datatype M (Add M M) (Mul M M) (Num i64) (V String))
(rewrite (Add x x) (Mul (Num 2) x))
(rewrite (Mul a b) (Mul b a))
(Add (V "a") (V "a"))
(Add (Add (V "a") (V "b")) (Add (V "a") (V "b")))"""

# Literals in patterns (i64 and String), a rewrite to a constant.
LITERALS_IN_PATTERNS = """(datatype M (Add M M) (Num i64) (V String))
(rewrite (Add a (Num 0)) a)
(rewrite (Add (Num 1) (Num 1)) (Num 2))
(rewrite (Add a b) (Add b a))
(rewrite (V "zero") (Num 0))
(Add (V "x") (Num 0))
(Add (Num 1) (Num 1))
(Add (V "y") (V "zero"))"""
