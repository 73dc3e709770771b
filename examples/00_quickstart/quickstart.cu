// SPDX-License-Identifier: Apache-2.0
// Quickstart: vyre's error policies and checked sizes around a first kernel.
//
// 1. Choose policies at compile time (here: errors come back as cuda::std::expected).
// 2. Compute buffer sizes with checked arithmetic: overflow is an error, never a wrap-around.
// 3. Check every CUDA call; a failure carries the call, the status and a fix.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/vyre.cuh>

using app_policies = vyre::policies<vyre::alloc::direct, vyre::staging::little_endian,
                                    vyre::on_error::return_expected>;

VYRE_KERNEL void square(const std::uint32_t* in, std::uint32_t* out, std::uint32_t count) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = in[i] * in[i];
}

// Internals return vyre::expected and propagate with VYRE_TRY; the policy applies at the end.
static vyre::expected<std::uint64_t> run(std::uint32_t count) {
  VYRE_TRY_ASSIGN(const std::uint64_t bytes, vyre::words_to_bytes(count, "quickstart buffer"));
  std::vector<std::uint32_t> host(count);
  for (std::uint32_t i = 0; i < count; ++i) host[i] = i;

  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;
  VYRE_CUDA_TRY(cudaMalloc(&in, bytes), "quickstart: cudaMalloc input");
  if (auto status = cudaMalloc(&out, bytes); status != cudaSuccess) {
    cudaFree(in);
    return vyre::fail(vyre::cuda_error(status, "quickstart: cudaMalloc output"));
  }
  auto result = [&]() -> vyre::expected<std::uint64_t> {
    VYRE_CUDA_TRY(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice), "quickstart: upload");
    square<<<(count + 255) / 256, 256>>>(in, out, count);
    VYRE_CUDA_TRY(cudaGetLastError(), "quickstart: launch square");
    VYRE_CUDA_TRY(cudaMemcpy(host.data(), out, bytes, cudaMemcpyDeviceToHost),
                  "quickstart: download");
    std::uint64_t sum = 0;
    for (std::uint32_t value : host) sum += value;
    return sum;
  }();
  cudaFree(out);
  cudaFree(in);
  return result;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "quickstart: no CUDA device here; nothing to run on the GPU.\n");
    return 0;
  }
  const app_policies::result<std::uint64_t> sum = vyre::apply_error_policy<app_policies::error_policy>(run(1000));
  if (!sum) {
    std::fprintf(stderr, "quickstart: %s\n", sum.error().message().c_str());
    return 1;
  }
  std::printf("sum of squares 0..999 computed on the GPU: %llu\n",
              static_cast<unsigned long long>(*sum));
  return *sum == 332833500ull ? 0 : 1;
}
