// SPDX-License-Identifier: Apache-2.0
// Main of every GPU test executable: without a usable CUDA device it reports SKIPPED through
// the exit code CTest is told about, so a machine without a GPU never counts these as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include <cuda_runtime_api.h>

int main(int argc, char* argv[]) {
  int device_count = 0;
  const cudaError_t status = cudaGetDeviceCount(&device_count);
  if (status != cudaSuccess || device_count == 0) {
    std::printf("SKIPPED: no usable CUDA device (%s); GPU tests did not run.\n",
                status != cudaSuccess ? cudaGetErrorName(status) : "device count is 0");
    return VYRE_TEST_SKIP_CODE;
  }
  return Catch::Session().run(argc, argv);
}
