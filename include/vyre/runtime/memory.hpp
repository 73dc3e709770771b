// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device memory, one resource per allocation policy (`vyre::alloc::*`):
//!
//! - `caching_pool_resource` (`vyre/runtime/caching_pool.hpp`): power-of-two size classes kept
//!   per stream; a freed block is reused at once on the stream that freed it (stream order
//!   makes that safe) and by another stream only after an event recorded behind the free has
//!   completed; retains at most `retained_cap` free bytes (default 256 MiB). A hit makes no
//!   CUDA call and takes one uncontended spin lock.
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

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/caching_pool.hpp"
#include "vyre/runtime/detail/resource_support.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

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
    VYRE_TRY_ASSIGN(block, detail::take_live_block(
                               mutex_, live_, ptr,
                               "alloc::direct: pointer is not a live allocation of this resource"));
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
    const detail::live_map live = detail::take_all_live(mutex_, live_);
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
  detail::live_map live_;
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
    VYRE_TRY_ASSIGN(
        block, detail::take_live_block(
                   mutex_, live_, ptr,
                   "alloc::stream_ordered: pointer is not a live allocation of this resource"));
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
    const detail::live_map live = detail::take_all_live(mutex_, live_);
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
  detail::live_map live_;
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

//! A resource that hands one caller-owned device block to every request that fits; frees do
//! nothing. For work on one stream whose scratch users run one after another (CUB calls), and
//! above all for such work captured into a graph: the graph replays long after a pool would
//! have given the memory to someone else, so its scratch must be a block it keeps. Size the
//! block by the largest request (CUB's size query with a null pointer). Trivially copyable.
class scratch_block_resource {
 public:
  static constexpr const char* policy_name = "scratch_block";

  scratch_block_resource(void* block, std::size_t bytes) noexcept : block_(block), bytes_(bytes) {}

  //! The block, or `errc::out_of_memory` naming both sizes when `bytes` exceeds it.
  expected<void*> try_allocate(std::size_t bytes, cudaStream_t /*stream*/) const noexcept {
    if (bytes <= bytes_ && block_ != nullptr) return block_;
    return fail(error(errc::out_of_memory, "scratch_block_resource: request larger than the block")
                    .with("bytes", bytes)
                    .with("block_bytes", bytes_)
                    .fix("size the block by the largest request of the work it serves"));
  }
  expected<void> try_deallocate(void* /*ptr*/, std::size_t /*bytes*/,
                                cudaStream_t /*stream*/) const noexcept {
    return {};
  }

 private:
  void* block_ = nullptr;
  std::size_t bytes_ = 0;
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
