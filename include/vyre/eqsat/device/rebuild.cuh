// SPDX-License-Identifier: Apache-2.0
//! @file
//! The canonicalizing rebuild on the device, as passes an engine runs on its own tables and
//! stream: congruence closure by rounds of
//!   `compress` (union_find.cuh) -> per table: `canonicalize`, `sort_rows`, `unite_congruent`
//! until a round unites nothing (the `merged` flag, read back by the caller), then
//! `drop_duplicates` per table. Afterwards every class column holds a root, every table is
//! sorted by its arguments (so `ematch.cuh`'s `sorted_index` serves column 0), no two rows of a
//! table have equal arguments, and rows that were congruent have one class.
//!
//! Memory: the passes work in place on the table's cells; `sort_rows` takes `4 * rows` u32 of
//! scratch, `drop_duplicates` `2 * rows`; CUB scratch (small: the sorts use double buffers)
//! comes from `memory`. Nothing is read back: the caller chooses when to sync.
//! Captured graphs: with tables viewed at a capacity and their rows in use on the device
//! (`table_ref::live`) and `memory` a `scratch_block_resource` of `rebuild_cub_bytes`, every
//! pass here can be captured once and replayed for any row counts up to that capacity.
//! Limits: rows below 2^31 (CUB's item counts); `max_width` columns.
//!
//!     namespace dev = vyre::eqsat::device;
//!     for (;;) {
//!       VYRE_TRY(dev::compress(uf, stream));
//!       cudaMemsetAsync(merged, 0, 4, stream);
//!       for (dev::table_ref t : tables) {
//!         VYRE_TRY(dev::canonicalize(t, uf, stream));
//!         VYRE_TRY(dev::sort_rows(memory, t, bits, scratch, stream));
//!         VYRE_TRY(dev::unite_congruent(t, uf, merged, stream));
//!       }
//!       // read *merged back; stop when 0
//!     }
//!     for (std::size_t c = 0; c < tables.size(); ++c)  // kept[c]: rows left, on the device
//!       VYRE_TRY(dev::drop_duplicates(memory, tables[c], scratch, kept + c, stream));
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/runtime/memory.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

namespace detail {

template <int = 0>
VYRE_KERNEL void canonicalize_kernel(table_ref t, union_find_ref uf) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(r, used) {
    std::uint32_t* row = t.cells + r * t.width;
    for (std::uint32_t c = 0; c < t.width; ++c)
      if (t.holds_class(c)) row[c] = uf.find(row[c]);
  }
}

//! tmp[i] = column `col` of row perm[i]: one column of the rows in their sorted order.
template <int = 0>
VYRE_KERNEL void gather_column_kernel(table_ref t, std::uint32_t col, const std::uint32_t* perm,
                                      std::uint32_t* tmp) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    tmp[i] = t.cells[std::size_t{perm[i]} * t.width + col];
  }
}

//! Column `col` of rows [0, *count) = tmp[0, *count) (`count` on the device; nullptr: every
//! row in use).
template <int = 0>
VYRE_KERNEL void put_column_kernel(table_ref t, std::uint32_t col, const std::uint32_t* tmp,
                                   const std::uint32_t* count) {
  const std::uint32_t n = count != nullptr ? *count : t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, n) {
    t.cells[i * t.width + col] = tmp[i];
  }
}

template <int = 0>
VYRE_KERNEL void unite_congruent_kernel(table_ref t, union_find_ref uf, std::uint32_t* merged) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    if (i == 0) continue;
    const std::uint32_t* row = t.cells + i * t.width;
    const std::uint32_t* prev = row - t.width;
    const std::uint32_t last = t.width - 1;
    if (row[last] != prev[last] && eqsat::detail::same_row(row, prev, last) &&
        uf.unite(row[last], prev[last]))
      *merged = 1;
  }
}

//! keep[i] = 1 for the first row of every run of equal arguments (a sorted table); 0 for a
//! row not in use.
template <int = 0>
VYRE_KERNEL void first_of_run_kernel(table_ref t, std::uint32_t* keep) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, t.rows) {
    const std::uint32_t* row = t.cells + i * t.width;
    keep[i] =
        i < used && (i == 0 || !eqsat::detail::same_row(row, row - t.width, t.width - 1)) ? 1u : 0u;
  }
}

//! tmp[position[i] - 1] = column `col` of row i when row i starts a run (`position`: the
//! inclusive scan of the keep flags).
template <int = 0>
VYRE_KERNEL void compact_column_kernel(table_ref t, std::uint32_t col,
                                       const std::uint32_t* position, std::uint32_t* tmp) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    const bool first = i == 0 ? position[0] == 1 : position[i] != position[i - 1];
    if (first) tmp[position[i] - 1] = t.cells[i * t.width + col];
  }
}

template <int = 0>
VYRE_KERNEL void put_count_kernel(std::uint32_t* kept, table_ref t) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *kept = t.in_use();
}

//! Column `col` of `t` = `tmp` (the first `*count` rows; nullptr: all).
inline expected<void> put_column(const table_ref& t, std::uint32_t col, const std::uint32_t* tmp,
                                 const std::uint32_t* count, cudaStream_t stream,
                                 const char* what) {
  put_column_kernel<><<<grid(t.rows), block, 0, stream>>>(t, col, tmp, count);
  return algorithms::detail::launched(what);
}

}  // namespace detail

//! Replaces every class id of `t` (the columns of `class_mask`) by its root in `uf`.
inline expected<void> canonicalize(const table_ref& t, union_find_ref uf, cudaStream_t stream) {
  if (t.rows == 0) return {};
  detail::canonicalize_kernel<><<<detail::grid(t.rows), detail::block, 0, stream>>>(t, uf);
  return algorithms::detail::launched("eqsat::device::canonicalize");
}

//! Sorts the rows of `t` by their arguments (lexicographically; the class column is carried):
//! stable LSD radix sorts of a row permutation, last argument first, in `scratch` (`4 * rows`
//! u32), then the rows permuted in place one column at a time. `bits`: the value ranges.
inline expected<void> sort_rows(device_resource_ref memory, const table_ref& t,
                                const key_bits& bits, std::uint32_t* scratch, cudaStream_t stream) {
  const std::uint32_t n = t.rows, arity = t.width - 1;
  if (arity == 0 || n < 2) return {};
  const char* what = "eqsat::device::sort_rows";
  cub::DoubleBuffer<std::uint32_t> keys(scratch, scratch + n),
      perm(scratch + 2 * std::size_t{n}, scratch + 3 * std::size_t{n});
  for (std::uint32_t col = arity; col-- > 0;) {
    const bool first = col + 1 == arity;  // the first pass starts from the identity
    detail::column_keys_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(
        t, col, first ? nullptr : perm.Current(), keys.Current(), first ? perm.Current() : nullptr);
    VYRE_TRY(algorithms::detail::launched(what));
    VYRE_TRY(detail::sort_pairs(memory, keys, perm, n, bits.of(t, col), stream, what));
  }
  std::uint32_t* tmp = keys.Current();
  for (std::uint32_t col = 0; col < t.width; ++col) {
    detail::gather_column_kernel<>
        <<<detail::grid(n), detail::block, 0, stream>>>(t, col, perm.Current(), tmp);
    VYRE_TRY(algorithms::detail::launched(what));
    VYRE_TRY(detail::put_column(t, col, tmp, nullptr, stream, what));
  }
  return {};
}

//! CUB scratch bytes that `sort_rows` and `drop_duplicates` on `t` take at the most: the size
//! of a block that serves every CUB call of a rebuild enqueued on one stream
//! (`vyre::scratch_block_resource`), as a captured graph that replays them needs.
inline expected<std::size_t> rebuild_cub_bytes(const table_ref& t, const key_bits& bits) {
  const char* what = "eqsat::device::rebuild_cub_bytes";
  const std::uint32_t n = t.rows;
  if (n < 2) return std::size_t{0};
  VYRE_TRY(detail::cub_items(n, what));
  std::size_t most = 0, bytes = 0;
  cub::DoubleBuffer<std::uint32_t> none(nullptr, nullptr);
  for (std::uint32_t col = 0; col + 1 < t.width; ++col) {
    VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, none, none, static_cast<int>(n),
                                                  0, bits.of(t, col)),
                  what);
    most = (std::max)(most, bytes);
  }
  const std::uint32_t* none_in = nullptr;
  std::uint32_t* none_out = nullptr;
  VYRE_CUDA_TRY(
      cub::DeviceScan::InclusiveSum(nullptr, bytes, none_in, none_out, static_cast<int>(n)), what);
  return (std::max)(most, bytes);
}

//! In `t` sorted by its arguments: unites the classes of adjacent rows with equal arguments
//! (congruent rows) and sets `*merged = 1` (a device u32) when a union merged two classes.
inline expected<void> unite_congruent(const table_ref& t, union_find_ref uf, std::uint32_t* merged,
                                      cudaStream_t stream) {
  if (t.rows < 2) return {};
  detail::unite_congruent_kernel<>
      <<<detail::grid(t.rows), detail::block, 0, stream>>>(t, uf, merged);
  return algorithms::detail::launched("eqsat::device::unite_congruent");
}

//! In `t` sorted by its arguments, after congruence closure: keeps the first row of every run
//! of equal arguments, compacted in place a column at a time through `scratch` (`2 * rows`
//! u32); the kept row count goes to the device u32 `*kept` (the table's `rows` is the
//! caller's to update from it).
inline expected<void> drop_duplicates(device_resource_ref memory, const table_ref& t,
                                      std::uint32_t* scratch, std::uint32_t* kept,
                                      cudaStream_t stream) {
  const char* what = "eqsat::device::drop_duplicates";
  const std::uint32_t n = t.rows;
  if (n < 2) {
    detail::put_count_kernel<><<<1, 1, 0, stream>>>(kept, t);
    return algorithms::detail::launched(what);
  }
  std::uint32_t* p = scratch;
  std::uint32_t* tmp = p + n;
  detail::first_of_run_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(t, p);
  VYRE_TRY(algorithms::detail::launched(what));
  VYRE_TRY(detail::cub_items(n, what));
  VYRE_TRY(algorithms::detail::cub_call(
      detail::runtime_for(memory),
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceScan::InclusiveSum(temp, bytes, p, p, static_cast<int>(n), stream);
      },
      stream, what));
  const std::uint32_t* count = p + n - 1;
  for (std::uint32_t col = 0; col < t.width; ++col) {
    detail::compact_column_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(t, col, p, tmp);
    VYRE_TRY(algorithms::detail::launched(what));
    VYRE_TRY(detail::put_column(t, col, tmp, count, stream, what));
  }
  return algorithms::detail::copy_on_device(kept, count, 1, stream, what);
}

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
