// SPDX-License-Identifier: Apache-2.0
//! @file
//! Host fork-join over contiguous ranges with `std::thread`: the CPU engine, the plans' host
//! copies and the image file's checksum and validation split their work with these. Plain
//! C++20 (compiles with g++ alone).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

namespace vyre::detail {

//! `threads`, or every core when 0.
inline unsigned resolve_threads(unsigned threads) noexcept {
  if (threads != 0) return threads;
  const unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1u : cores;
}

//! Runs `body(chunk, begin, end)` over `chunks` contiguous pieces of [0, n), one thread each
//! (the caller runs chunk 0; a thread that cannot be started runs its chunk in the caller).
//! An exception from a chunk (`std::bad_alloc`) is rethrown in the caller after every join.
template <class Body>
void parallel_chunks(unsigned chunks, std::size_t n, Body&& body) {
  if (chunks <= 1 || n < 2) {
    body(0u, std::size_t{0}, n);
    return;
  }
  const auto bound = [&](unsigned c) { return n * c / chunks; };
  std::vector<std::exception_ptr> failures(chunks);
  const auto run = [&](unsigned c) {
    try {
      body(c, bound(c), bound(c + 1));
    } catch (...) {
      failures[c] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  workers.reserve(chunks - 1);
  std::vector<unsigned> inline_chunks;
  inline_chunks.reserve(chunks - 1);
  for (unsigned c = 1; c < chunks; ++c) {
    try {
      workers.emplace_back(run, c);
    } catch (const std::system_error&) {
      inline_chunks.push_back(c);
    }
  }
  run(0);
  for (const unsigned c : inline_chunks) run(c);
  for (auto& worker : workers) worker.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

//! How many chunks to split `n` items into: one per thread, at least `grain` items each.
inline unsigned chunk_count(unsigned threads, std::size_t n,
                            std::size_t grain = 1u << 14) noexcept {
  const std::size_t most = (std::max)(std::size_t{1}, n / grain);
  return static_cast<unsigned>((std::min)(std::size_t{threads}, most));
}

//! Runs `body(begin, end)` over [0, n) on up to `threads` threads (0: every core), at least
//! `grain` items per thread, and on the caller's thread alone when that leaves one chunk. When
//! the threads' own bookkeeping cannot be had (`std::bad_alloc`), the caller runs all of [0, n)
//! again: `body` must not throw and must give the same result when run twice.
template <class Body>
void parallel_ranges(unsigned threads, std::size_t n, std::size_t grain, Body&& body) noexcept {
  const auto run = [&](unsigned, std::size_t begin, std::size_t end) noexcept { body(begin, end); };
  const unsigned chunks = chunk_count(resolve_threads(threads), n, grain);
  try {
    parallel_chunks(chunks, n, run);
  } catch (...) {
    run(0u, 0, n);
  }
}

//! For each check k, the smallest i in [0, `sizes[k]`) with `checks_k(i)` true, or `sizes[k]`
//! when there is none: the answers serial scans give. One fork-join runs them all (thread c
//! takes the c-th share of every check's range, at least `grain` items in all per thread); a
//! share stops at its first hit, or once a smaller one is known. For validations whose errors
//! name the first bad item of the first failing check.
template <class... IsBad>
std::array<std::size_t, sizeof...(IsBad)> parallel_find_first(
    unsigned threads, const std::array<std::size_t, sizeof...(IsBad)>& sizes, std::size_t grain,
    const IsBad&... checks) noexcept {
  constexpr std::size_t count = sizeof...(IsBad);
  std::array<std::atomic<std::size_t>, count> first;
  std::size_t total = 0;
  for (std::size_t k = 0; k < count; ++k) {
    first[k].store(sizes[k], std::memory_order_relaxed);
    total += sizes[k];
  }
  // The shared minimum is looked at once per block, so the scan itself is a plain loop.
  constexpr std::size_t block = 4096;
  const auto scan = [&](std::atomic<std::size_t>& found, std::size_t begin, std::size_t end,
                        const auto& is_bad) noexcept {
    for (std::size_t at = begin; at < end; at += block) {
      if (at >= found.load(std::memory_order_relaxed)) return;
      const std::size_t stop = (std::min)(end, at + block);
      for (std::size_t i = at; i < stop; ++i) {
        if (!is_bad(i)) continue;
        std::size_t known = found.load(std::memory_order_relaxed);
        while (i < known && !found.compare_exchange_weak(known, i, std::memory_order_relaxed)) {
        }
        return;
      }
    }
  };
  const std::size_t shares = chunk_count(resolve_threads(threads), total, grain);
  parallel_ranges(threads, shares, 1, [&](std::size_t begin, std::size_t end) noexcept {
    for (std::size_t c = begin; c < end; ++c) {
      std::size_t k = 0;
      (..., (scan(first[k], sizes[k] * c / shares, sizes[k] * (c + 1) / shares, checks), ++k));
    }
  });
  std::array<std::size_t, count> result;
  for (std::size_t k = 0; k < count; ++k) result[k] = first[k].load(std::memory_order_relaxed);
  return result;
}

}  // namespace vyre::detail
