#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turn a benchmark run (JSON lines from bench/ executables) into a Markdown report and PNG plots.

Every line is one measurement: {"name", "params", "device", "median_ns" (or another median),
"baseline", "baseline_median_ns", "ratio", ...}. Lines that are not JSON objects are ignored.

    python3 scripts/bench_report.py run.jsonl [later-run.jsonl ...] --meta meta.txt \
        --out bench-out/report.md --plots bench-out

A later file's benchmark names supersede the same names in earlier files (partial re-runs).

`--meta` is a file of `key: value` lines describing the run (gpu, driver, date, command); they
are printed atop the report so every number can be traced to the run that produced it.
"""
from __future__ import annotations

import argparse
import collections
import json
import pathlib
import sys


def supersede_key(row):
    """What a later file's row replaces: the same benchmark name; DAG rows are one configuration
    per file (one per search count), so files of them add up instead."""
    if row["name"].startswith("dag."):
        return (row["name"], row["_source"])
    return row["name"]


def read_lines(paths):
    """Rows of every file; a benchmark name measured in a later file replaces the earlier
    file's rows of that name, so a partial re-run supersedes what it re-measured."""
    rows = []
    for path in paths:
        file_rows = []
        for line in pathlib.Path(path).read_text().splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and "name" in row:
                row["_source"] = str(path)
                file_rows.append(row)
        superseded = {supersede_key(row) for row in file_rows}
        rows = [row for row in rows if supersede_key(row) not in superseded] + file_rows
    return rows


def read_meta(path):
    meta = {}
    if path:
        for line in pathlib.Path(path).read_text().splitlines():
            if ":" in line:
                key, value = line.split(":", 1)
                meta[key.strip()] = value.strip()
    return meta


# Benchmarks whose names carry no "component." prefix, by the start of their name.
LEGACY_COMPONENTS = (
    ("build_", "algorithms"), ("congruence_", "algorithms"), ("extract_", "algorithms"),
    ("caching_pool_", "runtime"), ("stream_ordered_", "runtime"), ("pinned_pool_", "runtime"),
    ("telemetry_", "runtime"), ("checked_launch_", "runtime"),
)


def full_name(name: str) -> str:
    """`component.name` for every benchmark (legacy names get their component prepended)."""
    if "." in name:
        return name
    for start, comp in LEGACY_COMPONENTS:
        if name.startswith(start):
            return f"{comp}.{name}"
    return f"other.{name}"


def component(name: str) -> str:
    return full_name(name).split(".", 1)[0]


def baseline_of(row):
    """(value, unit) of the row's baseline median, in the unit of its own median."""
    _, unit = median_of(row)
    key = f"baseline_median_{unit}"
    return (row[key], unit) if unit and key in row else (None, "")


def speedup(row):
    """Baseline median over vyre's median: above 1, vyre is faster than the baseline."""
    value, _ = median_of(row)
    base, _ = baseline_of(row)
    if not value or base is None:
        return None
    return base / value


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


EXTRA_KEYS = ("gb_per_s", "mb_per_s", "rows_per_s", "enodes_per_s", "ns_per_stage", "rounds", "speedup",
              "peak_over_file", "cpu_vs_cpu_ratio", "worst_ratio", "worst_cpu_vs_cpu_ratio")


def table(rows):
    extras = [k for k in EXTRA_KEYS if any(k in r for r in rows)]
    head = ["benchmark", "parameters", "median", "baseline", "baseline median",
            "speedup"] + extras
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if "skipped" in r:  # a peer that could not be measured says why
            cells = [f"`{full_name(r['name'])}`", fmt_params(r.get("params")), "skipped",
                     str(r["skipped"]).replace("|", "/"), "", ""] + [""] * len(extras)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        value, unit = median_of(r)
        cells = [
            f"`{full_name(r['name'])}`",
            fmt_params(r.get("params")),
            f"{fmt_number(value)} {unit}".strip(),
            str(r.get("baseline", "")),
            f"{fmt_number(baseline_of(r)[0])} {baseline_of(r)[1]}".strip(),
            fmt_number(speedup(r)),
        ] + [fmt_number(r.get(k)) for k in extras]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# Plots: (file stem, title, name prefix, x parameter, y key, y label, log x).
PLOTS = [
    ("upload", "Image upload throughput vs size", "resident.upload", "bytes", "gb_per_s",
     "GB/s", True),
    ("graph_chain", "Kernel chain: stream launches vs graph replay", "graph.chain", "kernels",
     "median_ns", "time per chain (ns)", True),
    ("congruence", "Congruence closure: GPU vs CPU reference", "algorithms.congruence_vs_cpu",
     "rows", "median_ns", "time (ns)", True),
    ("extraction", "Extraction: GPU vs CPU reference", "algorithms.extract_vs_cpu", "rows",
     "median_ns", "time (ns)", True),
    ("pool", "Allocation latency per allocate+free pair", "runtime.caching_pool_hit_vs_",
     "threads", "median_ns", "latency (ns)", False),
]


# Equality saturation (bench/eqsat): one row per engine and iteration count, each with its
# per-iteration counts and times; rendered as its own tables and an e-nodes-against-time plot.
EQSAT_PUBLISHED = (("Oatlog (published, Ryzen 5900X)", 12, 4.73),
                   ("egglog 0.4 (published, Ryzen 5900X)", 12, 8.30))


def eqsat_engine(row) -> str:
    name = row["name"].split(".", 1)[1]
    if name == "gpu":
        return f"vyre GPU engine ({row.get('device', 'GPU')})"
    if name == "cpu":
        return f"vyre CPU engine ({row.get('threads', '?')} threads)"
    return row.get("engine", name)


def eqsat_cumulative(row):
    """(cumulative seconds, e-nodes) after each iteration of the row's median run."""
    points, total = [], 0.0
    for it in row.get("per_iteration", []):
        if "seconds" in it:
            total += it["seconds"]
        else:
            total += it.get("search_s", 0) + it.get("apply_s", 0) + it.get("rebuild_s", 0)
        points.append((total, it["enodes"]))
    return points


def eqsat_section(rows):
    rows = sorted(rows, key=lambda r: (r.get("iterations", 0), r["name"]))
    out = ["End to end = program text to final counts (the engine made, the program's terms "
           "added, N iterations, counts read), median of the repeats after a warm-up run "
           "(egglog: a warm-up of at most 10 iterations). \"agrees\": the GPU and CPU "
           "engines' per-constructor counts are equal after every iteration. Speedup = the "
           "other engine's median / the GPU engine's.", "",
           "| engine | program | iterations | e-nodes | end to end | engine phases | "
           "peak device bytes / e-node | GPU speedup | agrees |",
           "|---|---|---|---|---|---|---|---|---|"]
    gpu = {r["iterations"]: r for r in rows if r["name"] == "eqsat.gpu"}
    for r in rows:
        g = gpu.get(r.get("iterations"))
        speed = "" if g is None or r is g else fmt_number(r["median_s"] / g["median_s"])
        agrees = {True: "yes", False: "NO", None: ""}[r.get("agrees")]
        out.append(
            f"| {eqsat_engine(r)} | {r.get('program', '')} | {r.get('iterations', '')} | "
            f"{r.get('enodes', 0):,} | {r['median_s']:.4g} s | "
            f"{(str(round(r['phases_s'], 4)) + ' s') if 'phases_s' in r else ''} | "
            f"{fmt_number(r.get('device_bytes_per_enode'))} | {speed} | {agrees} |")
    for label, iterations, seconds in EQSAT_PUBLISHED:
        g = gpu.get(iterations)
        speed = fmt_number(seconds / g["median_s"]) if g else ""
        out.append(f"| {label} | math.egg | {iterations} | 15,987,528 | {seconds} s |  |  | "
                   f"{speed} |  |")
    longest = max((r for r in rows if r["name"] == "eqsat.gpu"),
                  key=lambda r: r.get("iterations", 0), default=None)
    if longest:
        out += ["", f"Per iteration, GPU engine, {longest.get('program', '')} "
                f"({longest.get('iterations')} iterations, median run; seconds):", "",
                "| iteration | e-nodes | e-classes | matches | search | apply | rebuild |",
                "|---|---|---|---|---|---|---|"]
        for it in longest.get("per_iteration", []):
            out.append(f"| {it['iteration']} | {it['enodes']:,} | {it.get('eclasses', 0):,} | "
                       f"{it.get('matches', 0):,} | {it['search_s']:.4f} | {it['apply_s']:.4f} | "
                       f"{it['rebuild_s']:.4f} |")
    return "\n".join(out)


def eqsat_plot(rows, plot_dir: pathlib.Path, plt):
    series = {}
    for r in rows:
        points = eqsat_cumulative(r)
        key = eqsat_engine(r)
        if points and (key not in series or len(points) > len(series[key])):
            series[key] = points
    if not series:
        return None
    def draw(ax):
        for label, points in sorted(series.items()):
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
        ax.set_yscale("log")

    return log_time_plot(plt, plot_dir / "eqsat.png", draw,
                         "cumulative seconds of the iterations", "e-nodes",
                         "Equality saturation on math.egg: e-nodes against time",
                         "Equality saturation: e-nodes against time per engine")


def log_time_plot(plt, path, draw, xlabel, ylabel, title, caption, legend_outside=False):
    """One figure with a log time axis: `draw(ax)` adds the series; returns (caption, path).
    `legend_outside`: the legend right of the axes (many series would hide points)."""
    fig, ax = plt.subplots(figsize=(11, 4.6) if legend_outside else (7, 4.2))
    draw(ax)
    ax.set_xscale("log")
    save_figure(plt, fig, ax, path, xlabel, ylabel, title, legend_outside)
    return (caption, path)


def save_figure(plt, fig, ax, path, xlabel, ylabel, title, legend_outside=False):
    """Labels, grid and legend the way every plot here has them, then writes `path`."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if legend_outside:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# DAG-cost extraction (bench/dag): one row per file and configuration (`searches`), one per set.
# Published reference points (issue #19's survey) beside the measured sets.
DAG_PUBLISHED = (
    "extraction-gym's faster-greedy-dag and e-boost's parallel version: ~1.2% above ILP "
    "cumulatively, 3-12% geometric mean on tensat/rover/flexc, up to 46% on single files "
    "(SmoothE's artifact tables, 10-hour CPLEX as reference); ILP through CBC: ~35 of 220 files "
    "time out at 6 s; SmoothE (A100): 0.2-4.7% gaps at ~20 s per file, not deterministic.")


def dag_config(r):
    """A DAG run's configuration: its searches, and its kicks when not the defaults."""
    params = r["params"]
    label = f"{params.get('searches', '?')} searches"
    budget, patience = params.get("kick_budget", 60000000), params.get("kick_patience", 1000)
    if (budget, patience) != (60000000, 1000):
        label += f", kicks {budget / 1e6:g}M / {patience}"
    return label


def dag_bound(r):
    """The heuristic's own lower bound, marked where it proves the selection optimal."""
    if "heuristic_lower_bound" not in r:
        return "\u2014"
    return f"{r['heuristic_lower_bound']:.6g}" + (" (optimal)" if r.get("heuristic_optimal") else "")


def dag_sets_by_config(files, sets):
    """The set rows with their run's configuration, ordered by it, then by set ("all" last)."""
    config_of = {}
    for r in files:
        config_of.setdefault(r.get("_source"), dag_config(r))
    labelled = [(config_of.get(r.get("_source"), ""), r) for r in sets]
    return sorted(labelled, key=lambda item: (item[0], item[1]["params"]["set"] == "all",
                                              item[1]["params"]["set"]))


def dag_section(rows):
    # A --cbc-reach run (CBC alone, stopped at the heuristic's cost) gets its own table.
    reach_sources = {r.get("_source") for r in rows
                     if r["name"] == "dag.extract" and "cbc_reach_s" in r}
    reach_rows = [r for r in rows if r.get("_source") in reach_sources]
    rows = [r for r in rows if r.get("_source") not in reach_sources]
    files = [r for r in rows if r["name"] == "dag.extract" and "gap" in r]
    sets = [r for r in rows if r["name"] == "dag.extract.set"]
    out = ["Gap = DAG cost / optimum - 1 on the files CBC proved optimal (cumulative ratio = sum "
           "of the heuristic's costs / sum of the optima). Times per file, medians of 3 after a "
           "warm-up; GPU end to end = host rows to host result. The GPU and the CPU engines "
           "run the same searches and give the same selection on every file. Published: "
           + DAG_PUBLISHED, "",
           "| configuration (kicks: budget / patience, when not the defaults) | set | files | proven "
           "(CBC) | proven by the heuristic's own bound | cumulative ratio | geomean gap | worst gap | "
           "CPU engine, all files | GPU engine, all files | GPU slowest file | CBC (ILP), all "
           "files |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for config, r in dag_sets_by_config(files, sets):
        by_bound = r.get("heuristic_proven")
        out.append(
            f"| {config} | {r['params']['set']} | {r['files']} | {r['proven']} | "
            f"{'—' if by_bound is None else by_bound} | "
            f"{r['cumulative_ratio']:.4f} | {100 * r['geomean_gap']:.2f}% | "
            f"{100 * r['worst_gap']:.2f}% | {r['cpu_s']:.3f} s | {r['gpu_s']:.3f} s | "
            f"{r['gpu_max_s']:.3f} s | {r['ilp_s']:.1f} s |")
    big = sorted((r for r in files if r["params"].get("nodes", 0) >= 1000),
                 key=lambda r: (r["params"]["file"], dag_config(r)))
    if big:
        out += ["", "Files of at least 1,000 e-nodes (speedup = CPU engine / GPU engine, end to "
                "end; \u2020 not proven optimal by CBC in 60 s: gap against CBC's best):", "",
                "| file | e-nodes | configuration | DAG cost | the heuristic's lower bound | "
                "tree selection's | CBC best | gap | CPU engine | GPU engine | speedup | "
                "same selection |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in big:
            proven = "" if r.get("ilp_optimal") else " \u2020"
            speed = r["cpu_median_s"] / r["gpu_median_s"] if r.get("gpu_median_s") else None
            out.append(
                f"| {r['params']['file']} | {r['params']['nodes']:,} | "
                f"{dag_config(r)} | {r['heuristic_dag_cost']:.6g} | {dag_bound(r)} | "
                f"{r['tree_selection_dag_cost']:.6g} | {r['ilp_dag_cost']:.6g}{proven} | "
                f"{100 * r['gap']:+.2f}% | {r['cpu_median_s']:.3f} s | {r['gpu_median_s']:.3f} s | "
                f"{fmt_number(speed)} | {'yes' if r.get('gpu_equals_cpu') else 'NO'} |")
    return "\n".join(out + dag_reach_table(reach_rows))


def dag_reach_table(rows):
    """CBC alone against the CPU engine on one machine (bench_dag --cbc-reach)."""
    files = [r for r in rows if r["name"] == "dag.extract" and "cbc_reach_s" in r]
    sets = [r for r in rows if r["name"] == "dag.extract.set" and "cbc_reached" in r]
    if not files:
        return []
    device = files[0].get("device", "")
    out = ["", f"CBC reaching the heuristic's cost ({device}, same process): CBC alone (no warm "
           "start) is given the CPU engine's DAG cost as its cutoff and stopped at its first "
           "selection that cheap, within the time limit; the cutoff helps CBC (it prunes "
           "everything worse), so these times are a lower bound on CBC finding that cost by "
           "itself. Ratio = CBC's time / the CPU engine's (all cores of this machine), over the "
           "files CBC reached.", "",
           "| configuration | set | files | CBC reached | CBC time, all files | CPU engine, all "
           "files | ratio, geomean | ratio, min |", "|---|---|---|---|---|---|---|---|"]
    for config, r in dag_sets_by_config(files, sets):
        out.append(
            f"| {config} | {r['params']['set']} | {r['files']} | {r['cbc_reached']} | "
            f"{r['cbc_reach_s']:.2f} s | {r['cpu_s']:.3f} s | "
            f"{fmt_number(r['cbc_reach_over_cpu_geomean'])} | "
            f"{fmt_number(r['cbc_reach_over_cpu_min'])} |")
    slow = sorted((r for r in files if r["cbc_reach_s"] >= 0.1 or not r["cbc_reached"]),
                  key=lambda r: (r["params"]["file"], dag_config(r)))
    if slow:
        out += ["", "Files where CBC needed at least 0.1 s (\u2021 not reached within the "
                "limit: the ratio is a lower bound):", "",
                "| file | e-nodes | configuration | DAG cost | CBC time | CPU engine | ratio |",
                "|---|---|---|---|---|---|---|"]
        for r in slow:
            mark = "" if r["cbc_reached"] else " \u2021"
            out.append(
                f"| {r['params']['file']} | {r['params']['nodes']:,} | {dag_config(r)} | "
                f"{r['heuristic_dag_cost']:.6g} | {r['cbc_reach_s']:.3f} s{mark} | "
                f"{r['cpu_median_s']:.4f} s | {fmt_number(r['cbc_reach_over_cpu'])}{mark} |")
    return out


def dag_plot(rows, plot_dir: pathlib.Path, plt):
    reach_sources = {r.get("_source") for r in rows
                     if r["name"] == "dag.extract" and "cbc_reach_s" in r}
    files = [r for r in rows if r["name"] == "dag.extract" and "gap" in r
             and r.get("_source") not in reach_sources]
    if not files:
        return None
    series = collections.defaultdict(list)
    for r in rows:  # CBC alone, stopped at the heuristic's cost (another machine: labelled)
        if r["name"] == "dag.extract" and "cbc_reach_s" in r and r.get("cbc_reached") and r.get("ilp_optimal"):
            series[f"CBC alone, to vyre's cost ({r.get('device', '')})"].append(
                (max(r["cbc_reach_s"], 1e-3),
                 100 * (r["cbc_reach_best_cost"] / r["ilp_dag_cost"] - 1)
                 if r["ilp_dag_cost"] > 0 else 0.0))
    for r in files:
        s = dag_config(r)
        # Files CBC did not prove optimal in its time limit: the gap to CBC's best (below 0:
        # the heuristic found a cheaper selection than CBC).
        tail = "" if r.get("ilp_optimal") else " (vs CBC's best, unproven)"
        series[f"vyre CPU engine, {s}{tail}"].append((r["cpu_median_s"], 100 * r["gap"]))
        if r.get("gpu_median_s"):
            series[f"vyre GPU engine, {s}{tail}"].append(
                (r["gpu_median_s"], 100 * r["gap"]))
        if s == "4 searches":  # CBC ran once per file
            series[f"CBC (ILP, warm-started){tail or ', proven'}"].append(
                (max(r["ilp_s"], 1e-3), 0.0))
    def draw(ax):
        markers = "osD^vP*X"  # with the colour cycle, no two series look alike
        for i, (label, points) in enumerate(sorted(series.items())):
            ax.scatter([p[0] for p in points], [p[1] for p in points], s=14, label=label,
                       alpha=0.7, marker=markers[(i // 10) % len(markers)])

    return log_time_plot(plt, plot_dir / "dag.png", draw, "seconds per file (end to end)",
                         "gap to the optimum (%)",
                         "DAG extraction: gap against time per file and method",
                         "DAG extraction: gap against time per method", legend_outside=True)


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
            name = full_name(r["name"])
            if not name.startswith(prefix) or xkey not in params or ykey not in r:
                continue
            label = name[len(prefix):].lstrip(".") or "vyre"
            series[label].append((params[xkey], r[ykey]))
            base_key = "baseline_median_ns" if ykey == "median_ns" else f"baseline_{ykey}"
            if base_key in r:
                baseline[(r.get("baseline", ""), label)].append((params[xkey], r[base_key]))
        # Series that share a baseline with identical numbers (say, two configurations timed
        # against the same raw copy) draw it once; different numbers keep their own line.
        merged = collections.defaultdict(list)
        for (name, label), points in baseline.items():
            same = [k for k in baseline if k[0] == name]
            identical = all(sorted(baseline[k]) == sorted(points) for k in same)
            key = f"baseline: {name}" if identical else f"{label} baseline: {name}"
            if key not in merged:
                merged[key] = points
        baseline = merged
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
        path = plot_dir / f"{stem}.png"
        save_figure(plt, fig, ax, path, xkey, ylabel, title)
        made.append((title, path))
    eqsat = eqsat_plot([r for r in rows if component(r["name"]) == "eqsat"], plot_dir, plt)
    if eqsat:
        made.append(eqsat)
    dag = dag_plot([r for r in rows if component(r["name"]) == "dag"], plot_dir, plt)
    if dag:
        made.append(dag)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="JSON-lines files from the bench executables")
    parser.add_argument("--meta", help="key: value lines describing the run")
    parser.add_argument("--out", default="bench-out/report.md")
    parser.add_argument("--plots", default="bench-out", help="folder for the PNG plots")
    args = parser.parse_args()

    rows = read_lines(args.runs)
    if not rows:
        print("bench_report: no benchmark lines found", file=sys.stderr)
        return 1
    meta = read_meta(args.meta)
    out = pathlib.Path(args.out)
    plots = make_plots(rows, pathlib.Path(args.plots))

    parts = ["# vyre benchmarks", "",
             "Generated by `scripts/bench_report.py` from the runs of the `bench/` executables "
             "listed below (a later run supersedes the benchmarks it re-measured). Each "
             "baseline was measured in the same run as its measurement; speedup = baseline median / "
             "vyre median (above 1: vyre is faster). Medians of repeated runs after warm-up; "
             "GPU work timed with CUDA events or after synchronisation.", ""]
    if meta:
        parts += ["| run | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in meta.items()] + [""]
    for title, path in plots:
        rel = path.relative_to(out.parent) if path.is_relative_to(out.parent) else path
        parts += [f"![{title}]({rel.as_posix()})", ""]
    by_component = collections.defaultdict(list)
    for r in rows:
        by_component[component(r["name"])].append(r)
    for name in sorted(by_component):
        sections = {"eqsat": eqsat_section, "dag": dag_section}
        body = sections.get(name, table)(by_component[name])
        parts += [f"## {name}", "", body, ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(parts))
    print(f"bench_report: wrote {out} ({len(rows)} measurements, {len(plots)} plots)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
