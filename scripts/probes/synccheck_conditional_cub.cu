// SPDX-License-Identifier: Apache-2.0
// Reproducer kept for the record (see docs/sanitizers.md). Build and run on a GPU machine:
//   nvcc -std=c++20 -arch=sm_90 -o probe synccheck_conditional_cub.cu
//   compute-sanitizer --tool synccheck ./probe direct   # 0 errors
//   compute-sanitizer --tool synccheck ./probe while    # barrier errors inside CUB, program
//   correct
// Does synccheck flag CUB's single-tile radix sort by itself, or only inside a conditional
// WHILE graph body? argv[1]: "direct" or "while".
#include <cstdio>
#include <cstring>
#include <cub/cub.cuh>

#include "raw_cuda.cuh"

__global__ void set_done(cudaGraphConditionalHandle handle, int* rounds) {
  if (++*rounds >= 2) cudaGraphSetConditional(handle, 0);
}
int main(int argc, char** argv) {
  const bool in_while = argc > 1 && std::strcmp(argv[1], "while") == 0;
  const int n = 100;
  unsigned *keys, *keys_out, *vals, *vals_out;
  int* rounds;
  void* temp = nullptr;
  size_t bytes = 0;
  CHECK(cudaMalloc(&keys, n * 4));
  CHECK(cudaMalloc(&keys_out, n * 4));
  CHECK(cudaMalloc(&vals, n * 4));
  CHECK(cudaMalloc(&vals_out, n * 4));
  CHECK(cudaMalloc(&rounds, 4));
  unsigned host[n];
  for (int i = 0; i < n; ++i) host[i] = (i * 7919u) % 97u;
  CHECK(cudaMemcpy(keys, host, n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(vals, host, n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(rounds, 0, 4));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, vals, vals_out, n, 0, 7, s));
  CHECK(cudaMalloc(&temp, bytes));
  if (!in_while) {
    CHECK(cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, vals, vals_out, n, 0, 7, s));
  } else {
    cudaGraphExec_t exec;
    if (make_while_graph(s, &exec, [&](cudaGraphConditionalHandle handle) -> cudaError_t {
          const cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, bytes, keys, keys_out, vals,
                                                                vals_out, n, 0, 7, s);
          if (e != cudaSuccess) return e;
          set_done<<<1, 1, 0, s>>>(handle, rounds);
          return cudaGetLastError();
        }) != 0)
      return 1;
    CHECK(cudaGraphLaunch(exec, s));
  }
  CHECK(cudaStreamSynchronize(s));
  std::printf("%s: ok\n", in_while ? "while" : "direct");
  return 0;
}
