// SPDX-License-Identifier: Apache-2.0
// bench_dag's CBC step, compiled by the host compiler (CBC's headers are not for nvcc); without
// CBC, `have_ilp` is false and `solve_ilp` is never called.
#pragma once

#include <string>

#include "egraph_json.hpp"
#include "vyre/algorithms/dag_extract.hpp"

namespace vyre_bench {

//! The optimum of a file: proven or not, its bound, and how long the ILP (and CBC alone) took.
struct known_optimum {
  double cost = 0;
  double lower_bound = 0;
  bool optimal = false;
  double ilp_s = 0, cbc_s = 0;
};

extern const bool have_ilp;

//! extraction-gym's ILP through CBC, warm-started from the heuristic with `options`; false with
//! `problem` set on failure.
bool solve_ilp(const vyre_test::loaded_egraph& graph, const vyre::algorithms::dag_options& options,
               double time_limit, known_optimum& out, std::string& problem);

//! How long CBC alone (no warm start) takes to hold a selection costing at most `cost`.
struct cbc_reach {
  bool reached = false;  //!< within the time limit
  double cbc_s = 0;      //!< CBC's solve (the time limit when not reached)
  double best_cost = 0;  //!< CBC's best selection when it stopped (infinite: none)
};

//! The same model as `solve_ilp`, solved cold and stopped at CBC's first selection costing at
//! most `cost`; false with `problem` set on failure.
bool cbc_reach_cost(const vyre_test::loaded_egraph& graph,
                    const vyre::algorithms::dag_options& options, double time_limit, double cost,
                    cbc_reach& out, std::string& problem);

}  // namespace vyre_bench
