// SPDX-License-Identifier: Apache-2.0
//! @file
//! The kernels of `vyre::eqsat::gpu_engine` and the POD parameter blocks they take by value:
//! the join interpreter (`gpu_query`: a rule's `query_plan`, flattened), the apply step
//! (`gpu_actions`: its `make_node` steps), the lock-free union-find, and the rebuild's
//! canonicalize / sort-key / column gather / adjacent-union / dedupe passes. Usable on their own by
//! an engine author: every kernel reads plain u32 tables of rows `(columns..., eclass)`.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/config.hpp"

namespace vyre::eqsat::detail {

inline constexpr std::uint32_t gpu_max_width = 8;       //!< arity 7 plus the e-class column
inline constexpr std::uint32_t gpu_max_atoms = 8;       //!< constructor nodes of a left side
inline constexpr std::uint32_t gpu_max_registers = 32;  //!< query registers of a rule
inline constexpr std::uint32_t gpu_max_saved = 16;      //!< saved registers per match
inline constexpr std::uint32_t gpu_max_steps = 16;      //!< `make_node` steps of a right side

//! Rows of a table by the value of one column: `count` keys ascending at `keys[i * stride]`,
//! `rows[i]` the row holding key i (`rows == nullptr`: row i itself, a table sorted by that
//! column).
struct gpu_index {
  const std::uint32_t* keys;
  const std::uint32_t* rows;
  std::uint32_t stride;
  std::uint32_t count;
};

//! One atom of a query: its table and, per column, `op` (a `column_op`) and its value.
struct gpu_atom {
  const std::uint32_t* cells;
  gpu_index index;  //!< by `key_column` (unused for atom 0, which scans every row)
  std::uint32_t rows;
  std::uint32_t width;
  std::uint32_t key_column;
  std::uint32_t value[gpu_max_width];
  std::uint8_t op[gpu_max_width];
};

struct gpu_query {
  gpu_atom atoms[gpu_max_atoms];
  std::uint32_t saved[gpu_max_saved];
  std::uint32_t atom_count;
  std::uint32_t saved_count;
};

//! One `make_node` step: its row `row_base + match` of the table at `cells`.
struct gpu_step {
  std::uint32_t* cells;
  std::uint32_t width;
  std::uint32_t row_base;
  std::uint32_t value[gpu_max_width];
  std::uint8_t kind[gpu_max_width];  //!< an `operand_kind` per argument column
};

struct gpu_actions {
  gpu_step steps[gpu_max_steps];
  std::uint32_t step_count;
  std::uint32_t saved_count;
  std::uint32_t class_base;  //!< step s of match m makes class `class_base + m * steps + s`
  std::uint32_t result_value;
  std::uint8_t result_kind;
};

// --- union-find -----------------------------------------------------------------------------
// Invariant: parent[x] <= x. A union links the larger root under the smaller one with a CAS on
// the larger root's own slot, so the representative of every class is its smallest id whatever
// the order of the unions. Reads are volatile: other threads link roots during a kernel.

__device__ inline std::uint32_t uf_find(const std::uint32_t* parent, std::uint32_t x) {
  for (;;) {
    const std::uint32_t p = *static_cast<const volatile std::uint32_t*>(parent + x);
    if (p == x) return x;
    x = p;
  }
}

//! Merges the classes of `a` and `b`; true when they were different.
__device__ inline bool uf_unite(std::uint32_t* parent, std::uint32_t a, std::uint32_t b) {
  for (;;) {
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a == b) return false;
    if (a > b) {
      const std::uint32_t t = a;
      a = b;
      b = t;
    }
    if (atomicCAS(parent + b, b, a) == b) return true;
    // b stopped being a root meanwhile: find again.
  }
}

// --- search ---------------------------------------------------------------------------------

__device__ inline bool gpu_try_row(const gpu_atom& a, std::uint32_t row, std::uint32_t* regs) {
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
__device__ inline void gpu_index_range(const gpu_index& ix, std::uint32_t value, std::uint32_t& lo,
                                       std::uint32_t& hi) {
  std::uint32_t l = 0, h = ix.count;
  while (l < h) {
    const std::uint32_t m = l + (h - l) / 2;
    if (ix.keys[std::size_t{m} * ix.stride] < value)
      l = m + 1;
    else
      h = m;
  }
  lo = l;
  h = ix.count;
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
//! Counts them; with `Write`, also stores each match's saved registers at `out` (consecutive).
template <bool Write>
__device__ std::uint32_t gpu_match_from(const gpu_query& q, std::uint32_t first,
                                        std::uint32_t* out) {
  std::uint32_t regs[gpu_max_registers];
  std::uint32_t pos[gpu_max_atoms], end[gpu_max_atoms];
  if (!gpu_try_row(q.atoms[0], first, regs)) return 0;
  std::uint32_t found = 0;
  auto emit = [&]() {
    if constexpr (Write) {
      for (std::uint32_t s = 0; s < q.saved_count; ++s)
        out[std::size_t{found} * q.saved_count + s] = regs[q.saved[s]];
    }
    ++found;
  };
  // Positions of atom k's candidate rows, from the value its key column must hold.
  auto open = [&](std::uint32_t k) {
    const gpu_atom& a = q.atoms[k];
    const std::uint32_t key =
        a.op[a.key_column] == 2 ? a.value[a.key_column] : regs[a.value[a.key_column]];
    gpu_index_range(a.index, key, pos[k], end[k]);
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
    const gpu_atom& a = q.atoms[level];
    const std::uint32_t p = pos[level]++;
    const std::uint32_t row = a.index.rows != nullptr ? a.index.rows[p] : p;
    if (!gpu_try_row(a, row, regs)) continue;
    if (level + 1 == q.atom_count) {
      emit();
      continue;
    }
    ++level;
    open(level);
  }
  return found;
}

//! Matches per row of atom 0's table.
template <int = 0>
VYRE_KERNEL void eqsat_count_kernel(gpu_query q, std::uint32_t* counts) {
  VYRE_DETAIL_GRID_LOOP(i, q.atoms[0].rows) {
    counts[i] = gpu_match_from<false>(q, static_cast<std::uint32_t>(i), nullptr);
  }
}

//! Writes every match's saved registers at its scanned offset.
template <int = 0>
VYRE_KERNEL void eqsat_write_kernel(gpu_query q, const std::uint32_t* offsets,
                                    std::uint32_t* matches) {
  VYRE_DETAIL_GRID_LOOP(i, q.atoms[0].rows) {
    (void)gpu_match_from<true>(q, static_cast<std::uint32_t>(i),
                               matches + std::size_t{offsets[i]} * q.saved_count);
  }
}

// --- apply ----------------------------------------------------------------------------------

//! Per match: appends the right-hand side's rows with fresh classes (no lookup: the rebuild
//! merges a fresh row into an identical existing one), then unions the result with the root.
template <int = 0>
VYRE_KERNEL void eqsat_apply_kernel(gpu_actions a, const std::uint32_t* matches,
                                    std::uint32_t match_count, std::uint32_t* parent) {
  VYRE_DETAIL_GRID_LOOP(m, match_count) {
    const std::uint32_t* saved = matches + m * a.saved_count;
    const auto fresh = [&](std::uint32_t step) {
      return static_cast<std::uint32_t>(a.class_base + m * a.step_count + step);
    };
    const auto value = [&](std::uint8_t kind, std::uint32_t v) {
      return kind == 0 ? saved[v] : kind == 1 ? v : fresh(v);  // saved, literal, temp
    };
    for (std::uint32_t s = 0; s < a.step_count; ++s) {
      const gpu_step& step = a.steps[s];
      std::uint32_t* row = step.cells + (step.row_base + m) * std::size_t{step.width};
      for (std::uint32_t c = 0; c + 1 < step.width; ++c)
        row[c] = value(step.kind[c], step.value[c]);
      row[step.width - 1] = fresh(s);
    }
    (void)uf_unite(parent, saved[0], value(a.result_kind, a.result_value));
  }
}

// --- rebuild --------------------------------------------------------------------------------

template <int = 0>
VYRE_KERNEL void eqsat_iota_from_kernel(std::uint32_t* parent, std::uint32_t from,
                                        std::uint32_t to) {
  VYRE_DETAIL_GRID_LOOP(i, to - from) {
    parent[from + i] = static_cast<std::uint32_t>(from + i);
  }
}

//! parent[i] = root of i (no unions run meanwhile).
template <int = 0>
VYRE_KERNEL void eqsat_compress_kernel(std::uint32_t* parent, std::uint32_t ids) {
  VYRE_DETAIL_GRID_LOOP(i, ids) {
    parent[i] = uf_find(parent, static_cast<std::uint32_t>(i));
  }
}

//! Replaces every class id of the table (the columns of `class_mask`, the e-class column
//! included) by its root.
template <int = 0>
VYRE_KERNEL void eqsat_canonicalize_kernel(std::uint32_t* cells, std::uint32_t rows,
                                           std::uint32_t width, std::uint32_t class_mask,
                                           const std::uint32_t* parent) {
  VYRE_DETAIL_GRID_LOOP(r, rows) {
    std::uint32_t* row = cells + r * width;
    for (std::uint32_t c = 0; c < width; ++c)
      if ((class_mask >> c) & 1u) row[c] = uf_find(parent, row[c]);
  }
}

//! keys[i] = column `col` of row perm[i] (perm == nullptr: row i); rows[i] = that row when
//! `rows` is given.
template <int = 0>
VYRE_KERNEL void eqsat_column_keys_kernel(const std::uint32_t* cells, std::uint32_t rows,
                                          std::uint32_t width, std::uint32_t col,
                                          const std::uint32_t* perm, std::uint32_t* keys,
                                          std::uint32_t* row_ids) {
  VYRE_DETAIL_GRID_LOOP(i, rows) {
    const std::uint32_t r = perm != nullptr ? perm[i] : static_cast<std::uint32_t>(i);
    keys[i] = cells[std::size_t{r} * width + col];
    if (row_ids != nullptr) row_ids[i] = r;
  }
}

//! tmp[i] = column `col` of row perm[i]: one column of the rows in their sorted order.
template <int = 0>
VYRE_KERNEL void eqsat_gather_column_kernel(const std::uint32_t* cells, std::uint32_t rows,
                                            std::uint32_t width, std::uint32_t col,
                                            const std::uint32_t* perm, std::uint32_t* tmp) {
  VYRE_DETAIL_GRID_LOOP(i, rows) {
    tmp[i] = cells[std::size_t{perm[i]} * width + col];
  }
}

//! Column `col` of rows [0, *count) = tmp[0, *count) (`count` on the device; at most `rows`).
template <int = 0>
VYRE_KERNEL void eqsat_put_column_kernel(std::uint32_t* cells, std::uint32_t rows,
                                         std::uint32_t width, std::uint32_t col,
                                         const std::uint32_t* tmp, const std::uint32_t* count) {
  const std::uint32_t n = count != nullptr ? *count : rows;
  VYRE_DETAIL_GRID_LOOP(i, n) {
    cells[i * width + col] = tmp[i];
  }
}

__device__ inline bool same_arguments(const std::uint32_t* a, const std::uint32_t* b,
                                      std::uint32_t arity) {
  for (std::uint32_t c = 0; c < arity; ++c)
    if (a[c] != b[c]) return false;
  return true;
}

//! In a table sorted by its arguments: rows with equal arguments and different classes are
//! congruent; unions them and sets `*merged`.
template <int = 0>
VYRE_KERNEL void eqsat_union_adjacent_kernel(const std::uint32_t* cells, std::uint32_t rows,
                                             std::uint32_t width, std::uint32_t* parent,
                                             std::uint32_t* merged) {
  VYRE_DETAIL_GRID_LOOP(i, rows) {
    if (i == 0) continue;
    const std::uint32_t* row = cells + i * width;
    const std::uint32_t* prev = row - width;
    if (row[width - 1] != prev[width - 1] && same_arguments(row, prev, width - 1) &&
        uf_unite(parent, row[width - 1], prev[width - 1]))
      *merged = 1;
  }
}

//! keep[i] = 1 for the first row of every run of equal arguments (a sorted table).
template <int = 0>
VYRE_KERNEL void eqsat_first_of_run_kernel(const std::uint32_t* cells, std::uint32_t rows,
                                           std::uint32_t width, std::uint32_t* keep) {
  VYRE_DETAIL_GRID_LOOP(i, rows) {
    const std::uint32_t* row = cells + i * width;
    keep[i] = i == 0 || !same_arguments(row, row - width, width - 1) ? 1u : 0u;
  }
}

//! tmp[position[i] - 1] = column `col` of row i when row i starts a run (`position`: the
//! inclusive scan of the keep flags; a row starts a run when its flag is set).
template <int = 0>
VYRE_KERNEL void eqsat_compact_column_kernel(const std::uint32_t* cells, std::uint32_t rows,
                                             std::uint32_t width, std::uint32_t col,
                                             const std::uint32_t* position, std::uint32_t* tmp) {
  VYRE_DETAIL_GRID_LOOP(i, rows) {
    const bool first = i == 0 ? position[0] == 1 : position[i] != position[i - 1];
    if (first) tmp[position[i] - 1] = cells[i * width + col];
  }
}

//! roots[0] += the ids i in [0, ids) with parent[i] == i, roots[1] += those below `old_ids`.
template <int = 0>
VYRE_KERNEL void eqsat_count_roots_kernel(const std::uint32_t* parent, std::uint32_t ids,
                                          std::uint32_t old_ids, unsigned long long* roots) {
  unsigned long long all = 0, old = 0;
  VYRE_DETAIL_GRID_LOOP(i, ids) {
    const bool root = parent[i] == i;
    all += root ? 1 : 0;
    old += root && i < old_ids ? 1 : 0;
  }
  if (all != 0) atomicAdd(roots, all);
  if (old != 0) atomicAdd(roots + 1, old);
}

}  // namespace vyre::eqsat::detail
