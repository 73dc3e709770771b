// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre::eqsat with the GPU engine (nvcc): everything of `vyre/eqsat.hpp` plus
//! - eqsat/gpu_offload.cuh: `gpu_offload<Backend>`, the GPU engine as a `session`'s iteration
//!   offload (every iteration it can run, or those past a crossover: `vyre::device_choice`)
//! - eqsat/gpu_engine.cuh: `gpu_engine<Backend>`, iterations of the relational core on the
//!   device, uploaded from and downloaded into a `database`
//! - eqsat/device/: the engine's pieces, public for an engine author's own kernels and streams
//!   (namespace `vyre::eqsat::device`): `plan.hpp` (rules lowered to device plans,
//!   `plan_rule`), `table.cuh` (a table's device view), `ematch.cuh` (plans flattened, the
//!   level-by-level `join_search`, column and pair indexes), `union_find.cuh` (lock-free,
//!   smallest id wins), `rebuild.cuh` (canonicalize, sort rows, unite congruent rows, drop
//!   duplicates), `hashcons.cuh` (device lookup-or-insert of rows: a standalone piece for an
//!   engine that inserts as it applies; vyre's GPU engine appends and dedupes by sorting in
//!   its rebuild instead)
#pragma once

#include "vyre/eqsat.hpp"
#include "vyre/eqsat/device/ematch.cuh"
#include "vyre/eqsat/device/hashcons.cuh"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/eqsat/gpu_engine.cuh"
#include "vyre/eqsat/gpu_offload.cuh"
