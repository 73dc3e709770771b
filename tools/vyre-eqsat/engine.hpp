// SPDX-License-Identifier: Apache-2.0
//! @file
//! Where vyre-eqsat's engine runs: the CPU engine is host code (`main.cpp`), the GPU engine
//! the tool's one nvcc translation unit (`engine_gpu.cu`).
#pragma once

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

}  // namespace vyre_tool
