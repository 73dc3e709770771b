// SPDX-License-Identifier: Apache-2.0
//! @file
//! Host helpers the benchmarks share: the CPU's name for the JSON lines and the median of
//! repeated wall-clock timings. Standard C++ only.
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <ratio>
#include <string>
#include <thread>
#include <vector>

namespace vyre_bench {

//! The "model name" line of /proc/cpuinfo, or "unknown cpu".
inline std::string cpu_name() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

//! The median (upper middle for an even count) of `samples`. @pre `samples` is not empty.
inline double median(std::vector<double> samples) {
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

//! Median wall time of `repeats` calls of `body`, in `Unit` (std::nano, std::milli, ...). No
//! warm-up call: callers warm up themselves where it matters. `idle_before` of sleep precedes
//! each timed call (untimed), to measure work that finds helper threads asleep.
template <class Unit = std::nano, class F>
double median_time(int repeats, F&& body, std::chrono::microseconds idle_before = {}) {
  using clock_type = std::chrono::steady_clock;
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    if (idle_before.count() > 0) std::this_thread::sleep_for(idle_before);
    const auto start = clock_type::now();
    body();
    samples.push_back(std::chrono::duration<double, Unit>(clock_type::now() - start).count());
  }
  return median(std::move(samples));
}

}  // namespace vyre_bench
