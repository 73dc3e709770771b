// SPDX-License-Identifier: Apache-2.0
//! @file
//! The caching pool's free blocks of one stream: a LIFO list per size class under a spin lock,
//! and the fence that lets other streams take them.
//!
//! Reuse is safe by stream order: a block freed on stream `s` may go to the next allocation on
//! `s` at once. Another stream takes it only once an event recorded on `s` after the free has
//! completed. That event is recorded by the next free on `s` after another stream asked for one
//! (nothing is paid while no stream is short), and never while `s` is being captured. Nothing
//! here queries a stream, which would invalidate a capture running in another thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/runtime/detail/pool_blocks.hpp"
#include "vyre/runtime/detail/spin_lock.hpp"

namespace vyre::detail {

//! `free[c][0, fenced[c])` were freed before the last record of `fence`, so other streams may
//! take them once it has completed.
struct alignas(64) stream_free_lists {
  using lists = std::array<std::vector<pool_block*>, pool_class_count>;
  enum class push_result { cached, over_budget, no_memory };

  explicit stream_free_lists(cudaStream_t s) noexcept : stream(s) {}
  stream_free_lists(const stream_free_lists&) = delete;
  stream_free_lists& operator=(const stream_free_lists&) = delete;
  ~stream_free_lists() {
    if (fence != nullptr) (void)cudaEventDestroy(fence);
  }

  //! The stream's own allocation: the newest free block of the class, or null.
  pool_block* pop(std::size_t held) noexcept {
    const std::size_t c = pool_class_index(held);
    std::lock_guard guard(lock);
    auto& list = free[c];
    if (list.empty()) return nullptr;
    pool_block* b = list.back();
    list.pop_back();
    fenced[c] = (std::min)(fenced[c], list.size());
    forget(held);
    b->live.store(true, std::memory_order_relaxed);
    return b;
  }

  //! Another stream's allocation: the newest block of the class freed before a fence that has
  //! completed, or null. With unfenced blocks of the class, asks for a fence at the next free.
  pool_block* pop_fenced(std::size_t held) noexcept {
    const std::size_t c = pool_class_index(held);
    std::lock_guard guard(lock);
    auto& list = free[c];
    if (fenced[c] > 0 && fence_completed()) {
      // Take the newest fenced block; the newest unfenced one fills its slot.
      const std::size_t slot = fenced[c] - 1;
      pool_block* taken = list[slot];
      list[slot] = list.back();
      list.pop_back();
      fenced[c] = slot;
      forget(held);
      taken->live.store(true, std::memory_order_relaxed);
      return taken;
    }
    if (list.size() > fenced[c]) fence_wanted.store(true, std::memory_order_relaxed);
    return nullptr;
  }

  //! Caches `b` (free, on no list, in no thread cache) when it fits the budget, after the
  //! budget grew by `added_budget` (a share of the cap the caller took). `may_fence` when the
  //! calling thread may use the stream (it freed on it): a wanted fence is recorded then.
  push_result push(pool_block* b, std::size_t added_budget, bool may_fence) noexcept {
    const std::size_t held = b->held;
    std::lock_guard guard(lock);
    budget += added_budget;
    if (cached_bytes + held > budget) return push_result::over_budget;
    auto& list = free[pool_class_index(held)];
    if (list.size() == list.capacity()) {
      try {
        list.reserve(list.size() < 4 ? 4 : list.size() * 2);
      } catch (...) {
        return push_result::no_memory;
      }
    }
    list.push_back(b);  // never allocates: capacity checked above
    cached_bytes += held;
    cached_blocks.store(cached_blocks.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
    if (may_fence && fence_wanted.load(std::memory_order_relaxed)) record_fence();
    return push_result::cached;
  }

  //! Empties every list into `taken` (swapped, so nothing allocates under the lock) and gives
  //! up the whole budget. @returns the budget given up.
  std::size_t take_all(lists& taken) noexcept {
    std::lock_guard guard(lock);
    taken.swap(free);
    fenced.fill(0);
    cached_bytes = 0;
    cached_blocks.store(0, std::memory_order_relaxed);
    return std::exchange(budget, 0);
  }

  //! Gives up the budget beyond the bytes cached. @returns the bytes given up.
  std::size_t trim_budget() noexcept {
    std::lock_guard guard(lock);
    return std::exchange(budget, cached_bytes) - cached_bytes;
  }

  spin_lock lock;
  const cudaStream_t stream;
  std::size_t cached_bytes = 0;
  std::atomic<std::size_t> cached_blocks{0};  // written under the lock, read by observers
  std::size_t budget = 0;                     // this stream's share of the retained cap
  std::atomic<bool> fence_wanted{false};      // another stream is short of blocks
  cudaEvent_t fence = nullptr;
  lists free{};
  std::array<std::size_t, pool_class_count> fenced{};

 private:
  void forget(std::size_t held) noexcept {
    cached_bytes -= held;
    cached_blocks.store(cached_blocks.load(std::memory_order_relaxed) - 1,
                        std::memory_order_relaxed);
  }

  bool fence_completed() noexcept {
    if (fence == nullptr) return false;
    const cudaError_t status = cudaEventQuery(fence);
    if (status == cudaSuccess) return true;
    (void)cudaGetLastError();  // cudaErrorNotReady is not an error worth keeping
    return false;
  }

  // Records the fence on the stream (never on one being captured: the record would become part
  // of the capture) and marks every block on the lists as covered by it. @pre `lock` is held.
  void record_fence() noexcept {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      return;
    }
    if (fence == nullptr &&
        cudaEventCreateWithFlags(&fence, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      fence = nullptr;
      return;
    }
    if (cudaEventRecord(fence, stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    for (std::size_t c = 0; c < pool_class_count; ++c) fenced[c] = free[c].size();
    fence_wanted.store(false, std::memory_order_relaxed);
  }
};

}  // namespace vyre::detail
