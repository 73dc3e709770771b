// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device memory, one resource per allocation policy (`vyre::alloc::*`):
//!
//! - `caching_pool_resource`: power-of-two size classes kept per stream; a freed block is
//!   reused at once on the stream that freed it (stream order makes that safe) and by another
//!   stream only once the freeing stream is idle; retains at most `retained_cap` free bytes
//!   (default 256 MiB). A hit makes no CUDA call.
//! - `stream_ordered_resource`: a dedicated `cudaMemPool_t` (never the device's default pool,
//!   which other libraries share) with its release threshold set to `retained_cap`; `trim`.
//! - `direct_resource`: cudaMalloc/cudaFree, nothing retained.
//!
//! All three are thread-safe, validate every free (a foreign or doubly freed pointer is an
//! error, not undefined behaviour), count into `telemetry_counters`, and return everything
//! they hold when destroyed. Their `try_*` functions return `vyre::expected`; the members
//! `allocate`/`deallocate`/`allocate_async`/`deallocate_async` follow the `cuda::mr` resource
//! interface (they throw `vyre::error_exception`). Define
//! `LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE` before including vyre to get the
//! `cuda::mr::device_accessible` property and the concept checks.
//!
//! Stream semantics (as RMM and cudaMallocAsync): memory from `try_allocate(bytes, s)` is
//! ready for work ordered after the call on `s`; other streams must wait on `s` first.
//! `try_deallocate(p, bytes, s)` may hand `p` to the next allocation on `s` at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cuda/stream_ref>
#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE)
#include <cuda/memory_resource>
#endif

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/telemetry.hpp"

//! 1 when vyre's resources declare the `cuda::mr` properties and are checked against the
//! `cuda::mr::async_resource_with` concept (needs LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE).
#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE)
#define VYRE_HAS_CUDA_MR 1
#else
#define VYRE_HAS_CUDA_MR 0
#endif

namespace vyre {

//! Alignment every vyre device allocation has (what cudaMalloc guarantees).
inline constexpr std::size_t device_alignment = 256;
//! Default cap on free bytes a caching or stream-ordered pool keeps for reuse.
inline constexpr std::size_t default_retained_cap = std::size_t{256} << 20;

//! Options shared by the device resources.
struct device_memory_options {
  //! Free bytes kept for reuse (caching pool) / release threshold (stream-ordered pool).
  std::size_t retained_cap = default_retained_cap;
};

namespace detail {

inline error zero_byte_error(const char* context) noexcept {
  return error(errc::invalid_argument, context)
      .with("bytes", 0)
      .fix("request at least one byte (skip the allocation when there is nothing to store)");
}

inline expected<void> check_alignment(std::size_t alignment, const char* context) noexcept {
  if (alignment == 0 || !std::has_single_bit(alignment) || alignment > device_alignment)
    return fail(error(errc::invalid_argument, context)
                    .with("alignment", alignment)
                    .with("max_alignment", device_alignment)
                    .fix("pass a power of two no larger than 256"));
  return {};
}

//! Out-of-memory error naming the request, the policy and the device's free memory.
inline error device_oom(cudaError_t status, const char* context, std::size_t bytes) noexcept {
  std::size_t free_bytes = 0, total_bytes = 0;
  (void)cudaGetLastError();
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) (void)cudaGetLastError();
  return cuda_error(status, context)
      .with("bytes", bytes)
      .with("device_free_bytes", free_bytes)
      .with("device_total_bytes", total_bytes)
      .fix("free device memory (release pool caches with cleanup()), or split the work");
}

//! True (and the request fails as if the device were full) when the fault injector says so.
inline bool injected_device_fault() noexcept {
  return testing::inject_allocation_failure(testing::allocation_kind::device);
}

inline error unknown_pointer(const char* context, const void* ptr) noexcept {
  return error(errc::invalid_argument, context)
      .with("pointer", reinterpret_cast<std::uintptr_t>(ptr))
      .fix("free each pointer once, through the resource that allocated it");
}

//! Live allocations of a resource: pointer -> (requested bytes, held bytes).
struct live_block {
  std::size_t requested = 0;
  std::size_t held = 0;
};

//! Throws the error of a failed `expected` (the `cuda::mr` boundary).
template <class T>
T value_or_throw(expected<T>&& result) {
  if (!result) throw error_exception(result.error());
  if constexpr (!std::is_void_v<T>) return std::move(*result);
}

}  // namespace detail

//! Mixin giving a resource the `cuda::mr` interface on top of its `try_allocate` /
//! `try_deallocate` (CRTP). Synchronous calls use the legacy default stream, as RMM does.
template <class Derived>
class mr_interface {
 public:
  //! @throws error_exception on failure (zero bytes, bad alignment, out of memory).
  void* allocate(std::size_t bytes, std::size_t alignment = device_alignment) {
    return allocate_async(bytes, alignment, cuda::stream_ref(cudaStreamLegacy));
  }
  //! @pre no pending work uses `ptr`.
  void deallocate(void* ptr, std::size_t bytes, std::size_t alignment = device_alignment) {
    deallocate_async(ptr, bytes, alignment, cuda::stream_ref(cudaStreamLegacy));
  }
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    detail::value_or_throw(detail::check_alignment(alignment, Derived::alignment_context));
    return detail::value_or_throw(self().try_allocate(bytes, stream.get()));
  }
  void deallocate_async(void* ptr, std::size_t bytes, std::size_t /*alignment*/,
                        cuda::stream_ref stream) {
    detail::value_or_throw(self().try_deallocate(ptr, bytes, stream.get()));
  }
  //! Resources are stateful: equal only to themselves.
  friend bool operator==(const Derived& a, const Derived& b) noexcept { return &a == &b; }
  friend bool operator!=(const Derived& a, const Derived& b) noexcept { return &a != &b; }
#if VYRE_HAS_CUDA_MR
  friend constexpr void get_property(const Derived&, cuda::mr::device_accessible) noexcept {}
#endif

 private:
  Derived& self() noexcept {
    return static_cast<Derived&>(*this);
  }
};

//! `vyre::alloc::direct`: cudaMalloc and cudaFree (which synchronises the device), nothing kept.
class direct_resource : public mr_interface<direct_resource> {
 public:
  using policy = alloc::direct;
  static constexpr const char* policy_name = "alloc::direct";
  static constexpr const char* alignment_context = "alloc::direct: unsupported alignment";

  direct_resource(int ordinal, telemetry_counters* telemetry, device_memory_options = {}) noexcept
      : ordinal_(ordinal), telemetry_(telemetry) {}
  direct_resource(const direct_resource&) = delete;
  direct_resource& operator=(const direct_resource&) = delete;
  ~direct_resource() { (void)release_all(); }

  //! @returns `errc::invalid_argument` for zero bytes, `errc::out_of_memory` naming the bytes
  //!          and the policy when the device is full.
  expected<void*> try_allocate(std::size_t bytes, cudaStream_t /*stream*/) noexcept {
    if (bytes == 0) return fail(detail::zero_byte_error("alloc::direct: zero-byte request"));
    if (detail::injected_device_fault())
      return fail(detail::device_oom(cudaErrorMemoryAllocation,
                                     "alloc::direct: cudaMalloc failed (injected fault)", bytes));
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    void* ptr = nullptr;
    if (const cudaError_t status = cudaMalloc(&ptr, bytes); status != cudaSuccess)
      return fail(detail::device_oom(status, "alloc::direct: cudaMalloc failed", bytes));
    try {
      std::lock_guard lock(mutex_);
      live_.emplace(ptr, detail::live_block{bytes, bytes});
    } catch (...) {
      (void)cudaFree(ptr);  // std::bad_alloc from the map; the lock was released
      return fail(error(errc::out_of_memory, "alloc::direct: host bookkeeping allocation failed")
                      .with("bytes", bytes));
    }
    if (telemetry_ != nullptr) {
      telemetry_->record_pool_miss();
      telemetry_->record_allocation(bytes, bytes);
    }
    return ptr;
  }

  //! @returns `errc::invalid_argument` when `ptr` is not a live allocation of this resource.
  expected<void> try_deallocate(void* ptr, std::size_t /*bytes*/,
                                cudaStream_t /*stream*/) noexcept {
    detail::live_block block;
    {
      std::lock_guard lock(mutex_);
      const auto it = live_.find(ptr);
      if (it == live_.end())
        return fail(detail::unknown_pointer(
            "alloc::direct: pointer is not a live allocation of this resource", ptr));
      block = it->second;
      live_.erase(it);
    }
    if (telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaFree(ptr), "alloc::direct: cudaFree failed");
    return {};
  }

  //! Nothing is retained: a no-op kept for a uniform interface.
  expected<void> release_cached() noexcept { return {}; }
  std::size_t cached_bytes() const noexcept { return 0; }
  std::size_t live_allocations() const {
    std::lock_guard lock(mutex_);
    return live_.size();
  }
  int device() const noexcept { return ordinal_; }

  //! Frees every live allocation (backend teardown; leaked buffers become dangling).
  expected<void> release_all() noexcept {
    std::unordered_map<void*, detail::live_block> live;
    {
      std::lock_guard lock(mutex_);
      live.swap(live_);
    }
    detail::device_guard guard(ordinal_);
    expected<void> result;
    for (const auto& [ptr, block] : live) {
      if (telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
      if (const auto freed = cuda_check(cudaFree(ptr), "alloc::direct: cudaFree failed");
          !freed && result)
        result = freed;
    }
    return result;
  }

 private:
  int ordinal_;
  telemetry_counters* telemetry_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, detail::live_block> live_;
};

//! `vyre::alloc::caching_pool`: power-of-two size classes (256 B upwards) kept per stream.
//! Free lists are sharded by stream and the live-allocation table by pointer (16 shards
//! each, one mutex apiece), so threads that allocate on their own streams rarely meet.
class caching_pool_resource : public mr_interface<caching_pool_resource> {
 public:
  using policy = alloc::caching_pool;
  static constexpr const char* policy_name = "alloc::caching_pool";
  static constexpr const char* alignment_context = "alloc::caching_pool: unsupported alignment";
  static constexpr int min_class_log2 = 8;  // 256 bytes, the cudaMalloc alignment
  static constexpr std::size_t shard_count = 16;

  caching_pool_resource(int ordinal, telemetry_counters* telemetry,
                        device_memory_options options = {}) noexcept
      : ordinal_(ordinal), telemetry_(telemetry), retained_cap_(options.retained_cap) {}
  caching_pool_resource(const caching_pool_resource&) = delete;
  caching_pool_resource& operator=(const caching_pool_resource&) = delete;
  ~caching_pool_resource() { (void)release_all(); }

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
    if (is_class(held)) {
      if (void* ptr = take_cached(held, stream); ptr != nullptr) {
        if (!track(ptr, bytes, held)) {
          if (!give_back_to_cache(ptr, held, stream)) {
            forget(ptr);
            (void)cudaFree(ptr);
          }
          return fail(bookkeeping_error(bytes));
        }
        if (telemetry_ != nullptr) {
          telemetry_->record_pool_hit();
          telemetry_->record_allocation(bytes, held);
        }
        return ptr;
      }
    }
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
    if (!track(ptr, bytes, held)) {
      (void)cudaFree(ptr);
      return fail(bookkeeping_error(bytes));
    }
    if (telemetry_ != nullptr) {
      telemetry_->record_pool_miss();
      telemetry_->record_allocation(bytes, held);
    }
    return ptr;
  }

  //! Returns `ptr` to the pool; it is reused at once by allocations on `stream`.
  //! @pre `stream` stays alive while the pool caches blocks freed on it: call
  //!      `release_cached()` before destroying a stream of your own that you freed on (the
  //!      backend's stream leases are only destroyed after that).
  //! @returns `errc::invalid_argument` when `ptr` is not a live allocation of this resource.
  expected<void> try_deallocate(void* ptr, std::size_t /*bytes*/, cudaStream_t stream) noexcept {
    owned_block block;
    live_shard& shard = live_for(ptr);
    {
      std::lock_guard lock(shard.mutex);
      const auto it = shard.blocks.find(ptr);
      if (it == shard.blocks.end() || !it->second.live)
        return fail(detail::unknown_pointer(
            "alloc::caching_pool: pointer is not a live allocation of this resource", ptr));
      block = it->second;
      it->second.live = false;
      --shard.live_count;
    }
    if (telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
    if (is_class(block.held) && give_back_to_cache(ptr, block.held, stream)) return {};
    // Over the cap, uncacheable, or no room for bookkeeping: cudaFree synchronises the device,
    // so pending work that uses the block finishes first.
    forget(ptr);
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaFree(ptr), "alloc::caching_pool: cudaFree failed");
    return {};
  }

  //! Frees every cached (free) block; live allocations are untouched.
  expected<void> release_cached() noexcept {
    std::vector<void*> blocks;
    for (free_shard& shard : free_shards_) {
      std::lock_guard lock(shard.mutex);
      std::size_t released = 0;
      for (auto& [stream, classes] : shard.lists)
        for (std::size_t index = 0; index < classes.size(); ++index) {
          for (void* ptr : classes[index]) {
            try {
              blocks.push_back(ptr);
            } catch (...) {
              // No host memory to batch the frees: free this block now.
              forget(ptr);
              (void)cudaFree(ptr);
            }
            released += std::size_t{1} << index;
          }
        }
      shard.lists.clear();
      cached_bytes_.fetch_sub(released, std::memory_order_relaxed);
    }
    detail::device_guard guard(ordinal_);
    expected<void> result;
    for (void* ptr : blocks) {
      forget(ptr);
      if (auto freed = cuda_check(cudaFree(ptr), "alloc::caching_pool: cudaFree failed");
          !freed && result)
        result = freed;
    }
    return result;
  }

  //! Frees cached blocks and every live allocation (backend teardown).
  expected<void> release_all() noexcept {
    auto result = release_cached();
    detail::device_guard guard(ordinal_);
    for (live_shard& shard : live_shards_) {
      std::unordered_map<void*, owned_block> blocks;
      {
        std::lock_guard lock(shard.mutex);
        blocks.swap(shard.blocks);
        shard.live_count = 0;
      }
      for (const auto& [ptr, block] : blocks) {
        if (block.live && telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
        if (auto freed = cuda_check(cudaFree(ptr), "alloc::caching_pool: cudaFree failed");
            !freed && result)
          result = freed;
      }
    }
    return result;
  }

  //! Free bytes kept for reuse.
  std::size_t cached_bytes() const noexcept {
    return cached_bytes_.load(std::memory_order_relaxed);
  }
  std::size_t live_allocations() const {
    std::size_t n = 0;
    for (const live_shard& shard : live_shards_) {
      std::lock_guard lock(shard.mutex);
      n += shard.live_count;
    }
    return n;
  }
  std::size_t retained_cap() const noexcept { return retained_cap_; }
  int device() const noexcept { return ordinal_; }

 private:
  static constexpr int class_count = 64;
  using class_lists = std::vector<std::vector<void*>>;  // index: log2(class bytes)

  struct alignas(64) free_shard {
    mutable std::mutex mutex;
    std::unordered_map<cudaStream_t, class_lists> lists;
  };
  // Every block the pool owns, live or cached: a hit flips `live` without allocating a node.
  struct owned_block {
    std::size_t requested = 0;
    std::size_t held = 0;
    bool live = false;
  };
  struct alignas(64) live_shard {
    mutable std::mutex mutex;
    std::unordered_map<void*, owned_block> blocks;
    std::size_t live_count = 0;
  };

  static std::size_t shard_of(const void* p, int shift) noexcept {
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p)) >> shift;
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> 60) % shard_count;
  }
  free_shard& free_for(cudaStream_t stream) noexcept { return free_shards_[shard_of(stream, 4)]; }
  live_shard& live_for(const void* ptr) noexcept { return live_shards_[shard_of(ptr, 8)]; }

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
  static error bookkeeping_error(std::size_t bytes) noexcept {
    return error(errc::out_of_memory, "alloc::caching_pool: host bookkeeping allocation failed")
        .with("bytes", bytes)
        .fix("free host memory");
  }

  // Marks `ptr` live (a cached block already has its record: no allocation then).
  bool track(void* ptr, std::size_t bytes, std::size_t held) noexcept {
    live_shard& shard = live_for(ptr);
    std::lock_guard lock(shard.mutex);
    try {
      shard.blocks.insert_or_assign(ptr, owned_block{bytes, held, true});
      ++shard.live_count;
      return true;
    } catch (...) {
      return false;
    }
  }
  // Drops the record of a block about to be freed.
  void forget(void* ptr) noexcept {
    live_shard& shard = live_for(ptr);
    std::lock_guard lock(shard.mutex);
    shard.blocks.erase(ptr);
  }

  // Own stream first (no CUDA call); else a block freed on a stream that is now idle.
  void* take_cached(std::size_t held, cudaStream_t stream) noexcept {
    const std::size_t index = class_index(held);
    {
      free_shard& own = free_for(stream);
      std::lock_guard lock(own.mutex);
      if (const auto it = own.lists.find(stream); it != own.lists.end()) {
        auto& list = it->second[index];
        if (!list.empty()) return pop(list, held);
      }
    }
    for (free_shard& shard : free_shards_) {
      std::lock_guard lock(shard.mutex);
      for (auto& [other, classes] : shard.lists) {
        if (other == stream || classes[index].empty()) continue;
        // Querying a stream that another thread is capturing would invalidate its capture:
        // ask first (legal on a capturing stream) and leave such a stream's blocks alone.
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        if (cudaStreamIsCapturing(other, &capture) != cudaSuccess ||
            capture != cudaStreamCaptureStatusNone) {
          (void)cudaGetLastError();
          continue;
        }
        if (cudaStreamQuery(other) == cudaSuccess) return pop(classes[index], held);
        (void)cudaGetLastError();  // cudaErrorNotReady is not an error worth keeping
      }
    }
    return nullptr;
  }
  void* pop(std::vector<void*>& list, std::size_t held) noexcept {
    void* ptr = list.back();
    list.pop_back();
    cached_bytes_.fetch_sub(held, std::memory_order_relaxed);
    return ptr;
  }
  // False when the retained cap is reached or bookkeeping memory ran out (the caller frees).
  bool give_back_to_cache(void* ptr, std::size_t held, cudaStream_t stream) noexcept {
    std::size_t cached = cached_bytes_.load(std::memory_order_relaxed);
    do {
      if (held > retained_cap_ || cached > retained_cap_ - held) return false;
    } while (
        !cached_bytes_.compare_exchange_weak(cached, cached + held, std::memory_order_relaxed));
    free_shard& shard = free_for(stream);
    std::lock_guard lock(shard.mutex);
    try {
      auto& classes = shard.lists[stream];
      if (classes.empty()) classes.resize(class_count);
      classes[class_index(held)].push_back(ptr);
      return true;
    } catch (...) {
      cached_bytes_.fetch_sub(held, std::memory_order_relaxed);
      return false;
    }
  }

  int ordinal_;
  telemetry_counters* telemetry_;
  std::size_t retained_cap_;
  std::atomic<std::size_t> cached_bytes_{0};
  free_shard free_shards_[shard_count];
  live_shard live_shards_[shard_count];
};

//! `vyre::alloc::stream_ordered`: a dedicated `cudaMemPool_t` driven by
//! cudaMallocFromPoolAsync / cudaFreeAsync. Pool hits are counted when the pool's reserved
//! memory did not grow for an allocation.
class stream_ordered_resource : public mr_interface<stream_ordered_resource> {
 public:
  using policy = alloc::stream_ordered;
  static constexpr const char* policy_name = "alloc::stream_ordered";
  static constexpr const char* alignment_context = "alloc::stream_ordered: unsupported alignment";

  //! Creates the pool. Check `status()` (a pool the device cannot create leaves it unusable).
  stream_ordered_resource(int ordinal, telemetry_counters* telemetry,
                          device_memory_options options = {}) noexcept
      : ordinal_(ordinal), telemetry_(telemetry), retained_cap_(options.retained_cap) {
    status_ = create();
  }
  stream_ordered_resource(const stream_ordered_resource&) = delete;
  stream_ordered_resource& operator=(const stream_ordered_resource&) = delete;
  ~stream_ordered_resource() {
    (void)release_all();
    if (pool_ != nullptr) (void)cudaMemPoolDestroy(pool_);
  }

  //! Whether the pool was created.
  const expected<void>& status() const noexcept { return status_; }
  cudaMemPool_t pool() const noexcept { return pool_; }

  //! @returns `errc::invalid_argument` for zero bytes, `errc::out_of_memory` naming the bytes
  //!          and the policy when the device is full.
  expected<void*> try_allocate(std::size_t bytes, cudaStream_t stream) noexcept {
    VYRE_TRY(status_);
    if (bytes == 0)
      return fail(detail::zero_byte_error("alloc::stream_ordered: zero-byte request"));
    if (detail::injected_device_fault())
      return fail(detail::device_oom(
          cudaErrorMemoryAllocation,
          "alloc::stream_ordered: cudaMallocFromPoolAsync failed (injected fault)", bytes));
    void* ptr = nullptr;
    if (const cudaError_t status = cudaMallocFromPoolAsync(&ptr, bytes, pool_, stream);
        status != cudaSuccess)
      return fail(detail::device_oom(
          status, "alloc::stream_ordered: cudaMallocFromPoolAsync failed", bytes));
    bool grew = false;
    {
      std::lock_guard lock(mutex_);
      try {
        live_.emplace(ptr, detail::live_block{bytes, bytes});
      } catch (...) {
        (void)cudaFreeAsync(ptr, stream);
        return fail(
            error(errc::out_of_memory, "alloc::stream_ordered: host bookkeeping allocation failed")
                .with("bytes", bytes));
      }
      std::uint64_t reserved = 0;
      if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) ==
          cudaSuccess) {
        grew = reserved > last_reserved_;
        last_reserved_ = reserved;
      }
    }
    if (telemetry_ != nullptr) {
      if (grew)
        telemetry_->record_pool_miss();
      else
        telemetry_->record_pool_hit();
      telemetry_->record_allocation(bytes, bytes);
    }
    return ptr;
  }

  //! cudaFreeAsync on `stream`.
  //! @returns `errc::invalid_argument` when `ptr` is not a live allocation of this resource.
  expected<void> try_deallocate(void* ptr, std::size_t /*bytes*/, cudaStream_t stream) noexcept {
    detail::live_block block;
    {
      std::lock_guard lock(mutex_);
      const auto it = live_.find(ptr);
      if (it == live_.end())
        return fail(detail::unknown_pointer(
            "alloc::stream_ordered: pointer is not a live allocation of this resource", ptr));
      block = it->second;
      live_.erase(it);
    }
    if (telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
    VYRE_CUDA_TRY(cudaFreeAsync(ptr, stream), "alloc::stream_ordered: cudaFreeAsync failed");
    return {};
  }

  //! Shrinks the pool's reserve to at most `keep_bytes` (memory of completed frees only).
  expected<void> trim(std::size_t keep_bytes = 0) noexcept {
    VYRE_TRY(status_);
    VYRE_CUDA_TRY(cudaMemPoolTrimTo(pool_, keep_bytes), "alloc::stream_ordered: trim failed");
    std::lock_guard lock(mutex_);
    std::uint64_t reserved = 0;
    if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) == cudaSuccess)
      last_reserved_ = reserved;
    return {};
  }
  //! Waits for this device's pending frees, then trims the reserve to zero.
  expected<void> release_cached() noexcept {
    VYRE_TRY(status_);
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaDeviceSynchronize(), "alloc::stream_ordered: synchronise before trim");
    return trim(0);
  }
  //! Frees every live allocation and releases the reserve (backend teardown).
  expected<void> release_all() noexcept {
    if (!status_) return {};
    std::unordered_map<void*, detail::live_block> live;
    {
      std::lock_guard lock(mutex_);
      live.swap(live_);
    }
    expected<void> result;
    for (const auto& [ptr, block] : live) {
      if (telemetry_ != nullptr) telemetry_->record_deallocation(block.held);
      if (auto freed = cuda_check(cudaFreeAsync(ptr, cudaStreamLegacy),
                                  "alloc::stream_ordered: cudaFreeAsync failed");
          !freed && result)
        result = freed;
    }
    if (auto released = release_cached(); !released && result) result = released;
    return result;
  }

  std::size_t cached_bytes() const noexcept {
    std::uint64_t reserved = 0, used = 0;
    if (pool_ == nullptr ||
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &reserved) !=
            cudaSuccess ||
        cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess)
      return 0;
    return static_cast<std::size_t>(reserved - used);
  }
  std::size_t live_allocations() const {
    std::lock_guard lock(mutex_);
    return live_.size();
  }
  std::size_t retained_cap() const noexcept { return retained_cap_; }
  int device() const noexcept { return ordinal_; }

 private:
  expected<void> create() noexcept {
    int supported = 0;
    VYRE_CUDA_TRY(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, ordinal_),
                  "alloc::stream_ordered: querying memory pool support failed");
    if (supported == 0)
      return fail(error(errc::unsupported,
                        "alloc::stream_ordered: the device does not support memory pools")
                      .with("device", static_cast<std::uint64_t>(ordinal_))
                      .fix("use vyre::alloc::caching_pool or vyre::alloc::direct"));
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.handleTypes = cudaMemHandleTypeNone;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = ordinal_;
    VYRE_CUDA_TRY(cudaMemPoolCreate(&pool_, &props),
                  "alloc::stream_ordered: cudaMemPoolCreate failed");
    // Keep up to retained_cap free bytes across synchronisations instead of the default 0,
    // which would hand memory back to the OS at every sync and make most allocations misses.
    std::uint64_t threshold = retained_cap_;
    VYRE_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold),
                  "alloc::stream_ordered: setting the release threshold failed");
    return {};
  }

  int ordinal_;
  telemetry_counters* telemetry_;
  std::size_t retained_cap_;
  cudaMemPool_t pool_ = nullptr;
  expected<void> status_;
  mutable std::mutex mutex_;
  std::uint64_t last_reserved_ = 0;
  std::unordered_map<void*, detail::live_block> live_;
};

//! The resource type of an allocation policy.
template <class Alloc>
struct resource_for;
template <>
struct resource_for<alloc::caching_pool> {
  using type = caching_pool_resource;
};
template <>
struct resource_for<alloc::stream_ordered> {
  using type = stream_ordered_resource;
};
template <>
struct resource_for<alloc::direct> {
  using type = direct_resource;
};
template <class Alloc>
using resource_for_t = typename resource_for<Alloc>::type;

#if VYRE_HAS_CUDA_MR
static_assert(cuda::mr::async_resource_with<caching_pool_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::async_resource_with<stream_ordered_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::async_resource_with<direct_resource, cuda::mr::device_accessible>);
#endif

//! A non-owning, type-erased reference to one of vyre's device resources (or any type with
//! the same `try_allocate`/`try_deallocate`). Trivially copyable.
class device_resource_ref {
 public:
  //! An empty reference (refers to no resource; `operator bool` is false).
  device_resource_ref() noexcept = default;
  template <class Resource>
  requires(!std::is_same_v<std::remove_cv_t<Resource>, device_resource_ref>) &&
      requires(Resource& r, void* p, std::size_t n, cudaStream_t s) {
    { r.try_allocate(n, s) } -> std::same_as<expected<void*>>;
    { r.try_deallocate(p, n, s) } -> std::same_as<expected<void>>;
  }
  device_resource_ref(Resource& resource) noexcept  // NOLINT: implicit, like cuda::mr refs
      : self_(&resource),
        allocate_([](void* self, std::size_t bytes, cudaStream_t stream) noexcept {
          return static_cast<Resource*>(self)->try_allocate(bytes, stream);
        }),
        deallocate_([](void* self, void* ptr, std::size_t bytes, cudaStream_t stream) noexcept {
          return static_cast<Resource*>(self)->try_deallocate(ptr, bytes, stream);
        }),
        policy_name_(Resource::policy_name) {}

  expected<void*> try_allocate(std::size_t bytes, cudaStream_t stream) const noexcept {
    return allocate_(self_, bytes, stream);
  }
  expected<void> try_deallocate(void* ptr, std::size_t bytes, cudaStream_t stream) const noexcept {
    return deallocate_(self_, ptr, bytes, stream);
  }
  const char* policy_name() const noexcept { return policy_name_; }
  explicit operator bool() const noexcept { return self_ != nullptr; }
  friend bool operator==(const device_resource_ref& a, const device_resource_ref& b) noexcept {
    return a.self_ == b.self_;
  }

 private:
  void* self_ = nullptr;
  expected<void*> (*allocate_)(void*, std::size_t, cudaStream_t) noexcept = nullptr;
  expected<void> (*deallocate_)(void*, void*, std::size_t, cudaStream_t) noexcept = nullptr;
  const char* policy_name_ = nullptr;
};

//! An owned device allocation (move-only RAII): returned to its resource on destruction, on
//! the stream it was allocated on.
class device_buffer {
 public:
  device_buffer() noexcept = default;
  device_buffer(device_resource_ref resource, void* ptr, std::size_t bytes,
                cudaStream_t stream) noexcept
      : resource_(resource), ptr_(ptr), bytes_(bytes), stream_(stream) {}
  device_buffer(device_buffer&& other) noexcept
      : resource_(other.resource_),
        ptr_(std::exchange(other.ptr_, nullptr)),
        bytes_(std::exchange(other.bytes_, 0)),
        stream_(other.stream_) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      (void)reset();
      resource_ = other.resource_;
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { (void)reset(); }

  void* get() const noexcept { return ptr_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(ptr_);
  }
  std::size_t size() const noexcept { return bytes_; }
  cudaStream_t stream() const noexcept { return stream_; }
  explicit operator bool() const noexcept { return ptr_ != nullptr; }
  //! Gives up ownership; the caller must return the pointer to the resource itself.
  void* release() noexcept {
    bytes_ = 0;
    return std::exchange(ptr_, nullptr);
  }
  //! Returns the memory to its resource now (reused at once on `stream()`).
  expected<void> reset() noexcept {
    if (ptr_ == nullptr || !resource_) return {};
    void* ptr = std::exchange(ptr_, nullptr);
    return resource_.try_deallocate(ptr, std::exchange(bytes_, 0), stream_);
  }

 private:
  device_resource_ref resource_;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace vyre
