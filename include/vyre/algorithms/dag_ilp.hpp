// SPDX-License-Identifier: Apache-2.0
//! @file
//! Exact DAG-cost extraction through COIN-OR CBC (optional: link `vyre::dag_ilp`, which exists
//! when CMake found CBC through pkg-config `cbc`; Debian: coinor-libcbc-dev). Nothing else in
//! vyre includes this header, so builds without CBC are unaffected.
//!
//! The model is extraction-gym's: a binary per e-node (chosen) and per e-class (active); the
//! roots are active; an active class chooses exactly one of its e-nodes (sum of its nodes =
//! active); a chosen e-node makes each child class active; acyclicity through a continuous
//! topological order per class, o(c) in [0, K-1] with K the classes in the model, and for a
//! chosen e-node of class c with child class d: o(c) >= o(d) + 1 (big-M: o(c) - o(d) - K x >=
//! 1 - K). Minimise the sum of the chosen e-nodes' costs. Only what can matter enters the
//! model: classes reachable from the roots through e-nodes whose children all have some acyclic
//! choice (e-nodes naming their own class never can).
//!
//! CBC is warm-started from `extract_dag`'s selection (or, with `warm_start = false`, left to
//! find its own) and stopped at a time limit, or as soon as it holds a selection costing at most
//! `stop_at_cost`; the result is the cheaper of CBC's best and the heuristic's selection, with
//! whether it is proven optimal and the best lower bound known (CBC's or the heuristic's own,
//! whichever is higher). Where the heuristic's selection meets the heuristic's lower bound it is
//! optimal already, and CBC is not run (`skip_proven`). A cold solve stopped at the heuristic's
//! cost is how long CBC itself needs to reach that cost (bench/dag measures it so).
#pragma once

#if !__has_include(<Cbc_C_Interface.h>)
#error \
    "vyre/algorithms/dag_ilp.hpp needs COIN-OR CBC (Debian: coinor-libcbc-dev); link vyre::dag_ilp"
#endif

#include <Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "vyre/algorithms/dag_extract.hpp"
#include "vyre/detail/host_special_members.hpp"

namespace vyre::algorithms {

//! How `extract_dag_ilp` solves.
struct dag_ilp_options {
  //! CBC's wall-clock limit (> 0). CBC checks it between its steps: on large models it may
  //! overrun by a few seconds (62 s for 60 on tensat's bert, 34874 columns).
  double time_limit_seconds = 10;
  dag_options heuristic;  //!< the warm start's search
  //! Give CBC the heuristic's selection as its first incumbent. Without it CBC searches from
  //! nothing; the heuristic still runs, and its selection is still returned when CBC finds
  //! nothing cheaper.
  bool warm_start = true;
  //! Stop as soon as CBC holds a selection of its own costing at most this (a cutoff just above
  //! it and a stop at CBC's first solution). Infinite: no such stop. Meant for cold solves: a
  //! warm start at or below it is that first solution.
  double stop_at_cost = std::numeric_limits<double>::infinity();
  //! Skip CBC when the heuristic's selection meets its own lower bound
  //! (`dag_extraction_result::optimal`): that proves it optimal already. Only with `warm_start`
  //! (a cold solve is asked for CBC's own search).
  bool skip_proven = true;
};

//! What `extract_dag_ilp` found.
struct dag_ilp_result {
  dag_extraction_result selection;  //!< the cheaper of CBC's best and the heuristic's
  //! `selection.dag_cost` is proven optimal: by CBC, or by the heuristic's lower bound.
  bool optimal = false;
  double lower_bound = 0;        //!< proven: no selection costs less (= dag_cost if optimal)
  double heuristic_cost = 0;     //!< the heuristic's DAG cost (the warm start, if given)
  bool solver_improved = false;  //!< CBC found a selection cheaper than the heuristic's
  //! CBC ran. It does not when the heuristic's selection meets the heuristic's lower bound
  //! (`dag_ilp_options::skip_proven`), and for an e-graph without roots.
  bool solver_ran = false;
  //! The DAG cost of CBC's own best selection (with a warm start, at most the heuristic's);
  //! infinite when CBC ended without one.
  double solver_cost = std::numeric_limits<double>::infinity();
  std::uint32_t model_columns = 0;
  std::uint32_t model_rows = 0;
  double solver_seconds = 0;

  VYRE_HOST_SPECIAL_MEMBERS(dag_ilp_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_ilp_result);

namespace detail {

struct cbc_model_deleter {
  void operator()(Cbc_Model* model) const noexcept { Cbc_deleteModel(model); }
};

inline expected<dag_ilp_result> extract_dag_ilp(const dag_problem& p,
                                                const dag_ilp_options& options, const char* who,
                                                const extraction_result* reference = nullptr) {
  if (!(options.time_limit_seconds > 0))
    return fail(error(errc::invalid_argument, "DAG ILP extraction: the time limit must be > 0")
                    .about(who)
                    .fix("pass dag_ilp_options::time_limit_seconds > 0"));
  if (std::isnan(options.stop_at_cost))
    return fail(error(errc::invalid_argument, "DAG ILP extraction: stop_at_cost is NaN")
                    .about(who)
                    .fix("pass a cost, or infinity for no early stop"));
  dag_ilp_result result;
  VYRE_TRY_ASSIGN(result.selection, extract_dag(p, options.heuristic, who, reference));
  result.heuristic_cost = result.selection.dag_cost;
  result.lower_bound = result.selection.lower_bound;
  if (p.roots.empty() || (options.warm_start && options.skip_proven && result.selection.optimal)) {
    result.optimal = true;
    result.lower_bound = result.selection.dag_cost;
    return result;
  }

  try {
    // What enters the model: classes with some acyclic choice, reachable from the roots.
    const std::vector<std::uint32_t> tree = tree_start(p);
    const auto row_ok = [&](std::uint32_t r) {
      if (!p.usable[r]) return false;
      for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
        if (tree[p.child[k]] == no_row) return false;
      return true;
    };
    std::vector<std::uint32_t> class_col(p.class_count, no_row);  // class -> model class index
    std::vector<std::uint32_t> classes;
    std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
    for (const std::uint32_t root : p.roots) class_col[root] = 0;
    while (!stack.empty()) {
      const std::uint32_t c = stack.back();
      stack.pop_back();
      class_col[c] = static_cast<std::uint32_t>(classes.size());
      classes.push_back(c);
      for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k) {
        const std::uint32_t r = p.class_rows[k];
        if (!row_ok(r)) continue;
        for (std::uint32_t j = p.children_begin(r); j < p.children_end(r); ++j) {
          const std::uint32_t d = p.child[j];
          if (class_col[d] == no_row) {
            class_col[d] = 0;  // queued
            stack.push_back(d);
          }
        }
      }
    }
    std::vector<std::uint32_t> rows;  // model rows (e-nodes) in order
    std::vector<std::uint32_t> row_col(p.row_count, no_row);
    for (const std::uint32_t c : classes)
      for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k)
        if (row_ok(p.class_rows[k])) {
          row_col[p.class_rows[k]] = static_cast<std::uint32_t>(rows.size());
          rows.push_back(p.class_rows[k]);
        }
    const auto K = static_cast<std::uint32_t>(classes.size());
    const auto N = static_cast<std::uint32_t>(rows.size());
    // Columns: x (N), active (K), order (K).
    const std::uint32_t columns = N + 2 * K;
    const auto x_col = [&](std::uint32_t r) { return static_cast<int>(row_col[r]); };
    const auto a_col = [&](std::uint32_t c) { return static_cast<int>(N + class_col[c]); };
    const auto o_col = [&](std::uint32_t c) { return static_cast<int>(N + K + class_col[c]); };
    const double big_m = K;
    struct entry {
      int col;
      int row;
      double value;
    };
    std::vector<entry> entries;
    std::vector<double> row_lb, row_ub;
    int constraint = 0;
    for (const std::uint32_t c : classes) {  // sum x - active = 0
      for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k)
        if (row_col[p.class_rows[k]] != no_row)
          entries.push_back({x_col(p.class_rows[k]), constraint, 1.0});
      entries.push_back({a_col(c), constraint, -1.0});
      row_lb.push_back(0);
      row_ub.push_back(0);
      ++constraint;
    }
    const double infinity = std::numeric_limits<double>::infinity();
    for (const std::uint32_t r : rows) {
      const std::uint32_t c = p.row_class[r];
      for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k) {
        const std::uint32_t d = p.child[k];
        entries.push_back({a_col(d), constraint, 1.0});  // active(d) - x >= 0
        entries.push_back({x_col(r), constraint, -1.0});
        row_lb.push_back(0);
        row_ub.push_back(infinity);
        ++constraint;
        entries.push_back({o_col(c), constraint, 1.0});  // o(c) - o(d) - K x >= 1 - K
        entries.push_back({o_col(d), constraint, -1.0});
        entries.push_back({x_col(r), constraint, -big_m});
        row_lb.push_back(1 - big_m);
        row_ub.push_back(infinity);
        ++constraint;
      }
    }
    std::sort(entries.begin(), entries.end(), [](const entry& a, const entry& b) {
      return a.col != b.col ? a.col < b.col : a.row < b.row;
    });
    std::vector<CoinBigIndex> start(std::size_t{columns} + 1, 0);
    std::vector<int> index(entries.size());
    std::vector<double> value(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      ++start[static_cast<std::size_t>(entries[i].col) + 1];
      index[i] = entries[i].row;
      value[i] = entries[i].value;
    }
    for (std::uint32_t i = 0; i < columns; ++i) start[i + 1] += start[i];
    std::vector<double> col_lb(columns, 0.0), col_ub(columns, 1.0), objective(columns, 0.0);
    for (const std::uint32_t r : rows) objective[row_col[r]] = p.cost[r];
    for (const std::uint32_t root : p.roots) col_lb[static_cast<std::size_t>(a_col(root))] = 1;
    for (std::uint32_t i = 0; i < K; ++i) col_ub[N + K + i] = K > 0 ? K - 1 : 0;

    std::unique_ptr<Cbc_Model, cbc_model_deleter> model(Cbc_newModel());
    Cbc_loadProblem(model.get(), static_cast<int>(columns), constraint, start.data(), index.data(),
                    value.data(), col_lb.data(), col_ub.data(), objective.data(), row_lb.data(),
                    row_ub.data());
    for (std::uint32_t i = 0; i < N + K; ++i) Cbc_setInteger(model.get(), static_cast<int>(i));
    Cbc_setLogLevel(model.get(), 0);
    Cbc_setParameter(model.get(), "timeMode", "elapsed");  // the limit is wall-clock time
    // CBC 2.10's preprocessing crashes (CglPreProcess::postProcess) when the time limit stops
    // the search on some models (tensat's bert); without it CBC is slower but sound.
    Cbc_setParameter(model.get(), "preprocess", "off");
    Cbc_setMaximumSeconds(model.get(), options.time_limit_seconds);
    if (std::isfinite(options.stop_at_cost)) {
      // CBC keeps only solutions below the cutoff, so its first one is the one wanted.
      Cbc_setCutoff(model.get(),
                    options.stop_at_cost + 1e-9 * (std::max)(1.0, std::abs(options.stop_at_cost)));
      Cbc_setMaximumSolutions(model.get(), 1);
    }
    result.model_columns = columns;
    result.model_rows = static_cast<std::uint32_t>(constraint);

    // Warm start: the heuristic's selection, with each class's height as its order.
    if (options.warm_start) {
      const std::vector<std::uint32_t>& chosen = result.selection.choice;
      std::vector<std::uint32_t> height(p.class_count, 0);
      std::vector<std::uint32_t> order;  // classes in post-order
      std::vector<char> state(p.class_count, 0);
      for (const std::uint32_t root : p.roots) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> frames;
        if (state[root] != 0) continue;
        state[root] = 1;
        frames.emplace_back(root, p.children_begin(chosen[root]));
        while (!frames.empty()) {
          auto& [c, next] = frames.back();
          if (next < p.children_end(chosen[c])) {
            const std::uint32_t d = p.child[next++];
            if (state[d] == 0) {
              state[d] = 1;
              frames.emplace_back(d, p.children_begin(chosen[d]));
            }
            continue;
          }
          std::uint32_t h = 0;
          for (std::uint32_t k = p.children_begin(chosen[c]); k < p.children_end(chosen[c]); ++k)
            h = (std::max)(h, height[p.child[k]] + 1);
          height[c] = h;
          frames.pop_back();
        }
      }
      std::vector<int> start_cols;
      std::vector<double> start_values;
      for (const std::uint32_t c : classes) {
        const bool on = chosen[c] != no_row;
        for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k) {
          const std::uint32_t r = p.class_rows[k];
          if (row_col[r] == no_row) continue;
          start_cols.push_back(x_col(r));
          start_values.push_back(on && chosen[c] == r ? 1.0 : 0.0);
        }
        start_cols.push_back(a_col(c));
        start_values.push_back(on ? 1.0 : 0.0);
        start_cols.push_back(o_col(c));
        start_values.push_back(on ? static_cast<double>(height[c]) : 0.0);
      }
      Cbc_setMIPStartI(model.get(), static_cast<int>(start_cols.size()), start_cols.data(),
                       start_values.data());
    }

    const auto started = std::chrono::steady_clock::now();
    result.solver_ran = true;
    Cbc_solve(model.get());
    result.solver_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool proven = Cbc_isProvenOptimal(model.get()) != 0;
    const double bound = Cbc_getBestPossibleObjValue(model.get());
    const double* best = Cbc_bestSolution(model.get());

    // CBC's selection, checked: every reachable class chooses one row, no cycle.
    if (best != nullptr) {
      std::vector<std::uint32_t> choice(p.class_count, no_row);
      for (const std::uint32_t r : rows)
        if (best[row_col[r]] > 0.5) choice[p.row_class[r]] = r;
      const bool valid = choices_acyclic(p, choice, p.roots, true);
      if (valid) {
        std::vector<std::uint32_t> reachable;
        std::uint32_t selected = 0;
        const double cost = restrict_to_reachable(p, choice, reachable, selected);
        result.solver_cost = cost;
        if (cost < result.selection.dag_cost - 1e-9 * (std::max)(1.0, cost)) {
          result.selection.choice = std::move(reachable);
          result.selection.dag_cost = cost;
          result.selection.selected_rows = selected;
          result.solver_improved = true;
        }
      }
    }
    const double dag_cost = result.selection.dag_cost;
    if (std::isfinite(options.stop_at_cost) && Cbc_isProvenInfeasible(model.get()) != 0) {
      // Nothing costs less than the cutoff: the heuristic's selection is optimal if it is
      // below it, and the cutoff is a bound either way.
      const double cutoff = Cbc_getCutoff(model.get());
      result.optimal = dag_cost <= cutoff;
      result.lower_bound = (std::min)((std::max)(cutoff, 0.0), dag_cost);
    } else {
      result.optimal = proven;
      result.lower_bound = proven ? dag_cost : (std::min)((std::max)(bound, 0.0), dag_cost);
    }
    // The heuristic's own bound may be the tighter one (CBC stopped by its time limit early).
    if (!result.optimal)
      result.lower_bound =
          (std::min)((std::max)(result.lower_bound, result.selection.lower_bound), dag_cost);
    result.optimal = result.optimal || reached(dag_cost, result.selection.lower_bound);
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("DAG ILP extraction: the model", p.row_count, who,
                                  "free host memory, or use --method dag"));
  }
  return result;
}

}  // namespace detail

//! Exact DAG-cost extraction (CBC, warm-started by `extract_dag`) of an image's columns or of
//! raw rows, within a time limit.
//! @throws nothing; errors: those of `extract_dag` (negative costs, a needed class with no
//!         acyclic choice, ...), a time limit <= 0 (`errc::invalid_argument`), host allocation
//!         failure (`errc::out_of_memory`).
inline expected<dag_ilp_result> extract_dag_ilp(dag_rows rows,
                                                cuda::std::span<const double> node_cost,
                                                cuda::std::span<const std::uint32_t> roots,
                                                const dag_ilp_options& options = {}) {
  return detail::extract_on_rows(rows, node_cost, roots, options, "extract_dag_ilp",
                                 &detail::extract_dag_ilp);
}

}  // namespace vyre::algorithms
