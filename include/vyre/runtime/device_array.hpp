// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::device_array<T>`: a typed, move-only array of `T` in device memory, over the untyped
//! `vyre::device_buffer` of a device resource (the backend's allocation policy: caching pool,
//! stream-ordered pool or direct). Memory is returned to the resource on destruction, on the
//! stream it was allocated on; zero elements allocate nothing.
//!
//!     VYRE_TRY_ASSIGN(auto ids, vyre::device_array<std::uint32_t>::allocate(
//!                                   gpu.memory_ref(), rows, stream, "my pass: row ids"));
//!     my_kernel<<<blocks, 256, 0, stream>>>(ids.get(), ids.size());
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/error.hpp"
#include "vyre/runtime/memory.hpp"

namespace vyre {

//! A typed device array from a `device_resource_ref` (move-only RAII).
template <class T>
class device_array {
 public:
  device_array() noexcept = default;
  device_array(std::nullptr_t) = delete;
  // User-provided (not defaulted): nvcc would otherwise infer __host__ __device__ special
  // members for a type held in cuda::std::expected and reject the host-only buffer's.
  device_array(device_array&& other) noexcept
      : buffer_(std::move(other.buffer_)), count_(std::exchange(other.count_, 0)) {}
  device_array& operator=(device_array&& other) noexcept {
    if (this != &other) {
      buffer_ = std::move(other.buffer_);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  ~device_array() {}  // NOLINT(modernize-use-equals-default): see the move constructor

  //! `count` elements (uninitialised) from `resource`, ready for work ordered after this call
  //! on `stream`.
  //! @param what static text naming the array, carried by the error.
  //! @returns `errc::overflow` when the bytes overflow size_t, the resource's error
  //!          (`errc::out_of_memory` naming the bytes) when it has no memory.
  static expected<device_array> allocate(device_resource_ref resource, std::size_t count,
                                         cudaStream_t stream, const char* what) noexcept {
    device_array array;
    if (count == 0) return array;
    if (count > SIZE_MAX / sizeof(T))
      return fail(error(errc::overflow, what)
                      .with("elements", count)
                      .fix("the array size overflows size_t: process the input in smaller shards"));
    auto ptr = resource.try_allocate(count * sizeof(T), stream);
    if (!ptr) {
      error reported = ptr.error();
      return fail(reported.about(what).with("elements", count));
    }
    array.buffer_ = device_buffer(resource, *ptr, count * sizeof(T), stream);
    array.count_ = count;
    return array;
  }

  T* get() const noexcept { return buffer_.template as<T>(); }
  //! Elements.
  std::size_t size() const noexcept { return count_; }
  std::size_t size_bytes() const noexcept { return count_ * sizeof(T); }
  bool empty() const noexcept { return count_ == 0; }
  cudaStream_t stream() const noexcept { return buffer_.stream(); }
  //! Returns the memory to its resource now.
  expected<void> reset() noexcept {
    count_ = 0;
    return buffer_.reset();
  }

 private:
  device_buffer buffer_;
  std::size_t count_ = 0;
};

}  // namespace vyre
