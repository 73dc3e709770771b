#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reduces scripts/bench_compare.sh output: for every measurement present in both trees, the
median and the minimum over the rounds, and head/base for each (below 1: head is faster).

    python3 scripts/bench_diff.py compare-base.jsonl compare-head.jsonl [--only REGEX]
"""
import argparse
import collections
import json
import re
import statistics


def load(path):
    rows = collections.defaultdict(list)
    for line in open(path):
        line = re.sub(r":-?(nan|inf)\b", ":null", line.strip())
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if "name" not in record or "median_ns" not in record:
            continue
        key = (record["name"], json.dumps(record.get("params", {}), sort_keys=True))
        rows[key].append(record["median_ns"])
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("head")
    parser.add_argument("--only", default=".", help="regex on the measurement name and params")
    args = parser.parse_args()
    base, head = load(args.base), load(args.head)
    print(f"{'measurement':90s} {'base med':>11s} {'head med':>11s} {'ratio':>6s} "
          f"{'base min':>11s} {'head min':>11s} {'ratio':>6s}")
    for key, base_ns in base.items():
        head_ns = head.get(key)
        label = f"{key[0]} {key[1]}"
        if not head_ns or not re.search(args.only, label) or min(base_ns) <= 0:
            continue
        bm, hm = statistics.median(base_ns), statistics.median(head_ns)
        bl, hl = min(base_ns), min(head_ns)
        print(f"{label[:90]:90s} {bm:11.0f} {hm:11.0f} {hm / bm:6.3f} {bl:11.0f} {hl:11.0f} "
              f"{hl / bl:6.3f}")


if __name__ == "__main__":
    main()
