#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what is missing, build, run vyre's main program.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target quickstart
./build/default/examples/00_quickstart/quickstart "$@"
