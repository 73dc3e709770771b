// SPDX-License-Identifier: Apache-2.0
//! @file
//! The caching pool's records of its device blocks, and the ledger of its retained cap.
//! Host-only.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace vyre::detail {

//! One device block the caching pool owns, live or cached. A cache line each: threads flip
//! `live` on their own blocks without false sharing.
struct alignas(64) pool_block {
  std::atomic<void*> ptr{nullptr};
  std::size_t held = 0;
  bool cacheable = false;  // a size class the pool keeps
  std::atomic<bool> live{false};
};

//! The size classes: powers of two, indexed by log2 of their bytes.
inline constexpr std::size_t pool_class_count = 64;
inline std::size_t pool_class_index(std::size_t held) noexcept {
  return static_cast<std::size_t>(std::countr_zero(held));
}

//! Owns every `pool_block`. Records are recycled, never freed before the owner, so a lock-free
//! reader holding a stale one reads valid (if unrelated) memory.
class pool_block_records {
 public:
  //! A spare record or a new one; null only without host memory.
  pool_block* acquire() noexcept {
    std::lock_guard lock(mutex_);
    if (!spare_.empty()) {
      pool_block* b = spare_.back();
      spare_.pop_back();
      return b;
    }
    try {
      spare_.reserve(records_.size() + 1);  // so `recycle` never allocates
      records_.push_back(std::make_unique<pool_block>());
      return records_.back().get();
    } catch (...) {
      return nullptr;
    }
  }
  //! Takes `b` back for a later `acquire`. Never allocates.
  void recycle(pool_block* b) noexcept {
    std::lock_guard lock(mutex_);
    b->live.store(false, std::memory_order_relaxed);
    spare_.push_back(b);  // capacity reserved in acquire
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<pool_block>> records_;
  std::vector<pool_block*> spare_;
};

//! The part of the caching pool's retained cap that no stream list or thread cache holds as its
//! share. A holder takes a share only when it reaches a new high-water mark, so a free touches
//! this shared word rarely.
class retained_cap_ledger {
 public:
  explicit retained_cap_ledger(std::size_t cap) noexcept : unreserved_(cap) {}
  //! Takes `bytes` of the cap; false when less is unreserved.
  bool take(std::size_t bytes) noexcept {
    std::size_t left = unreserved_.load(std::memory_order_relaxed);
    do {
      if (left < bytes) return false;
    } while (!unreserved_.compare_exchange_weak(left, left - bytes, std::memory_order_relaxed));
    return true;
  }
  void give(std::size_t bytes) noexcept { unreserved_.fetch_add(bytes, std::memory_order_relaxed); }

 private:
  std::atomic<std::size_t> unreserved_;
};

}  // namespace vyre::detail
