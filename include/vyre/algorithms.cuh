// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's e-graph algorithms on the device: `build` (raw rows -> packed image), `congruence`
//! (the GPU rebuild) and `extract` (bottom-up tree cost), their plans for repeated calls, plus
//! everything in `vyre/algorithms.hpp` (row tables, CPU references, the synthetic generator).
//!
//!     auto gpu = vyre::backend<>::acquire(0);
//!     // rows: a raw_rows_ref of device pointers (e-class, op, children length, children)
//!     auto image = vyre::algorithms::build(gpu, rows, stream);              // packed image
//!     // repeated builds: vyre::algorithms::build_workspace ws(gpu, stream);
//!     //                  build(gpu, rows, ws);
//!     auto closure = vyre::algorithms::congruence(gpu, image.columns(), stream); // GPU rebuild
//!     auto best = vyre::algorithms::extract(gpu, closure.rebuilt.columns(), costs, roots, stream);
//!
//! Every call takes the backend: device memory comes from its allocation policy (so its
//! resident budget, telemetry and `vyre::testing::allocation_faults()` see it), pinned staging,
//! streams and events from its pools, and results follow its error policy (throw
//! `vyre::error_exception`, or return `cuda::std::expected`). Engines that run congruence or
//! extraction repeatedly use `congruence_plan` / `extract_plan` (allocate once, capture once,
//! one graph replay per call; `run_host` dispatches host-side e-graphs to the CPU reference
//! below a measured crossover); the one-shot calls enqueue the same kernels directly.
#pragma once

#include "vyre/algorithms.hpp"
#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/congruence.cuh"
#include "vyre/algorithms/dag_extract.cuh"
#include "vyre/algorithms/extract.cuh"
#include "vyre/algorithms/plan.cuh"
