// SPDX-License-Identifier: Apache-2.0
//! @file
//! One thread's cache of free blocks for the caching pool, so that a hit costs no atomic
//! read-modify-write and no CUDA call. Only the owner touches the entries while `busy`; other
//! threads reach the cache only to drain it (release, teardown, the owner's exit), through
//! asymmetric fences: the owner pays a compiler barrier, the drainer a process-wide membarrier
//! (see asymmetric_fence.hpp). Host-only.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <mutex>
#include <thread>

#include <cuda_runtime_api.h>

#include "vyre/runtime/detail/asymmetric_fence.hpp"
#include "vyre/runtime/detail/pool_blocks.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre::detail {

struct alignas(64) thread_block_cache {
  //! Blocks one cache keeps.
  static constexpr std::size_t capacity = 8;
  struct entry {
    const void* key;  // the stream's key in the pool
    cudaStream_t stream;
    pool_block* b;
  };
  using entries_type = std::array<entry, capacity>;

  //! The owner's `key`d block of `held` bytes, marked live; null when there is none or the cache
  //! is being drained.
  pool_block* take(const void* key, std::size_t held) noexcept {
    if (!enter()) return nullptr;
    pool_block* found = nullptr;
    const std::size_t n = count.load(std::memory_order_relaxed);
    for (std::size_t i = n; i-- > 0;) {
      entry& e = entries[i];
      if (e.key == key && e.b->held == held) {
        found = e.b;
        e = entries[n - 1];
        count.store(n - 1, std::memory_order_relaxed);
        bytes.store(bytes.load(std::memory_order_relaxed) - held, std::memory_order_relaxed);
        found->live.store(true, std::memory_order_relaxed);
        break;
      }
    }
    leave();
    return found;
  }

  //! The owner keeps `b` (freed on `stream`, whose key is `key`), marked free, when there is
  //! room within `limit_bytes` and, past the cache's share of the cap, the ledger gives more.
  //! False otherwise (the caller caches it elsewhere).
  bool put(pool_block* b, const void* key, cudaStream_t stream, std::size_t limit_bytes,
           retained_cap_ledger& ledger) noexcept {
    const std::size_t held = b->held;
    if (!enter()) return false;
    const std::size_t had = bytes.load(std::memory_order_relaxed);
    const std::size_t n = count.load(std::memory_order_relaxed);
    bool room = n < capacity && had + held <= limit_bytes;
    if (room && had + held > budget.load(std::memory_order_relaxed)) {
      // A new high-water mark: a share of the cap (the only read-modify-write on this path).
      room = ledger.take(held);
      if (room)
        budget.store(budget.load(std::memory_order_relaxed) + held, std::memory_order_relaxed);
    }
    if (room) {
      b->live.store(false, std::memory_order_relaxed);
      entries[n] = {key, stream, b};
      count.store(n + 1, std::memory_order_relaxed);
      bytes.store(had + held, std::memory_order_relaxed);
    }
    leave();
    return room;
  }

  //! The owner moves the entries `pick` chooses into `out`; their share of the cap goes back to
  //! the ledger. @returns how many moved.
  template <class Pick>
  std::size_t take_out(Pick&& pick, entries_type& out, retained_cap_ledger& ledger) noexcept {
    if (!enter()) return 0;
    std::size_t n = 0, moved_bytes = 0, left = count.load(std::memory_order_relaxed);
    for (std::size_t i = left; i-- > 0;)
      if (pick(entries[i])) {
        out[n++] = entries[i];
        moved_bytes += entries[i].b->held;
        entries[i] = entries[--left];
      }
    if (n != 0) {
      count.store(left, std::memory_order_relaxed);
      bytes.store(bytes.load(std::memory_order_relaxed) - moved_bytes, std::memory_order_relaxed);
      const std::size_t share = (std::min)(moved_bytes, budget.load(std::memory_order_relaxed));
      budget.store(budget.load(std::memory_order_relaxed) - share, std::memory_order_relaxed);
      ledger.give(share);
    }
    leave();
    return n;
  }

  //! Runs `f()` with the owner kept out; any thread may drain, the owner included.
  template <class F>
  void drain(F&& f) noexcept {
    std::lock_guard guard(drain_mutex);
    stop.store(true, std::memory_order_relaxed);
    asymmetric_fence::heavy();
    while (busy.load(std::memory_order_acquire)) std::this_thread::yield();
    f();
    stop.store(false, std::memory_order_release);
  }
  //! Under `drain`: moves every entry into `out` and gives the whole share back.
  //! @returns how many moved.
  std::size_t take_all(entries_type& out, retained_cap_ledger& ledger) noexcept {
    const std::size_t n = count.exchange(0, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) out[i] = entries[i];
    bytes.store(0, std::memory_order_relaxed);
    ledger.give(budget.exchange(0, std::memory_order_relaxed));
    return n;
  }
  //! Under `drain`: gives back the share beyond the bytes cached.
  void trim_budget(retained_cap_ledger& ledger) noexcept {
    const std::size_t cached = bytes.load(std::memory_order_relaxed);
    ledger.give(budget.exchange(cached, std::memory_order_relaxed) - cached);
  }
  //! Whether the share exceeds the bytes cached (a racing owner only makes this a missed
  //! chance to trim).
  bool has_idle_budget() const noexcept {
    return budget.load(std::memory_order_relaxed) != bytes.load(std::memory_order_relaxed);
  }

  // Written by the owner (or a drainer), read by observers: relaxed atomics.
  std::atomic<std::size_t> bytes{0};
  std::atomic<std::size_t> count{0};  // entries in use
  std::thread::id owner;  // default id: the thread ended and the cache is free for another
  // The owner's telemetry counters (empty without telemetry), so a hit looks nothing up.
  telemetry_counters::local_counters telemetry;

 private:
  bool enter() noexcept {
    busy.store(true, std::memory_order_relaxed);
    asymmetric_fence::light();
    if (!stop.load(std::memory_order_acquire)) return true;
    busy.store(false, std::memory_order_release);  // being drained: use the shared lists
    return false;
  }
  void leave() noexcept { busy.store(false, std::memory_order_release); }

  std::atomic<bool> busy{false};
  std::atomic<bool> stop{false};
  std::mutex drain_mutex;  // one drainer at a time
  entries_type entries{};
  std::atomic<std::size_t> budget{0};  // this cache's share of the retained cap
};

}  // namespace vyre::detail
