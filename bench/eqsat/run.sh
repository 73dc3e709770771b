#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The eqsat benchmark in one run on the GPU machine: bench_eqsat (GPU engine and all-core CPU
# engine, one process) and egglog itself (egglog_peer.py, the compiled module carried in
# .deps/egglog-bindings, or PyPI egglog when that folder is missing), on the same program and
# iteration counts. JSON lines to stdout.
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
