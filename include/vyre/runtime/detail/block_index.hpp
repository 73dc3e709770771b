// SPDX-License-Identifier: Apache-2.0
//! @file
//! The caching pool's pointer -> block table. Lookups (every free) take no lock; inserts and
//! erases (new and returned device blocks only, each next to a cudaMalloc or cudaFree) take a
//! mutex. Open addressing with linear probing and backward-shift deletion, so erased entries
//! leave no tombstones behind. A lookup that races a shift may miss an entry that moved behind
//! it, so a miss is repeated under the mutex before it counts. Arrays outgrown while readers
//! may still be inside them are kept until destruction; together they are smaller than the
//! current array.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>

#include "vyre/runtime/detail/chain.hpp"

namespace vyre::detail {

//! Records of the blocks `block_index` maps to: anything with an atomic `ptr` member.
template <class Record>
class block_index {
 public:
  block_index() = default;
  block_index(const block_index&) = delete;
  block_index& operator=(const block_index&) = delete;
  ~block_index() { delete_chain(current_.load(std::memory_order_relaxed), &table::older); }

  //! The record of `ptr`, or null. Lock-free unless the first look misses.
  Record* find(const void* ptr) const noexcept {
    if (Record* r = find_in(current_.load(std::memory_order_acquire), ptr)) return r;
    std::lock_guard lock(mutex_);
    return find_in(current_.load(std::memory_order_relaxed), ptr);
  }

  //! Adds `record` (its `ptr` set, not yet present). False when memory to grow ran out.
  bool insert(Record* record) noexcept {
    std::lock_guard lock(mutex_);
    table* t = current_.load(std::memory_order_relaxed);
    if (t == nullptr || (count_ + 1) * 2 > t->capacity()) {
      t = grow(t);
      if (t == nullptr) return false;
    }
    place(*t, record);
    ++count_;
    return true;
  }

  //! Removes the entry of `ptr` (if present) and closes the gap behind it.
  void erase(const void* ptr) noexcept {
    std::lock_guard lock(mutex_);
    table* t = current_.load(std::memory_order_relaxed);
    if (t == nullptr) return;
    std::size_t hole = home(*t, ptr);
    for (;; hole = (hole + 1) & t->mask) {
      Record* r = t->slots[hole].load(std::memory_order_relaxed);
      if (r == nullptr) return;
      if (r->ptr.load(std::memory_order_relaxed) == ptr) break;
    }
    // Move back every later entry of the cluster whose home is not in (hole, next].
    for (std::size_t next = (hole + 1) & t->mask;; next = (next + 1) & t->mask) {
      Record* r = t->slots[next].load(std::memory_order_relaxed);
      if (r == nullptr) break;
      const std::size_t h = home(*t, r->ptr.load(std::memory_order_relaxed));
      const bool stays = hole <= next ? (hole < h && h <= next) : (hole < h || h <= next);
      if (stays) continue;
      t->slots[hole].store(r, std::memory_order_release);
      hole = next;
    }
    t->slots[hole].store(nullptr, std::memory_order_release);
    --count_;
  }

  //! Calls `f(record)` for entries until it returns false, under the mutex (`f` must not
  //! call back into this index).
  template <class F>
  void for_each(F&& f) const {
    std::lock_guard lock(mutex_);
    const table* t = current_.load(std::memory_order_relaxed);
    if (t == nullptr) return;
    for (std::size_t i = 0; i <= t->mask; ++i)
      if (Record* r = t->slots[i].load(std::memory_order_relaxed))
        if (!f(r)) return;
  }

  //! Removes every entry (the records are the caller's).
  void clear() noexcept {
    std::lock_guard lock(mutex_);
    if (table* t = current_.load(std::memory_order_relaxed))
      for (std::size_t i = 0; i <= t->mask; ++i)
        t->slots[i].store(nullptr, std::memory_order_release);
    count_ = 0;
  }

  std::size_t size() const noexcept {
    std::lock_guard lock(mutex_);
    return count_;
  }

 private:
  struct table {
    std::size_t mask = 0;
    int shift = 0;  // 64 - log2(capacity): the hash keeps the top bits
    std::unique_ptr<std::atomic<Record*>[]> slots;
    table* older = nullptr;
    std::size_t capacity() const noexcept { return mask + 1; }
  };

  static std::size_t home(const table& t, const void* ptr) noexcept {
    // Blocks are 256-byte aligned: drop the zero bits, then Fibonacci hashing.
    const auto bits = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(ptr)) >> 8;
    return static_cast<std::size_t>((bits * 0x9E3779B97F4A7C15ull) >> t.shift);
  }
  static Record* find_in(const table* t, const void* ptr) noexcept {
    if (t == nullptr) return nullptr;
    for (std::size_t i = home(*t, ptr);; i = (i + 1) & t->mask) {
      Record* r = t->slots[i].load(std::memory_order_acquire);
      if (r == nullptr) return nullptr;
      if (r->ptr.load(std::memory_order_relaxed) == ptr) return r;
    }
  }
  static void place(table& t, Record* record) noexcept {
    std::size_t i = home(t, record->ptr.load(std::memory_order_relaxed));
    while (t.slots[i].load(std::memory_order_relaxed) != nullptr) i = (i + 1) & t.mask;
    t.slots[i].store(record, std::memory_order_release);
  }
  // A table of twice the capacity (64 slots at first) holding every entry of `old`.
  table* grow(table* old) noexcept {
    const std::size_t capacity = old == nullptr ? 64 : old->capacity() * 2;
    auto* t = new (std::nothrow) table;
    if (t == nullptr) return nullptr;
    t->slots.reset(new (std::nothrow) std::atomic<Record*>[capacity]);
    if (!t->slots) {
      delete t;
      return nullptr;
    }
    for (std::size_t i = 0; i < capacity; ++i)
      t->slots[i].store(nullptr, std::memory_order_relaxed);
    t->mask = capacity - 1;
    t->shift = 64 - std::countr_zero(capacity);
    t->older = old;
    if (old != nullptr)
      for (std::size_t i = 0; i <= old->mask; ++i)
        if (Record* r = old->slots[i].load(std::memory_order_relaxed)) place(*t, r);
    current_.store(t, std::memory_order_release);
    return t;
  }

  mutable std::mutex mutex_;
  std::atomic<table*> current_{nullptr};
  std::size_t count_ = 0;
};

}  // namespace vyre::detail
