#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""egglog's own test programs through vyre-eqsat, checked against egglog's snapshots.

  conformance.py VYRE_EQSAT DATA_DIR KNOWN_FILE [--device cpu|gpu] [--only SUBSTRING]
                 [--heavy]

DATA_DIR holds egglog's `tests/` folder (egglog 3.0's programs and `tests/snapshots/`), as
egglog's runner (tests/files.rs) sees it: every program runs from DATA_DIR with `(print-size)`
appended, and passes when it runs without error and its outputs, rendered as egglog's
snapshots render them (`print-size` text; `extract` as `(extraction-costs N)`; print-function,
variants and print-stats dropped), equal the snapshot (whitespace-normalized). A program
without a snapshot passes when it runs without error. `fail-typecheck/` programs must be
refused with exit 2 and one `file:line:col:` line on stderr. `proofs/` programs need egglog's
proof mode, which vyre does not have: they are reported, not run.

KNOWN_FILE lists the programs that do not pass yet, one per line: `path<TAB>reason` (paths
relative to DATA_DIR/tests). Programs marked `heavy:` there run only with --heavy (the device
benchmark runs them). A listed program that passes fails the test too: the list stays true.

Exit: 0 all as expected; 1 a surprise (a new failure, or a listed program that passes);
77 DATA_DIR missing (SKIPPED).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 300


def snapshot_body(path):
    text = open(path, encoding="utf-8").read()
    # insta: "---\n<header lines>\n---\n<body>"
    parts = text.split("---\n", 2)
    return parts[2] if len(parts) == 3 else text


def normalize(text):
    return " ".join(text.split())


def rendered(outputs):
    out = []
    for o in outputs:
        kind = o["kind"]
        if kind in ("print-size", "function-size"):
            out.append(o["text"])
        elif kind == "extract":
            out.append("(extraction-costs %d)\n" % o["cost"])
    return "".join(out)


def snapshot_name(rel):
    stem = os.path.splitext(os.path.basename(rel))[0]
    stem = re.sub(r"[.\- ]", "_", stem)
    return "files__shared_snapshot_%s.snap" % stem


def read_known(path):
    known = {}
    if not os.path.exists(path):
        return known
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        rel, _, reason = line.partition("\t")
        known[rel.strip()] = reason.strip() or "no reason given"
    return known


def run_program(vyre, data, rel, device):
    """Runs tests/<rel> with (print-size) appended; (status, json or None, stderr, seconds)."""
    src = open(os.path.join(data, "tests", rel), encoding="utf-8", errors="surrogateescape").read()
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, os.path.basename(rel))
        with open(prog, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(src + "\n(print-size)\n")
        start = time.time()
        try:
            p = subprocess.run([vyre, prog, "--device", device, "--json", "--quiet"], cwd=data,
                               capture_output=True, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return None, None, "timed out after %d s" % TIMEOUT, time.time() - start
        seconds = time.time() - start
    doc = None
    try:
        doc = json.loads(p.stdout.decode("utf-8", "replace"))
    except ValueError:
        pass
    return p.returncode, doc, p.stderr.decode("utf-8", "replace"), seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("vyre")
    ap.add_argument("data")
    ap.add_argument("known")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--only", default="")
    ap.add_argument("--heavy", action="store_true")
    args = ap.parse_args()
    tests = os.path.join(args.data, "tests")
    if not os.path.isdir(tests):
        print("conformance: SKIPPED: %s has no tests/ folder (egglog's test programs)" % args.data)
        return SKIP
    known = read_known(args.known)
    programs = []
    for root, _, files in os.walk(tests):
        for name in files:
            if name.endswith(".egg"):
                programs.append(os.path.relpath(os.path.join(root, name), tests))
    programs.sort()
    per_folder = {}
    surprises = []
    on_device = [0, 0]  # iterations on the GPU engine, on the CPU engine
    cpu_reasons = {}  # why the GPU engine handed an iteration back: reason -> (iterations, programs)
    for rel in programs:
        if args.only and args.only not in rel:
            continue
        folder = os.path.dirname(rel) or "."
        tally = per_folder.setdefault(folder, {"pass": 0, "known": 0, "fail": 0, "proof": 0,
                                               "heavy": 0})
        if rel.startswith("proofs/"):
            tally["proof"] += 1
            print("proof  %s: needs egglog's proof mode (out of scope)" % rel)
            continue
        reason = known.get(rel)
        if reason is not None and reason.startswith("heavy:") and not args.heavy:
            tally["heavy"] += 1
            print("heavy  %s: %s" % (rel, reason))
            continue
        status, doc, err, seconds = run_program(args.vyre, args.data, rel, args.device)
        if rel.startswith("fail-typecheck/"):
            ok = status == 2 and re.search(r":\d+:\d+: ", err) is not None
            why = "refused with exit 2 and file:line:col" if ok else \
                "expected exit 2 with file:line:col, got exit %s: %s" % (status, err.strip()[:300])
        elif status is None:
            ok, why = False, err
        elif status != 0 or doc is None:
            ok = False
            why = "exit %s: %s" % (status, err.strip()[:300])
        else:
            snap = os.path.join(tests, "snapshots", snapshot_name(rel))
            if os.path.exists(snap):
                want = normalize(snapshot_body(snap))
                got = normalize(rendered(doc["outputs"]))
                ok = want == got
                why = "outputs equal the snapshot" if ok else \
                    "outputs differ from the snapshot:\n    want: %s\n    got:  %s" % (
                        want[:400], got[:400])
            else:
                ok, why = True, "ran without error (no snapshot)"
        if doc is not None:
            seen = set()
            for it in doc.get("iterations", []):
                on_device[0 if it.get("device") == "gpu" else 1] += 1
                why_cpu = it.get("cpu_reason")
                if it.get("device") != "gpu" and why_cpu:
                    # The reason's first clause, without the names and numbers of one program.
                    key = re.sub(r"`[^`]*`|\d+", "_", why_cpu.split(";")[0])[:120]
                    n, progs = cpu_reasons.get(key, (0, 0))
                    cpu_reasons[key] = (n + 1, progs + (key not in seen))
                    seen.add(key)
        if ok and reason is None:
            tally["pass"] += 1
            print("pass   %s (%.2f s)" % (rel, seconds))
        elif ok:
            tally["pass"] += 1
            surprises.append(rel)
            print("PASSES %s, but %s lists it (%s): remove it from the list" % (
                rel, os.path.basename(args.known), reason))
        elif reason is not None:
            tally["known"] += 1
            print("known  %s: %s\n       now: %s" % (rel, reason, why.splitlines()[0]))
        else:
            tally["fail"] += 1
            surprises.append(rel)
            print("FAIL   %s (%.2f s): %s" % (rel, seconds, why))
    total = {"pass": 0, "known": 0, "fail": 0, "proof": 0, "heavy": 0}
    print("\nper folder (pass / not yet passing, listed / failing / proof mode / heavy):")
    for folder in sorted(per_folder):
        t = per_folder[folder]
        for k in total:
            total[k] += t[k]
        print("  %-16s %3d / %3d / %3d / %3d / %3d" % (folder, t["pass"], t["known"], t["fail"],
                                                       t["proof"], t["heavy"]))
    ran = total["pass"] + total["known"] + total["fail"] + total["heavy"]
    print("conformance (%s): %d of %d non-proof programs pass (%.1f%%), %d listed as not yet "
          "passing, %d heavy ones left to the device benchmark, %d failing unexpectedly" % (
              args.device, total["pass"], ran, 100.0 * total["pass"] / max(ran, 1),
              total["known"], total["heavy"], total["fail"]))
    if args.device != "cpu":
        print("iterations on the GPU engine: %d of %d (the others on the CPU engine, each with "
              "its reason in the --json report)" % (on_device[0], sum(on_device)))
        for key, (n, progs) in sorted(cpu_reasons.items(), key=lambda kv: -kv[1][0])[:15]:
            print("  on the CPU: %5d iterations of %3d programs: %s" % (n, progs, key))
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
