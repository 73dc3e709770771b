// SPDX-License-Identifier: Apache-2.0
// CPU references on every real e-graph of VYRE_EGRAPH_DATA_DIR: the extraction root cost equals
// expected_tree_cost.tsv (relative 1e-9), and per class equals a naive Bellman-Ford oracle with
// a valid choice; congruence closure gives the naive fixpoint oracle's partition and a
// canonical, duplicate-free rebuild that packs. data_main.cpp reports SKIPPED (exit 77) when
// the folder is missing.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>

#include "egraph_json.hpp"
#include "reference_support.hpp"
#include "vyre/algorithms.hpp"

using namespace vyre::algorithms;

namespace {
const std::filesystem::path data_dir{VYRE_EGRAPH_DATA_DIR};
}

TEST_CASE("every real e-graph: CPU extraction matches expected_tree_cost.tsv", "[data]") {
  const auto expected =
      vyre_test::load_expected_costs((data_dir / "expected_tree_cost.tsv").string());
  REQUIRE(expected.size() > 10);
  for (const auto& entry : expected) {
    INFO(entry.file);
    const auto graph = vyre_test::load_egraph_json((data_dir / entry.file).string());
    auto result = extract_reference(graph.rows.ref(), {graph.cost.data(), graph.cost.size()},
                                    {graph.roots.data(), graph.roots.size()});
    REQUIRE(result.has_value());
    CHECK(std::abs(result->root_cost - entry.root_tree_cost) <=
          1e-9 * (std::max)(1.0, std::abs(entry.root_tree_cost)));
    CHECK(vyre_test::extraction_mismatch(graph.rows, graph.cost, graph.roots, *result) == "");
    auto closure = congruence_reference(graph.rows.ref());
    REQUIRE(closure.has_value());
    CHECK(closure->rebuilt.row_count() <= graph.rows.row_count());
    CHECK(vyre_test::congruence_mismatch(graph.rows, *closure) == "");
    CHECK(pack_reference(closure->rebuilt.ref()).has_value());
  }
}
