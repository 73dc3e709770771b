# SPDX-License-Identifier: Apache-2.0
"""What the check_*.py scripts of the command-line tools share: the skip status, the list of
failed checks, `check` and `run`."""
import subprocess
import sys

SKIP = 77
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message, file=sys.stderr)


def run(tool, *args, timeout=300):
    result = subprocess.run([tool, *args], capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr
