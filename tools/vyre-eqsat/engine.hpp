// SPDX-License-Identifier: Apache-2.0
//! @file
//! Where vyre-eqsat's iterations run: the session and its CPU engine are host code
//! (`main.cpp`); the GPU engine, as the session's iteration offload, is the tool's one nvcc
//! translation unit (`engine_gpu.cu`). Host-only: nothing here needs CUDA headers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "vyre/core/device_choice.hpp"
#include "vyre/eqsat/session.hpp"

namespace vyre_tool {

//! The GPU engine (device 0) as a session's iteration offload. `device_choice::automatic`:
//! only iterations that start on at least `crossover` rows go to the device, and without a
//! usable device the run stays on the CPU (`gpu_unavailable` says why); `gpu`: every iteration
//! the GPU engine can run goes there, and a missing device is the iteration's error. No CUDA
//! call is made before the first iteration it accepts.
std::shared_ptr<vyre::eqsat::iteration_offload> make_gpu_offload(vyre::device_choice where,
                                                                 std::uint64_t crossover);

//! Why an offload of `make_gpu_offload` stayed on the CPU for good (no usable device); empty
//! when it did not.
std::string gpu_unavailable(const vyre::eqsat::iteration_offload& offload);

}  // namespace vyre_tool
