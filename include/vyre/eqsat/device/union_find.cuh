// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::device::union_find_ref`: a lock-free union-find over e-class ids on the
//! device, callable from any kernel, plus host launchers for the passes around it.
//!
//! Memory: one u32 per class id, `parent[x]`, owned by the caller (a slice of its state block,
//! a `device_array`, ...). Invariant: `parent[x] <= x`; the root of a class is its smallest id.
//! `unite` links the larger root under the smaller one with one CAS on the larger root's own
//! slot, so the representative never depends on the order of concurrent unions and no cycle can
//! form. `find` does not compress (it reads volatile: other threads link roots meanwhile);
//! `compress` flattens every path between kernels.
//!
//! Memory ordering: only root slots are ever written during a kernel (by the CAS), and a slot,
//! once not a root, never changes again until `compress`. A `find` that reads a stale root
//! simply makes `unite`'s CAS fail, and it retries from the new parent. A kernel that unites
//! and another that reads are ordered by the stream (or a grid-wide sync).
//!
//! Limits: ids below 2^32 - 1 (the caller's). Progress: a failed CAS means another thread's
//! CAS on that slot succeeded (lock-free, not wait-free).
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
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/device/table.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! A non-owning view of a union-find: `parent[0, size)` on the device.
struct union_find_ref {
  std::uint32_t* parent = nullptr;
  std::uint32_t size = 0;  //!< class ids `[0, size)`

  //! The representative (smallest id) of `x`'s class. No path compression.
  __device__ std::uint32_t find(std::uint32_t x) const {
    for (;;) {
      const std::uint32_t p = *static_cast<const volatile std::uint32_t*>(parent + x);
      if (p == x) return x;
      x = p;
    }
  }

  //! Merges the classes of `a` and `b`; true when they were different (this call linked them).
  __device__ bool unite(std::uint32_t a, std::uint32_t b) const {
    for (;;) {
      a = find(a);
      b = find(b);
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
};

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
