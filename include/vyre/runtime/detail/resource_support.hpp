// SPDX-License-Identifier: Apache-2.0
//! @file
//! What every device resource shares: alignment, options, the errors they report, and the
//! `cuda::mr` interface mixin. Include `vyre/runtime/memory.hpp` instead.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/stream_ref>
#if defined(LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE)
#include <cuda/memory_resource>
#endif

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"

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
using live_map = std::unordered_map<void*, live_block>;

//! Takes `ptr` out of `live` (under `mutex`) and returns its block: the check of every free.
//! @returns `unknown_pointer(context, ptr)` when `ptr` is not live (foreign, or freed already).
inline expected<live_block> take_live_block(std::mutex& mutex, live_map& live, void* ptr,
                                            const char* context) noexcept {
  std::lock_guard lock(mutex);
  const auto it = live.find(ptr);
  if (it == live.end()) return fail(unknown_pointer(context, ptr));
  const live_block block = it->second;
  live.erase(it);
  return block;
}

//! Takes every entry out of `live` (under `mutex`): what a resource frees at teardown.
inline live_map take_all_live(std::mutex& mutex, live_map& live) noexcept {
  live_map all;
  std::lock_guard lock(mutex);
  all.swap(live);
  return all;
}

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

}  // namespace vyre
