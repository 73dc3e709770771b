#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what is missing, build, run vyre's main program: vyre-egraph on its
# built-in e-graph (inspect + extract + congruence), on the CPU engine: `--device auto` keeps
# e-graphs below 2^20 e-nodes off the GPU (`--device gpu` forces it). Arguments go to
# vyre-egraph, e.g.
#   scripts/main.sh extract --json path/to/egraph.json
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target vyre-egraph
./build/default/tools/vyre-egraph/vyre-egraph "$@"
