#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sourced by main.sh and test.sh: make sure what vyre's build needs is installed.
# As root with apt-get: installs the missing Debian packages. Otherwise: prints exactly what to
# install and stops. The CUDA toolkit (>= 12.4) is the one thing it cannot install.
set -euo pipefail

vyre_missing_packages=()
vyre_need() {  # vyre_need PACKAGE TEST-COMMAND...
  local package=$1; shift
  if ! "$@" >/dev/null 2>&1; then vyre_missing_packages+=("$package"); fi
}

vyre_cmake_new_enough() {
  local version
  version=$(cmake --version | head -n1 | awk '{print $3}')
  [ "$(printf '%s\n3.25\n' "$version" | sort -V | head -n1)" = "3.25" ]
}

vyre_find_nvcc() {
  if command -v nvcc >/dev/null 2>&1; then return 0; fi
  for dir in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
    if [ -x "$dir/nvcc" ]; then export PATH="$dir:$PATH"; return 0; fi
  done
  echo "vyre: no CUDA toolkit found (nvcc). Install CUDA >= 12.4 from NVIDIA and put its bin/ on PATH." >&2
  return 1
}

vyre_ensure_deps() {
  vyre_find_nvcc
  vyre_need cmake vyre_cmake_new_enough
  vyre_need ninja-build command -v ninja
  vyre_need g++ command -v g++
  vyre_need catch2 test -f /usr/include/catch2/catch.hpp
  vyre_need libsimdjson-dev test -f /usr/include/simdjson.h
  vyre_need libcli11-dev test -f /usr/include/CLI/CLI.hpp
  vyre_need pkg-config command -v pkg-config
  vyre_need coinor-libcbc-dev test -f /usr/include/coin/Cbc_C_Interface.h  # --method ilp
  vyre_need libgmp-dev sh -c 'ls /usr/include/gmp.h /usr/include/*/gmp.h'  # egglog's BigInt
  vyre_need clang command -v clang++
  vyre_need clang-format command -v clang-format
  vyre_need clang-tidy-16 command -v clang-tidy-16  # scripts/check-tidy.sh
  vyre_need python3-venv python3 -c 'import ensurepip, venv'  # scripts/check-cuda12.sh
  vyre_need libclang-rt-14-dev sh -c 'ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
  if [ ${#vyre_missing_packages[@]} -eq 0 ]; then return 0; fi

  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "vyre: installing ${vyre_missing_packages[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${vyre_missing_packages[@]}" >/dev/null
  else
    echo "vyre: missing packages. Install them, then run this command again:" >&2
    echo "  sudo apt-get install ${vyre_missing_packages[*]}" >&2
    return 1
  fi
}

vyre_ensure_deps
