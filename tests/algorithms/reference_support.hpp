// SPDX-License-Identifier: Apache-2.0
// Test support shared by the host and GPU tests: small e-graph builders, a naive congruence
// oracle, and a search for two rows whose signatures collide.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

using vyre::algorithms::raw_rows;

inline void add_row(raw_rows& rows, std::uint32_t eclass, std::uint32_t op,
                    std::initializer_list<std::uint32_t> children) {
  rows.row_eclass_ids.push_back(eclass);
  rows.row_language_op_ids.push_back(op);
  rows.row_children_lens.push_back(static_cast<std::uint32_t>(children.size()));
  rows.children.insert(rows.children.end(), children.begin(), children.end());
}

inline void add_row(raw_rows& rows, std::uint32_t eclass, std::uint32_t op,
                    const std::vector<std::uint32_t>& children) {
  rows.row_eclass_ids.push_back(eclass);
  rows.row_language_op_ids.push_back(op);
  rows.row_children_lens.push_back(static_cast<std::uint32_t>(children.size()));
  rows.children.insert(rows.children.end(), children.begin(), children.end());
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
    const std::uint32_t signature = vyre::algorithms::detail::row_signature(op, kids, 2);
    const auto [it, inserted] = by_signature.emplace(signature, i);
    if (inserted) continue;
    const auto [d0, d1] = spread_pair(it->second);
    return {d0, d1, c0, c1};
  }
  return {0, 0, 0, 0};
}

}  // namespace vyre_test
