#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""egglog (PyPI egglog==13.2.0) as the oracle of vyre-eqsat.

  egglog_oracle.py counts PROGRAM.egg ITERATIONS   print egglog's per-iteration counts as JSON
  egglog_oracle.py check VYRE_EQSAT VENV_DIR DATA_DIR WORK_DIR
      installs egglog==13.2.0 into VENV_DIR (SKIPPED, exit 77, when it cannot), then compares
      vyre-eqsat --json with egglog on math.egg (iterations 1-8) and on small programs written
      here: per-iteration per-constructor counts and extract costs.
"""
import json
import os
import subprocess
import sys

SKIP = 77
VERSION = "13.2.0"


def egglog_counts(path, iterations):
    """Runs PROGRAM then `(run 1)` ITERATIONS times; egglog's counts and extract costs."""
    from egglog import bindings as b

    src = open(path).read()
    eg = b.EGraph()
    extract_forms = []
    body = []
    # Extracts run after the iterations, as vyre-eqsat --run N does with them.
    for line in src.splitlines():
        if line.strip().startswith("(extract "):
            extract_forms.append(line.strip())
        else:
            body.append(line)
    eg.run_program(*eg.parse_program("\n".join(body)))

    def sizes():
        out = eg.run_program(*eg.parse_program("(print-size)"))
        return {name: n for name, n in out[0].sizes}

    result = {"iterations": [], "extract": []}
    for i in range(1, iterations + 1):
        before = sizes()
        eg.run_program(*eg.parse_program("(run 1)"))
        after = sizes()
        result["iterations"].append({"iteration": i, "functions": after})
        if after == before and i > 1:
            break
    for form in extract_forms:
        out = eg.run_program(*eg.parse_program(form))
        result["extract"].append(out[0].cost)
    return result


SMALL = {
    "repeated_vars": """(datatype M (Add M M) (Mul M M) (Num i64) (V String))
(rewrite (Add x x) (Mul (Num 2) x))
(rewrite (Mul a b) (Mul b a))
(Add (V "a") (V "a"))
(Add (Add (V "a") (V "b")) (Add (V "a") (V "b")))
(extract (Add (V "a") (V "a")))""",
    "literals_in_patterns": """(datatype M (Add M M) (Num i64) (V String))
(rewrite (Add a (Num 0)) a)
(rewrite (Add (Num 1) (Num 1)) (Num 2))
(rewrite (Add a b) (Add b a))
(rewrite (V "zero") (Num 0))
(Add (V "x") (Num 0))
(Add (Num 1) (Num 1))
(Add (V "y") (V "zero"))
(extract (Add (V "y") (V "zero")))""",
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
}


def vyre_run(tool, path, iterations, work):
    # The same order as the oracle: the program without its extracts, (run N), the extracts.
    lines = open(path).read().splitlines()
    extracts = [l.strip() for l in lines if l.strip().startswith("(extract ")]
    body = [l for l in lines if not l.strip().startswith("(extract ")]
    variant = os.path.join(work, os.path.basename(path) + ".vyre.egg")
    with open(variant, "w") as f:
        f.write("\n".join(body + [f"(run {iterations})"] + extracts) + "\n")
    out = subprocess.run([tool, variant, "--json", "--threads", "2"],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"FAIL {path}: vyre-eqsat exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def compare(name, tool, path, iterations, python, work):
    oracle = subprocess.run([python, __file__, "counts", path, str(iterations)],
                            capture_output=True, text=True, timeout=600)
    if oracle.returncode != 0:
        raise SystemExit(f"FAIL {name}: the oracle failed: {oracle.stderr.strip()}")
    want = json.loads(oracle.stdout)
    got = vyre_run(tool, path, iterations, work)
    failures = 0
    egglog_iters = want["iterations"]
    vyre_iters = got["iterations"]
    # egglog keeps running idle iterations; vyre stops at the first one that changes nothing.
    for i, w in enumerate(egglog_iters):
        g = vyre_iters[min(i, len(vyre_iters) - 1)]["functions"] if vyre_iters else got[
            "initial"]["functions"]
        wf = {k: v for k, v in w["functions"].items()}
        gf = {k: v for k, v in g.items() if v != 0 or k in wf}
        wf = {k: v for k, v in wf.items() if v != 0 or k in gf}
        if gf != wf:
            print(f"FAIL {name} iteration {w['iteration']}: egglog {wf} vyre {gf}")
            failures += 1
    costs = [e["cost"] for e in got["extract"]]
    if costs != want["extract"]:
        print(f"FAIL {name} extract costs: egglog {want['extract']} vyre {costs}")
        failures += 1
    print(f"{'ok  ' if failures == 0 else 'FAIL'} {name}: {len(egglog_iters)} iterations, "
          f"extract costs {costs}, stopped {got['stopped']}")
    return failures


def check(tool, venv, data_dir, work):
    python = os.path.join(venv, "bin", "python")
    try:
        if not os.path.exists(python):
            subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
        probe = subprocess.run([python, "-c", "import egglog, importlib.metadata as m; "
                                "print(m.version('egglog'))"], capture_output=True, text=True)
        if probe.returncode != 0 or probe.stdout.strip() != VERSION:
            subprocess.run([python, "-m", "pip", "install", "-q", f"egglog=={VERSION}"],
                           check=True, timeout=900)
    except Exception as e:  # no network, no venv module, no wheel for this platform
        print(f"SKIPPED: cannot install egglog=={VERSION} into {venv}: {e}")
        return SKIP
    os.makedirs(work, exist_ok=True)
    failures = 0
    for name, src in SMALL.items():
        path = os.path.join(work, name + ".egg")
        with open(path, "w") as f:
            f.write(src + "\n")
        failures += compare(name, tool, path, 6, python, work)
    math = os.path.join(data_dir, "math.egg")
    if not os.path.exists(math):
        print(f"FAIL: {math} is missing (set VYRE_EGGLOG_DATA_DIR)")
        return 1
    failures += compare("math.egg", tool, math, 8, python, work)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "counts":
        print(json.dumps(egglog_counts(sys.argv[2], int(sys.argv[3]))))
    elif len(sys.argv) == 6 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    else:
        print(__doc__)
        sys.exit(2)
