#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn a benchmark run (JSON lines from bench/ executables) into BENCHMARKS.md and PNG plots.

Every line is one measurement: {"name", "params", "device", "median_ns" (or another median),
"baseline", "baseline_median_ns", "ratio", ...}. Lines that are not JSON objects are ignored.

    python3 scripts/bench_report.py run.jsonl --meta meta.txt --out BENCHMARKS.md --plots docs/bench

`--meta` is a file of `key: value` lines describing the run (gpu, driver, date, command); they
are printed atop the report so every number can be traced to the run that produced it.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys


def read_lines(paths):
    rows = []
    for path in paths:
        for line in pathlib.Path(path).read_text().splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "name" in row:
                rows.append(row)
    return rows


def read_meta(path):
    meta = {}
    if path:
        for line in pathlib.Path(path).read_text().splitlines():
            if ":" in line:
                key, value = line.split(":", 1)
                meta[key.strip()] = value.strip()
    return meta


def component(name: str) -> str:
    return name.split(".", 1)[0]


def fmt_params(params) -> str:
    if not isinstance(params, dict):
        return ""
    return ", ".join(f"{k}={v}" for k, v in params.items())


def median_of(row):
    """(value, unit) of the row's primary median."""
    for key, unit in (("median_ns", "ns"), ("median_us", "us"), ("median_ms", "ms"),
                      ("median_s", "s")):
        if key in row:
            return row[key], unit
    return None, ""


def fmt_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if value == 0:
            return "0"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 1:
            return f"{value:.2f}"
        return f"{value:.3g}"
    return str(value)


EXTRA_KEYS = ("gb_per_s", "rows_per_s", "enodes_per_s", "ns_per_stage", "rounds", "speedup")


def table(rows):
    extras = [k for k in EXTRA_KEYS if any(k in r for r in rows)]
    head = ["benchmark", "parameters", "median", "baseline", "baseline median", "ratio"] + extras
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        value, unit = median_of(r)
        cells = [
            f"`{r['name']}`",
            fmt_params(r.get("params")),
            f"{fmt_number(value)} {unit}".strip(),
            str(r.get("baseline", "")),
            fmt_number(r.get("baseline_median_ns")) + (" ns" if "baseline_median_ns" in r else ""),
            fmt_number(r.get("ratio")),
        ] + [fmt_number(r.get(k)) for k in extras]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Plots: (file stem, title, name prefix, x parameter, y key, y label, log x).
PLOTS = [
    ("upload", "Image upload throughput vs size", "resident.upload", "bytes", "gb_per_s",
     "GB/s", True),
    ("graph_chain", "Kernel chain: stream launches vs graph replay", "graph.chain", "kernels",
     "median_ns", "end-to-end time per chain (ns)", True),
    ("congruence", "Congruence closure time vs size", "algorithms.congruence", "rows",
     "median_ns", "time (ns)", True),
    ("extraction", "Extraction time vs size", "algorithms.extract", "rows", "median_ns",
     "time (ns)", True),
    ("pool", "Allocation latency", "runtime.pool", "threads", "median_ns", "latency (ns)", False),
]


def make_plots(rows, plot_dir: pathlib.Path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench_report: matplotlib missing; no plots (apt-get install python3-matplotlib)",
              file=sys.stderr)
        return []
    made = []
    plot_dir.mkdir(parents=True, exist_ok=True)
    for stem, title, prefix, xkey, ykey, ylabel, logx in PLOTS:
        series = collections.defaultdict(list)
        baseline = collections.defaultdict(list)
        for r in rows:
            params = r.get("params") or {}
            if not r["name"].startswith(prefix) or xkey not in params or ykey not in r:
                continue
            label = r["name"][len(prefix):].lstrip(".") or prefix
            series[label].append((params[xkey], r[ykey]))
            if ykey == "median_ns" and "baseline_median_ns" in r:
                baseline[f"{label} baseline: {r.get('baseline', '')}"].append(
                    (params[xkey], r["baseline_median_ns"]))
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.2))
        for label, points in sorted(series.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        for label, points in sorted(baseline.items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], linestyle="--",
                    marker="x", label=label)
        if logx:
            ax.set_xscale("log", base=2)
        if ykey == "median_ns":
            ax.set_yscale("log")
        ax.set_xlabel(xkey)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = plot_dir / f"{stem}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        made.append((title, path))
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="JSON-lines files from the bench executables")
    parser.add_argument("--meta", help="key: value lines describing the run")
    parser.add_argument("--out", default="BENCHMARKS.md")
    parser.add_argument("--plots", default="docs/bench", help="folder for the PNG plots")
    args = parser.parse_args()

    rows = read_lines(args.runs)
    if not rows:
        print("bench_report: no benchmark lines found", file=sys.stderr)
        return 1
    meta = read_meta(args.meta)
    out = pathlib.Path(args.out)
    plots = make_plots(rows, pathlib.Path(args.plots))

    parts = ["# vyre benchmarks", "",
             "Generated by `scripts/bench_report.py` from one run of every benchmark under "
             "`bench/`. Ratios compare against the named baseline measured in the same run.", ""]
    if meta:
        parts += ["| run | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in meta.items()] + [""]
    for title, path in plots:
        rel = path.relative_to(out.parent) if path.is_relative_to(out.parent) else path
        parts += [f"![{title}]({rel.as_posix()})", ""]
    by_component = collections.defaultdict(list)
    for r in rows:
        by_component[component(r["name"])].append(r)
    for name in sorted(by_component):
        parts += [f"## {name}", "", table(by_component[name]), ""]
    out.write_text("\n".join(parts))
    print(f"bench_report: wrote {out} ({len(rows)} measurements, {len(plots)} plots)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
