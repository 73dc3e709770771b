// SPDX-License-Identifier: Apache-2.0
// Test support shared by the host and GPU tests: small e-graph builders, naive congruence and
// extraction oracles (written independently of vyre/algorithms/cpu.hpp) with checks of a
// reference result against them, and a search for two rows whose signatures collide.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

using vyre::algorithms::raw_rows;

//! The words of a host image, as a vector to compare.
inline std::vector<std::uint32_t> words_of(const vyre::egraph::host_image& image) {
  return {image.words().begin(), image.words().end()};
}

inline void add_row(raw_rows& rows, std::uint32_t eclass, std::uint32_t op,
                    const std::vector<std::uint32_t>& children) {
  rows.row_eclass_ids.push_back(eclass);
  rows.row_language_op_ids.push_back(op);
  rows.row_children_lens.push_back(static_cast<std::uint32_t>(children.size()));
  rows.children.insert(rows.children.end(), children.begin(), children.end());
}

inline void add_row(raw_rows& rows, std::uint32_t eclass, std::uint32_t op,
                    std::initializer_list<std::uint32_t> children) {
  add_row(rows, eclass, op, std::vector<std::uint32_t>(children));
}

// An extraction input: rows, one node cost per row, the root e-classes.
struct extraction_case {
  raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;
};

// Ties, repeated children, a cycle with no tree (classes 5 and 6) and a class whose cheaper row
// is cyclic (7): the extraction cases every implementation is checked on.
inline extraction_case ties_and_cycles() {
  extraction_case c;
  add_row(c.rows, 0, 0, {1, 1});
  add_row(c.rows, 0, 1, {});
  add_row(c.rows, 1, 2, {});
  add_row(c.rows, 2, 3, {});
  add_row(c.rows, 2, 4, {});
  add_row(c.rows, 5, 5, {6});
  add_row(c.rows, 6, 5, {5});
  add_row(c.rows, 7, 6, {2, 7});
  add_row(c.rows, 7, 7, {2});
  c.cost = {0, 5, 10, 5, 5, 1, 1, 2, 3};
  c.roots = {0, 1, 7, 5};
  return c;
}

// Three rows, two e-classes: class 2 holds a leaf and a row with children {1, 2}, class 1 a
// leaf (docs/image_format.md, "Worked example").
inline raw_rows design_example() {
  raw_rows rows;
  add_row(rows, 2, 0, {});
  add_row(rows, 1, 0, {});
  add_row(rows, 2, 1, {1, 2});
  return rows;
}

// Sparse ids, 0xFFFFFFFF among them (a child check searches instead of using a bitmap).
inline raw_rows wide_id_rows() {
  raw_rows rows;
  add_row(rows, 0xFFFFFFFFu, 0, {0xFFFFFFFFu, 5});
  add_row(rows, 5, 1, {});
  add_row(rows, 0xFFFFFFFFu, 1, {});
  return rows;
}

// Dense ids with gaps, across bitmap word boundaries.
inline raw_rows gap_rows() {
  raw_rows rows;
  add_row(rows, 31, 0, {});
  add_row(rows, 32, 1, {31});
  add_row(rows, 1000, 2, {32, 31, 32});
  add_row(rows, 32, 3, {1000});
  return rows;
}

// 1 -> 2 -> 1 plus a leaf of class 2: with costs {-3, 1, 0} a negative-cost cycle, with
// {-3, 4, 0} a root cost of -3; the extraction error cases.
inline raw_rows two_class_cycle() {
  raw_rows rows;
  add_row(rows, 1, 0, {2});
  add_row(rows, 2, 0, {1});
  add_row(rows, 2, 1, {});
  return rows;
}

// Naive oracle: repeat "map every row to (op, representative children); union rows with equal
// keys" until nothing changes. Returns id -> representative (smallest id of the set).
inline std::map<std::uint32_t, std::uint32_t> naive_congruence(const raw_rows& rows) {
  std::map<std::uint32_t, std::uint32_t> rep;
  for (const std::uint32_t id : rows.row_eclass_ids) rep[id] = id;
  const auto find = [&](std::uint32_t x) {
    while (rep[x] != x) x = rep[x];
    return x;
  };
  for (bool changed = true; changed;) {
    changed = false;
    std::map<std::vector<std::uint32_t>, std::uint32_t> seen;
    std::size_t at = 0;
    for (std::size_t r = 0; r < rows.row_eclass_ids.size(); ++r) {
      std::vector<std::uint32_t> key{rows.row_language_op_ids[r], rows.row_children_lens[r]};
      for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
        key.push_back(find(rows.children[at + k]));
      at += rows.row_children_lens[r];
      const auto [it, inserted] = seen.emplace(key, rows.row_eclass_ids[r]);
      if (inserted) continue;
      std::uint32_t a = find(it->second), b = find(rows.row_eclass_ids[r]);
      if (a == b) continue;
      if (b < a) std::swap(a, b);
      rep[b] = a;
      changed = true;
    }
  }
  std::map<std::uint32_t, std::uint32_t> out;
  for (const auto& [id, parent] : rep) out[id] = find(id);
  return out;
}

// What a correct congruence result must be, derived from the naive oracle's partition: the
// class map, and the rebuilt rows (each original row with its e-class and children mapped to
// their representatives; the first row of each distinct (op, children) kept, in row order).
// Besides equality, checks directly that the rebuilt rows are canonical (every e-class and
// child is a representative) and free of duplicate rows. Returns "" when all hold, else what
// differs first.
inline std::string congruence_mismatch(const raw_rows& rows,
                                       const vyre::algorithms::congruence_result& result) {
  std::ostringstream out;
  const std::map<std::uint32_t, std::uint32_t> oracle = naive_congruence(rows);
  if (result.eclass_ids.size() != oracle.size() ||
      result.representative.size() != result.eclass_ids.size()) {
    out << "class count: result " << result.eclass_ids.size() << " ("
        << result.representative.size() << " representatives), oracle " << oracle.size();
    return out.str();
  }
  std::size_t i = 0;
  for (const auto& [id, rep] : oracle) {
    if (result.eclass_ids[i] != id || result.representative[i] != rep) {
      out << "class " << i << ": result id " << result.eclass_ids[i] << " -> "
          << result.representative[i] << ", oracle id " << id << " -> " << rep;
      return out.str();
    }
    ++i;
  }
  // The expected rebuilt rows.
  raw_rows expected;
  std::vector<std::uint32_t> expected_kept;
  std::set<std::vector<std::uint32_t>> seen;
  std::size_t at = 0;
  for (std::uint32_t r = 0; r < rows.row_count(); ++r) {
    std::vector<std::uint32_t> key{rows.row_language_op_ids[r], rows.row_children_lens[r]};
    for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
      key.push_back(oracle.at(rows.children[at + k]));
    at += rows.row_children_lens[r];
    if (!seen.insert(key).second) continue;
    expected_kept.push_back(r);
    add_row(expected, oracle.at(rows.row_eclass_ids[r]), rows.row_language_op_ids[r],
            std::vector<std::uint32_t>(key.begin() + 2, key.end()));
  }
  const raw_rows& got = result.rebuilt;
  if (result.kept_rows != expected_kept || got.row_eclass_ids != expected.row_eclass_ids ||
      got.row_language_op_ids != expected.row_language_op_ids ||
      got.row_children_lens != expected.row_children_lens || got.children != expected.children) {
    out << "rebuilt rows differ from the oracle's: result " << got.row_count() << " rows ("
        << result.kept_rows.size() << " kept), oracle " << expected.row_count() << " rows";
    return out.str();
  }
  // Canonical and duplicate-free, checked on the result itself.
  const auto is_representative = [&](std::uint32_t id) {
    const auto it = oracle.find(id);
    return it != oracle.end() && it->second == id;
  };
  std::set<std::vector<std::uint32_t>> distinct;
  at = 0;
  for (std::uint32_t r = 0; r < got.row_count(); ++r) {
    if (!is_representative(got.row_eclass_ids[r])) {
      out << "rebuilt row " << r << ": e-class " << got.row_eclass_ids[r]
          << " is not a representative";
      return out.str();
    }
    std::vector<std::uint32_t> key{got.row_language_op_ids[r], got.row_children_lens[r]};
    for (std::uint32_t k = 0; k < got.row_children_lens[r]; ++k) {
      const std::uint32_t child = got.children[at + k];
      if (!is_representative(child)) {
        out << "rebuilt row " << r << ": child " << k << " (e-class " << child
            << ") is not a representative";
        return out.str();
      }
      key.push_back(child);
    }
    at += got.row_children_lens[r];
    if (!distinct.insert(key).second) {
      out << "rebuilt row " << r << " repeats the op and children of an earlier row";
      return out.str();
    }
  }
  return {};
}

// Naive extraction oracle: Bellman-Ford style rounds over every row, each round computing
// every class's cost from the previous round's costs (cost(row) = node cost + the cost of each
// child, counted as often as listed; cost(class) = min over its rows), from +infinity until a
// round changes nothing. Returns e-class id -> cost (+infinity if it has no finite tree), or
// nothing when costs still fall after #classes + 1 rounds (a negative cycle).
inline std::optional<std::map<std::uint32_t, double>> naive_extraction(
    const raw_rows& rows, const std::vector<double>& node_cost) {
  constexpr double infinity = std::numeric_limits<double>::infinity();
  std::map<std::uint32_t, double> cost;
  for (const std::uint32_t id : rows.row_eclass_ids) cost[id] = infinity;
  for (std::size_t round = 0; round <= cost.size() + 1; ++round) {
    std::map<std::uint32_t, double> next = cost;
    std::size_t at = 0;
    for (std::uint32_t r = 0; r < rows.row_count(); ++r) {
      double total = node_cost[r];
      for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
        total += cost.at(rows.children[at + k]);
      at += rows.row_children_lens[r];
      double& best = next.at(rows.row_eclass_ids[r]);
      if (total < best) best = total;
    }
    if (next == cost) return cost;
    cost.swap(next);
  }
  return std::nullopt;
}

// Whether `a` and `b` agree to a relative 1e-9 (or are both +infinity).
inline bool close_costs(double a, double b) {
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::abs(a - b) <= 1e-9 * (std::max)(1.0, std::abs(b));
}

// Checks an extraction result against the naive oracle, class by class: the class ids, each
// cost (relative 1e-9), and each choice: a row of that class whose cost from the oracle's child
// costs is the class's cost, with every child resolvable (a finite cost and a chosen row);
// classes without a finite tree have no row chosen. Also the root cost. Returns "" when all
// hold, else what differs first.
inline std::string extraction_mismatch(const raw_rows& rows, const std::vector<double>& node_cost,
                                       const std::vector<std::uint32_t>& roots,
                                       const vyre::algorithms::extraction_result& result) {
  std::ostringstream out;
  const auto oracle = naive_extraction(rows, node_cost);
  if (!oracle) return "the oracle found a negative cycle";
  if (result.eclass_ids.size() != oracle->size() || result.cost.size() != oracle->size() ||
      result.choice.size() != oracle->size()) {
    out << "class count: result " << result.eclass_ids.size() << " ids, " << result.cost.size()
        << " costs, " << result.choice.size() << " choices; oracle " << oracle->size();
    return out.str();
  }
  std::vector<std::size_t> offset(rows.row_count() + std::size_t{1}, 0);
  for (std::uint32_t r = 0; r < rows.row_count(); ++r)
    offset[r + 1] = offset[r] + rows.row_children_lens[r];
  std::map<std::uint32_t, std::uint32_t> chosen;
  for (std::size_t g = 0; g < result.eclass_ids.size(); ++g)
    chosen[result.eclass_ids[g]] = result.choice[g];
  std::size_t g = 0;
  for (const auto& [id, cost] : *oracle) {
    out << "class " << g << " (e-class " << id << "): ";
    if (result.eclass_ids[g] != id) {
      out << "result id " << result.eclass_ids[g];
      return out.str();
    }
    if (!close_costs(result.cost[g], cost)) {
      out << "cost " << result.cost[g] << ", oracle " << cost;
      return out.str();
    }
    const std::uint32_t row = result.choice[g];
    if (std::isinf(cost)) {
      if (row != vyre::algorithms::no_row) {
        out << "no finite tree, yet row " << row << " is chosen";
        return out.str();
      }
      out.str("");
      ++g;
      continue;
    }
    if (row >= rows.row_count() || rows.row_eclass_ids[row] != id) {
      out << "chosen row " << row << " is not a row of this class";
      return out.str();
    }
    double total = node_cost[row];
    for (std::size_t k = offset[row]; k < offset[row + 1]; ++k) {
      const std::uint32_t child = rows.children[k];
      const double child_cost = oracle->at(child);
      if (std::isinf(child_cost) || chosen.at(child) == vyre::algorithms::no_row) {
        out << "chosen row " << row << " has child e-class " << child << " with no tree";
        return out.str();
      }
      total += child_cost;
    }
    if (!close_costs(total, cost)) {
      out << "chosen row " << row << " costs " << total << ", the class " << cost;
      return out.str();
    }
    out.str("");
    ++g;
  }
  // With every node cost positive, a child's cost is below its parent's: following the choices
  // from the roots must reach leaves (a tree), never come back to a class on the path.
  if (std::all_of(node_cost.begin(), node_cost.end(), [](double c) { return c > 0; })) {
    std::map<std::uint32_t, int> state;  // absent: unseen, 1: on the path, 2: done
    std::vector<std::pair<std::uint32_t, std::size_t>> path;  // class, next child entry
    for (const std::uint32_t root : roots) {
      if (state[root] != 0 || chosen.at(root) == vyre::algorithms::no_row) continue;
      state[root] = 1;
      path.emplace_back(root, offset[chosen.at(root)]);
      while (!path.empty()) {
        auto& [id, next] = path.back();
        const std::uint32_t row = chosen.at(id);
        if (next == offset[row + 1]) {
          state[id] = 2;
          path.pop_back();
          continue;
        }
        const std::uint32_t child = rows.children[next++];
        if (state[child] == 1) {
          out << "the choices from root e-class " << root << " cycle through e-class " << child;
          return out.str();
        }
        if (state[child] == 2) continue;
        state[child] = 1;
        path.emplace_back(child, offset[chosen.at(child)]);
      }
    }
  }
  double root_cost = 0;
  for (const std::uint32_t root : roots) root_cost += oracle->at(root);
  if (!close_costs(result.root_cost, root_cost)) {
    out << "root cost " << result.root_cost << ", oracle " << root_cost;
    return out.str();
  }
  return {};
}

// Two child pairs whose two-child rows with `op` have equal signatures. Children are spread
// over the u32 range (small consecutive children do not collide: each mixing step is a
// bijection of its input, and the mix is nearly linear on small values).
struct collision {
  std::uint32_t a0, a1, b0, b1;
};
inline std::pair<std::uint32_t, std::uint32_t> spread_pair(std::uint32_t i) {
  return {i * 0x9E3779B1u, (i * 0x85EBCA77u) ^ 0x5BD1E995u};
}
inline collision colliding_children(std::uint32_t op) {
  std::unordered_map<std::uint32_t, std::uint32_t> by_signature;
  by_signature.reserve(std::size_t{1} << 22);
  for (std::uint32_t i = 0; i < (1u << 24); ++i) {
    const auto [c0, c1] = spread_pair(i);
    const std::uint32_t kids[] = {c0, c1};
    const std::uint32_t signature = vyre::egraph::row_signature(op, kids, 2);
    const auto [it, inserted] = by_signature.emplace(signature, i);
    if (inserted) continue;
    const auto [d0, d1] = spread_pair(it->second);
    return {d0, d1, c0, c1};
  }
  return {0, 0, 0, 0};
}

// Rows whose two op-`op` rows (classes 5000 and 6000) have equal signatures over different
// children (`hit`): one leaf row per child, each with its own op, so nothing may merge.
inline raw_rows collision_rows(const collision& hit, std::uint32_t op) {
  raw_rows rows;
  std::uint32_t leaf_op = 100;
  for (const std::uint32_t c : std::set<std::uint32_t>{hit.a0, hit.a1, hit.b0, hit.b1})
    add_row(rows, c, leaf_op++, {});
  add_row(rows, 5000u, op, {hit.a0, hit.a1});
  add_row(rows, 6000u, op, {hit.b0, hit.b1});
  return rows;
}

}  // namespace vyre_test
