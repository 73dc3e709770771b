#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The eqsat benchmark in one run on the GPU machine: bench_eqsat (the session's iterations on the
# GPU engine and on the all-core CPU engine, one process) and egglog itself (egglog_peer.py, the
# compiled module carried in .deps/egglog-bindings, or PyPI egglog when that folder is missing),
# on the same program and iteration counts, then the same on 500 chains of chain_program.py
# (CHAIN_ITERATIONS, default 40; CHAINS=0 skips them), then the skewed programs of
# skew_programs.py (SKEW: a list of kind:size:iterations, default below; SKEW=none skips them;
# SKEW_GPU_ONLY: the same, the GPU engine alone). JSON lines to stdout.
#   bench/eqsat/run.sh [BUILD_DIR] [PROGRAM] [ITERATIONS (list)] [REPEATS]
#   EGGLOG_ITERATIONS (default: ITERATIONS) picks the peer's counts (egglog's 12th iteration
#   alone takes 30-50 s); GPU_ONLY_ITERATIONS (a list, default none) runs the GPU engine alone
#   at counts the others cannot reach in reasonable time (13: ~250M e-nodes).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/default}
program=${2:-.deps/egglog/math.egg}
iterations=${3:-11,12}
repeats=${4:-3}
"$build/bench/eqsat/bench_eqsat" --program "$program" --iterations "$iterations" --repeats "$repeats"
if [ -n "${GPU_ONLY_ITERATIONS:-}" ]; then
  "$build/bench/eqsat/bench_eqsat" --program "$program" --iterations "$GPU_ONLY_ITERATIONS" \
    --repeats "$repeats" --engines gpu
fi
bindings=""
[ -d .deps/egglog-bindings ] && bindings=.deps/egglog-bindings
for n in ${EGGLOG_ITERATIONS:-${iterations//,/ }}; do
  python3 bench/eqsat/egglog_peer.py "$program" "$n" "$repeats" $bindings
done
chains=${CHAINS:-500}
if [ "$chains" != 0 ]; then
  chain=$(mktemp --suffix=.egg)
  trap 'rm -f "$chain"' EXIT
  python3 bench/eqsat/chain_program.py "$chains" > "$chain"
  chain_iterations=${CHAIN_ITERATIONS:-40}
  "$build/bench/eqsat/bench_eqsat" --program "$chain" --iterations "$chain_iterations" \
    --repeats "$repeats"
  python3 bench/eqsat/egglog_peer.py "$chain" "$chain_iterations" "$repeats" $bindings
fi
skew=${SKEW:-adder:4:6 acsum:9:8 fold:12:12 closure:3000:30 interval:12:10 sssp:100000:40}
if [ "$skew" != none ]; then
  for spec in $skew ${SKEW_GPU_ONLY:-}; do
    IFS=: read -r kind size n <<<"$spec"
    program_file=$(mktemp --suffix="-$kind$size.egg")
    python3 bench/eqsat/skew_programs.py "$kind" "$size" > "$program_file"
    if [[ " ${SKEW_GPU_ONLY:-} " == *" $spec "* ]]; then
      "$build/bench/eqsat/bench_eqsat" --program "$program_file" --iterations "$n" \
        --repeats "$repeats" --engines gpu
    else
      "$build/bench/eqsat/bench_eqsat" --program "$program_file" --iterations "$n" \
        --repeats "$repeats"
      python3 bench/eqsat/egglog_peer.py "$program_file" "$n" "$repeats" $bindings
    fi
    rm -f "$program_file"
  done
fi
