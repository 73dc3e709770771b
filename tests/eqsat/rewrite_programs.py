# SPDX-License-Identifier: Apache-2.0
"""Small rewrite programs (a datatype, rewrites and terms; no runs, no outputs) that more than one
eqsat test runs: egglog_oracle.py against egglog, gpu_vs_cpu.py on the GPU against the CPU, and
eqsat_gpu_test.cu (literals_in_patterns). Each is a file of programs/, read here once. The tests
import this module from their own folder (a script's folder is on sys.path)."""
import os

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def program(name):
    """The text of programs/`name`.egg, without its last newline."""
    with open(os.path.join(PROGRAMS, name + ".egg")) as f:
        return f.read().rstrip("\n")


REPEATED_VARS = program("repeated_vars")
LITERALS_IN_PATTERNS = program("literals_in_patterns")
