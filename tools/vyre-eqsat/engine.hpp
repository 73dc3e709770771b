// SPDX-License-Identifier: Apache-2.0
//! @file
//! Where vyre-eqsat's engine runs: the CPU engine is host code (`main.cpp`), the GPU engine and
//! the auto engine (CPU below the crossover, then GPU) the tool's one nvcc translation unit
//! (`engine_gpu.cu`).
#pragma once

#include <cstdint>
#include <string>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/execute.hpp"
#include "vyre/eqsat/program.hpp"

namespace vyre_tool {

//! Runs `prog` on the GPU engine (device 0) into `out` and, when `emit` is not empty, writes
//! the final e-graph there as egraph-serialize JSON. Errors: no device, out of device memory,
//! a CUDA error (`out` then holds what ran before it). `out` is a parameter, not the result:
//! an `expected<execution>` in the nvcc translation unit would get host-device special members.
vyre::expected<void> execute_on_gpu(const vyre::eqsat::program& prog,
                                    const vyre::eqsat::execute_options& options,
                                    const std::string& emit, vyre::eqsat::execution& out);

//! What `--device auto` did besides the execution.
struct auto_report {
  unsigned threads = 0;         //!< the CPU engine's threads
  std::string gpu_unavailable;  //!< why it stayed on the CPU at the crossover (empty: it did not)
  double handoff_seconds = -1;  //!< acquiring the GPU and loading the state (-1: not tried)
};

//! Runs `prog` on `vyre::eqsat::auto_engine` into `out`: the CPU engine (`threads`, 0 = every
//! core) for iterations that start below `crossover` e-nodes, device 0 from the first that does
//! not (no CUDA call before it; without a usable device the run stays on the CPU and `report`
//! says why). `emit` as `execute_on_gpu`. Errors: the GPU engine's, after the handoff.
vyre::expected<void> execute_auto(const vyre::eqsat::program& prog,
                                  const vyre::eqsat::execute_options& options,
                                  std::uint64_t crossover, unsigned threads,
                                  const std::string& emit, vyre::eqsat::execution& out,
                                  auto_report& report);

}  // namespace vyre_tool
