#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares .deps/ (git-ignored) for the lent GPU machine, which has no network and no apt:
# the Debian packages the build needs, unpacked into .deps/root. Carry .deps with the run.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download catch2 libsimdjson-dev libsimdjson14 libcli11-dev)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
rm -rf .deps/debs
# ../shared does not travel to the GPU machine: carry the real e-graphs the tests walk.
if [ -d ../shared/data/egraphs ]; then cp -r ../shared/data/egraphs .deps/egraphs; fi
if [ -d ../shared/data/egglog ]; then cp -r ../shared/data/egglog .deps/egglog; fi
echo "prepared .deps/root ($(du -sh .deps/root | cut -f1))"
