// SPDX-License-Identifier: Apache-2.0
//! @file
//! CUDA helpers the device benchmarks share: exit on a failed call with the benchmark's name,
//! the call and CUDA's (or vyre's) message, and the device's name or a clean "nothing
//! measured" when there is no device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include <vyre/core/error.hpp>

namespace vyre_bench {

//! Exits with status 1 when `status` is not cudaSuccess, naming `bench` and `what` failed.
inline void require(const char* bench, cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s failed: %s\n", bench, what, cudaGetErrorString(status));
    std::exit(1);
  }
}

//! The value of `value`; exits with status 1 and its error message when it holds an error.
template <class T>
T require_ok(const char* bench, vyre::expected<T> value, const char* what) {
  if (!value) {
    std::fprintf(stderr, "%s: %s failed: %s\n", bench, what, value.error().message().c_str());
    std::exit(1);
  }
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

//! Device 0's name; std::nullopt, after saying "nothing measured" on stderr, when there is no
//! CUDA device (the benchmark then exits 0).
inline std::optional<std::string> device_name(const char* bench) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "%s: no CUDA device; nothing measured.\n", bench);
    return std::nullopt;
  }
  cudaDeviceProp properties{};
  require(bench, cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties");
  return std::string(properties.name);
}

//! Upload sources and a raw-copy target of `bytes` each: random words (seed 42) in pageable
//! memory, the same words in pinned memory, and a device buffer for the cudaMemcpy baseline.
//! Exits with status 1 when an allocation fails; frees the pinned and device memory.
struct upload_buffers {
  std::vector<std::uint32_t> pageable;
  std::uint32_t* pinned = nullptr;
  void* raw_target = nullptr;

  upload_buffers(const char* bench, std::uint64_t bytes)
      : pageable(static_cast<std::size_t>(bytes / 4)) {
    std::mt19937 rng(42);
    for (auto& word : pageable) word = static_cast<std::uint32_t>(rng());
    require(bench, cudaMallocHost(reinterpret_cast<void**>(&pinned), bytes), "cudaMallocHost");
    std::copy(pageable.begin(), pageable.end(), pinned);
    require(bench, cudaMalloc(&raw_target, bytes), "cudaMalloc");
  }
  ~upload_buffers() {
    (void)cudaFree(raw_target);
    (void)cudaFreeHost(pinned);
  }
  upload_buffers(const upload_buffers&) = delete;
  upload_buffers& operator=(const upload_buffers&) = delete;
};

}  // namespace vyre_bench
