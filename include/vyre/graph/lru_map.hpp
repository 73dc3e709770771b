// SPDX-License-Identifier: Apache-2.0
//! @file
//! `lru_map`: the bookkeeping of `graph_cache` without CUDA (host-only C++20), so its eviction
//! rules are tested on any machine. Bounded by an entry count and by a byte budget (the device
//! memory each entry says it holds); the least recently used entries go first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <new>
#include <unordered_map>
#include <utility>

#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"

namespace vyre::graph {

//! Limits of a cache. Both must be non-zero.
struct cache_limits {
  std::size_t max_entries = 64;
  std::uint64_t max_device_bytes = std::uint64_t{1} << 30;
};

//! Counters of a cache (plain values; a snapshot).
struct cache_stats {
  std::uint64_t hits = 0;
  std::uint64_t misses = 0;
  std::uint64_t captures = 0;
  std::uint64_t evictions = 0;
  std::size_t entries = 0;
  std::uint64_t device_bytes = 0;
  std::uint64_t peak_device_bytes = 0;
};

//! Key -> value with LRU eviction. Not thread-safe (like a standard container).
template <class Key, class Value, class Hash = std::hash<Key>>
class lru_map {
 public:
  //! @pre limits are non-zero (checked by `make`); the constructor itself does not check.
  explicit lru_map(cache_limits limits) noexcept : limits_(limits) {}

  static expected<void> check_limits(cache_limits limits) noexcept {
    if (limits.max_entries == 0 || limits.max_device_bytes == 0)
      return fail(error(errc::invalid_argument, "graph cache: limits must be non-zero")
                      .with("max_entries", limits.max_entries)
                      .with("max_device_bytes", limits.max_device_bytes)
                      .fix("allow at least one entry and one byte"));
    return {};
  }

  //! The value under `key`, made most recently used; counts a hit or a miss.
  Value* find(const Key& key) noexcept {
    auto found = index_.find(key);
    if (found == index_.end()) {
      ++stats_.misses;
      return nullptr;
    }
    ++stats_.hits;
    order_.splice(order_.begin(), order_, found->second);
    return &found->second->value;
  }
  //! Like `find` but neither counts nor reorders.
  const Value* peek(const Key& key) const noexcept {
    auto found = index_.find(key);
    return found == index_.end() ? nullptr : &found->second->value;
  }
  bool contains(const Key& key) const noexcept { return index_.contains(key); }

  //! Inserts (or replaces) `key`, then evicts least recently used entries until both limits
  //! hold again. The new entry is never evicted by its own insertion. On failure nothing
  //! changes: an entry larger than the byte budget is refused before anything is touched, and
  //! an allocation failure leaves the map as it was.
  expected<Value*> insert(const Key& key, Value&& value, std::uint64_t device_bytes) noexcept {
    if (device_bytes > limits_.max_device_bytes)
      return fail(error(errc::out_of_memory,
                        "graph cache: one entry holds more device memory "
                        "than the whole cache may")
                      .with("device_bytes", device_bytes)
                      .with("max_device_bytes", limits_.max_device_bytes)
                      .fix("raise cache_limits::max_device_bytes or launch this graph without "
                           "caching it"));
    if (testing::inject_allocation_failure(testing::allocation_kind::host))
      return fail(entry_allocation_error());
    erase(key);
    try {
      order_.push_front(node{key, std::move(value), device_bytes});
    } catch (const std::bad_alloc&) {
      return fail(entry_allocation_error());
    }
    try {
      index_.emplace(key, order_.begin());
    } catch (const std::bad_alloc&) {
      value = std::move(order_.front().value);  // give the value back untouched
      order_.pop_front();
      return fail(error(errc::out_of_memory,
                        "graph cache: host allocation of an index entry "
                        "failed")
                      .with("bytes", sizeof(typename decltype(index_)::value_type))
                      .fix("free host memory or lower cache_limits::max_entries"));
    }
    stats_.device_bytes += device_bytes;
    if (stats_.device_bytes > stats_.peak_device_bytes)
      stats_.peak_device_bytes = stats_.device_bytes;
    while (order_.size() > 1 && (order_.size() > limits_.max_entries ||
                                 stats_.device_bytes > limits_.max_device_bytes)) {
      evict_back();
    }
    stats_.entries = order_.size();
    return &order_.front().value;
  }

  //! Removes `key` if present (not counted as an eviction). Returns whether it was there.
  bool erase(const Key& key) noexcept {
    auto found = index_.find(key);
    if (found == index_.end()) return false;
    stats_.device_bytes -= found->second->device_bytes;
    order_.erase(found->second);
    index_.erase(found);
    stats_.entries = order_.size();
    return true;
  }
  void clear() noexcept {
    index_.clear();
    order_.clear();
    stats_.device_bytes = 0;
    stats_.entries = 0;
  }

  void count_capture() noexcept { ++stats_.captures; }
  const cache_stats& stats() const noexcept { return stats_; }
  cache_limits limits() const noexcept { return limits_; }
  std::size_t size() const noexcept { return order_.size(); }
  //! Keys from most to least recently used (for tests and diagnostics).
  template <class F>
  void for_each_recent_first(F&& visit) const {
    for (const node& entry : order_) visit(entry.key, entry.value, entry.device_bytes);
  }

 private:
  struct node {
    Key key;
    Value value;
    std::uint64_t device_bytes;
  };

  static error entry_allocation_error() noexcept {
    return error(errc::out_of_memory, "graph cache: host allocation of an entry failed")
        .with("bytes", sizeof(node))
        .fix("free host memory or lower cache_limits::max_entries");
  }

  void evict_back() noexcept {
    node& victim = order_.back();
    stats_.device_bytes -= victim.device_bytes;
    index_.erase(victim.key);
    order_.pop_back();
    ++stats_.evictions;
  }

  cache_limits limits_;
  cache_stats stats_{};
  std::list<node> order_;
  std::unordered_map<Key, typename std::list<node>::iterator, Hash> index_;
};

}  // namespace vyre::graph
