// SPDX-License-Identifier: Apache-2.0
//! @file
//! The RMM peer of the caching-pool benchmark. Its definition (rmm_peer.cu) is compiled
//! against RMM's headers and the copy of CCCL that RMM ships, apart from vyre's translation
//! unit; this header names neither, only standard C++ and the CUDA runtime API.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace runtime_bench {

//! An allocate + deallocate of `bytes` on an `rmm::mr::pool_memory_resource` over
//! `rmm::mr::cuda_memory_resource`, thread `t` on `streams[t]`, for `time_per_op`. The pool
//! lives as long as the returned function. Empty, with `why` set, when RMM could not create it.
std::function<void(int)> make_rmm_pool_hit(std::size_t bytes,
                                           const std::vector<cudaStream_t>& streams,
                                           std::string& why);

//! RMM's version, for example "26.10.0".
std::string rmm_version();

}  // namespace runtime_bench
