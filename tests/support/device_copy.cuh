// SPDX-License-Identifier: Apache-2.0
// Test support: `upload(memory, host, stream)`, a `vyre::device_array<T>` holding a copy of a
// host vector (allocated from `memory`), and `download(device, count, stream)`, `count` T read
// back after the stream's work; a failed call fails the test.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <catch2/catch.hpp>

#include "vyre/runtime/device_array.hpp"
#include "vyre/runtime/memory.hpp"

namespace vyre_test {

template <class T>
vyre::device_array<T> upload(vyre::device_resource_ref memory, const std::vector<T>& host,
                             cudaStream_t stream) {
  auto buffer = vyre::device_array<T>::allocate(memory, host.size(), stream, "test upload");
  REQUIRE(buffer.has_value());
  if (!host.empty())
    REQUIRE(cudaMemcpyAsync(buffer->get(), host.data(), host.size() * sizeof(T),
                            cudaMemcpyHostToDevice, stream) == cudaSuccess);
  return std::move(*buffer);
}

template <class T>
std::vector<T> download(const T* device, std::size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  if (count != 0)
    REQUIRE(cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost,
                            stream) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  return host;
}

}  // namespace vyre_test
