// SPDX-License-Identifier: Apache-2.0
//! @file
//! A deterministic generator of synthetic e-graphs with planted congruences, for tests and
//! benchmarks. Every e-class gets one acyclic "template" row (so every class has a finite tree
//! cost); a fraction of the classes get a twin class whose row has the same op and, child by
//! child, the original or the twin of the original child. A twin is congruent to its original
//! once its children are, so merges cascade up chains of twins (leaf twins merge at once). Extra
//! rows put more nodes into existing classes with children anywhere (cycles). Rows are shuffled;
//! ids can be spread over the whole u32 range.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/split_mix.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

struct synthetic_options {
  std::uint32_t rows = 1u << 20;  //!< approximate number of rows
  std::uint64_t seed = 1;
  double twin_fraction = 0.25;        //!< template classes that get a congruent twin class
  double twin_child_fraction = 0.75;  //!< twin children that point at a twin when one exists
  double extra_fraction = 0.25;       //!< extra rows (per template row) in existing classes
  std::uint32_t max_children = 3;     //!< children per row: 0..max_children
  std::uint32_t op_count = 8;         //!< ops of inner rows (leaves get unique ops)
  //! Template children come from the previous `window` classes (uniformly from all earlier
  //! ones by default, which keeps trees shallow; a small window makes long chains).
  std::uint32_t window = 0xFFFFFFFFu;
  bool sparse_ids = false;  //!< spread e-class ids over the u32 range
  bool shuffle = true;      //!< shuffle the row order
};

//! A generated e-graph: rows, one cost per row (small integers, so ties happen) and roots.
struct synthetic_egraph {
  raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;
  std::uint64_t planted_twins = 0;

  VYRE_HOST_SPECIAL_MEMBERS(synthetic_egraph);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(synthetic_egraph);

//! Generates an e-graph as `options` describe. Deterministic for a given `options`.
//! @throws nothing; errors: `errc::invalid_argument` for zero rows / ops / window,
//!         `errc::out_of_memory` when host memory runs out.
inline expected<synthetic_egraph> make_synthetic_egraph(const synthetic_options& options) {
  if (options.rows == 0 || options.op_count == 0 || options.window == 0)
    return fail(error(errc::invalid_argument,
                      "make_synthetic_egraph: rows, op_count and window "
                      "must be positive")
                    .with("rows", options.rows)
                    .with("op_count", options.op_count)
                    .with("window", options.window)
                    .fix("pass positive values"));
  vyre::detail::split_mix rng{options.seed};
  const double per_template = 1.0 + options.twin_fraction + options.extra_fraction;
  const auto templates =
      (std::max)(std::uint32_t{1}, static_cast<std::uint32_t>(options.rows / per_template));

  struct row_draft {
    std::uint32_t eclass, op;
    std::uint32_t first, length;  // into `kids`
  };
  std::vector<row_draft> drafts;
  std::vector<std::uint32_t> kids;
  std::vector<std::uint32_t> twin_of;  // template class -> twin class or no_row
  VYRE_TRY(try_reserve(drafts, options.rows + std::size_t{templates}, "synthetic: rows"));
  VYRE_TRY(try_reserve(kids, std::size_t{options.rows} * (options.max_children + 1) / 2 + 16,
                       "synthetic: children"));
  VYRE_TRY(try_resize(twin_of, templates, "synthetic: twins"));
  std::fill(twin_of.begin(), twin_of.end(), no_row);

  synthetic_egraph out;
  std::uint32_t class_count = templates;
  try {
    for (std::uint32_t t = 0; t < templates; ++t) {
      const std::uint32_t arity = t == 0 ? 0 : rng.below(options.max_children + 1);
      // Leaves get ops of their own, so only planted (and cascading) congruences merge them.
      const std::uint32_t op = arity == 0 ? options.op_count + t : rng.below(options.op_count);
      const auto first = static_cast<std::uint32_t>(kids.size());
      for (std::uint32_t k = 0; k < arity; ++k)
        kids.push_back(t - 1 - rng.below((std::min)(t, options.window)));
      drafts.push_back({t, op, first, arity});
      if (!rng.chance(options.twin_fraction)) continue;
      const std::uint32_t twin = class_count++;
      twin_of[t] = twin;
      ++out.planted_twins;
      const auto twin_first = static_cast<std::uint32_t>(kids.size());
      for (std::uint32_t k = 0; k < arity; ++k) {
        const std::uint32_t child = kids[first + k];
        const bool use_twin = twin_of[child] != no_row && rng.chance(options.twin_child_fraction);
        kids.push_back(use_twin ? twin_of[child] : child);
      }
      drafts.push_back({twin, op, twin_first, arity});
    }
    const auto extras = static_cast<std::uint32_t>(templates * options.extra_fraction);
    for (std::uint32_t e = 0; e < extras; ++e) {
      const std::uint32_t arity = 1 + rng.below((std::max)(options.max_children, 1u));
      const auto first = static_cast<std::uint32_t>(kids.size());
      for (std::uint32_t k = 0; k < arity; ++k) kids.push_back(rng.below(class_count));
      drafts.push_back({rng.below(class_count), rng.below(options.op_count), first, arity});
    }
    if (options.shuffle)
      for (std::size_t i = drafts.size(); i > 1; --i)
        std::swap(drafts[i - 1], drafts[rng.below(static_cast<std::uint32_t>(i))]);

    // Class index -> id: the identity, or an odd multiplier (a bijection of u32) plus an offset.
    const auto id_of = [&](std::uint32_t c) {
      return options.sparse_ids ? c * 0x9E3779B1u + 0x7F4A7C15u : c;
    };
    raw_rows& rows = out.rows;
    rows.row_eclass_ids.reserve(drafts.size());
    rows.row_language_op_ids.reserve(drafts.size());
    rows.row_children_lens.reserve(drafts.size());
    rows.children.reserve(kids.size());
    out.cost.reserve(drafts.size());
    for (const row_draft& d : drafts) {
      rows.row_eclass_ids.push_back(id_of(d.eclass));
      rows.row_language_op_ids.push_back(d.op);
      rows.row_children_lens.push_back(d.length);
      for (std::uint32_t k = 0; k < d.length; ++k)
        rows.children.push_back(id_of(kids[d.first + k]));
      out.cost.push_back(static_cast<double>(1 + rng.below(8)));
    }
    out.roots.push_back(id_of(templates - 1));
    if (twin_of[templates - 1] != no_row) out.roots.push_back(id_of(twin_of[templates - 1]));
    out.roots.push_back(id_of(templates / 2));
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "make_synthetic_egraph: host memory")
                    .with("rows", options.rows)
                    .fix("generate a smaller e-graph"));
  }
  return out;
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
