// SPDX-License-Identifier: Apache-2.0
// Telemetry counters and their Prometheus exposition (host only).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <vyre/runtime/telemetry.hpp>

TEST_CASE("counters start at zero and record what they are told", "[runtime][telemetry]") {
  vyre::telemetry_counters t;
  CHECK(t.snapshot() == vyre::telemetry_snapshot{});
  t.record_kernel_launch();
  t.record_kernel_launch(4);
  t.record_graph_launch();
  t.record_h2d(1000);
  t.record_h2d(24);
  t.record_d2h(8);
  t.record_sync(3);
  t.record_pool_hit();
  t.record_pool_hit();
  t.record_pool_miss();
  t.record_allocation(100, 256);
  t.record_allocation(300, 512);
  t.record_deallocation(256);
  const auto s = t.snapshot();
  CHECK(s.kernel_launches == 5);
  CHECK(s.graph_launches == 1);
  CHECK(s.h2d_bytes == 1024);
  CHECK(s.h2d_operations == 2);
  CHECK(s.d2h_bytes == 8);
  CHECK(s.d2h_operations == 1);
  CHECK(s.sync_points == 3);
  CHECK(s.pool_hits == 2);
  CHECK(s.pool_misses == 1);
  CHECK(s.bytes_requested == 400);
  CHECK(s.allocations == 2);
  CHECK(s.current_device_bytes == 512);
  CHECK(s.peak_device_bytes == 768);
}

TEST_CASE("reset zeroes the counters but keeps the live-bytes gauge", "[runtime][telemetry]") {
  vyre::telemetry_counters t;
  t.record_allocation(10, 256);
  t.record_allocation(10, 256);
  t.record_deallocation(256);
  t.record_kernel_launch(7);
  t.reset();
  const auto s = t.snapshot();
  CHECK(s.kernel_launches == 0);
  CHECK(s.allocations == 0);
  CHECK(s.bytes_requested == 0);
  CHECK(s.current_device_bytes == 256);
  CHECK(s.peak_device_bytes == 256);  // restarts from the live bytes, not 512
}

TEST_CASE("counters are exact under concurrent updates", "[runtime][telemetry]") {
  vyre::telemetry_counters t;
  constexpr int threads = 8;
  constexpr int per_thread = 20000;
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&t] {
      for (int k = 0; k < per_thread; ++k) {
        t.record_kernel_launch();
        t.record_allocation(3, 256);
        t.record_deallocation(256);
      }
    });
  for (auto& w : workers) w.join();
  const auto s = t.snapshot();
  CHECK(s.kernel_launches == std::uint64_t{threads} * per_thread);
  CHECK(s.bytes_requested == std::uint64_t{threads} * per_thread * 3);
  CHECK(s.current_device_bytes == 0);
  CHECK(s.peak_device_bytes >= 256);
  CHECK(s.peak_device_bytes <= 256u * threads);
}

TEST_CASE("a pool hit with its bytes counts a hit, an allocation and the bytes",
          "[runtime][telemetry]") {
  vyre::telemetry_counters t;
  t.record_pool_hit(100);
  const auto local = t.local();
  REQUIRE(local);
  local.record_pool_hit(28);
  local.record_pool_hit(0);
  vyre::telemetry_counters::local_counters{}.record_pool_hit(5);  // an empty handle: nothing
  CHECK_FALSE(vyre::telemetry_counters::local_counters{});
  const auto s = t.snapshot();
  CHECK(s.pool_hits == 3);
  CHECK(s.allocations == 3);
  CHECK(s.bytes_requested == 128);
  CHECK(s.pool_misses == 0);
  t.reset();
  local.record_pool_hit(7);  // a handle survives a reset
  CHECK(t.snapshot().pool_hits == 1);
  CHECK(t.snapshot().bytes_requested == 7);
}

TEST_CASE("local handles of many threads, with a snapshot reader, sum exactly",
          "[runtime][telemetry]") {
  vyre::telemetry_counters t;
  constexpr int threads = 8;
  constexpr int per_thread = 20000;
  std::atomic<bool> done{false};
  std::uint64_t last_seen = 0;
  bool monotonic = true;
  std::thread reader([&] {
    while (!done.load()) {
      const std::uint64_t now = t.snapshot().pool_hits;
      monotonic = monotonic && now >= last_seen;
      last_seen = now;
    }
  });
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i)
    workers.emplace_back([&t] {
      const auto local = t.local();
      for (int k = 0; k < per_thread; ++k) local.record_pool_hit(2);
    });
  for (auto& w : workers) w.join();
  done = true;
  reader.join();
  CHECK(monotonic);
  const auto s = t.snapshot();
  CHECK(s.pool_hits == std::uint64_t{threads} * per_thread);
  CHECK(s.allocations == std::uint64_t{threads} * per_thread);
  CHECK(s.bytes_requested == std::uint64_t{threads} * per_thread * 2);
}

TEST_CASE("the Prometheus exposition names every metric with HELP, TYPE and a sample",
          "[runtime][telemetry]") {
  vyre::telemetry_snapshot s;
  s.kernel_launches = 12;
  s.h2d_bytes = 4096;
  s.current_device_bytes = 1u << 20;
  const std::string text = vyre::to_prometheus(s, vyre::prometheus_label("device", "0"));
  CHECK(text.find("# HELP vyre_kernel_launches_total Kernel launches recorded.\n"
                  "# TYPE vyre_kernel_launches_total counter\n"
                  "vyre_kernel_launches_total{device=\"0\"} 12\n") != std::string::npos);
  CHECK(text.find("vyre_h2d_bytes_total{device=\"0\"} 4096\n") != std::string::npos);
  CHECK(text.find("# TYPE vyre_device_bytes gauge\nvyre_device_bytes{device=\"0\"} 1048576\n") !=
        std::string::npos);
  CHECK(text.find("vyre_graph_launches_total{device=\"0\"} 0\n") != std::string::npos);
  // One HELP, one TYPE and one sample per metric; every name starts with vyre_.
  std::size_t lines = 0, samples = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    REQUIRE(end != std::string::npos);
    const std::string line = text.substr(at, end - at);
    ++lines;
    if (line[0] != '#') {
      ++samples;
      CHECK(line.rfind("vyre_", 0) == 0);
    }
    at = end + 1;
  }
  constexpr std::size_t metrics = std::size(vyre::telemetry_metrics);
  CHECK(samples == metrics);
  CHECK(lines == 3 * metrics);
}

TEST_CASE("an exposition without labels has bare samples", "[runtime][telemetry]") {
  const std::string text = vyre::to_prometheus({});
  CHECK(text.find("\nvyre_sync_points_total 0\n") != std::string::npos);
  CHECK(text.find('{') == std::string::npos);
}

TEST_CASE("label values are escaped", "[runtime][telemetry]") {
  CHECK(vyre::prometheus_label("name", "a\"b\\c\nd") == "name=\"a\\\"b\\\\c\\nd\"");
}
