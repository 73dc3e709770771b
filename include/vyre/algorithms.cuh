// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's e-graph algorithms on the device: `build` (raw rows -> packed image), `congruence`
//! (the GPU rebuild) and `extract` (bottom-up tree cost), plus everything in
//! `vyre/algorithms.hpp` (row tables, CPU references, the synthetic generator).
//!
//!     // rows: a raw_rows_ref of device pointers (e-class, op, children length, children)
//!     auto image = vyre::algorithms::build(rows, stream);              // packed image
//!     // repeated builds: vyre::algorithms::build_workspace ws(stream); build(rows, ws);
//!     auto closure = vyre::algorithms::congruence(image->ref(), stream); // GPU rebuild
//!     auto best = vyre::algorithms::extract(closure->rebuilt.ref(), costs, roots, stream);
//!
//! Every call returns `vyre::expected`; device memory is stream-ordered and RAII-owned.
//! Engines that run congruence or extraction repeatedly use `congruence_plan` / `extract_plan`
//! (allocate once, capture once, one graph replay per call; `run_host` dispatches host-side
//! e-graphs to the CPU reference below a measured crossover).
#pragma once

#include "vyre/algorithms.hpp"
#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/congruence.cuh"
#include "vyre/algorithms/extract.cuh"
#include "vyre/algorithms/plan.cuh"
