#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs egglog's `math` benchmark for N iterations and writes the e-graph as egraph-serialize JSON.

The seven top-level terms of math.egg become `(let $t0 ...)` .. `(let $t6 ...)` bindings, so the
serialized e-graph names their e-classes in `root_eclasses` (in that order). egglog's own
`(extract $tK)` costs for the same roots are printed too (and written with --costs), so that
vyre-egraph's extraction can be checked against them.

Needs the PyPI package `egglog` 13.2.0 (Python >= 3.10). Set it up once, in a git-ignored folder:

    python3.11 -m venv .cache/egglog-venv
    .cache/egglog-venv/bin/pip install egglog==13.2.0
    .cache/egglog-venv/bin/python scripts/egglog_math.py --iterations 11 .cache/math-11.json

Sizes (egglog 13.2.0, 2 cores): 8 iterations ~8 K e-nodes, instant; 11 iterations ~1.05 M
e-nodes, 160 MB of JSON, a few seconds; 12 iterations ~16 M e-nodes, ~50 s and 3 GB in egglog.
Large outputs are generated, never committed.

Output on stdout: one JSON line {"iterations", "nodes", "roots", "egglog_costs", "seconds", ...}.
Exit status: 0 ok, 2 bad usage or input, 77 egglog is not importable (callers report SKIPPED).
"""
import argparse
import json
import os
import sys
import time

DEFAULT_PROGRAM = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "egglog", "math.egg"
)
TERMS = 7
EGGLOG_VERSION = "13.2.0"


def split_program(text):
    """The rules of math.egg and its top-level terms (the last TERMS top-level forms)."""
    forms, depth, start = [], 0, None
    in_string = False
    for i, c in enumerate(text):
        if in_string:
            if c == '"' and text[i - 1] != "\\":
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c == ";" and depth == 0:
            continue
        elif c == "(":
            if depth == 0:
                start = i
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                forms.append(text[start : i + 1])
    terms = [f for f in forms if not f.startswith(("(datatype", "(rewrite", "(rule", "(run"))]
    if len(terms) < TERMS:
        raise ValueError(f"expected {TERMS} top-level terms, found {len(terms)}")
    rules = [f for f in forms if f not in terms[-TERMS:]]
    return rules, terms[-TERMS:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", help="egraph-serialize JSON file to write")
    parser.add_argument("--iterations", "-n", type=int, default=8, help="(run N); default 8")
    parser.add_argument("--program", default=DEFAULT_PROGRAM, help="the math.egg program")
    parser.add_argument("--costs", help="also write {roots, egglog_costs} as JSON here")
    args = parser.parse_args()
    if args.iterations < 0:
        print("egglog_math.py: --iterations must be >= 0", file=sys.stderr)
        return 2
    try:
        import egglog
        from egglog import bindings
    except ImportError as e:
        print(
            f"egglog_math.py: cannot import egglog ({e}). Fix: python3.11 -m venv "
            f".cache/egglog-venv && .cache/egglog-venv/bin/pip install egglog=={EGGLOG_VERSION}",
            file=sys.stderr,
        )
        return 77
    version = getattr(egglog, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as package_version

            version = package_version("egglog")
        except Exception:  # noqa: BLE001 - only informative
            version = "unknown"
    try:
        with open(args.program, encoding="utf-8") as f:
            rules, terms = split_program(f.read())
    except (OSError, ValueError) as e:
        print(f"egglog_math.py: {args.program}: {e}", file=sys.stderr)
        return 2

    names = [f"$t{i}" for i in range(TERMS)]
    program = "\n".join(rules + [f"(let {n} {t})" for n, t in zip(names, terms)])
    start = time.monotonic()
    egraph = bindings.EGraph()
    egraph.run_program(*egraph.parse_program(program))
    if args.iterations > 0:
        egraph.run_program(*egraph.parse_program(f"(run {args.iterations})"))
    run_seconds = time.monotonic() - start

    costs = []
    for name in names:
        (best,) = egraph.run_program(*egraph.parse_program(f"(extract {name})"))
        costs.append(best.cost)

    serialized = egraph.serialize([bindings.Var(bindings.PanicSpan(), n) for n in names])
    if serialized.truncated_functions or serialized.discarded_functions:
        print("egglog_math.py: egglog truncated the serialized e-graph", file=sys.stderr)
        return 1
    text = serialized.to_json()
    del serialized
    doc_tail = text[text.rfind('"root_eclasses"') :]
    roots = json.loads(doc_tail[doc_tail.index("[") : doc_tail.index("]") + 1])
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    summary = {
        "iterations": args.iterations,
        "output": args.output,
        "bytes": len(text),
        "nodes": text.count('"eclass":'),
        "roots": roots,
        "egglog_costs": costs,
        "egglog_version": version,
        "run_seconds": round(run_seconds, 3),
    }
    if args.costs:
        with open(args.costs, "w", encoding="utf-8") as f:
            json.dump({"roots": roots, "egglog_costs": costs}, f)
            f.write("\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
