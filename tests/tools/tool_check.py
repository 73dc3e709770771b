# SPDX-License-Identifier: Apache-2.0
"""What the check_*.py scripts of the command-line tools share: the skip status, the list of
failed checks, `check`, `run`, the command line and data folder of the TOOL MODE DATA_DIR
WORK_DIR scripts, the e-graphs they all read, and the closing report."""
import os
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


def skip(reason):
    """Reports the test SKIPPED (exit status 77) for `reason`."""
    print(f"SKIPPED: {reason}")
    sys.exit(SKIP)


def arguments(usage):
    """TOOL, MODE, DATA_DIR and WORK_DIR from the command line (WORK_DIR created); prints `usage`
    and exits 2 without them."""
    if len(sys.argv) != 5:
        print(usage, file=sys.stderr)
        sys.exit(2)
    tool, mode, data_dir, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    return tool, mode, data_dir, work


def has_data(data_dir):
    """Whether `data_dir` holds the e-graph corpus (its expected_tree_cost.tsv)."""
    return os.path.isfile(os.path.join(data_dir, "expected_tree_cost.tsv"))


def finish():
    """The exit status: 1 after any failed check (counted on stderr), else 0 ("ok")."""
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    print("ok")
    return 0


# Small and medium real e-graphs with cycles, several roots and shared children, which every
# corpus check reads (each adds its own).
SMALL_EGRAPHS = ["crafted/multi_root.json", "crafted/tree_plus_cycles.json",
                 "egg/math_simplify_factor.json", "egg/integ_part2.json", "fuzz/29.json",
                 "fuzz/37.json"]
