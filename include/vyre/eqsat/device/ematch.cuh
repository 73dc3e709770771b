// SPDX-License-Identifier: Apache-2.0
//! @file
//! E-matching on the device: a rule's `rule_plan` (`device/plan.hpp`) flattened into a POD
//! block (`flat_query`) over per-function tables (`table_ref`), and `join_search`, the executor
//! that finds every query's matches level by level.
//!
//! Index. A later atom finds its candidate rows by the value of its `key_column` (a value the
//! earlier atoms bound, or a literal): a `column_index` is that column's values ascending with
//! the row of each, found by binary search. `build_index` makes one (a radix sort of the
//! column with the row ids, in caller-given scratch); a table sorted by its arguments (as
//! `rebuild.cuh`'s `sort_rows` leaves it) is its own index by column 0 (`sorted_index`). An
//! atom with a second known column (`key_column2`) is looked up by the pair: `build_pair_index`
//! (or `sorted_pair_index` for columns 0 and 1), so its candidates are the rows that agree on
//! both.
//!
//! Join. Level k extends the partial matches of atoms `[0, k)` by atom k: one thread per
//! partial match counts its candidate rows (an index range), a scan places them, and one
//! thread per candidate finds its partial match by binary search over the scan, checks its
//! row and writes the extended match. So a class with a million members costs a million
//! threads, not one thread a million steps: the time follows the matches, not the heaviest key
//! (a thread per row of atom 0 with nested loops collapses on skewed e-graphs). Where atom k can
//! reject a candidate (a repeated variable, a literal), a flag scan compacts the survivors.
//! Matches come out in nested-loop order: match m is `saved_count` u32 at `out + m *
//! saved_count`, the registers of `rule_plan::saved` in that order.
//!
//! Subsumed rows. An atom over a table with subsumed rows carries the table's subsumed keys
//! (sorted, as the rebuild leaves every table): a candidate whose keys are there fails, by a
//! binary search, like a row that fails a column.
//!
//! Primitives. A plan's primitive atoms (`plan_prim`) run in the thread that binds their atom's
//! row (`try_atom`), so a filter such as `(< n 10)` rejects candidates like a literal column
//! and a result binds a register the later atoms check or look up. A primitive that meets an
//! i64 the device cannot decide sets `flat_query::outside`, and the engine hands the iteration
//! to the CPU engine.
//!
//! Size classes. A query within `narrow_limits` (`flat_query`) is passed to the kernels by value
//! (about 1.3 KB of kernel parameters) and a thread keeps 32 registers and 8 row ids; a wider
//! one (`wide_flat_query`, `flatten_into`) is copied to device memory by `join_search::add`, and
//! the same kernels, instantiated for `wide_limits`, read it there and keep 192 registers and
//! 128 row ids in local memory. An index of `n` rows uses `4 n` u32 of scratch (sort double
//! buffers); it stays valid while the table is unchanged. Limits: those of the class (checked
//! by `flatten_into`); candidates per level below 2^31.
//!
//!     namespace dev = vyre::eqsat::device;
//!     auto q = dev::flatten(plan, tables, [&](std::uint32_t table, std::uint32_t column) {
//!       return dev::build_index(memory, tables[table], column, bits, scratch[table], stream);
//!     });                                                   // expected<flat_query>
//!     dev::join_search search(memory, stream);
//!     VYRE_TRY(search.add(*q));
//!     VYRE_TRY(search.run());                               // search.matches(0)
//!     VYRE_TRY(search.write(0, out));                       // matches(0) * saved_count u32
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/detail/row_hash.hpp"
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

  //! Null: one key column. Else the second key of each position (same stride): an index by a
  //! pair of columns, ascending by `(keys, keys2)`.
  const std::uint32_t* keys2 = nullptr;

#if defined(__CUDACC__)
  //! Keys in use (`*live`, or `count`).
  __device__ std::uint32_t in_use() const noexcept {
    return live != nullptr ? *live : count;
  }
#endif
};

//! One atom of a query: its table and, per column, `op` (a `column_op`) and its value, for
//! rows of at most `Width` columns.
template <std::uint32_t Width>
struct basic_flat_atom {
  const std::uint32_t* cells;
  const std::uint32_t* stamps;  //!< its rows' timestamps (null: none; `flat_query::mid` 0)
  //! By `key_column`; unused for atom 0 and for an atom without a key column, which scan
  //! every row of their table.
  column_index index;
  const std::uint32_t* live;  //!< its table's `live` (the rows in use; null: `rows`)
  std::uint32_t rows;
  std::uint32_t width;
  std::uint32_t key_column;
  std::uint32_t key_column2;  //!< `no_column`, or the index is by the pair
  std::uint32_t value[Width];
  std::uint8_t op[Width];
  //! `flat_query::prims[prim_begin, prim_end)` run once this atom's row is bound.
  std::uint8_t prim_begin;
  std::uint8_t prim_end;
  //! The table's subsumed keys, sorted (`cells` null: none): a row whose keys are there is not
  //! matched.
  table_ref excluded;

#if defined(__CUDACC__)
  //! Rows in use (`*live`, or `rows`).
  __device__ std::uint32_t in_use() const noexcept {
    return live != nullptr ? *live : rows;
  }
#endif
};

//! A primitive atom (`plan_prim`): operands as `plan_column`s (`op` a `column_op`).
struct flat_prim {
  std::uint32_t value[3];  //!< the two arguments, then the result
  std::uint8_t op[3];
  device_prim prim;
};

//! A `rule_plan` flattened against tables, in the arrays of a size class (`narrow_limits`,
//! `wide_limits`): what the join kernels take, by value (`flat_query`, about 1.3 KB of kernel
//! parameters) or from device memory (`wide_flat_query`, about 40 KB).
template <class Limits>
struct basic_flat_query {
  using limits = Limits;
  using atom_type = basic_flat_atom<Limits::width>;
  atom_type atoms[Limits::atoms];
  flat_prim prims[Limits::prims];
  std::uint32_t saved[Limits::saved];
  std::uint32_t atom_count;
  std::uint32_t saved_count;
  //! Seminaive: a match must have a row stamped at or after `mid` (the rule's last run), as
  //! the union of egglog's variants gives; 0: every match (a first or a naive run).
  std::uint32_t mid;
  //! Set (to 1) by a primitive that meets a value it cannot decide (`prim_outcome::outside`);
  //! the match is dropped and the engine hands the iteration back. Null: no primitives.
  std::uint32_t* outside;
};

using flat_atom = basic_flat_atom<narrow_limits::width>;
using flat_query = basic_flat_query<narrow_limits>;     //!< passed by value
using wide_flat_query = basic_flat_query<wide_limits>;  //!< read from device memory

//! Whether `plan` fits the arrays of `Limits`; the error names the counts and limits.
template <class Limits = narrow_limits>
expected<void> fits(const rule_plan& plan) {
  if (plan.query_fits<Limits>() && !plan.atoms.empty()) return {};
  std::size_t widest = 0;
  for (const plan_atom& a : plan.atoms) widest = (std::max)(widest, a.columns.size());
  return fail(error(errc::unsupported, "eqsat::device: rule too large for a flat query")
                  .with("atoms", plan.atoms.size())
                  .with("max_atoms", Limits::atoms)
                  .with("registers", plan.register_count)
                  .with("max_registers", Limits::registers)
                  .with("saved", plan.saved.size())
                  .with("max_saved", Limits::saved)
                  .with("width", widest)
                  .with("max_width", Limits::width)
                  .with("prims", plan.prims.size())
                  .with("max_prims", Limits::prims)
                  .fix("split the rule into smaller ones, or run it on the CPU engine"));
}

//! The atom `a` of a plan over table `t` whose subsumed keys are `excluded` (`cells` null:
//! none), its index still unset.
template <class Atom = flat_atom>
Atom flatten_atom(const plan_atom& a, const table_ref& t,
                  const table_ref& excluded = table_ref{nullptr, 0}) {
  Atom g{.cells = t.cells,
         .stamps = t.stamps,
         .index = {},
         .live = t.live,
         .rows = t.rows,
         .width = t.width,
         .key_column = a.key_column,
         .key_column2 = a.key_column2,
         .value = {},
         .op = {},
         .prim_begin = 0,
         .prim_end = 0,
         .excluded = excluded};
  for (std::size_t c = 0; c < a.columns.size(); ++c) {
    g.op[c] = static_cast<std::uint8_t>(a.columns[c].op);
    g.value[c] = a.columns[c].value;
  }
  return g;
}

//! `plan` flattened against `tables` (indexed by function). `index_of(table, column, column2)`
//! returns an `expected<column_index>` of table `table` by `column` (and by the pair with
//! `column2` unless that is `no_column`); it is called for every atom after the first that has
//! a key column (`plan.index_keys()` lists them, to build them beforehand). `outside`: the
//! device flag `flat_query::outside` (needed when the plan has primitives). `subsumed`:
//! empty, or per function its subsumed keys (`cells` null: none), rows the atoms skip.
template <class Query = flat_query, class IndexOf>
expected<void> flatten_into(Query& q, const rule_plan& plan, std::span<const table_ref> tables,
                            IndexOf&& index_of, std::uint32_t* outside = nullptr,
                            std::span<const table_ref> subsumed = {}) {
  VYRE_TRY(fits<typename Query::limits>(plan));
  if (!plan.prims.empty() && outside == nullptr)
    return fail(error(errc::invalid_argument,
                      "eqsat::device::flatten: a plan with primitives needs the outside flag")
                    .fix("pass a device u32 as `outside`"));
  q = Query{};
  q.outside = outside;
  for (std::size_t p = 0; p < plan.prims.size(); ++p) {
    const plan_prim& pp = plan.prims[p];
    const plan_column cols[3] = {pp.args[0], pp.args[1], pp.out};
    for (int c = 0; c < 3; ++c) {
      q.prims[p].op[c] = static_cast<std::uint8_t>(cols[c].op);
      q.prims[p].value[c] = cols[c].value;
    }
    q.prims[p].prim = pp.op;
  }
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
    q.atoms[k] = flatten_atom<typename Query::atom_type>(
        a, tables[a.table], a.table < subsumed.size() ? subsumed[a.table] : table_ref{nullptr, 0});
    // Prims are ascending by atom (`rule_plan::prims`).
    std::size_t p = 0;
    while (p < plan.prims.size() && plan.prims[p].atom < k) ++p;
    q.atoms[k].prim_begin = static_cast<std::uint8_t>(p);
    while (p < plan.prims.size() && plan.prims[p].atom == k) ++p;
    q.atoms[k].prim_end = static_cast<std::uint8_t>(p);
    if (k != 0 && a.key_column != no_column) {
      VYRE_TRY_ASSIGN(q.atoms[k].index, index_of(a.table, a.key_column, a.key_column2));
    }
  }
  return {};
}

//! `flatten_into` a narrow query (`fits`), returned.
template <class IndexOf>
expected<flat_query> flatten(const rule_plan& plan, std::span<const table_ref> tables,
                             IndexOf&& index_of, std::uint32_t* outside = nullptr,
                             std::span<const table_ref> subsumed = {}) {
  flat_query q{};
  VYRE_TRY(flatten_into(q, plan, tables, std::forward<IndexOf>(index_of), outside, subsumed));
  return q;
}

// --- device side ----------------------------------------------------------------------------

//! Whether `row` of atom `a`'s table agrees with the registers; binds the atom's new ones.
template <class Atom>
__device__ bool try_row(const Atom& a, std::uint32_t row, std::uint32_t* regs) {
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

//! Whether primitive `p` holds on the registers; binds its result where it is the first to.
template <class Query>
__device__ bool try_prim(const Query& q, const flat_prim& p, std::uint32_t* regs) {
  const auto operand = [&](int c) { return p.op[c] == 2 ? p.value[c] : regs[p.value[c]]; };
  std::uint32_t out = 0;
  const prim_outcome r = device_prim_eval(p.prim, operand(0), operand(1), out);
  if (r == prim_outcome::outside) {
    if (q.outside != nullptr) atomicOr(q.outside, 1u);
    return false;
  }
  if (r == prim_outcome::fail) return false;
  if (p.op[2] == 0) {  // bind
    regs[p.value[2]] = out;
    return true;
  }
  return operand(2) == out;
}

//! `try_row` of atom `j` on a row that is not subsumed, then the primitives that run after it.
template <class Query>
__device__ bool try_atom(const Query& q, std::uint32_t j, std::uint32_t row, std::uint32_t* regs) {
  const auto& a = q.atoms[j];
  if (!try_row(a, row, regs)) return false;
  if (a.excluded.cells != nullptr) {
    const std::uint32_t n = a.excluded.in_use();
    if (eqsat::detail::find_sorted_row(a.excluded.cells, n, a.width,
                                       a.cells + std::size_t{row} * a.width) != n)
      return false;
  }
  for (std::uint32_t p = a.prim_begin; p < a.prim_end; ++p)
    if (!try_prim(q, q.prims[p], regs)) return false;
  return true;
}

//! `[lo, hi)`: the positions of `index` whose key is `value` (and whose second key is `value2`
//! in an index by a pair): two binary searches.
__device__ inline void index_range(const column_index& ix, std::uint32_t value,
                                   std::uint32_t value2, std::uint32_t& lo, std::uint32_t& hi) {
  const std::uint32_t count = ix.in_use();
  // Whether position m sorts before (value, value2), or (with `upper`) at or before it.
  const auto before = [&](std::uint32_t m, bool upper) {
    const std::uint32_t k = ix.keys[std::size_t{m} * ix.stride];
    if (k != value || ix.keys2 == nullptr) return upper ? k <= value : k < value;
    const std::uint32_t k2 = ix.keys2[std::size_t{m} * ix.stride];
    return upper ? k2 <= value2 : k2 < value2;
  };
  // The first position from `l` on that does not sort before it (`upper`: nor at it).
  const auto first_after = [&](std::uint32_t l, bool upper) {
    std::uint32_t h = count;
    while (l < h) {
      const std::uint32_t m = l + (h - l) / 2;
      if (before(m, upper))
        l = m + 1;
      else
        h = m;
    }
    return l;
  };
  lo = first_after(0, false);
  hi = first_after(lo, true);
}

//! Level `k` of a query's join: the partial matches over atoms `[0, k)` (the prefixes) and, once
//! `join_extent_kernel` and a scan have run, where each prefix's candidate rows of atom `k` are.
//! Level 0 has no prefixes: its candidates are atom 0's rows.
struct join_level {
  //! `k` row ids per prefix (row-major). Null at level 1: prefix i is atom 0's row i.
  const std::uint32_t* prefixes = nullptr;
  //! Null: `count` prefixes. Else a device u32, at most `count`: the prefixes in use (a level
  //! after a filtering one keeps its upper bound on the host and its exact count here).
  const std::uint32_t* live = nullptr;
  std::uint32_t count = 0;  //!< prefixes (or their upper bound)
  std::uint32_t k = 0;
  const std::uint32_t* offsets = nullptr;  //!< exclusive scan of the candidates per prefix
  const std::uint32_t* first = nullptr;    //!< each prefix's first candidate in atom k's index
};

//! Whether every candidate of atom `k` matches once it is found: each column but the keys its
//! index searched binds (the lookup already gave those), at level 0 every row is in use, and
//! no seminaive check waits at the last atom.
template <class Query>
bool join_filter_free(const Query& q, std::uint32_t k) noexcept {
  const auto& a = q.atoms[k];
  if (q.mid != 0 && k + 1 == q.atom_count) return false;
  if ((k == 0 && a.live != nullptr) || a.prim_begin != a.prim_end || a.excluded.cells != nullptr)
    return false;
  for (std::uint32_t c = 0; c < a.width; ++c) {
    const bool key = k != 0 && (c == a.key_column || (c == a.key_column2 && a.index.keys2));
    if (a.op[c] != static_cast<std::uint8_t>(column_op::bind) && !key) return false;
  }
  return true;
}

//! `[lo, hi)`: the positions of atom `k`'s candidate rows given the registers bound so far.
template <class Atom>
__device__ void join_range(const Atom& a, const std::uint32_t* regs, std::uint32_t& lo,
                           std::uint32_t& hi) {
  if (a.key_column == no_column) {
    lo = 0;
    hi = a.in_use();
    return;
  }
  const auto known = [&](std::uint32_t c) { return a.op[c] == 2 ? a.value[c] : regs[a.value[c]]; };
  index_range(a.index, known(a.key_column), a.key_column2 != no_column ? known(a.key_column2) : 0u,
              lo, hi);
}

//! Whether the rows of a whole match hold one stamped at or after `q.mid` (seminaive; a table
//! without timestamps counts as new).
template <class Query>
__device__ bool has_new_row(const Query& q, const std::uint32_t* rows) {
  for (std::uint32_t j = 0; j < q.atom_count; ++j)
    if (q.atoms[j].stamps == nullptr || q.atoms[j].stamps[rows[j]] >= q.mid) return true;
  return false;
}

//! Candidate `t` of level `L`: binds the registers of its prefix's rows and of its own row,
//! stores the rows (`L.k + 1` of them) in `rows`; whether the candidate row matches (at the
//! last level of a seminaive query, with a new row). A candidate finds its prefix by binary
//! search over the scanned counts, so a prefix with a million candidates spreads over a million
//! threads: the time follows the matches, not the heaviest key.
template <class Query>
__device__ bool join_candidate(const Query& q, const join_level& L, std::uint32_t t,
                               std::uint32_t* regs, std::uint32_t* rows) {
  const bool last = L.k + 1 == q.atom_count;
  if (L.k == 0) {
    rows[0] = t;
    return t < q.atoms[0].in_use() && try_atom(q, 0, t, regs) &&
           (!last || q.mid == 0 || has_new_row(q, rows));
  }
  std::uint32_t lo = 0, hi = L.count;  // the last prefix whose offset is <= t
  while (lo < hi) {
    const std::uint32_t m = lo + (hi - lo) / 2;
    if (L.offsets[m] <= t)
      lo = m + 1;
    else
      hi = m;
  }
  const std::uint32_t p = lo - 1;
  for (std::uint32_t j = 0; j < L.k; ++j) {
    rows[j] = L.prefixes != nullptr ? L.prefixes[std::size_t{p} * L.k + j] : p;
    if (!try_atom(q, j, rows[j], regs)) return false;
  }
  const auto& a = q.atoms[L.k];
  const std::uint32_t at = L.first[p] + (t - L.offsets[p]);
  rows[L.k] = a.key_column != no_column && a.index.rows != nullptr ? a.index.rows[at] : at;
  return try_atom(q, L.k, rows[L.k], regs) && (!last || q.mid == 0 || has_new_row(q, rows));
}

namespace detail {

//! Per prefix of level `L.k >= 1`: its candidates in atom `k` (`counts`) and the first one's
//! position (`first`), and their sum added to `*total` (one atomic per block). Prefixes past
//! those in use (and, at level 1, atom-0 rows that fail their own columns) get none. The
//! bodies below run in a launch of one query (`join_*_kernel`) or of many, a query per
//! `blockIdx.y` (`join_*_batch_kernel`); their loops stride over `blockIdx.x` alone.
template <class Query>
__device__ void join_extent_body(const Query& q, const join_level& L, std::uint32_t* counts,
                                 std::uint32_t* first, unsigned long long* total) {
  using limits = typename Query::limits;
  const std::uint32_t used =
      L.live != nullptr ? *L.live : (L.prefixes == nullptr ? q.atoms[0].in_use() : L.count);
  unsigned long long sum = 0;
  VYRE_DETAIL_GRID_LOOP(i, L.count) {
    std::uint32_t regs[limits::registers];
    bool ok = i < used;
    for (std::uint32_t j = 0; ok && j < L.k; ++j) {
      const std::uint32_t row =
          L.prefixes != nullptr ? L.prefixes[i * L.k + j] : static_cast<std::uint32_t>(i);
      ok = try_atom(q, j, row, regs);
    }
    std::uint32_t lo = 0, hi = 0;
    if (ok) join_range(q.atoms[L.k], regs, lo, hi);
    counts[i] = hi - lo;
    first[i] = lo;
    sum += hi - lo;
  }
  using block_reduce = cub::BlockReduce<unsigned long long, block>;
  __shared__ typename block_reduce::TempStorage temp;
  sum = block_reduce(temp).Sum(sum);
  if (threadIdx.x == 0 && sum != 0) atomicAdd(total, sum);
}

//! `flags[t]`: whether candidate `t` matches (then scanned into output positions).
template <class Query>
__device__ void join_flags_body(const Query& q, const join_level& L, std::uint32_t total,
                                std::uint32_t* flags) {
  using limits = typename Query::limits;
  VYRE_DETAIL_GRID_LOOP(t, total) {
    std::uint32_t regs[limits::registers], rows[limits::atoms];
    flags[t] = join_candidate(q, L, static_cast<std::uint32_t>(t), regs, rows) ? 1u : 0u;
  }
}

//! Stores every matching candidate: at the last level its saved registers (`q.saved_count`
//! u32), else its rows (the next level's prefix, `L.k + 1` u32). `inclusive`: the inclusive scan
//! of `join_flags_body`'s flags, which places candidate t at `inclusive[t] - 1` when it
//! matches; null: every candidate matches and goes to position t.
template <bool Last, class Query>
__device__ void join_write_body(const Query& q, const join_level& L, std::uint32_t total,
                                const std::uint32_t* inclusive, std::uint32_t* out) {
  using limits = typename Query::limits;
  VYRE_DETAIL_GRID_LOOP(t, total) {
    std::size_t at = t;
    if (inclusive != nullptr) {
      const std::uint32_t before = t == 0 ? 0u : inclusive[t - 1];
      if (inclusive[t] == before) continue;
      at = before;
    }
    std::uint32_t regs[limits::registers], rows[limits::atoms];
    if (!join_candidate(q, L, static_cast<std::uint32_t>(t), regs, rows)) continue;
    if constexpr (Last) {
      for (std::uint32_t s = 0; s < q.saved_count; ++s)
        out[at * q.saved_count + s] = regs[q.saved[s]];
    } else {
      for (std::uint32_t j = 0; j <= L.k; ++j) out[at * (L.k + 1) + j] = rows[j];
    }
  }
}

template <class QueryArg>
VYRE_KERNEL void join_extent_kernel(QueryArg arg, join_level L, std::uint32_t* counts,
                                    std::uint32_t* first, unsigned long long* total) {
  join_extent_body(kernel_arg(arg), L, counts, first, total);
}

template <class QueryArg>
VYRE_KERNEL void join_flags_kernel(QueryArg arg, join_level L, std::uint32_t total,
                                   std::uint32_t* flags) {
  join_flags_body(kernel_arg(arg), L, total, flags);
}

template <bool Last, class QueryArg>
VYRE_KERNEL void join_write_kernel(QueryArg arg, join_level L, std::uint32_t total,
                                   const std::uint32_t* inclusive, std::uint32_t* out) {
  join_write_body<Last>(kernel_arg(arg), L, total, inclusive, out);
}

//! One query's part of a batched launch (`blockIdx.y` picks it): its query in device memory,
//! its level (whose `count` the extents step covers), its candidates (`n`, what the flags and
//! write steps cover), and the step's buffers (`a`, `b`: the extents' counts and first
//! positions; `a`: the flags, or the inclusive scan the write reads, null where every
//! candidate matches; `out`: the write's rows).
template <class Query>
struct join_batch_item {
  const Query* q = nullptr;
  join_level L{};
  std::uint32_t n = 0;
  std::uint32_t* a = nullptr;
  std::uint32_t* b = nullptr;
  unsigned long long* total = nullptr;
  std::uint32_t* out = nullptr;
};

template <class Query>
VYRE_KERNEL void join_extent_batch_kernel(const join_batch_item<Query>* items) {
  const join_batch_item<Query>& it = items[blockIdx.y];
  join_extent_body(*it.q, it.L, it.a, it.b, it.total);
}

template <class Query>
VYRE_KERNEL void join_flags_batch_kernel(const join_batch_item<Query>* items) {
  const join_batch_item<Query>& it = items[blockIdx.y];
  join_flags_body(*it.q, it.L, it.n, it.a);
}

template <bool Last, class Query>
VYRE_KERNEL void join_write_batch_kernel(const join_batch_item<Query>* items) {
  const join_batch_item<Query>& it = items[blockIdx.y];
  join_write_body<Last>(*it.q, it.L, it.n, it.a, it.out);
}

//! `data[0, n)` of one array replaced by its exclusive (or inclusive) sum.
struct scan_batch_item {
  std::uint32_t* data = nullptr;
  std::uint32_t n = 0;
};

//! Scans of short arrays, one block each (`blockIdx.x` picks the array), a block-wide scan of
//! 8 values a thread a step with the running sum carried: the short levels of a search scan in
//! one launch instead of a device-wide scan each.
template <int = 0>
VYRE_KERNEL void scan_batch_kernel(const scan_batch_item* items, bool inclusive) {
  constexpr std::uint32_t per_thread = 8;
  const scan_batch_item it = items[blockIdx.x];
  using block_scan = cub::BlockScan<std::uint32_t, block>;
  __shared__ typename block_scan::TempStorage temp;
  std::uint32_t running = 0;
  for (std::uint32_t base = 0; base < it.n; base += block * per_thread) {
    const std::uint32_t first = base + threadIdx.x * per_thread;
    std::uint32_t in[per_thread], sums[per_thread], step = 0;
    for (std::uint32_t j = 0; j < per_thread; ++j)
      in[j] = first + j < it.n ? it.data[first + j] : 0u;
    if (inclusive)
      block_scan(temp).InclusiveSum(in, sums, step);
    else
      block_scan(temp).ExclusiveSum(in, sums, step);
    for (std::uint32_t j = 0; j < per_thread; ++j)
      if (first + j < it.n) it.data[first + j] = running + sums[j];
    running += step;
    __syncthreads();  // `temp` is reused by the next step
  }
}

}  // namespace detail

//! The matches of several queries, found level by level so every launch's work is one thread
//! per candidate row (not per row of atom 0): atom `k`'s candidates of every prefix are
//! counted (`join_extent_kernel`), scanned, then each candidate finds its prefix by binary
//! search, checks its row and, where atom `k` can reject rows, is compacted by a flag scan.
//! Levels run for all queries at once, so one host round trip per level reads every query's
//! candidate total; one more reads the exact match totals of queries whose last atom filters.
//! A step (extents, scan, flags, write) of the queries whose level is short runs as one launch
//! for all of them (`default_batch_limit`), so a small iteration costs a few launches per level,
//! not a few per query and level.
//!
//! Matches come out in the order of the nested loops (atom 0's row, then atom 1's index
//! position, ...), as a per-row search would give them. Memory: per level and query, two u32
//! per prefix (counts, first), `k + 1` u32 per surviving candidate for the next level, one u32
//! per candidate where atom `k` filters; the last level's buffers stay until `write`.
//!
//!     device::join_search search(memory, stream);
//!     for (auto& q : queries) VYRE_TRY(search.add(q));
//!     VYRE_TRY(search.run());                    // search.matches(i): query i's match count
//!     VYRE_TRY(search.write(i, out));            // out: matches(i) * saved_count u32
//!     // or every query's at once: search.write_all(outs), one pointer (or null) per query
class join_search {
  using u32_array = device_array<std::uint32_t>;

 public:
  //! A search on `stream`, its buffers from `memory`; `telemetry` (optional) counts its host
  //! waits and read backs.
  join_search(device_resource_ref memory, cudaStream_t stream,
              telemetry_counters* telemetry = nullptr) noexcept
      : runtime_(detail::runtime_for(memory)), stream_(stream) {
    runtime_.telemetry = telemetry;
  }

  //! Adds a query (kept by value); its index is the order of the calls.
  expected<void> add(const flat_query& q) {
    VYRE_TRY(try_reserve(queries_, queries_.size() + 1, what));
    narrow_on_device_ = device_array<flat_query>{};  // made again, with this one, when used
    state s;
    s.q = q;
    queries_.push_back(std::move(s));
    return {};
  }

  //! Adds a wide query: kept, and copied to device memory, where its kernels read it.
  expected<void> add(const wide_flat_query& q) {
    VYRE_TRY(try_reserve(queries_, queries_.size() + 1, what));
    state s;
    VYRE_TRY(try_assign(s.wide, &q, 1, what));
    VYRE_TRY_ASSIGN(s.wide_on_device, allocate<wide_flat_query>(1));
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.wide_on_device.get(), s.wide.data(), sizeof(wide_flat_query),
                                  cudaMemcpyHostToDevice, stream_),
                  what);
    s.q.atom_count = q.atom_count;
    s.q.saved_count = q.saved_count;
    s.q.atoms[0].rows = q.atoms[0].rows;
    queries_.push_back(std::move(s));
    return {};
  }

  //! `run` without a budget.
  static constexpr std::uint64_t no_budget = ~std::uint64_t{0};

  //! Runs every query's levels up to its last one; afterwards `matches(i)` is exact.
  //! @param budget_bytes the most the candidates of one level (over every query) may take, at
  //!        `4 * (k + 2)` bytes each at level `k` (their flags and next prefixes).
  //! @returns false, with nothing more allocated, when a level's candidates exceed it.
  expected<bool> run(std::uint64_t budget_bytes = no_budget) {
    std::uint32_t deepest = 1;
    for (state& s : queries_) {
      deepest = (std::max)(deepest, s.q.atom_count);
      // Level 1's prefixes are atom 0's rows; a one-atom query's only level is 0.
      s.level.k = s.q.atom_count == 1 ? 0u : 1u;
      s.level.count = s.q.atoms[0].rows;
    }
    const std::size_t n = queries_.size();
    VYRE_TRY_ASSIGN(device_array<unsigned long long> totals, allocate<unsigned long long>(n));
    std::vector<unsigned long long> host;
    VYRE_TRY(try_resize(host, n, what));
    std::vector<std::size_t> at_level, deeper;
    VYRE_TRY(try_reserve(at_level, n, what));
    VYRE_TRY(try_reserve(deeper, n, what));
    for (std::uint32_t k = 1; k < deepest; ++k) {
      // Candidates of every query at level k, one read back for all.
      VYRE_CUDA_TRY(cudaMemsetAsync(totals.get(), 0, totals.size_bytes(), stream_), what);
      VYRE_TRY(extents(k, totals.get()));
      VYRE_TRY(vyre::detail::copy_to_host(runtime_, host.data(), totals.get(), n, stream_, what));
      // Saturating: a level's candidates can approach 2^64 on a quadratic join.
      const std::uint64_t per_candidate = 4u * (k + 2u);
      std::uint64_t level_bytes = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (queries_[i].level.k != k) continue;
        const std::uint64_t room = (no_budget - level_bytes) / per_candidate;
        level_bytes = host[i] > room ? no_budget : level_bytes + host[i] * per_candidate;
      }
      if (level_bytes > budget_bytes) {
        clear();
        return false;
      }
      at_level.clear();
      deeper.clear();
      for (std::size_t i = 0; i < n; ++i) {
        state& s = queries_[i];
        if (s.level.k != k) continue;
        if (host[i] > 0x7fffffffull)
          return fail(error(errc::abi_limit, "eqsat::device::join_search: candidates of one query")
                          .with("query", i)
                          .with("level", k)
                          .with("candidates", host[i])
                          .with("max", 0x7fffffffull)
                          .fix("stop earlier with --node-limit"));
        s.candidates = static_cast<std::uint32_t>(host[i]);
        at_level.push_back(i);
        if (k + 1 < s.q.atom_count) deeper.push_back(i);
      }
      VYRE_TRY(scan_counts(at_level));
      VYRE_TRY(next_levels(deeper));
    }
    // The last level of every query: flags where its atom filters, then their exact totals.
    VYRE_TRY_ASSIGN(device_array<std::uint32_t> exact, allocate<std::uint32_t>(n));
    // Read back whole: the totals of the queries whose last level does not filter stay 0.
    VYRE_CUDA_TRY(cudaMemsetAsync(exact.get(), 0, exact.size_bytes(), stream_), what);
    std::vector<std::uint32_t> exact_host;
    std::vector<std::size_t>& flagged = at_level;
    flagged.clear();
    for (std::size_t i = 0; i < n; ++i) {
      state& s = queries_[i];
      if (s.level.k == 0) s.candidates = s.q.atoms[0].rows;
      s.matches = s.candidates;
      if (s.candidates != 0 && !filter_free(s, s.level.k)) flagged.push_back(i);
    }
    VYRE_TRY(flag(flagged));
    for (const std::size_t i : flagged) {
      const state& s = queries_[i];
      VYRE_CUDA_TRY(cudaMemcpyAsync(exact.get() + i, s.inclusive.get() + s.candidates - 1,
                                    sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, stream_),
                    what);
    }
    if (!flagged.empty()) {
      VYRE_TRY(try_resize(exact_host, n, what));
      VYRE_TRY(
          vyre::detail::copy_to_host(runtime_, exact_host.data(), exact.get(), n, stream_, what));
      for (std::size_t i = 0; i < n; ++i)
        if (queries_[i].inclusive.size() != 0) queries_[i].matches = exact_host[i];
    }
    return true;
  }

  //! A level step of at most this many prefixes or candidates of a query joins a batched
  //! launch (a query per `blockIdx.y`, its query read from device memory); a longer one gets a
  //! launch of its own, a narrow query by value. The short ones are most of a small iteration's
  //! launches, the long ones most of a large iteration's time.
  static constexpr std::uint32_t default_batch_limit = 1u << 15;
  //! Sets the batched launches' limit (0: every step a launch per query; the matches are the
  //! same either way).
  void batch_limit(std::uint32_t most) noexcept { batch_limit_ = most; }

  //! Drops every query and its buffers.
  void clear() noexcept {
    queries_.clear();
    narrow_on_device_ = device_array<flat_query>{};
  }
  //! Query `i`'s matches (after `run`).
  std::uint32_t matches(std::size_t i) const noexcept { return queries_[i].matches; }

  //! Stores query `i`'s matches at `out` (`matches(i) * saved_count` u32), in nested-loop order.
  expected<void> write(std::size_t i, std::uint32_t* out) {
    state& s = queries_[i];
    if (s.candidates == 0) return {};
    launch(s, [&](const auto& arg) {
      detail::join_write_kernel<true><<<detail::grid(s.candidates), detail::block, 0, stream_>>>(
          arg, s.level, s.candidates, s.inclusive.size() != 0 ? s.inclusive.get() : nullptr, out);
    });
    return vyre::detail::launched("eqsat::device::join_search::write");
  }

  //! `write` of every query `i` with `outs[i]` not null (`outs`: one per query), the short
  //! ones in one launch.
  expected<void> write_all(std::span<std::uint32_t* const> outs) {
    if (outs.size() != queries_.size())
      return fail(error(errc::invalid_argument, "eqsat::device::join_search::write_all")
                      .with("outs", outs.size())
                      .with("queries", queries_.size())
                      .fix("pass one output (or null) per query"));
    batch b;
    for (std::size_t i = 0; i < queries_.size(); ++i) {
      const state& s = queries_[i];
      if (outs[i] == nullptr || s.candidates == 0) continue;
      if (s.candidates > batch_limit_) {
        VYRE_TRY(write(i, outs[i]));
        continue;
      }
      std::uint32_t* inclusive = s.inclusive.size() != 0 ? s.inclusive.get() : nullptr;
      VYRE_TRY(
          add_item(b, i, {nullptr, s.level, s.candidates, inclusive, nullptr, nullptr, outs[i]}));
    }
    VYRE_TRY(launch_items(b.narrow, detail::join_write_batch_kernel<true, flat_query>));
    return launch_items(b.wide, detail::join_write_batch_kernel<true, wide_flat_query>);
  }

 private:
  static constexpr const char* what = "eqsat::device::join_search";

  struct state {
    //! The query; for a wide one, only its counts and atom 0's rows (the host's reads).
    flat_query q{};
    //! A wide query (its one element, kept while the copy may be read; empty: `q` is it).
    std::vector<wide_flat_query> wide;
    device_array<wide_flat_query> wide_on_device;
    join_level level;
    u32_array prefixes;   // the level's prefixes (none at level 0 and 1)
    u32_array counts;     // candidates per prefix, then their exclusive scan
    u32_array first;      // the first candidate's index position per prefix
    u32_array inclusive;  // the level's flags, scanned (where its atom filters)
    u32_array kept;       // the previous level's: its total is this level's prefix count
    u32_array next;       // the next level's prefixes while they are written
    std::uint32_t candidates = 0;
    std::uint32_t matches = 0;
  };

  //! Calls `f` with what `s`'s kernels take: the narrow query by value, or the wide one's
  //! device copy.
  template <class F>
  static void launch(const state& s, F&& f) {
    if (!s.wide.empty())
      f(static_cast<const wide_flat_query*>(s.wide_on_device.get()));
    else
      f(s.q);
  }
  //! `join_filter_free` of `s`'s query at level `k`.
  static bool filter_free(const state& s, std::uint32_t k) noexcept {
    return s.wide.empty() ? join_filter_free(s.q, k) : join_filter_free(s.wide[0], k);
  }

  template <class T>
  expected<device_array<T>> allocate(std::size_t n) const {
    return runtime_.allocate<T>((std::max)(n, std::size_t{1}), stream_, what);
  }

  //! A batched launch's items, the narrow queries' and the wide ones' apart.
  struct batch {
    std::vector<detail::join_batch_item<flat_query>> narrow;
    std::vector<detail::join_batch_item<wide_flat_query>> wide;
    std::vector<detail::scan_batch_item> scans;
  };

  //! Adds query `i`'s item to `b` (`item`'s query pointer set here): the narrow queries' device
  //! copies are made at the first one.
  expected<void> add_item(batch& b, std::size_t i, detail::join_batch_item<flat_query> item) {
    const state& s = queries_[i];
    if (!s.wide.empty()) {
      detail::join_batch_item<wide_flat_query> wide_item{
          s.wide_on_device.get(), item.L, item.n, item.a, item.b, item.total, item.out};
      VYRE_TRY(try_reserve(b.wide, b.wide.size() + 1, what));
      b.wide.push_back(wide_item);
      return {};
    }
    if (narrow_on_device_.size() == 0) {
      std::vector<flat_query> copies;
      VYRE_TRY(try_resize(copies, queries_.size(), what));
      for (std::size_t c = 0; c < queries_.size(); ++c) copies[c] = queries_[c].q;
      VYRE_TRY_ASSIGN(narrow_on_device_, allocate<flat_query>(copies.size()));
      // Pageable: the copy is staged before the call returns.
      VYRE_CUDA_TRY(
          cudaMemcpyAsync(narrow_on_device_.get(), copies.data(),
                          copies.size() * sizeof(flat_query), cudaMemcpyHostToDevice, stream_),
          what);
    }
    item.q = narrow_on_device_.get() + i;
    VYRE_TRY(try_reserve(b.narrow, b.narrow.size() + 1, what));
    b.narrow.push_back(item);
    return {};
  }

  //! One launch of `kernel` over `items` (a query per `blockIdx.y`, in chunks the grid's y
  //! dimension holds).
  template <class Query>
  expected<void> launch_items(const std::vector<detail::join_batch_item<Query>>& items,
                              void (*kernel)(const detail::join_batch_item<Query>*)) {
    constexpr std::size_t most_y = 65535;
    for (std::size_t from = 0; from < items.size(); from += most_y) {
      const std::size_t count = (std::min)(most_y, items.size() - from);
      std::uint32_t widest = 1;
      for (std::size_t c = from; c < from + count; ++c) widest = (std::max)(widest, items[c].n);
      VYRE_TRY_ASSIGN(device_array<detail::join_batch_item<Query>> on_device,
                      allocate<detail::join_batch_item<Query>>(count));
      // Pageable: the copy is staged before the call returns; the array goes back to the
      // pool in stream order, after the launch.
      VYRE_CUDA_TRY(cudaMemcpyAsync(on_device.get(), items.data() + from,
                                    count * sizeof(detail::join_batch_item<Query>),
                                    cudaMemcpyHostToDevice, stream_),
                    what);
      kernel<<<dim3(detail::grid(widest), static_cast<unsigned>(count)), detail::block, 0,
               stream_>>>(on_device.get());
      VYRE_TRY(vyre::detail::launched(what));
    }
    return {};
  }

  //! The short arrays of `b.scans` scanned in one launch (exclusive, or `inclusive`).
  expected<void> launch_scans(const batch& b, bool inclusive) {
    if (b.scans.empty()) return {};
    VYRE_TRY_ASSIGN(device_array<detail::scan_batch_item> on_device,
                    allocate<detail::scan_batch_item>(b.scans.size()));
    VYRE_CUDA_TRY(cudaMemcpyAsync(on_device.get(), b.scans.data(),
                                  b.scans.size() * sizeof(detail::scan_batch_item),
                                  cudaMemcpyHostToDevice, stream_),
                  what);
    detail::scan_batch_kernel<>
        <<<static_cast<unsigned>(b.scans.size()), detail::block, 0, stream_>>>(on_device.get(),
                                                                               inclusive);
    return vyre::detail::launched(what);
  }

  //! Counts, first positions and their sums (added to `totals[i]`) of every query at level `k`.
  expected<void> extents(std::uint32_t k, unsigned long long* totals) {
    batch b;
    for (std::size_t i = 0; i < queries_.size(); ++i) {
      state& s = queries_[i];
      const std::uint32_t n = s.level.count;
      if (s.level.k != k || n == 0) continue;
      VYRE_TRY(detail::cub_items(n, what));
      VYRE_TRY_ASSIGN(s.counts, allocate<std::uint32_t>(n));
      VYRE_TRY_ASSIGN(s.first, allocate<std::uint32_t>(n));
      s.level.offsets = s.counts.get();
      s.level.first = s.first.get();
      if (n <= batch_limit_) {
        VYRE_TRY(add_item(b, i, {nullptr, s.level, n, s.counts.get(), s.first.get(), totals + i}));
        continue;
      }
      launch(s, [&](const auto& arg) {
        detail::join_extent_kernel<<<detail::grid(n), detail::block, 0, stream_>>>(
            arg, s.level, s.counts.get(), s.first.get(), totals + i);
      });
      VYRE_TRY(vyre::detail::launched(what));
    }
    VYRE_TRY(launch_items(b.narrow, detail::join_extent_batch_kernel<flat_query>));
    return launch_items(b.wide, detail::join_extent_batch_kernel<wide_flat_query>);
  }

  //! `data[0, n)` replaced by its exclusive (or `inclusive`) scan.
  expected<void> scan(std::uint32_t* data, std::uint32_t n, bool inclusive = false) {
    return vyre::detail::cub_call(
        runtime_,
        [&](void* temp, std::size_t& bytes) {
          const int items = static_cast<int>(n);
          return inclusive ? cub::DeviceScan::InclusiveSum(temp, bytes, data, data, items, stream_)
                           : cub::DeviceScan::ExclusiveSum(temp, bytes, data, data, items, stream_);
        },
        stream_, what);
  }

  //! The candidate counts of the queries `at` (their level's prefixes) replaced by their
  //! exclusive scans: where each prefix's candidates start.
  expected<void> scan_counts(const std::vector<std::size_t>& at) {
    batch b;
    for (const std::size_t i : at) {
      state& s = queries_[i];
      const std::uint32_t n = s.level.count;
      if (n == 0) continue;
      if (n > batch_limit_) {
        VYRE_TRY(scan(s.counts.get(), n));
        continue;
      }
      VYRE_TRY(try_reserve(b.scans, b.scans.size() + 1, what));
      b.scans.push_back({s.counts.get(), n});
    }
    return launch_scans(b, false);
  }

  //! `inclusive`: the inclusive scan of the current level's match flags, for every query `at`.
  expected<void> flag(const std::vector<std::size_t>& at) {
    batch b;
    for (const std::size_t i : at) {
      state& s = queries_[i];
      const std::uint32_t n = s.candidates;
      VYRE_TRY(detail::cub_items(n, what));
      VYRE_TRY_ASSIGN(s.inclusive, allocate<std::uint32_t>(n));
      if (n <= batch_limit_) {
        VYRE_TRY(add_item(b, i, {nullptr, s.level, n, s.inclusive.get()}));
        VYRE_TRY(try_reserve(b.scans, b.scans.size() + 1, what));
        b.scans.push_back({s.inclusive.get(), n});
        continue;
      }
      launch(s, [&](const auto& arg) {
        detail::join_flags_kernel<<<detail::grid(n), detail::block, 0, stream_>>>(
            arg, s.level, n, s.inclusive.get());
      });
      VYRE_TRY(vyre::detail::launched(what));
      VYRE_TRY(scan(s.inclusive.get(), n, true));
    }
    VYRE_TRY(launch_items(b.narrow, detail::join_flags_batch_kernel<flat_query>));
    VYRE_TRY(launch_items(b.wide, detail::join_flags_batch_kernel<wide_flat_query>));
    return launch_scans(b, true);
  }

  //! The matching candidates of every query `at`'s level become the prefixes of its next level
  //! (their exact count stays on the device when the level filters; `candidates` bounds it).
  expected<void> next_levels(const std::vector<std::size_t>& at) {
    std::vector<std::size_t> filtering;
    VYRE_TRY(try_reserve(filtering, at.size(), what));
    for (const std::size_t i : at)
      if (queries_[i].candidates != 0 && !filter_free(queries_[i], queries_[i].level.k))
        filtering.push_back(i);
    VYRE_TRY(flag(filtering));
    batch b;
    for (const std::size_t i : at) {
      state& s = queries_[i];
      const std::uint32_t n = s.candidates, k = s.level.k;
      const bool filters = n != 0 && !filter_free(s, k);
      VYRE_TRY_ASSIGN(s.next, allocate<std::uint32_t>(std::size_t{n} * (k + 1)));
      if (n == 0) continue;
      std::uint32_t* inclusive = filters ? s.inclusive.get() : nullptr;
      if (n <= batch_limit_) {
        VYRE_TRY(add_item(b, i, {nullptr, s.level, n, inclusive, nullptr, nullptr, s.next.get()}));
        continue;
      }
      launch(s, [&](const auto& arg) {
        detail::join_write_kernel<false><<<detail::grid(n), detail::block, 0, stream_>>>(
            arg, s.level, n, inclusive, s.next.get());
      });
      VYRE_TRY(vyre::detail::launched(what));
    }
    VYRE_TRY(launch_items(b.narrow, detail::join_write_batch_kernel<false, flat_query>));
    VYRE_TRY(launch_items(b.wide, detail::join_write_batch_kernel<false, wide_flat_query>));
    for (const std::size_t i : at) {
      state& s = queries_[i];
      const std::uint32_t n = s.candidates, k = s.level.k;
      const bool filters = n != 0 && !filter_free(s, k);
      // The next level's exact count is the flags' inclusive total: it must outlive this level.
      s.kept = std::move(s.inclusive);
      s.prefixes = std::move(s.next);
      s.level = join_level{};
      s.level.prefixes = s.prefixes.get();
      s.level.count = n;
      s.level.k = k + 1;
      if (filters) s.level.live = s.kept.get() + n - 1;
      s.counts = u32_array{};
      s.first = u32_array{};
    }
    return {};
  }

  vyre::detail::runtime_ref runtime_;
  cudaStream_t stream_;
  std::vector<state> queries_;
  //! Every query's narrow copy, for the batched launches (made at the first; wide ones unused).
  device_array<flat_query> narrow_on_device_;
  std::uint32_t batch_limit_ = default_batch_limit;
};

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
  VYRE_TRY(vyre::detail::launched(what));
  VYRE_TRY(detail::sort_pairs(memory, keys, rows, t.rows, bits, stream, what));
  return column_index{keys.Current(), rows.Current(), 1, t.rows};
}

//! The index of a table sorted by its arguments by the pair of columns 0 and 1: the table
//! itself. @pre `t.width > 2` (column 1 is an argument, not the value).
inline column_index sorted_pair_index(const table_ref& t) noexcept {
  column_index ix = sorted_index(t);
  ix.keys2 = t.cells + 1;
  return ix;
}

namespace detail {

//! keys[i] = (column `col` << 32) | column `col2` of row i, row_ids[i] = i; a row not in use
//! gets ~0, which sorts last and which no search looks for.
template <int = 0>
VYRE_KERNEL void pair_keys_kernel(table_ref t, std::uint32_t col, std::uint32_t col2,
                                  std::uint64_t* keys, std::uint32_t* row_ids) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, t.rows) {
    const std::uint32_t* cells = t.cells + i * t.width;
    keys[i] = i < used ? (std::uint64_t{cells[col]} << 32) | cells[col2] : ~std::uint64_t{0};
    row_ids[i] = static_cast<std::uint32_t>(i);
  }
}

}  // namespace detail

//! The index of `t` by the pair (`column`, `column2`), built in `scratch` (`6 * t.rows` u32,
//! 8-byte aligned, which the index then points into). `bits`: the value range of `column`'s
//! values (the second column's take all 32 bits). The pairs sort as one 64-bit key whose high
//! half is `column`; the index reads its halves in place (the device is little-endian).
inline expected<column_index> build_pair_index(device_resource_ref memory, const table_ref& t,
                                               std::uint32_t column, std::uint32_t column2,
                                               int bits, std::uint32_t* scratch,
                                               cudaStream_t stream) {
  const char* what = "eqsat::device::build_pair_index";
  if (column >= t.width || column2 >= t.width || column == column2)
    return fail(error(errc::invalid_argument, what)
                    .with("column", column)
                    .with("column2", column2)
                    .with("width", t.width)
                    .fix("index two different columns of the table (below its width)"));
  if (reinterpret_cast<std::uintptr_t>(scratch) % alignof(std::uint64_t) != 0)
    return fail(error(errc::invalid_argument, what).fix("pass 8-byte aligned scratch"));
  if (t.rows == 0) return column_index{};
  const std::size_t n = t.rows;
  auto* wide = reinterpret_cast<std::uint64_t*>(scratch);
  cub::DoubleBuffer<std::uint64_t> keys(wide, wide + n);
  cub::DoubleBuffer<std::uint32_t> rows(scratch + 4 * n, scratch + 5 * n);
  detail::pair_keys_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(
      t, column, column2, keys.Current(), rows.Current());
  VYRE_TRY(vyre::detail::launched(what));
  VYRE_TRY(detail::sort_pairs(memory, keys, rows, t.rows, 32 + bits, stream, what));
  const auto* halves = reinterpret_cast<const std::uint32_t*>(keys.Current());
  column_index ix;
  ix.keys = halves + 1;
  ix.keys2 = halves;
  ix.rows = rows.Current();
  ix.stride = 2;
  ix.count = t.rows;
  return ix;
}

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
