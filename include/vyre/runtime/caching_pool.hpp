// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::alloc::caching_pool`: device blocks in power-of-two size classes (256 B upwards),
//! cached per stream. Include `vyre/runtime/memory.hpp`.
//!
//! Three layers, each in a file of its own under `runtime/detail/`:
//! - **thread caches** (`thread_block_cache.hpp`): each thread keeps its last few freed blocks
//!   (up to `thread_cache_blocks`, of at most `thread_cache_max_block` bytes), tagged with the
//!   stream they were freed on; the next allocation of that class on that stream pops one with
//!   no atomic read-modify-write and no CUDA call.
//! - **stream free lists** (`stream_free_lists.hpp`): behind the thread caches, each stream's
//!   free blocks; other streams take them only behind a completed fence.
//! - **block records and the cap** (`pool_blocks.hpp`): one record per device block, found by
//!   a lock-free pointer table (`block_index.hpp`); at most `retained_cap` free bytes are kept,
//!   and lists and caches each hold a share of that cap, taken when they grow and given back
//!   when the pool runs short, so a free only touches shared state at a new high-water mark.
//!
//! This class routes between them and the device. Telemetry is reported, not kept: the pool
//! calls the `telemetry_counters` it was given at the events only it sees (a hit, a miss, a
//! cudaMalloc, a cudaFree); a hit counts through the thread's own slot, found once per thread.
//!
//! Every free is validated against the pointer table: a foreign pointer, or one freed twice, is
//! an error. (Two threads freeing the same pointer at the same moment is a race in the caller
//! that is not guaranteed to be caught.)
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/detail/block_index.hpp"
#include "vyre/runtime/detail/pool_blocks.hpp"
#include "vyre/runtime/detail/resource_support.hpp"
#include "vyre/runtime/detail/stream_free_lists.hpp"
#include "vyre/runtime/detail/thread_block_cache.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! `vyre::alloc::caching_pool`. Thread-safe.
//! @note A stream you freed blocks on must outlive its cached blocks: call `release_cached()`
//!       before destroying a stream of your own (the backend's stream leases do this).
class caching_pool_resource : public mr_interface<caching_pool_resource> {
 public:
  using policy = alloc::caching_pool;
  static constexpr const char* policy_name = "alloc::caching_pool";
  static constexpr const char* alignment_context = "alloc::caching_pool: unsupported alignment";
  static constexpr int min_class_log2 = 8;  // 256 bytes, the cudaMalloc alignment
  //! Blocks a thread keeps for itself, and the largest it keeps.
  static constexpr std::size_t thread_cache_blocks = detail::thread_block_cache::capacity;
  static constexpr std::size_t thread_cache_max_block = std::size_t{16} << 20;

  caching_pool_resource(int ordinal, telemetry_counters* telemetry,
                        device_memory_options options = {}) noexcept
      : ordinal_(ordinal),
        telemetry_(telemetry),
        retained_cap_(options.retained_cap),
        thread_cache_bytes_((std::min)(options.retained_cap / 4, std::size_t{64} << 20)),
        ledger_(options.retained_cap) {
    live_pools::add(instance_, this);
  }
  caching_pool_resource(const caching_pool_resource&) = delete;
  caching_pool_resource& operator=(const caching_pool_resource&) = delete;
  ~caching_pool_resource() {
    live_pools::remove(instance_);  // first: an ending thread no longer hands its cache back
    (void)release_all();
  }

  //! The bytes a request of `bytes` occupies: the next power of two (at least 256) when that
  //! class can be retained, else `bytes` rounded up to 256 (served and freed uncached).
  std::size_t held_bytes(std::size_t bytes) const noexcept {
    const std::size_t rounded = round_up(bytes);
    if (bytes > (std::size_t{1} << 62)) return rounded;
    const std::size_t cls = std::bit_ceil((std::max)(bytes, std::size_t{1} << min_class_log2));
    return cls <= retained_cap_ ? cls : rounded;
  }

  //! @returns `errc::invalid_argument` for zero bytes, `errc::out_of_memory` naming the bytes
  //!          and the policy when the device is full even after the cache was released.
  expected<void*> try_allocate(std::size_t bytes, cudaStream_t stream) noexcept {
    if (bytes == 0) return fail(detail::zero_byte_error("alloc::caching_pool: zero-byte request"));
    const std::size_t held = held_bytes(bytes);
    if (detail::injected_device_fault())
      return fail(detail::device_oom(cudaErrorMemoryAllocation,
                                     "alloc::caching_pool: cudaMalloc failed (injected fault)",
                                     bytes)
                      .with("class_bytes", held));
    if (!is_class(held)) return allocate_from_device(bytes, held, nullptr);
    const void* key = key_of(stream);
    block* b = nullptr;
    thread_cache* mine = held <= thread_cache_max_block ? my_thread_cache() : nullptr;
    if (mine != nullptr) b = mine->take(key, held);
    stream_lists* own = nullptr;
    if (b == nullptr) {
      own = lists_of(stream);
      if (own == nullptr) return allocate_from_device(bytes, held, nullptr);
      if (mine != nullptr) flush_other_streams(*mine, key);  // so they can be fenced and shared
      b = own->pop(held);
      if (b == nullptr) b = take_from_other_stream(*own, held, stream);
      if (b == nullptr) return allocate_from_device(bytes, held, own);
    }
    if (own == nullptr)  // from the thread cache, which keeps this thread's counters at hand
      mine->telemetry.record_pool_hit(bytes);
    else if (telemetry_ != nullptr)
      telemetry_->record_pool_hit(bytes);
    return b->ptr.load(std::memory_order_relaxed);
  }

  //! Returns `ptr` to the pool; it is reused at once by allocations on `stream`.
  //! @returns `errc::invalid_argument` when `ptr` is not a live allocation of this resource.
  expected<void> try_deallocate(void* ptr, std::size_t /*bytes*/, cudaStream_t stream) noexcept {
    block* b = index_.find(ptr);
    if (b == nullptr || !b->live.load(std::memory_order_relaxed)) return fail(not_live(ptr));
    if (!b->cacheable) return free_uncached(b, ptr);
    stream_lists* target = lists_of(stream);
    // The hit path: into this thread's cache, unless the stream owes a fence.
    if (b->held <= thread_cache_max_block && target != nullptr &&
        !target->fence_wanted.load(std::memory_order_relaxed))
      if (thread_cache* mine = my_thread_cache();
          mine != nullptr && mine->put(b, key_of(stream), stream, thread_cache_bytes_, ledger_))
        return {};
    if (b->live.exchange(false, std::memory_order_acq_rel) == false) return fail(not_live(ptr));
    if (target != nullptr) {
      if (thread_cache* mine = my_thread_cache()) flush_stream(*mine, key_of(stream), *target);
      if (cache_in_lists(*target, b, /*may_fence=*/true, /*may_reclaim=*/true)) return {};
    }
    // Over the cap or no memory for bookkeeping: cudaFree synchronises the device, so pending
    // work that uses the block finishes first.
    return free_to_device(b);
  }

  //! Frees every cached (free) block, the thread caches' included; live allocations are
  //! untouched.
  expected<void> release_cached() noexcept {
    expected<void> result;
    auto keep_first = [&](expected<void> r) {
      if (!r && result) result = r;
    };
    {
      std::lock_guard caches(thread_caches_mutex_);
      for (auto& tc : thread_caches_) {
        thread_cache::entries_type taken;
        std::size_t n = 0;
        tc->drain([&] { n = tc->take_all(taken, ledger_); });
        for (std::size_t i = 0; i < n; ++i) keep_first(free_to_device(taken[i].b));
      }
    }
    std::lock_guard registry(streams_mutex_);
    for (auto& [key, lists] : streams_) {
      stream_lists::lists taken;
      ledger_.give(lists->take_all(taken));
      for (auto& blocks : taken)
        for (block* b : blocks) keep_first(free_to_device(b));
    }
    return result;
  }

  //! Frees cached blocks and every live allocation (backend teardown; no other thread may use
  //! the pool meanwhile).
  expected<void> release_all() noexcept {
    auto result = release_cached();
    // In batches on the stack: teardown must not need host memory.
    for (;;) {
      std::array<block*, 64> batch;
      std::size_t count = 0;
      index_.for_each([&](block* b) {
        batch[count++] = b;
        return count < batch.size();
      });
      if (count == 0) break;
      for (std::size_t i = 0; i < count; ++i) {
        batch[i]->live.store(false, std::memory_order_relaxed);
        if (auto freed = free_to_device(batch[i]); !freed && result) result = freed;
      }
    }
    return result;
  }

  //! Free bytes kept for reuse (exact when no other thread is allocating or freeing).
  std::size_t cached_bytes() const noexcept {
    std::size_t total = 0;
    for_each_stream([&](const stream_lists& lists) { total += lists.cached_bytes; });
    std::lock_guard caches(thread_caches_mutex_);
    for (const auto& tc : thread_caches_) total += tc->bytes.load(std::memory_order_relaxed);
    return total;
  }
  //! Blocks handed out and not yet returned (exact when no other thread is using the pool).
  std::size_t live_allocations() const {
    std::size_t cached = 0;
    for_each_stream([&](const stream_lists& lists) {
      cached += lists.cached_blocks.load(std::memory_order_relaxed);
    });
    {
      std::lock_guard caches(thread_caches_mutex_);
      for (const auto& tc : thread_caches_) cached += tc->count.load(std::memory_order_relaxed);
    }
    const std::size_t owned = index_.size();
    return owned > cached ? owned - cached : 0;
  }
  std::size_t retained_cap() const noexcept { return retained_cap_; }
  int device() const noexcept { return ordinal_; }

 private:
  using block = detail::pool_block;
  using stream_lists = detail::stream_free_lists;
  using thread_cache = detail::thread_block_cache;

  // Which lists and which thread cache a thread used last, per pool instance (instance ids are
  // never reused, so an entry of a destroyed pool matches nothing).
  struct lists_cache_entry {
    std::uint64_t pool = 0;
    const void* key = nullptr;
    stream_lists* lists = nullptr;
  };
  struct thread_cache_entry {
    std::uint64_t pool = 0;
    thread_cache* cache = nullptr;
  };
  static constexpr int tls_entries = 4;

  // Pools alive in the process, so a thread that ends can hand its caches back to the pools
  // that still exist (and skip those that do not).
  struct live_pools {
    static std::mutex& mutex() noexcept {
      static std::mutex* m = new std::mutex;  // leaked on purpose: threads may end after exit
      return *m;
    }
    static std::unordered_map<std::uint64_t, caching_pool_resource*>& map() noexcept {
      static auto* pools = new std::unordered_map<std::uint64_t, caching_pool_resource*>;
      return *pools;
    }
    static void add(std::uint64_t id, caching_pool_resource* pool) noexcept {
      std::lock_guard lock(mutex());
      try {
        map().emplace(id, pool);
      } catch (...) {
        // Without the entry an ending thread's cache waits for release_cached() or teardown.
      }
    }
    static void remove(std::uint64_t id) noexcept {
      std::lock_guard lock(mutex());
      map().erase(id);
    }
    // Gives `cache` back to pool `id` if that pool still exists. @pre mutex() is held.
    static void abandon(std::uint64_t id, thread_cache& cache) noexcept {
      if (const auto it = map().find(id); it != map().end()) it->second->abandon(cache);
    }
  };
  // Runs when a thread ends: every cache it owned goes back to its pool.
  struct thread_exit_hook {
    std::array<thread_cache_entry, tls_entries>* entries = nullptr;
    ~thread_exit_hook() {
      if (entries == nullptr) return;
      std::lock_guard lock(live_pools::mutex());
      for (thread_cache_entry& e : *entries) {
        if (e.cache != nullptr) live_pools::abandon(e.pool, *e.cache);
        e = {};
      }
    }
  };

  static std::uint64_t next_instance_id() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  static std::size_t round_up(std::size_t bytes) noexcept {
    return bytes > SIZE_MAX - (device_alignment - 1)
               ? bytes
               : (bytes + device_alignment - 1) / device_alignment * device_alignment;
  }
  bool is_class(std::size_t held) const noexcept {
    return std::has_single_bit(held) && held >= (std::size_t{1} << min_class_log2) &&
           held <= retained_cap_;
  }
  static error not_live(const void* ptr) noexcept {
    return detail::unknown_pointer(
        "alloc::caching_pool: pointer is not a live allocation of this resource", ptr);
  }
  static error bookkeeping_error(std::size_t bytes) noexcept {
    return error(errc::out_of_memory, "alloc::caching_pool: host bookkeeping allocation failed")
        .with("bytes", bytes)
        .fix("free host memory");
  }

  // The per-thread default stream is a different stream in every thread under one handle:
  // key it by thread so one thread never reuses another's block without a fence.
  static const void* this_thread_key() noexcept {
    static thread_local const char tag = 0;
    return &tag;
  }
  static bool is_per_thread(cudaStream_t stream) noexcept {
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    if (stream == nullptr) return true;
#endif
    return stream == cudaStreamPerThread;
  }
  static const void* key_of(cudaStream_t stream) noexcept {
    return is_per_thread(stream) ? this_thread_key() : static_cast<const void*>(stream);
  }

  // ---- thread caches ----------------------------------------------------------------------

  // This thread's cache for this pool, created (or taken over from an ended thread) on first
  // use; null only without host memory. Both hit paths call it: kept inline (g++ otherwise
  // makes it a call: 6% more instructions per hit), with the cold adoption out of line.
  [[gnu::always_inline]] thread_cache* my_thread_cache() noexcept {
    static thread_local std::array<thread_cache_entry, tls_entries> entries{};
    for (const thread_cache_entry& e : entries)
      if (e.pool == instance_) return e.cache;
    return adopt_thread_cache(entries);
  }
  [[gnu::noinline]] thread_cache* adopt_thread_cache(
      std::array<thread_cache_entry, tls_entries>& entries) noexcept {
    static thread_local thread_exit_hook hook;
    static thread_local unsigned victim = 0;
    thread_cache* tc = nullptr;
    {
      std::lock_guard caches(thread_caches_mutex_);
      for (auto& c : thread_caches_)
        if (c->owner == std::thread::id{}) {
          tc = c.get();
          break;
        }
      if (tc == nullptr) {
        try {
          thread_caches_.push_back(std::make_unique<thread_cache>());
        } catch (...) {
          return nullptr;
        }
        tc = thread_caches_.back().get();
      }
      tc->owner = std::this_thread::get_id();
      tc->telemetry =
          telemetry_ != nullptr ? telemetry_->local() : telemetry_counters::local_counters{};
    }
    thread_cache_entry& slot = entries[victim++ % tls_entries];
    if (slot.cache != nullptr) {
      // Evicting another pool's entry: give that cache back as if this thread had ended.
      std::lock_guard lock(live_pools::mutex());
      live_pools::abandon(slot.pool, *slot.cache);
    }
    slot = {instance_, tc};
    hook.entries = &entries;
    return tc;
  }
  // The owner is gone (or evicted it): its blocks go to their streams' lists, the cache to
  // the next thread that needs one.
  void abandon(thread_cache& tc) noexcept {
    thread_cache::entries_type taken;
    std::size_t n = 0;
    // The cache's share goes back first, so the lists can take it over.
    tc.drain([&] { n = tc.take_all(taken, ledger_); });
    for (std::size_t i = 0; i < n; ++i) {
      const thread_cache::entry& e = taken[i];
      // A per-thread stream's key dies with its thread (a new thread may get the same
      // address): its blocks go back to the device, whose cudaFree waits for their work.
      stream_lists* lists = is_per_thread(e.stream) ? nullptr : lists_by_key(e.key, e.stream);
      if (lists == nullptr ||
          !cache_in_lists(*lists, e.b, /*may_fence=*/false, /*may_reclaim=*/false))
        (void)free_to_device(e.b);
    }
    std::lock_guard caches(thread_caches_mutex_);
    tc.owner = std::thread::id{};
  }

  // Moves this thread's cached blocks of `key` to that stream's lists (before a fence there).
  void flush_stream(thread_cache& tc, const void* key, stream_lists& lists) noexcept {
    move_from_thread_cache(
        tc, [&](const thread_cache::entry& e) { return e.key == key; },
        [&](const thread_cache::entry&) { return &lists; });
  }
  // Moves this thread's cached blocks of other streams to their lists, where those streams
  // can fence them for everyone else.
  void flush_other_streams(thread_cache& tc, const void* key) noexcept {
    move_from_thread_cache(
        tc, [&](const thread_cache::entry& e) { return e.key != key; },
        [&](const thread_cache::entry& e) { return lists_by_key(e.key, e.stream); });
  }
  template <class Pick, class ListsOf>
  void move_from_thread_cache(thread_cache& tc, Pick&& pick, ListsOf&& lists_of_entry) noexcept {
    thread_cache::entries_type moving;
    const std::size_t n = tc.take_out(pick, moving, ledger_);
    for (std::size_t i = 0; i < n; ++i) {
      stream_lists* lists = lists_of_entry(moving[i]);
      if (lists == nullptr ||
          !cache_in_lists(*lists, moving[i].b, /*may_fence=*/false, /*may_reclaim=*/true))
        (void)free_to_device(moving[i].b);
    }
  }

  // ---- stream lists -----------------------------------------------------------------------

  // The lists of `stream`, created on first use; null only without host memory.
  stream_lists* lists_of(cudaStream_t stream) noexcept {
    static thread_local std::array<lists_cache_entry, tls_entries> entries{};
    static thread_local unsigned victim = 0;
    const void* key = key_of(stream);
    for (const lists_cache_entry& e : entries)
      if (e.pool == instance_ && e.key == key) return e.lists;
    stream_lists* lists = lists_by_key(key, stream);
    if (lists != nullptr) entries[victim++ % tls_entries] = {instance_, key, lists};
    return lists;
  }
  stream_lists* lists_by_key(const void* key, cudaStream_t stream) noexcept {
    std::lock_guard registry(streams_mutex_);
    try {
      auto& slot = streams_[key];
      if (!slot) slot = std::make_unique<stream_lists>(stream);
      return slot.get();
    } catch (...) {
      return nullptr;
    }
  }

  template <class F>
  void for_each_stream(F&& f) const {
    std::lock_guard registry(streams_mutex_);
    for (const auto& [key, lists] : streams_) {
      std::lock_guard lock(lists->lock);
      f(*lists);
    }
  }

  // A block of the class another stream freed before a fence that has completed. Streams with
  // unfenced blocks of the class are asked to record a fence at their next free.
  block* take_from_other_stream(stream_lists& own, std::size_t held, cudaStream_t stream) noexcept {
    // A capturing thread may not query events; its allocation falls through to cudaMalloc,
    // which reports the capture error.
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      return nullptr;
    }
    std::lock_guard registry(streams_mutex_);
    for (auto& [key, other] : streams_)
      if (other.get() != &own)
        if (block* taken = other->pop_fenced(held)) return taken;
    return nullptr;
  }

  // Caches `b` (free, on no list, in no thread cache) on `lists`, growing that stream's share
  // of the cap by the block's bytes when it is full; `may_fence` when the calling thread may
  // use the stream (it freed on it), `may_reclaim` unless an abandoned cache is being handed
  // on (a reclaim drains every thread's cache, too heavy for a thread's exit, which holds the
  // live-pool registry meanwhile). False when the cap is reached even after idle shares came
  // back, or without host memory for the list.
  bool cache_in_lists(stream_lists& lists, block* b, bool may_fence, bool may_reclaim) noexcept {
    using pushed = stream_lists::push_result;
    if (const pushed first = lists.push(b, 0, may_fence); first != pushed::over_budget)
      return first == pushed::cached;
    const std::size_t held = b->held;
    if (!ledger_.take(held)) {
      if (!may_reclaim) return false;
      reclaim_idle_shares();
      if (!ledger_.take(held)) return false;
    }
    // False when others filled the share meanwhile.
    return lists.push(b, held, may_fence) == pushed::cached;
  }

  // Gives back every stream's and thread cache's share beyond what it holds.
  void reclaim_idle_shares() noexcept {
    {
      std::lock_guard registry(streams_mutex_);
      for (auto& [key, lists] : streams_) ledger_.give(lists->trim_budget());
    }
    std::lock_guard caches(thread_caches_mutex_);
    for (auto& tc : thread_caches_)
      if (tc->has_idle_budget()) tc->drain([&] { tc->trim_budget(ledger_); });
  }

  // ---- the device -------------------------------------------------------------------------

  expected<void*> allocate_from_device(std::size_t bytes, std::size_t held,
                                       stream_lists* own) noexcept {
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    void* ptr = nullptr;
    cudaError_t status = cudaMalloc(&ptr, held);
    if (status == cudaErrorMemoryAllocation) {
      // Cached blocks are free memory the device cannot see: return them and retry once.
      (void)cudaGetLastError();
      (void)release_cached();
      status = cudaMalloc(&ptr, held);
    }
    if (status != cudaSuccess)
      return fail(detail::device_oom(status, "alloc::caching_pool: cudaMalloc failed", bytes)
                      .with("class_bytes", held));
    block* b = records_.acquire();
    if (b != nullptr) {
      // Complete before the index publishes it.
      b->ptr.store(ptr, std::memory_order_relaxed);
      b->held = held;
      b->cacheable = own != nullptr;
      b->live.store(true, std::memory_order_relaxed);
    }
    if (b == nullptr || !index_.insert(b)) {
      if (b != nullptr) records_.recycle(b);
      (void)cudaFree(ptr);
      return fail(bookkeeping_error(bytes));
    }
    if (telemetry_ != nullptr) {
      telemetry_->record_pool_miss();
      telemetry_->record_request(bytes);
      telemetry_->record_device_acquired(held);
    }
    return ptr;
  }

  // Frees a block of a size the pool does not keep.
  expected<void> free_uncached(block* b, void* ptr) noexcept {
    if (b->live.exchange(false, std::memory_order_acq_rel) == false) return fail(not_live(ptr));
    return free_to_device(b);
  }

  // cudaFree of a block that is on no list, in no cache and not live; its record is recycled.
  expected<void> free_to_device(block* b) noexcept {
    void* ptr = b->ptr.load(std::memory_order_relaxed);
    const std::size_t held = b->held;
    index_.erase(ptr);
    records_.recycle(b);
    if (telemetry_ != nullptr) telemetry_->record_device_released(held);
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaFree(ptr), "alloc::caching_pool: cudaFree failed");
    return {};
  }

  int ordinal_;
  telemetry_counters* telemetry_;
  std::size_t retained_cap_;
  std::size_t thread_cache_bytes_;  // the most one thread cache keeps
  const std::uint64_t instance_ = next_instance_id();
  detail::retained_cap_ledger ledger_;
  detail::pool_block_records records_;
  detail::block_index<block> index_;
  mutable std::mutex streams_mutex_;
  std::unordered_map<const void*, std::unique_ptr<stream_lists>> streams_;
  mutable std::mutex thread_caches_mutex_;
  std::vector<std::unique_ptr<thread_cache>> thread_caches_;
};

}  // namespace vyre
