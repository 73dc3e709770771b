#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Wall time of `vyre-egraph extract` per real e-graph file: --device auto (the default) against
--device cpu, as a user runs it (a new process per call, JSON output discarded). Each file runs
both ways in rotating order, --repeats times after one warm-up of each, and reports the medians.
A third run per repeat, --device cpu again, gives the noise floor: the same command against
itself (`cpu_vs_cpu_ratio`), since on files of a few milliseconds process start-up jitter is
already near 10%. A last line gives the worst ratios over the files. JSON lines on stdout.

    scripts/cli_wall.py TOOL DATA_DIR [--repeats K] [--extra FILE ...]

On a GPU machine this checks that the automatic device choice never costs a real file more than
the CPU path (the target: auto within 1.1x of cpu on every file).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def run(tool, device, path):
    start = time.perf_counter()
    done = subprocess.run([tool, "extract", "--json", "--device", device, path],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"cli_wall: {tool} extract --device {device} {path} exited "
                 f"{done.returncode}: {done.stderr.decode(errors='replace').strip()}")
    return seconds, json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tool")
    parser.add_argument("data_dir")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--extra", nargs="*", default=[], help="more files (e.g. math-11.json)")
    args = parser.parse_args()
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(args.data_dir)
                   for name in names if name.endswith(".json"))
    files += args.extra
    if not files:
        sys.exit(f"cli_wall: no .json files under {args.data_dir}")
    cpu = f"{cpu_name()}, {os.cpu_count()} cores"
    worst = worst_same = (0.0, "")
    for path in files:
        times = {"auto": [], "cpu": [], "cpu again": []}
        for k in range(args.repeats + 1):
            order = ("auto", "cpu", "cpu again")
            order = order[k % 3:] + order[:k % 3]
            for run_name in order:
                device = run_name.split()[0]
                seconds, result = run(args.tool, device, path)
                if k > 0:
                    times[run_name].append(seconds)
                if device == "auto":
                    auto_device = result.get("device")
        auto, cpu_s = statistics.median(times["auto"]), statistics.median(times["cpu"])
        ratio = auto / cpu_s
        same = statistics.median(times["cpu again"]) / cpu_s
        worst = max(worst, (ratio, path))
        worst_same = max(worst_same, (same, path))
        print(json.dumps({"name": "cli.extract_wall_auto_vs_cpu",
                          "params": {"file": os.path.relpath(path, args.data_dir)
                                     if path.startswith(args.data_dir) else path,
                                     "nodes": result.get("nodes"), "repeats": args.repeats,
                                     "auto_device": auto_device},
                          "host": cpu, "median_s": round(auto, 6),
                          "baseline": "vyre-egraph extract --device cpu",
                          "baseline_median_s": round(cpu_s, 6), "ratio": round(ratio, 4),
                          "cpu_vs_cpu_ratio": round(same, 4)}),
              flush=True)
    print(json.dumps({"name": "cli.extract_wall_auto_vs_cpu.worst", "files": len(files),
                      "host": cpu, "worst_ratio": round(worst[0], 4), "worst_file": worst[1],
                      "worst_cpu_vs_cpu_ratio": round(worst_same[0], 4),
                      "worst_cpu_vs_cpu_file": worst_same[1]}),
          flush=True)


if __name__ == "__main__":
    main()
