#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole egglog programs (their own schedules) through vyre-eqsat and egglog itself, timed in
one run on one machine (JSON lines).

  programs.py VYRE_EQSAT TESTS_DIR REPEATS [BINDINGS_DIR] [--devices auto,gpu,cpu]
              [--egglog-timeout SECONDS] [--baseline VYRE_EQSAT] [NAME ...]

TESTS_DIR holds egglog's `tests/` folder (`../shared/data/egglog-tests`; its includes name paths
under `tests/`, so every program runs from there). Each program gets `(print-size)` appended.
vyre-eqsat runs as a process per device (`--device D --json --quiet`, after one warm-up run),
egglog in a Python process of its own through its compiled module (`from egglog import
bindings`, or `bindings` from BINDINGS_DIR as the GPU machine carries it), a warm-up run and
REPEATS timed ones on fresh e-graphs, the process stopped after --egglog-timeout seconds
(default 600; the runs it finished are kept, the warm-up's alone marked `cold`); a line per program holds every engine's seconds (vyre-eqsat: process start to exit;
egglog: parse to the last output, its module loaded) and their median, and `agrees` says whether every engine ended with egglog's sizes (null without them). NAME
picks programs (file names without `.egg`); the default is egglog's large ones. --baseline
times a second vyre-eqsat (another build) on the same devices, its runs alternating with the
first's (keys `baseline-DEVICE`); --egglog-timeout 0 leaves egglog out.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
from host_info import cpu_name  # noqa: E402

LARGE = ["llama", "qwen3_moe", "gemma", "gemma4_moe", "paged_llama", "luminal-llama",
         "eggcc-extraction", "stresstest_large_expr", "repro-herbie-vanilla",
         "hardboiled_conv1d_128", "math-microbenchmark"]


def vyre_run(tool, tests_dir, path, device):
    start = time.perf_counter()
    p = subprocess.run([tool, path, "--device", device, "--json", "--quiet"], cwd=tests_dir,
                       capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    if p.returncode != 0:
        return seconds, None, p.stderr.strip()[-300:]
    doc = json.loads(p.stdout)
    sizes = doc["iterations"][-1]["functions"] if doc["iterations"] else {}
    last = [o for o in doc["outputs"] if o["kind"] == "print-size"]
    on_gpu = sum(1 for it in doc["iterations"] if it["device"] == "gpu")
    return seconds, {"print_size": last[-1]["text"] if last else "", "functions": sizes,
                     "iterations": len(doc["iterations"]), "on_gpu": on_gpu}, ""


# egglog in a process of its own (so that a run past the timeout can be stopped): a warm-up
# run, then the timed ones, each from parse to the last output on a fresh EGraph.
EGGLOG_CHILD = """
import json, sys, time
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
    import bindings as b
else:
    from egglog import bindings as b
text = open(sys.argv[1]).read()
for i in range(int(sys.argv[3]) + 1):
    start = time.perf_counter()
    eg = b.EGraph()
    outputs = eg.run_program(*eg.parse_program(text))
    seconds = time.perf_counter() - start
    sizes = {}
    for o in outputs:
        if hasattr(o, "sizes"):
            sizes = {name: n for name, n in o.sizes}
    print(json.dumps({"warm_up": i == 0, "seconds": seconds, "sizes": sizes}), flush=True)
"""


def egglog_runs(path, bindings_dir, repeats, timeout):
    """egglog's runs of the program: ([seconds], final sizes, why it stopped early or "",
    whether the times are the warm-up's alone), or (None, why not)."""
    try:
        p = subprocess.run([sys.executable, "-c", EGGLOG_CHILD, path, bindings_dir, str(repeats)],
                           capture_output=True, text=True, timeout=timeout)
        text, why = p.stdout, "" if p.returncode == 0 else (
            p.stderr.strip()[-300:] or "exit status %d" % p.returncode)
    except subprocess.TimeoutExpired as e:  # keep the runs it finished
        text = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        why = "stopped after %d s" % timeout
    runs = [json.loads(l) for l in text.strip().splitlines() if l.startswith("{")]
    if not runs:
        return None, why or "no output"
    # Without a finished timed run, the warm-up's time stands (cold: module and caches).
    timed = [r for r in runs if not r["warm_up"]] or runs
    return [r["seconds"] for r in timed], timed[-1]["sizes"], why, runs[0]["warm_up"] and \
        len(timed) == len(runs)


def sizes_of_print(text):
    """vyre's (print-size) text: ((F n) ...) -> {F: n}, the functions egglog lists."""
    out = {}
    for line in text.replace("(", " ").replace(")", " \n").splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def main(argv):
    devices = ["auto", "gpu", "cpu"]
    egglog_timeout = 600
    baseline = None
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == "--devices":
            devices = argv[i + 1].split(",")
            i += 2
        elif argv[i] == "--egglog-timeout":
            egglog_timeout = int(argv[i + 1])
            i += 2
        elif argv[i] == "--baseline":
            baseline = os.path.abspath(argv[i + 1])
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    tool, tests_dir, repeats = os.path.abspath(args[0]), os.path.abspath(args[1]), int(args[2])
    bindings_dir = args[3] if len(args) > 3 and os.path.isdir(args[3]) else ""
    names = [a for a in args[4 if bindings_dir else 3:]] or LARGE
    bindings_dir = os.path.abspath(bindings_dir) if bindings_dir else ""
    work = os.path.join(tests_dir, "tests")
    os.chdir(tests_dir)  # egglog resolves includes from the working directory
    for name in names:
        src = os.path.join(work, name + ".egg")
        text = open(src).read() + "\n(print-size)\n"
        path = os.path.join("/tmp", "vyre-programs-" + name + ".egg")
        with open(path, "w") as f:
            f.write(text)
        line = {"bench": "egglog_program", "program": name, "host_cpu": cpu_name(),
                "cores": os.cpu_count(), "repeats": repeats}
        got = egglog_runs(path, bindings_dir, repeats, egglog_timeout) if egglog_timeout > 0 \
            else (None, "not run")
        if got[0] is None:  # too slow, or egglog 13.2.0 predates one of egglog 3.0's forms
            line["egglog"] = {"error": got[1]}
            want = None
        else:
            seconds, want, why, cold = got
            line["egglog"] = {"seconds": seconds, "median": statistics.median(seconds),
                              "cold": cold}
            if why:
                line["egglog"]["stopped"] = why
        agrees = want is not None
        tools = [(tool, "")] + ([(baseline, "baseline-")] if baseline else [])
        for device in devices:
            runs = {label: [] for _, label in tools}
            for t, _ in tools:
                vyre_run(t, tests_dir, path, device)  # warm-up
            for _ in range(repeats):
                for t, label in tools:
                    runs[label].append(vyre_run(t, tests_dir, path, device))
            for _, label in tools:
                key, got_runs = label + device, runs[label]
                if got_runs[-1][1] is None:
                    line[key] = {"error": got_runs[-1][2]}
                    agrees = False
                    continue
                got = sizes_of_print(got_runs[-1][1]["print_size"])
                line[key] = {"seconds": [r[0] for r in got_runs],
                             "median": statistics.median(r[0] for r in got_runs),
                             "iterations": got_runs[-1][1]["iterations"],
                             "on_gpu": got_runs[-1][1]["on_gpu"]}
                if want is not None:
                    same = all(got.get(k, 0) == v for k, v in want.items() if v != 0)
                    line[key]["sizes_equal_egglog"] = same
                    agrees = agrees and same
        # Null without egglog's sizes to compare with (egglog not run, or it did not finish).
        line["agrees"] = agrees if want is not None else None
        print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
