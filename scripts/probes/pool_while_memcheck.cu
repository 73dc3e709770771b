// SPDX-License-Identifier: Apache-2.0
// Reproducer kept for the record (see docs/sanitizers.md): compute-sanitizer memcheck on
// memory from a stream-ordered pool that keeps what is freed (release threshold at the max, as
// vyre's alloc::stream_ordered with a retained cap), read inside a conditional WHILE body, with
// no vyre code. Each call, as the congruence's conditional-graph driver does: a new
// non-blocking stream; `in` allocated from the pool on it and written by a kernel; a WHILE
// graph (captured on a second stream) whose body reads `in`; launched on the first stream,
// synchronised, the memory freed on that stream, the stream destroyed. The next call's
// allocation reuses the freed memory. Build and run on a GPU machine:
//   nvcc -std=c++20 -arch=sm_90 -o probe pool_while_memcheck.cu
//   compute-sanitizer --tool memcheck ./probe while 40   # body in a WHILE graph
//   compute-sanitizer --tool memcheck ./probe direct 40  # the same kernels on the stream
//   compute-sanitizer --tool memcheck ./probe ksort 40   # WHILE body: kernel, CUB key sort
// (ksort is a congruence round's shape: a kernel writes keys, CUB sorts them, pool scratch.)
// argv[2]: calls (default 40); sizes grow with the call so the pool both reuses and grows.
// Prints "ok" when every result is right.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <cub/device/device_radix_sort.cuh>

#include "raw_cuda.cuh"

__global__ void fill(unsigned* in, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    in[i] = i % 7u;
}
__global__ void gather(const unsigned* in, unsigned* out, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] += in[i];
}
__global__ void count_round(cudaGraphConditionalHandle handle, unsigned* rounds, unsigned limit) {
  if (++*rounds >= limit) cudaGraphSetConditional(handle, 0);
}

int main(int argc, char** argv) {
  const bool with_sort = argc > 1 && std::strcmp(argv[1], "ksort") == 0;
  const bool in_while = with_sort || (argc > 1 && std::strcmp(argv[1], "while") == 0);
  const int calls = argc > 2 ? std::atoi(argv[2]) : 40;
  constexpr unsigned round_count = 3;
  cudaMemPool_t pool;
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  CHECK(cudaMemPoolCreate(&pool, &props));
  std::uint64_t keep = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  cudaStream_t capture;
  CHECK(cudaStreamCreateWithFlags(&capture, cudaStreamNonBlocking));
  int wrong = 0;
  for (int call = 0; call < calls; ++call) {
    const unsigned n = 30000u + 40000u * static_cast<unsigned>(call % 8);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *in = nullptr, *out = nullptr, *rounds = nullptr, *sorted = nullptr;
    void* scratch = nullptr;
    std::size_t scratch_bytes = 0;
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&rounds), 4, pool, s));
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&in), n * 4u, pool, s));
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&out), n * 4u, pool, s));
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&sorted), n * 4u, pool, s));
    CHECK(cub::DeviceRadixSort::SortKeys(nullptr, scratch_bytes, out, sorted, static_cast<int>(n)));
    CHECK(cudaMallocFromPoolAsync(&scratch, scratch_bytes, pool, s));
    fill<<<264, 256, 0, s>>>(in, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemsetAsync(out, 0, n * 4u, s));
    CHECK(cudaMemsetAsync(rounds, 0, 4, s));
    if (in_while) {
      cudaGraphExec_t exec;
      if (make_while_graph(capture, &exec, [&](cudaGraphConditionalHandle handle) -> cudaError_t {
            gather<<<264, 256, 0, capture>>>(in, out, n);
            if (with_sort) {
              const cudaError_t e = cub::DeviceRadixSort::SortKeys(
                  scratch, scratch_bytes, out, sorted, static_cast<int>(n), 0, 32, capture);
              if (e != cudaSuccess) return e;
            }
            count_round<<<1, 1, 0, capture>>>(handle, rounds, round_count);
            return cudaGetLastError();
          }) != 0)
        return 1;
      CHECK(cudaGraphLaunch(exec, s));
      CHECK(cudaStreamSynchronize(s));
      CHECK(cudaGraphExecDestroy(exec));
    } else {
      for (unsigned r = 0; r < round_count; ++r) gather<<<264, 256, 0, s>>>(in, out, n);
      CHECK(cudaGetLastError());
    }
    unsigned probe[2] = {};
    CHECK(cudaMemcpyAsync(probe, out + n - 2, 8, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    if (probe[0] != round_count * ((n - 2) % 7u) || probe[1] != round_count * ((n - 1) % 7u))
      ++wrong;
    CHECK(cudaFreeAsync(in, s));
    CHECK(cudaFreeAsync(out, s));
    CHECK(cudaFreeAsync(rounds, s));
    CHECK(cudaFreeAsync(sorted, s));
    CHECK(cudaFreeAsync(scratch, s));
    CHECK(cudaStreamDestroy(s));
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("%s (%s, %d calls, %d wrong)\n", wrong == 0 ? "ok" : "WRONG",
              with_sort  ? "ksort"
              : in_while ? "while"
                         : "direct",
              calls, wrong);
  return wrong == 0 ? 0 : 1;
}
