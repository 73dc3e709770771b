#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A time-boxed compute-sanitizer pass over the components changed last (run on the GPU machine
# after `scripts/device.sh build`): each step gets STEP_TIMEOUT seconds and no step starts after
# BUDGET seconds. Logs go to $OUT; one summary line per step on stdout.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
b=build/default
start=$SECONDS
step() {  # tool name command...
  local tool=$1 name=$2
  shift 2
  if ((SECONDS - start > ${BUDGET:-420})); then
    echo "$name $tool: skipped (time box)"
    return
  fi
  VYRE_TEST_SKIP_MEMINFO=1 VYRE_RUNTIME_STRESS_ITERATIONS=12 VYRE_RELIABILITY_STRESS_OPS=300 \
    timeout "${STEP_TIMEOUT:-120}" compute-sanitizer --tool "$tool" --report-api-errors no \
    --error-exitcode 99 "$@" >"$out/san-$name-$tool.log" 2>&1
  local r=$?
  echo "$name $tool: exit $r, $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/san-$name-$tool.log" | tail -n 1)"
}
step racecheck algorithms $b/tests/algorithms/vyre_algorithms_gpu_tests -d yes
step racecheck runtime $b/tests/runtime/vyre_runtime_gpu_tests
step initcheck cuda_graph $b/examples/02_cuda_graph/cuda_graph
step synccheck algorithms $b/tests/algorithms/vyre_algorithms_gpu_tests
step initcheck algorithms $b/tests/algorithms/vyre_algorithms_gpu_tests
step racecheck resident $b/tests/resident/vyre_resident_gpu_tests
step racecheck reliability $b/tests/reliability/vyre_reliability_gpu_tests
step initcheck runtime $b/tests/runtime/vyre_runtime_gpu_tests
step synccheck runtime $b/tests/runtime/vyre_runtime_gpu_tests
step initcheck resident $b/tests/resident/vyre_resident_gpu_tests
step synccheck resident $b/tests/resident/vyre_resident_gpu_tests
step initcheck reliability $b/tests/reliability/vyre_reliability_gpu_tests
step synccheck reliability $b/tests/reliability/vyre_reliability_gpu_tests
