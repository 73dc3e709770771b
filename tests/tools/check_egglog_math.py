#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vyre-egraph on a real egglog e-graph: egglog's math benchmark after 8 iterations.

Generates the e-graph with scripts/egglog_math.py (PyPI egglog 13.2.0, in a venv made here when
none is given), then checks that `vyre-egraph extract` gives egglog's own `(extract ...)` costs
for the seven roots, that `--root CLASS` picks roots, and that a file with `root_eclasses: []`
has every e-class extracted with a note on stderr.

usage: check_egglog_math.py VYRE_EGRAPH SOURCE_DIR MATH_EGG WORK_DIR
Exit status: 0 passed, 1 failed, 77 skipped (egglog cannot be installed, or no math.egg).
Set VYRE_EGGLOG_PYTHON to a Python that has egglog 13.2.0 to skip the venv.
"""
import json
import os
import shutil
import subprocess
import sys

from tool_check import skip

EGGLOG = "egglog==13.2.0"


def has_egglog(python):
    return subprocess.run([python, "-c", "import egglog.bindings"], capture_output=True).returncode == 0


def egglog_python(source_dir, work_dir):
    candidates = [os.environ.get("VYRE_EGGLOG_PYTHON"),
                  os.path.join(source_dir, ".cache", "egglog-venv", "bin", "python"),
                  os.path.join(work_dir, "egglog-venv", "bin", "python")]
    for python in candidates:
        if python and os.path.exists(python) and has_egglog(python):
            return python
    venv = os.path.join(work_dir, "egglog-venv")
    for base in ("python3.11", "python3.12", "python3.10", sys.executable):
        if not shutil.which(base):
            continue  # that Python is not installed here
        made = subprocess.run([base, "-m", "venv", venv], capture_output=True, text=True)
        if made.returncode == 0:
            break
    else:
        skip("cannot create a Python venv for egglog")
    python = os.path.join(venv, "bin", "python")
    try:
        installed = subprocess.run([python, "-m", "pip", "install", "-q", EGGLOG],
                                   capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        skip(f"pip install {EGGLOG} took over 10 minutes (no network?)")
    if installed.returncode != 0 or not has_egglog(python):
        skip(f"pip install {EGGLOG} failed: {installed.stderr.strip()[-300:]}")
    return python


failures = []
passed = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    (passed if condition else failures).append(what)


def extract(tool, path, *extra):
    run = subprocess.run([tool, "extract", "--device", "cpu", "--json", path, *extra],
                         capture_output=True, text=True, timeout=600)
    return run, (json.loads(run.stdout) if run.returncode == 0 else None)


def main():
    tool, source_dir, program, work_dir = sys.argv[1:5]
    if not os.path.exists(program):
        skip(f"no egglog program at {program}")
    os.makedirs(work_dir, exist_ok=True)
    python = egglog_python(source_dir, work_dir)
    graph = os.path.join(work_dir, "math-8.json")
    made = subprocess.run([python, os.path.join(source_dir, "scripts", "egglog_math.py"),
                           "--iterations", "8", "--program", program, graph],
                          capture_output=True, text=True, timeout=600)
    if made.returncode != 0:
        print(made.stdout, made.stderr)
        return 1
    egglog = json.loads(made.stdout)
    print(f"egglog: {egglog}")
    roots, costs = egglog["roots"], egglog["egglog_costs"]
    check(len(roots) == 7, "the script names the seven roots")

    run, out = extract(tool, graph)
    check(out is not None, f"extract runs (stderr: {run.stderr.strip()})")
    if out:
        check(out["roots"] == 7, "extract reads the seven root_eclasses")
        check(out["root_costs"] == costs,
              f"per-root costs equal egglog's: {out['root_costs']} vs {costs}")
        check(out["unextractable_classes"] == 0, "every e-class has a finite tree")

    run, out = extract(tool, graph, "--root", roots[3], "--root", roots[0])
    check(out is not None and out["root_costs"] == [costs[3], costs[0]],
          f"--root picks roots in order: {out and out['root_costs']}")

    with open(graph, encoding="utf-8") as f:
        text = f.read()
    listed = '"root_eclasses":' + json.dumps(roots, separators=(",", ":"))
    check(listed in text, "the file lists the roots as egglog writes them")
    no_roots = os.path.join(work_dir, "math-8-no-roots.json")
    with open(no_roots, "w", encoding="utf-8") as f:
        f.write(text.replace(listed, '"root_eclasses":[]'))
    run, out = extract(tool, no_roots)
    check(out is not None and out["roots"] == out["classes"] and
          len(out["root_costs"]) == out["classes"],
          "a file without roots extracts every e-class")
    check("no root_eclasses" in run.stderr and run.stderr.count("\n") >= 1,
          f"... and says so on stderr: {run.stderr.strip()!r}")
    run, out = extract(tool, no_roots, "--root", roots[6])
    check(out is not None and out["root_costs"] == [costs[6]], "--root on a file without roots")
    check("no root_eclasses" not in run.stderr, "... without the note")
    run, _ = extract(tool, graph, "--root", "no-such-class")
    check(run.returncode == 2 and "no-such-class" in run.stderr and "--root" in run.stderr,
          f"an unknown --root exits 2 naming it: {run.stderr.strip()!r}")

    print(f"{len(passed)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
