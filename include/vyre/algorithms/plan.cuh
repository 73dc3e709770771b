// SPDX-License-Identifier: Apache-2.0
//! @file
//! The plans for repeated congruence closure and extraction, and the host/device dispatch of
//! their `run_host`: `congruence_plan` (`vyre/algorithms/congruence_plan.cuh`), `extract_plan`
//! (`vyre/algorithms/extract_plan.cuh`), `dispatch_options` (`vyre/algorithms/dispatch.hpp`).
//!
//! Small e-graphs are latency bound: a one-shot `congruence` / `extract` call spends its time
//! in allocations, CUB scratch queries, launches and synchronisations, not in the kernels. A
//! plan pays those once (buffers for a capacity, one captured graph per row bucket) and
//! replays; the kernels are the same as the one-shot calls'.
//!
//!     auto closure = vyre::algorithms::make_congruence_plan(gpu, stream, {.rows = 1 << 16});
//!     auto best = vyre::algorithms::make_extract_plan(gpu, stream);
//!     for (...) {
//!       auto merged = closure.run(image.columns());        // resident device image: on the device
//!       auto cheapest = best.run(merged.rebuilt, costs, roots);
//!       auto on_host = closure.run_host(host_image);   // host image: the CPU reference below
//!     }                                                // the crossover, else the device
//!
//! Dispatch (`run_host`): a host image below the crossover row count
//! (`congruence_host_below_rows`, `extract_host_below_rows`, measured by bench_algorithms) runs
//! the CPU reference, since no graph launch plus transfers beats the CPU on a few hundred rows;
//! above it, the image is uploaded and the plan replays. Both sides return the same host result
//! (`congruence_result` / `extraction_result`).
#pragma once

#include "vyre/algorithms/congruence_plan.cuh"
#include "vyre/algorithms/dispatch.hpp"
#include "vyre/algorithms/extract_plan.cuh"
#include "vyre/algorithms/plan_capacity.hpp"
