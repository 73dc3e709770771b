// SPDX-License-Identifier: Apache-2.0
// DAG-cost extraction on the GPU (vyre/algorithms/dag_extract.cuh) against the CPU engine
// (dag_extract.hpp) with the same options: the same selection row for row, the same cost and
// the same number of moves, on hand-made e-graphs, random ones, and every real e-graph of
// VYRE_EGRAPH_DATA_DIR (missing data fails). Every selection also goes through the independent
// checker of dag_check.hpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "dag_check.hpp"
#include "egraph_json.hpp"
#include "require_ok.cuh"
#include "vyre/algorithms/dag_extract.cuh"

using namespace vyre::algorithms;
using vyre_test::small_graph;

namespace {

// The backend of every case (errors as values, so a failure prints its message).
using gpu_type =
    vyre::backend<vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                 vyre::on_error::return_expected>>;
gpu_type& test_gpu() {
  static gpu_type instance = vyre_test::acquire_or_fail<gpu_type>();
  return instance;
}

// Runs both engines with `options`, requires the same outcome, checks the selection; returns
// the GPU's result.
dag_extraction_result same_on_both(const raw_rows& rows, const std::vector<double>& cost,
                                   const std::vector<std::uint32_t>& roots,
                                   const dag_options& options) {
  const cuda::std::span<const double> costs(cost.data(), cost.size());
  const cuda::std::span<const std::uint32_t> root_span(roots.data(), roots.size());
  const auto cpu = extract_dag(rows.ref(), costs, root_span, options);
  REQUIRE(cpu.has_value());
  const auto gpu = extract_dag(test_gpu(), rows.ref(), costs, root_span, options);
  if (!gpu) FAIL(gpu.error().message());
  CHECK(gpu->eclass_ids == cpu->eclass_ids);
  CHECK(gpu->choice == cpu->choice);
  CHECK(gpu->dag_cost == cpu->dag_cost);
  CHECK(gpu->moves == cpu->moves);
  CHECK(gpu->selected_rows == cpu->selected_rows);
  CHECK(gpu->tree_selection_dag_cost == cpu->tree_selection_dag_cost);
  CHECK(gpu->lower_bound == cpu->lower_bound);
  CHECK(gpu->optimal == cpu->optimal);
  const auto outcome = vyre_test::check_dag_selection(rows, cost, roots, gpu->eclass_ids,
                                                      gpu->choice, gpu->dag_cost);
  INFO(outcome.problem);
  CHECK(outcome.problem.empty());
  return *gpu;
}

}  // namespace

TEST_CASE("GPU DAG extraction: sharing and a cycle to avoid, as on the CPU", "[gpu]") {
  const small_graph sharing = vyre_test::sharing_graph();  // tree cost 13, sharing 11
  CHECK(same_on_both(sharing.rows, sharing.cost, sharing.roots, {}).dag_cost == 11.0);
  const small_graph cycle = vyre_test::cycle_graph();  // the acyclic optimum is 7
  CHECK(same_on_both(cycle.rows, cycle.cost, cycle.roots, {}).dag_cost == 7.0);
}

TEST_CASE("GPU DAG extraction: a root with no acyclic choice is the CPU's error", "[gpu]") {
  small_graph g;
  g.add(1, {1}, 1);  // only names itself
  g.add(2, {1}, 1);
  g.roots = {2};
  const std::vector<double>& cost = g.cost;
  const auto found = extract_dag(test_gpu(), g.rows.ref(), {cost.data(), cost.size()},
                                 {g.roots.data(), g.roots.size()});
  REQUIRE_FALSE(found.has_value());
  CHECK(found.error().code() == vyre::errc::invalid_argument);
  CHECK(found.error().message().find("no acyclic choice") != std::string::npos);
  CHECK(found.error().message().find("extract_dag (GPU)") != std::string::npos);
}

TEST_CASE("GPU DAG extraction: random e-graphs, several seeds and search counts", "[gpu]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    INFO("trial " << trial);
    small_graph g;
    const std::uint32_t classes = 20 + static_cast<std::uint32_t>(trial) * 10;
    std::uniform_int_distribution<std::uint32_t> rows(1, 4), arity(0, 3);
    std::uniform_int_distribution<int> cost(0, 9);
    for (std::uint32_t c = 0; c < classes; ++c)
      for (std::uint32_t i = 0, n = rows(rng); i < n; ++i) {
        std::vector<std::uint32_t> children;
        const std::uint32_t k = c == 0 || i == 0 ? 0 : arity(rng);  // every class has a leaf
        for (std::uint32_t j = 0; j < k; ++j)
          children.push_back(std::uniform_int_distribution<std::uint32_t>(0, classes - 1)(rng));
        g.add(c, children, cost(rng));
      }
    g.roots = {classes - 1, classes / 2};
    dag_options options;
    options.seed = 100 + static_cast<std::uint64_t>(trial);
    options.searches = 1 + static_cast<std::uint32_t>(trial % 7);
    options.kick_budget = trial % 5 == 0 ? 0 : 200'000;
    same_on_both(g.rows, g.cost, g.roots, options);
  }
}

TEST_CASE("GPU DAG extraction: every real e-graph gives the CPU's selection", "[gpu][data]") {
  const std::filesystem::path data_dir{VYRE_EGRAPH_DATA_DIR};
  const auto files = vyre_test::load_expected_costs((data_dir / "expected_tree_cost.tsv").string());
  REQUIRE(files.size() > 10);  // the data folder is required: a missing one fails here
  int compared = 0;
  for (const auto& entry : files) {
    INFO(entry.file);
    const auto graph = vyre_test::load_egraph_json((data_dir / entry.file).string());
    if (std::any_of(graph.cost.begin(), graph.cost.end(), [](double c) { return c < 0; })) {
      const auto refused =
          extract_dag(test_gpu(), graph.rows.ref(), {graph.cost.data(), graph.cost.size()},
                      {graph.roots.data(), graph.roots.size()});
      REQUIRE_FALSE(refused.has_value());
      CHECK(refused.error().message().find("negative") != std::string::npos);
      continue;
    }
    dag_options options;
    options.searches = 6;
    options.kick_budget = 5'000'000;
    same_on_both(graph.rows, graph.cost, graph.roots, options);
    ++compared;
  }
  CHECK(compared == 80);
}
