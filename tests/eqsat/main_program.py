#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The main job's program (examples/programs/math.egg, run by scripts/main.sh): vyre-eqsat's
stdout equals what egglog 13.2.0 prints for it (examples/programs/math.expected), one line per
iteration goes to stderr, and the exit status is 0.

    main_program.py VYRE_EQSAT PROGRAM EXPECTED [--device cpu|gpu]

With --device gpu on a machine without a usable GPU (exit 3) the test is skipped (exit 77).
"""
import subprocess
import sys


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
    want = open(expected).read().split()
    got = ran.stdout.split()
    if got != want:
        sys.exit(f"main_program: stdout differs from {expected}:\n{ran.stdout}")
    progress = [l for l in ran.stderr.splitlines() if l.startswith("iteration ")]
    if len(progress) != 11:
        sys.exit(f"main_program: {len(progress)} iteration lines on stderr, 11 expected:\n"
                 f"{ran.stderr}")
    print(f"main_program: {device}: the 7 extracted terms equal egglog's, 11 iterations reported")


if __name__ == "__main__":
    main()
