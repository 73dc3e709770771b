#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile check against CUDA 12, without a GPU and without a CUDA 12 toolkit: every public
# header, once through nvcc and once (host-only headers) through the host compiler, then vyre.cuh
# against the oldest supported CUDA runtime (12.4).
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
# Environment: NVCC (default: nvcc on PATH), CXX (the host compiler, default g++),
# VYRE_CUDA12_ONLY (an extended regex: check only the headers it matches, for a quick rerun),
# VYRE_CUDA12_ROOT (where the wheels go, default .cache/cuda12).
set -euo pipefail
cd "$(dirname "$0")/.."

# Pinned: the newest CUDA 12 headers and CCCL for the header check, and the oldest runtime
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

# The public headers, less three kinds: those that reach simdjson (the JSON loader's; nvcc cannot
# compile simdjson), the DAG ILP's (COIN-OR CBC, host-only and optional), and the diagnostic
# prologue/epilogue (regions, not headers; tests/headers checks them). The simdjson set is the
# closure of "includes simdjson.h or a header in the set", so a new loader header joins it alone.
find include/vyre -name '*.hpp' -o -name '*.cuh' | sed 's|^include/||' | sort >"$work/all_headers"
{ grep -l '#include <simdjson.h>' $(sed 's|^|include/|' "$work/all_headers") || true; } |
  sed 's|^include/||' >"$work/simdjson_headers"
while :; do
  before=$(wc -l <"$work/simdjson_headers")
  { grep -lF -f <(sed 's|.*|#include "&"|' "$work/simdjson_headers") \
    $(sed 's|^|include/|' "$work/all_headers") || true; } | sed 's|^include/||' |
    sort -u - "$work/simdjson_headers" >"$work/simdjson_next"
  mv "$work/simdjson_next" "$work/simdjson_headers"
  [ "$(wc -l <"$work/simdjson_headers")" -eq "$before" ] && break
done
grep -vxF -f "$work/simdjson_headers" "$work/all_headers" |
  grep -vxE 'vyre/algorithms/dag_ilp.hpp|vyre/detail/(prologue|epilogue).hpp' |
  grep -E "${VYRE_CUDA12_ONLY:-.}" >"$work/headers"
count=$(wc -l <"$work/headers")

# Two translation units hold every public header: one compiled by nvcc (the device and host
# paths CUDA code sees) and one of the host-only .hpp headers compiled by the host compiler (the
# path without __CUDACC__). Each header's self-containment is tests/headers' job (every header
# alone, with hostile macros, against the toolkit); here the question is only whether CUDA 12's
# API and CCCL compile vyre, so one unit per compiler answers it at a fraction of the cost of one
# unit per header.
make_unit() {  # make_unit HEADER-LIST EXPECTED_CUDART FILE
  {
    echo "// Generated by scripts/check-cuda12.sh: the public headers against CUDA 12 headers."
    sed 's|.*|#include <&>|' "$1"
    echo "#include <cuda_runtime_api.h>"
    echo "#include <cuda/version>"
    echo "static_assert(CUDART_VERSION == $2, \"check-cuda12: not the CUDA 12 runtime headers\");"
    echo "static_assert(CCCL_MAJOR_VERSION < 3, \"check-cuda12: not the CCCL of CUDA 12\");"
  } >"$3"
}

host_cxx=${CXX:-g++}
grep '\.hpp$' "$work/headers" >"$work/host_headers" || true
host_count=$(wc -l <"$work/host_headers")
nvcc_release=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
log "$count headers through nvcc $nvcc_release" \
  "and $host_count host headers through $host_cxx, with CUDA $cudart_latest runtime headers and" \
  "CCCL from the cu12 wheels"
make_unit "$work/headers" "$cudart_latest" "$work/all.cu"
nvcc_status=ok
"$nvcc" -std=c++20 -arch=sm_90 -c -Werror=all-warnings -Iinclude -I"$cccl_include" \
  -I"$runtime_include" "$work/all.cu" -o "$work/all.o" >"$work/all.log" 2>&1 &
nvcc_pid=$!
# The oldest supported runtime (12.4): vyre.cuh, compiled beside the unit above.
cat >"$work/oldest.cu" <<EOF
// Generated by scripts/check-cuda12.sh: every public header against the CUDA 12.4 runtime.
#include <cuda_runtime_api.h>
static_assert(CUDART_VERSION == $cudart_oldest, "check-cuda12: not the CUDA 12.4 runtime headers");
#include <vyre/vyre.cuh>
EOF
oldest_status=ok
"$nvcc" -std=c++20 -arch=sm_90 -c -Werror=all-warnings -Iinclude -I"$cccl_include" \
  -I"$oldest_include" "$work/oldest.cu" -o "$work/oldest.o" >"$work/oldest.log" 2>&1 &
oldest_pid=$!
host_status=ok
if [ "$host_count" != 0 ]; then
  make_unit "$work/host_headers" "$cudart_latest" "$work/host.cpp"
  "$host_cxx" -std=c++20 -fsyntax-only -Wall -Wextra -Werror -Iinclude -isystem "$cccl_include" \
    -isystem "$runtime_include" "$work/host.cpp" >"$work/host.log" 2>&1 || host_status=FAILED
fi
wait "$nvcc_pid" || nvcc_status=FAILED
wait "$oldest_pid" || oldest_status=FAILED
end=$(date +%s)

if [ "$nvcc_status" = FAILED ]; then
  echo "---- FAILED: the public headers through nvcc against CUDA $cudart_latest headers:" >&2
  head -n 60 "$work/all.log" >&2
fi
if [ "$host_status" = FAILED ]; then
  echo "---- FAILED: the host headers through $host_cxx against CUDA $cudart_latest headers:" >&2
  head -n 60 "$work/host.log" >&2
fi
if [ "$oldest_status" = FAILED ]; then
  echo "---- FAILED: <vyre/vyre.cuh> against the CUDA $cudart_oldest runtime headers:" >&2
  head -n 40 "$work/oldest.log" >&2
fi
log "install $((installed_at - start))s, compiles $((end - installed_at))s"
log "against CUDA $cudart_latest: nvcc $nvcc_status, $host_cxx $host_status;" \
  "vyre.cuh against CUDA $cudart_oldest: $oldest_status"
if [ "$nvcc_status" != ok ] || [ "$host_status" != ok ] || [ "$oldest_status" != ok ]; then
  log "FAILED" >&2
  exit 1
fi
