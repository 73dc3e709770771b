#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares .deps/ (git-ignored) for the lent GPU machine, which has no network and no apt:
# the RMM wheels for the runtime benchmark's RMM peer, unpacked into .deps/rmm (below), and
# the Debian packages the build needs, unpacked into .deps/root, and egglog's compiled module
# (.deps/egglog-bindings). Carry .deps with the run.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .deps && mkdir -p .deps/debs
(cd .deps/debs && apt-get download catch2 libsimdjson-dev libsimdjson14 libcli11-dev libgmp-dev \
  libgmp10)
for deb in .deps/debs/*.deb; do dpkg -x "$deb" .deps/root; done
rm -rf .deps/debs
# ../shared does not travel to the GPU machine: carry the real e-graphs the tests walk.
if [ -d ../shared/data/egraphs ]; then cp -r ../shared/data/egraphs .deps/egraphs; fi
if [ -d ../shared/data/egglog ]; then cp -r ../shared/data/egglog .deps/egglog; fi
if [ -d ../shared/data/egglog-tests ]; then cp -r ../shared/data/egglog-tests .deps/egglog-tests; fi
# The RMM peer of bench/runtime (optional: without it the benchmark prints a skipped line).
# The librmm-cu13 wheel carries RMM's headers, the CCCL they need (include/rapids) and
# librmm.so (RMM's pools are compiled there; cudart inside is static); rapids-logger carries
# librapids_logger.so and its header. Unpacked into .deps/rmm, which the runtime benchmark's
# CMake finds by itself (or pass -DVYRE_BENCH_RMM_DIR=...). Skip with VYRE_SKIP_RMM=1.
if [ "${VYRE_SKIP_RMM:-0}" != 1 ]; then
  if (mkdir -p .deps/wheels && cd .deps/wheels &&
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_28_x86_64 --python-version 3.11 \
      "librmm-cu13==${VYRE_RMM_VERSION:-26.10.0}" "rapids-logger==${VYRE_RAPIDS_LOGGER_VERSION:-0.3.0}"); then
    mkdir -p .deps/rmm
    for wheel in .deps/wheels/librmm_cu13-*.whl .deps/wheels/rapids_logger-*.whl; do
      python3 -m zipfile -e "$wheel" .deps/rmm-unpack
    done
    # Only what the build needs: headers and the two shared libraries.
    mkdir -p .deps/rmm/librmm/lib64 .deps/rmm/rapids_logger/lib64
    cp -r .deps/rmm-unpack/librmm/include .deps/rmm/librmm/
    # The peer's translation unit uses RMM's libcu++ only; thrust and cub would cost 10 MiB of
    # the carry.
    rm -rf .deps/rmm/librmm/include/rapids/thrust .deps/rmm/librmm/include/rapids/cub
    cp .deps/rmm-unpack/librmm/lib64/librmm.so .deps/rmm/librmm/lib64/
    cp -r .deps/rmm-unpack/rapids_logger/include .deps/rmm/rapids_logger/
    cp .deps/rmm-unpack/rapids_logger/lib64/librapids_logger.so .deps/rmm/rapids_logger/lib64/
    rm -rf .deps/rmm-unpack .deps/wheels
    echo "prepared .deps/rmm ($(du -sh .deps/rmm | cut -f1))"
  else
    rm -rf .deps/wheels
    echo "librmm-cu13 / rapids-logger wheels not downloaded: the RMM peer will be skipped" >&2
  fi
fi
# egglog itself for the eqsat benchmark's peer (the GPU machine's Python is 3.12): only the
# compiled module of the cp312 wheel (`bindings`, all the benchmark calls), stripped of its
# symbols (219 MB -> 11 MB). Imported as a top-level module: `import bindings` with
# .deps/egglog-bindings on sys.path. Skip with VYRE_SKIP_EGGLOG=1.
if [ "${VYRE_SKIP_EGGLOG:-0}" != 1 ]; then
  if (mkdir -p .deps/wheels && cd .deps/wheels &&
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
      --platform manylinux_2_17_x86_64 --python-version 3.12 "egglog==${VYRE_EGGLOG_VERSION:-13.2.0}"); then
    mkdir -p .deps/egglog-bindings
    python3 - .deps/wheels/egglog-*.whl .deps/egglog-bindings <<'PY'
import sys, zipfile
wheel, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.startswith("egglog/bindings.") and n.endswith(".so"))
    open(f"{out}/{name.split('/')[-1]}", "wb").write(z.read(name))
PY
    strip --strip-unneeded .deps/egglog-bindings/*.so
    rm -rf .deps/wheels
    echo "prepared .deps/egglog-bindings ($(du -sh .deps/egglog-bindings | cut -f1))"
  else
    rm -rf .deps/wheels
    echo "egglog wheel not downloaded: the eqsat benchmark's egglog peer will be skipped" >&2
  fi
fi
echo "prepared .deps/root ($(du -sh .deps/root | cut -f1))"
