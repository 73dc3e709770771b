#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vyre-eqsat --device auto on any machine (host test): the CPU engine below the crossover,
the GPU from there when a CUDA device is present, else the CPU with the reason said.

  auto_device.py VYRE_EQSAT WORK_DIR

A small program (4 or more iterations, an extract and a print-size before them) under --device
auto with the default crossover runs every iteration on the CPU (no backend is made:
"gpu_unavailable" is null) and equals --device cpu. With --crossover 0 and no usable CUDA device (--device gpu exits 3) the run
stays on the CPU, exits 0, equals --device cpu and says why, in the JSON ("gpu_unavailable") and
in the text output; with a device every iteration runs on the GPU instead. A mid-run crossover
moves on at the first iteration that starts on that many e-nodes. Bad --crossover values exit 2.
"""
import json
import os
import subprocess
import sys

from script_checks import check, exit_status

NO_DEVICE = 3  # vyre-eqsat's exit status for --device gpu without a usable device
BAD_USAGE = 2

PROGRAM = """(datatype E (Lit i64) (Plus E E) (Times E E))
(rewrite (Plus a b) (Plus b a))
(rewrite (Plus a (Plus b c)) (Plus (Plus a b) c))
(rewrite (Times a (Plus b c)) (Plus (Times a b) (Times a c)))
(let $x (Plus (Lit 0) (Plus (Lit 5) (Lit 7))))
(Times (Lit 2) $x)
(extract (Times (Lit 2) $x))
(print-size)"""

def run(tool, *args):
    out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout, out.stderr.strip()


def counts(result):
    """Everything but the seconds, the engines and what they count differently (matches: the
    GPU engine matches naively; unions: it counts the classes merged away)."""
    keys = ("iteration", "ruleset", "enodes", "eclasses", "functions")
    return {"stopped": result["stopped"],
            "iterations": [{k: s[k] for k in keys} for s in result["iterations"]],
            "extract": [e["cost"] for e in result["extract"]]}


def initial_enodes(result):
    """The rows before the first iteration: the program's print-size, which runs before the
    iterations of --run."""
    text = [o["text"] for o in result["outputs"] if o["kind"] == "print-size"][0]
    return sum(int(tok.strip("()")) for tok in text.split() if tok.strip("()").isdigit())


def main(tool, work):
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "auto.egg")
    with open(path, "w") as f:
        f.write(PROGRAM + "\n")
    common = ["--json", "--run", "6", "--threads", "2"]
    rc, out, err = run(tool, path, "--device", "cpu", *common)
    check(rc == 0, f"--device cpu exited {rc}: {err}")
    cpu = json.loads(out)
    check(all(s["device"] == "cpu" for s in cpu["iterations"]), "--device cpu: an iteration "
          "not on the cpu")
    check(cpu["crossover"] is None and cpu["gpu_unavailable"] is None,
          f"--device cpu: crossover {cpu['crossover']}, gpu_unavailable {cpu['gpu_unavailable']}")
    enodes = [initial_enodes(cpu)] + [s["enodes"] for s in cpu["iterations"]]
    check(len(cpu["iterations"]) >= 4 and enodes[-1] < 8192,
          f"the program should run 4 or more iterations below the default crossover: e-nodes "
          f"{enodes}")

    # The default crossover: every iteration on the CPU, no backend made.
    rc, out, err = run(tool, path, *common)  # --device auto is the default
    check(rc == 0, f"--device auto exited {rc}: {err}")
    auto = json.loads(out)
    check(counts(auto) == counts(cpu), "--device auto: counts differ from --device cpu")
    check(all(s["device"] == "cpu" for s in auto["iterations"]),
          "--device auto: an iteration below the crossover ran on the gpu")
    check(auto["crossover"] == 8192, f"--device auto: crossover {auto['crossover']}, not 8192")
    check(auto["gpu_unavailable"] is None and auto["device"] == "cpu",
          f"--device auto below the crossover tried the gpu: {auto['gpu_unavailable']}")

    gpu_rc, _, _ = run(tool, path, "--device", "gpu", "--run", "0")
    have_gpu = gpu_rc != NO_DEVICE
    print(f"CUDA device: {'present' if have_gpu else 'none (--device gpu exits 3)'}")
    middle = enodes[3]  # iteration 4 starts there
    for crossover in (0, middle):
        rc, out, err = run(tool, path, "--crossover", str(crossover), *common)
        check(rc == 0, f"--crossover {crossover} exited {rc}: {err}")
        got = json.loads(out)
        check(counts(got) == counts(cpu), f"--crossover {crossover}: counts differ from cpu")
        want = ["gpu" if have_gpu and start >= crossover else "cpu" for start in enodes[:-1]]
        if have_gpu:  # once on the GPU it stays there
            want = ["gpu" if "gpu" in want[:i + 1] else "cpu" for i in range(len(want))]
        devices = [s["device"] for s in got["iterations"]]
        check(devices == want, f"--crossover {crossover}: iterations ran on {devices}, "
              f"want {want}")
        if have_gpu:
            check(got["gpu_unavailable"] is None, f"--crossover {crossover}: the gpu is present "
                  f"but auto says {got['gpu_unavailable']}")
        else:
            reason = got["gpu_unavailable"] or ""
            check("no usable CUDA device" in reason,
                  f"--crossover {crossover}: without a device gpu_unavailable is {reason!r}")
            check(got["device"] == "cpu", f"--crossover {crossover}: device {got['device']}")
    if not have_gpu:
        rc, out, err = run(tool, path, "--crossover", "0", "--run", "2")
        check(rc == 0, f"--crossover 0 (text) exited {rc}: {err}")
        lines = err.splitlines()  # the iterations and the reason go to stderr
        check(any(line.startswith("iteration 2:") and line.endswith("(cpu)") for line in lines),
              f"stderr does not say iteration 2 ran on the cpu:\n{err}")
        reasons = [line for line in lines
                   if line.startswith("vyre-eqsat: --device auto: the run stayed on the CPU: ")]
        check(len(reasons) == 1 and "no usable CUDA device" in reasons[0],
              f"stderr does not say once why the gpu was not used:\n{err}")
        rc, out, err = run(tool, path, "--crossover", "0", "--run", "2", "--quiet")
        check(rc == 0 and err == "", f"--quiet: exit {rc}, stderr {err!r}")

    for bad in ("-1", "many"):
        rc, _, err = run(tool, path, "--crossover", bad)
        check(rc == BAD_USAGE and err.count("\n") == 0,
              f"--crossover {bad}: exit {rc} (want {BAD_USAGE}, one line on stderr): {err}")

    return exit_status("ok")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
