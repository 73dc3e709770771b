// SPDX-License-Identifier: Apache-2.0
// Test support: a device buffer of `count` T (at least one element, so a zero-size buffer still
// has a pointer to hand a kernel), freed on scope exit; a failed cudaMalloc fails the test.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include "vyre/core/cuda_check.hpp"

namespace vyre_test {

template <class T>
struct device_buffer {
  T* ptr = nullptr;
  explicit device_buffer(std::size_t count) {
    REQUIRE(vyre::cuda_check(cudaMalloc(&ptr, (count == 0 ? 1 : count) * sizeof(T)),
                             "test cudaMalloc"));
  }
  ~device_buffer() { (void)cudaFree(ptr); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
};

}  // namespace vyre_test
