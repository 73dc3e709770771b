#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clang-tidy over every public host header (.hpp), with the checks of .clang-tidy (bug-prone
# constructs and needless copies, as CCCL's and RMM's configurations check them): one
# translation unit that includes them all, so each header is analysed once. Any finding fails
# (exit 1). Uses clang-tidy 16 (Debian's clang-tidy-16, which scripts/deps.sh installs); the CUDA
# toolkit's headers and CCCL come from the CUDA install.
set -euo pipefail
cd "$(dirname "$0")/.."

tidy=clang-tidy-16
if ! command -v "$tidy" >/dev/null 2>&1; then
  echo "check-tidy: $tidy not found (scripts/deps.sh installs it as root). Install it:" >&2
  echo "  sudo apt-get install $tidy" >&2
  exit 2
fi
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -d "$cuda/include" ]; then
  echo "check-tidy: no CUDA toolkit at $cuda (set CUDA_HOME)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unit="$work/all_headers.cpp"
{
  echo "// Every public host header of vyre, for clang-tidy."
  git ls-files 'include/vyre/*.hpp' | grep -v -e '/detail/prologue.hpp' -e '/detail/epilogue.hpp' \
    | while read -r header; do
      # dag_ilp.hpp needs COIN-OR CBC's headers (it says so with an #error without them).
      if [ "$header" = include/vyre/algorithms/dag_ilp.hpp ] && [ ! -f /usr/include/coin/Cbc_C_Interface.h ]; then
        continue
      fi
      echo "#include \"${header#include/}\""
    done
} >"$unit"
count=$(grep -c '^#include' "$unit")
# clang's count of the warnings it suppressed (system headers) is noise: left out of stderr.
"$tidy" --quiet --config-file=.clang-tidy "$unit" -- -std=c++20 -x c++ -Iinclude -I/usr/include/coin \
  -isystem "$cuda/include/cccl" -isystem "$cuda/include" 2> >(grep -v ' warnings\? generated\.$' >&2)
echo "check-tidy: $count headers, no findings"
