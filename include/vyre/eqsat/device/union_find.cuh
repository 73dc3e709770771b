// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::device::union_find_ref` (`vyre::union_find_ref`, `vyre/core/union_find.hpp`:
//! a lock-free union-find over e-class ids on the device, callable from any kernel; how it
//! links and what its `find` reads is described there) and host launchers for the passes
//! around it.
//!
//! Memory: one u32 per class id, `parent[x]`, owned by the caller (a slice of its state block,
//! a `device_array`, ...). Invariant: `parent[x] <= x`; the root of a class is its smallest id.
//! `compress` flattens every path between kernels. A kernel that unites and another that reads
//! are ordered by the stream (or a grid-wide sync). Limits: ids below 2^32 - 1 (the caller's).
//!
//!     namespace dev = vyre::eqsat::device;
//!     dev::union_find_ref uf{parent, ids};
//!     VYRE_TRY(dev::init_classes(uf, 0, ids, stream));      // parent[x] = x
//!     my_kernel<<<g, b, 0, stream>>>(uf, ...);              // calls uf.unite(a, b), uf.find(x)
//!     VYRE_TRY(dev::compress(uf, stream));                  // parent[x] = root of x
//!     VYRE_TRY(dev::count_roots(uf, old_ids, roots, stream));  // roots[0..1] += counts
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <cub/block/block_reduce.cuh>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/union_find.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/device/table.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! The device union-find of every vyre engine (`vyre/core/union_find.hpp`), here by the name
//! engine authors' kernels use beside the passes below.
using union_find_ref = vyre::union_find_ref;

namespace detail {

template <int = 0>
VYRE_KERNEL void init_classes_kernel(std::uint32_t* parent, std::uint32_t from, std::uint32_t to) {
  VYRE_DETAIL_GRID_LOOP(i, to - from) {
    parent[from + i] = static_cast<std::uint32_t>(from + i);
  }
}

template <int = 0>
VYRE_KERNEL void compress_kernel(union_find_ref uf) {
  VYRE_DETAIL_GRID_LOOP(i, uf.size) {
    uf.parent[i] = uf.find(static_cast<std::uint32_t>(i));
  }
}

template <int = 0>
VYRE_KERNEL void count_roots_kernel(const std::uint32_t* parent, std::uint32_t ids,
                                    std::uint32_t old_ids, unsigned long long* roots) {
  unsigned long long all = 0, old = 0;
  VYRE_DETAIL_GRID_LOOP(i, ids) {
    const bool root = parent[i] == i;
    all += root ? 1 : 0;
    old += root && i < old_ids ? 1 : 0;
  }
  // Summed per block first: an atomic per root thread serializes millions of adds on two
  // words, a large share of the rebuild of a big e-graph (docs/performance.md).
  using block_reduce = cub::BlockReduce<unsigned long long, block>;
  __shared__ typename block_reduce::TempStorage temp;
  all = block_reduce(temp).Sum(all);
  __syncthreads();  // the storage is reused
  old = block_reduce(temp).Sum(old);
  if (threadIdx.x == 0 && all != 0) atomicAdd(roots, all);
  if (threadIdx.x == 0 && old != 0) atomicAdd(roots + 1, old);
}

}  // namespace detail

//! Makes ids `[from, to)` singletons (`parent[x] = x`) on `stream`. @pre `to <= uf.size`.
inline expected<void> init_classes(union_find_ref uf, std::uint32_t from, std::uint32_t to,
                                   cudaStream_t stream) {
  if (from > to || to > uf.size)
    return fail(error(errc::invalid_argument, "eqsat::device::init_classes: ids out of range")
                    .with("from", from)
                    .with("to", to)
                    .with("size", uf.size)
                    .fix("pass from <= to <= the union-find's size"));
  if (to == from) return {};
  detail::init_classes_kernel<>
      <<<detail::grid(to - from), detail::block, 0, stream>>>(uf.parent, from, to);
  return vyre::detail::launched("eqsat::device::init_classes");
}

//! `parent[x] = find(x)` for every id, on `stream` (no unions may run meanwhile).
inline expected<void> compress(union_find_ref uf, cudaStream_t stream) {
  if (uf.size == 0) return {};
  detail::compress_kernel<><<<detail::grid(uf.size), detail::block, 0, stream>>>(uf);
  return vyre::detail::launched("eqsat::device::compress");
}

//! Adds to the device counters `roots[0]` the roots among every id and to `roots[1]` those
//! below `old_ids` (set them first: this adds). No unions may run meanwhile.
inline expected<void> count_roots(union_find_ref uf, std::uint32_t old_ids,
                                  unsigned long long* roots, cudaStream_t stream) {
  if (uf.size == 0) return {};
  detail::count_roots_kernel<>
      <<<detail::grid(uf.size), detail::block, 0, stream>>>(uf.parent, uf.size, old_ids, roots);
  return vyre::detail::launched("eqsat::device::count_roots");
}

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
