// SPDX-License-Identifier: Apache-2.0
// The GPU path of the core: kernels write, the host checks; vyre::error and checked arithmetic
// work in device code exactly as on the host.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <vyre/core.hpp>

#include "device_buffer.cuh"

// Kernels need external linkage for VYRE_KERNEL's hidden visibility: a named namespace.
namespace core_gpu_test {

VYRE_KERNEL void write_indices(std::uint32_t* out, std::uint32_t count) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = i * 3u + 1u;
}

struct device_outcome {
  std::uint32_t sum_ok;
  std::uint32_t sum;
  std::uint32_t overflow_detected;
  vyre::error overflow_error;
};

VYRE_KERNEL void checked_on_device(device_outcome* out) {
  const auto sum = vyre::checked_add<std::uint32_t>(40u, 2u, "device sum");
  const auto overflow = vyre::checked_add<std::uint32_t>(0xFFFFFFFFu, 1u, "device overflow");
  out->sum_ok = sum.has_value() ? 1u : 0u;
  out->sum = sum.has_value() ? *sum : 0u;
  out->overflow_detected = overflow.has_value() ? 0u : 1u;
  if (!overflow.has_value()) out->overflow_error = overflow.error();
}

}  // namespace core_gpu_test

namespace {
using namespace core_gpu_test;

using vyre_test::device_buffer;

}  // namespace

TEST_CASE("a kernel writes and the host reads back what it wrote", "[core][gpu]") {
  constexpr std::uint32_t count = 100'000;
  device_buffer<std::uint32_t> buffer(count);
  REQUIRE(vyre::cuda_check(cudaMemset(buffer.ptr, 0xFF, count * 4), "poison"));
  write_indices<<<(count + 255) / 256, 256>>>(buffer.ptr, count);
  REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch write_indices"));
  std::vector<std::uint32_t> host(count);
  REQUIRE(vyre::cuda_check(cudaMemcpy(host.data(), buffer.ptr, count * 4, cudaMemcpyDeviceToHost),
                           "download"));
  for (std::uint32_t i = 0; i < count; ++i) REQUIRE(host[i] == i * 3u + 1u);
}

TEST_CASE("checked arithmetic and vyre::error work in device code", "[core][gpu]") {
  device_buffer<device_outcome> outcome(1);
  // Poison first: the struct has padding the kernel never writes.
  REQUIRE(vyre::cuda_check(cudaMemset(outcome.ptr, 0xA5, sizeof(device_outcome)), "poison"));
  checked_on_device<<<1, 1>>>(outcome.ptr);
  REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch checked_on_device"));
  device_outcome host{0, 0, 0, vyre::error(vyre::errc::invalid_state, "unset")};
  REQUIRE(vyre::cuda_check(cudaMemcpy(&host, outcome.ptr, sizeof(host), cudaMemcpyDeviceToHost),
                           "download outcome"));
  CHECK(host.sum_ok == 1u);
  CHECK(host.sum == 42u);
  REQUIRE(host.overflow_detected == 1u);
  CHECK(host.overflow_error.code() == vyre::errc::overflow);
  // Names point into device memory (see error.hpp): read the values by position.
  REQUIRE(host.overflow_error.value_count() == 3);
  CHECK(host.overflow_error.value_at(0).value == 0xFFFFFFFFu);
  CHECK(host.overflow_error.value_at(1).value == 1u);
}

TEST_CASE("a failing CUDA call becomes a vyre::error naming the call", "[core][gpu]") {
  void* impossible = nullptr;
  const auto result =
      vyre::cuda_check(cudaMalloc(&impossible, std::size_t{1} << 62), "test: allocate 4 EiB");
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::out_of_memory);
  CHECK(vyre::cuda_check(cudaGetLastError(), "sticky state cleared").has_value());
}

namespace core_gpu_test {
// narrow<To>(unsigned) must compile warning-free under nvcc (-Werror=all-warnings): no
// pointless "unsigned < 0" comparison.
VYRE_KERNEL void narrow_on_device(std::uint64_t value, std::uint32_t* out) {
  const auto narrowed = vyre::narrow<std::uint32_t>(value, "device narrow");
  *out = narrowed.has_value() ? *narrowed : 0xFFFFFFFFu;
}
}  // namespace core_gpu_test

TEST_CASE("narrow works in device code for unsigned sources", "[core][gpu]") {
  device_buffer<std::uint32_t> out(1);
  for (const std::uint64_t value : {std::uint64_t{7}, std::uint64_t{1} << 40}) {
    core_gpu_test::narrow_on_device<<<1, 1>>>(value, out.ptr);
    REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch narrow_on_device"));
    std::uint32_t host = 0;
    REQUIRE(vyre::cuda_check(cudaMemcpy(&host, out.ptr, 4, cudaMemcpyDeviceToHost), "download"));
    CHECK(host == (value == 7 ? 7u : 0xFFFFFFFFu));
  }
}
