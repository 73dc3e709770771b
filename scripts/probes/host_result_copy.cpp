// SPDX-License-Identifier: Apache-2.0
// Probe: what materializing a congruence result of egglog's math e-graph after 12 iterations
// costs on the host alone (no GPU): the seven std::vector columns a run_host result holds (G, G,
// K, K, K, K, C u32: about 440 MB), resized fresh and filled by memcpy from one staging block,
// as congruence_plan::run_host does, on one thread and on one thread per column.
//   g++ -O2 -std=c++20 -pthread scripts/probes/host_result_copy.cpp -o /tmp/host_result_copy
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

int main() {
  const std::size_t G = 6865583, K = 15987536, C = 31975044;  // math-12's counts
  const std::size_t sizes[7] = {G, G, K, K, K, K, C};
  std::vector<std::uint32_t> staging(2 * G + 4 * K + C, 7u);
  const auto fill = [&](std::vector<std::uint32_t>& to, std::size_t i) {
    std::size_t at = 0;
    for (std::size_t j = 0; j < i; ++j) at += sizes[j];
    to.resize(sizes[i]);
    std::memcpy(to.data(), staging.data() + at, sizes[i] * sizeof(std::uint32_t));
  };
  for (int repeat = 0; repeat < 4; ++repeat) {
    const auto t0 = std::chrono::steady_clock::now();
    {
      std::vector<std::vector<std::uint32_t>> out(7);
      for (std::size_t i = 0; i < 7; ++i) fill(out[i], i);
    }
    const auto t1 = std::chrono::steady_clock::now();
    {
      std::vector<std::vector<std::uint32_t>> out(7);
      std::vector<std::thread> threads;
      for (std::size_t i = 0; i < 7; ++i) threads.emplace_back([&, i] { fill(out[i], i); });
      for (std::thread& t : threads) t.join();
    }
    const auto t2 = std::chrono::steady_clock::now();
    std::printf(
        "{\"probe\":\"host_result_copy\",\"bytes\":%zu,\"one_thread_ms\":%.1f,"
        "\"thread_per_column_ms\":%.1f}\n",
        staging.size() * sizeof(std::uint32_t),
        std::chrono::duration<double, std::milli>(t1 - t0).count(),
        std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
}
