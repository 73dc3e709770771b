// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::detail::tree_costs`: egglog's tree-cost extraction over flat constructor
//! tables (rows of u32 `(columns..., eclass)`, canonical and deduplicated, as both engines keep
//! them after a rebuild). Host code shared by the CPU engine and the GPU engine (which runs it
//! on a downloaded copy of its tables), so extraction exists once.
//!
//! Cost of a row: 1 plus the cost of each child (a datatype column: its class's cost; a
//! literal column: 1). A class costs its cheapest row. Computed by relaxing every row until no
//! class gets cheaper; the first row (in table order, constructors in program order) reaching a
//! class's final cost is the class's best row, which the term is printed from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vyre/eqsat/program.hpp"

namespace vyre::eqsat::detail {

//! One constructor's rows: `rows` rows of `width` u32 at `cells`.
struct flat_table {
  const std::uint32_t* cells = nullptr;
  std::size_t rows = 0;
  std::uint32_t width = 1;
};

struct tree_costs {
  static constexpr std::uint64_t infinite = ~std::uint64_t{0};
  static constexpr std::uint32_t none = 0xffffffffu;

  std::vector<std::uint64_t> class_cost;                      //!< by class id
  std::vector<std::pair<std::uint32_t, std::uint32_t>> best;  //!< (constructor, row) by class id

  //! Costs of every class id below `class_count` over `tables` (one per constructor of `prog`).
  void compute(const program& prog, const std::vector<flat_table>& tables,
               std::size_t class_count) {
    class_cost.assign(class_count, infinite);
    best.assign(class_count, {none, none});
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t c = 0; c < tables.size(); ++c) {
        const flat_table& t = tables[c];
        const constructor_decl& decl = prog.constructors[c];
        const std::uint32_t arity = t.width - 1;
        for (std::size_t r = 0; r < t.rows; ++r) {
          const std::uint32_t* cells = &t.cells[r * t.width];
          std::uint64_t cost = 1;
          for (std::uint32_t i = 0; i < arity && cost != infinite; ++i) {
            const std::uint64_t child =
                decl.args[i].kind == sort_kind::datatype ? class_cost[cells[i]] : 1;
            cost = child == infinite || cost + child < cost ? infinite : cost + child;
          }
          std::uint64_t& current = class_cost[cells[arity]];
          if (cost < current) {
            current = cost;
            best[cells[arity]] = {static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(r)};
            changed = true;
          }
        }
      }
    }
  }

  //! The best term of canonical class `cls` in egglog syntax ("?" for a class without a finite
  //! tree, or past depth 10000).
  std::string term(const program& prog, const std::vector<flat_table>& tables, std::uint32_t cls,
                   int depth = 0) const {
    const auto [c, r] = best[cls];
    if (c == none || depth > 10000) return "?";
    const flat_table& t = tables[c];
    const std::uint32_t* cells = &t.cells[std::size_t{r} * t.width];
    const constructor_decl& decl = prog.constructors[c];
    std::string out = "(" + decl.name;
    for (std::uint32_t i = 0; i + 1 < t.width; ++i) {
      out += ' ';
      out += decl.args[i].kind == sort_kind::datatype ? term(prog, tables, cells[i], depth + 1)
                                                      : prog.literal_text(cells[i]);
    }
    return out + ")";
  }
};

}  // namespace vyre::eqsat::detail
