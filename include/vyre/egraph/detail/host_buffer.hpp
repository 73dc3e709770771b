// SPDX-License-Identifier: Apache-2.0
//! @file
//! Uninitialized, fallible host arrays for packing: image words and grouping scratch. Large ones
//! are 2 MiB aligned and, on Linux, advised as transparent huge pages: with 4 KiB pages the
//! first-touch page faults of a fresh multi-hundred-MiB buffer cost about as much as packing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"

namespace vyre::egraph::detail {

struct free_memory {
  void operator()(void* memory) const noexcept { std::free(memory); }
};

//! `count` uninitialized `T`s, or `errc::out_of_memory` naming `what`.
template <class T>
expected<std::unique_ptr<T[], free_memory>> allocate_uninitialized(std::uint64_t count,
                                                                   const char* what) noexcept {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);
  using storage = std::unique_ptr<T[], free_memory>;
  if (count == 0) return storage();
  constexpr std::uint64_t huge_page = std::uint64_t{2} << 20;
  void* memory = nullptr;
  const bool representable = count <= (SIZE_MAX - huge_page) / sizeof(T);
  const std::uint64_t bytes = representable ? count * sizeof(T) : UINT64_MAX;
  // The fault-injection seam (vyre/core/fault_injection.hpp) fails this like a full heap.
  if (representable && !testing::inject_allocation_failure(testing::allocation_kind::host)) {
    if (bytes >= huge_page) {
      const std::uint64_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
      memory = std::aligned_alloc(static_cast<std::size_t>(huge_page),
                                  static_cast<std::size_t>(rounded));
#if defined(__linux__)
      if (memory != nullptr)
        (void)::madvise(memory, static_cast<std::size_t>(rounded), MADV_HUGEPAGE);
#endif
    } else {
      memory = std::malloc(static_cast<std::size_t>(bytes));
    }
  }
  if (memory == nullptr)
    return fail(error(errc::out_of_memory, what)
                    .with("elements", count)
                    .with("bytes", bytes)
                    .fix("free host memory, pack into caller memory (pack_into), or shard the "
                         "snapshot"));
  return storage(static_cast<T*>(memory));
}

//! A fixed-size uninitialized array (move-only): what `std::vector` would be without the
//! zeroing pass.
template <class T>
class raw_array {
 public:
  // Out-of-line special members: members defaulted in the class would be inferred
  // __host__ __device__ by nvcc (through cuda::std::expected) and call host-only unique_ptr.
  raw_array() noexcept;
  ~raw_array();
  raw_array(raw_array&&) noexcept;
  raw_array& operator=(raw_array&&) noexcept;
  static expected<raw_array> allocate(std::uint64_t count, const char* what) noexcept {
    VYRE_TRY_ASSIGN(auto storage, allocate_uninitialized<T>(count, what));
    raw_array result;
    result.data_ = std::move(storage);
    result.size_ = static_cast<std::size_t>(count);
    return result;
  }
  T* data() noexcept { return data_.get(); }
  const T* data() const noexcept { return data_.get(); }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data(); }
  T* end() noexcept { return data() + size_; }
  const T* begin() const noexcept { return data(); }
  const T* end() const noexcept { return data() + size_; }
  void swap(raw_array& other) noexcept {
    data_.swap(other.data_);
    std::swap(size_, other.size_);
  }
  void clear() noexcept {
    data_.reset();
    size_ = 0;
  }

 private:
  std::unique_ptr<T[], free_memory> data_;
  std::size_t size_ = 0;
};

// Written out (not `= default`): nvcc infers the execution space of defaulted members of a
// class template even when they are defaulted out of line.
template <class T>
raw_array<T>::raw_array() noexcept {}
template <class T>
raw_array<T>::~raw_array() {}
template <class T>
raw_array<T>::raw_array(raw_array&& other) noexcept
    : data_(std::move(other.data_)), size_(std::exchange(other.size_, 0)) {}
template <class T>
raw_array<T>& raw_array<T>::operator=(raw_array&& other) noexcept {
  data_ = std::move(other.data_);
  size_ = std::exchange(other.size_, 0);
  return *this;
}

}  // namespace vyre::egraph::detail
