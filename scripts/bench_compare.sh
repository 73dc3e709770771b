#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Same-run before/after benchmark of two vyre trees on one GPU (run on the GPU machine):
#   [PARTS="algorithms upload"] scripts/bench_compare.sh BASELINE_TREE [ROUNDS]
# BASELINE_TREE is an exported older tree (e.g. `git archive <rev> | tar -x -C .baseline`),
# built here with only its benchmarks; this tree's build/default must already hold them
# (scripts/device.sh build). Each round runs bench_algorithms (--parts gpu: device paths only)
# and bench_resident_upload from both trees, the baseline first in odd rounds and last in even
# ones, so drift and order effects (host caches, clocks) hit both alike. JSON lines go to $OUT/compare-{base,head}.jsonl
# with "round" and "tree" added; scripts/bench_diff.py reduces them.
set -uo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: scripts/bench_compare.sh BASELINE_TREE [ROUNDS]}
rounds=${2:-2}
parts=${PARTS:-algorithms upload}
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
deps=$PWD/.deps/root/usr
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
cmake -S "$base" -B "$base/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DVYRE_BUILD_TESTS=OFF -DVYRE_BUILD_EXAMPLES=OFF -DVYRE_BUILD_BENCHMARKS=ON -DVYRE_BUILD_TOOLS=OFF \
  -DCMAKE_PREFIX_PATH="$deps" -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" \
  >"$out/compare-configure.log" 2>&1 || { tail -n 30 "$out/compare-configure.log"; exit 1; }
cmake --build "$base/build" -j16 --target bench_algorithms bench_resident_upload \
  >"$out/compare-build.log" 2>&1 || { grep -m5 -A10 error "$out/compare-build.log"; exit 1; }
run() {  # run TREE_NAME BUILD_DIR ROUND
  local name=$1 dir=$2 round=$3
  local tag="\"tree\":\"$name\",\"round\":$round,"
  if [[ " $parts " == *" algorithms "* ]]; then
    "$dir/bench/algorithms/bench_algorithms" --rows 1,4,16 --parts gpu --repeats 10 \
      --data-dir /nonexistent | sed "s/^{/{$tag/" >>"$out/compare-$name.jsonl"
  fi
  if [[ " $parts " == *" upload "* ]]; then
    "$dir/bench/resident/bench_resident_upload" | sed "s/^{/{$tag/" >>"$out/compare-$name.jsonl"
  fi
}
for round in $(seq 1 "$rounds"); do
  if ((round % 2)); then  # odd rounds run the baseline first, even rounds this tree
    run base "$base/build" "$round"
    run head build/default "$round"
  else
    run head build/default "$round"
    run base "$base/build" "$round"
  fi
done
echo "compare: $(wc -l <"$out/compare-base.jsonl") base lines, $(wc -l <"$out/compare-head.jsonl") head lines"
