// SPDX-License-Identifier: Apache-2.0
//! @file
//! Large zero-filled host arrays whose pages the kernel hands out already zero: the hash
//! indexes of the JSON loader and of the CPU engine's tables. A fresh anonymous mapping needs no
//! memset, so growing an index of a gigabyte costs no serial pass over it; its pages fault in as
//! the threads that fill it first touch them, 2 MiB at a time where Linux grants transparent
//! huge pages. Plain C++20 (compiles with g++ alone).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vyre::detail {

//! Asks Linux to back the 2 MiB-aligned part of [data, data + bytes) with transparent huge pages
//! when it is first touched (advice only: ignored elsewhere, for small ranges or when refused).
//! Freshly faulted 4 KiB pages cost the loaders a large share of their time on big inputs.
inline void advise_huge_pages(const void* data, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) & ~(huge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(huge - 1);
  if (data != nullptr && end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

//! `advise_huge_pages` over the capacity of `v`.
template <class Vector>
void advise_huge_pages(const Vector& v) noexcept {
  advise_huge_pages(v.data(), v.capacity() * sizeof(typename Vector::value_type));
}

//! Makes room in `v` for `need` elements: past its capacity, it moves to a fresh allocation
//! of at least twice the capacity, advised as huge pages before the copy touches it (a large
//! vector's growth otherwise faults its new memory in 4 KiB at a time).
template <class Vector>
void reserve_on_huge_pages(Vector& v, std::size_t need) {
  if (need <= v.capacity()) return;
  Vector grown;
  grown.reserve((std::max)(need, 2 * v.capacity()));
  advise_huge_pages(grown);
  grown.insert(grown.end(), v.begin(), v.end());
  v.swap(grown);
}

//! Allocations of at least this many bytes get an anonymous mapping of their own; smaller ones
//! come from `operator new` and are zeroed (they are small enough that it does not matter).
inline constexpr std::size_t zero_pages_mapped_bytes = std::size_t{2} << 20;

//! `bytes` zero bytes, 64-byte aligned at least, or null when they cannot be had. Release with
//! `release_zero_pages(p, bytes)`.
inline void* allocate_zero_pages(std::size_t bytes) noexcept {
  if (bytes == 0) bytes = 1;
#if defined(__linux__)
  if (bytes >= zero_pages_mapped_bytes) {
    void* memory =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) return nullptr;
    advise_huge_pages(memory, bytes);
    return memory;
  }
#endif
  void* memory = ::operator new (bytes, std::align_val_t{64}, std::nothrow);
  if (memory != nullptr) std::memset(memory, 0, bytes);
  return memory;
}

//! Releases what `allocate_zero_pages(bytes)` gave.
inline void release_zero_pages(void* memory, std::size_t bytes) noexcept {
  if (memory == nullptr) return;
  if (bytes == 0) bytes = 1;
#if defined(__linux__)
  if (bytes >= zero_pages_mapped_bytes) {
    ::munmap(memory, bytes);
    return;
  }
#endif
  ::operator delete (memory, std::align_val_t{64});
}

//! A standard allocator over `allocate_zero_pages`, for a `std::vector` of a trivial `T` whose
//! every element starts as zero: value-initialization writes nothing, the memory is zero
//! already. So `v.resize(n)` of an empty vector costs no pass over its elements; growing one
//! that holds elements within its capacity would leave the old tail, so the owner replaces the
//! vector instead (`std::vector<T, zero_page_allocator<T>>(n)`). Throws `std::bad_alloc` as
//! `std::allocator` does.
template <class T>
struct zero_page_allocator {
  using value_type = T;
  zero_page_allocator() noexcept = default;
  template <class U>
  zero_page_allocator(const zero_page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_alloc();
    void* memory = allocate_zero_pages(n * sizeof(T));
    if (memory == nullptr) throw std::bad_alloc();
    return static_cast<T*>(memory);
  }
  void deallocate(T* p, std::size_t n) noexcept { release_zero_pages(p, n * sizeof(T)); }

  //! Value-initialization of memory this allocator gave: it is zero already.
  template <class U>
  void construct(U*) noexcept {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <class U>
  bool operator==(const zero_page_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace vyre::detail
