// SPDX-License-Identifier: Apache-2.0
// bench_dag's CBC step (see dag_bench_ilp.hpp).
#include "dag_bench_ilp.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#if VYRE_HAVE_CBC
#include "vyre/algorithms/dag_ilp.hpp"
#endif

namespace vyre_bench {

#if VYRE_HAVE_CBC
const bool have_ilp = true;

bool solve_ilp(const vyre_test::loaded_egraph& graph, const vyre::algorithms::dag_options& options,
               double time_limit, known_optimum& out, std::string& problem) {
  vyre::algorithms::dag_ilp_options ilp_options;
  ilp_options.time_limit_seconds = time_limit;
  ilp_options.heuristic = options;
  ilp_options.skip_proven = false;  // the baseline is CBC's own time, proven or not
  const auto start = std::chrono::steady_clock::now();
  const auto exact =
      vyre::algorithms::extract_dag_ilp(graph.rows.ref(), graph.cost, graph.roots, ilp_options);
  out.ilp_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!exact) {
    problem = exact.error().message();
    return false;
  }
  out.cost = exact->selection.dag_cost;
  out.optimal = exact->optimal;
  out.lower_bound = exact->lower_bound;
  out.cbc_s = exact->solver_seconds;
  return true;
}

bool cbc_reach_cost(const vyre_test::loaded_egraph& graph,
                    const vyre::algorithms::dag_options& options, double time_limit, double cost,
                    cbc_reach& out, std::string& problem) {
  vyre::algorithms::dag_ilp_options ilp_options;
  ilp_options.time_limit_seconds = time_limit;
  ilp_options.heuristic = options;
  ilp_options.warm_start = false;
  ilp_options.stop_at_cost = cost;
  const auto cold =
      vyre::algorithms::extract_dag_ilp(graph.rows.ref(), graph.cost, graph.roots, ilp_options);
  if (!cold) {
    problem = cold.error().message();
    return false;
  }
  out.best_cost = cold->solver_cost;
  out.reached = cold->solver_cost <= cost + 1e-9 * std::max(1.0, std::abs(cost));
  out.cbc_s = cold->solver_seconds;
  return true;
}
#else
const bool have_ilp = false;

bool solve_ilp(const vyre_test::loaded_egraph&, const vyre::algorithms::dag_options&, double,
               known_optimum&, std::string& problem) {
  problem = "built without CBC";
  return false;
}

bool cbc_reach_cost(const vyre_test::loaded_egraph&, const vyre::algorithms::dag_options&, double,
                    double, cbc_reach&, std::string& problem) {
  problem = "built without CBC";
  return false;
}
#endif

}  // namespace vyre_bench
