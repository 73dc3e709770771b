// SPDX-License-Identifier: Apache-2.0
// The caching pool's host-side pieces: the pointer table (against a std::unordered_map
// reference, and with lock-free readers racing a writer), the spin lock, and per-thread
// telemetry slots summed across threads and instances.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include <vyre/runtime/detail/block_index.hpp>
#include <vyre/runtime/detail/spin_lock.hpp>
#include <vyre/runtime/telemetry.hpp>

namespace {
struct record {
  std::atomic<void*> ptr{nullptr};
  std::uint64_t tag = 0;
};
void* address(std::uint64_t i) {
  return reinterpret_cast<void*>(std::uintptr_t{0x7f0000000000} + i * 256);
}
}  // namespace

TEST_CASE("block index: random inserts and erases agree with a reference map",
          "[runtime][memory][block_index]") {
  vyre::detail::block_index<record> index;
  std::vector<std::unique_ptr<record>> records;
  std::unordered_map<void*, record*> reference;
  std::mt19937_64 rng(42);
  for (int step = 0; step < 200'000; ++step) {
    // A small key space so clusters form, wrap around and get erased from the middle.
    void* key = address(rng() % 4096);
    const auto it = reference.find(key);
    if (it == reference.end()) {
      records.push_back(std::make_unique<record>());
      records.back()->ptr.store(key);
      records.back()->tag = static_cast<std::uint64_t>(step);
      REQUIRE(index.insert(records.back().get()));
      reference.emplace(key, records.back().get());
    } else if (rng() % 2 == 0) {
      index.erase(key);
      reference.erase(it);
    }
    if (step % 997 == 0) {
      REQUIRE(index.size() == reference.size());
      for (std::uint64_t i = 0; i < 4096; ++i) {
        const auto ref = reference.find(address(i));
        REQUIRE(index.find(address(i)) == (ref == reference.end() ? nullptr : ref->second));
      }
    }
  }
  std::size_t visited = 0;
  index.for_each([&](record* r) {
    CHECK(reference.at(r->ptr.load()) == r);
    ++visited;
    return true;
  });
  CHECK(visited == reference.size());
  index.clear();
  CHECK(index.size() == 0);
  CHECK(index.find(address(1)) == nullptr);
}

TEST_CASE("block index: lock-free readers always find stable entries while a writer churns",
          "[runtime][memory][block_index]") {
  vyre::detail::block_index<record> index;
  constexpr std::uint64_t stable = 512;
  std::vector<std::unique_ptr<record>> records;
  for (std::uint64_t i = 0; i < stable; ++i) {
    records.push_back(std::make_unique<record>());
    records.back()->ptr.store(address(2 * i));  // even keys never leave
    REQUIRE(index.insert(records.back().get()));
  }
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t)
    readers.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<std::uint64_t>(t));
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t i = rng() % stable;
        record* r = index.find(address(2 * i));
        if (r == nullptr || r->ptr.load() != address(2 * i)) misses.fetch_add(1);
      }
    });
  // Odd keys come and go, shifting the even ones inside their clusters and growing the table.
  std::vector<std::unique_ptr<record>> churn;
  std::mt19937_64 rng(7);
  for (int round = 0; round < 40; ++round) {
    const std::size_t first = churn.size();
    for (std::uint64_t i = 0; i < 1000; ++i) {
      churn.push_back(std::make_unique<record>());
      churn.back()->ptr.store(address(2 * (rng() % 100'000) + 1));
      if (index.find(churn.back()->ptr.load()) == nullptr) {
        REQUIRE(index.insert(churn.back().get()));
      } else {
        churn.back()->ptr.store(nullptr);
      }
    }
    for (std::size_t i = first; i < churn.size(); ++i)
      if (void* key = churn[i]->ptr.load()) index.erase(key);
  }
  stop.store(true);
  for (auto& r : readers) r.join();
  CHECK(misses.load() == 0);
  CHECK(index.size() == stable);
}

TEST_CASE("spin lock: mutual exclusion under contention", "[runtime][memory]") {
  vyre::detail::spin_lock lock;
  std::uint64_t counter = 0;  // deliberately not atomic: the lock must protect it
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50'000; ++i) {
        std::lock_guard guard(lock);
        ++counter;
      }
    });
  for (auto& t : threads) t.join();
  CHECK(counter == 200'000u);
  CHECK(lock.try_lock());
  CHECK_FALSE(lock.try_lock());
  lock.unlock();
}

TEST_CASE("telemetry: per-thread slots sum exactly, per instance, across ended threads",
          "[runtime][telemetry]") {
  vyre::telemetry_counters a, b;
  for (int wave = 0; wave < 3; ++wave) {  // later waves may reuse ended threads' ids and slots
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) {
          a.record_kernel_launch();
          b.record_kernel_launch(2);
          a.record_allocation(10, 256);
          a.record_deallocation(256);
        }
      });
    for (auto& t : threads) t.join();
  }
  CHECK(a.snapshot().kernel_launches == 24'000u);
  CHECK(b.snapshot().kernel_launches == 48'000u);
  CHECK(a.snapshot().allocations == 24'000u);
  CHECK(a.snapshot().bytes_requested == 240'000u);
  CHECK(a.snapshot().current_device_bytes == 0u);
  a.reset();
  CHECK(a.snapshot().kernel_launches == 0u);
  a.record_kernel_launch();
  CHECK(a.snapshot().kernel_launches == 1u);
  CHECK(b.snapshot().kernel_launches == 48'000u);
  {
    vyre::telemetry_counters short_lived;  // its slots die with it; a new one starts at zero
    short_lived.record_sync();
  }
  vyre::telemetry_counters fresh;
  CHECK(fresh.snapshot().sync_points == 0u);
}
