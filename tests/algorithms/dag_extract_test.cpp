// SPDX-License-Identifier: Apache-2.0
// DAG-cost extraction: the heuristic (vyre/algorithms/dag_extract.hpp) and, where CBC was found,
// the exact ILP (vyre/algorithms/dag_ilp.hpp). Every selection goes through the independent
// checker of dag_check.hpp. Test tags, one ctest entry each:
//   [handmade]  small e-graphs whose optimum is known by enumeration (sharing that tree cost
//               misses, a cycle to avoid, classes without an acyclic choice, negative costs)
//   [data]      every real e-graph of VYRE_EGRAPH_DATA_DIR (SKIPPED, exit 77, without it)
//   [ilp]       the ILP on the hand-made e-graphs (SKIPPED, exit 77, when built without CBC)
//   [ilp_data]  the ILP on the small real e-graphs, 2 s each (SKIPPED without CBC or data)
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dag_check.hpp"
#include "egraph_json.hpp"
#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/dag_extract.hpp"
#if VYRE_HAVE_CBC
#include "vyre/algorithms/dag_ilp.hpp"
#endif

using namespace vyre::algorithms;
using vyre_test::cycle_graph;
using vyre_test::sharing_graph;
using vyre_test::small_graph;

namespace {

const std::filesystem::path data_dir{VYRE_EGRAPH_DATA_DIR};

// The optimum by enumeration of every choice map (each class one of its rows); +infinity when
// no acyclic selection exists.
double enumerate_optimum(const small_graph& g) {
  std::vector<std::uint32_t> ids(g.rows.row_eclass_ids);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::vector<std::uint32_t>> rows_of(ids.size());
  for (std::uint32_t r = 0; r < g.rows.row_count(); ++r)
    rows_of[static_cast<std::size_t>(
                std::lower_bound(ids.begin(), ids.end(), g.rows.row_eclass_ids[r]) - ids.begin())]
        .push_back(r);
  std::vector<std::size_t> pick(ids.size(), 0);
  std::vector<std::uint64_t> start(g.rows.row_count() + 1, 0);
  for (std::uint32_t r = 0; r < g.rows.row_count(); ++r)
    start[r + 1] = start[r] + g.rows.row_children_lens[r];
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    // Restrict the full map to what the roots reach, then let the checker judge it.
    std::vector<std::uint32_t> choice(ids.size(), no_row);
    std::vector<std::uint32_t> stack(g.roots);
    while (!stack.empty()) {
      const std::uint32_t eclass = stack.back();
      stack.pop_back();
      const auto i =
          static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), eclass) - ids.begin());
      if (choice[i] != no_row) continue;
      choice[i] = rows_of[i][pick[i]];
      for (std::uint64_t k = start[choice[i]]; k < start[choice[i] + 1]; ++k)
        stack.push_back(g.rows.children[k]);
    }
    const auto outcome = vyre_test::check_dag_selection(g.rows, g.cost, g.roots, ids, choice, 0);
    if (outcome.problem.find("cycle") == std::string::npos) best = (std::min)(best, outcome.cost);
    std::size_t i = 0;
    while (i < pick.size() && ++pick[i] == rows_of[i].size()) pick[i++] = 0;
    if (i == pick.size()) break;
  }
  return best;
}

// Checks a DAG selection and returns its cost.
double checked_cost(const small_graph& g, const dag_extraction_result& found) {
  const auto outcome = vyre_test::check_dag_selection(g.rows, g.cost, g.roots, found.eclass_ids,
                                                      found.choice, found.dag_cost);
  INFO(outcome.problem);
  CHECK(outcome.problem.empty());
  return outcome.cost;
}

dag_options single_thread() {
  dag_options options;
  options.threads = 1;
  return options;
}

// Random small e-graphs: `classes` classes of 1-3 rows, children among all classes.
small_graph random_graph(std::mt19937& rng, std::uint32_t classes) {
  small_graph g;
  std::uniform_int_distribution<std::uint32_t> rows(1, 3), arity(0, 2), child(0, classes - 1);
  std::uniform_int_distribution<int> cost(0, 9);
  for (std::uint32_t c = 0; c < classes; ++c) {
    const std::uint32_t n = rows(rng);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::vector<std::uint32_t> children;
      const std::uint32_t k = c == 0 && i == 0 ? 0 : arity(rng);  // class 0 has a leaf
      for (std::uint32_t j = 0; j < k; ++j) children.push_back(child(rng));
      g.add(c, children, cost(rng));
    }
  }
  g.roots = {classes - 1};
  if (classes > 2) g.roots.push_back(classes - 2);
  return g;
}

// Extracts a hand-made graph, checking that the result is the enumerated `optimum` (and its
// selection costs that much); returns the result.
dag_extraction_result finds_optimum(const small_graph& g, double optimum) {
  REQUIRE(enumerate_optimum(g) == optimum);
  const auto found = extract_dag(g.rows.ref(), g.cost, g.roots, single_thread());
  REQUIRE(found.has_value());
  CHECK(found->dag_cost == optimum);
  CHECK(checked_cost(g, *found) == optimum);
  return *found;
}

}  // namespace

TEST_CASE("DAG extraction shares what tree cost pays twice", "[handmade]") {
  const dag_extraction_result found = finds_optimum(sharing_graph(), 11);
  CHECK(found.tree_selection_dag_cost == 13);
  CHECK(found.selected_rows == 4);
}

TEST_CASE("DAG extraction avoids the cheaper cyclic selection", "[handmade]") {
  finds_optimum(cycle_graph(), 7);
}

TEST_CASE("DAG extraction: a needed class with no acyclic choice is a clear error", "[handmade]") {
  small_graph self_loop;  // A's only node names A
  self_loop.add(5, {5}, 1);
  self_loop.add(6, {}, 1);
  self_loop.roots = {5};
  small_graph mutual;  // A needs B, B needs A, root R needs A
  mutual.add(1, {2}, 1);
  mutual.add(2, {1}, 1);
  mutual.add(3, {1}, 1);
  mutual.roots = {3};
  for (const small_graph* g : {&self_loop, &mutual}) {
    const auto found = extract_dag(g->rows.ref(), g->cost, g->roots, single_thread());
    REQUIRE_FALSE(found.has_value());
    CHECK(found.error().code() == vyre::errc::invalid_argument);
    const std::string message = found.error().message();
    INFO(message);
    CHECK(message.find("no acyclic choice") != std::string::npos);
    CHECK(found.error().value_or("eclass", 0) == g->roots[0]);
  }
  // A class without an acyclic choice that no root needs is fine.
  small_graph unused;
  unused.add(1, {1}, 1);
  unused.add(2, {}, 3);
  unused.roots = {2};
  const auto found = extract_dag(unused.rows.ref(), unused.cost, unused.roots, single_thread());
  REQUIRE(found.has_value());
  CHECK(found->dag_cost == 3);
}

TEST_CASE("DAG extraction refuses negative costs, naming the row and its cost", "[handmade]") {
  small_graph g;
  g.add(0, {}, 1);
  g.add(1, {0}, -2.5);
  g.roots = {1};
  const auto found = extract_dag(g.rows.ref(), g.cost, g.roots, single_thread());
  REQUIRE_FALSE(found.has_value());
  const std::string message = found.error().message();
  INFO(message);
  CHECK(message.find("negative") != std::string::npos);
  CHECK(message.find("row 1 has cost -2.5") != std::string::npos);
  CHECK(found.error().value_or("row", 0) == 1);
}

TEST_CASE("DAG extraction on random small e-graphs: valid, <= tree selection, optimal",
          "[handmade]") {
  std::mt19937 rng(12345);
  int optimal = 0, feasible = 0, proven = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const small_graph g = random_graph(rng, 3 + static_cast<std::uint32_t>(trial % 5));
    const double optimum = enumerate_optimum(g);
    const auto found = extract_dag(g.rows.ref(), g.cost, g.roots, single_thread());
    INFO("trial " << trial);
    if (std::isinf(optimum)) {
      REQUIRE_FALSE(found.has_value());
      CHECK(found.error().message().find("no acyclic choice") != std::string::npos);
      continue;
    }
    ++feasible;
    REQUIRE(found.has_value());
    CHECK(checked_cost(g, *found) == found->dag_cost);
    CHECK(found->dag_cost >= optimum);
    CHECK(found->dag_cost <= found->tree_selection_dag_cost);
    optimal += found->dag_cost == optimum ? 1 : 0;
    // The lower bound never passes the optimum; `optimal` only where it is met.
    CHECK(found->lower_bound <= optimum + 1e-12);
    if (found->optimal) CHECK(found->dag_cost == optimum);
    proven += found->optimal ? 1 : 0;
    // Same seed, same result, whatever the thread count.
    dag_options many = single_thread();
    many.threads = 4;
    const auto again = extract_dag(g.rows.ref(), g.cost, g.roots, many);
    REQUIRE(again.has_value());
    CHECK(again->choice == found->choice);
  }
  CHECK(feasible > 150);
  CHECK(optimal == feasible);
  CHECK(proven > feasible / 4);  // the bound is cheap, not tight: it proves some of them
}

// A chain: class i has a leaf costing 100 * (i + 1) and a row costing 1 over class i - 1;
// class 0 only a leaf costing 1. The optimum walks the chain: `length`.
small_graph chain_graph(std::uint32_t length) {
  small_graph g;
  g.add(0, {}, 1);
  for (std::uint32_t c = 1; c < length; ++c) {
    g.add(c, {}, 100.0 * (c + 1));
    g.add(c, {c - 1}, 1);
  }
  g.roots = {length - 1};
  return g;
}

TEST_CASE("DAG extraction's lower bound: tight on a chain and on needed classes, proven optimal",
          "[handmade]") {
  dag_options options = single_thread();
  options.searches = 4;
  // The costliest path: every selection pays the whole chain or a dear leaf.
  const small_graph chain = chain_graph(200);
  const auto walked = extract_dag(chain.rows.ref(), chain.cost, chain.roots, options);
  REQUIRE(walked.has_value());
  CHECK(walked->dag_cost == 200);
  CHECK(walked->lower_bound == 200);
  CHECK(walked->optimal);
  CHECK(walked->moves == 0);  // the starts are optimal; a kick's repair would count switches

  // Needed classes: both rows of the root name classes 1 and 2, so both are paid (3 + 4) on top
  // of the root's cheaper row (1): 8, more than any one path (1 + 4).
  small_graph needed;
  needed.add(1, {}, 3);
  needed.add(2, {}, 4);
  needed.add(0, {1, 2}, 1);
  needed.add(0, {2, 1}, 5);
  needed.roots = {0};
  const auto both = extract_dag(needed.rows.ref(), needed.cost, needed.roots, options);
  REQUIRE(both.has_value());
  CHECK(both->dag_cost == 8);
  CHECK(both->lower_bound == 8);
  CHECK(both->optimal);

  // Sharing the bound cannot see: the optimum (11) is above it, and nothing claims optimality.
  const small_graph sharing = sharing_graph();
  const auto shared = extract_dag(sharing.rows.ref(), sharing.cost, sharing.roots, options);
  REQUIRE(shared.has_value());
  CHECK(shared->dag_cost == 11);
  CHECK(shared->lower_bound < 11);
  CHECK_FALSE(shared->optimal);

  // Proven or not, every thread count and the searches stopped early give one selection.
  dag_options alone = options;
  alone.kick_patience = 1'000'000;  // enough work (rows x patience) to start the threads
  alone.kick_budget = 2'000'000;
  dag_options threaded = alone;
  threaded.threads = 3;
  for (const small_graph* g : {&chain, static_cast<const small_graph*>(&needed), &sharing}) {
    const auto one = extract_dag(g->rows.ref(), g->cost, g->roots, alone);
    const auto many = extract_dag(g->rows.ref(), g->cost, g->roots, threaded);
    REQUIRE(one.has_value());
    REQUIRE(many.has_value());
    CHECK(one->choice == many->choice);
    CHECK(one->optimal == many->optimal);
  }
}

#if VYRE_HAVE_CBC
TEST_CASE("DAG ILP: proven optima on the hand-made e-graphs", "[ilp]") {
  dag_ilp_options options;
  options.time_limit_seconds = 5;
  options.heuristic = single_thread();
  for (const small_graph& g : {sharing_graph(), cycle_graph()}) {
    const auto found = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, options);
    REQUIRE(found.has_value());
    CHECK(found->optimal);
    CHECK(found->selection.dag_cost == enumerate_optimum(g));
    CHECK(std::abs(found->lower_bound - found->selection.dag_cost) < 1e-6);
    CHECK(checked_cost(g, found->selection) == found->selection.dag_cost);
  }
  std::mt19937 rng(777);
  for (int trial = 0; trial < 60; ++trial) {
    const small_graph g = random_graph(rng, 3 + static_cast<std::uint32_t>(trial % 5));
    const double optimum = enumerate_optimum(g);
    const auto found = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, options);
    INFO("trial " << trial);
    if (std::isinf(optimum)) {
      CHECK_FALSE(found.has_value());
      continue;
    }
    REQUIRE(found.has_value());
    CHECK(found->optimal);
    CHECK(found->selection.dag_cost == optimum);
    CHECK(checked_cost(g, found->selection) == optimum);
  }
}

TEST_CASE("DAG ILP: a selection the heuristic's bound proves optimal skips CBC", "[ilp]") {
  const small_graph chain = chain_graph(50);
  dag_ilp_options options;
  options.heuristic = single_thread();
  const auto skipped = extract_dag_ilp(chain.rows.ref(), chain.cost, chain.roots, options);
  REQUIRE(skipped.has_value());
  CHECK_FALSE(skipped->solver_ran);
  CHECK(skipped->optimal);
  CHECK(skipped->selection.dag_cost == 50);
  CHECK(skipped->lower_bound == 50);
  CHECK(skipped->solver_seconds == 0);

  options.skip_proven = false;  // CBC runs, and agrees
  const auto solved = extract_dag_ilp(chain.rows.ref(), chain.cost, chain.roots, options);
  REQUIRE(solved.has_value());
  CHECK(solved->solver_ran);
  CHECK(solved->optimal);
  CHECK(solved->selection.dag_cost == 50);
  CHECK(solved->selection.choice == skipped->selection.choice);
}

TEST_CASE("DAG ILP: a cold solve finds the optimum alone, and stops at a requested cost", "[ilp]") {
  std::mt19937 rng(4242);
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const small_graph g = random_graph(rng, 3 + static_cast<std::uint32_t>(trial % 5));
    const double optimum = enumerate_optimum(g);
    if (std::isinf(optimum)) continue;
    INFO("trial " << trial << ", optimum " << optimum);
    dag_ilp_options cold;
    cold.time_limit_seconds = 5;
    cold.heuristic = single_thread();
    cold.warm_start = false;
    const auto alone = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, cold);
    REQUIRE(alone.has_value());
    CHECK(alone->optimal);
    CHECK(alone->solver_cost == optimum);  // CBC's own selection, not the heuristic's
    CHECK(alone->selection.dag_cost == optimum);

    cold.stop_at_cost = optimum;
    const auto reached = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, cold);
    REQUIRE(reached.has_value());
    CHECK(reached->solver_cost == optimum);
    CHECK(checked_cost(g, reached->selection) == reached->selection.dag_cost);

    // Below the optimum CBC can only prove that nothing is that cheap: optimality then comes
    // from the heuristic's own bound or not at all.
    cold.stop_at_cost = optimum - 0.5;
    const auto below = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, cold);
    REQUIRE(below.has_value());
    CHECK(below->solver_ran);
    CHECK(std::isinf(below->solver_cost));
    CHECK(below->optimal == below->selection.optimal);
    CHECK(below->selection.dag_cost == below->heuristic_cost);
    CHECK(below->lower_bound >= optimum - 0.5);
    CHECK(below->lower_bound <= optimum);
    ++checked;
  }
  CHECK(checked > 20);
  dag_ilp_options nan_stop;
  nan_stop.stop_at_cost = std::numeric_limits<double>::quiet_NaN();
  const small_graph ok = sharing_graph();
  const auto refused = extract_dag_ilp(ok.rows.ref(), ok.cost, ok.roots, nan_stop);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message().find("stop_at_cost") != std::string::npos);
}

TEST_CASE("DAG ILP: negative costs and a time limit <= 0 are clear errors", "[ilp]") {
  small_graph g;
  g.add(0, {}, -1);
  g.roots = {0};
  const auto negative = extract_dag_ilp(g.rows.ref(), g.cost, g.roots, {});
  REQUIRE_FALSE(negative.has_value());
  CHECK(negative.error().message().find("row 0 has cost -1") != std::string::npos);
  const small_graph ok = sharing_graph();
  dag_ilp_options zero;
  zero.time_limit_seconds = 0;
  CHECK_FALSE(extract_dag_ilp(ok.rows.ref(), ok.cost, ok.roots, zero).has_value());
}
#endif

namespace {

bool has_negative(const std::vector<double>& cost) {
  return std::any_of(cost.begin(), cost.end(), [](double c) { return c < 0; });
}

//! Calls `visit(graph)` on every e-graph of the data set (those expected_tree_cost.tsv lists),
//! with the file's name in the context of what it checks.
template <class Visit>
void for_each_real_egraph(Visit visit) {
  const auto files = vyre_test::load_expected_costs((data_dir / "expected_tree_cost.tsv").string());
  REQUIRE(files.size() > 10);
  for (const auto& entry : files) {
    INFO(entry.file);
    visit(vyre_test::load_egraph_json((data_dir / entry.file).string()));
  }
}

}  // namespace

TEST_CASE("every real e-graph: DAG selections are valid and never worse than tree cost's",
          "[data]") {
  int negative_files = 0, proven = 0;
  for_each_real_egraph([&](const auto& graph) {
    dag_options options;  // a smaller kick budget than the default keeps the sanitizer run short
    options.kick_budget = 10'000'000;
    const auto found = extract_dag(graph.rows.ref(), graph.cost, graph.roots, options);
    if (has_negative(graph.cost)) {
      ++negative_files;
      REQUIRE_FALSE(found.has_value());
      const std::string message = found.error().message();
      INFO(message);
      CHECK(message.find("negative") != std::string::npos);
      CHECK(message.find("has cost -") != std::string::npos);
      return;
    }
    REQUIRE(found.has_value());
    const auto outcome = vyre_test::check_dag_selection(
        graph.rows, graph.cost, graph.roots, found->eclass_ids, found->choice, found->dag_cost);
    INFO(outcome.problem);
    CHECK(outcome.problem.empty());
    const auto tree = extract_reference(graph.rows.ref(), graph.cost, graph.roots);
    REQUIRE(tree.has_value());
    const double tree_dag =
        vyre_test::dag_cost_of_tree_choice(graph.rows, graph.cost, graph.roots, *tree);
    CHECK(found->dag_cost <= tree_dag + 1e-9 * (std::max)(1.0, tree_dag));
    CHECK(found->dag_cost <= tree->root_cost + 1e-9 * (std::max)(1.0, tree->root_cost));
    CHECK(found->lower_bound <= found->dag_cost);
    proven += found->optimal ? 1 : 0;
  });
  CHECK(negative_files == 6);  // the maxsat set
  CHECK(proven >= 35);         // 37 of the 80 when written (CBC proves 74)
}

#if VYRE_HAVE_CBC
TEST_CASE("small real e-graphs: the ILP optimum is never worse than the heuristic", "[ilp_data]") {
  int proven = 0, solved = 0;
  for_each_real_egraph([&](const auto& graph) {
    if (graph.rows.row_count() > 500) return;
    dag_ilp_options options;
    options.time_limit_seconds = 2;
    const auto found = extract_dag_ilp(graph.rows.ref(), graph.cost, graph.roots, options);
    if (has_negative(graph.cost)) {
      REQUIRE_FALSE(found.has_value());
      CHECK(found.error().message().find("negative") != std::string::npos);
      return;
    }
    REQUIRE(found.has_value());
    ++solved;
    proven += found->optimal ? 1 : 0;
    const dag_extraction_result& s = found->selection;
    const auto outcome = vyre_test::check_dag_selection(graph.rows, graph.cost, graph.roots,
                                                        s.eclass_ids, s.choice, s.dag_cost);
    INFO(outcome.problem);
    CHECK(outcome.problem.empty());
    const double slack = 1e-9 * (std::max)(1.0, s.dag_cost);
    CHECK(s.dag_cost <= found->heuristic_cost + slack);
    CHECK(found->lower_bound <= s.dag_cost + slack);
    // CBC runs unless the heuristic's own bound proved its selection optimal.
    CHECK(found->solver_ran != s.optimal);
  });
  CHECK(solved > 40);
  CHECK(proven >= solved - 3);
}
#endif

int main(int argc, char* argv[]) {
  std::string filter;
  for (int i = 1; i < argc; ++i) filter += argv[i];
  const bool wants_data = filter.find("data]") != std::string::npos;
  const bool wants_ilp = filter.find("[ilp") != std::string::npos;
  if (wants_ilp && !VYRE_HAVE_CBC) {
    std::printf("SKIPPED: built without COIN-OR CBC (pkg-config cbc; coinor-libcbc-dev).\n");
    return VYRE_TEST_SKIP_CODE;
  }
  if (wants_data && !std::filesystem::exists(data_dir / "expected_tree_cost.tsv")) {
    std::printf("SKIPPED: no e-graph data in %s (set VYRE_EGRAPH_DATA_DIR).\n",
                data_dir.string().c_str());
    return VYRE_TEST_SKIP_CODE;
  }
  return Catch::Session().run(argc, argv);
}
