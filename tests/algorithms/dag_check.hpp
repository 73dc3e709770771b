// SPDX-License-Identifier: Apache-2.0
// Test support: an independent checker of DAG-cost selections. It reads only the raw rows (not
// the library's problem arrays): a selection must choose, for every e-class reachable from the
// roots through the chosen rows, a row of that class; nothing else may be chosen; the chosen
// rows must form no cycle; and the DAG cost (each distinct chosen row once) recomputed here
// must equal the reported one. Also the hand-made e-graphs the DAG tests share (CPU and GPU),
// whose optima are known by hand.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

// The DAG cost of `choice` recomputed from the rows, or a message; "" in `problem` when valid.
struct dag_check_outcome {
  std::string problem;
  double cost = 0;
};

// `eclass_ids` ascending with `choice` parallel (a row index or no_row).
inline dag_check_outcome check_dag_selection(const vyre::algorithms::raw_rows& rows,
                                             const std::vector<double>& cost,
                                             const std::vector<std::uint32_t>& roots,
                                             const std::vector<std::uint32_t>& eclass_ids,
                                             const std::vector<std::uint32_t>& choice,
                                             double reported_cost) {
  dag_check_outcome out;
  const std::uint32_t no_row = vyre::algorithms::no_row;
  if (eclass_ids.size() != choice.size()) {
    out.problem = "eclass_ids and choice differ in length";
    return out;
  }
  std::vector<std::uint64_t> start(rows.row_count() + 1, 0);
  for (std::uint32_t r = 0; r < rows.row_count(); ++r)
    start[r + 1] = start[r] + rows.row_children_lens[r];
  std::map<std::uint32_t, std::uint32_t> chosen;  // e-class id -> row
  for (std::size_t i = 0; i < eclass_ids.size(); ++i)
    if (choice[i] != no_row) chosen[eclass_ids[i]] = choice[i];

  // Reachability with cycle detection: 0 unseen, 1 on the path, 2 done.
  std::map<std::uint32_t, int> state;
  double total = 0;
  struct frame {
    std::uint32_t eclass;
    std::uint64_t next;
  };
  for (const std::uint32_t root : roots) {
    if (state[root] == 2) continue;
    std::vector<frame> path;
    const auto enter = [&](std::uint32_t eclass) -> bool {
      const auto it = chosen.find(eclass);
      if (it == chosen.end()) {
        out.problem = "needed e-class " + std::to_string(eclass) + " has no choice";
        return false;
      }
      const std::uint32_t row = it->second;
      if (row >= rows.row_count() || rows.row_eclass_ids[row] != eclass) {
        out.problem = "e-class " + std::to_string(eclass) + " chose row " + std::to_string(row) +
                      ", which is not one of its rows";
        return false;
      }
      state[eclass] = 1;
      total += cost[row];
      path.push_back({eclass, start[row]});
      return true;
    };
    if (!enter(root)) return out;
    while (!path.empty()) {
      frame& top = path.back();
      const std::uint32_t row = chosen[top.eclass];
      if (top.next == start[row + 1]) {
        state[top.eclass] = 2;
        path.pop_back();
        continue;
      }
      const std::uint32_t child = rows.children[top.next++];
      const int seen = state[child];
      if (seen == 1) {
        out.problem = "the selection has a cycle through e-class " + std::to_string(child);
        return out;
      }
      if (seen == 0 && !enter(child)) return out;
    }
  }
  for (const auto& [eclass, row] : chosen)
    if (state[eclass] != 2) {
      out.problem = "e-class " + std::to_string(eclass) + " (row " + std::to_string(row) +
                    ") is chosen but not reachable from the roots";
      return out;
    }
  out.cost = total;
  if (std::abs(total - reported_cost) > 1e-9 * (std::max)(1.0, std::abs(total)))
    out.problem = "reported DAG cost " + std::to_string(reported_cost) +
                  " differs from the recomputed " + std::to_string(total);
  return out;
}

// The DAG cost of the tree-cost selection (extract_reference's `choice`), following its choices
// from the roots; each distinct row once.
inline double dag_cost_of_tree_choice(const vyre::algorithms::raw_rows& rows,
                                      const std::vector<double>& cost,
                                      const std::vector<std::uint32_t>& roots,
                                      const vyre::algorithms::extraction_result& tree) {
  std::vector<std::uint64_t> start(rows.row_count() + 1, 0);
  for (std::uint32_t r = 0; r < rows.row_count(); ++r)
    start[r + 1] = start[r] + rows.row_children_lens[r];
  std::map<std::uint32_t, bool> seen;
  std::vector<std::uint32_t> stack(roots.begin(), roots.end());
  double total = 0;
  while (!stack.empty()) {
    const std::uint32_t eclass = stack.back();
    stack.pop_back();
    if (seen[eclass]) continue;
    seen[eclass] = true;
    const auto index = static_cast<std::size_t>(
        std::lower_bound(tree.eclass_ids.begin(), tree.eclass_ids.end(), eclass) -
        tree.eclass_ids.begin());
    const std::uint32_t row = tree.choice[index];
    total += cost[row];
    for (std::uint64_t k = start[row]; k < start[row + 1]; ++k) stack.push_back(rows.children[k]);
  }
  return total;
}

// A hand-made e-graph: rows of (e-class, children e-classes, cost) plus roots.
struct small_graph {
  vyre::algorithms::raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;

  void add(std::uint32_t eclass, std::vector<std::uint32_t> children, double node_cost) {
    rows.row_eclass_ids.push_back(eclass);
    rows.row_language_op_ids.push_back(rows.row_count());  // distinct ops: no congruence
    rows.row_children_lens.push_back(static_cast<std::uint32_t>(children.size()));
    rows.children.insert(rows.children.end(), children.begin(), children.end());
    cost.push_back(node_cost);
  }

  //! A graph written as a table: one {e-class, children, cost} per row, then the roots.
  struct node {
    std::uint32_t eclass;
    std::vector<std::uint32_t> children;
    double cost;
  };
  static small_graph of(std::initializer_list<node> nodes, std::vector<std::uint32_t> roots) {
    small_graph g;
    for (const node& n : nodes) g.add(n.eclass, n.children, n.cost);
    g.roots = std::move(roots);
    return g;
  }
};

// Sharing that tree cost misses: R = p(Y, Z); Y and Z each either name X (cost 8) at cost 1 or
// are a leaf of cost 6. Tree cost picks both leaves (13); sharing X costs 11.
inline small_graph sharing_graph() {
  return small_graph::of({{0, {}, 8},       // X
                          {1, {0}, 1},      // Y = g(X)
                          {1, {}, 6},       // Y leaf
                          {2, {0}, 1},      // Z = h(X)
                          {2, {}, 6},       // Z leaf
                          {3, {1, 2}, 1}},  // R
                         {3});
}

// A cycle to avoid: R = p(A, B); A = f(B) or a leaf of 5; B = g(A) or a leaf of 5. Choosing
// f and g costs 3 but is a cycle; the optimum is 7.
inline small_graph cycle_graph() {
  return small_graph::of({{10, {20}, 1},       // A = f(B)
                          {10, {}, 5},         // A leaf
                          {20, {10}, 1},       // B = g(A)
                          {20, {}, 5},         // B leaf
                          {30, {10, 20}, 1}},  // R
                         {30});
}

}  // namespace vyre_test
