#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that C++/CUDA sources follow .clang-format, changing nothing: every tracked *.hpp,
# *.cuh, *.cu and *.cpp (or only the files named on the command line) goes through
# `clang-format --dry-run -Werror`; the files that would change are listed, and the script
# exits 1 if there are any. Fix one with `clang-format -i FILE`.
#
# The formatting depends on the clang-format version: this uses clang-format 14 (Debian's
# `clang-format` package, installed here as root with apt-get when missing, like deps.sh does)
# and refuses any other version.
set -euo pipefail
cd "$(dirname "$0")/.."

required_major=14

find_clang_format() {
  local candidate
  for candidate in clang-format-${required_major} clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! clang_format=$(find_clang_format); then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "check-format: installing clang-format" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends clang-format >/dev/null
    clang_format=$(find_clang_format)
  else
    echo "check-format: clang-format not found. Install it, then run this again:" >&2
    echo "  sudo apt-get install clang-format" >&2
    exit 2
  fi
fi

version=$("$clang_format" --version)
major=$(printf '%s\n' "$version" | sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p')
if [ "$major" != "$required_major" ]; then
  echo "check-format: need clang-format ${required_major}, found: ${version}" >&2
  echo "  (other versions format differently; install clang-format-${required_major})" >&2
  exit 2
fi

if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files -- '*.hpp' '*.cuh' '*.cu' '*.cpp')
fi

offenders=()
for file in "${files[@]}"; do
  if [ ! -f "$file" ]; then
    echo "check-format: no such file: $file" >&2
    exit 2
  fi
  if ! "$clang_format" --dry-run -Werror "$file" >/dev/null 2>&1; then offenders+=("$file"); fi
done

if [ ${#offenders[@]} -eq 0 ]; then
  echo "check-format: ${#files[@]} files checked, all formatted (${version})"
  exit 0
fi
echo "check-format: ${#offenders[@]} of ${#files[@]} files are not formatted (${version}):"
printf '  %s\n' "${offenders[@]}"
echo "Fix: clang-format -i FILE... (the repository's .clang-format applies)"
exit 1
