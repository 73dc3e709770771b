// SPDX-License-Identifier: Apache-2.0
//! @file
//! The CPU engine: packing (what the device build must equal), congruence closure in egg's
//! rebuild style, and bottom-up tree-cost extraction, with the same results as the device
//! algorithms. `device_choice::automatic` runs it for host e-graphs below the measured crossover
//! and the tools run it without a GPU; tests compare the device against it. Single-threaded, plain
//! C++20 (compiles with g++ alone). The `*_reference` names are historical.
//!
//! E-class ids may be any u32 (sparse is fine). Every entry point validates its input and
//! returns `vyre::expected`; nothing throws.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/core/union_find.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/signature.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! Marks "no row chosen" (an e-class whose cost stays infinite).
inline constexpr std::uint32_t no_row = 0xFFFFFFFFu;

//! Owning host rows in producer form (see `raw_rows_ref`).
struct raw_rows {
  std::vector<std::uint32_t> row_eclass_ids;
  std::vector<std::uint32_t> row_language_op_ids;
  std::vector<std::uint32_t> row_children_lens;
  std::vector<std::uint32_t> children;

  std::uint32_t row_count() const noexcept {
    return static_cast<std::uint32_t>(row_eclass_ids.size());
  }
  raw_rows_ref ref() const noexcept {
    return {row_eclass_ids.data(),
            row_language_op_ids.data(),
            row_children_lens.data(),
            children.data(),
            row_count(),
            static_cast<std::uint32_t>(children.size())};
  }

  VYRE_HOST_SPECIAL_MEMBERS(raw_rows);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(raw_rows);

//! Deprecated name of `egraph::host_image`, the owning host image `pack_reference` makes.
using host_packed_image [[deprecated("use vyre::egraph::host_image")]] = egraph::host_image;

//! What congruence closure found.
struct congruence_result {
  std::vector<std::uint32_t> eclass_ids;      //!< every original e-class id, ascending
  std::vector<std::uint32_t> representative;  //!< parallel: smallest id of its merged set
  std::uint64_t merges = 0;                   //!< unions that joined two different sets
  std::uint32_t rounds = 0;  //!< passes over the touched rows (the first pass sees every row)
  //! The rebuilt rows: children canonicalised, e-class mapped to its representative, and
  //! duplicates (same representative, op and children) removed, keeping the first occurrence;
  //! kept rows stay in their original order.
  raw_rows rebuilt;
  std::vector<std::uint32_t> kept_rows;  //!< original index of each rebuilt row

  VYRE_HOST_SPECIAL_MEMBERS(congruence_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(congruence_result);

//! What extraction found.
struct extraction_result {
  std::vector<std::uint32_t> eclass_ids;  //!< every e-class id, ascending
  std::vector<double> cost;               //!< parallel: tree cost (+infinity if none)
  std::vector<std::uint32_t> choice;      //!< parallel: chosen row index, or `no_row`
  double root_cost = 0;                   //!< sum of the roots' costs (each root once)
  std::uint32_t rounds = 0;  //!< passes (CPU: worklist passes; GPU: rounds, the last unchanged)

  VYRE_HOST_SPECIAL_MEMBERS(extraction_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(extraction_result);

namespace detail {

//! Rows with explicit children offsets, host pointers: what the references iterate over.
struct host_rows {
  const std::uint32_t* row_eclass_ids;
  const std::uint32_t* row_language_op_ids;
  const std::uint32_t* row_children_offsets;
  const std::uint32_t* row_children_lens;
  const std::uint32_t* children;
  std::uint32_t row_count;
  std::uint32_t child_count;
};

//! Checks that the lengths of `rows` sum to its child count and returns the offsets.
inline expected<std::vector<std::uint32_t>> prefix_offsets(const raw_rows_ref& rows) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY(try_resize(offsets, rows.row_count, "reference: children offsets"));
  std::uint64_t running = 0;
  for (std::uint32_t r = 0; r < rows.row_count; ++r) {
    offsets[r] = static_cast<std::uint32_t>(running);
    running += rows.row_children_lens[r];
    if (running > rows.child_count)
      return fail(
          error(errc::out_of_range, "raw rows: children lengths run past the children column")
              .with("row", r)
              .with("children_end", running)
              .with("child_count", rows.child_count)
              .fix("child_count must equal the sum of children_length over all rows"));
  }
  if (running != rows.child_count)
    return fail(error(errc::invalid_argument,
                      "raw rows: children lengths do not add up to the children column")
                    .with("length_sum", running)
                    .with("child_count", rows.child_count)
                    .fix("child_count must equal the sum of children_length over all rows"));
  return offsets;
}

//! Every distinct e-class id ascending, plus each row's and each child's index into it.
struct dense_classes {
  std::vector<std::uint32_t> ids;
  std::vector<std::uint32_t> of_row;
  std::vector<std::uint32_t> of_child;  //!< indexed like the children column

  VYRE_HOST_SPECIAL_MEMBERS(dense_classes);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dense_classes);

inline expected<dense_classes> densify(const host_rows& rows) {
  dense_classes dense;
  VYRE_TRY(try_resize(dense.ids, rows.row_count, "reference: e-class ids"));
  std::copy(rows.row_eclass_ids, rows.row_eclass_ids + rows.row_count, dense.ids.begin());
  std::sort(dense.ids.begin(), dense.ids.end());
  dense.ids.erase(std::unique(dense.ids.begin(), dense.ids.end()), dense.ids.end());
  VYRE_TRY(try_resize(dense.of_row, rows.row_count, "reference: row e-class indices"));
  VYRE_TRY(try_resize(dense.of_child, rows.child_count, "reference: child e-class indices"));
  const auto index_of = [&](std::uint32_t id) {
    return static_cast<std::uint32_t>(std::lower_bound(dense.ids.begin(), dense.ids.end(), id) -
                                      dense.ids.begin());
  };
  for (std::uint32_t r = 0; r < rows.row_count; ++r) {
    dense.of_row[r] = index_of(rows.row_eclass_ids[r]);
    for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k) {
      const std::uint64_t entry = std::uint64_t{rows.row_children_offsets[r]} + k;
      if (entry >= rows.child_count)
        return fail(error(errc::out_of_range, "rows: a row's children run past the children column")
                        .with("row", r)
                        .with("children_end", std::uint64_t{rows.row_children_offsets[r]} +
                                                  rows.row_children_lens[r])
                        .with("child_count", rows.child_count)
                        .fix("fix the row's children offset and length"));
      const std::uint32_t child = rows.children[entry];
      const std::uint32_t index = index_of(child);
      if (index == dense.ids.size() || dense.ids[index] != child)
        return fail(error(errc::not_found, "rows: a child names an e-class that has no row")
                        .with("row", r)
                        .with("child_eclass", child)
                        .fix("add a row for that e-class or drop the child"));
      dense.of_child[entry] = index;
    }
  }
  return dense;
}

inline expected<host_rows> rows_of(const raw_rows_ref& rows, std::vector<std::uint32_t>& offsets) {
  VYRE_TRY_ASSIGN(offsets, prefix_offsets(rows));
  return host_rows{
      rows.row_eclass_ids, rows.row_language_op_ids, offsets.data(),  rows.row_children_lens,
      rows.children,       rows.row_count,           rows.child_count};
}

inline host_rows rows_of(const image_columns& image) noexcept {
  return host_rows{image.row_eclass_ids(),
                   image.row_language_op_ids(),
                   image.row_children_offsets(),
                   image.row_children_lens(),
                   image.children(),
                   image.row_count(),
                   image.child_count()};
}

//! Hash and equality of rows by (op, canonical children); `canon` is indexed like the
//! children column.
struct canonical_row_hash {
  const host_rows* rows;
  const std::uint32_t* canon;
  std::size_t operator()(std::uint32_t r) const noexcept {
    return egraph::row_signature(rows->row_language_op_ids[r],
                                 canon + rows->row_children_offsets[r], rows->row_children_lens[r]);
  }
};
struct canonical_row_equal {
  const host_rows* rows;
  const std::uint32_t* canon;
  bool operator()(std::uint32_t a, std::uint32_t b) const noexcept {
    return rows->row_language_op_ids[a] == rows->row_language_op_ids[b] &&
           rows->row_children_lens[a] == rows->row_children_lens[b] &&
           std::equal(canon + rows->row_children_offsets[a],
                      canon + rows->row_children_offsets[a] + rows->row_children_lens[a],
                      canon + rows->row_children_offsets[b]);
  }
};

//! Congruence over `rows` (dense already computed). See `congruence_reference`.
inline expected<congruence_result> congruence(const host_rows& rows, const dense_classes& dense) {
  const std::uint32_t row_count = rows.row_count;
  const auto class_count = static_cast<std::uint32_t>(dense.ids.size());
  host_union_find<> sets;  // the smallest dense index of a set is its root
  VYRE_TRY(sets.grow(class_count, "reference: union-find parents"));

  // Canonical children (dense indices), rewritten in place when a row is re-canonicalised.
  std::vector<std::uint32_t> canon;
  VYRE_TRY(try_resize(canon, rows.child_count, "reference: canonical children"));
  std::copy(dense.of_child.begin(), dense.of_child.end(), canon.begin());

  // Parents: for each class, the rows that name it as a child (CSR, then per-root lists that
  // are concatenated on union, as egg does).
  std::vector<std::vector<std::uint32_t>> parents;
  VYRE_TRY(try_resize(parents, class_count, "reference: parent lists"));
  for (std::uint32_t r = 0; r < row_count; ++r)
    for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k) {
      auto& list = parents[canon[rows.row_children_offsets[r] + k]];
      if (list.empty() || list.back() != r) list.push_back(r);
    }

  // The hash-cons: a set of row indices keyed by the row's (op, canonical children). A row in
  // the memo keeps its canonical children unchanged until it is erased, so stored hashes stay
  // valid; it is erased before it is re-canonicalised.
  const canonical_row_hash hash_row{&rows, canon.data()};
  const canonical_row_equal same_row{&rows, canon.data()};
  using hasher = canonical_row_hash;
  using equal = canonical_row_equal;
  std::unordered_set<std::uint32_t, hasher, equal> memo(0, hasher(hash_row), equal(same_row));
  std::vector<char> in_memo;
  VYRE_TRY(try_resize(in_memo, row_count, "reference: memo membership"));

  congruence_result result;
  std::vector<std::uint32_t> pending;
  std::vector<std::uint32_t> next;
  std::vector<char> queued;
  VYRE_TRY(try_resize(queued, row_count, "reference: worklist membership"));
  try {
    memo.reserve(row_count);
    VYRE_TRY(try_resize(pending, row_count, "reference: worklist"));
    for (std::uint32_t r = 0; r < row_count; ++r) pending[r] = r;
    while (!pending.empty()) {
      ++result.rounds;
      next.clear();
      for (const std::uint32_t r : pending) {
        queued[r] = 0;
        if (in_memo[r] != 0) {
          memo.erase(r);
          in_memo[r] = 0;
        }
        for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k) {
          std::uint32_t& child = canon[rows.row_children_offsets[r] + k];
          child = sets.find(child);
        }
        const auto [it, inserted] = memo.insert(r);
        if (inserted) {
          in_memo[r] = 1;
          continue;
        }
        const std::uint32_t loser = sets.unite(dense.of_row[r], dense.of_row[*it]);
        if (loser == sets.none) continue;
        ++result.merges;
        // Rows naming the old root must be re-canonicalised; its parents now belong to the
        // surviving root.
        auto& moved = parents[loser];
        for (const std::uint32_t p : moved)
          if (queued[p] == 0) {
            queued[p] = 1;
            next.push_back(p);
          }
        auto& kept = parents[sets.find(loser)];
        kept.insert(kept.end(), moved.begin(), moved.end());
        std::vector<std::uint32_t>().swap(moved);
      }
      pending.swap(next);
    }
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "congruence_reference: hash-cons or worklist growth")
                    .with("rows", row_count)
                    .fix("free host memory or process the input in smaller shards"));
  }

  // Class map.
  VYRE_TRY(try_resize(result.eclass_ids, class_count, "reference: class map ids"));
  VYRE_TRY(try_resize(result.representative, class_count, "reference: class map"));
  for (std::uint32_t g = 0; g < class_count; ++g) {
    result.eclass_ids[g] = dense.ids[g];
    result.representative[g] = dense.ids[sets.find(g)];
  }

  // Rebuilt rows: the memo now holds exactly one row per distinct canonical row (all rows are
  // canonical at the fixpoint); a row is kept when it is the first of its kind.
  raw_rows& out = result.rebuilt;
  std::vector<std::uint32_t> first;
  VYRE_TRY(try_resize(first, row_count, "reference: first occurrences"));
  std::unordered_set<std::uint32_t, hasher, equal> seen(0, hasher(hash_row), equal(same_row));
  try {
    seen.reserve(row_count);
    for (std::uint32_t r = 0; r < row_count; ++r) {
      if (!seen.insert(r).second) continue;
      result.kept_rows.push_back(r);
      out.row_eclass_ids.push_back(dense.ids[sets.find(dense.of_row[r])]);
      out.row_language_op_ids.push_back(rows.row_language_op_ids[r]);
      out.row_children_lens.push_back(rows.row_children_lens[r]);
      for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
        out.children.push_back(dense.ids[sets.find(canon[rows.row_children_offsets[r] + k])]);
    }
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "congruence_reference: rebuilt rows")
                    .with("rows", row_count)
                    .fix("free host memory or process the input in smaller shards"));
  }
  return result;
}

}  // namespace detail

//! Packs raw rows into the nine-column image (docs/image_format.md): the reference of the device
//! `build` (children offsets are the prefix sums of the lengths; groups list rows ascending).
//! @throws nothing; errors: lengths that do not add up to `child_count`
//!         (`errc::invalid_argument` / `errc::out_of_range`), a child naming an e-class without
//!         rows (`errc::not_found`), host allocation failure (`errc::out_of_memory`).
inline expected<egraph::host_image> pack_reference(const raw_rows_ref& rows) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const detail::host_rows view, detail::rows_of(rows, offsets));
  VYRE_TRY_ASSIGN(const detail::dense_classes dense, detail::densify(view));
  const image_layout at = image_layout::for_counts(rows.row_count, rows.child_count,
                                                   static_cast<std::uint32_t>(dense.ids.size()));
  std::vector<std::uint32_t> cursor;
  VYRE_TRY(try_resize(cursor, at.group_count, "pack_reference: group cursors"));
  return egraph::host_image::written(at, [&](std::uint32_t* words) -> expected<void> {
    for (std::uint32_t r = 0; r < rows.row_count; ++r) {
      words[at.offset(image_column::row_eclass_ids) + r] = rows.row_eclass_ids[r];
      words[at.offset(image_column::row_language_op_ids) + r] = rows.row_language_op_ids[r];
      words[at.offset(image_column::row_children_offsets) + r] = offsets[r];
      words[at.offset(image_column::row_children_lens) + r] = rows.row_children_lens[r];
      words[at.offset(image_column::row_signatures) + r] = egraph::row_signature(
          rows.row_language_op_ids[r], rows.children + offsets[r], rows.row_children_lens[r]);
    }
    std::copy(rows.children, rows.children + rows.child_count,
              words + at.offset(image_column::children));
    std::copy(dense.ids.begin(), dense.ids.end(),
              words + at.offset(image_column::group_eclass_ids));
    // Counting sort of row indices by dense class: stable, so rows ascend inside each group.
    std::uint32_t* group_offsets = words + at.offset(image_column::group_offsets);
    std::fill(group_offsets, group_offsets + at.group_count + 1, 0u);
    for (std::uint32_t r = 0; r < rows.row_count; ++r) ++group_offsets[dense.of_row[r] + 1];
    for (std::uint32_t g = 0; g < at.group_count; ++g) group_offsets[g + 1] += group_offsets[g];
    std::copy(group_offsets, group_offsets + at.group_count, cursor.begin());
    for (std::uint32_t r = 0; r < rows.row_count; ++r)
      words[at.offset(image_column::group_rows) + cursor[dense.of_row[r]]++] = r;
    return {};
  });
}

//! Congruence closure in egg's rebuild style: a hash-cons of (op, canonical children), a
//! worklist of the parents touched by each union, and a union-find with path halving. Two rows
//! with the same op and the same children after mapping every child to its representative have
//! their e-classes merged, until nothing merges. A set's representative is its smallest
//! original e-class id.
//! @throws nothing; errors as `pack_reference`.
inline expected<congruence_result> congruence_reference(const raw_rows_ref& rows) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const detail::host_rows view, detail::rows_of(rows, offsets));
  VYRE_TRY_ASSIGN(const detail::dense_classes dense, detail::densify(view));
  return detail::congruence(view, dense);
}

//! @overload The rows of a packed host image (its explicit children offsets are used).
inline expected<congruence_result> congruence_reference(const image_columns& image) {
  const detail::host_rows view = detail::rows_of(image);
  VYRE_TRY_ASSIGN(const detail::dense_classes dense, detail::densify(view));
  return detail::congruence(view, dense);
}

namespace detail {

//! The error of tree costs that still decrease after `rounds` rounds over `classes` classes (a
//! negative-cost cycle): one text for the CPU engines and the device.
inline error negative_cycle_error(std::uint64_t rounds, std::uint32_t classes) {
  return error(errc::invalid_argument,
               "extract: costs still decrease after #classes + 1 rounds (a negative-cost cycle "
               "makes the tree cost unbounded)")
      .with("rounds", rounds)
      .with("classes", classes)
      .fix("make node costs non-negative, or at least free of negative cycles");
}

//! The same, found early (`lowering_cycle_class`): `eclass` (an e-class id) is on the cycle.
inline error negative_cycle_error(std::uint64_t rounds, std::uint32_t classes,
                                  std::uint32_t eclass) {
  return error(errc::invalid_argument,
               "extract: the rows that lowered the costs form a cycle, which lowers them without "
               "end (a negative-cost cycle makes the tree cost unbounded)")
      .with("rounds", rounds)
      .with("classes", classes)
      .with("eclass", eclass)
      .fix("make node costs non-negative, or at least free of negative cycles");
}

//! Whether the worklist checks for a lowering cycle after `passes` passes: after 1, 2, 4, 8, ...,
//! so that the checks (each linear) cost O((classes + children) log passes) in all, and a cycle
//! is seen at most twice as many passes after it formed.
constexpr bool check_lowering_cycle_after(std::uint64_t passes) noexcept {
  return passes != 0 && (passes & (passes - 1)) == 0;
}

//! A class (dense index) on a cycle of the rows that last lowered the classes' costs, or
//! `no_row` when they form none. `via[g]` is the row whose total last lowered class g's cost
//! (`no_row`: none), `of_row` / `of_child` the class of each row / child entry, `parent_start` /
//! `parent_rows` the rows naming each class as a child (one entry per occurrence, CSR).
//!
//! Such a cycle is a negative-cost cycle: each cost on it is at least its row's cost plus its
//! children's (they only fell since), strictly for the class lowered last, so summing round the
//! cycle leaves its rows' costs plus their other children's below zero, and each trip round it
//! lowers the costs again (Bellman-Ford's predecessor cycle, rows having several children). That
//! is exact arithmetic; in doubles a cycle lowered by rounding alone (sums past 2^53 that cancel)
//! is refused as well. So the worklist stops at the first one instead of after #classes + 1
//! passes, which takes quadratic time. Peels, leaves first, the classes whose lowering row's
//! children are all peeled (Kahn's algorithm); every class left has a child left, so following
//! children from one reaches a class twice, on a cycle. O(classes + children), no recursion.
inline expected<std::uint32_t> lowering_cycle_class(
    const host_rows& rows, std::uint32_t class_count, const std::uint32_t* via,
    const std::uint32_t* of_row, const std::uint32_t* of_child, const std::uint32_t* parent_start,
    const std::uint32_t* parent_rows) {
  constexpr std::uint32_t visited = 0xFFFFFFFFu;  // a `waiting` mark of the final walk
  std::vector<std::uint32_t> waiting, ready;      // children not yet peeled; classes to peel
  VYRE_TRY(try_resize(waiting, class_count, "extract: cycle check"));
  VYRE_TRY(try_reserve(ready, class_count, "extract: cycle check"));
  for (std::uint32_t g = 0; g < class_count; ++g) {
    waiting[g] = via[g] == no_row ? 0 : rows.row_children_lens[via[g]];
    if (waiting[g] == 0) ready.push_back(g);
  }
  std::uint32_t peeled = 0;
  while (!ready.empty()) {
    const std::uint32_t h = ready.back();
    ready.pop_back();
    ++peeled;
    for (std::uint32_t i = parent_start[h]; i < parent_start[h + 1]; ++i) {
      const std::uint32_t p = parent_rows[i];
      const std::uint32_t g = of_row[p];
      if (via[g] == p && --waiting[g] == 0) ready.push_back(g);
    }
  }
  if (peeled == class_count) return no_row;
  std::uint32_t g = 0;
  while (waiting[g] == 0) ++g;
  for (;;) {
    waiting[g] = visited;
    const std::uint32_t* child = of_child + rows.row_children_offsets[via[g]];
    std::uint32_t next = *child;
    while (waiting[next] == 0) next = *++child;  // a class left (one is: g was not peeled)
    if (waiting[next] == visited) return next;
    g = next;
  }
}

inline expected<extraction_result> extract(const host_rows& rows, const dense_classes& dense,
                                           cuda::std::span<const double> node_cost,
                                           cuda::std::span<const std::uint32_t> roots) {
  if (node_cost.size() != rows.row_count)
    return fail(error(errc::invalid_argument, "extract: one node cost per row is required")
                    .with("costs", node_cost.size())
                    .with("rows", rows.row_count)
                    .fix("pass exactly one cost per row, in row order"));
  for (std::size_t r = 0; r < node_cost.size(); ++r)
    if (!std::isfinite(node_cost[r]))
      return fail(error(errc::invalid_argument, "extract: a node cost is not finite")
                      .with("row", r)
                      .fix("give every node a finite cost (drop nodes that must never be chosen)"));
  const auto class_count = static_cast<std::uint32_t>(dense.ids.size());
  std::vector<std::uint32_t> root_index;
  VYRE_TRY(try_resize(root_index, roots.size(), "extract: root indices"));
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const auto it = std::lower_bound(dense.ids.begin(), dense.ids.end(), roots[i]);
    if (it == dense.ids.end() || *it != roots[i])
      return fail(error(errc::not_found, "extract: a root names an e-class that has no row")
                      .with("root", i)
                      .with("eclass", roots[i])
                      .fix("pass e-class ids that appear in the rows' e-class column"));
    root_index[i] = static_cast<std::uint32_t>(it - dense.ids.begin());
  }

  constexpr double infinity = std::numeric_limits<double>::infinity();
  extraction_result result;
  VYRE_TRY(try_resize(result.cost, class_count, "extract: class costs"));
  VYRE_TRY(try_resize(result.choice, class_count, "extract: choices"));
  std::fill(result.cost.begin(), result.cost.end(), infinity);
  const auto row_cost = [&](std::uint32_t r) {
    double total = node_cost[r];  // children summed left to right, as the device does
    for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
      total += result.cost[dense.of_child[rows.row_children_offsets[r] + k]];
    return total;
  };
  // Parents: for each class, the rows that name it as a child (CSR).
  std::vector<std::uint32_t> parent_start, parent_rows;
  VYRE_TRY(try_resize(parent_start, std::size_t{class_count} + 1, "extract: parent offsets"));
  VYRE_TRY(try_resize(parent_rows, rows.child_count, "extract: parent rows"));
  std::fill(parent_start.begin(), parent_start.end(), 0u);
  for (std::uint32_t r = 0; r < rows.row_count; ++r)
    for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
      ++parent_start[dense.of_child[rows.row_children_offsets[r] + k] + 1];
  for (std::uint32_t g = 0; g < class_count; ++g) parent_start[g + 1] += parent_start[g];
  {
    std::vector<std::uint32_t> cursor(parent_start.begin(), parent_start.end() - 1);
    for (std::uint32_t r = 0; r < rows.row_count; ++r)
      for (std::uint32_t k = 0; k < rows.row_children_lens[r]; ++k)
        parent_rows[cursor[dense.of_child[rows.row_children_offsets[r] + k]]++] = r;
  }
  // Passes over a worklist of rows (the first pass sees every row, in row order; later passes
  // the parents of classes whose cost dropped), updating in place. Chaotic iteration of this
  // monotone map from the top reaches the same fixpoint as round-synchronous iteration, and
  // pass k is at least as far as synchronous round k. Without a negative-cost cycle an optimal
  // tree has height <= #classes, so #classes + 1 passes always suffice.
  // A negative-cost cycle is caught early, when the rows that lowered the costs form a cycle
  // (`lowering_cycle_class`); the pass limit stays as the backstop.
  const std::uint64_t round_limit = std::uint64_t{class_count} + 1;
  std::vector<std::uint32_t> pending, next, via;
  std::vector<char> queued;
  VYRE_TRY(try_resize(pending, rows.row_count, "extract: worklist"));
  VYRE_TRY(try_reserve(next, rows.row_count, "extract: worklist"));
  VYRE_TRY(try_resize(queued, rows.row_count, "extract: worklist membership"));
  VYRE_TRY(try_resize(via, class_count, "extract: lowering rows"));
  std::fill(via.begin(), via.end(), no_row);
  for (std::uint32_t r = 0; r < rows.row_count; ++r) pending[r] = r;
  while (!pending.empty()) {
    if (result.rounds == round_limit) return fail(negative_cycle_error(result.rounds, class_count));
    if (check_lowering_cycle_after(result.rounds)) {
      VYRE_TRY_ASSIGN(
          const std::uint32_t on_cycle,
          lowering_cycle_class(rows, class_count, via.data(), dense.of_row.data(),
                               dense.of_child.data(), parent_start.data(), parent_rows.data()));
      if (on_cycle != no_row)
        return fail(negative_cycle_error(result.rounds, class_count, dense.ids[on_cycle]));
    }
    ++result.rounds;
    next.clear();
    for (const std::uint32_t r : pending) {
      queued[r] = 0;
      const double total = row_cost(r);
      const std::uint32_t g = dense.of_row[r];
      if (!(total < result.cost[g])) continue;
      result.cost[g] = total;
      via[g] = r;
      for (std::uint32_t k = parent_start[g]; k < parent_start[g + 1]; ++k) {
        const std::uint32_t p = parent_rows[k];
        if (queued[p] == 0) {
          queued[p] = 1;
          next.push_back(p);
        }
      }
    }
    pending.swap(next);
  }
  // Choices from the final costs: the cheapest row, ties to the smallest row index.
  std::fill(result.choice.begin(), result.choice.end(), no_row);
  std::vector<double> best;
  VYRE_TRY(try_resize(best, class_count, "extract: choice costs"));
  std::fill(best.begin(), best.end(), infinity);
  for (std::uint32_t r = 0; r < rows.row_count; ++r) {
    const double total = row_cost(r);
    const std::uint32_t g = dense.of_row[r];
    if (total < best[g]) {
      best[g] = total;
      result.choice[g] = r;
    }
  }
  result.eclass_ids = dense.ids;
  for (const std::uint32_t g : root_index) result.root_cost += result.cost[g];
  return result;
}

}  // namespace detail

//! Bottom-up tree-cost extraction. cost(row) = node cost + the cost of each child e-class (a
//! child listed twice counts twice); cost(class) = min over its rows; the least fixpoint from
//! infinity. Ties choose the smallest row index; classes that only reach themselves through
//! cycles stay infinite (`choice` = `no_row`). The root cost sums the roots' costs.
//! @param node_cost one finite cost per row, in row order.
//! @param roots e-class ids (each must have rows).
//! @throws nothing; errors: wrong cost count or a non-finite cost (`errc::invalid_argument`),
//!         an unknown root or child class (`errc::not_found`), a negative-cost cycle
//!         (`errc::invalid_argument`): the rows that lowered the costs forming a cycle (checked
//!         after passes 1, 2, 4, ...; the error names an e-class on it, `eclass`), or costs that
//!         keep decreasing after #classes + 1 passes.
inline expected<extraction_result> extract_reference(const raw_rows_ref& rows,
                                                     cuda::std::span<const double> node_cost,
                                                     cuda::std::span<const std::uint32_t> roots) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const detail::host_rows view, detail::rows_of(rows, offsets));
  VYRE_TRY_ASSIGN(const detail::dense_classes dense, detail::densify(view));
  return detail::extract(view, dense, node_cost, roots);
}

//! @overload The rows of a packed host image.
inline expected<extraction_result> extract_reference(const image_columns& image,
                                                     cuda::std::span<const double> node_cost,
                                                     cuda::std::span<const std::uint32_t> roots) {
  const detail::host_rows view = detail::rows_of(image);
  VYRE_TRY_ASSIGN(const detail::dense_classes dense, detail::densify(view));
  return detail::extract(view, dense, node_cost, roots);
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
