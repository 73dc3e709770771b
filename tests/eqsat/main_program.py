#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The main job's program (examples/programs/math.egg, run by scripts/main.sh): exit status 0,
one line per iteration on stderr, and the seven extracted terms on stdout.

    main_program.py VYRE_EQSAT PROGRAM EXPECTED [--device cpu|gpu]

On the CPU engine stdout equals what egglog 13.2.0 prints (EXPECTED). On the GPU engine each term
has the cost of egglog's (every constructor and literal of math.egg costs 1): the terms may be
other terms of that cost, because ties are broken by e-class ids, which the GPU engine numbers
in its own order. With --device gpu on a machine without a usable GPU (exit 3) the test is
skipped (exit 77).
"""
import re
import subprocess
import sys

TOKEN = re.compile(r'\(|\)|"[^"]*"|[^\s()]+')


def tree_cost(term):
    """Constructor applications plus literals: math.egg's costs (all 1)."""
    tokens = TOKEN.findall(term)
    literals = sum(1 for i, t in enumerate(tokens)
                   if t not in "()" and (i == 0 or tokens[i - 1] != "("))
    return tokens.count("(") + literals


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    tool, program, expected = sys.argv[1:4]
    device = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--device" else "cpu"
    ran = subprocess.run([tool, "--device", device, program], capture_output=True, text=True,
                         timeout=600)
    if device == "gpu" and ran.returncode == 3:
        print("main_program: SKIPPED: no usable GPU (vyre-eqsat exit 3)")
        sys.exit(77)
    if ran.returncode != 0:
        sys.exit(f"main_program: exit {ran.returncode}: {ran.stderr.strip()}")
    want = [l for l in open(expected).read().splitlines() if l.strip()]
    got = [l for l in ran.stdout.splitlines() if l.strip()]
    if len(got) != len(want):
        sys.exit(f"main_program: {len(got)} terms, {len(want)} expected:\n{ran.stdout}")
    if device == "cpu" and [l.split() for l in got] != [l.split() for l in want]:
        sys.exit(f"main_program: stdout differs from {expected}:\n{ran.stdout}")
    costs = ([tree_cost(t) for t in got], [tree_cost(t) for t in want])
    if costs[0] != costs[1]:
        sys.exit(f"main_program: costs {costs[0]}, egglog's {costs[1]}:\n{ran.stdout}")
    progress = [l for l in ran.stderr.splitlines() if l.startswith("iteration ")]
    if len(progress) != 11:
        sys.exit(f"main_program: {len(progress)} iteration lines on stderr, 11 expected:\n"
                 f"{ran.stderr}")
    same = "equal egglog's" if device == "cpu" else "have egglog's costs"
    print(f"main_program: {device}: the 7 extracted terms {same} ({costs[1]}), 11 iterations")


if __name__ == "__main__":
    main()
