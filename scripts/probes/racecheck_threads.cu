// SPDX-License-Identifier: Apache-2.0
// Reproducer kept for the record (see docs/sanitizers.md): compute-sanitizer racecheck on
// several host threads that launch kernels on their own streams and hand buffers to each
// other (the pattern of the runtime's stress test), with no vyre code. Build and run on a GPU
// machine:
//   nvcc -std=c++20 -arch=sm_90 -o probe racecheck_threads.cu
//   compute-sanitizer --tool racecheck ./probe 16 120 async
// argv: threads (default 16), iterations per thread (default 120), allocation: "async"
// (cudaMallocAsync/cudaFreeAsync on the thread's stream) or "direct" (cudaMalloc/cudaFree).
// Each iteration allocates up to 256 KiB, stamps it with a kernel, puts it in a shared mailbox
// and, past 8 parcels, takes a random one, waits for its stream, reads its two ends back on its
// own stream and frees it. Prints "ok" when every stamp read back is right.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "../../tests/support/stamp.cuh"

using vyre_test::stamp;

struct parcel {
  unsigned* data;
  size_t words;
  unsigned tag;
  cudaStream_t stream;
};

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 16;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 120;
  const bool async = !(argc > 3 && std::strcmp(argv[3], "direct") == 0);
  vyre_test::stamp_mailbox<parcel> mailbox;
  vyre_test::stamp_tally tally;
  std::atomic<int>& failures = tally.failures;
  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams)
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;

  const auto release = [&](const parcel& p, cudaStream_t on) {
    if ((async ? cudaFreeAsync(p.data, on) : cudaFree(p.data)) != cudaSuccess)
      failures.fetch_add(1);
  };
  const auto verify = [&](const parcel& p, cudaStream_t on) {
    if (cudaStreamSynchronize(p.stream) == cudaSuccess)
      tally.check(p.data, p.words, p.tag, on);
    else
      failures.fetch_add(1);
  };

  vyre_test::on_threads(threads, [&](int t) {
    const cudaStream_t stream = streams[t];
    std::mt19937 rng(static_cast<unsigned>(t * 7919 + 1));
    for (int i = 0; i < iterations; ++i) {
      const size_t words = 1 + rng() % (1u << 16);
      unsigned* data = nullptr;
      if ((async ? cudaMallocAsync(reinterpret_cast<void**>(&data), words * 4, stream)
                 : cudaMalloc(reinterpret_cast<void**>(&data), words * 4)) != cudaSuccess) {
        failures.fetch_add(1);
        continue;
      }
      const unsigned tag = static_cast<unsigned>(t) << 24 | static_cast<unsigned>(i);
      stamp<<<64, 256, 0, stream>>>(data, words, tag);
      if (cudaGetLastError() != cudaSuccess) failures.fetch_add(1);
      for (const parcel& p : mailbox.post({data, words, tag, stream}, rng)) {
        verify(p, stream);
        release(p, p.stream);
      }
    }
  });
  for (const parcel& p : mailbox.parcels) {
    verify(p, p.stream);
    release(p, p.stream);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) failures.fetch_add(1);
  for (auto& s : streams) cudaStreamDestroy(s);
  const bool ok = failures.load() == 0 && tally.verified.load() == threads * iterations;
  std::printf("%s: %d threads x %d iterations (%s), %d verified, %d failures\n",
              ok ? "ok" : "FAILED", threads, iterations, async ? "async" : "direct",
              tally.verified.load(), failures.load());
  return ok ? 0 : 1;
}
