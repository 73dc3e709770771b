// SPDX-License-Identifier: Apache-2.0
// The fast CPU engine against the references on every real e-graph of VYRE_EGRAPH_DATA_DIR
// (every *.json listed in expected_tree_cost.tsv), threads 1 and 2: identical congruence and
// extraction results. data_main.cpp reports SKIPPED (exit 77) when the folder is missing.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "cpu_engine_support.hpp"
#include "egraph_json.hpp"
#include "vyre/algorithms.hpp"
#include "vyre/algorithms/cpu_engine.hpp"

using namespace vyre::algorithms;

namespace {
const std::filesystem::path data_dir{VYRE_EGRAPH_DATA_DIR};
}

TEST_CASE("every real e-graph: the CPU engine equals the references", "[data]") {
  const auto files = vyre_test::load_expected_costs((data_dir / "expected_tree_cost.tsv").string());
  REQUIRE(files.size() > 10);
  for (const auto& entry : files) {
    INFO(entry.file);
    const auto graph = vyre_test::load_egraph_json((data_dir / entry.file).string());
    const cuda::std::span<const double> cost{graph.cost.data(), graph.cost.size()};
    const cuda::std::span<const std::uint32_t> roots{graph.roots.data(), graph.roots.size()};
    const auto extraction = extract_reference(graph.rows.ref(), cost, roots);
    REQUIRE(extraction.has_value());
    const auto closure = congruence_reference(graph.rows.ref());
    REQUIRE(closure.has_value());
    for (const unsigned threads : {1u, 2u}) {
      INFO("threads " << threads);
      const auto engine_extraction = cpu_engine::extract(graph.rows.ref(), cost, roots, threads);
      REQUIRE(engine_extraction.has_value());
      CHECK(vyre_test::extraction_difference(*engine_extraction, *extraction) == "");
      const auto engine_closure = cpu_engine::congruence(graph.rows.ref(), threads);
      REQUIRE(engine_closure.has_value());
      CHECK(vyre_test::congruence_difference(*engine_closure, *closure) == "");
    }
  }
}
