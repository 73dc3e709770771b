#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""egglog itself on an egglog program, timed the way bench_eqsat times vyre (JSON lines).

  egglog_peer.py PROGRAM.egg ITERATIONS REPEATS [BINDINGS_DIR]

Imports egglog's compiled module: `from egglog import bindings` (PyPI egglog), or `bindings`
from BINDINGS_DIR (the GPU machine carries only that module, see
scripts/fetch-device-deps.sh). After a warm-up run (at most 10 iterations), each repeat parses
the program text, runs `(run 1)` ITERATIONS times (egglog's `(run N)` does the same work) and
reads `(print-size)` after each; the line holds the end-to-end seconds (program text to final
counts), the per-iteration seconds and counts, and the repeats' median. `(extract ...)`
commands are left out, as in bench_eqsat.
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from host_info import cpu_name  # noqa: E402


# The warm-up run stops here: iteration 10 (136K e-nodes) warms the module, the allocator and
# the page cache in a fraction of a second, where a full warm-up at 12 iterations costs 30 s.
WARM_UP_ITERATIONS = 10


def load_bindings(directory):
    if directory:
        sys.path.insert(0, directory)
        import bindings  # noqa: E402  (the stripped compiled module alone)
        return bindings
    from egglog import bindings
    return bindings


def one_run(b, text, iterations):
    start = time.perf_counter()
    eg = b.EGraph()
    eg.run_program(*eg.parse_program(text))
    per_iteration = []
    for i in range(1, iterations + 1):
        t0 = time.perf_counter()
        eg.run_program(*eg.parse_program("(run 1)"))
        t1 = time.perf_counter()
        sizes = {name: n for name, n in eg.run_program(*eg.parse_program("(print-size)"))[0].sizes}
        per_iteration.append({"iteration": i, "seconds": t1 - t0, "enodes": sum(sizes.values()),
                              "functions": sizes})
    return time.perf_counter() - start, per_iteration


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    path, iterations, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    b = load_bindings(sys.argv[4] if len(sys.argv) > 4 else "")
    text = "\n".join(l for l in open(path).read().splitlines()
                     if not l.strip().startswith("(extract "))
    seconds = []
    last = None
    one_run(b, text, min(iterations, WARM_UP_ITERATIONS))  # warm-up, untimed
    for _ in range(repeats):
        total, last = one_run(b, text, iterations)
        seconds.append(total)
    print(json.dumps({
        "name": "eqsat.egglog", "program": os.path.basename(path), "iterations": iterations,
        "engine": "egglog 13.2.0 (PyPI compiled module)", "repeats": repeats,
        "median_s": statistics.median(seconds), "min_s": min(seconds), "samples_s": seconds,
        "enodes": last[-1]["enodes"] if last else 0, "per_iteration": last,
        "cpu": cpu_name("unknown cpu"), "cores": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
