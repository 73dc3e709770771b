#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vyre-eqsat --device gpu against --device cpu: every count but the seconds must be equal.

  gpu_vs_cpu.py VYRE_EQSAT DATA_DIR WORK_DIR

Runs small programs of rewrites and an interval analysis (their terms, (run 6), their extracts,
a print-size), a program whose rulesets the GPU engine partly runs (iterations move the state to
the device and back), math.egg (11 iterations, a print-size) and math.egg under --node-limit
100000 (the crossing iteration rolled back) on both devices and compares per iteration: the
ruleset, e-nodes, e-classes and the rows of every function; then why the run stopped and the
outputs: print-size texts exactly, extract costs (the extracted terms may differ where two
terms tie on cost, since the engines order rows differently: they are printed, not compared),
variants by count. Matches and unions are not compared: the GPU engine matches naively (every
rule against the whole e-graph each iteration, which adds nothing the seminaive CPU engine does
not) and counts the classes merged away. The same runs under --device auto --crossover K (the
CPU engine below K e-nodes, then the GPU engine with its state) for K = 0 (every iteration on
the GPU) and a K that hands off mid-run, each iteration checked to have run where K says.
SKIPPED (exit 77) without a usable CUDA device.
"""
import json
import os
import subprocess
import sys

from rewrite_programs import LITERALS_IN_PATTERNS, REPEATED_VARS

SKIP = 77
NO_DEVICE = 3  # vyre-eqsat's exit status for --device gpu without a usable device

# Small programs of rewrites (terms and extracts; `with_runs` adds the run and a print-size).
SMALL = {
    "repeated_vars": REPEATED_VARS + '\n(extract (Add (V "a") (V "a")))',
    "literals_in_patterns": LITERALS_IN_PATTERNS + '\n(extract (Add (V "y") (V "zero")))',
    "birewrite": """(datatype M (Add M M) (Mul M M) (V String))
(birewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(Mul (V "x") (Add (V "y") (V "z")))
(extract (Add (Mul (V "x") (V "y")) (Mul (V "x") (V "z"))))""",
    "let": """(datatype M (Add M M) (Neg M) (V String))
(let $x (V "x"))
(let y (Neg $x))
(rewrite (Neg (Neg a)) a)
(rewrite (Add a b) (Add b a))
(Add $x (Neg y))
(extract (Add $x (Neg y)))""",
    "depth3": """(datatype M (Add M M) (Mul M M) (Neg M) (V String))
(rewrite (Neg (Add (Mul a b) c)) (Add (Neg (Mul a b)) (Neg c)))
(rewrite (Neg (Neg (Neg a))) (Neg a))
(Neg (Add (Mul (V "a") (V "b")) (V "c")))
(Neg (Neg (Neg (V "q"))))
(extract (Neg (Neg (Neg (V "q")))))""",
    "never_matches": """(datatype M (F M) (G M) (Leaf))
(rewrite (G (G (G x))) x)
(F (F (Leaf)))
(extract (F (F (Leaf))))""",
    "early_saturation": """(datatype M (Add M M) (Num i64))
(rewrite (Add a b) (Add b a))
(Add (Num 1) (Add (Num 2) (Num 3)))
(extract (Add (Num 1) (Add (Num 2) (Num 3))))""",
    "two_datatypes": """(datatype E (Lit i64) (Plus E E))
(datatype S (Assign String E) (Seq S S))
(rewrite (Plus a b) (Plus b a))
(rewrite (Seq (Assign v e) (Assign v e)) (Assign v e))
(rewrite (Plus (Lit 0) e) e)
(Seq (Assign "x" (Plus (Lit 0) (Lit 5))) (Assign "x" (Plus (Lit 5) (Lit 0))))
(extract (Seq (Assign "x" (Plus (Lit 0) (Lit 5))) (Assign "x" (Plus (Lit 5) (Lit 0)))))""",
    "assoc_growth": """(datatype M (Add M M) (Mul M M) (V String))
(rewrite (Add a (Add b c)) (Add (Add a b) c))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(Mul (V "k") (Add (V "a") (Add (V "b") (V "c"))))
(extract (Mul (V "k") (Add (V "a") (Add (V "b") (V "c")))))""",
    # i64 primitives on the device: folding in the head, a filter and a bound result in the
    # query (looked up by the next atom), a division by zero that drops its match
    "constant_folding": """(datatype M (Num i64) (Add M M) (Mul M M) (Half M))
(rewrite (Add (Num a) (Num b)) (Num (+ a b)))
(rewrite (Mul (Num a) (Num b)) (Num (* a b)))
(rewrite (Add a b) (Add b a))
(rule ((Num a) (< a 100) (= b (* a 2)) (Num b)) ((union (Half (Num b)) (Num a))))
(rule ((Num a) (Num b) (= c (/ a b)) (> c 2) (< c 6)) ((Num (+ c 100))))
(Mul (Add (Num 2) (Num 3)) (Add (Num 0) (Mul (Num 4) (Num 5))))
(Num 10)
(extract (Mul (Add (Num 2) (Num 3)) (Add (Num 0) (Mul (Num 4) (Num 5)))))""",
    # an analysis on the device: functions merged by min and max, read by queries, set by
    # heads (two sets in one, a set beside a union), rows of one class folded by the merge
    "interval_analysis": """(datatype M (Num i64) (Add M M) (Mul M M) (V String))
(function lo (M) i64 :merge (max old new))
(function hi (M) i64 :merge (min old new))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rule ((= e (Num n))) ((set (lo e) n) (set (hi e) n)))
(rule ((= e (Add a b)) (= la (lo a)) (= lb (lo b)) (= ha (hi a)) (= hb (hi b)))
      ((set (lo e) (+ la lb)) (set (hi e) (+ ha hb))))
(rule ((= e (Mul a b)) (= la (lo a)) (= lb (lo b)) (= ha (hi a)) (= hb (hi b)))
      ((set (lo e) (* la lb)) (set (hi e) (* ha hb))))
(rule ((= e (Add a b)) (= l (lo e)) (= h (hi e)) (= l h)) ((union e (Num l))))
(set (lo (V "x")) 2)
(set (hi (V "x")) 5)
(Mul (Add (V "x") (Num 3)) (Add (Num 1) (Num 1)))
(extract (Mul (Add (V "x") (Num 3)) (Add (Num 1) (Num 1))))""",
}

# Rulesets the GPU engine runs (algebra) and one it does not (fold: a String primitive in its
# queries).
MIXED = """(datatype M (Num i64) (Add M M) (Mul M M) (V String))
(ruleset algebra)
(ruleset fold)
(rewrite (Add a b) (Add b a) :ruleset algebra)
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :ruleset algebra)
(rule ((= e (Add (Num a) (Num b))) (= s (to-string a))) ((union e (Num (+ a b)))) :ruleset fold)
(rule ((= e (Mul (Num a) (Num b))) (= s (to-string b))) ((union e (Num (* a b)))) :ruleset fold)
(Mul (Add (Num 2) (Num 3)) (Add (V "x") (Mul (Num 4) (Num 1))))
(run-schedule (repeat 3 (seq (run algebra) (run fold))))
(extract (Mul (Add (Num 2) (Num 3)) (Add (V "x") (Mul (Num 4) (Num 1)))))
(print-size)"""
MIXED_GPU_RULESETS = {"algebra"}


def run(tool, path, device, extra):
    """`device` is "cpu", "gpu" or "auto:K" (--device auto --crossover K)."""
    flags = ["--device", device]
    if device.startswith("auto:"):
        flags = ["--device", "auto", "--crossover", device[len("auto:"):]]
    out = subprocess.run([tool, path, "--json", "--threads", "2"] + flags + extra,
                         capture_output=True, text=True, timeout=1200)
    return out.returncode, out.stdout, out.stderr.strip()


def output_key(o):
    if o["kind"] == "extract":
        return (o["kind"], o["cost"])
    if o["kind"] in ("variants", "print-function"):
        return (o["kind"], o["text"].count("\n"))
    return (o["kind"], o["text"])


def comparable(result):
    def stats(s):
        return {k: s[k] for k in ("iteration", "ruleset", "enodes", "eclasses", "functions")}
    return {
        "iterations": [stats(s) for s in result["iterations"]],
        "stopped": result["stopped"],
        "outputs": [output_key(o) for o in result["outputs"]],
    }


def wrong_devices(result, device, gpu_rulesets):
    """Iterations that did not run where `device` says: for "gpu" every iteration of a ruleset
    in `gpu_rulesets` (None: every ruleset) on the GPU, the others on the CPU; for "auto:K" those
    on the GPU from the first that started on K or more e-nodes (the first iteration starts
    below every K used here), on the CPU before."""
    wrong = []
    if device == "gpu":
        for s in result["iterations"]:
            want = "gpu" if gpu_rulesets is None or s["ruleset"] in gpu_rulesets else "cpu"
            if s["device"] != want:
                wrong.append(s["iteration"])
        return wrong
    crossover = int(device[len("auto:"):])
    start, moved = None, False
    for s in result["iterations"]:
        moved = moved or crossover == 0 or (start is not None and start >= crossover)
        if s["device"] != ("gpu" if moved else "cpu"):
            wrong.append(s["iteration"])
        start = s["enodes"]
    return wrong


def compare(name, tool, path, extra, want_stopped=None, device="gpu", gpu_rulesets=None):
    name = f"{name} [{device}]"
    rc_cpu, out_cpu, err_cpu = run(tool, path, "cpu", extra)
    rc_gpu, out_gpu, err_gpu = run(tool, path, device, extra)
    if rc_cpu != 0 or rc_gpu != 0:
        print(f"FAIL {name}: exit cpu {rc_cpu} ({err_cpu}) {device} {rc_gpu} ({err_gpu})")
        return 1
    cpu, gpu = json.loads(out_cpu), json.loads(out_gpu)
    wrong = wrong_devices(gpu, device, gpu_rulesets)
    if wrong or gpu.get("gpu_unavailable"):
        print(f"FAIL {name}: iterations {wrong} ran on the wrong engine "
              f"(gpu_unavailable: {gpu.get('gpu_unavailable')})")
        return 1
    if device.startswith("auto:") and gpu["crossover"] != int(device[len("auto:"):]):
        print(f"FAIL {name}: crossover {gpu['crossover']}")
        return 1
    want_device = gpu["iterations"][-1]["device"] if gpu["iterations"] else "cpu"
    if gpu["device"] != want_device or cpu["device"] != "cpu" or cpu["crossover"] is not None:
        print(f"FAIL {name}: device {gpu['device']} (last iteration {want_device}), cpu run "
              f"device {cpu['device']} crossover {cpu['crossover']}")
        return 1
    a, b = comparable(cpu), comparable(gpu)
    if want_stopped is not None and a["stopped"] != want_stopped:
        print(f"FAIL {name}: the CPU run stopped {a['stopped']}, the test wants {want_stopped}")
        return 1
    if a == b:
        on_gpu = sum(1 for s in gpu["iterations"] if s["device"] == "gpu")
        print(f"ok   {name}: {len(a['iterations'])} iterations ({on_gpu} on the gpu), stopped "
              f"{a['stopped']}, extract costs {[e['cost'] for e in cpu['extract']]}")
        for ec, eg in zip(cpu["extract"], gpu["extract"]):
            if ec["best"] != eg["best"]:
                print(f"     (tie) cpu {ec['best']} gpu {eg['best']}")
        return 0
    print(f"FAIL {name}:")
    for key in ("stopped", "outputs"):
        if a[key] != b[key]:
            print(f"  {key}: cpu {a[key]} gpu {b[key]}")
    for i in range(max(len(a["iterations"]), len(b["iterations"]))):
        x = a["iterations"][i] if i < len(a["iterations"]) else None
        y = b["iterations"][i] if i < len(b["iterations"]) else None
        if x != y:
            print(f"  iteration {i + 1}: cpu {x}\n  {' ' * len(str(i + 1))}           {device} {y}")
    return 1


def with_runs(src, iterations):
    """The program's terms, (run N), its extracts, then a print-size (as egglog_oracle.py)."""
    lines = src.splitlines()
    extracts = [l for l in lines if l.strip().startswith("(extract ")]
    body = [l for l in lines if not l.strip().startswith("(extract ")]
    return "\n".join(body + [f"(run {iterations})"] + extracts + ["(print-size)"]) + "\n"


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
            f.write(with_runs(src, 6))
        for device in ("gpu", "auto:0", "auto:40"):
            failures += compare(name, tool, path, [], device=device)
    mixed = os.path.join(work, "mixed.egg")
    with open(mixed, "w") as f:
        f.write(MIXED + "\n")
    failures += compare("mixed rulesets", tool, mixed, [], device="gpu",
                        gpu_rulesets=MIXED_GPU_RULESETS)
    math_src = os.path.join(data_dir, "math.egg")
    if not os.path.exists(math_src):
        print(f"FAIL: {math_src} is missing (set VYRE_EGGLOG_DATA_DIR)")
        return 1
    math = os.path.join(work, "math-print-size.egg")
    with open(math_src) as src, open(math, "w") as f:
        f.write(src.read() + "\n(run 11)\n(print-size)\n")
    # math.egg's iterations start on 35, 69, 118, 208, 389, 784, 1576, 3160, 8113, 28303 and
    # 136446 e-nodes: auto:800 hands off before iteration 7, auto:10000 before iteration 10.
    for device in ("gpu", "auto:0", "auto:800", "auto:10000"):
        failures += compare("math.egg 1-11", tool, math, [], "iterations", device)
    for device in ("gpu", "auto:800", "auto:50000"):
        failures += compare("math.egg --node-limit 100000", tool, math,
                            ["--node-limit", "100000"], "node_limit", device)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
