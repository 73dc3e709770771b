#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what is missing, build, and saturate an egglog program: vyre-eqsat on
# examples/programs/math.egg (the Oatlog project's `math` benchmark: 11 iterations to about a
# million e-nodes, then the cheapest term of each of its seven expressions). `--device auto`:
# iterations below 8192 e-nodes run on the CPU engine, larger ones on the GPU when there is one
# (the CPU engine otherwise). One progress line per iteration on stderr, egglog's outputs on
# stdout. Arguments replace the defaults:
#   scripts/main.sh my.egg --device cpu --node-limit 1000000
# The e-graph tool is one command away: cmake --build --preset default --target vyre-egraph.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target vyre-eqsat
args=("$@")
[ ${#args[@]} -eq 0 ] && args=(examples/programs/math.egg)
./build/default/tools/vyre-eqsat/vyre-eqsat "${args[@]}"
