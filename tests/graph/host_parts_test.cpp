// SPDX-License-Identifier: Apache-2.0
// Host tests of the pure parts of the graph component: node kinds, memset update rules, the
// event hook, and the LRU bookkeeping behind graph_cache.
#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <vyre/graph.hpp>

using vyre::graph::node_kind;

TEST_CASE("every CUDA node type maps to its kind and unknown values to unknown", "[graph][kinds]") {
  using vyre::graph::to_node_kind;
  const struct {
    int type;
    node_kind kind;
  } expected_kinds[] = {{cudaGraphNodeTypeKernel, node_kind::kernel},
                        {cudaGraphNodeTypeMemcpy, node_kind::memcpy},
                        {cudaGraphNodeTypeMemset, node_kind::memset},
                        {cudaGraphNodeTypeHost, node_kind::host},
                        {cudaGraphNodeTypeGraph, node_kind::child_graph},
                        {cudaGraphNodeTypeEmpty, node_kind::empty},
                        {cudaGraphNodeTypeWaitEvent, node_kind::event_wait},
                        {cudaGraphNodeTypeEventRecord, node_kind::event_record},
                        {cudaGraphNodeTypeExtSemaphoreSignal, node_kind::external_semaphore_signal},
                        {cudaGraphNodeTypeExtSemaphoreWait, node_kind::external_semaphore_wait},
                        {cudaGraphNodeTypeMemAlloc, node_kind::mem_alloc},
                        {cudaGraphNodeTypeMemFree, node_kind::mem_free},
                        {12, node_kind::batch_mem_op},
                        {cudaGraphNodeTypeConditional, node_kind::conditional},
                        {cudaGraphNodeTypeCount, node_kind::unknown},
                        {-1, node_kind::unknown},
                        {1000, node_kind::unknown}};
  for (const auto& [type, kind] : expected_kinds) {
    INFO("CUDA node type " << type);
    CHECK(to_node_kind(type) == kind);
  }
  // Names are distinct and never empty.
  std::vector<std::string> names;
  for (int type = 0; type <= 14; ++type)
    names.emplace_back(vyre::graph::node_kind_name(to_node_kind(type)));
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK_FALSE(names[i].empty());
    for (std::size_t j = i + 1; j + 1 < names.size(); ++j) CHECK(names[i] != names[j]);
  }
  CHECK(names.back() == "unknown");
  CHECK(std::string(vyre::graph::update_result_name(cudaGraphExecUpdateErrorTopologyChanged)) ==
        "the topology changed");
  CHECK(std::string(vyre::graph::update_result_name(99)).find("does not know") !=
        std::string::npos);
}

TEST_CASE("memset updates are checked against CUDA's rules first", "[graph][memset]") {
  using vyre::graph::check_memset_update;
  using vyre::graph::memset_params;
  int storage[4] = {};
  const memset_params captured{storage, 7u, 4u, 4u, 1u, 0u};
  memset_params next = captured;
  CHECK(check_memset_update(captured, next).has_value());
  next.value = 0xFFFF'FFFFu;
  next.width = 2;
  CHECK(check_memset_update(captured, next).has_value());

  auto code_of = [&](memset_params p) { return check_memset_update(captured, p).error().code(); };
  memset_params bad = captured;
  bad.dst = nullptr;
  CHECK(code_of(bad) == vyre::errc::invalid_argument);
  bad = captured;
  bad.width = 0;
  CHECK(code_of(bad) == vyre::errc::invalid_argument);
  CHECK(check_memset_update(captured, bad).error().message().find("zero-sized") !=
        std::string::npos);
  bad = captured;
  bad.height = 2;
  CHECK(code_of(bad) == vyre::errc::unsupported);
  bad = captured;
  bad.element_size = 3;
  CHECK(code_of(bad) == vyre::errc::invalid_argument);
  CHECK(check_memset_update(captured, bad).error().value_or("element_size", 0) == 3u);
  bad = captured;
  bad.element_size = 2;
  CHECK(code_of(bad) == vyre::errc::unsupported);  // element size differs from the capture

  const memset_params bytes{storage, 1u, 1u, 16u, 1u, 0u};
  memset_params byte_next = bytes;
  byte_next.value = 255u;
  CHECK(check_memset_update(bytes, byte_next).has_value());
  byte_next.value = 256u;
  CHECK(check_memset_update(bytes, byte_next).error().code() == vyre::errc::out_of_range);
  byte_next.value = 1u;
  byte_next.width = static_cast<std::size_t>(-1);
  CHECK(check_memset_update(bytes, byte_next).has_value());  // 1-byte elements never overflow
  const memset_params words{storage, 1u, 4u, 16u, 1u, 0u};
  memset_params word_next = words;
  word_next.width = static_cast<std::size_t>(-1) / 2;
  CHECK(check_memset_update(words, word_next).error().code() == vyre::errc::overflow);
}

TEST_CASE("event counters count through the hook", "[graph][events]") {
  vyre::graph::graph_event_counters counters;
  const vyre::graph::graph_event_hook hook = counters.hook();
  REQUIRE(static_cast<bool>(hook));
  hook(vyre::graph::graph_event::launch);
  hook(vyre::graph::graph_event::launch);
  hook(vyre::graph::graph_event::capture);
  CHECK(counters.count(vyre::graph::graph_event::launch) == 2u);
  CHECK(counters.count(vyre::graph::graph_event::capture) == 1u);
  CHECK(counters.count(vyre::graph::graph_event::update) == 0u);
  const vyre::graph::graph_event_hook empty{};
  CHECK_FALSE(static_cast<bool>(empty));
  empty(vyre::graph::graph_event::launch);  // no-op
}

namespace {
// A value that records its destruction, like a graph whose destructor frees device objects.
struct tracked {
  std::shared_ptr<int> alive_count;
  int id = 0;
  tracked(std::shared_ptr<int> count, int value) : alive_count(std::move(count)), id(value) {
    ++*alive_count;
  }
  tracked(tracked&& other) noexcept : alive_count(std::move(other.alive_count)), id(other.id) {}
  tracked& operator=(tracked&& other) noexcept {
    release();
    alive_count = std::move(other.alive_count);
    id = other.id;
    return *this;
  }
  ~tracked() { release(); }
  void release() {
    if (alive_count) --*alive_count;
    alive_count.reset();
  }
};
}  // namespace

TEST_CASE("lru_map evicts least recently used entries by count and by bytes", "[graph][cache]") {
  using map = vyre::graph::lru_map<int, tracked>;
  auto alive = std::make_shared<int>(0);

  SECTION("entry limit") {
    map cache({3, 1000});
    for (int k = 0; k < 3; ++k) REQUIRE(cache.insert(k, tracked(alive, k), 10).has_value());
    CHECK(*alive == 3);
    REQUIRE(cache.find(0) != nullptr);  // 0 becomes most recent; 1 is now the oldest
    REQUIRE(cache.insert(3, tracked(alive, 3), 10).has_value());
    CHECK(cache.size() == 3u);
    CHECK_FALSE(cache.contains(1));
    CHECK(cache.contains(0));
    CHECK(*alive == 3);  // the evicted value was destroyed
    const auto stats = cache.stats();
    CHECK(stats.evictions == 1u);
    CHECK(stats.hits == 1u);
    CHECK(stats.misses == 0u);
    CHECK(stats.entries == 3u);
    CHECK(stats.device_bytes == 30u);
    CHECK(cache.find(42) == nullptr);
    CHECK(cache.stats().misses == 1u);
    std::vector<int> order;
    cache.for_each_recent_first(
        [&](int key, const tracked&, std::uint64_t) { order.push_back(key); });
    CHECK(order == std::vector<int>{3, 0, 2});
  }
  SECTION("byte limit evicts as many as needed, never the new entry") {
    map cache({100, 100});
    REQUIRE(cache.insert(1, tracked(alive, 1), 40).has_value());
    REQUIRE(cache.insert(2, tracked(alive, 2), 40).has_value());
    REQUIRE(cache.insert(3, tracked(alive, 3), 90).has_value());
    CHECK(cache.size() == 1u);
    CHECK(cache.contains(3));
    CHECK(cache.stats().evictions == 2u);
    CHECK(cache.stats().device_bytes == 90u);
    CHECK(cache.stats().peak_device_bytes == 170u);
    CHECK(*alive == 1);
  }
  SECTION("an entry larger than the budget is refused and nothing changes") {
    map cache({4, 100});
    REQUIRE(cache.insert(1, tracked(alive, 1), 60).has_value());
    tracked big(alive, 2);
    const auto refused = cache.insert(2, std::move(big), 101);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code() == vyre::errc::out_of_memory);
    CHECK(refused.error().value_or("device_bytes", 0) == 101u);
    CHECK(cache.size() == 1u);
    CHECK(cache.contains(1));
    CHECK(big.id == 2);
    CHECK(big.alive_count != nullptr);  // not moved from
  }
  SECTION("replacing a key, erase and clear keep the byte count right") {
    map cache({4, 100});
    REQUIRE(cache.insert(1, tracked(alive, 1), 30).has_value());
    REQUIRE(cache.insert(1, tracked(alive, 11), 50).has_value());
    CHECK(cache.size() == 1u);
    CHECK(cache.peek(1)->id == 11);
    CHECK(cache.stats().device_bytes == 50u);
    CHECK(cache.stats().evictions == 0u);
    CHECK(cache.erase(1));
    CHECK_FALSE(cache.erase(1));
    CHECK(cache.stats().device_bytes == 0u);
    REQUIRE(cache.insert(2, tracked(alive, 2), 10).has_value());
    cache.clear();
    CHECK(cache.size() == 0u);
    CHECK(*alive == 0);
  }
  SECTION("limits must be non-zero") {
    CHECK_FALSE(map::check_limits({0, 10}).has_value());
    CHECK_FALSE(map::check_limits({10, 0}).has_value());
    CHECK(map::check_limits({1, 1}).has_value());
  }
}
