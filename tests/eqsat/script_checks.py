# SPDX-License-Identifier: Apache-2.0
"""The checks of the eqsat test scripts that go on past a failure (hostile_input.py,
auto_device.py): `check` reports each failure as it happens and keeps it, `exit_status` ends the
run with the count. The scripts import this module from their own folder (a script's folder is on
sys.path)."""
import sys

failures = []


def check(condition, message):
    """Reports and keeps `message` when `condition` is false; returns `condition`."""
    if not condition:
        failures.append(message)
        print("FAIL: " + message, file=sys.stderr)
    return condition


def exit_status(passed):
    """The script's exit status: 1 with the failures counted on stderr, else 0 with `passed`
    printed."""
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print(passed)
    return 0
