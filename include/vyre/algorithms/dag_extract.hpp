// SPDX-License-Identifier: Apache-2.0
//! @file
//! DAG-cost extraction on the CPU: a deterministic heuristic (greedy DAG start, then local
//! search) that picks one e-node per needed e-class so that the sum of the costs of the
//! distinct chosen e-nodes reachable from the roots (each paid once) is small.
//!
//! Tree-cost extraction (`extract_reference`) pays a shared sub-term once per use; DAG cost pays
//! it once. The heuristic works in three steps:
//!
//! 1. Two acyclic starts, both built in Knuth's generalisation of Dijkstra's order (an e-class
//!    is settled when its cheapest e-node whose children are all settled is the cheapest of the
//!    open ones; a settled class never changes, so the choice map is acyclic by construction):
//!    the *tree start* values an e-node by its tree cost (the tree-cost selection), the *greedy
//!    DAG start* (extraction-gym's faster-greedy-dag) by the cost of the union of its children's
//!    chosen node sets plus itself.
//! 2. Local search over the whole choice map (`detail/dag_search.hpp`, the same code the GPU
//!    engine runs in `dag_extract.cuh`): for each needed class every alternative e-node is
//!    tried; its marginal cost (its cost + the cost of the classes it newly needs - the cost of
//!    those no longer needed) is found exactly by reference counting. Rounds screen every class
//!    against the round's state, then switch the promising ones, re-tried exactly, in a seeded
//!    random order; switches that would close a cycle are skipped.
//! 3. Iterated local search: random kicks (a needed class switched to a random acyclic
//!    alternative), local search again, the cheaper map kept, within a deterministic work
//!    budget.
//!
//! Several independent searches (different starts and seeds) run on `std::thread`s; the
//! cheapest result wins, ties to the lowest search index, so the result depends on the seed and
//! the search count, never on the thread count or timing, and equals the GPU engine's.
//!
//! A cheap lower bound (`detail::dag_lower_bound`) comes with every result: a search whose best
//! map meets it stops (the map is optimal), the searches after the first such one do not count
//! (on the CPU they are not run), and the result says `optimal`.
//!
//! Plain C++20 host code (g++ alone). Nothing throws; errors come back in `vyre::expected`.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <ranges>
#include <thread>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/cpu_engine.hpp"
#include "vyre/algorithms/detail/dag_search.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! How `extract_dag` searches.
struct dag_options {
  //! Independent searches: search i starts from the greedy DAG start when i % 3 == 0, the tree
  //! method's selection when i % 3 == 1, the tree start otherwise, with seed `seed + i`. The
  //! result depends on this, `seed` and the kick knobs only, on the CPU and the GPU alike. The
  //! GPU runs one per SM side by side: there, as many searches as SMs take about as long as 4.
  std::uint32_t searches = 4;
  //! CPU worker threads; 0: `std::thread::hardware_concurrency()`. Never changes the result.
  //! Small problems run on the calling thread (`detail::dag_threaded_work`).
  std::uint32_t threads = 0;
  std::uint64_t seed = 1;
  //! Work units each search may spend on kicks after its first local optimum: one per
  //! reference-count update, depth-first visit or relabelled class of its exact steps, one per
  //! screened row per round, one per class per kick. 0 disables kicks (plain local search).
  std::uint64_t kick_budget = 60'000'000;
  //! A search stops kicking after this many kicks in a row that found nothing cheaper.
  std::uint32_t kick_patience = 1000;
};

//! A DAG-cost selection.
struct dag_extraction_result {
  std::vector<std::uint32_t> eclass_ids;  //!< every e-class id, ascending
  //! Parallel: the chosen row of each e-class reachable from the roots through the chosen rows,
  //! `no_row` for every other class. Acyclic.
  std::vector<std::uint32_t> choice;
  double dag_cost = 0;  //!< sum of the costs of the chosen rows (each once)
  //! The DAG cost of the tree-cost selection (`extract_reference`'s, or the tree start's when
  //! that one has a cycle through zero-cost ties).
  double tree_selection_dag_cost = 0;
  std::uint32_t selected_rows = 0;  //!< rows in the selection
  std::uint64_t moves = 0;          //!< improving switches of the winning search
  //! No selection costs less (`detail::dag_lower_bound`, two linear passes; at most `dag_cost`):
  //! `dag_cost` is at most `dag_cost / lower_bound - 1` above the optimum.
  double lower_bound = 0;
  //! `dag_cost` meets `lower_bound` (within a relative 1e-9 of rounding): the selection is
  //! optimal, and the searches stopped there.
  bool optimal = false;

  VYRE_HOST_SPECIAL_MEMBERS(
      dag_extraction_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_extraction_result);

namespace detail {

//! The extraction problem over dense class indices: each row's distinct child classes, the rows
//! of each class and the rows naming each class. A row naming its own class is never usable.
struct dag_problem {
  std::uint32_t class_count = 0;
  std::uint32_t row_count = 0;
  std::vector<std::uint32_t> ids;  //!< dense class -> e-class id
  std::vector<std::uint32_t> row_class;
  std::vector<double> cost;
  std::vector<std::uint32_t> child_start, child;       //!< distinct child classes of each row (CSR)
  std::vector<std::uint32_t> class_start, class_rows;  //!< rows of each class (CSR)
  std::vector<std::uint32_t> parent_start, parent_rows;       //!< rows naming each class (CSR)
  std::vector<unsigned char> usable;                          //!< row does not name its own class
  std::vector<std::uint32_t> roots;                           //!< dense, distinct
  std::vector<std::uint32_t> multi;                           //!< classes with alternatives
  std::vector<std::uint32_t> candidate_row, candidate_multi;  //!< their rows, index in `multi`

  //! The view the search reads.
  dag_problem_ref ref() const noexcept {
    dag_problem_ref r;
    r.class_count = class_count;
    r.root_count = static_cast<std::uint32_t>(roots.size());
    r.multi_count = static_cast<std::uint32_t>(multi.size());
    r.row_class = row_class.data();
    r.cost = cost.data();
    r.child_start = child_start.data();
    r.child = child.data();
    r.class_start = class_start.data();
    r.class_rows = class_rows.data();
    r.parent_start = parent_start.data();
    r.parent_rows = parent_rows.data();
    r.usable = usable.data();
    r.roots = roots.data();
    r.multi = multi.data();
    r.candidate_count = static_cast<std::uint32_t>(candidate_row.size());
    r.candidate_row = candidate_row.data();
    r.candidate_multi = candidate_multi.data();
    return r;
  }

  //! Where a search's arrays lie.
  dag_search_layout search_layout() const noexcept {
    return dag_search_layout::of(class_count, multi.size(), child.size());
  }

  std::uint32_t children_begin(std::uint32_t r) const noexcept { return child_start[r]; }
  std::uint32_t children_end(std::uint32_t r) const noexcept { return child_start[r + 1]; }

  VYRE_HOST_SPECIAL_MEMBERS(dag_problem);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_problem);

inline void csr_from_keys(const std::vector<std::uint32_t>& keys,
                          const std::vector<std::uint32_t>& values, std::uint32_t key_count,
                          std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& out) {
  start.assign(std::size_t{key_count} + 1, 0u);
  for (const std::uint32_t k : keys) ++start[k + 1];
  for (std::uint32_t k = 0; k < key_count; ++k) start[k + 1] += start[k];
  out.resize(values.size());
  std::vector<std::uint32_t> cursor(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < keys.size(); ++i) out[cursor[keys[i]]++] = values[i];
}

//! The host allocation failure of a DAG extraction step (`context`) on `rows` rows.
inline error dag_out_of_memory(const char* context, std::uint32_t rows, const char* who,
                               const char* hint = "free host memory") noexcept {
  return error(errc::out_of_memory, context).with("rows", rows).about(who).fix(hint);
}

//! Validates costs and roots and builds the problem. Refuses negative costs (DAG cost is then
//! not what a selection should minimise: paying a node once is no longer a lower bound).
inline expected<dag_problem> make_dag_problem(const host_rows& rows,
                                              const cpu_engine::detail::dense_map& dense,
                                              cuda::std::span<const double> node_cost,
                                              cuda::std::span<const std::uint32_t> roots,
                                              const char* who) {
  if (node_cost.size() != rows.row_count)
    return fail(error(errc::invalid_argument, "DAG extraction: one node cost per row is required")
                    .with("costs", node_cost.size())
                    .with("rows", rows.row_count)
                    .about(who)
                    .fix("pass exactly one cost per row, in row order"));
  for (std::size_t r = 0; r < node_cost.size(); ++r) {
    if (!std::isfinite(node_cost[r]))
      return fail(error(errc::invalid_argument, "DAG extraction: a node cost is not finite")
                      .with("row", r)
                      .about(who)
                      .fix("give every node a finite cost"));
    if (node_cost[r] < 0) {
      char text[80];
      std::snprintf(text, sizeof text, "%s: row %zu has cost %.17g", who, r, node_cost[r]);
      return fail(error(errc::invalid_argument,
                        "DAG extraction: a node cost is negative (DAG and ILP extraction need "
                        "costs >= 0)")
                      .with("row", r)
                      .about(text)
                      .fix("shift or clamp the costs to be non-negative, or use tree extraction "
                           "(--method tree), which accepts negative costs without negative "
                           "cycles"));
    }
  }
  dag_problem p;
  p.class_count = static_cast<std::uint32_t>(dense.ids.size());
  p.row_count = rows.row_count;
  try {
    p.ids = dense.ids;
    p.row_class.assign(dense.of_row.begin(), dense.of_row.end());
    p.cost.assign(node_cost.begin(), node_cost.end());
    p.usable.assign(p.row_count, 1);
    p.child_start.assign(std::size_t{p.row_count} + 1, 0u);
    std::vector<std::uint32_t> scratch;
    for (std::uint32_t r = 0; r < p.row_count; ++r) {
      scratch.assign(
          dense.of_child.begin() + rows.row_children_offsets[r],
          dense.of_child.begin() + rows.row_children_offsets[r] + rows.row_children_lens[r]);
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
      for (const std::uint32_t c : scratch) {
        if (c == p.row_class[r]) p.usable[r] = 0;
        p.child.push_back(c);
      }
      p.child_start[r + 1] = static_cast<std::uint32_t>(p.child.size());
    }
    std::vector<std::uint32_t> row_index(p.row_count);
    for (std::uint32_t r = 0; r < p.row_count; ++r) row_index[r] = r;
    csr_from_keys(p.row_class, row_index, p.class_count, p.class_start, p.class_rows);
    std::vector<std::uint32_t> parent_of(p.child.size());
    for (std::uint32_t r = 0; r < p.row_count; ++r)
      for (std::uint32_t k = p.child_start[r]; k < p.child_start[r + 1]; ++k) parent_of[k] = r;
    csr_from_keys(p.child, parent_of, p.class_count, p.parent_start, p.parent_rows);
    for (std::size_t i = 0; i < roots.size(); ++i) {
      const auto it = std::lower_bound(p.ids.begin(), p.ids.end(), roots[i]);
      if (it == p.ids.end() || *it != roots[i])
        return fail(
            error(errc::not_found, "DAG extraction: a root names an e-class that has no row")
                .with("root", i)
                .with("eclass", roots[i])
                .about(who)
                .fix("pass e-class ids that appear in the rows' e-class column"));
      p.roots.push_back(static_cast<std::uint32_t>(it - p.ids.begin()));
    }
    std::sort(p.roots.begin(), p.roots.end());
    p.roots.erase(std::unique(p.roots.begin(), p.roots.end()), p.roots.end());
    for (std::uint32_t c = 0; c < p.class_count; ++c) {
      if (p.class_start[c + 1] - p.class_start[c] < 2) continue;
      for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k) {
        p.candidate_row.push_back(p.class_rows[k]);
        p.candidate_multi.push_back(static_cast<std::uint32_t>(p.multi.size()));
      }
      p.multi.push_back(c);
    }
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("DAG extraction: problem arrays", rows.row_count, who));
  }
  return p;
}

//! Settles classes in Knuth-Dijkstra order. `value(row, choice)` prices a row whose children
//! are all settled (it must be >= each child's settled value when costs are >= 0); returns the
//! choice map (`no_row` for classes never settled: every node of theirs needs a cycle).
//! `on_settle(class, row)` runs as a class settles; returning false abandons (empty result).
template <class Value, class Settle>
std::vector<std::uint32_t> settle_classes(const dag_problem& p, Value value, Settle on_settle) {
  using entry = std::pair<double, std::uint32_t>;  // value, row (ties: smaller row first)
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> open;
  std::vector<std::uint32_t> choice(p.class_count, no_row);
  std::vector<std::uint32_t> waiting(p.row_count);
  for (std::uint32_t r = 0; r < p.row_count; ++r) {
    waiting[r] = p.children_end(r) - p.children_begin(r);
    if (p.usable[r] && waiting[r] == 0) open.emplace(value(r, choice), r);
  }
  while (!open.empty()) {
    const std::uint32_t r = open.top().second;
    open.pop();
    const std::uint32_t c = p.row_class[r];
    if (choice[c] != no_row) continue;
    choice[c] = r;
    if (!on_settle(c, r)) return {};
    for (std::uint32_t k = p.parent_start[c]; k < p.parent_start[c + 1]; ++k) {
      const std::uint32_t parent = p.parent_rows[k];
      if (--waiting[parent] == 0 && p.usable[parent] && choice[p.row_class[parent]] == no_row)
        open.emplace(value(parent, choice), parent);
    }
  }
  return choice;
}

//! The tree-cost selection (acyclic; with costs >= 0 every class's tree cost is optimal).
inline std::vector<std::uint32_t> tree_start(const dag_problem& p) {
  std::vector<double> tree(p.class_count, 0.0);
  std::uint32_t settling = no_row;
  double settled_value = 0;
  auto value = [&](std::uint32_t r, const std::vector<std::uint32_t>&) {
    double total = p.cost[r];
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      total += tree[p.child[k]];
    return total;
  };
  return settle_classes(p, value, [&](std::uint32_t c, std::uint32_t r) {
    settling = c;
    settled_value = value(r, {});
    tree[settling] = settled_value;
    return true;
  });
}

//! The greedy DAG start: a row is worth the cost of the union of its children's node sets plus
//! its own cost. Abandoned (empty) when the stored sets would pass `max_entries` in all.
//! A class settled by a row with one child class stores only itself and links to the child's
//! set (the union is that set): chains of such rows would otherwise make this start quadratic
//! in their length, in time and memory.
inline std::vector<std::uint32_t> greedy_dag_start(const dag_problem& p, std::size_t max_entries) {
  // Class c's set: own[c], then the set of link[c] (no_row: none); the parts are disjoint.
  std::vector<std::vector<std::uint32_t>> own(p.class_count);
  std::vector<std::uint32_t> link(p.class_count, no_row);
  std::vector<double> worth(p.class_count, 0.0);  // cost of each settled set
  std::vector<std::uint32_t> stamp(p.class_count, 0);
  std::uint32_t epoch = 0;
  std::size_t stored = 0;
  std::vector<std::uint32_t> members;
  const std::vector<std::uint32_t>* chosen = nullptr;
  const auto only_child = [&](std::uint32_t r) {
    return p.children_end(r) - p.children_begin(r) == 1 ? p.child[p.children_begin(r)] : no_row;
  };
  // Collects the union of r's children's sets into `members` and returns its cost + cost[r].
  auto gather = [&](std::uint32_t r, const std::vector<std::uint32_t>& choice) {
    ++epoch;
    members.clear();
    double total = p.cost[r];
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      for (std::uint32_t part = p.child[k]; part != no_row; part = link[part])
        for (const std::uint32_t d : own[part])
          if (stamp[d] != epoch) {
            stamp[d] = epoch;
            members.push_back(d);
            total += p.cost[choice[d]];
          }
    return total;
  };
  auto value = [&](std::uint32_t r, const std::vector<std::uint32_t>& choice) {
    chosen = &choice;
    const std::uint32_t d = only_child(r);
    return d != no_row ? p.cost[r] + worth[d] : gather(r, choice);
  };
  return settle_classes(p, value, [&](std::uint32_t c, std::uint32_t r) {
    const std::uint32_t d = only_child(r);
    if (d != no_row) {
      members.clear();
      link[c] = d;
      worth[c] = p.cost[r] + worth[d];
    } else {
      worth[c] = gather(r, *chosen);
    }
    members.push_back(c);
    stored += members.size();
    if (stored > max_entries) return false;
    own[c] = members;
    return true;
  });
}

//! The choice of every class reachable from the roots through `choice` (`no_row` elsewhere)
//! and its DAG cost.
inline double restrict_to_reachable(const dag_problem& p, const std::vector<std::uint32_t>& choice,
                                    std::vector<std::uint32_t>& out, std::uint32_t& rows) {
  out.assign(p.class_count, no_row);
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  double total = 0;
  rows = 0;
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (out[c] != no_row) continue;
    out[c] = choice[c];
    total += p.cost[choice[c]];
    ++rows;
    for (std::uint32_t k = p.children_begin(choice[c]); k < p.children_end(choice[c]); ++k)
      stack.push_back(p.child[k]);
  }
  return total;
}

//! Whether the choices reachable from `starts` (class indices) through `choice` form no cycle;
//! with `complete`, also whether every class reached (a start included) has a choice. Without
//! it, classes without a choice end a path (as starts, they are passed over).
template <class Starts>
bool choices_acyclic(const dag_problem& p, const std::vector<std::uint32_t>& choice,
                     const Starts& starts, bool complete) {
  std::vector<char> state(p.class_count, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<std::uint32_t, std::uint32_t>> frames;
  for (const std::uint32_t start : starts) {
    if (state[start] != 0) continue;
    if (choice[start] == no_row) {
      if (complete) return false;
      continue;
    }
    state[start] = 1;
    frames.emplace_back(start, p.children_begin(choice[start]));
    while (!frames.empty()) {
      auto& [c, next] = frames.back();
      if (next == p.children_end(choice[c])) {
        state[c] = 2;
        frames.pop_back();
        continue;
      }
      const std::uint32_t d = p.child[next++];
      if (state[d] == 1 || (complete && choice[d] == no_row)) return false;
      if (state[d] == 0 && choice[d] != no_row) {
        state[d] = 1;
        frames.emplace_back(d, p.children_begin(choice[d]));
      }
    }
  }
  return true;
}

//! The choice map of `extract_reference` (the tree method's selection) over the problem's
//! classes, or empty when it has a cycle (zero-cost ties) or misses a class the tree start has.
inline std::vector<std::uint32_t> reference_start(const dag_problem& p,
                                                  const extraction_result& reference,
                                                  const std::vector<std::uint32_t>& tree) {
  if (reference.choice.size() != p.class_count) return {};
  for (std::uint32_t c = 0; c < p.class_count; ++c)
    if ((reference.choice[c] == no_row) != (tree[c] == no_row)) return {};
  if (!choices_acyclic(p, reference.choice, std::views::iota(0u, p.class_count), false)) return {};
  return reference.choice;
}

//! A lower bound on the DAG cost of every acyclic selection from the roots, in two linear
//! passes; the larger of:
//! - the costliest path: a class costs at least its cheapest row plus its dearest child class,
//!   b(c) = min over rows r of c of (cost(r) + max over child classes d of b(d)), settled in
//!   Knuth-Dijkstra order (a selection holds a root's path down to every chosen leaf); then the
//!   largest b(root);
//! - the classes every selection needs: the roots, and the classes that every possible row of
//!   a needed class names; each pays at least its cheapest possible row.
//! Where the search's best map costs this, it is optimal and the search stops (`dag_search.hpp`);
//! on the 80 extraction-gym files with costs >= 0 that is 37.
inline double dag_lower_bound(const dag_problem& p) {
  std::vector<double> path(p.class_count, 0.0);
  auto value = [&](std::uint32_t r, const std::vector<std::uint32_t>&) {
    double dearest = 0;
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      dearest = (std::max)(dearest, path[p.child[k]]);
    return p.cost[r] + dearest;
  };
  const std::vector<std::uint32_t> settled =
      settle_classes(p, value, [&](std::uint32_t c, std::uint32_t r) {
        path[c] = value(r, {});
        return true;
      });
  double by_path = 0;
  for (const std::uint32_t root : p.roots) by_path = (std::max)(by_path, path[root]);

  // A row is possible when it is usable and all its children have an acyclic choice.
  const auto possible = [&](std::uint32_t r) {
    if (!p.usable[r]) return false;
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      if (settled[p.child[k]] == no_row) return false;
    return true;
  };
  std::vector<unsigned char> needed(p.class_count, 0);
  std::vector<std::uint32_t> named(p.class_count, 0);  // possible rows of the class naming d
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end()), touched;
  for (const std::uint32_t root : p.roots) needed[root] = 1;
  double by_needed = 0;
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    std::uint32_t rows = 0;
    double cheapest = std::numeric_limits<double>::infinity();
    touched.clear();
    for (std::uint32_t k = p.class_start[c]; k < p.class_start[c + 1]; ++k) {
      const std::uint32_t r = p.class_rows[k];
      if (!possible(r)) continue;
      ++rows;
      cheapest = (std::min)(cheapest, p.cost[r]);
      for (std::uint32_t j = p.children_begin(r); j < p.children_end(r); ++j)
        if (named[p.child[j]]++ == 0) touched.push_back(p.child[j]);
    }
    if (rows != 0) by_needed += cheapest;
    for (const std::uint32_t d : touched) {
      if (named[d] == rows && !needed[d]) {
        needed[d] = 1;
        stack.push_back(d);
      }
      named[d] = 0;
    }
  }
  return (std::max)(by_path, by_needed);
}

//! The searches' starting maps (each a full, acyclic choice map over the problem's classes),
//! and the lower bound at which they stop.
struct dag_starts {
  std::vector<std::uint32_t> tree;          //!< tree-cost values, Knuth-Dijkstra order
  std::vector<std::uint32_t> greedy;        //!< greedy DAG values (the tree start if abandoned)
  std::vector<std::uint32_t> by_reference;  //!< the tree method's selection (or the tree start)
  double lower_bound = 0;                   //!< `dag_lower_bound`

  //! Search i's start: greedy, the tree method's selection, the tree start in turn.
  const std::vector<std::uint32_t>& of(std::uint32_t search) const noexcept {
    return search % 3 == 0 ? greedy : search % 3 == 1 ? by_reference : tree;
  }
  VYRE_HOST_SPECIAL_MEMBERS(dag_starts);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_starts);

//! The starts of a built problem. `reference` (optional) is `extract_reference`'s result on the
//! same rows: its selection is one more start, so the result never costs more than the tree
//! method's selection. Errors: a root with no acyclic choice.
inline expected<dag_starts> make_dag_starts(const dag_problem& p, const char* who,
                                            const extraction_result* reference) {
  dag_starts starts;
  try {
    starts.tree = tree_start(p);
    for (const std::uint32_t root : p.roots)
      if (starts.tree[root] == no_row)
        return fail(error(errc::invalid_argument,
                          "DAG extraction: a needed e-class has no acyclic choice (every e-node "
                          "of it needs the class itself again below it)")
                        .with("eclass", p.ids[root])
                        .about(who)
                        .fix("add an e-node to that class whose children do not lead back to it, "
                             "or do not make it a root"));
    starts.lower_bound = dag_lower_bound(p);
    // Where the tree start meets the bound it is optimal: search 0 starts from it and stops
    // there, and the greedy start, the dearest of the three, is not built.
    std::vector<std::uint32_t> reachable;
    std::uint32_t rows = 0;
    const bool tree_optimal =
        reached(restrict_to_reachable(p, starts.tree, reachable, rows), starts.lower_bound);
    if (!tree_optimal) starts.greedy = greedy_dag_start(p, std::size_t{1} << 26);
    if (reference != nullptr) starts.by_reference = reference_start(p, *reference, starts.tree);
    if (starts.greedy.empty()) starts.greedy = starts.tree;
    if (starts.by_reference.empty()) starts.by_reference = starts.tree;
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("DAG extraction: starting selections", p.row_count, who));
  }
  return starts;
}

//! The winner of the searches that count: the cheapest, ties to the lowest index. The searches
//! that count run from 0 up to the first whose best map meets `lower_bound` (it is optimal; the
//! CPU engine never runs the later ones), all of them when none does.
inline std::uint32_t dag_winner(const std::vector<double>& cost, double lower_bound) noexcept {
  std::uint32_t winner = 0;
  for (std::uint32_t i = 1; i < cost.size() && !reached(cost[i - 1], lower_bound); ++i)
    if (cost[i] < cost[winner]) winner = i;
  return winner;
}

//! The result of the winning map `found` (a full map; restricted here to what the roots reach).
inline expected<dag_extraction_result> finish_dag(const dag_problem& p, const dag_starts& starts,
                                                  const std::vector<std::uint32_t>& found,
                                                  std::uint64_t moves, const char* who) {
  dag_extraction_result result;
  try {
    result.eclass_ids = p.ids;
    std::vector<std::uint32_t> scratch;
    std::uint32_t rows = 0;
    result.tree_selection_dag_cost = restrict_to_reachable(p, starts.by_reference, scratch, rows);
    result.dag_cost = restrict_to_reachable(p, found, result.choice, result.selected_rows);
  } catch (const std::bad_alloc&) {
    return fail(
        error(errc::out_of_memory, "DAG extraction: result").about(who).fix("free host memory"));
  }
  result.moves = moves;
  result.optimal = reached(result.dag_cost, starts.lower_bound);
  result.lower_bound = (std::min)(starts.lower_bound, result.dag_cost);
  return result;
}

//! Below this many rows times `kick_patience` (1 without kicks) the CPU searches all run on the
//! calling thread (measured on a 2-core EPYC with patience 20: threads lost on every file below
//! 90 rows and won on the unproven ones from 98).
inline constexpr std::uint64_t dag_threaded_work = 2000;

//! The heuristic on a built problem, on the host's cores (`reference`: see `make_dag_starts`).
inline expected<dag_extraction_result> extract_dag(const dag_problem& p, const dag_options& options,
                                                   const char* who,
                                                   const extraction_result* reference = nullptr) {
  VYRE_TRY_ASSIGN(const dag_starts starts, make_dag_starts(p, who, reference));
  const std::uint32_t searches = (std::max)(options.searches, 1u);
  std::vector<std::vector<std::uint32_t>> found(searches);
  std::vector<double> found_cost(searches, std::numeric_limits<double>::infinity());
  std::vector<std::uint64_t> found_moves(searches, 0);
  std::vector<char> failed(searches, 0);
  std::vector<dag_search_scalars> scalars(searches);
  const dag_problem_ref view = p.ref();
  const dag_search_layout layout = p.search_layout();
  const auto out_of_memory = [&](std::uint32_t search) {
    return fail(error(errc::out_of_memory, "DAG extraction: a search ran out of memory")
                    .with("search", search)
                    .about(who)
                    .fix("free host memory"));
  };
  // The lowest search index whose map is optimal: the later searches cannot win (see
  // `dag_winner`), so they are not started.
  std::atomic<std::uint32_t> proven{searches};
  const auto knobs_of = [&](std::uint32_t i) {
    return dag_search_knobs{options.seed + i, options.kick_budget, options.kick_patience,
                            starts.lower_bound};
  };
  // Search i in its own memory; `first_part_done`: its `begin` already ran in `memory`.
  auto run = [&](std::uint32_t i, std::vector<std::uint32_t>& memory, bool first_part_done) {
    try {
      if (memory.empty()) memory.resize(layout.words);
      const dag_search_arrays arrays = layout.arrays(memory.data());
      serial_exec exec;
      dag_local_search<serial_exec> search(view, arrays, scalars[i], exec);
      if (!first_part_done) search.begin(starts.of(i).data(), knobs_of(i));
      search.improve(knobs_of(i));
      found_cost[i] = scalars[i].best_cost;
      found[i].assign(arrays.best, arrays.best + p.class_count);
      found_moves[i] = scalars[i].moves;
      if (reached(scalars[i].best_cost, starts.lower_bound)) {
        std::uint32_t seen = proven.load();
        while (i < seen && !proven.compare_exchange_weak(seen, i)) {
        }
      }
    } catch (const std::bad_alloc&) {
      failed[i] = 1;
    }
  };
  // Search 0's first local optimum on the caller: where it is optimal (most small problems
  // with a tight bound), no other search counts and no thread is started.
  std::vector<std::uint32_t> first_memory;
  bool first_done = false;
  try {
    first_memory.resize(layout.words);
    serial_exec exec;
    first_done =
        dag_local_search<serial_exec>(view, layout.arrays(first_memory.data()), scalars[0], exec)
            .begin(starts.of(0).data(), knobs_of(0));
  } catch (const std::bad_alloc&) {
    return out_of_memory(0);
  }
  std::uint32_t threads =
      options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  // Starting a thread costs tens of microseconds: more than all the searches of a small problem
  // with few kicks.
  const std::uint32_t kicks = options.kick_budget == 0 ? 1u : (std::max)(options.kick_patience, 1u);
  if (std::uint64_t{p.row_count} * kicks < dag_threaded_work ||
      (first_done && reached(scalars[0].best_cost, starts.lower_bound)))
    threads = 1;
  threads = (std::min)((std::max)(threads, 1u), searches);
  const auto share = [&](std::uint32_t t) {
    std::vector<std::uint32_t> memory;
    for (std::uint32_t i = t; i < searches && i < proven.load(); i += threads) {
      if (i == 0) {
        run(0, first_memory, true);
        first_memory = {};
      } else {
        run(i, memory, false);
      }
    }
  };
  std::vector<std::thread> workers;
  try {
    for (std::uint32_t t = 1; t < threads; ++t) workers.emplace_back(share, t);
  } catch (const std::exception&) {
    for (auto& w : workers) w.join();
    return fail(error(errc::invalid_state, "DAG extraction: could not start worker threads")
                    .with("threads", threads)
                    .about(who)
                    .fix("pass dag_options::threads = 1"));
  }
  share(0);  // the caller's share, search 0 first
  for (auto& w : workers) w.join();
  for (std::uint32_t i = 0; i < searches && i <= proven.load(); ++i)
    if (failed[i] != 0) return out_of_memory(i);
  const std::uint32_t winner = dag_winner(found_cost, starts.lower_bound);
  return finish_dag(p, starts, found[winner], found_moves[winner], who);
}

}  // namespace detail

namespace detail {

//! What both extraction modes start from: the DAG problem of `view` and its tree-cost
//! selection (a search start, and the ILP's first bound); `who` names the caller in errors.
struct dag_input {
  dag_problem problem;
  extraction_result tree;

  VYRE_HOST_SPECIAL_MEMBERS(dag_input);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_input);

//! Through the CPU engine (one thread: these problems are small next to their searches), whose
//! tree-cost selection equals `extract_reference`'s in one Knuth-Dijkstra pass where the
//! reference's worklist can take a round per level (4000 on a chain).
inline expected<dag_input> dag_input_of(const host_rows& view,
                                        cuda::std::span<const double> node_cost,
                                        cuda::std::span<const std::uint32_t> roots,
                                        const char* who) {
  VYRE_TRY_ASSIGN(const cpu_engine::detail::dense_map dense, cpu_engine::detail::densify(view, 1));
  dag_input input;
  VYRE_TRY_ASSIGN(input.problem, make_dag_problem(view, dense, node_cost, roots, who));
  VYRE_TRY_ASSIGN(input.tree, cpu_engine::detail::extract(view, dense, node_cost, roots, 1));
  return input;
}

//! `dag_input_of` over raw rows (children offsets are the prefix sums of the lengths).
inline expected<dag_input> dag_input_of(const raw_rows_ref& rows,
                                        cuda::std::span<const double> node_cost,
                                        cuda::std::span<const std::uint32_t> roots,
                                        const char* who) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const host_rows view, rows_of(rows, offsets));
  return dag_input_of(view, node_cost, roots, who);
}

}  // namespace detail

//! The rows the DAG extractions take: an image's columns, or raw rows (children offsets are
//! the prefix sums of the lengths). Converts implicitly from either; a view, valid while they are.
class dag_rows {
 public:
  dag_rows(const image_columns& image) noexcept : image_(&image) {}  // NOLINT(*-explicit-*)
  dag_rows(const raw_rows_ref& rows) noexcept : rows_(&rows) {}      // NOLINT(*-explicit-*)

  //! The DAG problem of these rows and their tree-cost selection; `who` names the caller in
  //! errors.
  expected<detail::dag_input> input(cuda::std::span<const double> node_cost,
                                    cuda::std::span<const std::uint32_t> roots,
                                    const char* who) const {
    if (image_ != nullptr)
      return detail::dag_input_of(detail::rows_of(*image_), node_cost, roots, who);
    return detail::dag_input_of(*rows_, node_cost, roots, who);
  }

 private:
  const image_columns* image_ = nullptr;
  const raw_rows_ref* rows_ = nullptr;
};

namespace detail {

//! `extract` (`detail::extract_dag` or `detail::extract_dag_ilp`) on the DAG problem of `rows`,
//! with their tree-cost selection as the reference start; `who` names the caller in errors.
template <class Result, class Options>
expected<Result> extract_on_rows(dag_rows rows, cuda::std::span<const double> node_cost,
                                 cuda::std::span<const std::uint32_t> roots, const Options& options,
                                 const char* who,
                                 expected<Result> (*extract)(const dag_problem&, const Options&,
                                                             const char*,
                                                             const extraction_result*)) {
  VYRE_TRY_ASSIGN(const dag_input input, rows.input(node_cost, roots, who));
  return extract(input.problem, options, who, &input.tree);
}

}  // namespace detail

//! DAG-cost extraction (the heuristic above) of an image's columns or of raw rows.
//! @param node_cost one finite, non-negative cost per row, in row order.
//! @param roots e-class ids (each must have rows); duplicates count once.
//! @throws nothing; errors: wrong cost count, a non-finite or negative cost (naming the row and
//!         its cost), a root with no acyclic choice (naming the e-class), all
//!         `errc::invalid_argument`; an unknown root or child class (`errc::not_found`); host
//!         allocation failure (`errc::out_of_memory`).
inline expected<dag_extraction_result> extract_dag(dag_rows rows,
                                                   cuda::std::span<const double> node_cost,
                                                   cuda::std::span<const std::uint32_t> roots,
                                                   const dag_options& options = {}) {
  return detail::extract_on_rows(rows, node_cost, roots, options, "extract_dag",
                                 &detail::extract_dag);
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
