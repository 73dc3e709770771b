// SPDX-License-Identifier: Apache-2.0
//! @file
//! A pool of portable pinned host memory for staging uploads and downloads: power-of-two size
//! classes (4 KiB upwards), at most `retained_cap` free bytes kept (default 128 MiB), leases
//! that return their block on destruction.
//!
//! @note A lease must outlive every asynchronous copy that reads or writes its memory: wait
//!       for the copy (event or stream synchronisation) before the lease ends.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/runtime/detail/read_locked.hpp"

namespace vyre {

inline constexpr std::size_t default_pinned_retained_cap = std::size_t{128} << 20;

class pinned_pool;

//! A leased pinned host block of at least `size()` bytes (move-only RAII).
class pinned_lease {
 public:
  pinned_lease() noexcept = default;
  pinned_lease(pinned_lease&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)),
        data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  pinned_lease& operator=(pinned_lease&& other) noexcept {
    if (this != &other) {
      reset();
      pool_ = std::exchange(other.pool_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      capacity_ = std::exchange(other.capacity_, 0);
    }
    return *this;
  }
  pinned_lease(const pinned_lease&) = delete;
  pinned_lease& operator=(const pinned_lease&) = delete;
  ~pinned_lease() { reset(); }

  std::byte* data() const noexcept { return data_; }
  //! The bytes asked for.
  std::size_t size() const noexcept { return size_; }
  //! The bytes of the block (its size class), at least `size()`.
  std::size_t capacity() const noexcept { return capacity_; }
  std::span<std::byte> bytes() const noexcept { return {data_, size_}; }
  explicit operator bool() const noexcept { return data_ != nullptr; }
  //! Returns the block to the pool now.
  //! @pre no pending asynchronous copy uses the block.
  inline void reset() noexcept;

 private:
  friend class pinned_pool;
  pinned_lease(pinned_pool* pool, std::byte* data, std::size_t size, std::size_t capacity) noexcept
      : pool_(pool), data_(data), size_(size), capacity_(capacity) {}
  pinned_pool* pool_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

//! Pool of portable pinned host memory (thread-safe). Hits and misses are counted.
class pinned_pool {
 public:
  static constexpr std::size_t min_class = 4096;

  explicit pinned_pool(std::size_t retained_cap = default_pinned_retained_cap) noexcept
      : retained_cap_(retained_cap) {}
  pinned_pool(const pinned_pool&) = delete;
  pinned_pool& operator=(const pinned_pool&) = delete;
  ~pinned_pool() { (void)release_cached(); }

  //! A block of at least `bytes` bytes.
  //! @returns `errc::invalid_argument` for zero bytes, `errc::out_of_memory` naming the bytes
  //!          when pinned memory cannot be had even after releasing the cache.
  expected<pinned_lease> acquire(std::size_t bytes) noexcept {
    if (bytes == 0)
      return fail(error(errc::invalid_argument, "pinned_pool: zero-byte request")
                      .with("bytes", 0)
                      .fix("request at least one byte"));
    if (bytes > (std::size_t{1} << 62))
      return fail(
          error(errc::out_of_memory, "pinned_pool: request too large").with("bytes", bytes));
    const std::size_t cls = std::bit_ceil((std::max)(bytes, min_class));
    if (testing::inject_allocation_failure(testing::allocation_kind::pinned))
      return fail(cuda_error(cudaErrorMemoryAllocation,
                             "pinned_pool: cudaHostAlloc failed (injected fault)")
                      .with("bytes", bytes)
                      .with("class_bytes", cls)
                      .fix("free pinned host memory, or stage in smaller chunks"));
    const std::size_t index = static_cast<std::size_t>(std::countr_zero(cls));
    {
      std::lock_guard lock(mutex_);
      if (index < free_.size() && !free_[index].empty()) {
        std::byte* data = free_[index].back();
        free_[index].pop_back();
        cached_bytes_ -= cls;
        ++hits_;
        ++leased_;
        return pinned_lease(this, data, bytes, cls);
      }
      ++misses_;
    }
    void* data = nullptr;
    cudaError_t status = cudaHostAlloc(&data, cls, cudaHostAllocPortable);
    if (status != cudaSuccess) {
      (void)cudaGetLastError();
      (void)release_cached();
      status = cudaHostAlloc(&data, cls, cudaHostAllocPortable);
    }
    if (status != cudaSuccess)
      return fail(cuda_error(status, "pinned_pool: cudaHostAlloc failed")
                      .with("bytes", bytes)
                      .with("class_bytes", cls)
                      .fix("free pinned host memory, or stage in smaller chunks"));
    {
      std::lock_guard lock(mutex_);
      ++leased_;
    }
    return pinned_lease(this, static_cast<std::byte*>(data), bytes, cls);
  }

  //! Frees every cached block (leased blocks are untouched).
  expected<void> release_cached() noexcept {
    std::vector<std::vector<std::byte*>> lists;
    {
      std::lock_guard lock(mutex_);
      lists.swap(free_);
      cached_bytes_ = 0;
    }
    expected<void> result;
    for (auto& list : lists)
      for (std::byte* p : list)
        if (auto freed = cuda_check(cudaFreeHost(p), "pinned_pool: cudaFreeHost failed");
            !freed && result)
          result = freed;
    return result;
  }

  std::size_t cached_bytes() const { return detail::read_locked(mutex_, cached_bytes_); }
  std::uint64_t hits() const { return detail::read_locked(mutex_, hits_); }
  std::uint64_t misses() const { return detail::read_locked(mutex_, misses_); }
  std::size_t retained_cap() const noexcept { return retained_cap_; }
  //! Blocks currently leased out (not yet returned): 0 when nothing holds staging memory.
  std::size_t leased_blocks() const { return detail::read_locked(mutex_, leased_); }

 private:
  friend class pinned_lease;
  void give_back(std::byte* data, std::size_t cls) noexcept {
    {
      std::lock_guard lock(mutex_);
      --leased_;
      if (cached_bytes_ + cls <= retained_cap_) {
        try {
          const std::size_t index = static_cast<std::size_t>(std::countr_zero(cls));
          if (free_.size() <= index) free_.resize(index + 1);
          free_[index].push_back(data);
          cached_bytes_ += cls;
          return;
        } catch (...) {
          // No host memory for the bookkeeping: free the block instead.
        }
      }
    }
    (void)cudaFreeHost(data);
  }

  std::size_t retained_cap_;
  mutable std::mutex mutex_;
  std::size_t cached_bytes_ = 0;
  std::uint64_t hits_ = 0;
  std::uint64_t misses_ = 0;
  std::size_t leased_ = 0;
  std::vector<std::vector<std::byte*>> free_;  // index: log2(class bytes)
};

inline void pinned_lease::reset() noexcept {
  if (pool_ == nullptr) return;
  std::exchange(pool_, nullptr)->give_back(std::exchange(data_, nullptr), capacity_);
  size_ = 0;
  capacity_ = 0;
}

}  // namespace vyre
