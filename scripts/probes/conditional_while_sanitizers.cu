// SPDX-License-Identifier: Apache-2.0
// Reproducers kept for the record (see docs/sanitizers.md): compute-sanitizer on work inside a
// conditional WHILE graph body, with no vyre code. Build and run on a GPU machine:
//   nvcc -std=c++20 -arch=sm_90 -o probe conditional_while_sanitizers.cu
//   for mode in copy-direct copy-while sort-direct sort-while; do
//     for tool in initcheck racecheck synccheck; do
//       compute-sanitizer --tool $tool ./probe $mode; done; done
//   # memcheck, three processes sharing the GPU (the *-while modes lose their context):
//   for i in 1 2 3; do compute-sanitizer --tool memcheck ./probe copy-while 50 200 & done; wait
// Modes:
//   copy-*: a kernel writes all of `next` (never written before), then a device-to-device
//           cudaMemcpyAsync copies it to `current` (example 02's fixpoint round).
//   sort-*: CUB's radix sort of 100 pairs, then a kernel that reduces in shared memory.
//   ksort-*: as sort-*, but a kernel in the round writes the keys the sort reads (the pattern of
//           the congruence plan's rounds); the keys are never written before.
// *-direct launches the rounds on a stream, *-while runs them in a WHILE body that stops after
// them; argv[2] is the number of rounds (default 2), argv[3] how many times the rounds run
// (default 1; each time starts from the same input). Every mode prints "ok" when the results
// are right.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cub/cub.cuh>

#include "raw_cuda.cuh"

__global__ void write_all(unsigned* next, const unsigned* current, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    next[i] = current[i] + 1;
}
__global__ void block_sum(const unsigned* values, int n, unsigned* out) {
  __shared__ unsigned partial[128];
  unsigned sum = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) sum += values[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = 64; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = partial[0];
}
__global__ void count_round(cudaGraphConditionalHandle handle, int* rounds, int limit) {
  if (++*rounds >= limit) cudaGraphSetConditional(handle, 0);
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "copy-while";
  const int round_count = argc > 2 ? std::atoi(argv[2]) : 2;
  const int launch_count = argc > 3 ? std::atoi(argv[3]) : 1;
  const bool in_while = std::strstr(mode, "while") != nullptr;
  const bool kernel_keys = std::strncmp(mode, "ksort", 5) == 0;
  const bool sort = kernel_keys || std::strncmp(mode, "sort", 4) == 0;
  const int n = sort ? 100 : 1024;
  unsigned *current, *next, *keys_out, *vals_out, *sum;
  int* rounds;
  CHECK(cudaMalloc(&current, n * 4));
  CHECK(cudaMalloc(&next, n * 4));
  CHECK(cudaMalloc(&keys_out, n * 4));
  CHECK(cudaMalloc(&vals_out, n * 4));
  CHECK(cudaMalloc(&sum, 4));
  CHECK(cudaMalloc(&rounds, 4));
  unsigned host[1024];
  for (int i = 0; i < n; ++i) host[i] = (i * 7919u) % 97u;
  unsigned* keys = nullptr;  // ksort-*: written by a kernel in the round
  CHECK(cudaMalloc(&keys, n * 4));
  if (!kernel_keys) CHECK(cudaMemcpy(keys, host, n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(current, host, n * 4, cudaMemcpyHostToDevice));
  // copy-*: `next` is left unwritten here; the round's kernel writes all of it before the copy
  // reads it. (sort-* reads it as the values, so it is uploaded.)
  if (sort) CHECK(cudaMemcpy(next, host, n * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(rounds, 0, 4));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  void* temp = nullptr;
  size_t temp_bytes = 0;
  CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_out, next, vals_out, n, 0, 7,
                                        s));
  CHECK(cudaMalloc(&temp, temp_bytes));

  auto round = [&](cudaStream_t stream) -> cudaError_t {
    if (sort) {
      if (kernel_keys) {
        write_all<<<1, 128, 0, stream>>>(keys, current, n);  // keys[i] = current[i] + 1
        cudaError_t launched = cudaGetLastError();
        if (launched != cudaSuccess) return launched;
      }
      cudaError_t e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_out, next,
                                                      vals_out, n, 0, 7, stream);
      if (e != cudaSuccess) return e;
      block_sum<<<1, 128, 0, stream>>>(keys_out, n, sum);
      return cudaGetLastError();
    }
    write_all<<<4, 256, 0, stream>>>(next, current, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    return cudaMemcpyAsync(current, next, n * 4, cudaMemcpyDeviceToDevice, stream);
  };

  cudaGraphExec_t exec = nullptr;
  if (in_while && make_while_graph(s, &exec, [&](cudaGraphConditionalHandle handle) -> cudaError_t {
                    const cudaError_t e = round(s);
                    if (e != cudaSuccess) return e;
                    count_round<<<1, 1, 0, s>>>(handle, rounds, round_count);
                    return cudaGetLastError();
                  }) != 0)
    return 1;
  for (int launch = 0; launch < launch_count; ++launch) {
    CHECK(cudaMemcpyAsync(current, host, n * 4, cudaMemcpyHostToDevice, s));
    CHECK(cudaMemsetAsync(rounds, 0, 4, s));
    if (in_while) {
      CHECK(cudaGraphLaunch(exec, s));
    } else {
      for (int r = 0; r < round_count; ++r) CHECK(round(s));
    }
    CHECK(cudaStreamSynchronize(s));
  }
  unsigned result[1024];
  bool right = true;
  if (sort) {
    unsigned total = 0, expected = 0;
    CHECK(cudaMemcpy(&total, sum, 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) expected += host[i] + (kernel_keys ? 1u : 0u);
    right = total == expected;
  } else {
    CHECK(cudaMemcpy(result, current, n * 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i)
      right = right && result[i] == host[i] + static_cast<unsigned>(round_count);
  }
  std::printf("%s: %s\n", mode, right ? "ok" : "WRONG");
  return right ? 0 : 2;
}
