#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vyre-eqsat under careless and hostile input, as a user runs it (--device DEVICE).

  hostile_input.py VYRE_EQSAT WORK_DIR [--device cpu|gpu] [--egraph VYRE_EGRAPH] [--sanitized]

Every run must end with an exit status of the contract (0 success, 1 the machine failed, 2 bad
input or usage with one line on stderr, 3 --device gpu without a GPU), never a signal, within a
minute; and what it prints must be right:
- deep nesting (12 KB of `(`, a term 11,421 deep) is refused with exit 2 and `file:line:col`;
- wide rows and rules (a constructor of 70 arguments, a rule of 300 variables) run;
- limits limit: a quadratic rule set under --node-limit stops as the node limit with exit 0 and
  stays within a memory bound, and (--device cpu) a run whose next iteration is rolled back
  peaks within twice the run that makes only what it keeps; out of memory inside a multi-threaded search is exit 1 with a
  message (address space capped), never an abort;
- bad option values (negative, past 2^64, nan, a directory, /proc/self/mem) exit 2;
- --emit writes valid, unambiguous JSON whatever the names and strings are (backslashes,
  control characters, invalid UTF-8, a constructor named like a literal id), and vyre-egraph
  reads it (when --egraph is given);
- deep and exponentially shared terms print in full or with egglog's `let` sharing, never `?`;
  a cost past 2^64 - 1 is an error that says so;
- reading is linear: 100,000 string literals and 100,000 lets each take seconds.
--sanitized (a build under AddressSanitizer, which reserves terabytes of address space and
doubles the memory in use) leaves out the two memory checks and says so.
Exit: 0 all held; 1 a failure (each printed); 77 --device gpu without a usable GPU (SKIPPED).
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from script_checks import check, exit_status

SKIP = 77
CONTRACT = {0, 1, 2, 3}


class Runner:
    def __init__(self, tool, work, device, sanitized):
        self.tool, self.work, self.device, self.sanitized = tool, work, device, sanitized

    def write(self, name, text, mode="w"):
        path = os.path.join(self.work, name)
        with open(path, mode) as f:
            f.write(text)
        return path

    def run(self, what, args, timeout=60, memory=None):
        """Runs the tool; checks the status is in the contract and stderr is one line on 2.
        Sets `peak_kb` to the run's own peak resident memory."""
        def cap():
            if memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        start = time.monotonic()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err_file:
            p = subprocess.Popen([self.tool, *args, "--device", self.device], stdout=out,
                                 stderr=err_file, preexec_fn=cap)
            while True:  # wait4, not wait: the child's own rusage
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid != 0:
                    break
                if time.monotonic() - start > timeout:
                    p.kill()
                    os.wait4(p.pid, 0)
                    p.returncode = -9
                    check(False, f"{what}: still running after {timeout} s")
                    return None
                time.sleep(0.01)
            p.returncode = os.waitstatus_to_exitcode(status)
            self.peak_kb = usage.ru_maxrss
            out.seek(0)
            err_file.seek(0)
            stdout = out.read().decode("utf-8", "replace")
            err = err_file.read().decode("utf-8", "replace").strip()
        seconds = time.monotonic() - start
        check(p.returncode in CONTRACT,
              f"{what}: exit {p.returncode} is outside the contract; stderr: {err[-300:]}")
        if p.returncode == 2:
            check(len(err.splitlines()) == 1, f"{what}: exit 2 with {len(err.splitlines())} "
                  f"lines on stderr: {err[:300]}")
        print(f"{what}: exit {p.returncode} in {seconds:.2f} s, peak {self.peak_kb // 1024} MB")
        return p.returncode, stdout, err


def nesting(r):
    path = r.write("parens.egg", "(" * 12000)
    rc, _, err = r.run("12 KB of '('", [path, "--quiet"])
    check(rc == 2 and "parens.egg:1:" in err and "nest" in err,
          f"12 KB of '(': want exit 2 naming the nesting at parens.egg:1:col, got {rc}: {err}")
    deep = "(datatype T (Z) (S T))\n(let $t " + "(S " * 11421 + "(Z)" + ")" * 11421 + ")\n"
    path = r.write("deep_term.egg", deep)
    rc, _, err = r.run("a term 11,421 deep", [path, "--quiet"])
    check(rc == 2 and "deep_term.egg:2:" in err,
          f"a term 11,421 deep: want exit 2 at deep_term.egg:2:col, got {rc}: {err}")


def wide(r):
    args = " ".join(["i64"] * 70)
    values = " ".join(str(i) for i in range(70))
    prog = (f"(datatype W (Wide {args}))\n(Wide {values})\n"
            f"(rule ((= w (Wide {' '.join('a%d' % i for i in range(70))}))) ((Wide {' '.join('a%d' % ((i + 1) % 70) for i in range(70))})))\n"
            "(run 3)\n(print-size)\n")
    rc, out, err = r.run("a constructor of 70 arguments", [r.write("wide.egg", prog), "--quiet"])
    check(rc == 0 and "(Wide 4)" in out, f"70 arguments: want exit 0 and (Wide 4), got {rc}: {err} {out}")
    n = 300
    body = " ".join(f"(R v{i})" for i in range(n))
    prog = "(relation R (i64))\n(relation S (i64))\n" + "".join(f"(R {i})\n" for i in range(n))
    prog += f"(rule ((R v0) {' '.join(f'(= v{i} {i})' for i in range(n))} {body}) ((S v{n - 1})))\n"
    prog += "(run 1)\n(print-size)\n"
    rc, out, err = r.run("a rule of 300 variables", [r.write("vars.egg", prog), "--quiet"])
    check(rc == 0 and "(S 1)" in out, f"300 variables: want exit 0 and (S 1), got {rc}: {err} {out}")


def quadratic(leaves, iterations):
    """Pairs of leaves, then pairs of pairs: the rows square every iteration."""
    return ("(datatype E (Leaf i64) (Pair E E))\n"
            "(rule ((= a (Leaf x)) (= b (Leaf y))) ((Pair a b)))\n"
            "(rule ((= p (Pair a b)) (= q (Pair c d))) ((Pair p q)))\n"
            + "".join(f"(Leaf {i})\n" for i in range(leaves))
            + f"(run {iterations})\n(print-size)\n")


QUADRATIC = quadratic(60, 10)


def limits(r):
    path = r.write("quadratic.egg", QUADRATIC)
    rc, out, err = r.run("--node-limit 30000 on a quadratic rule set",
                         [path, "--json", "--node-limit", "30000", "--time-limit", "20"])
    peak_kb = r.peak_kb
    if check(rc == 0, f"node limit: want exit 0, got {rc}: {err}"):
        doc = json.loads(out)
        check(doc["stopped"] == "node_limit", f"node limit: stopped {doc['stopped']}")
        last = doc["iterations"][-1]["enodes"] if doc["iterations"] else 0
        check(last <= 30000, f"node limit: {last} e-nodes committed past the limit")
    if r.sanitized:
        print("memory checks left out: an AddressSanitizer build")
        return
    # The process (binary, threads, a CUDA context on --device gpu) plus a bounded overshoot.
    limit_mb = 1024 if r.device == "gpu" else 400
    check(peak_kb < limit_mb * 1024, f"node limit: peak RSS {peak_kb // 1024} MB "
          f"(bound {limit_mb} MB)")
    if r.device == "cpu":
        # The iteration rolled back costs no copy of what is kept: a run that keeps 1,001,000
        # rows (1,000 leaves and their pairs) and stops in the next iteration peaks within twice
        # the run that makes just those rows. (On --device gpu the tables live in device memory,
        # which resident memory does not show.)
        for threads in ("1", "2"):
            rc, out, err = r.run(f"1,000 leaves, one iteration, {threads} threads",
                                 [r.write("pairs1.egg", quadratic(1000, 1)), "--json",
                                  "--threads", threads])
            kept_kb = r.peak_kb
            rc2, out2, err2 = r.run(f"1,000 leaves under --node-limit 1500000, {threads} threads",
                                    [r.write("pairs.egg", quadratic(1000, 10)), "--json",
                                     "--threads", threads, "--node-limit", "1500000"])
            if not check(rc == 0 and rc2 == 0, f"pairs: want exit 0, got {rc} {rc2}: {err2}"):
                continue
            free, limited = json.loads(out), json.loads(out2)
            check(limited["stopped"] == "node_limit" and
                  [i["enodes"] for i in limited["iterations"]] ==
                  [i["enodes"] for i in free["iterations"]],
                  f"pairs: the limited run should keep iteration 1 only: {limited['stopped']}, "
                  f"{[i['enodes'] for i in limited['iterations']]}")
            check(r.peak_kb <= 2 * kept_kb, f"pairs, {threads} threads: peak {r.peak_kb // 1024} MB "
                  f"under the node limit, over twice the {kept_kb // 1024} MB of the e-graph kept")
        # Out of memory in a two-thread search: exit 1 with a message, not an abort.
        rc, out, err = r.run("out of memory in a 2-thread search (1 GB address space)",
                             [path, "--threads", "2", "--quiet"], memory=1 << 30)
        check(rc == 1 and "memory" in err.lower(),
              f"out of memory: want exit 1 naming memory, got {rc}: {err[-300:]}")


def options(r):
    good = r.write("good.egg", "(datatype T (Z))\n(Z)\n")
    for args in (["--run", "-1"], ["--node-limit", "-1"], ["--node-limit", "18446744073709551616"],
                 ["--time-limit", "nan"], ["--time-limit", "-3"], ["--threads", "-2"],
                 ["--crossover", "x"]):
        rc, _, err = r.run(" ".join(args), [good, *args, "--quiet"])
        check(rc == 2 and args[0] in err, f"{' '.join(args)}: want exit 2 naming the option, "
              f"got {rc}: {err}")
    for path in (r.work, "/proc/self/mem", os.path.join(r.work, "missing.egg")):
        rc, _, err = r.run(f"program {path}", [path, "--quiet"])
        check(rc == 2 and path in err, f"program {path}: want exit 2 naming it, got {rc}: {err}")


def emit(r, egraph):
    # Names with a backslash, a quote, control characters and a constructor named like a
    # literal's id; strings with invalid UTF-8 and NUL-free control bytes.
    prog = ('(datatype T (lit) (a\\b T) (v0.1) (Str String))\n'
            '(lit)\n(a\\b (lit))\n(v0.1)\n'
            '(Str "tab\\there \\"q\\" back\\\\slash")\n').encode()
    prog += b'(Str "bad \xff\xfe utf8 \xed\xa0\x80 surrogate")\n'
    path = r.write("names.egg", prog, mode="wb")
    out_json = os.path.join(r.work, "names.json")
    rc, _, err = r.run("--emit with hostile names", [path, "--emit", out_json, "--quiet"])
    if not check(rc == 0, f"--emit: want exit 0, got {rc}: {err}"):
        return
    raw = open(out_json, "rb").read()
    try:
        doc = json.loads(raw.decode("utf-8", "strict"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        check(False, f"--emit: not valid UTF-8 JSON: {e}")
        return
    nodes = doc["nodes"]
    check(len(nodes) == 5 + 2, f"--emit: {len(nodes)} nodes (want 5 terms + 2 string literals)")
    for nid, node in nodes.items():
        for child in node["children"]:
            check(child in nodes, f"--emit: node {nid}'s child {child} is not a node")
    ops = sorted(n["op"] for n in nodes.values())
    check("a\\b" in ops and "lit" in ops, f"--emit: ops {ops}")
    check(any("\ufffd" in op for op in ops), "--emit: invalid UTF-8 did not become U+FFFD")
    if egraph:
        p = subprocess.run([egraph, "inspect", out_json, "--json"], capture_output=True,
                           timeout=60)
        check(p.returncode == 0, f"vyre-egraph inspect of --emit's file: exit {p.returncode}: "
              f"{p.stderr.decode(errors='replace')[-300:]}")


def terms(r):
    n = 20000
    prog = "(datatype N (Z) (S N))\n(let $a0 (Z))\n"
    prog += "".join(f"(let $a{i + 1} (S $a{i}))\n" for i in range(n))
    prog += f"(extract $a{n})\n"
    rc, out, err = r.run("a term 20,001 deep", [r.write("deep_extract.egg", prog), "--json"])
    if check(rc == 0, f"deep extract: want exit 0, got {rc}: {err}"):
        doc = json.loads(out)
        best = doc["extract"][0]["best"]
        check(doc["extract"][0]["cost"] == n + 1 and best.count("(S ") == n and "?" not in best,
              f"deep extract: cost {doc['extract'][0]['cost']}, {best.count('(S ')} S nodes")
    prog = "(datatype N (Z) (Add N N))\n(let $x0 (Z))\n"
    prog += "".join(f"(let $x{i + 1} (Add $x{i} $x{i}))\n" for i in range(40))
    prog += "(extract $x40)\n"
    rc, out, err = r.run("a 2^40-node shared term", [r.write("shared.egg", prog), "--json"])
    if check(rc == 0, f"shared term: want exit 0, got {rc}: {err}"):
        doc = json.loads(out)
        best = doc["extract"][0]["best"]
        check(doc["extract"][0]["cost"] == 2 ** 41 - 1 and "(let " in best and len(best) < 10000,
              f"shared term: cost {doc['extract'][0]['cost']}, {len(best)} characters")
    prog = ("(datatype T (A :cost 9223372036854775807) (B T T :cost 9223372036854775807))\n"
            "(extract (B (A) (A)))\n")
    rc, _, err = r.run("a cost past 2^64 - 1", [r.write("cost.egg", prog), "--quiet"])
    check(rc == 2 and "overflows" in err, f"cost overflow: want exit 2 saying so, got {rc}: {err}")


def reading(r):
    prog = "(relation R (String))\n" + "".join(f'(R "s{i}")\n' for i in range(100000))
    prog += "(print-size R)\n"
    rc, out, err = r.run("100,000 string literals", [r.write("strings.egg", prog), "--quiet"])
    check(rc == 0 and "100000" in out, f"strings: want exit 0 and 100000 rows, got {rc}: {err}")
    prog = "(datatype N (Z) (S N))\n(let $b0 (Z))\n"
    prog += "".join(f"(let $b{i + 1} (S $b{i}))\n" for i in range(100000))
    prog += "(print-size S)\n"
    rc, out, err = r.run("100,000 lets", [r.write("lets.egg", prog), "--quiet"])
    check(rc == 0 and "100000" in out, f"lets: want exit 0 and 100000 rows, got {rc}: {err}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("work")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--egraph", default="")
    ap.add_argument("--sanitized", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    if args.device == "gpu":
        probe = os.path.join(args.work, "probe.egg")
        with open(probe, "w") as f:
            f.write("(datatype T (Z))\n")
        if subprocess.run([args.tool, probe, "--device", "gpu", "--quiet"],
                          capture_output=True).returncode == 3:
            print("SKIPPED: --device gpu: no usable CUDA device")
            return SKIP
    r = Runner(args.tool, args.work, args.device, args.sanitized)
    for step in (nesting, wide, limits, options, lambda x: emit(x, args.egraph), terms, reading):
        step(r)
    return exit_status("hostile input: every run kept the contract")


if __name__ == "__main__":
    sys.exit(main())
