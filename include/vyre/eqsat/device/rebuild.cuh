// SPDX-License-Identifier: Apache-2.0
//! @file
//! The canonicalizing rebuild on the device, as passes an engine runs on its own tables and
//! stream: congruence closure by rounds of
//!   `compress` (union_find.cuh) -> per table: `congruence_round`
//! until a round unites nothing (the `merged` flag, read back by the caller), then per table
//! `sort_rows` and `drop_duplicates`. Afterwards every class column holds a root, every table
//! is sorted by its arguments (so `ematch.cuh`'s `sorted_index` serves column 0), no two rows
//! of a table have equal arguments, and rows that were congruent have one class. Where a table
//! keeps a timestamp per row (`table_ref::stamps`), the passes move the timestamps with the rows
//! and give a row they change the timestamp `*now`. `drop_deleted`, before a rebuild, takes the
//! rows whose keys an iteration deleted out of a table.
//!
//! A round costs the rows whose arguments moved, not the table: each table keeps a
//! congruence index through the rounds (`congruence_ref`: hash slots that name its rows by
//! their arguments, open addressing with linear probing). The first round canonicalizes every
//! row and inserts it; a later round canonicalizes every row (one read of its class columns)
//! but inserts only the rows whose arguments changed. An insert that meets a row with equal
//! arguments unites the two classes. A row whose arguments moved gives up the slot it took
//! under the old ones (`moved_away`: still taken, naming no row), so a slot that names a row
//! names one whose arguments are those it was inserted with: a key has at most one slot, and
//! every later row with that key meets it on its probe path (slots are never freed during
//! the rounds). One sort per table after the loop, where sorting every round would cost a sort per
//! round (congruence moves one level of the e-graph a round).
//!
//! Small tables (at most `small_table_rows` rows) have batched forms of the same passes, a
//! block per table and many tables a launch: `congruence_round_small` runs a round's passes in
//! the block, and `sort_and_dedupe_small` sorts the row order in the block and writes the kept
//! rows over the table, with the same results as `sort_rows` and `drop_duplicates`. A rebuild
//! of many small tables (most functions of a program) is then a few launches a round.
//!
//! Memory: the passes work in place on the table's cells. Each table's congruence index takes
//! `congruence_words(rows)` u32 (its slots, kept at most three quarters full: moved rows that
//! would pass that wait for a next round that clears them and inserts every row again; and a
//! bit per row, whether it moved) plus
//! `congruence_control_words` control words of one block `congruence_start` sets for every
//! table at once; `sort_rows` takes `4 * rows` u32 of scratch, `drop_duplicates` `3 * rows`;
//! CUB scratch (small: the sorts use double buffers) comes from `memory`. Nothing is read back:
//! the caller chooses when to sync.
//! Captured graphs: with tables viewed at a capacity and their rows in use on the device
//! (`table_ref::live`) and `memory` a `scratch_block_resource` of `rebuild_cub_bytes`, every
//! pass here can be captured once and replayed for any row counts up to that capacity.
//! Limits: rows below 2^31 (CUB's item counts); `max_width` columns.
//!
//!     namespace dev = vyre::eqsat::device;
//!     VYRE_TRY(dev::congruence_start(control, tables.size(), stream));
//!     for (;;) {
//!       VYRE_TRY(dev::compress(uf, stream));
//!       cudaMemsetAsync(merged, 0, 4, stream);
//!       for (std::size_t c = 0; c < tables.size(); ++c)  // index[c]: dev::congruence_at(...)
//!         VYRE_TRY(dev::congruence_round(tables[c], uf, index[c], merged, stream));
//!       // read *merged back; stop when 0
//!     }
//!     for (std::size_t c = 0; c < tables.size(); ++c) {  // kept[c]: rows left, on the device
//!       VYRE_TRY(dev::sort_rows(memory, tables[c], bits, scratch, stream));
//!       VYRE_TRY(dev::drop_duplicates(memory, tables[c], scratch, kept + c, stream));
//!     }
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda_runtime_api.h>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/atomic>

#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/runtime/memory.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! One table's congruence index during a rebuild (device memory the caller owns; see the file
//! comment): from `congruence_at`.
struct congruence_ref {
  static constexpr std::uint32_t empty = 0xffffffffu;  //!< a slot naming no row
  //! A slot whose row's arguments moved since it took it: taken, naming no row.
  static constexpr std::uint32_t moved_away = 0xfffffffeu;

  std::uint32_t* slots = nullptr;  //!< `slot_count` words: a row, `empty` or `moved_away`
  std::uint32_t slot_count = 0;
  //! Bit r % 32 of word r / 32: row r's arguments moved this round (one bit per table row).
  std::uint32_t* moved = nullptr;
  //! `congruence_control_words`: [0] rows that moved; [1] slots taken at the most; [2] 1
  //! when this round clears the slots and inserts every row, 2 or more when the next round
  //! must (`congruence_start`, or a round whose moved rows would not fit); [3] rows the last
  //! round inserted.
  std::uint32_t* control = nullptr;

#if defined(__CUDACC__)
  //! The first slot of the probe path of the arguments `key[0, n)`.
  __device__ std::uint32_t first_slot(const std::uint32_t* key, std::uint32_t n) const noexcept {
    return static_cast<std::uint32_t>((eqsat::detail::row_hash(key, n) >> 32) * slot_count >> 32);
  }
  __device__ std::uint32_t next_slot(std::uint32_t s) const noexcept {
    return s + 1 == slot_count ? 0 : s + 1;
  }
#endif
};

inline constexpr std::size_t congruence_control_words = 4;

//! Slots of the congruence index of a table of `rows` rows: twice the rows, so a round that
//! inserts every row fills at most half of them.
inline constexpr std::size_t congruence_slots(std::size_t rows) noexcept {
  return 2 * rows + 1;
}
//! u32 of the congruence index of a table of `rows` rows (its slots, then its moved bits),
//! without its control words.
inline constexpr std::size_t congruence_words(std::size_t rows) noexcept {
  return congruence_slots(rows) + (rows + 31) / 32;
}
//! The congruence index of a table of `rows` rows in `block` (`congruence_words(rows)` u32),
//! with its control words at `control` (`congruence_control_words` u32).
inline congruence_ref congruence_at(std::uint32_t* block, std::size_t rows,
                                    std::uint32_t* control) noexcept {
  const auto slots = static_cast<std::uint32_t>(congruence_slots(rows));
  return congruence_ref{block, slots, block + slots, control};
}

namespace detail {

//! The threads a pass over one table runs on: a grid (`grid_threads`: a launch per table) or
//! one block (`block_threads`: a block per table of a batch). `first` is this thread's first
//! item, warp-aligned (its lane is `threadIdx.x % 32`); `leader` is one thread of them.
struct pass_threads {
  std::uint64_t first = 0;
  std::uint64_t stride = 1;
  bool leader = false;
};
__device__ inline pass_threads grid_threads() noexcept {
  return {blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x,
          std::uint64_t{gridDim.x} * blockDim.x, blockIdx.x == 0 && threadIdx.x == 0};
}
__device__ inline pass_threads block_threads() noexcept {
  return {threadIdx.x, blockDim.x, threadIdx.x == 0};
}

//! This round's control words of `h` (see `congruence_ref::control`), by the leader.
__device__ inline void begin_round(const congruence_ref& h, pass_threads th) noexcept {
  if (!th.leader) return;
  std::uint32_t* w = h.control;
  const bool reset = w[2] >= 2;
  w[0] = 0;
  w[1] = reset ? 0u : w[1] + w[3];
  w[2] = reset ? 1u : 0u;
  w[3] = 0;
}

//! Every slot of `h` empty, in a round that inserts every row.
__device__ inline void clear_slots(const congruence_ref& h, pass_threads th) noexcept {
  if (h.control[2] != 1) return;
  for (std::uint64_t i = th.first; i < h.slot_count; i += th.stride)
    h.slots[i] = congruence_ref::empty;
}

//! Every class column of the rows in use replaced by its root; a row whose arguments changed
//! sets its bit in `h.moved` (unless this round inserts every row), and a row that changed
//! takes the timestamp `*t.now` (where the table keeps them). A warp takes 32 aligned rows a
//! step (every lane steps alike, so the ballot names all of them) and writes their word whole,
//! and counts them with one atomic. `Width`: the most columns of `t` (`narrow_limits::width`, or
//! `max_width` for a wider table), the row's old arguments kept per thread.
template <std::uint32_t Width>
__device__ void canonicalize_rows(const table_ref& t, union_find_ref uf, const congruence_ref& h,
                                  pass_threads th) {
  const std::uint32_t used = t.in_use();
  const bool every_row = h.control[2] == 1;
  const std::uint32_t last = t.width - 1, lane = threadIdx.x % 32;
  static_assert(block % 32 == 0, "warps take aligned words of rows");
  for (std::uint64_t r = th.first; r - lane < used; r += th.stride) {
    bool moved = false, changed = false;
    if (r < used) {
      std::uint32_t* row = t.cells + r * t.width;
      std::uint32_t old[Width];
      for (std::uint32_t c = 0; c < last; ++c) old[c] = row[c];
      for (std::uint32_t c = 0; c < t.width; ++c) {
        if (!t.holds_class(c)) continue;
        const std::uint32_t root = uf.find(row[c]);
        if (root == row[c]) continue;
        row[c] = root;
        changed = true;
        moved = moved || c < last;
      }
      if (changed && t.stamps != nullptr) t.stamps[r] = *t.now;
      // The slot this row took under its old arguments (if it took one: a row that met an
      // equal one took none) no longer names it, so every slot that names a row is on the
      // probe path of that row's arguments.
      if (moved && !every_row) {
        std::uint32_t s = h.first_slot(old, last);
        for (std::uint32_t visited = 0; visited < h.slot_count; ++visited, s = h.next_slot(s)) {
          const std::uint32_t other = h.slots[s];
          if (other == congruence_ref::empty) break;
          if (other != r) continue;
          h.slots[s] = congruence_ref::moved_away;
          break;
        }
      }
    }
    if (every_row) continue;
    const std::uint32_t bits = __ballot_sync(0xffffffffu, moved);
    if (lane != 0) continue;
    h.moved[r / 32] = bits;
    if (bits != 0) atomicAdd(h.control, static_cast<std::uint32_t>(__popc(bits)));
  }
}

//! Inserts this round's rows (moved, or every row) into `h`; a row that meets one with equal
//! arguments unites their classes instead (`*merged = 1` when that merged two classes). The
//! cells are not written here, so a row read through a slot holds its current arguments.
__device__ inline void insert_rows(const table_ref& t, union_find_ref uf, const congruence_ref& h,
                                   std::uint32_t* merged, pass_threads th) {
  using atomic_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;
  // A function's values are not united (even ids: `:merge new`): its rows of one key fold
  // in `drop_duplicates`.
  if (t.merge != device_merge::unite) return;
  const bool every_row = h.control[2] == 1;
  const std::uint32_t n = every_row ? t.in_use() : h.control[0];  // rows to insert
  // At most three quarters of the slots are taken, so a probe ends at a free slot or an equal
  // row. Moved rows that would pass that are not inserted: the next round inserts every row
  // into cleared slots (a table's rows take at most half of them), and `*merged` makes sure
  // there is a next round. Every thread decides alike from words only the leader writes.
  const std::uint64_t room = h.slot_count - h.slot_count / 4;
  if (!every_row && std::uint64_t{h.control[1]} + n > room) {
    if (th.leader) {
      h.control[2] = 2;
      *merged = 1;
    }
    return;
  }
  if (th.leader) h.control[3] = n;
  if (n == 0) return;
  const std::uint32_t last = t.width - 1;
  const std::uint32_t used = t.in_use();
  for (std::uint64_t i = th.first; i < used; i += th.stride) {
    const auto r = static_cast<std::uint32_t>(i);
    if (!every_row && ((h.moved[r / 32] >> (r % 32)) & 1u) == 0) continue;
    const std::uint32_t* row = t.cells + std::size_t{r} * t.width;
    std::uint32_t s = h.first_slot(row, last);
    for (std::uint32_t visited = 0; visited < h.slot_count; ++visited, s = h.next_slot(s)) {
      std::uint32_t other = atomic_u32(h.slots[s]).load(cuda::std::memory_order_relaxed);
      if (other == congruence_ref::empty) {
        if (atomic_u32(h.slots[s])
                .compare_exchange_strong(other, r, cuda::std::memory_order_relaxed))
          break;  // claimed; `other` now holds the row that claimed it first
      }
      if (other == congruence_ref::moved_away) continue;
      const std::uint32_t* seen = t.cells + std::size_t{other} * t.width;
      if (eqsat::detail::same_row(seen, row, last)) {
        if (uf.unite(seen[last], row[last])) *merged = 1;
        break;
      }
    }
  }
}

template <int = 0>
VYRE_KERNEL void congruence_begin_kernel(congruence_ref h) {
  begin_round(h, grid_threads());
}
template <int = 0>
VYRE_KERNEL void congruence_clear_kernel(congruence_ref h) {
  clear_slots(h, grid_threads());
}
template <std::uint32_t Width>
VYRE_KERNEL void canonicalize_kernel(table_ref t, union_find_ref uf, congruence_ref h) {
  canonicalize_rows<Width>(t, uf, h, grid_threads());
}
template <int = 0>
VYRE_KERNEL void congruence_insert_kernel(table_ref t, union_find_ref uf, congruence_ref h,
                                          std::uint32_t* merged) {
  insert_rows(t, uf, h, merged, grid_threads());
}

//! Rows a thread of `sort_and_dedupe_small_kernel` holds.
inline constexpr std::uint32_t small_sort_items = 16;
//! Tables of one launch of the batched passes: their views travel in the kernel parameters
//! (`small_batch_args`, under 4 KB).
inline constexpr std::uint32_t small_batch = 24;

//! The tables of one launch of `congruence_round_small` (with their indexes) or
//! `sort_and_dedupe_small` (with their kept counts): block b takes entry b.
struct small_batch_args {
  table_ref table[small_batch];
  congruence_ref index[small_batch];
  std::uint32_t* kept[small_batch];
};
static_assert(sizeof(small_batch_args) <= 4000, "kernel parameters stay under 4 KB");

//! `congruence_round` of a batch of tables, a block per table: the four passes one after
//! another in the block, with barriers where the launches were.
template <std::uint32_t Width>
VYRE_KERNEL void congruence_round_small_kernel(small_batch_args batch, union_find_ref uf,
                                               std::uint32_t* merged) {
  const table_ref t = batch.table[blockIdx.x];
  const congruence_ref h = batch.index[blockIdx.x];
  const pass_threads th = block_threads();
  begin_round(h, th);
  __syncthreads();
  clear_slots(h, th);
  __syncthreads();
  canonicalize_rows<Width>(t, uf, h, th);
  __syncthreads();
  insert_rows(t, uf, h, merged, th);
}

//! `sort_rows` then `drop_duplicates` of a batch of tables, a block per table: the row order
//! sorted in the block (by arguments, ties by row: the order the stable radix sorts give),
//! then each run's kept value and timestamp folded by the thread that holds its first row,
//! then the kept rows written over the table a column at a time (every read of a column before
//! any write of it).
template <int = 0>
VYRE_KERNEL void __launch_bounds__(block)
    sort_and_dedupe_small_kernel(small_batch_args batch, std::uint32_t* folded,
                                 std::uint32_t* conflict) {
  constexpr std::uint32_t items = small_sort_items, none = 0xffffffffu;
  using sort_type = cub::BlockMergeSort<std::uint32_t, block, items>;
  using scan_type = cub::BlockScan<std::uint32_t, block>;
  __shared__ union {
    typename sort_type::TempStorage sort;
    std::uint32_t order[block * items];  //!< the row at each sorted position
  } sorted;
  __shared__ typename scan_type::TempStorage scan;
  const table_ref t = batch.table[blockIdx.x];
  const std::uint32_t used = t.in_use(), last = t.width - 1, base = threadIdx.x * items;
  const auto row = [&](std::uint32_t r) { return t.cells + std::size_t{r} * t.width; };
  std::uint32_t at[items];  // this thread's sorted positions base + k: their rows
  for (std::uint32_t k = 0; k < items; ++k) at[k] = base + k < used ? base + k : none;
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    if (a == none || b == none) return a != none;
    const std::uint32_t *x = row(a), *y = row(b);
    for (std::uint32_t c = 0; c < last; ++c)
      if (x[c] != y[c]) return x[c] < y[c];
    return a < b;
  };
  sort_type(sorted.sort).Sort(at, before, static_cast<int>(used), none);
  __syncthreads();  // the sort's scratch becomes the order
  for (std::uint32_t k = 0; k < items; ++k) sorted.order[base + k] = at[k];
  __syncthreads();
  const std::uint32_t* order = sorted.order;
  std::uint32_t starts[items], run[items], runs = 0;
  for (std::uint32_t k = 0; k < items; ++k) {
    const std::uint32_t i = base + k;
    starts[k] =
        i < used && (i == 0 || !eqsat::detail::same_row(row(at[k]), row(order[i - 1]), last)) ? 1u
                                                                                              : 0u;
  }
  scan_type(scan).ExclusiveSum(starts, run, runs);
  std::uint32_t value[items] = {}, stamp[items] = {};
  bool changed = false, clash = false;
  for (std::uint32_t k = 0; k < items; ++k) {
    if (starts[k] == 0) continue;
    const std::uint32_t first = base + k, head = t.value(at[k]);
    std::uint32_t end = first + 1;
    while (end < used && eqsat::detail::same_row(row(order[end]), row(at[k]), last)) ++end;
    std::uint32_t v = head;
    switch (t.merge) {
      case device_merge::min:
        for (std::uint32_t j = first + 1; j < end; ++j) {
          const std::uint32_t w = t.value(order[j]);
          v = w < v ? w : v;
        }
        break;
      case device_merge::max:
        for (std::uint32_t j = first + 1; j < end; ++j) {
          const std::uint32_t w = t.value(order[j]);
          v = w > v ? w : v;
        }
        break;
      case device_merge::replace:
        // The last row of the run the iteration wrote (every row, without timestamps).
        for (std::uint32_t j = end; j-- > first;) {
          if (t.stamps != nullptr && t.stamps[order[j]] != *t.now) continue;
          v = t.value(order[j]);
          break;
        }
        break;
      case device_merge::unite:
      case device_merge::none:
        break;
    }
    changed = changed || v != head;
    value[k] = v;
    std::uint32_t oldest = t.stamps != nullptr ? *t.now : 0u;
    for (std::uint32_t j = first; j < end; ++j) {
      const std::uint32_t w = t.value(order[j]);
      if (w != v)
        clash = true;
      else if (t.stamps != nullptr)
        oldest = t.stamps[order[j]] < oldest ? t.stamps[order[j]] : oldest;
    }
    stamp[k] = oldest;
  }
  __syncthreads();  // every row read above before one is written
  for (std::uint32_t col = 0; col < t.width; ++col) {
    std::uint32_t cell[items];
    for (std::uint32_t k = 0; k < items; ++k)
      if (starts[k] != 0) cell[k] = col == last ? value[k] : row(at[k])[col];
    __syncthreads();
    for (std::uint32_t k = 0; k < items; ++k)
      if (starts[k] != 0) row(run[k])[col] = cell[k];
    __syncthreads();
  }
  for (std::uint32_t k = 0; k < items && t.stamps != nullptr; ++k)
    if (starts[k] != 0) t.stamps[run[k]] = stamp[k];
  if (threadIdx.x == 0) *batch.kept[blockIdx.x] = runs;
  if (changed && folded != nullptr) atomicOr(folded, 1u);
  if (clash && t.merge == device_merge::none && conflict != nullptr) atomicOr(conflict, 1u);
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

//! tmp[i] = the timestamp of row perm[i], and back: stamps[i] = tmp[i] for the first `*count`
//! rows (`count` null: every row in use).
template <int = 0>
VYRE_KERNEL void gather_stamps_kernel(table_ref t, const std::uint32_t* perm, std::uint32_t* tmp) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    tmp[i] = t.stamps[perm[i]];
  }
}
template <int = 0>
VYRE_KERNEL void put_stamps_kernel(table_ref t, const std::uint32_t* tmp,
                                   const std::uint32_t* count) {
  const std::uint32_t n = count != nullptr ? *count : t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, n) {
    t.stamps[i] = tmp[i];
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

//! In a table merged by `min` or `max`: every row that does not start its run of equal
//! arguments folds its value into the run's kept value (`tmp[position[i] - 1]`, written by
//! `compact_column_kernel` before); `*folded = 1` when that changed a kept value (null: not
//! reported). The kept row of a run is the first in the table's order, so where the table held
//! the key before an iteration appended rows, that row's value is the one compared.
template <int = 0>
VYRE_KERNEL void fold_values_kernel(table_ref t, const std::uint32_t* position, std::uint32_t* tmp,
                                    std::uint32_t* folded) {
  const std::uint32_t used = t.in_use();
  const bool lower = t.merge == device_merge::min;
  VYRE_DETAIL_GRID_LOOP(i, used) {
    if (i == 0 || position[i] != position[i - 1]) continue;  // the first row of its run
    const std::uint32_t v = t.value(i);
    std::uint32_t* kept = tmp + (position[i] - 1);
    const std::uint32_t before = lower ? atomicMin(kept, v) : atomicMax(kept, v);
    if ((lower ? v < before : v > before) && folded != nullptr) atomicOr(folded, 1u);
  }
}

//! Whether row i (in use) is the last of its run (`position`: the scan of the keep flags).
__device__ inline bool last_of_run(const std::uint32_t* position, std::uint64_t i,
                                   std::uint32_t used) noexcept {
  return i + 1 == used || position[i + 1] != position[i];
}

//! In a table merged by `replace`: `win[run]` = 1 + the last row of the run that the iteration
//! wrote (appended, or changed by the rebuild: timestamp `*t.now`), or 0 when none did (the run
//! is one row the table held). Without timestamps every row counts as written. `win` must be
//! zero for every run first (`start_runs_kernel`).
template <int = 0>
VYRE_KERNEL void last_written_kernel(table_ref t, const std::uint32_t* position,
                                     std::uint32_t* win) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    if (t.stamps != nullptr && t.stamps[i] != *t.now) continue;
    atomicMax(win + (position[i] - 1), static_cast<std::uint32_t>(i + 1));
  }
}

//! `out[run]` = `*t.now` (`now`) or 0 for every run (`position` the scan of the keep flags;
//! rows in use).
template <int = 0>
VYRE_KERNEL void start_runs_kernel(table_ref t, const std::uint32_t* position, std::uint32_t* out,
                                   bool now) {
  const std::uint32_t used = t.in_use();
  const std::uint32_t start = now ? *t.now : 0u;
  VYRE_DETAIL_GRID_LOOP(i, used) {
    if (i == 0 || position[i] != position[i - 1]) out[position[i] - 1] = start;
  }
}

//! A run's kept value in a table merged by `replace`: that of the row `win` names (if any);
//! `*folded = 1` when that changed the value of the run's first row.
template <int = 0>
VYRE_KERNEL void replace_values_kernel(table_ref t, const std::uint32_t* position,
                                       const std::uint32_t* win, std::uint32_t* tmp,
                                       std::uint32_t* folded) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    if (!last_of_run(position, i, used)) continue;
    const std::uint32_t run = position[i] - 1;
    if (win[run] == 0) continue;
    const std::uint32_t v = t.value(win[run] - 1);
    if (v != tmp[run] && folded != nullptr) atomicOr(folded, 1u);
    tmp[run] = v;
  }
}

//! A run's timestamp, as the CPU engine's merge leaves it: the oldest of its rows that hold
//! the kept row exactly (a merge that changed nothing leaves the row and its timestamp), else
//! `*t.now`, into `out[run]` (null: none), which must be `*t.now` first (`start_runs_kernel`);
//! and `*conflict = 1` (null: not asked, a table with `:no-merge` asks) where a run holds
//! another value than its kept one. `tmp`: each run's kept value.
template <int = 0>
VYRE_KERNEL void settle_runs_kernel(table_ref t, const std::uint32_t* position,
                                    const std::uint32_t* tmp, std::uint32_t* out,
                                    std::uint32_t* conflict) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    const std::uint32_t run = position[i] - 1;
    if (t.value(i) != tmp[run]) {
      if (conflict != nullptr) atomicOr(conflict, 1u);
    } else if (out != nullptr) {
      atomicMin(out + run, t.stamps[i]);
    }
  }
}

//! keep[i] = 1 for a row in use that is past the first `before` rows or whose keys are not in
//! `keys` (sorted by its keys), else 0 (`drop_deleted`).
template <int = 0>
VYRE_KERNEL void keep_undeleted_kernel(table_ref t, table_ref keys, std::uint32_t before,
                                       std::uint32_t* keep) {
  const std::uint32_t used = t.in_use();
  const std::uint32_t deleted = keys.in_use();
  VYRE_DETAIL_GRID_LOOP(i, t.rows) {
    bool stays = i < used;
    if (stays && i < before)
      stays = eqsat::detail::find_sorted_row(keys.cells, deleted, keys.width,
                                             t.cells + i * t.width) == deleted;
    keep[i] = stays ? 1u : 0u;
  }
}

//! tmp[position[i] - 1] = the timestamp of row i when it is kept (`position`: the inclusive
//! scan of the keep flags).
template <int = 0>
VYRE_KERNEL void compact_stamps_kernel(table_ref t, const std::uint32_t* position,
                                       std::uint32_t* tmp) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, used) {
    const bool first = i == 0 ? position[0] == 1 : position[i] != position[i - 1];
    if (first) tmp[position[i] - 1] = t.stamps[i];
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
  return vyre::detail::launched(what);
}

//! `keep[0, n)`, a flag per row, replaced by its inclusive scan: each kept row's position + 1.
inline expected<void> scan_kept(device_resource_ref memory, std::uint32_t* keep, std::uint32_t n,
                                cudaStream_t stream, const char* what) {
  VYRE_TRY(cub_items(n, what));
  return vyre::detail::cub_call(
      runtime_for(memory),
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceScan::InclusiveSum(temp, bytes, keep, keep, static_cast<int>(n), stream);
      },
      stream, what);
}

//! The kept rows' timestamps (`position`: `scan_kept`'s) moved to the first `*count` rows
//! through `tmp`, unless the table keeps none.
inline expected<void> compact_stamps(const table_ref& t, const std::uint32_t* position,
                                     std::uint32_t* tmp, const std::uint32_t* count,
                                     cudaStream_t stream, const char* what) {
  if (t.stamps == nullptr) return {};
  compact_stamps_kernel<><<<grid(t.rows), block, 0, stream>>>(t, position, tmp);
  VYRE_TRY(vyre::detail::launched(what));
  put_stamps_kernel<><<<grid(t.rows), block, 0, stream>>>(t, tmp, count);
  return vyre::detail::launched(what);
}

}  // namespace detail

//! Sets the control words of `tables` congruence indexes (`tables *
//! congruence_control_words` u32 at `control`) so that each one's first round clears its slots
//! and inserts every row: call once before a rebuild's first round.
inline expected<void> congruence_start(std::uint32_t* control, std::size_t tables,
                                       cudaStream_t stream) {
  if (tables == 0) return {};
  return cuda_check(
      cudaMemsetAsync(control, 0xff, tables * congruence_control_words * sizeof(std::uint32_t),
                      stream),
      "eqsat::device::congruence_start");
}

//! One round of congruence closure on `t` (after `compress`): every class id replaced by its
//! root, then the rows whose arguments moved (every row in a first round) inserted into `t`'s
//! congruence index `h`, uniting the classes of rows with equal arguments; `*merged = 1` (a
//! device u32) when a union merged two classes.
inline expected<void> congruence_round(const table_ref& t, union_find_ref uf,
                                       const congruence_ref& h, std::uint32_t* merged,
                                       cudaStream_t stream) {
  const char* what = "eqsat::device::congruence_round";
  if (t.rows == 0) return {};
  detail::congruence_begin_kernel<><<<1, 1, 0, stream>>>(h);
  VYRE_TRY(vyre::detail::launched(what));
  detail::congruence_clear_kernel<><<<detail::grid(h.slot_count), detail::block, 0, stream>>>(h);
  VYRE_TRY(vyre::detail::launched(what));
  if (t.width <= narrow_limits::width)
    detail::canonicalize_kernel<narrow_limits::width>
        <<<detail::grid(t.rows), detail::block, 0, stream>>>(t, uf, h);
  else
    detail::canonicalize_kernel<max_width>
        <<<detail::grid(t.rows), detail::block, 0, stream>>>(t, uf, h);
  VYRE_TRY(vyre::detail::launched(what));
  detail::congruence_insert_kernel<>
      <<<detail::grid(t.rows), detail::block, 0, stream>>>(t, uf, h, merged);
  return vyre::detail::launched(what);
}

//! The most rows of a table the batched passes take (`congruence_round_small`,
//! `sort_and_dedupe_small`): a block holds the table.
inline constexpr std::uint32_t small_table_rows = detail::block * detail::small_sort_items;

namespace detail {
//! Fails unless `per_table` (`what`'s array of `name`) holds one entry per table and every
//! table of `tables` has at most `small_table_rows` rows.
inline expected<void> check_small(std::span<const table_ref> tables, std::size_t per_table,
                                  const char* name, const char* what) {
  if (per_table != tables.size())
    return fail(error(errc::invalid_argument, what)
                    .with("tables", tables.size())
                    .with(name, per_table)
                    .fix("pass one entry per table"));
  for (std::size_t i = 0; i < tables.size(); ++i)
    if (tables[i].rows > small_table_rows)
      return fail(error(errc::invalid_argument, what)
                      .with("table", i)
                      .with("rows", tables[i].rows)
                      .with("max", small_table_rows)
                      .fix("run the per-table pass on a table of more rows"));
  return {};
}
}  // namespace detail

//! `congruence_round` of each table of `tables` (with its index, `index[i]`), a block per
//! table and one launch per `detail::small_batch` tables: for rebuilds of many small tables,
//! where the per-table launches cost more than their work. Every table has at most
//! `small_table_rows` rows. The tables' rounds run side by side, so one may see a union
//! another makes in the same round or not; either way a union sets `*merged`, and the round
//! that unites nothing sees every root.
inline expected<void> congruence_round_small(std::span<const table_ref> tables,
                                             std::span<const congruence_ref> index,
                                             union_find_ref uf, std::uint32_t* merged,
                                             cudaStream_t stream) {
  const char* what = "eqsat::device::congruence_round_small";
  VYRE_TRY(detail::check_small(tables, index.size(), "indexes", what));
  detail::small_batch_args batch{};
  std::uint32_t count = 0;
  bool wide = false;
  const auto launch = [&]() -> expected<void> {
    if (count == 0) return {};
    if (wide)
      detail::congruence_round_small_kernel<max_width>
          <<<count, detail::block, 0, stream>>>(batch, uf, merged);
    else
      detail::congruence_round_small_kernel<narrow_limits::width>
          <<<count, detail::block, 0, stream>>>(batch, uf, merged);
    count = 0;
    wide = false;
    return vyre::detail::launched(what);
  };
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].rows == 0) continue;  // as `congruence_round`: nothing to do
    batch.table[count] = tables[i];
    batch.index[count] = index[i];
    wide = wide || tables[i].width > narrow_limits::width;
    if (++count == detail::small_batch) VYRE_TRY(launch());
  }
  return launch();
}

//! `sort_rows` then `drop_duplicates` of each table of `tables` (its kept rows to the device
//! u32 `*kept[i]`), a block per table and one launch per `detail::small_batch` tables, with
//! the same results: rows, values, timestamps, `*folded` and `*conflict`. Every table has at
//! most `small_table_rows` rows; no scratch (the block holds the order).
inline expected<void> sort_and_dedupe_small(std::span<const table_ref> tables,
                                            std::span<std::uint32_t* const> kept,
                                            cudaStream_t stream, std::uint32_t* folded = nullptr,
                                            std::uint32_t* conflict = nullptr) {
  const char* what = "eqsat::device::sort_and_dedupe_small";
  VYRE_TRY(detail::check_small(tables, kept.size(), "kept", what));
  detail::small_batch_args batch{};
  for (std::size_t at = 0; at < tables.size(); at += detail::small_batch) {
    const auto count = static_cast<std::uint32_t>(
        (std::min)(tables.size() - at, std::size_t{detail::small_batch}));
    for (std::uint32_t b = 0; b < count; ++b) {
      batch.table[b] = tables[at + b];
      batch.kept[b] = kept[at + b];
    }
    detail::sort_and_dedupe_small_kernel<>
        <<<count, detail::block, 0, stream>>>(batch, folded, conflict);
    VYRE_TRY(vyre::detail::launched(what));
  }
  return {};
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
    VYRE_TRY(vyre::detail::launched(what));
    VYRE_TRY(detail::sort_pairs(memory, keys, perm, n, bits.of(t, col), stream, what));
  }
  std::uint32_t* tmp = keys.Current();
  for (std::uint32_t col = 0; col < t.width; ++col) {
    detail::gather_column_kernel<>
        <<<detail::grid(n), detail::block, 0, stream>>>(t, col, perm.Current(), tmp);
    VYRE_TRY(vyre::detail::launched(what));
    VYRE_TRY(detail::put_column(t, col, tmp, nullptr, stream, what));
  }
  if (t.stamps == nullptr) return {};
  detail::gather_stamps_kernel<>
      <<<detail::grid(n), detail::block, 0, stream>>>(t, perm.Current(), tmp);
  VYRE_TRY(vyre::detail::launched(what));
  detail::put_stamps_kernel<><<<detail::grid(n), detail::block, 0, stream>>>(t, tmp, nullptr);
  return vyre::detail::launched(what);
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

//! In `t` sorted by its arguments, after congruence closure: keeps one row of every run of
//! equal arguments, compacted in place a column at a time through `scratch` (`3 * rows` u32).
//! A function's run keeps the fold of its values by the table's merge (`t.merge`): `min` and
//! `max` fold them, `replace` keeps the value of the last row the iteration wrote (the run's
//! rows are in the order they were written: the table's, then the appended ones; `*folded = 1`
//! when that changed the value of a run's first row; `folded` may be null), `none` keeps the
//! one value and sets `*conflict` (may be null) when a run holds two. Where the table keeps
//! timestamps, a run's is the oldest of its rows that hold the kept value, else `*t.now`. The
//! kept row count goes to the device u32 `*kept` (the table's `rows` is the caller's to update
//! from it).
inline expected<void> drop_duplicates(device_resource_ref memory, const table_ref& t,
                                      std::uint32_t* scratch, std::uint32_t* kept,
                                      cudaStream_t stream, std::uint32_t* folded = nullptr,
                                      std::uint32_t* conflict = nullptr) {
  const char* what = "eqsat::device::drop_duplicates";
  const std::uint32_t n = t.rows;
  if (n < 2) {
    detail::put_count_kernel<><<<1, 1, 0, stream>>>(kept, t);
    return vyre::detail::launched(what);
  }
  std::uint32_t* p = scratch;
  std::uint32_t* tmp = p + n;
  std::uint32_t* runs = tmp + n;  // per run: the replacing row, then the timestamp
  const unsigned grid = detail::grid(n);
  detail::first_of_run_kernel<><<<grid, detail::block, 0, stream>>>(t, p);
  VYRE_TRY(vyre::detail::launched(what));
  VYRE_TRY(detail::scan_kept(memory, p, n, stream, what));
  const std::uint32_t* count = p + n - 1;
  for (std::uint32_t col = 0; col < t.width; ++col) {
    detail::compact_column_kernel<><<<grid, detail::block, 0, stream>>>(t, col, p, tmp);
    VYRE_TRY(vyre::detail::launched(what));
    if (col + 1 == t.width) {
      // The kept values, then (from the rows' cells, before they are compacted) the timestamps.
      switch (t.merge) {
        case device_merge::unite:
          break;
        case device_merge::min:
        case device_merge::max:
          detail::fold_values_kernel<><<<grid, detail::block, 0, stream>>>(t, p, tmp, folded);
          break;
        case device_merge::replace:
          detail::start_runs_kernel<><<<grid, detail::block, 0, stream>>>(t, p, runs, false);
          VYRE_TRY(vyre::detail::launched(what));
          detail::last_written_kernel<><<<grid, detail::block, 0, stream>>>(t, p, runs);
          VYRE_TRY(vyre::detail::launched(what));
          detail::replace_values_kernel<>
              <<<grid, detail::block, 0, stream>>>(t, p, runs, tmp, folded);
          break;
        case device_merge::none:
          break;  // the one value, checked with the timestamps
      }
      VYRE_TRY(vyre::detail::launched(what));
      std::uint32_t* asks = t.merge == device_merge::none ? conflict : nullptr;
      if (t.stamps != nullptr || asks != nullptr) {
        if (t.stamps != nullptr) {
          detail::start_runs_kernel<><<<grid, detail::block, 0, stream>>>(t, p, runs, true);
          VYRE_TRY(vyre::detail::launched(what));
        }
        detail::settle_runs_kernel<><<<grid, detail::block, 0, stream>>>(
            t, p, tmp, t.stamps != nullptr ? runs : nullptr, asks);
        VYRE_TRY(vyre::detail::launched(what));
      }
    }
    VYRE_TRY(detail::put_column(t, col, tmp, count, stream, what));
  }
  if (t.stamps != nullptr) {
    detail::put_stamps_kernel<><<<grid, detail::block, 0, stream>>>(t, runs, count);
    VYRE_TRY(vyre::detail::launched(what));
  }
  return vyre::detail::copy_on_device(kept, count, 1, stream, what);
}

//! A table's rows without those it deletes: the first `before` rows of `t` (those the table
//! held before the apply appended rows) whose keys are in `keys` (a table of keys of `t`'s
//! width, sorted by `sort_rows`) are dropped, the rest compacted in place in their order, with
//! their timestamps, through `scratch` (`2 * rows` u32). The kept row count goes to the device
//! u32 `*kept`. As the CPU engine's merge deletes before it writes, a row the apply appended
//! stays.
inline expected<void> drop_deleted(device_resource_ref memory, const table_ref& t,
                                   const table_ref& keys, std::uint32_t before,
                                   std::uint32_t* scratch, std::uint32_t* kept,
                                   cudaStream_t stream) {
  const char* what = "eqsat::device::drop_deleted";
  const std::uint32_t n = t.rows;
  if (n == 0) {
    detail::put_count_kernel<><<<1, 1, 0, stream>>>(kept, t);
    return vyre::detail::launched(what);
  }
  std::uint32_t* p = scratch;
  std::uint32_t* tmp = p + n;
  const unsigned grid = detail::grid(n);
  detail::keep_undeleted_kernel<><<<grid, detail::block, 0, stream>>>(t, keys, before, p);
  VYRE_TRY(vyre::detail::launched(what));
  VYRE_TRY(detail::scan_kept(memory, p, n, stream, what));
  const std::uint32_t* count = p + n - 1;
  for (std::uint32_t col = 0; col < t.width; ++col) {
    detail::compact_column_kernel<><<<grid, detail::block, 0, stream>>>(t, col, p, tmp);
    VYRE_TRY(vyre::detail::launched(what));
    VYRE_TRY(detail::put_column(t, col, tmp, count, stream, what));
  }
  VYRE_TRY(detail::compact_stamps(t, p, tmp, count, stream, what));
  return vyre::detail::copy_on_device(kept, count, 1, stream, what);
}

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
