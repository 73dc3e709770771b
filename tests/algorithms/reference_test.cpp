// SPDX-License-Identifier: Apache-2.0
// CPU references: packing, congruence closure, extraction, and the synthetic generator.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <type_traits>
#include <vector>

#include "egraph_pack_support.hpp"
#include "reference_support.hpp"
#include "vyre/algorithms.hpp"
#include "vyre/egraph.hpp"

using namespace vyre::algorithms;
using vyre::errc;
using vyre_test::add_row;
using vyre_test::design_example;

namespace {

std::map<std::uint32_t, std::uint32_t> class_map(const congruence_result& result) {
  std::map<std::uint32_t, std::uint32_t> map;
  for (std::size_t i = 0; i < result.eclass_ids.size(); ++i)
    map[result.eclass_ids[i]] = result.representative[i];
  return map;
}

congruence_result congruence_of(const raw_rows& rows) {
  auto result = congruence_reference(rows.ref());
  REQUIRE(result.has_value());
  CHECK(class_map(*result) == vyre_test::naive_congruence(rows));
  CHECK(vyre_test::congruence_mismatch(rows, *result) == "");
  return std::move(*result);
}

cuda::std::span<const double> span_of(const std::vector<double>& v) {
  return {v.data(), v.size()};
}
cuda::std::span<const std::uint32_t> span_of(const std::vector<std::uint32_t>& v) {
  return {v.data(), v.size()};
}

}  // namespace

// docs/image_format.md, "Worked example".
TEST_CASE("pack_reference reproduces the format's worked example", "[pack]") {
  const raw_rows rows = design_example();
  auto image = pack_reference(rows.ref());
  REQUIRE(image.has_value());
  const image_layout& at = image->layout();
  CHECK(at.word_count() == 6 * 3 + 2 + 2 * 2 + 1);
  CHECK(at.offset(image_column::group_offsets) * 4 == 76);
  const std::vector<std::uint32_t> w = vyre_test::words_of(*image);
  const auto column = [&](std::uint64_t offset, std::uint64_t length) {
    return std::vector<std::uint32_t>(w.begin() + static_cast<std::ptrdiff_t>(offset),
                                      w.begin() + static_cast<std::ptrdiff_t>(offset + length));
  };
  CHECK(column(at.offset(image_column::row_eclass_ids), 3) == std::vector<std::uint32_t>{2, 1, 2});
  CHECK(column(at.offset(image_column::row_language_op_ids), 3) ==
        std::vector<std::uint32_t>{0, 0, 1});
  CHECK(column(at.offset(image_column::row_children_offsets), 3) ==
        std::vector<std::uint32_t>{0, 0, 0});
  CHECK(column(at.offset(image_column::row_children_lens), 3) ==
        std::vector<std::uint32_t>{0, 0, 2});
  CHECK(column(at.offset(image_column::children), 2) == std::vector<std::uint32_t>{1, 2});
  CHECK(column(at.offset(image_column::group_eclass_ids), 2) == std::vector<std::uint32_t>{1, 2});
  CHECK(column(at.offset(image_column::group_offsets), 3) == std::vector<std::uint32_t>{0, 1, 3});
  CHECK(column(at.offset(image_column::group_rows), 3) == std::vector<std::uint32_t>{1, 0, 2});
  const std::uint32_t kids[] = {1, 2};
  CHECK(w[at.offset(image_column::row_signatures) + 2] == vyre::egraph::row_signature(1, kids, 2));
  CHECK(w[at.offset(image_column::row_signatures) + 0] ==
        vyre::egraph::row_signature(0, nullptr, 0));
}

TEST_CASE("pack_reference is byte-identical to vyre::egraph::pack", "[pack]") {
  CHECK(vyre_test::words_of(*pack_reference(design_example().ref())) ==
        vyre_test::egraph_pack_words(design_example()));
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    auto graph = make_synthetic_egraph({.rows = 20000, .seed = seed, .sparse_ids = seed % 2 == 0});
    REQUIRE(graph.has_value());
    auto image = pack_reference(graph->rows.ref());
    REQUIRE(image.has_value());
    CHECK(vyre_test::words_of(*image) == vyre_test::egraph_pack_words(graph->rows));
  }
}

TEST_CASE("an egraph::pack image is a image_columns the algorithms run on", "[pack]") {
  vyre::egraph::snapshot snapshot;
  const std::uint32_t lit = snapshot.intern_op("lit");
  const std::uint32_t add = snapshot.intern_op("add");
  snapshot.add_row(2, lit);
  snapshot.add_row(1, lit);
  snapshot.add_row(2, add, {1, 2});
  const vyre::egraph::host_image image = vyre::egraph::pack(snapshot);
  auto layout = require_standard_layout(image.layout());
  REQUIRE(layout.has_value());
  CHECK(*layout == pack_reference(design_example().ref())->layout());
  const image_columns view = image_columns::from_words(image.words().data(), *layout);
  CHECK(view.group_offsets()[1] == 1);
  auto closure = congruence_reference(view);
  REQUIRE(closure.has_value());
  CHECK(closure->merges == 1);  // lit in e-class 2 and lit in e-class 1 are congruent

  vyre::egraph::image_layout shuffled = image.layout();
  std::swap(shuffled.spans[column_index(image_column::row_eclass_ids)],
            shuffled.spans[column_index(image_column::row_language_op_ids)]);
  auto rejected = require_standard_layout(shuffled);
  REQUIRE_FALSE(rejected.has_value());
  CHECK(rejected.error().code() == errc::invalid_layout);
}

TEST_CASE("row signature: known value, order matters, e-class ignored", "[pack]") {
  // h = 0xA24BAED4 mixed with op 0 and length 0, computed by hand from the formula in
  // docs/image_format.md.
  std::uint32_t h = 0xA24BAED4u;
  for (std::uint32_t v : {0u, 0u}) {
    const std::uint32_t m = h ^ (v + 0x9E3779B9u + (h << 6) + (h >> 2));
    h = ((m << 13) | (m >> 19)) * 0x85EBCA6Bu;
  }
  CHECK(vyre::egraph::row_signature(0, nullptr, 0) == h);
  const std::uint32_t ab[] = {1, 2}, ba[] = {2, 1};
  CHECK(vyre::egraph::row_signature(3, ab, 2) != vyre::egraph::row_signature(3, ba, 2));
  static_assert(vyre::egraph::row_signature(0, nullptr, 0) != 0);
}

TEST_CASE("pack_reference rejects bad rows with the values named", "[pack][errors]") {
  raw_rows rows;
  add_row(rows, 1, 0, {7});
  auto missing = pack_reference(rows.ref());
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == errc::not_found);
  CHECK(missing.error().value_or("child_eclass", 0) == 7);

  raw_rows_ref short_children = rows.ref();
  short_children.child_count = 0;
  auto overrun = pack_reference(short_children);
  REQUIRE_FALSE(overrun.has_value());
  CHECK(overrun.error().code() == errc::out_of_range);

  raw_rows leaf;
  add_row(leaf, 1, 0, {});
  raw_rows_ref extra_children = leaf.ref();
  const std::uint32_t stray = 1;
  extra_children.children = &stray;
  extra_children.child_count = 1;
  auto mismatch = pack_reference(extra_children);
  REQUIRE_FALSE(mismatch.has_value());
  CHECK(mismatch.error().code() == errc::invalid_argument);
  CHECK(mismatch.error().value_or("child_count", 0) == 1);
  CHECK(congruence_reference(extra_children).error().code() == errc::invalid_argument);
}

TEST_CASE("empty input packs to one word and has nothing to merge", "[pack][congruence]") {
  raw_rows rows;
  auto image = pack_reference(rows.ref());
  REQUIRE(image.has_value());
  CHECK(vyre_test::words_of(*image) == std::vector<std::uint32_t>{0});
  auto result = congruence_reference(rows.ref());
  REQUIRE(result.has_value());
  CHECK(result->merges == 0);
  CHECK(result->rebuilt.row_count() == 0);
}

TEST_CASE("congruence: a chain where each merge enables the next", "[congruence]") {
  constexpr std::uint32_t depth = 50;
  raw_rows rows;
  // a_0 = leaf, b_0 = leaf (same op): congruent. a_i = f(a_{i-1}), b_i = f(b_{i-1}).
  add_row(rows, 0, 9, {});
  add_row(rows, 1000, 9, {});
  for (std::uint32_t i = 1; i <= depth; ++i) {
    add_row(rows, 1000 + i, 1, {1000 + i - 1});  // b side first: order must not matter
    add_row(rows, i, 1, {i - 1});
  }
  const congruence_result result = congruence_of(rows);
  CHECK(result.merges == depth + 1);
  CHECK(result.rounds >= 2);
  for (std::size_t i = 0; i < result.eclass_ids.size(); ++i)
    CHECK(result.representative[i] == result.eclass_ids[i] % 1000);
  // Rebuilt: one row per level, first occurrences kept (the b rows came first at each level).
  REQUIRE(result.rebuilt.row_count() == depth + 1);
  CHECK(result.kept_rows.front() == 0);
  CHECK(result.rebuilt.row_eclass_ids[1] == 1);
  CHECK(result.rebuilt.children[0] == 0);
  CHECK(result.kept_rows[1] == 2);
}

TEST_CASE("congruence: diamonds, self-loops and rows with many children", "[congruence]") {
  SECTION("diamond") {
    raw_rows rows;
    add_row(rows, 1, 0, {});      // x
    add_row(rows, 2, 0, {});      // y == x
    add_row(rows, 3, 1, {1});     // u = f(x)
    add_row(rows, 4, 2, {2});     // v = g(y)
    add_row(rows, 5, 3, {3, 4});  // h(u, v)
    add_row(rows, 6, 3, {3, 4});  // h(u, v) again: 5 == 6
    add_row(rows, 7, 1, {2});     // f(y) == u
    const congruence_result result = congruence_of(rows);
    const auto map = class_map(result);
    CHECK(map.at(2) == 1);
    CHECK(map.at(6) == 5);
    CHECK(map.at(7) == 3);
    CHECK(map.at(4) == 4);
    CHECK(result.merges == 3);
  }
  SECTION("self-loops stay apart until their e-classes meet") {
    raw_rows rows;
    add_row(rows, 10, 1, {10});
    add_row(rows, 20, 1, {20});
    const congruence_result apart = congruence_of(rows);
    CHECK(apart.merges == 0);
    add_row(rows, 10, 2, {});
    add_row(rows, 20, 2, {});
    const congruence_result together = congruence_of(rows);
    CHECK(together.merges == 1);
    CHECK(class_map(together).at(20) == 10);
    // f(10) and f(20) become the same row; g twice too.
    CHECK(together.rebuilt.row_count() == 2);
    CHECK(together.rebuilt.children == std::vector<std::uint32_t>{10});
  }
  SECTION("many children, merged one position at a time") {
    raw_rows rows;
    std::vector<std::uint32_t> left, right;
    for (std::uint32_t i = 0; i < 300; ++i) {
      add_row(rows, 2 * i, 5, {});
      add_row(rows, 2 * i + 1, 5, {});
      left.push_back(2 * i);
      right.push_back(2 * i + 1);
    }
    add_row(rows, 100000, 6, left);
    add_row(rows, 100001, 6, right);
    const congruence_result result = congruence_of(rows);
    CHECK(class_map(result).at(100001) == 100000);
    CHECK(result.merges == 599 + 1);
  }
  SECTION("sparse ids across the whole u32 range") {
    raw_rows rows;
    add_row(rows, 0xFFFFFFFFu, 0, {});
    add_row(rows, 0x80000000u, 0, {});
    add_row(rows, 7, 1, {0xFFFFFFFFu, 0xFFFFFFFFu});
    add_row(rows, 0xFFFFFFFEu, 1, {0x80000000u, 0xFFFFFFFFu});
    const congruence_result result = congruence_of(rows);
    const auto map = class_map(result);
    CHECK(map.at(0xFFFFFFFFu) == 0x80000000u);
    CHECK(map.at(0xFFFFFFFEu) == 7);
  }
}

TEST_CASE("congruence: a signature collision never merges different rows", "[congruence]") {
  const auto hit = vyre_test::colliding_children(4);
  const std::uint32_t a[] = {hit.a0, hit.a1}, b[] = {hit.b0, hit.b1};
  REQUIRE((hit.a0 != hit.b0 || hit.a1 != hit.b1));
  REQUIRE(vyre::egraph::row_signature(4, a, 2) == vyre::egraph::row_signature(4, b, 2));
  const raw_rows rows = vyre_test::collision_rows(hit, 4);
  const congruence_result result = congruence_of(rows);
  CHECK(result.merges == 0);
  CHECK(result.rebuilt.row_count() == rows.row_count());
}

TEST_CASE("congruence: a long cascade over synthetic e-graphs matches the naive oracle",
          "[congruence][synthetic]") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    synthetic_options options;
    options.rows = 3000;
    options.seed = seed;
    options.sparse_ids = seed % 2 == 0;
    options.window = seed <= 3 ? 2 : 64;  // narrow windows make long cascades
    options.op_count = seed % 3 == 0 ? 1 : 8;
    auto graph = make_synthetic_egraph(options);
    REQUIRE(graph.has_value());
    const congruence_result result = congruence_of(graph->rows);
    CHECK(result.merges >= graph->planted_twins);
    // The rebuilt rows are canonical and distinct, and packing them succeeds.
    std::set<std::vector<std::uint32_t>> distinct;
    std::size_t at = 0;
    const auto map = class_map(result);
    for (std::uint32_t r = 0; r < result.rebuilt.row_count(); ++r) {
      std::vector<std::uint32_t> key{result.rebuilt.row_eclass_ids[r],
                                     result.rebuilt.row_language_op_ids[r]};
      CHECK(map.at(result.rebuilt.row_eclass_ids[r]) == result.rebuilt.row_eclass_ids[r]);
      for (std::uint32_t k = 0; k < result.rebuilt.row_children_lens[r]; ++k) {
        const std::uint32_t child = result.rebuilt.children[at + k];
        CHECK(map.at(child) == child);
        key.push_back(child);
      }
      at += result.rebuilt.row_children_lens[r];
      CHECK(distinct.insert(key).second);
    }
    CHECK(pack_reference(result.rebuilt.ref()).has_value());
  }
}

TEST_CASE("congruence over a packed image equals congruence over its raw rows", "[congruence]") {
  auto graph = make_synthetic_egraph({.rows = 2000, .seed = 11, .sparse_ids = true});
  REQUIRE(graph.has_value());
  auto image = pack_reference(graph->rows.ref());
  REQUIRE(image.has_value());
  auto from_image = congruence_reference(image->columns());
  auto from_rows = congruence_reference(graph->rows.ref());
  REQUIRE(from_image.has_value());
  REQUIRE(from_rows.has_value());
  CHECK(from_image->representative == from_rows->representative);
  CHECK(from_image->rebuilt.children == from_rows->rebuilt.children);
}

TEST_CASE("extraction: tree costs, ties, repeated children", "[extract]") {
  raw_rows rows;
  add_row(rows, 0, 0, {1, 1});  // row 0: 0 + 10 + 10
  add_row(rows, 0, 1, {});      // row 1: 5
  add_row(rows, 1, 2, {});      // row 2: 10
  add_row(rows, 2, 3, {});      // row 3: 5  (tie with row 4: row 3 wins)
  add_row(rows, 2, 4, {});      // row 4: 5
  const std::vector<double> cost{0, 5, 10, 5, 5};
  const std::vector<std::uint32_t> roots{0, 1};
  auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
  REQUIRE(result.has_value());
  CHECK(result->cost == std::vector<double>{5, 10, 5});
  CHECK(result->choice == std::vector<std::uint32_t>{1, 2, 3});
  CHECK(result->root_cost == 15.0);
}

TEST_CASE("extraction: classes reachable only through cycles stay infinite", "[extract]") {
  raw_rows rows;
  add_row(rows, 1, 0, {2});  // 1 -> 2 -> 1: no leaf
  add_row(rows, 2, 0, {1});
  add_row(rows, 3, 1, {});      // leaf
  add_row(rows, 4, 2, {3, 4});  // self-loop, plus a way out
  add_row(rows, 4, 3, {3});
  const std::vector<double> cost{1, 1, 2, 1, 3};
  const std::vector<std::uint32_t> roots{4};
  auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
  REQUIRE(result.has_value());
  constexpr double inf = std::numeric_limits<double>::infinity();
  CHECK(result->cost == std::vector<double>{inf, inf, 2, 5});
  CHECK(result->choice == std::vector<std::uint32_t>{no_row, no_row, 2, 4});
  CHECK(result->root_cost == 5.0);
}

TEST_CASE("extraction: a deep chain converges and matches the closed form", "[extract]") {
  raw_rows rows;
  constexpr std::uint32_t depth = 2000;
  // Rows in reverse order so the in-place sweep cannot finish in one pass.
  for (std::uint32_t i = depth; i > 0; --i) add_row(rows, i, 1, {i - 1});
  add_row(rows, 0, 0, {});
  std::vector<double> cost(rows.row_count(), 1.0);
  const std::vector<std::uint32_t> roots{depth};
  auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
  REQUIRE(result.has_value());
  CHECK(result->root_cost == depth + 1.0);
  CHECK(result->rounds == depth + 1);  // one level per pass; the last pass queues nothing
}

TEST_CASE("extraction: every class's cost and choice agree with the naive oracle", "[extract]") {
  const auto check = [](const raw_rows& rows, const std::vector<double>& cost,
                        const std::vector<std::uint32_t>& roots) {
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
    REQUIRE(result.has_value());
    CHECK(vyre_test::extraction_mismatch(rows, cost, roots, *result) == "");
  };
  SECTION("ties, repeated children, cycles, classes without a tree") {
    const auto ties = vyre_test::ties_and_cycles();
    check(ties.rows, ties.cost, ties.roots);
  }
  SECTION("zero and negative node costs without a negative cycle") {
    raw_rows rows;
    add_row(rows, 1, 0, {2});
    add_row(rows, 2, 0, {1});
    add_row(rows, 2, 1, {});
    add_row(rows, 3, 2, {1, 2, 1});
    add_row(rows, 3, 3, {});
    check(rows, {-3, 4, 0, 0, 1}, {1, 3});
  }
  SECTION("a deep chain in reverse row order, sparse ids") {
    raw_rows rows;
    for (std::uint32_t i = 500; i > 0; --i)
      add_row(rows, 0x10000000u * (i % 16) + i, 1, {0x10000000u * ((i - 1) % 16) + i - 1});
    add_row(rows, 0, 0, {});
    check(rows, std::vector<double>(rows.row_count(), 1.5), {0x10000000u * 4 + 500});
  }
  SECTION("synthetic e-graphs") {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      auto graph = make_synthetic_egraph(
          {.rows = 3000, .seed = seed, .window = 8, .sparse_ids = seed % 2 == 0});
      REQUIRE(graph.has_value());
      check(graph->rows, graph->cost, graph->roots);
    }
  }
}

TEST_CASE("extraction oracle check: a wrong cost, choice or root cost is reported", "[extract]") {
  raw_rows rows;
  add_row(rows, 0, 0, {1, 1});  // 20
  add_row(rows, 0, 1, {});      // 5
  add_row(rows, 1, 2, {});      // 10
  add_row(rows, 2, 3, {2});     // no tree
  const std::vector<double> cost{0, 5, 10, 1};
  const std::vector<std::uint32_t> roots{0, 1};
  auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
  REQUIRE(result.has_value());
  REQUIRE(vyre_test::extraction_mismatch(rows, cost, roots, *result) == "");
  auto wrong_cost = *result;
  wrong_cost.cost[1] = 11;
  CHECK(vyre_test::extraction_mismatch(rows, cost, roots, wrong_cost).find("cost 11") !=
        std::string::npos);
  auto wrong_choice = *result;
  wrong_choice.choice[0] = 0;  // a row of class 0, but it costs 20, not 5
  CHECK(vyre_test::extraction_mismatch(rows, cost, roots, wrong_choice).find("costs 20") !=
        std::string::npos);
  auto foreign_choice = *result;
  foreign_choice.choice[0] = 2;  // a row of class 1
  CHECK(vyre_test::extraction_mismatch(rows, cost, roots, foreign_choice).find("not a row") !=
        std::string::npos);
  auto treeless_choice = *result;
  treeless_choice.choice[2] = 3;
  CHECK(vyre_test::extraction_mismatch(rows, cost, roots, treeless_choice).find("no finite tree") !=
        std::string::npos);
  auto wrong_root = *result;
  wrong_root.root_cost = 16;
  CHECK(vyre_test::extraction_mismatch(rows, cost, roots, wrong_root).find("root cost") !=
        std::string::npos);
}

TEST_CASE("congruence oracle check: a wrong partition or rebuild is reported", "[congruence]") {
  raw_rows rows;
  add_row(rows, 1, 0, {});
  add_row(rows, 2, 0, {});
  add_row(rows, 3, 1, {1});
  add_row(rows, 4, 1, {2});
  auto result = congruence_reference(rows.ref());
  REQUIRE(result.has_value());
  REQUIRE(vyre_test::congruence_mismatch(rows, *result) == "");
  auto split = *result;
  split.representative[1] = 2;  // 2 kept apart from 1
  CHECK(vyre_test::congruence_mismatch(rows, split).find("class 1") != std::string::npos);
  auto stale_child = *result;
  stale_child.rebuilt.children[0] = 2;  // not a representative
  CHECK(vyre_test::congruence_mismatch(rows, stale_child).find("rebuilt rows differ") !=
        std::string::npos);
  auto duplicate = *result;
  vyre_test::add_row(duplicate.rebuilt, 1, 0, {});
  duplicate.kept_rows.push_back(1);
  CHECK(vyre_test::congruence_mismatch(rows, duplicate).find("rebuilt rows differ") !=
        std::string::npos);
}

TEST_CASE("extraction: errors name the value", "[extract][errors]") {
  const raw_rows rows = vyre_test::two_class_cycle();
  const std::vector<std::uint32_t> roots{1};
  SECTION("negative-cost cycle") {
    const std::vector<double> cost{-3, 1, 0};
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == errc::invalid_argument);
    CHECK(result.error().value_or("classes", 0) == 2);
    CHECK(result.error().message().find("negative-cost cycle") != std::string::npos);
  }
  SECTION("negative costs without a negative cycle are fine") {
    const std::vector<double> cost{-3, 4, 0};
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
    REQUIRE(result.has_value());
    CHECK(result->root_cost == -3.0);
  }
  SECTION("wrong cost count") {
    const std::vector<double> cost{1, 1};
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().value_or("costs", 0) == 2);
  }
  SECTION("non-finite cost") {
    const std::vector<double> cost{1, std::nan(""), 1};
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(roots));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().value_or("row", 9) == 1);
  }
  SECTION("unknown root") {
    const std::vector<double> cost{1, 1, 1};
    const std::vector<std::uint32_t> bad_roots{1, 99};
    auto result = extract_reference(rows.ref(), span_of(cost), span_of(bad_roots));
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == errc::not_found);
    CHECK(result.error().value_or("eclass", 0) == 99);
  }
}

TEST_CASE("synthetic generator: deterministic, valid, every class finite", "[synthetic]") {
  synthetic_options options;
  options.rows = 5000;
  options.seed = 3;
  auto first = make_synthetic_egraph(options);
  auto second = make_synthetic_egraph(options);
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  CHECK(first->rows.children == second->rows.children);
  CHECK(first->planted_twins > 0);
  CHECK(pack_reference(first->rows.ref()).has_value());
  auto extraction =
      extract_reference(first->rows.ref(), span_of(first->cost), span_of(first->roots));
  REQUIRE(extraction.has_value());
  for (const double c : extraction->cost) CHECK(std::isfinite(c));
  CHECK_FALSE(make_synthetic_egraph({.rows = 0}).has_value());
}

TEST_CASE("pack_reference gives an egraph::host_image, and the old type name stays an alias",
          "[pack]") {
  auto image = pack_reference(design_example().ref());
  REQUIRE(image.has_value());
  static_assert(std::is_same_v<std::decay_t<decltype(*image)>, vyre::egraph::host_image>);
  // Its columns are the unchecked view the algorithms take, over its own words.
  const image_columns columns = image->columns();
  CHECK(columns.row_count() == 3);
  CHECK(columns.row_eclass_ids() == image->words().data());
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  static_assert(std::is_same_v<vyre::algorithms::host_packed_image, vyre::egraph::host_image>);
#pragma GCC diagnostic pop
}
