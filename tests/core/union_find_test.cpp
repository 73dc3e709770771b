// SPDX-License-Identifier: Apache-2.0
// vyre::host_union_find against a brute-force partition: random unions over 2,000 ids, the
// smallest id of every set its root, `unite`'s answer naming the root that stopped being one,
// `find_const` equal to `find`, growth that keeps the sets made before, and `link`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <vyre/core/union_find.hpp>

using u32 = std::uint32_t;

TEST_CASE("host_union_find keeps the smallest id of a set as its root", "[core][union_find]") {
  constexpr u32 ids = 2000;
  vyre::host_union_find<> sets;
  REQUIRE(sets.grow(ids, "ids").has_value());
  REQUIRE(sets.size() == ids);
  // The oracle: every id's set as a label, relabelled on every union.
  std::vector<u32> label(ids);
  std::iota(label.begin(), label.end(), 0u);
  std::mt19937 rng(3);
  std::uniform_int_distribution<u32> pick(0, ids - 1);
  u32 merges = 0;
  for (int i = 0; i < 1500; ++i) {
    const u32 a = pick(rng), b = pick(rng);
    const u32 la = label[a], lb = label[b];
    const u32 away = sets.unite(a, b);
    if (la == lb) {
      CHECK(away == sets.none);
      continue;
    }
    ++merges;
    // The root that stopped being one is the larger of the two sets' smallest ids.
    u32 smallest_a = ids, smallest_b = ids;
    for (u32 x = 0; x < ids; ++x) {
      if (label[x] == la) smallest_a = std::min(smallest_a, x);
      if (label[x] == lb) smallest_b = std::min(smallest_b, x);
    }
    CHECK(away == std::max(smallest_a, smallest_b));
    for (u32& l : label)
      if (l == lb) l = la;
  }
  CHECK(merges > 500);
  u32 wrong = 0;
  for (u32 x = 0; x < ids; ++x) {
    u32 smallest = ids;
    for (u32 y = 0; y < ids; ++y)
      if (label[y] == label[x]) smallest = std::min(smallest, y);
    wrong += sets.find_const(x) != smallest ? 1 : 0;
    wrong += sets.find(x) != smallest ? 1 : 0;
    wrong += sets.is_root(x) != (x == smallest) ? 1 : 0;
    wrong += sets.parents()[x] > x ? 1 : 0;  // a parent is never a larger id
  }
  CHECK(wrong == 0);

  // Growth adds singletons and keeps the sets.
  const u32 root_of_last = sets.find(ids - 1);
  sets.add();
  REQUIRE(sets.grow(9, "ids").has_value());
  CHECK(sets.size() == ids + 10);
  CHECK(sets.find(ids - 1) == root_of_last);
  for (u32 x = ids; x < ids + 10; ++x) CHECK(sets.find(x) == x);
}

TEST_CASE("host_union_find joins by the caller's rule with link", "[core][union_find]") {
  vyre::host_union_find<> sets;
  REQUIRE(sets.grow(5, "ids").has_value());
  sets.link(0, 4);  // the caller keeps 4 as the root (its larger set, say)
  sets.link(2, 4);
  CHECK(sets.find(0) == 4);
  CHECK(sets.find_const(2) == 4);
  CHECK(sets.is_root(4));
  CHECK_FALSE(sets.is_root(0));
  CHECK(sets.find(1) == 1);
}

TEST_CASE("host_union_find reports a growth it cannot make and keeps its ids",
          "[core][union_find]") {
  vyre::host_union_find<> sets;
  REQUIRE(sets.grow(3, "ids").has_value());
  sets.unite(2, 0);
  const auto too_many = sets.grow(std::numeric_limits<std::size_t>::max() / 2, "my classes");
  REQUIRE_FALSE(too_many.has_value());
  CHECK(too_many.error().code() == vyre::errc::out_of_memory);
  CHECK(sets.size() == 3);
  CHECK(sets.find(2) == 0);
}
