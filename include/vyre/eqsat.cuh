// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre::eqsat with the GPU engine (nvcc): everything of `vyre/eqsat.hpp` plus
//! - eqsat/gpu_engine.cuh: `gpu_engine<Backend>`, the same calls as `cpu_engine` on the device
//! - eqsat/device/: the engine's pieces, public for an engine author's own kernels and streams
//!   (namespace `vyre::eqsat::device`): `table.cuh` (a table's device view), `ematch.cuh`
//!   (query plans flattened, the join-interpreter count and write passes, column indexes),
//!   `union_find.cuh` (lock-free, smallest id wins), `rebuild.cuh` (canonicalize, sort rows,
//!   unite congruent rows, drop duplicates), `hashcons.cuh` (device lookup-or-insert of rows)
//! - eqsat/auto_engine.cuh: `auto_engine<Backend>`, the CPU engine below the measured crossover
//!   and the GPU engine from there (no CUDA context below it)
#pragma once

#include "vyre/eqsat.hpp"
#include "vyre/eqsat/auto_engine.cuh"
#include "vyre/eqsat/device/ematch.cuh"
#include "vyre/eqsat/device/hashcons.cuh"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/eqsat/gpu_engine.cuh"
