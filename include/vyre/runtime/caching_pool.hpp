// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::alloc::caching_pool`: device blocks in power-of-two size classes (256 B upwards),
//! cached per stream. Include `vyre/runtime/memory.hpp`.
//!
//! A hit costs one uncontended spin lock and no CUDA call: each stream has its own free lists
//! (found through a thread-local cache of the streams a thread used last), and the pointer table
//! that validates every free is read without a lock.
//!
//! Reuse is safe by stream order: a block freed on stream `s` goes to `s`'s lists and the next
//! allocation on `s` may take it at once. Another stream takes it only once an event recorded
//! on `s` after the free has completed. That event is recorded by the next free on `s` after
//! another stream asked for one (so nothing is paid while no stream is short), and only when
//! `s` is not being captured. The pool never queries a stream, which would invalidate a
//! capture running in another thread.
//!
//! At most `retained_cap` free bytes are kept. Each stream holds a share of that cap, taken
//! when its lists grow and given back when the pool runs short, so a free only touches shared
//! state when its stream's lists reach a new high-water mark.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/detail/block_index.hpp"
#include "vyre/runtime/detail/resource_support.hpp"
#include "vyre/runtime/detail/spin_lock.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! `vyre::alloc::caching_pool`. Thread-safe; every free is validated (a foreign or doubly freed
//! pointer is an error).
//! @note A stream you freed blocks on must outlive its cached blocks: call `release_cached()`
//!       before destroying a stream of your own (the backend's stream leases do this).
class caching_pool_resource : public mr_interface<caching_pool_resource> {
 public:
  using policy = alloc::caching_pool;
  static constexpr const char* policy_name = "alloc::caching_pool";
  static constexpr const char* alignment_context = "alloc::caching_pool: unsupported alignment";
  static constexpr int min_class_log2 = 8;  // 256 bytes, the cudaMalloc alignment

  caching_pool_resource(int ordinal, telemetry_counters* telemetry,
                        device_memory_options options = {}) noexcept
      : ordinal_(ordinal),
        telemetry_(telemetry),
        retained_cap_(options.retained_cap),
        unreserved_(options.retained_cap) {}
  caching_pool_resource(const caching_pool_resource&) = delete;
  caching_pool_resource& operator=(const caching_pool_resource&) = delete;
  ~caching_pool_resource() {
    (void)release_all();
    std::lock_guard lock(streams_mutex_);
    for (auto& [key, stream] : streams_)
      if (stream->fence != nullptr) (void)cudaEventDestroy(stream->fence);
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
    stream_lists* own = is_class(held) ? lists_of(stream) : nullptr;
    if (own != nullptr) {
      block* b = take_own(*own, held);
      if (b == nullptr) b = take_from_other_stream(*own, held, stream);
      if (b != nullptr) {
        if (telemetry_ != nullptr) {
          telemetry_->record_pool_hit();
          telemetry_->record_allocation(bytes, held);
        }
        return b->ptr.load(std::memory_order_relaxed);
      }
    }
    return allocate_from_device(bytes, held, own);
  }

  //! Returns `ptr` to the pool; it is reused at once by allocations on `stream`.
  //! @returns `errc::invalid_argument` when `ptr` is not a live allocation of this resource.
  expected<void> try_deallocate(void* ptr, std::size_t /*bytes*/, cudaStream_t stream) noexcept {
    stream_lists* target = lists_of(stream);  // before any lock: it may take the registry's
    block* b = index_.find(ptr);
    if (b == nullptr) return fail(not_live(ptr));
    stream_lists* home = nullptr;
    for (;;) {
      home = b->home.load(std::memory_order_acquire);
      if (home == nullptr) return free_uncached(b, ptr);
      home->lock.lock();
      if (b->home.load(std::memory_order_relaxed) == home &&
          b->ptr.load(std::memory_order_relaxed) == ptr)
        break;
      home->lock.unlock();  // moved to another stream or recycled meanwhile: look again
      b = index_.find(ptr);
      if (b == nullptr) return fail(not_live(ptr));
    }
    if (!b->live) {
      home->lock.unlock();
      return fail(not_live(ptr));
    }
    b->live = false;
    const std::size_t held = b->held;
    if (telemetry_ != nullptr) telemetry_->record_deallocation(held);
    if (target == home && home->cached_bytes + held <= home->budget && has_room(*home, held)) {
      cache(*home, b);  // the hit path: same stream, within its share of the cap
      home->lock.unlock();
      return {};
    }
    home->lock.unlock();
    // Not live and on no list: only this thread can reach the block now.
    if (target != nullptr && cache_with_new_share(*target, b)) return {};
    // Over the cap or no memory for bookkeeping: cudaFree synchronises the device, so pending
    // work that uses the block finishes first.
    return free_to_device(b);
  }

  //! Frees every cached (free) block; live allocations are untouched.
  expected<void> release_cached() noexcept {
    std::lock_guard registry(streams_mutex_);
    expected<void> result;
    for (auto& [key, lists] : streams_) {
      std::array<std::vector<block*>, class_count> taken;
      {
        std::lock_guard lock(lists->lock);
        taken.swap(lists->free);  // no allocation under the lock
        lists->fenced.fill(0);
        lists->cached_bytes = 0;
        lists->cached_blocks = 0;
        unreserved_.fetch_add(std::exchange(lists->budget, 0), std::memory_order_relaxed);
      }
      for (auto& blocks : taken)
        for (block* b : blocks)
          if (auto freed = free_to_device(b); !freed && result) result = freed;
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
        if (batch[i]->live && telemetry_ != nullptr)
          telemetry_->record_deallocation(batch[i]->held);
        batch[i]->live = false;
        if (auto freed = free_to_device(batch[i]); !freed && result) result = freed;
      }
    }
    return result;
  }

  //! Free bytes kept for reuse.
  std::size_t cached_bytes() const noexcept {
    std::size_t total = 0;
    for_each_stream([&](const stream_lists& lists) { total += lists.cached_bytes; });
    return total;
  }
  //! Blocks handed out and not yet returned.
  std::size_t live_allocations() const {
    std::size_t cached = 0;
    for_each_stream([&](const stream_lists& lists) { cached += lists.cached_blocks; });
    const std::size_t owned = index_.size();
    return owned > cached ? owned - cached : 0;
  }
  std::size_t retained_cap() const noexcept { return retained_cap_; }
  int device() const noexcept { return ordinal_; }

 private:
  static constexpr int class_count = 64;  // index: log2(class bytes)
  struct stream_lists;

  // One device block the pool owns, live or cached. Records are recycled, never freed before
  // the pool, so a lock-free reader holding a stale one reads valid (if unrelated) memory.
  struct block {
    std::atomic<void*> ptr{nullptr};
    std::size_t held = 0;
    // The stream whose lock guards `live` (and whose lists hold the block while it is free);
    // null for uncached blocks, which the records mutex guards.
    std::atomic<stream_lists*> home{nullptr};
    bool live = false;
  };

  // The free blocks of one stream, LIFO per class. `free[c][0, fenced[c])` were freed before
  // the last record of `fence`, so other streams may take them once it completed.
  struct alignas(64) stream_lists {
    detail::spin_lock lock;
    cudaStream_t stream = nullptr;
    std::size_t cached_bytes = 0;
    std::size_t cached_blocks = 0;
    std::size_t budget = 0;  // this stream's share of the retained cap
    bool fence_wanted = false;
    cudaEvent_t fence = nullptr;
    std::array<std::vector<block*>, class_count> free{};
    std::array<std::size_t, class_count> fenced{};
  };

  // Which lists a thread used last, per pool instance (ids are never reused).
  struct lists_cache_entry {
    std::uint64_t pool = 0;
    const void* key = nullptr;
    stream_lists* lists = nullptr;
  };
  static constexpr int lists_cache_size = 4;

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
  static std::size_t class_index(std::size_t held) noexcept {
    return static_cast<std::size_t>(std::countr_zero(held));
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
  static const void* key_of(cudaStream_t stream) noexcept {
    static thread_local const char this_thread = 0;
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
    if (stream == nullptr) return &this_thread;
#endif
    return stream == cudaStreamPerThread ? &this_thread : static_cast<const void*>(stream);
  }

  // The lists of `stream`, created on first use; null only without host memory.
  stream_lists* lists_of(cudaStream_t stream) noexcept {
    static thread_local lists_cache_entry entries[lists_cache_size];
    static thread_local unsigned victim = 0;
    const void* key = key_of(stream);
    for (const lists_cache_entry& e : entries)
      if (e.pool == instance_ && e.key == key) return e.lists;
    stream_lists* lists = nullptr;
    {
      std::lock_guard registry(streams_mutex_);
      try {
        auto& slot = streams_[key];
        if (!slot) {
          slot.reset(new stream_lists);
          slot->stream = stream;
        }
        lists = slot.get();
      } catch (...) {
        return nullptr;
      }
    }
    entries[victim++ % lists_cache_size] = {instance_, key, lists};
    return lists;
  }

  template <class F>
  void for_each_stream(F&& f) const {
    std::lock_guard registry(streams_mutex_);
    for (const auto& [key, lists] : streams_) {
      std::lock_guard lock(lists->lock);
      f(*lists);
    }
  }

  // Pops the newest free block of the class from the stream's own lists.
  block* take_own(stream_lists& lists, std::size_t held) noexcept {
    const std::size_t c = class_index(held);
    std::lock_guard lock(lists.lock);
    auto& list = lists.free[c];
    if (list.empty()) return nullptr;
    block* b = list.back();
    list.pop_back();
    lists.fenced[c] = (std::min)(lists.fenced[c], list.size());
    lists.cached_bytes -= held;
    --lists.cached_blocks;
    b->live = true;
    return b;
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
    const std::size_t c = class_index(held);
    block* taken = nullptr;
    {
      std::lock_guard registry(streams_mutex_);
      for (auto& [key, entry] : streams_) {
        stream_lists& other = *entry;
        if (&other == &own) continue;
        std::lock_guard lock(other.lock);
        auto& list = other.free[c];
        if (other.fenced[c] > 0 && fence_completed(other)) {
          // Take the newest fenced block; the oldest unfenced one fills its slot.
          const std::size_t slot = other.fenced[c] - 1;
          taken = list[slot];
          list[slot] = list.back();
          list.pop_back();
          other.fenced[c] = slot;
          other.cached_bytes -= held;
          --other.cached_blocks;
          break;
        }
        if (list.size() > other.fenced[c]) other.fence_wanted = true;
      }
    }
    if (taken == nullptr) return nullptr;
    std::lock_guard lock(own.lock);
    taken->home.store(&own, std::memory_order_release);
    taken->live = true;
    return taken;
  }

  static bool fence_completed(stream_lists& lists) noexcept {
    if (lists.fence == nullptr) return false;
    const cudaError_t status = cudaEventQuery(lists.fence);
    if (status == cudaSuccess) return true;
    (void)cudaGetLastError();  // cudaErrorNotReady is not an error worth keeping
    return false;
  }

  // Pushes a free block onto its home's lists and, if another stream asked, fences them.
  // @pre lists.lock is held, b->home is &lists and the class list has room.
  static void cache(stream_lists& lists, block* b) noexcept {
    const std::size_t c = class_index(b->held);
    lists.free[c].push_back(b);  // never allocates: the caller checked `has_room`
    lists.cached_bytes += b->held;
    ++lists.cached_blocks;
    if (lists.fence_wanted) record_fence(lists);
  }

  // Records the fence on the stream (never on one being captured: the record would become
  // part of the capture) and marks every block on the lists as covered by it.
  static void record_fence(stream_lists& lists) noexcept {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(lists.stream, &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
      (void)cudaGetLastError();
      return;
    }
    if (lists.fence == nullptr &&
        cudaEventCreateWithFlags(&lists.fence, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaGetLastError();
      lists.fence = nullptr;
      return;
    }
    if (cudaEventRecord(lists.fence, lists.stream) != cudaSuccess) {
      (void)cudaGetLastError();
      return;
    }
    for (std::size_t c = 0; c < class_count; ++c) lists.fenced[c] = lists.free[c].size();
    lists.fence_wanted = false;
  }

  static bool has_room(const stream_lists& lists, std::size_t held) noexcept {
    const auto& list = lists.free[class_index(held)];
    return list.size() < list.capacity();
  }

  // Caches `b` (free, on no list) on `lists`, first growing that stream's share of the cap by
  // the block's bytes when it is full. False when the cap is reached even after idle shares
  // came back, or without host memory for the list.
  bool cache_with_new_share(stream_lists& lists, block* b) noexcept {
    const std::size_t held = b->held;
    for (bool took_share = false;;) {
      {
        std::lock_guard lock(lists.lock);
        if (took_share) lists.budget += held;
        if (lists.cached_bytes + held <= lists.budget) {
          if (!has_room(lists, held) && !grow_list(lists, held)) return false;
          b->home.store(&lists, std::memory_order_release);
          cache(lists, b);
          return true;
        }
        if (took_share) return false;  // others filled the share meanwhile
      }
      if (!take_from_cap(held)) {
        reclaim_idle_shares();
        if (!take_from_cap(held)) return false;
      }
      took_share = true;
    }
  }
  static bool grow_list(stream_lists& lists, std::size_t held) noexcept {
    try {
      auto& list = lists.free[class_index(held)];
      list.reserve(list.size() < 4 ? 4 : list.size() * 2);
      return true;
    } catch (...) {
      return false;
    }
  }
  bool take_from_cap(std::size_t held) noexcept {
    std::size_t left = unreserved_.load(std::memory_order_relaxed);
    do {
      if (left < held) return false;
    } while (!unreserved_.compare_exchange_weak(left, left - held, std::memory_order_relaxed));
    return true;
  }
  // Gives back every stream's share beyond what its lists hold.
  void reclaim_idle_shares() noexcept {
    std::lock_guard registry(streams_mutex_);
    for (auto& [key, lists] : streams_) {
      std::lock_guard lock(lists->lock);
      unreserved_.fetch_add(lists->budget - lists->cached_bytes, std::memory_order_relaxed);
      lists->budget = lists->cached_bytes;
    }
  }

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
    block* b = new_record();
    if (b != nullptr) {
      // Complete before the index publishes it.
      b->ptr.store(ptr, std::memory_order_relaxed);
      b->held = held;
      b->live = true;
      b->home.store(own, std::memory_order_relaxed);
    }
    if (b == nullptr || !index_.insert(b)) {
      if (b != nullptr) recycle(b);
      (void)cudaFree(ptr);
      return fail(bookkeeping_error(bytes));
    }
    if (telemetry_ != nullptr) {
      telemetry_->record_pool_miss();
      telemetry_->record_allocation(bytes, held);
    }
    return ptr;
  }

  // Frees a block that has no home lists (its class is not cached).
  expected<void> free_uncached(block* b, void* ptr) noexcept {
    {
      std::lock_guard lock(records_mutex_);
      if (b->ptr.load(std::memory_order_relaxed) != ptr || !b->live ||
          b->home.load(std::memory_order_relaxed) != nullptr)
        return fail(not_live(ptr));
      b->live = false;
    }
    if (telemetry_ != nullptr) telemetry_->record_deallocation(b->held);
    return free_to_device(b);
  }

  // cudaFree of a block that is on no list and not live; its record is recycled.
  expected<void> free_to_device(block* b) noexcept {
    void* ptr = b->ptr.load(std::memory_order_relaxed);
    index_.erase(ptr);
    recycle(b);
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaFree(ptr), "alloc::caching_pool: cudaFree failed");
    return {};
  }

  block* new_record() noexcept {
    std::lock_guard lock(records_mutex_);
    if (!spare_records_.empty()) {
      block* b = spare_records_.back();
      spare_records_.pop_back();
      return b;
    }
    try {
      spare_records_.reserve(records_.size() + 1);  // so `recycle` never allocates
      records_.push_back(std::make_unique<block>());
      return records_.back().get();
    } catch (...) {
      return nullptr;
    }
  }
  void recycle(block* b) noexcept {
    std::lock_guard lock(records_mutex_);
    b->home.store(nullptr, std::memory_order_relaxed);
    b->live = false;
    spare_records_.push_back(b);  // capacity reserved in new_record
  }

  int ordinal_;
  telemetry_counters* telemetry_;
  std::size_t retained_cap_;
  const std::uint64_t instance_ = next_instance_id();
  std::atomic<std::size_t> unreserved_;  // the part of the cap no stream holds
  detail::block_index<block> index_;
  mutable std::mutex streams_mutex_;
  std::unordered_map<const void*, std::unique_ptr<stream_lists>> streams_;
  std::mutex records_mutex_;
  std::vector<std::unique_ptr<block>> records_;
  std::vector<block*> spare_records_;
};

}  // namespace vyre
