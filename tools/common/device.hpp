// SPDX-License-Identifier: Apache-2.0
//! @file
//! Whether the tools' `--device auto` finds a GPU. Host code: the CUDA runtime's C API only.
#pragma once

#include <cuda_runtime_api.h>

namespace vyre_tool {

//! Whether a usable CUDA device is present (false without a driver too).
inline bool gpu_present() noexcept {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

}  // namespace vyre_tool
