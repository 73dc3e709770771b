#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Runs the built vyre-egraph and checks what it prints.

usage: check_vyre_egraph.py TOOL MODE DATA_DIR WORK_DIR

MODE:
  default     the built-in e-graph: text summary, and inspect/extract/congruence JSON
  data        real e-graphs from DATA_DIR: extraction against expected_tree_cost.tsv,
              congruence against an independent Python congruence closure
  roundtrip   pack -> image file -> inspect/congruence; congruence -o -> rebuilt image
  bad_input   every bad input: exit status 2 and one stderr line naming the file; an unknown
              image version, duplicate JSON fields (one-piece and sliced reader), a large
              negative-cost cycle, tree costs that overflow, surplus arguments, an unknown
              subcommand, outputs onto links and non-regular files, the exit codes in --help
  gpu         --device gpu against --device cpu on the same inputs (exit 77: no device)

Exit status: 0 pass, 1 fail, 77 skipped (no data folder, or no GPU for MODE gpu).
"""
import json
import math
import os
import re
import shutil
import sys

from tool_check import SMALL_EGRAPHS, arguments, check, finish, has_data, run, skip

# Plus random e-graphs that are not congruence-closed (merges to find; fuzz/29 repeats a root).
DATA_FILES = SMALL_EGRAPHS + ["crafted/lots_of_paths_through_cycle.json", "dummy_examples/ab_add.json",
                              "dummy_examples/loop.json", "egg/lambda_compose_many.json",
                              "fuzz/11.json", "fuzz/23.json", "fuzz/36.json"]


def run_json(tool, *args):
    code, out, err = run(tool, *args, "--json")
    check(code == 0, f"{' '.join(args)}: exit {code}, stderr: {err.strip()}")
    if code != 0:
        return None
    try:
        value = json.loads(out)
    except json.JSONDecodeError as e:
        check(False, f"{' '.join(args)}: stdout is not one JSON object ({e}): {out!r}")
        return None
    check(isinstance(value, dict), f"{' '.join(args)}: not a JSON object")
    return value


def has_keys(value, keys, what):
    for key in keys:
        check(key in value, f"{what}: key {key!r} missing from {sorted(value)}")


EXTRACT_KEYS = ["file", "nodes", "classes", "roots", "root_tree_cost", "root_costs", "device",
                "seconds", "command", "rounds", "unextractable_classes"]
CONGRUENCE_KEYS = ["file", "nodes", "classes_before", "classes_after", "merges", "rounds",
                   "device", "seconds", "command", "nodes_after"]
INSPECT_KEYS = ["file", "format", "nodes", "classes", "ops", "children", "roots", "image_words",
                "image_bytes", "columns", "command"]
COLUMNS = ["row_eclass_ids", "row_language_op_ids", "row_children_offsets", "row_children_lens",
           "row_signatures", "children", "group_eclass_ids", "group_offsets", "group_rows"]


def expected_costs(data_dir):
    table = {}
    with open(os.path.join(data_dir, "expected_tree_cost.tsv")) as f:
        next(f)
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) >= 5:
                table[fields[0]] = (int(fields[1]), int(fields[2]), float(fields[4]))
    return table


def python_congruence(path):
    """Independent congruence closure over the JSON: (classes_before, classes_after, nodes_after)."""
    with open(path) as f:
        graph = json.load(f)
    nodes = graph["nodes"]
    cls = {nid: str(n["eclass"]) for nid, n in nodes.items()}
    parent = {c: c for c in cls.values()}

    def find(c):
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    changed = True
    while changed:
        changed = False
        seen = {}
        for nid, n in nodes.items():
            key = (n["op"], tuple(find(cls[str(ch)]) for ch in n.get("children", [])))
            here = find(cls[nid])
            if key in seen and find(seen[key]) != here:
                a, b = find(seen[key]), here
                parent[max(a, b)] = min(a, b)
                changed = True
            seen.setdefault(key, here)
    rows = {(find(cls[nid]), n["op"], tuple(find(cls[str(ch)]) for ch in n.get("children", [])))
            for nid, n in nodes.items()}
    return len(parent), len({find(c) for c in parent}), len(rows)


def mode_default(tool, data_dir, work):
    # auto on a small e-graph: the CPU, silently (no CUDA probe, so no no-device note).
    code, out, err = run(tool)
    check(code == 0 and "on the cpu" in out and "no CUDA device" not in err,
          f"auto on the built-in e-graph: exit {code}, stdout {out!r}, stderr {err!r}")
    code, out, err = run(tool, "--device", "cpu")
    check(code == 0, f"summary: exit {code}, stderr {err.strip()}")
    check("root tree cost 7 " in out, f"summary: no 'root tree cost 7' in {out!r}")
    check("142 e-nodes, 20 e-classes" in out, f"summary: counts missing in {out!r}")
    check("congruence" in out, "summary: no congruence line")
    check(err == "", f"summary with --device cpu printed on stderr: {err!r}")

    value = run_json(tool, "--device", "cpu", "extract")
    if value:
        has_keys(value, EXTRACT_KEYS, "extract")
        check(value["nodes"] == 142 and value["classes"] == 20, f"extract counts: {value}")
        check(value["root_tree_cost"] == 7, f"extract root_tree_cost: {value['root_tree_cost']}")
        check(value["root_costs"] == [7], f"extract root_costs: {value['root_costs']}")
        check(value["device"] == "cpu" and value["command"] == "extract", f"extract: {value}")
        check(isinstance(value["seconds"], (int, float)) and value["seconds"] >= 0, "seconds")
        check(value["file"].startswith("(built-in)"), f"extract file: {value['file']}")
    value = run_json(tool, "congruence", "--device", "cpu")
    if value:
        has_keys(value, CONGRUENCE_KEYS, "congruence")
        check(value["classes_before"] == 20, f"congruence classes_before: {value}")
        check(value["merges"] == value["classes_before"] - value["classes_after"],
              f"congruence merges: {value}")
        check(value["rounds"] >= 1, f"congruence rounds: {value}")
    value = run_json(tool, "inspect")
    if value:
        has_keys(value, INSPECT_KEYS, "inspect")
        check(value["format"] == "json" and value["ops"] == 7 and value["roots"] == 1,
              f"inspect: {value}")
        r, c, g = value["nodes"], value["children"], value["classes"]
        check(value["image_words"] == 6 * r + c + 2 * g + 1, f"inspect image_words: {value}")
        check(value["image_bytes"] == 4 * value["image_words"], "inspect image_bytes")
        at = 0
        for name in COLUMNS:
            span = value["columns"].get(name)
            check(span is not None, f"inspect: column {name} missing")
            if span:
                check(span["offset_words"] == at and span["offset_bytes"] == 4 * at,
                      f"inspect column {name} offset: {span}")
                at += span["words"]
        check(at == value["image_words"], "inspect: columns do not tile the image")
    value = run_json(tool, "--device", "cpu")
    if value:
        for part in ("inspect", "extract", "congruence"):
            check(part in value, f"summary JSON: {part} missing")
    code, out, _ = run(tool, "--help")
    check(code == 0 and "congruence" in out, "--help")


def mode_data(tool, data_dir, work):
    table = expected_costs(data_dir)
    for name in DATA_FILES:
        path = os.path.join(data_dir, name)
        nodes, classes, cost = table[name]
        value = run_json(tool, "extract", path, "--device", "cpu")
        if value:
            check(value["file"] == path, f"{name}: file {value['file']}")
            check(value["nodes"] == nodes and value["classes"] == classes,
                  f"{name}: counts {value['nodes']}/{value['classes']} != {nodes}/{classes}")
            check(math.isclose(value["root_tree_cost"], cost, rel_tol=1e-9),
                  f"{name}: root_tree_cost {value['root_tree_cost']} != {cost}")
            check(math.isclose(sum(value["root_costs"]), cost, rel_tol=1e-9),
                  f"{name}: root_costs {value['root_costs']} do not sum to {cost}")
            # The CPU engine's result does not depend on its thread count.
            one = run_json(tool, "extract", path, "--device", "cpu", "--threads", "1")
            if one:
                check(one["root_costs"] == value["root_costs"],
                      f"{name}: --threads 1 root_costs {one['root_costs']} != {value['root_costs']}")
        before, after, rows_after = python_congruence(path)
        value = run_json(tool, "congruence", path, "--device", "cpu")
        if value:
            check((value["classes_before"], value["classes_after"], value["nodes_after"]) ==
                  (before, after, rows_after),
                  f"{name}: congruence {value} != python ({before}, {after}, {rows_after})")
            check(value["merges"] == before - after, f"{name}: merges {value['merges']}")
            one = run_json(tool, "congruence", path, "--device", "cpu", "--threads", "1")
            if one:
                keys = ("classes_after", "nodes_after", "merges")
                check([one[k] for k in keys] == [value[k] for k in keys],
                      f"{name}: congruence --threads 1 {one} != {value}")


def mode_roundtrip(tool, data_dir, work):
    for name in ["egg/math_simplify_factor.json", "dummy_examples/ab_add.json"]:
        path = os.path.join(data_dir, name)
        image = os.path.join(work, os.path.basename(name) + ".vyreimg")
        rebuilt = os.path.join(work, os.path.basename(name) + ".rebuilt.vyreimg")
        packed = run_json(tool, "pack", path, "-o", image)
        from_json = run_json(tool, "inspect", path)
        from_image = run_json(tool, "inspect", image)
        if packed and from_json and from_image:
            check(packed["file_bytes"] == os.path.getsize(image), f"{name}: pack file_bytes")
            check(from_image["format"] == "image", f"{name}: image not detected")
            for key in ("nodes", "classes", "ops", "children", "image_words", "columns"):
                check(from_json[key] == from_image[key], f"{name}: inspect {key} differs")
        json_closure = run_json(tool, "congruence", path, "--device", "cpu", "-o", rebuilt)
        image_closure = run_json(tool, "congruence", image, "--device", "cpu")
        again = run_json(tool, "congruence", rebuilt, "--device", "cpu")
        after = run_json(tool, "inspect", rebuilt)
        if json_closure and image_closure and again and after:
            for key in ("classes_before", "classes_after", "merges", "nodes_after"):
                check(json_closure[key] == image_closure[key], f"{name}: congruence {key} differs")
            check(after["nodes"] == json_closure["nodes_after"] and
                  after["classes"] == json_closure["classes_after"],
                  f"{name}: rebuilt image {after} vs {json_closure}")
            check(again["merges"] == 0, f"{name}: the rebuilt image still merges: {again}")
        # Extract needs costs: an image file is refused with one line naming it.
        code, _, err = run(tool, "extract", image, "--device", "cpu")
        check(code == 2 and err.count("\n") == 1 and image in err and "cost" in err,
              f"extract on an image file: exit {code}, stderr {err!r}")


def mode_bad_input(tool, data_dir, work):

    def write(name, content, binary=False):
        path = os.path.join(work, name)
        with open(path, "wb" if binary else "w") as f:
            f.write(content)
        return path

    good_node = '"a": {"op": "x", "cost": 1, "eclass": "c0", "children": []}'
    cases = {
        "missing file": os.path.join(work, "does_not_exist.json"),
        "directory": work,
        "empty file": write("empty.json", ""),
        "malformed JSON": write("malformed.json", '{"nodes": {' + good_node + ', }'),
        "not an object": write("array.json", "[1, 2, 3]"),
        "no nodes": write("no_nodes.json", '{"root_eclasses": []}'),
        "root naming no e-class": write(
            "bad_root.json", '{"nodes": {' + good_node + '}, "root_eclasses": ["c9"]}'),
        "child naming no node": write(
            "bad_child.json",
            '{"nodes": {"a": {"op": "f", "eclass": "c0", "children": ["zz"]}}}'),
        "cost not a number": write(
            "bad_cost.json", '{"nodes": {"a": {"op": "x", "cost": "cheap", "eclass": "c0"}}}'),
        "duplicate node": write(
            "duplicate.json", '{"nodes": {' + good_node + ', ' + good_node + '}}'),
        "binary garbage": write("garbage.bin", bytes(range(256)) * 4, binary=True),
    }
    # Broken image files, from a good one.
    image = os.path.join(work, "good.vyreimg")
    code, _, err = run(tool, "pack", "-o", image)
    check(code == 0, f"pack of the built-in e-graph: exit {code} {err!r}")
    if code == 0:
        with open(image, "rb") as f:
            good = f.read()
        cases["truncated image"] = write("truncated.vyreimg", good[:len(good) - 6], binary=True)
        flipped = bytearray(good)
        flipped[len(flipped) // 2] ^= 0x40
        cases["corrupt image"] = write("corrupt.vyreimg", bytes(flipped), binary=True)
        cases["trailing bytes"] = write("trailing.vyreimg", good + b"\0\0\0\0", binary=True)
        cases["header only"] = write("header.vyreimg", good[:40], binary=True)
    for what, path in cases.items():
        for command in (["inspect"], ["extract", "--device", "cpu"],
                        ["congruence", "--device", "cpu"], ["--device", "cpu"]):
            code, out, err = run(tool, *command, path, timeout=60)
            label = f"{what} ({' '.join(command)})"
            one_line_status_2(label, code, out, err)
            check(path in err, f"{label}: stderr does not name {path}: {err!r}")
    # Usage errors are exit status 2 as well.
    for args in (["--device", "tpu"], ["frobnicate-extra", "x", "y"], ["pack"],
                 ["--threads", "many"], ["extract", "--method", "dag", "--kick-budget", "-1"],
                 ["extract", "--method", "dag", "--kick-budget", "99999999999999999999"],
                 ["extract", "--method", "dag", "--kick-patience", "0"]):
        code, _, err = run(tool, *args)
        check(code == 2 and err.count("\n") == 1, f"usage {args}: exit {code}, stderr {err!r}")
        if "--kick-budget" in args or "--kick-patience" in args:
            check(args[-1] in err and "not in range" in err, f"usage {args}: stderr {err!r}")
    # An unwritable output names the output path.
    target = os.path.join(work, "no_such_dir", "out.vyreimg")
    code, _, err = run(tool, "pack", "-o", target)
    check(code == 2 and target in err and err.count("\n") == 1,
          f"pack to a missing directory: exit {code}, stderr {err!r}")
    check_image_version(tool, work, image if os.path.isfile(image) else None)
    check_duplicate_fields(tool, work, write)
    check_negative_cycle(tool, work, write)
    check_overflow(tool, work, write)
    check_arguments(tool, work)
    check_outputs(tool, work)


PROGRESS = re.compile(r"^vyre-egraph: .*(\.\.\.| took [0-9.]+ s)$")


def without_progress(err):
    """stderr less the progress notes of steps past half a second (slow machines, sanitizers)."""
    return "".join(line + "\n" for line in err.splitlines() if not PROGRESS.match(line))


def one_line_status_2(label, code, out, err):
    """Bad input or usage: exit status 2, nothing on stdout, one line on stderr (besides the
    progress notes of slow steps)."""
    check(code == 2, f"{label}: exit {code}, want 2; stderr {err!r}")
    err = without_progress(err)
    check(err.count("\n") == 1 and err.endswith("\n"), f"{label}: stderr not one line: {err!r}")
    check(out == "", f"{label}: printed on stdout: {out!r}")


def check_image_version(tool, work, image):
    """An image file of an unknown format version is bad input (2), not a machine failure (1)."""
    if not image:
        return
    with open(image, "rb") as f:
        data = bytearray(f.read())
    for version in (0, 3, 0xFFFFFFFF):
        data[8:12] = version.to_bytes(4, "little")
        path = os.path.join(work, f"version_{version}.vyreimg")
        with open(path, "wb") as f:
            f.write(data)
        for command in (["inspect"], ["congruence", "--device", "cpu"]):
            code, out, err = run(tool, *command, path)
            label = f"image version {version} ({command[0]})"
            one_line_status_2(label, code, out, err)
            check(path in err and f"version={version}" in err and "Fix:" in err,
                  f"{label}: stderr does not name the file, the version and the fix: {err!r}")


def check_duplicate_fields(tool, work, write):
    """A field read twice is refused with the same line by the one-piece reader (a file below the
    4 MiB slice) and the sliced, threaded one (a file above twice the slice): both used to take
    different "nodes" objects (1 node against 65,672)."""
    def nodes(count, prefix):
        return ", ".join(f'"{prefix}{i}": {{"op": "f", "cost": 1, "eclass": "{prefix}c{i}", '
                         f'"children": []}}' for i in range(count))
    small = write("dup_nodes_small.json",
                  '{"nodes": {' + nodes(1, "a") + '}, "nodes": {' + nodes(100, "b") + '}}')
    # Above 2 x the loader's 4 MiB slice (its threaded threshold, fixed): read in slices on two
    # threads.
    large = write("dup_nodes_large.json",
                  '{"nodes": {' + nodes(1, "a") + '}, "nodes": {' + nodes(150000, "b") + '}}')
    check(os.path.getsize(large) > 9 << 20, f"{large} is not above 9 MiB")
    lines = []
    for path in (small, large):
        code, out, err = run(tool, "inspect", path, timeout=120)
        one_line_status_2(f"duplicate nodes ({os.path.basename(path)})", code, out, err)
        check("\"nodes\" appears twice" in err and path in err and "Fix:" in err,
              f"duplicate nodes: stderr {err!r}")
        lines.append(err.replace(path, "FILE"))
    check(lines[0] == lines[1], f"duplicate nodes: the two readers differ: {lines}")
    for what, text in (
            ("root_eclasses", '{"nodes": {' + nodes(1, "a") + '}, "root_eclasses": ["ac0"], '
                              '"root_eclasses": []}'),
            ("cost", '{"nodes": {"a": {"op": "x", "eclass": "c", "cost": 1, "cost": 2}}}')):
        path = write(f"dup_{what}.json", text)
        code, out, err = run(tool, "inspect", path)
        one_line_status_2(f"duplicate {what}", code, out, err)
        check(f'"{what}" appears twice' in err and path in err, f"duplicate {what}: {err!r}")


def check_negative_cycle(tool, work, write):
    """A negative-cost cycle under a 50,000-class chain: found after a pass or two, not after
    #classes + 1 passes over the chain (quadratic: minutes). Checks the answer, not the time."""
    count = 50000
    parts = ['"x": {"op": "leaf", "cost": 1, "eclass": "c0"}',
             '"y": {"op": "g", "cost": -2, "eclass": "c1", "children": ["z"]}',
             '"z": {"op": "h", "cost": 1, "eclass": "c0", "children": ["y"]}',
             '"w": {"op": "k", "cost": 1, "eclass": "c1", "children": ["x"]}']
    for i in range(2, count):
        child = "w" if i == 2 else f"n{i - 1}"
        parts.append(f'"n{i}": {{"op": "f", "cost": 1, "eclass": "c{i}", "children": ["{child}"]}}')
    path = write("negative_cycle.json",
                 '{"nodes": {' + ", ".join(parts) + f'}}, "root_eclasses": ["c{count - 1}"]}}')
    for command in (["extract", "--device", "cpu"], ["--device", "cpu"]):
        code, out, err = run(tool, *command, path, timeout=60)
        label = f"negative-cost cycle ({command[0]})"
        one_line_status_2(label, code, out, err)
        check("negative-cost cycle" in err and path in err and
              ('e-class "c0"' in err or 'e-class "c1"' in err),
              f"{label}: stderr does not name the cycle's e-class: {err!r}")


def check_overflow(tool, work, write):
    """Costs whose sums overflow a double are bad input naming the node, not e-classes
    "reachable only through cycles" with exit status 0."""
    cases = {
        "overflow": ('{"nodes": {"a": {"op": "x", "cost": 1e308, "eclass": "A"}, '
                     '"b": {"op": "f", "cost": 1e308, "eclass": "B", "children": ["a"]}}, '
                     '"root_eclasses": ["B"]}', 'node "b" (e-class "B")'),
        "negative_overflow": ('{"nodes": {"a": {"op": "x", "cost": -1e308, "eclass": "A"}, '
                              '"b": {"op": "f", "cost": -1e308, "eclass": "B", '
                              '"children": ["a", "a"]}}, "root_eclasses": ["B"]}',
                              'node "b" (e-class "B")'),
        "root_overflow": ('{"nodes": {"a": {"op": "x", "cost": 1e308, "eclass": "A"}, '
                          '"c": {"op": "y", "cost": 1e308, "eclass": "C"}}, '
                          '"root_eclasses": ["A", "C"]}', "roots' total"),
    }
    for name, (text, named) in cases.items():
        path = write(name + ".json", text)
        for command in (["extract", "--device", "cpu"], ["--device", "cpu"]):
            code, out, err = run(tool, *command, path)
            label = f"{name} ({command[0]})"
            one_line_status_2(label, code, out, err)
            check("overflows" in err and named in err and path in err and "Fix:" in err and
                  "only through cycles" not in out, f"{label}: stderr {err!r}")
    # Just below the limit is fine.
    path = write("no_overflow.json", '{"nodes": {"a": {"op": "x", "cost": 8e307, "eclass": "A"}, '
                 '"b": {"op": "f", "cost": 8e307, "eclass": "B", "children": ["a"]}}, '
                 '"root_eclasses": ["B"]}')
    value = run_json(tool, "extract", path, "--device", "cpu")
    if value:
        check(value["root_tree_cost"] == 1.6e308 and value["unextractable_classes"] == 0,
              f"no overflow: {value}")


def check_arguments(tool, work):
    """Every command takes one FILE; a surplus argument is refused naming it, and an unknown
    subcommand is named as such with the list of subcommands."""
    first, second = os.path.join(work, "empty.json"), os.path.join(work, "surplus.json")
    for command in ([], ["inspect"], ["pack", "-o", os.path.join(work, "x.vyreimg")], ["extract"],
                    ["congruence"]):
        code, out, err = run(tool, *command, first, second)
        label = f"surplus argument ({' '.join(command[:1]) or 'summary'})"
        one_line_status_2(label, code, out, err)
        check("unexpected argument" in err and second in err, f"{label}: stderr {err!r}")
    check(not os.path.exists(os.path.join(work, "x.vyreimg")), "pack with a surplus wrote")
    for args in (["frobnicate", first], ["frobnicate"]):
        code, out, err = run(tool, *args)
        one_line_status_2(f"unknown subcommand {args}", code, out, err)
        check("unknown subcommand 'frobnicate'" in err and
              all(name in err for name in ("inspect", "pack", "extract", "congruence")),
              f"unknown subcommand {args}: stderr {err!r}")
    code, out, _ = run(tool, "--help")
    for text in ("0 ok", "1 the machine failed", "2 bad input or usage", "3 --device gpu",
                 "symbolic link"):
        check(code == 0 and text in out, f"--help does not say {text!r}")


def check_outputs(tool, work):
    """-o and --selection never replace or write through a symbolic link, a directory or a FIFO:
    they are refused (2) naming the path; a regular file is replaced through a temporary file."""
    folder = os.path.join(work, "outputs")
    shutil.rmtree(folder, ignore_errors=True)  # from an earlier run
    directory = os.path.join(folder, "directory")
    os.makedirs(directory)
    target = os.path.join(folder, "target")
    with open(target, "w") as f:
        f.write("keep")
    link = os.path.join(folder, "link")
    os.symlink(target, link)
    fifo = os.path.join(folder, "fifo")
    os.mkfifo(fifo)
    for path in (link, directory, fifo):
        for args in (["pack", "-o", path], ["congruence", "--device", "cpu", "-o", path],
                     ["extract", "--device", "cpu", "--selection", path]):
            code, out, err = run(tool, *args, timeout=60)
            label = f"{args[0]} to {os.path.basename(path)}"
            one_line_status_2(label, code, out, err)
            check(path in err and ("symbolic link" in err or "not a regular file" in err),
                  f"{label}: stderr {err!r}")
    check(os.path.islink(link) and os.readlink(link) == target, "the link was replaced")
    with open(target) as f:
        check(f.read() == "keep", "the link's target was written through")
    check(os.path.isdir(directory) and not os.listdir(directory), "the directory changed")
    check(os.path.exists(fifo) and not os.path.isfile(fifo), "the FIFO was replaced")
    regular = os.path.join(folder, "regular.vyreimg")
    for _ in range(2):  # created, then replaced
        code, _, err = run(tool, "pack", "-o", regular)
        check(code == 0 and os.path.isfile(regular) and os.path.getsize(regular) > 48,
              f"pack to a regular file: {err!r}")
    left = sorted(set(os.listdir(folder)) - {"target", "link", "directory", "fifo",
                                             "regular.vyreimg"})
    check(left == [], f"temporary files left behind: {left}")


def mode_gpu(tool, data_dir, work):
    code, _, err = run(tool, "extract", "--device", "gpu", "--json")
    if code == 3:
        skip("no CUDA device (" + err.strip() + ")")
    inputs = [[]]
    if os.path.isdir(data_dir):
        inputs += [[os.path.join(data_dir, name)] for name in DATA_FILES]
    for given in inputs:
        label = given[0] if given else "built-in"
        cpu = run_json(tool, "extract", *given, "--device", "cpu")
        gpu = run_json(tool, "extract", *given, "--device", "gpu")
        if cpu and gpu:
            check(gpu["device"] == "gpu", f"{label}: extract device {gpu['device']}")
            for key in ("nodes", "classes", "roots", "root_tree_cost", "root_costs",
                        "unextractable_classes"):
                check(cpu[key] == gpu[key], f"{label}: extract {key}: cpu {cpu[key]} gpu {gpu[key]}")
        stem = os.path.join(work, "gpu_" + os.path.basename(label))
        cpu = run_json(tool, "congruence", *given, "--device", "cpu", "-o", stem + ".cpu.vyreimg")
        gpu = run_json(tool, "congruence", *given, "--device", "gpu", "-o", stem + ".gpu.vyreimg")
        if cpu and gpu:
            for key in ("nodes", "nodes_after", "classes_before", "classes_after", "merges"):
                check(cpu[key] == gpu[key], f"{label}: congruence {key}: cpu {cpu[key]} gpu {gpu[key]}")
            with open(stem + ".cpu.vyreimg", "rb") as a, open(stem + ".gpu.vyreimg", "rb") as b:
                check(a.read() == b.read(), f"{label}: rebuilt images differ between cpu and gpu")
    # Image file input: congruence on the GPU and the CPU agree there too.
    image = os.path.join(work, "builtin.vyreimg")
    if run(tool, "pack", "-o", image)[0] == 0:
        cpu = run_json(tool, "congruence", image, "--device", "cpu")
        gpu = run_json(tool, "congruence", image, "--device", "gpu")
        if cpu and gpu:
            for key in ("nodes_after", "classes_before", "classes_after", "merges"):
                check(cpu[key] == gpu[key], f"image: congruence {key}: cpu {cpu[key]} gpu {gpu[key]}")
    else:
        check(False, "pack of the built-in e-graph failed")
    # The default (auto) keeps an e-graph below 2^20 e-nodes on the CPU even with a device
    # present, without the no-device note: a CUDA context costs more than the work.
    code, out, err = run(tool)
    check(code == 0 and "on the cpu" in out and "no CUDA device" not in err,
          f"default device: exit {code}, stdout {out!r}, stderr {err!r}")


def main():
    tool, mode, data_dir, work = arguments(__doc__)
    if mode in ("data", "roundtrip") and not has_data(data_dir):
        skip(f"no e-graph data in {data_dir}")
    {"default": mode_default, "data": mode_data, "roundtrip": mode_roundtrip,
     "bad_input": mode_bad_input, "gpu": mode_gpu}[mode](tool, data_dir, work)
    return finish()

if __name__ == "__main__":
    sys.exit(main())
