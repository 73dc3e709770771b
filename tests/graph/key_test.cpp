// SPDX-License-Identifier: Apache-2.0
// Host tests of the graph planning layer: capacity classes, scan topologies, graph keys.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <unordered_set>

#include <vyre/graph.hpp>

using vyre::graph::capacity_class;
using vyre::graph::graph_key;
using vyre::graph::graph_key_inputs;
using vyre::graph::join_kind;
using vyre::graph::scan_topology;

TEST_CASE("capacity_class is 1 up to 1, then the next power of two", "[graph][key]") {
  CHECK(capacity_class(0u) == 1u);
  CHECK(capacity_class(1u) == 1u);
  CHECK(capacity_class(2u) == 2u);
  CHECK(capacity_class(3u) == 4u);
  CHECK(capacity_class(4u) == 4u);
  CHECK(capacity_class(5u) == 8u);
  CHECK(capacity_class(1000u) == 1024u);
  CHECK(capacity_class(1024u) == 1024u);
  CHECK(capacity_class(1025u) == 2048u);
  CHECK(capacity_class(std::uint64_t{1} << 40) == std::uint64_t{1} << 40);
  CHECK(capacity_class((std::uint64_t{1} << 40) + 1) == std::uint64_t{1} << 41);
  // Every power of two is its own class; one above goes to the next.
  for (int bit = 1; bit < 32; ++bit) {
    const std::uint32_t power = std::uint32_t{1} << bit;
    CHECK(capacity_class(power) == power);
    CHECK(capacity_class(power - 1u) == (bit == 1 ? 1u : power));
    if (bit < 31) CHECK(capacity_class(power + 1u) == power << 1);
  }
}

TEST_CASE("capacity_class saturates at the type's maximum", "[graph][key]") {
  constexpr auto u32_max = std::numeric_limits<std::uint32_t>::max();
  CHECK(capacity_class(0x8000'0000u) == 0x8000'0000u);
  CHECK(capacity_class(0x8000'0001u) == u32_max);
  CHECK(capacity_class(u32_max) == u32_max);
  constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
  CHECK(capacity_class(std::uint64_t{1} << 63) == std::uint64_t{1} << 63);
  CHECK(capacity_class((std::uint64_t{1} << 63) + 1) == u64_max);
  CHECK(capacity_class(u64_max) == u64_max);
  CHECK(capacity_class(std::uint8_t{200}) == std::uint8_t{255});
  CHECK(capacity_class(std::uint8_t{100}) == std::uint8_t{128});
  static_assert(capacity_class(17u) == 32u, "usable in constant expressions");
}

TEST_CASE("scan_topology follows the 256-wide block scan levels", "[graph][key]") {
  SECTION("empty input: no kernels, no levels") {
    constexpr scan_topology t(0);
    CHECK(t.input_length == 0u);
    CHECK(t.level_count == 0u);
    CHECK(t.kernel_node_count() == 0u);
    CHECK(t.block_size == 256u);
  }
  SECTION("one block: one kernel") {
    for (std::uint64_t n :
         {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{255}, std::uint64_t{256}}) {
      const scan_topology t(n);
      CHECK(t.input_length == n);
      CHECK(t.level_count == 0u);
      CHECK(t.kernel_node_count() == 1u);
    }
  }
  SECTION("two levels") {
    constexpr scan_topology t(257);
    static_assert(t.level_count == 1 && t.scratch_lengths[0] == 2 && t.kernel_node_count() == 3);
    CHECK(t.scratch_length(0) == 2u);
    CHECK(t.scratch_length(1) == 0u);
  }
  SECTION("65536 and 65537") {
    const scan_topology exact(65'536);
    REQUIRE(exact.level_count == 1u);
    CHECK(exact.scratch_lengths[0] == 256u);
    CHECK(exact.kernel_node_count() == 3u);
    const scan_topology above(65'537);
    REQUIRE(above.level_count == 2u);
    CHECK(above.scratch_lengths[0] == 257u);
    CHECK(above.scratch_lengths[1] == 2u);
    CHECK(above.kernel_node_count() == 5u);
  }
  SECTION("matches a reference loop for many sizes, up to the u64 maximum") {
    const std::uint64_t sizes[] = {1000u, std::uint64_t{1} << 20, (std::uint64_t{1} << 32) + 7,
                                   123456789012345u, std::numeric_limits<std::uint64_t>::max()};
    for (std::uint64_t n : sizes) {
      const scan_topology t(n);
      std::uint64_t length = n;
      std::uint32_t levels = 0;
      while (length > 256) {
        length = (length - 1) / 256 + 1;  // ceil for length >= 1
        REQUIRE(levels < scan_topology::max_levels);
        CHECK(t.scratch_lengths[levels] == length);
        ++levels;
      }
      CHECK(t.level_count == levels);
      CHECK(t.kernel_node_count() == 1u + 2u * levels);
    }
    CHECK(scan_topology(std::numeric_limits<std::uint64_t>::max()).level_count == 7u);
  }
}

TEST_CASE("graph_key turns sizes into classes and compares every field", "[graph][key]") {
  graph_key_inputs in;
  in.join = join_kind::indexed_inner;
  in.key_arity = 2;
  in.key_bytes = 8;
  in.probe_rows = 1000;
  in.output_rows = 5000;
  in.node_layout_version = 3;
  const graph_key key = vyre::graph::make_graph_key(in);
  CHECK(key.join == join_kind::indexed_inner);
  CHECK(key.key_arity == 2u);
  CHECK(key.key_bytes == 8u);
  CHECK(key.probe_capacity == 1024u);
  CHECK(key.output_capacity == 8192u);
  CHECK(key.probe_scan == scan_topology(1024));
  CHECK(key.probe_scan.kernel_node_count() == 3u);
  CHECK(key.node_layout_version == 3u);

  SECTION("sizes in the same classes give equal keys with equal hashes") {
    graph_key_inputs near = in;
    near.probe_rows = 600;
    near.output_rows = 8000;
    const graph_key other = vyre::graph::make_graph_key(near);
    CHECK(other == key);
    CHECK(hash_value(other) == hash_value(key));
    CHECK(std::hash<graph_key>{}(other) == std::hash<graph_key>{}(key));
  }
  SECTION("each field changes equality") {
    auto differs = [&](auto change) {
      graph_key_inputs changed = in;
      change(changed);
      const graph_key other = vyre::graph::make_graph_key(changed);
      return other != key && hash_value(other) != hash_value(key);
    };
    CHECK(differs([](graph_key_inputs& x) { x.join = join_kind::inner; }));
    CHECK(differs([](graph_key_inputs& x) { x.key_arity = 3; }));
    CHECK(differs([](graph_key_inputs& x) { x.key_bytes = 12; }));
    CHECK(differs([](graph_key_inputs& x) { x.probe_rows = 1025; }));
    CHECK(differs([](graph_key_inputs& x) { x.output_rows = 9000; }));
    CHECK(differs([](graph_key_inputs& x) { x.node_layout_version = 4; }));
  }
  SECTION("keys work in unordered containers") {
    std::unordered_set<graph_key, vyre::graph::graph_key_hash> set;
    for (std::uint64_t rows = 1; rows <= (1u << 20); rows *= 3) {
      graph_key_inputs x = in;
      x.probe_rows = rows;
      set.insert(vyre::graph::make_graph_key(x));
    }
    // 1, 3, 9, ..., 3^12 fall into distinct power-of-two classes except where two share one.
    std::unordered_set<std::uint64_t> classes;
    for (std::uint64_t rows = 1; rows <= (1u << 20); rows *= 3)
      classes.insert(capacity_class(rows));
    CHECK(set.size() == classes.size());
  }
  SECTION("constexpr") {
    constexpr graph_key_inputs c{join_kind::inner, 1, 4, 100, 100, 1};
    constexpr auto made = vyre::graph::detail::make_graph_key(c);
    static_assert(made.has_value() && made->probe_capacity == 128);
    static_assert(hash_value(*made) != 0);
  }
}

TEST_CASE("graph_key rejects an arity above 255 under both policies", "[graph][key]") {
  graph_key_inputs in;
  in.key_arity = 255;
  CHECK(vyre::graph::make_graph_key(in).key_arity == 255u);
  in.key_arity = 256;
  try {
    (void)vyre::graph::make_graph_key(in);
    FAIL("no exception");
  } catch (const vyre::error_exception& e) {
    CHECK(e.code() == vyre::errc::out_of_range);
    CHECK(e.error().value_or("key_arity", 0) == 256u);
    CHECK(e.error().value_or("max", 0) == 255u);
    const std::string message = e.what();
    CHECK(message.find("key arity") != std::string::npos);
    CHECK(message.find("Fix:") != std::string::npos);
  }
  in.key_arity = 70'000;
  const auto result = vyre::graph::make_graph_key<vyre::on_error::return_expected>(in);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::out_of_range);
  CHECK(result.error().value_or("key_arity", 0) == 70'000u);

  graph_key_inputs bad_join;
  bad_join.join = static_cast<join_kind>(7);
  const auto join_result = vyre::graph::make_graph_key<vyre::on_error::return_expected>(bad_join);
  REQUIRE_FALSE(join_result.has_value());
  CHECK(join_result.error().code() == vyre::errc::invalid_argument);
  CHECK(std::string(vyre::graph::join_kind_name(join_kind::indexed_inner)) == "indexed_inner");
}
