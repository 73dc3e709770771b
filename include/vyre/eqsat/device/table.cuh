// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::device::table_ref`: one function's rows on the device, as the device pieces
//! of `vyre::eqsat` (e-matching, rebuild) read them, and `key_bits`, the value range their
//! radix sorts cover.
//!
//! A table of a function with arity `k` is `rows` rows of `width = k + 1` u32, row-major and
//! contiguous: `(col_0, ..., col_{k-1}, value)` (the layout of `device/plan.hpp`). A column
//! holds either an e-class id (bit c of `class_mask` set; a constructor's value column always)
//! or a base sort's value (its u32 encoding, `values.hpp`). The view owns nothing: the cells
//! live where the engine put them.
//!
//!     vyre::eqsat::device::table_ref add{cells, rows, 3, 0b111};  // Add(Math, Math) -> Math
//!
//! A view may also say how many rows are in use on the device (`live`): then `rows` is the
//! capacity the launches cover and the passes skip rows from `*live` on. That is how one
//! captured graph serves every row count up to a capacity (the rebuild of `gpu_engine`). And it
//! may carry a timestamp per row (`stamps`, egglog's seminaive timestamps), which the rebuild
//! moves with the rows and sets where it changes one.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/runtime/memory.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! A non-owning view of one table: `rows` rows of `width` u32 at `cells`.
struct table_ref {
  std::uint32_t* cells = nullptr;
  std::uint32_t rows = 0;        //!< rows, or with `live` the capacity the launches cover
  std::uint32_t width = 1;       //!< arity + 1, at most `max_width`
  std::uint32_t class_mask = 1;  //!< bit c: column c holds an e-class id (the last always)
  //! Null: every row is in use. Else a device u32, at most `rows`: the rows in use, read by
  //! the kernels when they run (rows from it on are padding the passes skip or sort last).
  const std::uint32_t* live = nullptr;
  //! How the rebuild merges the values of two rows of one key: `unite` for a constructor (the
  //! value column holds the row's class, which congruence unites); for a function the rows
  //! fold into one by `min`, `max`, `replace` (the value written last) or `none` (they must
  //! agree).
  device_merge merge = device_merge::unite;
  //! Null: no timestamps. Else one u32 per row: the timestamp of the row's last change (its
  //! append, or a rebuild that changed a column), which the seminaive search compares.
  std::uint32_t* stamps = nullptr;
  //! With `stamps`: a device u32, the timestamp the rebuild gives the rows it changes.
  const std::uint32_t* now = nullptr;

  //! Whether column `c` holds an e-class id (else a base sort's value).
  __host__ __device__ constexpr bool holds_class(std::uint32_t c) const noexcept {
    return ((class_mask >> c) & 1u) != 0;
  }
#if defined(__CUDACC__)
  //! Rows in use (`*live`, or `rows`): read once per thread, before a grid loop.
  __device__ std::uint32_t in_use() const noexcept {
    return live != nullptr ? *live : rows;
  }
  //! The value column (the last) of row `r`.
  __device__ std::uint32_t value(std::uint64_t r) const noexcept {
    return cells[r * width + width - 1];
  }
#endif
};

//! Bits a radix sort needs for the values of a column: classes below `class_ids`, base sorts'
//! values below `base_bound` (the sorts of `ematch.cuh`'s indexes and `rebuild.cuh`'s rows).
struct key_bits {
  std::uint64_t class_ids = 0;
  std::uint64_t base_bound = 0;

  //! Bits of column `c` of `t`: at least 1, at most 32.
  constexpr int of(const table_ref& t, std::uint32_t c) const noexcept {
    const std::uint64_t domain = t.holds_class(c) ? class_ids : base_bound;
    int bits = 1;
    while (bits < 32 && (domain >> bits) != 0) ++bits;
    return bits;
  }
};

namespace detail {

inline unsigned grid(std::uint64_t items) noexcept {
  return vyre::detail::grid_for(items);
}
inline constexpr unsigned block = vyre::detail::block_size;

#if defined(__CUDACC__)
//! What a kernel takes of a per-rule block: the block itself, passed by value (a narrow class's
//! query or head, in kernel parameters), or a device pointer to it (a wide class's).
template <class Block>
__device__ const Block& kernel_arg(const Block& b) {
  return b;
}
template <class Block>
__device__ const Block& kernel_arg(const Block* b) {
  return *b;
}
#endif

//! The runtime services the CUB helpers need: only the device memory.
inline vyre::detail::runtime_ref runtime_for(device_resource_ref memory) noexcept {
  vyre::detail::runtime_ref runtime;
  runtime.memory = memory;
  return runtime;
}

//! keys[i] = column `col` of row perm[i] (perm == nullptr: row i); row_ids[i] = that row when
//! `row_ids` is given. A row not in use (`live`) gets the key ~0u, so a stable sort by any low
//! bits puts it after every row in use (on a tie it came after them already).
template <int = 0>
VYRE_KERNEL void column_keys_kernel(table_ref t, std::uint32_t col, const std::uint32_t* perm,
                                    std::uint32_t* keys, std::uint32_t* row_ids) {
  const std::uint32_t used = t.in_use();
  VYRE_DETAIL_GRID_LOOP(i, t.rows) {
    const std::uint32_t r = perm != nullptr ? perm[i] : static_cast<std::uint32_t>(i);
    keys[i] = r < used ? t.cells[std::size_t{r} * t.width + col] : ~0u;
    if (row_ids != nullptr) row_ids[i] = r;
  }
}

//! Items of one CUB call (its item counts are `int`-sized on some paths).
inline expected<void> cub_items(std::uint64_t n, const char* what) {
  if (n <= 0x7fffffffull) return {};
  return fail(error(errc::abi_limit, what)
                  .with("items", n)
                  .with("max", 0x7fffffffull)
                  .fix("keep one table's rows below 2^31 (set --node-limit lower)"));
}

//! Sorts `n` pairs in their double buffers by the keys' low `bits` (CUB's scratch is then
//! small: no copies of the keys and values); the sorted pairs are at `Current()`. `Key`: u32,
//! or u64 for an index by a pair of columns.
template <class Key>
expected<void> sort_pairs(device_resource_ref memory, cub::DoubleBuffer<Key>& keys,
                          cub::DoubleBuffer<std::uint32_t>& values, std::uint32_t n, int bits,
                          cudaStream_t stream, const char* what) {
  VYRE_TRY(cub_items(n, what));
  return vyre::detail::cub_call(
      detail::runtime_for(memory),
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, keys, values, static_cast<int>(n), 0,
                                               bits, stream);
      },
      stream, what);
}

}  // namespace detail

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
