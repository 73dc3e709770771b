#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs on the lent GPU machine (no network, no apt): build with the carried Debian packages in
# .deps/ (see scripts/fetch-device-deps.sh), then any of the stages given as arguments:
#   info      GPU, driver and toolkit versions
#   build     configure + build everything (-j16), or only BUILD_TARGETS (space-separated)
#   test      the whole CTest suite, GPU tests included (TEST_FILTER: a ctest -R pattern)
#   sanitize  compute-sanitizer memcheck/racecheck/initcheck/synccheck over the GPU tests and
#             examples, through scripts/reliability.sh (SANITIZE_FILTER picks executables,
#             SANITIZE_TOOLS the tools, SANITIZE_JOBS runs at once, SANITIZE_TIMEOUT per run)
#   examples  run every example program (04 on a real e-graph from .deps/egraphs)
#   bench     every benchmark executable under build/default/bench (JSON lines), but bench_eqsat
#             and bench_dag
#   eqsat     bench/eqsat/run.sh: bench_eqsat and egglog itself on math.egg (EQSAT_ITERATIONS)
#   cli       scripts/cli_wall.py: vyre-egraph extract wall time per real e-graph, --device auto
#             against --device cpu (CLI_REPEATS)
#   dag       bench_dag on every real e-graph, GPU and CPU engines, against the optima of the last
#             CBC run here (DAG_OPTIMA; the GPU machine has no CBC), DAG_ARGS added
# Logs go to $OUT (or ./device-out) so they come back from the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
deps=$PWD/.deps/root/usr
export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
build=build/default
status=0

stage_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nvcc --version | tail -n 2
  cmake --version | head -n 1
  nproc
}
stage_build() {
  cmake --preset default -DCMAKE_PREFIX_PATH="$deps" \
    -Dsimdjson_DIR="$deps/lib/x86_64-linux-gnu/cmake/simdjson" \
    -DVYRE_EGRAPH_DATA_DIR="$PWD/.deps/egraphs" -DVYRE_EGGLOG_DATA_DIR="$PWD/.deps/egglog" \
    >"$out/configure.log" 2>&1 \
    || { tail -n 40 "$out/configure.log"; return 1; }
  # -k 0: every failing target in one pass (a device call is too dear to find them one by one).
  # shellcheck disable=SC2086 # BUILD_TARGETS is a list
  cmake --build "$build" -j16 ${BUILD_TARGETS:+--target $BUILD_TARGETS} -- -k 0 >"$out/build.log" 2>&1 \
    || { grep -E "error|FAILED" "$out/build.log" | grep -v "^/usr" | head -n 60; return 1; }
  echo "build ok"
}
stage_test() {
  local filter=()
  [ -n "${TEST_FILTER:-}" ] && filter=(-R "$TEST_FILTER")
  # The egglog tests install egglog from PyPI: CI's job, the GPU machine has no network.
  ctest --test-dir "$build" -j8 -LE gpu -E egglog "${filter[@]}" --timeout 600 --output-on-failure >"$out/ctest-host.log" 2>&1
  local host=$?
  tail -n 4 "$out/ctest-host.log"
  ctest --test-dir "$build" -L gpu "${filter[@]}" -j1 -V --timeout 300 >"$out/ctest-gpu.log" 2>&1
  local gpu=$?
  grep -E "tests passed|Passed|Failed|FAILED|test cases|SKIPPED" "$out/ctest-gpu.log" | tail -n 30
  return $((host | gpu))
}
stage_sanitize() {
  # One implementation: scripts/reliability.sh (GPU tests and examples, every tool).
  # SANITIZE_FILTER (a grep -E pattern on the executable's name) and SANITIZE_TOOLS pick a subset.
  BUILD=$build FILTER=${SANITIZE_FILTER:-.} TOOLS=${SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck} \
    JOBS=${SANITIZE_JOBS:-1} RUN_TIMEOUT=${SANITIZE_TIMEOUT:-1800} OUT=$out scripts/reliability.sh sanitize
}
stage_examples() {
  local rc=0 dir=$build/examples
  local runs=("00_quickstart/quickstart" "01_policies/policies" "02_cuda_graph/cuda_graph"
              "03_fusion/fusion_example" "04_congruence_extraction/congruence_extraction"
              "05_equality_saturation/equality_saturation" "06_dag_extraction/dag_extraction"
              "20_egraph_pack/egraph_pack")
  for run in "${runs[@]}"; do
    local args=()
    [[ $run == 04_* ]] && args=("$PWD/.deps/egraphs/fuzz/37.json")
    [[ $run == 20_* ]] && args=("$PWD/.deps/egraphs/egg/math_powers.json" "$out/math_powers.vyreimg")
    "$dir/$run" "${args[@]}" >"$out/example-${run%%/*}.log" 2>&1
    local r=$?
    echo "example $run: exit $r; $(tail -n 1 "$out/example-${run%%/*}.log")"
    [ $r -ne 0 ] && rc=1
  done
  return $rc
}
stage_bench() {
  local rc=0
  # BENCH_FILTER (a grep -E pattern on the executable's path) picks a subset.
  # bench_eqsat runs in its own stage (eqsat), beside egglog.
  for exe in $(find "$build/bench" -maxdepth 3 -type f -executable -not -path '*/CMakeFiles/*' -not -name bench_eqsat -not -name bench_dag | sort | grep -E "${BENCH_FILTER:-.}"); do
    echo "== $exe"
    "$exe" | tee -a "$out/bench.jsonl" || rc=1
  done
  return $rc
}
stage_eqsat() {
  # bench_eqsat (GPU and all-core CPU engines) and egglog itself on math.egg, one run.
  # EQSAT_ITERATIONS (a list), EQSAT_REPEATS, EGGLOG_ITERATIONS, GPU_ONLY_ITERATIONS (default
  # 13; see bench/eqsat/run.sh).
  GPU_ONLY_ITERATIONS=${GPU_ONLY_ITERATIONS-13} bench/eqsat/run.sh "$build" .deps/egglog/math.egg "${EQSAT_ITERATIONS:-11,12}" \
    "${EQSAT_REPEATS:-3}" | tee -a "$out/eqsat.jsonl"
}
stage_cli() {
  python3 scripts/cli_wall.py "$build/tools/vyre-egraph/vyre-egraph" "$PWD/.deps/egraphs" \
    --repeats "${CLI_REPEATS:-21}" | tee -a "$out/cli.jsonl" | tail -n 1
  return "${PIPESTATUS[0]}"
}
stage_dag() {
  # bench/dag/cbc-optima.jsonl: CBC's result per real e-graph (the GPU machine has no CBC),
  # written where CBC is by: bench_dag --data-dir ../shared/data/egraphs --time-limit 60
  # shellcheck disable=SC2086 # DAG_ARGS is a list
  "$build/bench/dag/bench_dag" --data-dir "$PWD/.deps/egraphs" \
    --optima "${DAG_OPTIMA:-bench/dag/cbc-optima.jsonl}" ${DAG_ARGS:-} | tee -a "$out/dag.jsonl" \
    | grep -E '"dag.extract.set"|gpu_equals_cpu":false'
  return "${PIPESTATUS[0]}"
}

for stage in "$@"; do
  echo "==== $stage"
  "stage_$stage" || status=1
done
exit $status
