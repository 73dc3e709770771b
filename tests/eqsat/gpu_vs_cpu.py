#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vyre-eqsat --device gpu against --device cpu: everything but the seconds must be equal.

  gpu_vs_cpu.py VYRE_EQSAT DATA_DIR WORK_DIR

Runs the small programs of egglog_oracle.py (6 iterations, every root extracted), math.egg
(11 iterations, roots extracted) and math.egg under --node-limit 100000 (the crossing iteration
rolled back) on both engines and compares per iteration: e-nodes, e-classes, e-nodes per
constructor, matches, unions; then the initial counts, why the run stopped and the extract
costs. Extracted terms may differ where two terms tie on cost (row order differs between the
engines); they are printed, not compared. The same runs under --device auto --crossover K (the
CPU engine below K e-nodes, then the GPU engine with its state) for K = 0 (every iteration on
the GPU) and a K that hands off mid-run, each iteration checked to have run where K says.
SKIPPED (exit 77) without a usable CUDA device.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from egglog_oracle import SMALL  # noqa: E402

SKIP = 77
NO_DEVICE = 3  # vyre-eqsat's exit status for --device gpu without a usable device


def run(tool, path, device, extra):
    """`device` is "cpu", "gpu" or "auto:K" (--device auto --crossover K)."""
    flags = ["--device", device]
    if device.startswith("auto:"):
        flags = ["--device", "auto", "--crossover", device[len("auto:"):]]
    out = subprocess.run([tool, path, "--json"] + flags + extra,
                         capture_output=True, text=True, timeout=1200)
    return out.returncode, out.stdout, out.stderr.strip()


def comparable(result):
    def stats(s):
        return {k: s[k] for k in ("iteration", "enodes", "eclasses", "functions", "matches",
                                  "unions") if k in s}
    return {
        "initial": result["initial"],
        "iterations": [stats(s) for s in result["iterations"]],
        "stopped": result["stopped"],
        "extract_costs": [e["cost"] for e in result["extract"]],
    }


def wrong_devices(result, device):
    """Iterations that did not run where `device` says: every one on the GPU for "gpu"; for
    "auto:K" on the GPU from the first that started on K or more e-nodes, on the CPU before."""
    if device == "gpu":
        return [s["iteration"] for s in result["iterations"] if s.get("device") != "gpu"]
    crossover = int(device[len("auto:"):])
    start, moved, wrong = result["initial"]["enodes"], False, []
    for s in result["iterations"]:
        moved = moved or start >= crossover
        if s["device"] != ("gpu" if moved else "cpu"):
            wrong.append(s["iteration"])
        start = s["enodes"]
    return wrong


def compare(name, tool, path, extra, want_stopped=None, device="gpu"):
    name = f"{name} [{device}]"
    rc_cpu, out_cpu, err_cpu = run(tool, path, "cpu", extra)
    rc_gpu, out_gpu, err_gpu = run(tool, path, device, extra)
    if rc_cpu != 0 or rc_gpu != 0:
        print(f"FAIL {name}: exit cpu {rc_cpu} ({err_cpu}) {device} {rc_gpu} ({err_gpu})")
        return 1
    cpu, gpu = json.loads(out_cpu), json.loads(out_gpu)
    wrong = wrong_devices(gpu, device)
    if wrong or gpu.get("gpu_unavailable"):
        print(f"FAIL {name}: iterations {wrong} ran on the wrong engine "
              f"(gpu_unavailable: {gpu.get('gpu_unavailable')})")
        return 1
    a, b = comparable(cpu), comparable(gpu)
    if want_stopped is not None and a["stopped"] != want_stopped:
        print(f"FAIL {name}: the CPU run stopped {a['stopped']}, the test wants {want_stopped}")
        return 1
    if a == b:
        on_gpu = sum(1 for s in gpu["iterations"] if s["device"] == "gpu")
        print(f"ok   {name}: {len(a['iterations'])} iterations ({on_gpu} on the gpu), stopped "
              f"{a['stopped']}, extract costs {a['extract_costs']}")
        for ec, eg in zip(cpu["extract"], gpu["extract"]):
            if ec["best"] != eg["best"]:
                print(f"     (tie) {ec['term']}: cpu {ec['best']} gpu {eg['best']}")
        return 0
    print(f"FAIL {name}:")
    for key in ("initial", "stopped", "extract_costs"):
        if a[key] != b[key]:
            print(f"  {key}: cpu {a[key]} gpu {b[key]}")
    for i in range(max(len(a["iterations"]), len(b["iterations"]))):
        x = a["iterations"][i] if i < len(a["iterations"]) else None
        y = b["iterations"][i] if i < len(b["iterations"]) else None
        if x != y:
            print(f"  iteration {i + 1}: cpu {x}\n  {' ' * len(str(i + 1))}           {device} {y}")
    return 1


def main(tool, data_dir, work):
    os.makedirs(work, exist_ok=True)
    probe = os.path.join(work, "probe.egg")
    with open(probe, "w") as f:
        f.write("(datatype M (Leaf))\n(Leaf)\n")
    rc, _, err = run(tool, probe, "gpu", [])
    if rc == NO_DEVICE:
        print(f"SKIPPED: no usable CUDA device ({err}); the GPU engine did not run.")
        return SKIP
    failures = 0
    for name, src in SMALL.items():
        path = os.path.join(work, name + ".egg")
        with open(path, "w") as f:
            f.write(src + "\n")
        for device in ("gpu", "auto:0", "auto:40"):
            failures += compare(name, tool, path, ["--run", "6", "--extract-roots"],
                                device=device)
    math = os.path.join(data_dir, "math.egg")
    if not os.path.exists(math):
        print(f"FAIL: {math} is missing (set VYRE_EGGLOG_DATA_DIR)")
        return 1
    # math.egg's iterations start on 35, 69, 118, 208, 389, 784, 1576, 3160, 8113, 28303 and
    # 136446 e-nodes: auto:800 hands off before iteration 7, auto:10000 before iteration 10.
    for device in ("gpu", "auto:0", "auto:800", "auto:10000"):
        failures += compare("math.egg 1-11", tool, math, ["--run", "11", "--extract-roots"],
                            "iterations", device)
    for device in ("gpu", "auto:800", "auto:50000"):
        failures += compare("math.egg --node-limit 100000", tool, math,
                            ["--run", "11", "--node-limit", "100000"], "node_limit", device)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
