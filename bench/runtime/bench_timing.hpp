// SPDX-License-Identifier: Apache-2.0
//! @file
//! Host timing for the runtime benchmarks, shared by runtime_bench.cu and the RMM peer's own
//! translation unit (rmm_peer.cu, built against RMM's copy of CCCL): standard C++ only.
#pragma once

#include <algorithm>
#include <barrier>
#include <chrono>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace runtime_bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

//! Median over `repeats` of the per-operation time of `ops` calls of `op(thread)` run by
//! `threads` threads at once (wall time of the parallel region / ops per thread). The threads
//! are started once and meet at a barrier before and after each repeat, so thread start-up and
//! exit never land in the timed region. Two untimed warm-up repeats come first.
inline double time_per_op(int threads, int repeats, int ops, const std::function<void(int)>& op) {
  using clock_type = std::chrono::steady_clock;
  std::barrier sync(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < repeats + 2; ++r) {
        sync.arrive_and_wait();  // start
        for (int i = 0; i < ops; ++i) op(t);
        sync.arrive_and_wait();  // done
      }
    });
  std::vector<double> samples;
  for (int r = 0; r < repeats + 2; ++r) {
    sync.arrive_and_wait();
    const auto start = clock_type::now();
    sync.arrive_and_wait();
    const double ns = std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
    if (r >= 2) samples.push_back(ns / ops);
  }
  for (auto& th : pool) th.join();
  return median(samples);
}

//! `time_per_op` of two variants in alternating rounds (a, b, b, a, ...), each round with fresh
//! threads: order, clock and thermal drift treat both alike. Returns the median of each
//! variant's round medians.
inline std::pair<double, double> time_pair(int threads, int rounds, int repeats, int ops,
                                           const std::function<void(int)>& a,
                                           const std::function<void(int)>& b) {
  std::vector<double> as, bs;
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      as.push_back(time_per_op(threads, repeats, ops, a));
      bs.push_back(time_per_op(threads, repeats, ops, b));
    } else {
      bs.push_back(time_per_op(threads, repeats, ops, b));
      as.push_back(time_per_op(threads, repeats, ops, a));
    }
  }
  return {median(as), median(bs)};
}

}  // namespace runtime_bench
