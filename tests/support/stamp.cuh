// SPDX-License-Identifier: Apache-2.0
// Test support: the stamp pattern of the multithreaded allocation stress tests. `stamp` writes
// word i = tag ^ i; `stamp_intact` reads back the first and last word of a stamped array to
// tell whether its memory was handed to anyone else meanwhile; `stamp_tally` counts those
// checks and the failures; `stamp_mailbox` is where the threads hand their buffers to each
// other; `on_threads` runs the threads. Plain CUDA (no vyre, no Catch2):
// scripts/probes/racecheck_threads.cu includes it too.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

namespace vyre_test {

// Writes word i = tag ^ i over `words` words.
static __global__ void stamp(std::uint32_t* out, std::size_t words, std::uint32_t tag) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < words;
       i += std::size_t{gridDim.x} * blockDim.x)
    out[i] = tag ^ static_cast<std::uint32_t>(i);
}

// Whether the `words` (>= 1) words at `data` still hold the stamp of `tag` at both ends, read
// on stream `s`; false also when a CUDA call fails.
inline bool stamp_intact(const std::uint32_t* data, std::size_t words, std::uint32_t tag,
                         cudaStream_t s) {
  std::uint32_t ends[2] = {0, 0};
  if (cudaMemcpyAsync(&ends[0], data, 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaMemcpyAsync(&ends[1], data + words - 1, 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
      cudaStreamSynchronize(s) != cudaSuccess)
    return false;
  return ends[0] == tag && ends[1] == (tag ^ static_cast<std::uint32_t>(words - 1));
}

// What a stress run counts: stamps read back intact, and failures (a CUDA call failed, a stamp
// was overwritten).
struct stamp_tally {
  std::atomic<int> verified{0};
  std::atomic<int> failures{0};

  // Checks the stamp of `tag` over `words` words at `data` on stream `s` (see `stamp_intact`):
  // one more verified, or one more failure.
  void check(const std::uint32_t* data, std::size_t words, std::uint32_t tag, cudaStream_t s) {
    (stamp_intact(data, words, tag, s) ? verified : failures).fetch_add(1);
  }
};

// The shared mailbox of a stress run: each thread posts the buffers it stamped and, once more
// than 8 wait there, takes back a random one to check and free.
template <class Parcel>
struct stamp_mailbox {
  std::mutex mutex;
  std::vector<Parcel> parcels;

  // Posts `parcel`; returns the parcels (none or one) taken out, chosen by `rng`.
  template <class Rng>
  std::vector<Parcel> post(Parcel parcel, Rng& rng) {
    std::vector<Parcel> taken;
    std::lock_guard lock(mutex);
    parcels.push_back(std::move(parcel));
    if (parcels.size() > 8) {
      std::swap(parcels[rng() % parcels.size()], parcels.back());
      taken.push_back(std::move(parcels.back()));
      parcels.pop_back();
    }
    return taken;
  }
};

// Runs `body(t)` for t in [0, threads) on as many host threads and joins them.
template <class Body>
void on_threads(int threads, Body body) {
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(body, t);
  for (auto& w : workers) w.join();
}

}  // namespace vyre_test
