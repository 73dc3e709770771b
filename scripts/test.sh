#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite: install what is missing, build everything, run every test. Without a
# GPU the GPU tests are reported as skipped (exit code 77), never as passed.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset default
cmake --build --preset default
ctest --preset default "$@"

# The host tests again under AddressSanitizer + UndefinedBehaviorSanitizer.
cmake --preset sanitize
cmake --build --preset sanitize
ctest --preset sanitize "$@"
