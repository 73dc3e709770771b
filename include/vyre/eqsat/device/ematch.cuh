// SPDX-License-Identifier: Apache-2.0
//! @file
//! E-matching on the device: a rule's `rule_plan` (`device/plan.hpp`) flattened into a POD
//! block (`flat_query`) that a join-interpreter kernel runs over per-function tables
//! (`table_ref`), a thread per row of the first atom's table, nested loops over the later
//! atoms through column indexes (or over every row of an atom that shares no column with the
//! atoms before it).
//!
//! Index. A later atom finds its candidate rows by the value of its `key_column` (a value the
//! earlier atoms bound, or a literal): a `column_index` is that column's values ascending with
//! the row of each, found by binary search. `build_index` makes one (a radix sort of the
//! column with the row ids, in caller-given scratch); a table sorted by its arguments (as
//! `rebuild.cuh`'s `sort_rows` leaves it) is its own index by column 0 (`sorted_index`).
//!
//! Two phases, so the matches land in one exact buffer: `count_matches` writes the matches per
//! row of atom 0, the caller scans them (e.g. `cub::DeviceScan::ExclusiveSum`) and sums them,
//! `write_matches` stores every match's saved registers (`rule_plan::saved`, in that order)
//! at its row's offset: match m is `saved_count` u32 at `out + m * saved_count`.
//! `match_from<Write>` is the per-row device function, for use in an author's own kernel.
//!
//! Memory: the flat query is passed by value (about 1.2 KB of kernel parameters); a thread
//! keeps `max_registers` registers and two positions per atom. An index of `n` rows uses
//! `4 n` u32 of scratch (sort double buffers); it stays valid while the table is unchanged.
//! Limits: `max_atoms` atoms, `max_registers` registers, `max_saved` saved registers per
//! rule, `max_width` columns per table (checked by `flatten`); matches per row below 2^32.
//!
//!     namespace dev = vyre::eqsat::device;
//!     auto q = dev::flatten(plan, tables, [&](std::uint32_t table, std::uint32_t column) {
//!       return dev::build_index(memory, tables[table], column, bits, scratch[table], stream);
//!     });                                                   // expected<flat_query>
//!     VYRE_TRY(dev::count_matches(*q, counts, stream));     // counts: u32 per row of atom 0
//!     // exclusive scan of counts in place, total = last offset + last count
//!     VYRE_TRY(dev::write_matches(*q, counts, out, stream));
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/runtime/memory.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! Rows of a table by the value of one column: `count` keys ascending at `keys[i * stride]`,
//! `rows[i]` the row holding key i (`rows == nullptr`: row i itself, a table sorted by that
//! column).
struct column_index {
  const std::uint32_t* keys = nullptr;
  const std::uint32_t* rows = nullptr;
  std::uint32_t stride = 1;
  std::uint32_t count = 0;
  //! Null: `count` keys. Else a device u32, at most `count`: the keys in use (an index of a
  //! table viewed at a capacity, `table_ref::live`).
  const std::uint32_t* live = nullptr;

#if defined(__CUDACC__)
  //! Keys in use (`*live`, or `count`).
  __device__ std::uint32_t in_use() const noexcept {
    return live != nullptr ? *live : count;
  }
#endif
};

//! One atom of a query: its table and, per column, `op` (a `column_op`) and its value.
struct flat_atom {
  const std::uint32_t* cells;
  //! By `key_column`; unused for atom 0 and for an atom without a key column, which scan
  //! every row of their table.
  column_index index;
  const std::uint32_t* live;  //!< its table's `live` (the rows in use; null: `rows`)
  std::uint32_t rows;
  std::uint32_t width;
  std::uint32_t key_column;
  std::uint32_t value[max_width];
  std::uint8_t op[max_width];

#if defined(__CUDACC__)
  //! Rows in use (`*live`, or `rows`).
  __device__ std::uint32_t in_use() const noexcept {
    return live != nullptr ? *live : rows;
  }
#endif
};

//! A `rule_plan` flattened against tables: what the count and write kernels take by value.
struct flat_query {
  flat_atom atoms[max_atoms];
  std::uint32_t saved[max_saved];
  std::uint32_t atom_count;
  std::uint32_t saved_count;
};

//! Whether `plan` fits the flat query's fixed arrays; the error names the counts and limits.
inline expected<void> fits(const rule_plan& plan) {
  std::size_t widest = 0;
  for (const plan_atom& a : plan.atoms) widest = (std::max)(widest, a.columns.size());
  if (plan.atoms.size() <= max_atoms && plan.register_count <= max_registers &&
      plan.saved.size() <= max_saved && widest <= max_width && !plan.atoms.empty())
    return {};
  return fail(error(errc::unsupported, "eqsat::device: rule too large for a flat query")
                  .with("atoms", plan.atoms.size())
                  .with("max_atoms", max_atoms)
                  .with("registers", plan.register_count)
                  .with("max_registers", max_registers)
                  .with("saved", plan.saved.size())
                  .with("max_saved", max_saved)
                  .with("width", widest)
                  .with("max_width", max_width)
                  .fix("split the rule into smaller ones, or run it on the CPU engine"));
}

//! The atom `a` of a plan over table `t` (its index still unset).
inline flat_atom flatten_atom(const plan_atom& a, const table_ref& t) {
  flat_atom g{};
  g.cells = t.cells;
  g.live = t.live;
  g.rows = t.rows;
  g.width = t.width;
  g.key_column = a.key_column;
  for (std::size_t c = 0; c < a.columns.size(); ++c) {
    g.op[c] = static_cast<std::uint8_t>(a.columns[c].op);
    g.value[c] = a.columns[c].value;
  }
  return g;
}

//! `plan` flattened against `tables` (indexed by function). `index_of(table, column)`
//! returns an `expected<column_index>` of table `table` by `column`; it is called for every
//! atom after the first that has a key column (`plan.index_keys()` lists them, to build them
//! beforehand).
template <class IndexOf>
expected<flat_query> flatten(const rule_plan& plan, std::span<const table_ref> tables,
                             IndexOf&& index_of) {
  VYRE_TRY(fits(plan));
  flat_query q{};
  q.atom_count = static_cast<std::uint32_t>(plan.atoms.size());
  q.saved_count = static_cast<std::uint32_t>(plan.saved.size());
  for (std::size_t s = 0; s < plan.saved.size(); ++s) q.saved[s] = plan.saved[s];
  for (std::size_t k = 0; k < plan.atoms.size(); ++k) {
    const plan_atom& a = plan.atoms[k];
    if (a.table >= tables.size())
      return fail(error(errc::invalid_argument, "eqsat::device::flatten: no table for an atom")
                      .with("table", a.table)
                      .with("tables", tables.size())
                      .fix("pass one table_ref per function of the declarations"));
    q.atoms[k] = flatten_atom(a, tables[a.table]);
    if (k != 0 && a.key_column != no_column) {
      VYRE_TRY_ASSIGN(q.atoms[k].index, index_of(a.table, a.key_column));
    }
  }
  return q;
}

// --- device side ----------------------------------------------------------------------------

//! Whether `row` of atom `a`'s table agrees with the registers; binds the atom's new ones.
__device__ inline bool try_row(const flat_atom& a, std::uint32_t row, std::uint32_t* regs) {
  const std::uint32_t* cells = a.cells + std::size_t{row} * a.width;
  for (std::uint32_t c = 0; c < a.width; ++c) {
    const std::uint32_t v = cells[c];
    switch (a.op[c]) {
      case 0:  // bind
        regs[a.value[c]] = v;
        break;
      case 1:  // check
        if (regs[a.value[c]] != v) return false;
        break;
      default:  // literal
        if (a.value[c] != v) return false;
        break;
    }
  }
  return true;
}

//! `[lo, hi)`: the positions of `index` whose key is `value` (binary search).
__device__ inline void index_range(const column_index& ix, std::uint32_t value, std::uint32_t& lo,
                                   std::uint32_t& hi) {
  const std::uint32_t count = ix.in_use();
  std::uint32_t l = 0, h = count;
  while (l < h) {
    const std::uint32_t m = l + (h - l) / 2;
    if (ix.keys[std::size_t{m} * ix.stride] < value)
      l = m + 1;
    else
      h = m;
  }
  lo = l;
  h = count;
  while (l < h) {
    const std::uint32_t m = l + (h - l) / 2;
    if (ix.keys[std::size_t{m} * ix.stride] <= value)
      l = m + 1;
    else
      h = m;
  }
  hi = l;
}

//! The matches whose atom-0 row is `first`: the nested loops of the plan as an explicit stack.
//! Counts them; with `Write`, also stores each match's saved registers at `out` (consecutive),
//! the first `room` of them (the rest are counted, not stored).
template <bool Write>
__device__ std::uint32_t match_from(const flat_query& q, std::uint32_t first, std::uint32_t* out,
                                    std::uint64_t room = ~std::uint64_t{0}) {
  std::uint32_t regs[max_registers];
  std::uint32_t pos[max_atoms], end[max_atoms];
  if (!try_row(q.atoms[0], first, regs)) return 0;
  std::uint32_t found = 0;
  auto emit = [&]() {
    if constexpr (Write) {
      if (found < room)
        for (std::uint32_t s = 0; s < q.saved_count; ++s)
          out[std::size_t{found} * q.saved_count + s] = regs[q.saved[s]];
    }
    ++found;
  };
  // Positions of atom k's candidate rows, from the value its key column must hold (every row
  // in use when it has none).
  auto open = [&](std::uint32_t k) {
    const flat_atom& a = q.atoms[k];
    if (a.key_column == no_column) {
      pos[k] = 0;
      end[k] = a.in_use();
      return;
    }
    const std::uint32_t key =
        a.op[a.key_column] == 2 ? a.value[a.key_column] : regs[a.value[a.key_column]];
    index_range(a.index, key, pos[k], end[k]);
  };
  if (q.atom_count == 1) {
    emit();
    return found;
  }
  std::uint32_t level = 1;
  open(1);
  while (level >= 1) {
    if (pos[level] == end[level]) {
      --level;
      continue;
    }
    const flat_atom& a = q.atoms[level];
    const std::uint32_t p = pos[level]++;
    const std::uint32_t row =
        a.key_column != no_column && a.index.rows != nullptr ? a.index.rows[p] : p;
    if (!try_row(a, row, regs)) continue;
    if (level + 1 == q.atom_count) {
      emit();
      continue;
    }
    ++level;
    open(level);
  }
  return found;
}

namespace detail {

//! Rows past those in use count 0 matches (so a scan over the capacity stays exact).
template <int = 0>
VYRE_KERNEL void count_matches_kernel(flat_query q, std::uint32_t* counts) {
  const std::uint32_t used = q.atoms[0].in_use();
  VYRE_DETAIL_GRID_LOOP(i, q.atoms[0].rows) {
    counts[i] = i < used ? match_from<false>(q, static_cast<std::uint32_t>(i), nullptr) : 0u;
  }
}

template <int = 0>
VYRE_KERNEL void write_matches_kernel(flat_query q, const std::uint32_t* offsets,
                                      std::uint32_t* matches, std::uint64_t capacity) {
  const std::uint32_t used = q.atoms[0].in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    const std::uint64_t at = offsets[i];
    if (at >= capacity) continue;
    (void)match_from<true>(q, static_cast<std::uint32_t>(i), matches + at * q.saved_count,
                           capacity - at);
  }
}

}  // namespace detail

// --- host side ------------------------------------------------------------------------------

//! `counts[i]` = the matches whose atom-0 row is i, for every row of atom 0's table (0 for the
//! rows past those in use when its `live` is set).
inline expected<void> count_matches(const flat_query& q, std::uint32_t* counts,
                                    cudaStream_t stream) {
  if (q.atoms[0].rows == 0) return {};
  detail::count_matches_kernel<>
      <<<detail::grid(q.atoms[0].rows), detail::block, 0, stream>>>(q, counts);
  return algorithms::detail::launched("eqsat::device::count_matches");
}

//! Stores the saved registers of row i's matches from match `offsets[i]` on (the exclusive
//! scan of `count_matches`' counts); `out` holds `total * q.saved_count` u32. With a
//! `capacity` (in matches), the matches from it on are not stored: a caller that sized `out`
//! before the total was known checks the total against it afterwards.
inline expected<void> write_matches(const flat_query& q, const std::uint32_t* offsets,
                                    std::uint32_t* out, cudaStream_t stream,
                                    std::uint64_t capacity = ~std::uint64_t{0}) {
  if (q.atoms[0].rows == 0) return {};
  detail::write_matches_kernel<>
      <<<detail::grid(q.atoms[0].rows), detail::block, 0, stream>>>(q, offsets, out, capacity);
  return algorithms::detail::launched("eqsat::device::write_matches");
}

//! The index of a table sorted by its arguments (`rebuild.cuh`'s `sort_rows`) by column 0: the
//! table itself (its rows in use, with `live`). @pre `t.width > 1` (a nullary constructor has
//! no column 0 argument).
inline column_index sorted_index(const table_ref& t) noexcept {
  return column_index{t.cells, nullptr, t.width, t.rows, t.live};
}

//! The index of `t` by `column`, built in `scratch` (`4 * t.rows` u32, which the index then
//! points into: keep it while the index is used). `bits`: the value range of the column's
//! values (`key_bits::of`). Uses CUB scratch from `memory`. With `t.live`, the index covers
//! the capacity and its rows past those in use get the key ~0u, which no search looks for.
inline expected<column_index> build_index(device_resource_ref memory, const table_ref& t,
                                          std::uint32_t column, int bits, std::uint32_t* scratch,
                                          cudaStream_t stream) {
  const char* what = "eqsat::device::build_index";
  if (column >= t.width)
    return fail(error(errc::invalid_argument, what)
                    .with("column", column)
                    .with("width", t.width)
                    .fix("index a column of the table (below its width)"));
  if (t.rows == 0) return column_index{nullptr, nullptr, 1, 0};
  const std::size_t n = t.rows;
  cub::DoubleBuffer<std::uint32_t> keys(scratch, scratch + n),
      rows(scratch + 2 * n, scratch + 3 * n);
  detail::column_keys_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(
      t, column, nullptr, keys.Current(), rows.Current());
  VYRE_TRY(algorithms::detail::launched(what));
  VYRE_TRY(detail::sort_pairs(memory, keys, rows, t.rows, bits, stream, what));
  return column_index{keys.Current(), rows.Current(), 1, t.rows};
}

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
