// SPDX-License-Identifier: Apache-2.0
// cuda_check needs no device: the status values are handed in directly.
#include <catch2/catch.hpp>

#include <string>

#include <vyre/core/cuda_check.hpp>

namespace {
vyre::expected<int> guarded(cudaError_t status) {
  VYRE_CUDA_TRY(status, "guarded: cudaMemcpy of the image");
  return 1;
}
}  // namespace

TEST_CASE("cuda_check passes success through", "[core][cuda]") {
  CHECK(vyre::cuda_check(cudaSuccess, "nothing").has_value());
  CHECK(guarded(cudaSuccess).value() == 1);
}

TEST_CASE("cuda_check names the call and the CUDA status", "[core][cuda]") {
  const auto result = vyre::cuda_check(cudaErrorInvalidValue, "backend::upload: cudaMemcpyAsync");
  REQUIRE_FALSE(result.has_value());
  const auto& err = result.error();
  CHECK(err.code() == vyre::errc::cuda_runtime);
  CHECK(err.cuda_source() == vyre::status_source::cuda_runtime);
  CHECK(err.cuda_status() == static_cast<int>(cudaErrorInvalidValue));
  CHECK(std::string(err.cuda_status_name()) == "cudaErrorInvalidValue");
  CHECK(err.message() ==
        "backend::upload: cudaMemcpyAsync [CUDA runtime: cudaErrorInvalidValue (1)].");
}

TEST_CASE("an allocation failure is classified as out_of_memory", "[core][cuda]") {
  const auto result = guarded(cudaErrorMemoryAllocation);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::out_of_memory);
}
