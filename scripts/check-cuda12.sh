#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile check against CUDA 12, without a GPU and without a CUDA 12 toolkit: every public
# header alone, then all of them together against the oldest supported CUDA runtime (12.4).
#
# The CUDA 12 runtime headers (cuda_runtime_api.h, cuda.h, ...) and CCCL come from PyPI wheels
# installed into .cache/cuda12 (git-ignored). PyPI has no CUDA 12 compiler: the
# nvidia-cuda-nvcc-cu12 wheels hold ptxas, libnvvm and the crt headers only, no nvcc, cicc or
# cudafe++. So the compiler is the toolkit's nvcc (13.x) with the CUDA 12 headers placed first
# on the include path: CUDART_VERSION, every CUDA runtime and driver declaration, and CCCL are
# CUDA 12's (each translation unit asserts it), while the compiler's own crt headers and
# built-ins stay those of the nvcc that runs. That catches API differences between CUDA 12 and
# 13 (signatures, removed or added functions, CCCL features), which is what breaks; it does not
# catch a construct that only an old nvcc front end rejects.
#
# Exit status: 0 when everything compiled, 1 when something did not (its errors are printed),
# 77 (skipped, with a SKIPPED line) when PyPI cannot be reached to install the headers.
# Environment: VYRE_CUDA12_JOBS (parallel compiles, default 2), NVCC (default: nvcc on PATH),
# VYRE_CUDA12_ONLY (an extended regex: check only the headers it matches, for a quick rerun),
# VYRE_CUDA12_ROOT (where the wheels go, default .cache/cuda12).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the newest CUDA 12 headers and CCCL for the per-header check, and the oldest runtime
# vyre supports (VYRE_MIN_CUDART_VERSION in include/vyre/core/config.hpp) for the second pass.
runtime_version=12.9.79
cccl_version=12.9.27
oldest_version=12.4.127
runtime_latest="nvidia-cuda-runtime-cu12==$runtime_version"
cccl_latest="nvidia-cuda-cccl-cu12==$cccl_version"
runtime_oldest="nvidia-cuda-runtime-cu12==$oldest_version"
cudart_latest=12090
cudart_oldest=12040

root=${VYRE_CUDA12_ROOT:-.cache/cuda12}
venv=$root/venv
oldest=$root/runtime-12.4
jobs=${VYRE_CUDA12_JOBS:-2}
nvcc=${NVCC:-nvcc}
start=$(date +%s)

log() { echo "check-cuda12: $*"; }
skip() {
  log "SKIPPED: $*"
  exit 77
}

if ! command -v "$nvcc" >/dev/null 2>&1; then
  log "FAILED: no nvcc on PATH (set NVCC=/path/to/nvcc)" >&2
  exit 1
fi

# pip_or_skip DESCRIPTION PIP-ARGS...: installs, or skips the check when PyPI is unreachable.
pip_or_skip() {
  local what=$1
  shift
  if "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >"$root/pip.log" 2>&1; then
    return 0
  fi
  if ! timeout 60 "$venv/bin/pip" index versions --disable-pip-version-check \
    nvidia-cuda-runtime-cu12 >/dev/null 2>&1; then
    skip "PyPI is unreachable, so the CUDA 12 headers ($what) cannot be installed"
  fi
  cat "$root/pip.log" >&2
  log "FAILED: pip could not install $what (PyPI answered; see the pip output above)" >&2
  exit 1
}

mkdir -p "$root"
if [ ! -x "$venv/bin/pip" ]; then
  python3 -m venv "$venv" || {
    log "FAILED: python3 -m venv $venv (install python3-venv)" >&2
    exit 1
  }
fi
wheels="$venv/lib/python3*/site-packages/nvidia"
installed() { compgen -G "$venv/lib/python3*/site-packages/$1.dist-info" >/dev/null; }
if ! installed "nvidia_cuda_runtime_cu12-$runtime_version" ||
  ! installed "nvidia_cuda_cccl_cu12-$cccl_version"; then
  pip_or_skip "$runtime_latest $cccl_latest" "$runtime_latest" "$cccl_latest"
fi
if [ ! -f "$oldest/nvidia/cuda_runtime/include/cuda_runtime_api.h" ]; then
  rm -rf "$oldest"
  pip_or_skip "$runtime_oldest" --no-deps --target "$oldest" "$runtime_oldest"
fi
runtime_include=$(echo $wheels/cuda_runtime/include)
cccl_include=$(echo $wheels/cuda_cccl/include)
oldest_include=$oldest/nvidia/cuda_runtime/include
for dir in "$runtime_include" "$cccl_include" "$oldest_include"; do
  [ -f "$dir/cuda_runtime_api.h" ] || [ -f "$dir/cuda/version" ] || {
    log "FAILED: the wheels did not install $dir" >&2
    exit 1
  }
done
installed_at=$(date +%s)

work=$(mktemp -d "${TMPDIR:-/tmp}/vyre-cuda12.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The public headers; the JSON loader's needs simdjson, which nvcc cannot compile, the DAG ILP's
# needs COIN-OR CBC (host-only, optional), and the diagnostic prologue/epilogue are regions, not
# headers (tests/headers checks them).
find include/vyre -name '*.hpp' -o -name '*.cuh' | sed 's|^include/||' | sort |
  grep -vxE 'vyre/io/egraph_json.hpp|vyre/algorithms/dag_ilp.hpp|vyre/detail/(prologue|epilogue).hpp' |
  grep -E "${VYRE_CUDA12_ONLY:-.}" >"$work/headers"
count=$(wc -l <"$work/headers")

# One translation unit per header: the header alone (twice: include guard), then the check
# that the CUDA 12 headers, not the toolkit's, were used. tests/headers runs the stricter
# variant (hostile macros after a prelude of standard, CCCL and CUB headers) with the toolkit;
# leaving the prelude out here keeps each unit to what its header pulls in.
make_unit() {  # make_unit HEADER EXPECTED_CUDART FILE
  cat >"$3" <<EOF
// Generated by scripts/check-cuda12.sh: <$1> alone against CUDA 12 headers.
#include <$1>
#include <$1>
#include <cuda_runtime_api.h>
#include <cuda/version>
static_assert(CUDART_VERSION == $2, "check-cuda12: not the CUDA 12 runtime headers");
static_assert(CCCL_MAJOR_VERSION < 3, "check-cuda12: not CUDA 12's CCCL");
EOF
}

compile_one() {  # compile_one HEADER: prints "ok HEADER" or "FAILED HEADER"
  local header=$1 stem
  stem=$(echo "$header" | tr '/.' '__')
  make_unit "$header" "$cudart_latest" "$work/$stem.cu"
  if "$nvcc" -std=c++20 -arch=sm_90 -c -Werror=all-warnings -Iinclude -I"$cccl_include" \
    -I"$runtime_include" "$work/$stem.cu" -o "$work/$stem.o" >"$work/$stem.log" 2>&1; then
    echo "ok $header"
  else
    echo "FAILED $header"
  fi
}
export -f make_unit compile_one
export work nvcc cudart_latest cccl_include runtime_include

log "$count headers, each alone, nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" \
  "with CUDA $cudart_latest runtime headers and CCCL from the cu12 wheels, $jobs at a time"
xargs -P "$jobs" -I{} bash -c 'compile_one "$1"' _ {} <"$work/headers" >"$work/results"
failed=$(grep -c '^FAILED' "$work/results" || true)
headers_done=$(date +%s)

# The oldest supported runtime (12.4): everything in one translation unit.
cat >"$work/oldest.cu" <<EOF
// Generated by scripts/check-cuda12.sh: every public header against the CUDA 12.4 runtime.
#include <cuda_runtime_api.h>
static_assert(CUDART_VERSION == $cudart_oldest, "check-cuda12: not the CUDA 12.4 runtime headers");
#include <vyre/vyre.cuh>
EOF
oldest_status=ok
if ! "$nvcc" -std=c++20 -arch=sm_90 -c -Werror=all-warnings -Iinclude -I"$cccl_include" \
  -I"$oldest_include" "$work/oldest.cu" -o "$work/oldest.o" >"$work/oldest.log" 2>&1; then
  oldest_status=FAILED
fi
end=$(date +%s)

while read -r status header; do
  [ "$status" = FAILED ] || continue
  echo "---- FAILED: <$header> against CUDA $cudart_latest headers:" >&2
  head -n 40 "$work/$(echo "$header" | tr '/.' '__').log" >&2
done <"$work/results"
if [ "$oldest_status" = FAILED ]; then
  echo "---- FAILED: <vyre/vyre.cuh> against the CUDA $cudart_oldest runtime headers:" >&2
  head -n 40 "$work/oldest.log" >&2
fi
log "install $((installed_at - start))s, headers $((headers_done - installed_at))s," \
  "CUDA 12.4 pass $((end - headers_done))s"
log "$((count - failed)) passed, $failed failed (headers against CUDA $cudart_latest);" \
  "vyre.cuh against CUDA $cudart_oldest: $oldest_status"
if [ "$failed" != 0 ] || [ "$oldest_status" != ok ]; then
  log "FAILED" >&2
  exit 1
fi
