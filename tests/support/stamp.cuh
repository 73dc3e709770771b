// SPDX-License-Identifier: Apache-2.0
// Test support: the stamp pattern of the multithreaded allocation stress tests. `stamp` writes
// word i = tag ^ i; `stamp_intact` reads back the first and last word of a stamped array to
// tell whether its memory was handed to anyone else meanwhile. Plain CUDA (no vyre, no Catch2):
// scripts/probes/racecheck_threads.cu includes it too.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace vyre_test {

// Writes word i = tag ^ i over `words` words.
static __global__ void stamp(std::uint32_t* out, std::size_t words, std::uint32_t tag) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = tag ^ static_cast<std::uint32_t>(i);
}

// Whether the `words` (>= 1) words at `data` still hold the stamp of `tag` at both ends, read
// on stream `s`; false also when a CUDA call fails.
inline bool stamp_intact(const std::uint32_t* data, std::size_t words, std::uint32_t tag,
                         cudaStream_t s) {
  std::uint32_t ends[2] = {0, 0};
  if (cudaMemcpyAsync(&ends[0], data, 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaMemcpyAsync(&ends[1], data + words - 1, 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return false;
  return ends[0] == tag && ends[1] == (tag ^ static_cast<std::uint32_t>(words - 1));
}

}  // namespace vyre_test
