// SPDX-License-Identifier: Apache-2.0
// The fast CPU engine (vyre/algorithms/cpu_engine.hpp) against the references: identical
// congruence results (representatives, merges, rebuilt and kept rows) and extraction results
// (costs bit for bit, choices, root cost) on synthetic e-graphs (several seeds and shapes, up to
// 1 M rows, dense and sparse ids) and hand-made cases, at 1 and 2 threads; the same errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu_engine_support.hpp"
#include "reference_support.hpp"
#include "vyre/algorithms.hpp"
#include "vyre/algorithms/cpu_engine.hpp"

using namespace vyre::algorithms;
using vyre::errc;
using vyre_test::add_row;

namespace {

cuda::std::span<const double> span_of(const std::vector<double>& v) {
  return {v.data(), v.size()};
}
cuda::std::span<const std::uint32_t> span_of(const std::vector<std::uint32_t>& v) {
  return {v.data(), v.size()};
}

//! Engine vs reference on `rows` (raw and packed-image inputs), threads 1 and 2.
void check_identical(const raw_rows& rows, const std::vector<double>& cost,
                     const std::vector<std::uint32_t>& roots) {
  const auto closure = congruence_reference(rows.ref());
  REQUIRE(closure.has_value());
  const auto extraction = extract_reference(rows.ref(), span_of(cost), span_of(roots));
  const auto image = pack_reference(rows.ref());
  REQUIRE(image.has_value());
  for (const unsigned threads : {1u, 2u}) {
    INFO("threads " << threads);
    const auto engine_closure = cpu_engine::congruence(rows.ref(), threads);
    REQUIRE(engine_closure.has_value());
    CHECK(vyre_test::congruence_difference(*engine_closure, *closure) == "");
    const auto image_closure = cpu_engine::congruence(image->columns(), threads);
    REQUIRE(image_closure.has_value());
    CHECK(vyre_test::congruence_difference(*image_closure, *closure) == "");

    const auto engine_extraction =
        cpu_engine::extract(rows.ref(), span_of(cost), span_of(roots), threads);
    REQUIRE(engine_extraction.has_value() == extraction.has_value());
    if (extraction.has_value()) {
      CHECK(vyre_test::extraction_difference(*engine_extraction, *extraction) == "");
      const auto image_extraction =
          cpu_engine::extract(image->columns(), span_of(cost), span_of(roots), threads);
      REQUIRE(image_extraction.has_value());
      CHECK(vyre_test::extraction_difference(*image_extraction, *extraction) == "");
    } else {
      CHECK(engine_extraction.error().code() == extraction.error().code());
      CHECK(engine_extraction.error().message() == extraction.error().message());
    }
  }
}

void check_synthetic(const synthetic_options& options) {
  INFO("rows " << options.rows << " seed " << options.seed << " sparse " << options.sparse_ids
               << " window " << options.window);
  const auto graph = make_synthetic_egraph(options);
  REQUIRE(graph.has_value());
  check_identical(graph->rows, graph->cost, graph->roots);
}

}  // namespace

TEST_CASE("cpu engine: synthetic e-graphs, small, many seeds and shapes", "[cpu_engine]") {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    synthetic_options options;
    options.rows = 200 + static_cast<std::uint32_t>(seed) * 97;
    options.seed = seed;
    options.sparse_ids = seed % 2 == 0;
    options.window = seed % 3 == 0 ? 4u : 0xFFFFFFFFu;
    options.op_count = seed % 4 == 0 ? 2u : 8u;
    options.twin_fraction = seed % 5 == 0 ? 0.6 : 0.25;
    check_synthetic(options);
  }
}

TEST_CASE("cpu engine: synthetic e-graphs, 100 k rows (parallel paths)", "[cpu_engine]") {
  for (const bool sparse : {false, true}) {
    synthetic_options options;
    options.rows = 100000;
    options.seed = sparse ? 7 : 8;
    options.sparse_ids = sparse;
    check_synthetic(options);
    options.window = 8;  // long twin chains: many congruence rounds
    options.seed += 100;
    check_synthetic(options);
  }
}

TEST_CASE("cpu engine: more threads than shards divide evenly (3, 5, every core)", "[cpu_engine]") {
  synthetic_options options;
  options.rows = 60000;
  options.seed = 33;
  const auto graph = make_synthetic_egraph(options);
  REQUIRE(graph.has_value());
  const auto closure = congruence_reference(graph->rows.ref());
  REQUIRE(closure.has_value());
  const auto extraction =
      extract_reference(graph->rows.ref(), span_of(graph->cost), span_of(graph->roots));
  REQUIRE(extraction.has_value());
  for (const unsigned threads : {3u, 5u, 0u}) {
    INFO("threads " << threads);
    const auto engine = cpu_engine::congruence(graph->rows.ref(), threads);
    REQUIRE(engine.has_value());
    CHECK(vyre_test::congruence_difference(*engine, *closure) == "");
    const auto engine_extraction = cpu_engine::extract(graph->rows.ref(), span_of(graph->cost),
                                                       span_of(graph->roots), threads);
    REQUIRE(engine_extraction.has_value());
    CHECK(vyre_test::extraction_difference(*engine_extraction, *extraction) == "");
  }
}

TEST_CASE("cpu engine: synthetic e-graphs, 1 M rows, dense and sparse ids", "[cpu_engine][large]") {
  for (const bool sparse : {false, true}) {
    synthetic_options options;
    options.rows = 1u << 20;
    options.seed = sparse ? 21 : 22;
    options.sparse_ids = sparse;
    check_synthetic(options);
  }
}

TEST_CASE("cpu engine: hand-made cycles, self loops and ties", "[cpu_engine]") {
  raw_rows rows;
  add_row(rows, 0, 100, {});    // leaf a
  add_row(rows, 1, 100, {});    // leaf a again: 0 and 1 merge
  add_row(rows, 2, 5, {0});     // f(0)
  add_row(rows, 3, 5, {1});     // f(1): merges with 2 once 0 = 1
  add_row(rows, 3, 6, {3});     // self loop
  add_row(rows, 4, 6, {2});     // g(2) ~ g(3): 4 merges with 3
  add_row(rows, 5, 7, {5, 0});  // cycle only through itself: stays infinite
  add_row(rows, 6, 8, {0, 0});  // child listed twice
  add_row(rows, 6, 9, {1, 1});  // tie with the row above
  add_row(rows, 7, 5, {2});     // duplicate of f(0) in a fresh class: merges with 2
  const std::vector<std::uint32_t> roots{6, 4, 6};
  check_identical(rows, {1, 1, 2, 2, 0, 3, 1, 1, 1, 2}, roots);
  check_identical(rows, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, roots);                 // all zero
  check_identical(rows, {1, 2, -1, 0.5, -0.25, 3, 1, 1, 1, -0.5}, roots);       // negative, acyclic
  check_identical(rows, {-0.0, 0.0, 0.0, -0.0, 0, 0, 0, -0.0, 0.0, 0}, roots);  // signed zeros
  check_identical(rows, {0.1, 0.2, 0.3, 0.7, 0.0, 1e300, 1e308, 1e308, 1e308, 0.3}, roots);
  check_identical(rows, {1, 1, 2, 2, -1, 3, 1, 1, 1, 2}, roots);  // negative self loop: error
}

TEST_CASE("cpu engine: zero-cost cycles and ties between classes", "[cpu_engine]") {
  raw_rows rows;
  add_row(rows, 10, 1, {20});
  add_row(rows, 20, 2, {10});
  add_row(rows, 20, 3, {});
  add_row(rows, 10, 4, {});
  add_row(rows, 30, 5, {10, 20, 10});
  add_row(rows, 30, 6, {20, 10, 20});
  const std::vector<std::uint32_t> roots{30};
  check_identical(rows, {0, 0, 1, 1, 0, 0}, roots);
  check_identical(rows, {0, 0, 2, 1, 1, 1}, roots);
  check_identical(rows, {0.5, 0.5, 0.25, 0.75, 0, 0}, roots);
}

TEST_CASE("cpu engine: a negative-cost cycle is found in a pass or two, not #classes + 1",
          "[cpu_engine]") {
  // A two-class negative cycle (0 -> 1 -> 0, costs 1 and -2) under a chain of 100 k classes: the
  // worklist used to run #classes + 1 passes over the chain (quadratic: minutes) before calling
  // it a cycle; the rows that lowered the costs form a cycle after the first pass. The cycle's
  // rows first (each pass lowers the chain too) or last (the chain waits for them).
  constexpr std::uint32_t chain = 100000;
  for (const bool cycle_first : {true, false}) {
    INFO("cycle first " << cycle_first);
    raw_rows rows;
    std::vector<double> cost;
    const auto add_cycle = [&] {
      add_row(rows, 0, 0, {});   // leaf
      add_row(rows, 1, 1, {0});  // lowers 1 below 0
      add_row(rows, 0, 2, {1});  // and 0 below its leaf
      cost.insert(cost.end(), {1, -2, 1});
    };
    if (cycle_first) add_cycle();
    for (std::uint32_t c = 2; c < chain; ++c) {
      add_row(rows, c, 3, {c - 1});
      cost.push_back(1);
    }
    if (!cycle_first) add_cycle();
    const std::vector<std::uint32_t> roots{chain - 1};
    check_identical(rows, cost, roots);  // the same error as the reference
    const auto found = cpu_engine::extract(rows.ref(), span_of(cost), span_of(roots), 2);
    REQUIRE_FALSE(found.has_value());
    CHECK(found.error().code() == errc::invalid_argument);
    CHECK_THAT(found.error().message(), Catch::Contains("negative-cost cycle"));
    CHECK(found.error().value_or("rounds", 0) <= 2);
    CHECK(found.error().value_or("eclass", 99) <= 1);  // on the cycle
  }
}

TEST_CASE("cpu engine: negative costs without a negative cycle, over many passes", "[cpu_engine]") {
  // No false cycle: a zero-cost cycle next to a negative leaf, and a deep chain of negative
  // costs in reverse row order (a pass per class, so cycle checks after passes 1, 2, 4, ...).
  raw_rows loop;
  add_row(loop, 0, 0, {});   // A leaf, -1
  add_row(loop, 0, 1, {1});  // A <- B, 0
  add_row(loop, 1, 2, {0});  // B <- A, 0
  check_identical(loop, {-1, 0, 0}, {1});
  check_identical(loop, {-1, 0, 0.5}, {1});
  raw_rows rows;
  for (std::uint32_t i = 3000; i > 0; --i) add_row(rows, i, 1, {i - 1});
  add_row(rows, 0, 0, {});
  add_row(rows, 1500, 2, {1500});  // a self loop that costs more than it saves
  std::vector<double> cost(rows.row_count(), -0.5);
  cost.back() = 0.25;
  check_identical(rows, cost, {3000, 1500});
  const std::vector<std::uint32_t> root{3000};
  const auto found = cpu_engine::extract(rows.ref(), span_of(cost), span_of(root), 1);
  REQUIRE(found.has_value());
  CHECK(found->rounds > 1000);
  CHECK(found->root_cost == -0.5 * 3001);
}

TEST_CASE("cpu engine: a tie that becomes ready after its class is final", "[cpu_engine]") {
  // C's leaf (row 3) makes C final at 2; row 2 (C <- D, cost 0) is ready only once D is final,
  // also at 2, one zero-cost step later (E -> D). The reference picks row 2, the smaller index.
  raw_rows rows;
  add_row(rows, 4, 1, {});      // row 0: E leaf
  add_row(rows, 3, 2, {4});     // row 1: D <- E
  add_row(rows, 2, 3, {3});     // row 2: C <- D
  add_row(rows, 2, 4, {});      // row 3: C leaf
  add_row(rows, 1, 5, {2, 3});  // row 4: root
  check_identical(rows, {2, 0, 0, 2, 1}, {1});
  check_identical(rows, {2, 0, 0, 1, 1}, {1});
  check_identical(rows, {2, 0, 0, 3, 1}, {1});
}

TEST_CASE("cpu engine: empty input and a single leaf", "[cpu_engine]") {
  raw_rows empty;
  const auto closure = cpu_engine::congruence(empty.ref(), 2);
  REQUIRE(closure.has_value());
  CHECK(closure->eclass_ids.empty());
  CHECK(closure->rebuilt.row_count() == 0);
  raw_rows leaf;
  add_row(leaf, 0xFFFFFFFFu, 0, {});
  check_identical(leaf, {3}, {0xFFFFFFFFu});
}

TEST_CASE("cpu engine: the references' errors for bad input", "[cpu_engine]") {
  raw_rows rows;
  add_row(rows, 0, 1, {});
  add_row(rows, 1, 2, {0, 7});  // 7 has no row
  for (const unsigned threads : {1u, 2u}) {
    const auto engine = cpu_engine::congruence(rows.ref(), threads);
    const auto reference = congruence_reference(rows.ref());
    REQUIRE(!engine.has_value());
    REQUIRE(!reference.has_value());
    CHECK(engine.error().code() == errc::not_found);
    CHECK(engine.error().message() == reference.error().message());
    const std::vector<double> cost{1, 1};
    const std::vector<std::uint32_t> roots{0};
    const auto extraction = cpu_engine::extract(rows.ref(), span_of(cost), span_of(roots), threads);
    REQUIRE(!extraction.has_value());
    CHECK(extraction.error().message() ==
          extract_reference(rows.ref(), span_of(cost), span_of(roots)).error().message());
  }

  raw_rows good;
  add_row(good, 0, 1, {});
  add_row(good, 1, 2, {0, 0});
  raw_rows_ref short_children = good.ref();
  short_children.child_count = 1;  // lengths run past
  raw_rows_ref long_children = good.ref();
  ++long_children.child_count;  // lengths do not add up (the buffer has capacity: never read)
  good.children.push_back(0);
  long_children.children = good.children.data();
  short_children.children = good.children.data();
  for (const raw_rows_ref& bad : {short_children, long_children}) {
    const auto engine = cpu_engine::congruence(bad, 2);
    const auto reference = congruence_reference(bad);
    REQUIRE(!engine.has_value());
    REQUIRE(!reference.has_value());
    CHECK(engine.error().code() == reference.error().code());
    CHECK(engine.error().message() == reference.error().message());
  }

  // Extraction argument errors, in the reference's order.
  raw_rows pair;
  add_row(pair, 0, 1, {});
  add_row(pair, 1, 2, {0});
  const std::vector<std::uint32_t> roots{1};
  const std::vector<std::uint32_t> unknown_root{5};
  const std::vector<double> one{1};
  const std::vector<double> not_finite{1, std::numeric_limits<double>::quiet_NaN()};
  const std::vector<double> fine{1, 1};
  const auto same_error = [&](const std::vector<double>& cost,
                              const std::vector<std::uint32_t>& r) {
    const auto engine = cpu_engine::extract(pair.ref(), span_of(cost), span_of(r), 2);
    const auto reference = extract_reference(pair.ref(), span_of(cost), span_of(r));
    REQUIRE(!engine.has_value());
    REQUIRE(!reference.has_value());
    CHECK(engine.error().code() == reference.error().code());
    CHECK(engine.error().message() == reference.error().message());
  };
  same_error(one, roots);
  same_error(not_finite, roots);
  same_error(fine, unknown_root);

  // A packed image whose children run past the children column.
  auto image = pack_reference(pair.ref());
  REQUIRE(image.has_value());
  std::vector<std::uint32_t> corrupt = vyre_test::words_of(*image);
  corrupt[image->layout().offset(image_column::row_children_lens) + 1] = 3;
  const image_columns columns = image_columns::from_words(corrupt.data(), image->layout());
  const auto engine = cpu_engine::congruence(columns, 2);
  const auto reference = congruence_reference(columns);
  REQUIRE(!engine.has_value());
  REQUIRE(!reference.has_value());
  CHECK(engine.error().code() == errc::out_of_range);
  CHECK(engine.error().message() == reference.error().message());
}
