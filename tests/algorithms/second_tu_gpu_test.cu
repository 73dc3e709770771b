// SPDX-License-Identifier: Apache-2.0
// A second translation unit that includes the device algorithms and launches them: linking it
// with algorithms_gpu_test.cu proves the header kernels define no duplicate symbols.
#include <catch2/catch.hpp>

#include <vector>

#include "vyre/algorithms.cuh"

TEST_CASE("the algorithms link from a second translation unit", "[gpu][odr]") {
  using namespace vyre::algorithms;
  using policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                  vyre::on_error::return_expected>;
  auto gpu = vyre::backend<policies>::acquire(0);
  REQUIRE(gpu.has_value());
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  {
    const std::vector<std::uint32_t> host{2, 1, 2, 0, 0, 1,
                                          0, 0, 2, 1, 2};  // eclass op lens children
    auto words = vyre::device_array<std::uint32_t>::allocate(gpu->memory_ref(), host.size(), stream,
                                                             "test rows");
    REQUIRE(words.has_value());
    REQUIRE(cudaMemcpyAsync(words->get(), host.data(), host.size() * 4, cudaMemcpyHostToDevice,
                            stream) == cudaSuccess);
    const std::uint32_t* d = words->get();
    auto image = build(*gpu, raw_rows_ref{d, d + 3, d + 6, d + 9, 3, 2}, stream);
    REQUIRE(image.has_value());
    CHECK(image->layout() == image_layout::for_counts(3, 2, 2));
    auto merged = congruence(*gpu, image->columns(), stream);
    REQUIRE(merged.has_value());
    // Rows (2, op 0, []) and (1, op 0, []) share op and (empty) children: congruent, so
    // e-classes 1 and 2 merge, as egg's rebuild would merge them.
    CHECK(merged->merges == 1);
  }
  REQUIRE(cudaStreamDestroy(stream) == cudaSuccess);
}
