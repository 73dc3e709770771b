// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's union-find over dense ids, on the host (`host_union_find`: the e-classes of
//! `vyre::eqsat`'s CPU engine, the classes of `vyre::algorithms`' congruence on the host) and on
//! the device (`union_find_ref`: the GPU engine's e-classes, the device congruence's classes).
//! The smallest id of a set is its root, as egglog's union-find keeps it, so every engine names
//! a class by the same id.
//!
//! `host_union_find`: `find` halves the path it walks; `link` joins by another rule, for a
//! caller that keeps its own representatives. `Parents`: the vector of u32 that holds every
//! id's parent (`std::vector`, or one with another allocator).
//!
//! `union_find_ref`: a view of `parent[0, size)` in device memory the caller owns, lock-free:
//! `unite` links the larger root under the smaller with one CAS on the larger root's own slot,
//! so the representative never depends on the order of concurrent unions and no cycle can
//! form; `find` does not compress (it reads volatile: other threads link roots meanwhile).
//! Only root slots are written during a kernel, and a slot, once not a root, never changes
//! until the caller compresses the paths between kernels; a `find` that reads a stale root
//! makes `unite`'s CAS fail, and it retries from the new parent. Lock-free, not wait-free: a
//! failed CAS means another thread's CAS on that slot succeeded. The passes around it (init,
//! compress, root counts) are `vyre::eqsat::device`'s (`eqsat/device/union_find.cuh`).
//!
//!     vyre::host_union_find<> sets;
//!     VYRE_TRY(sets.grow(4, "my classes"));        // ids 0..3, each alone
//!     sets.unite(3, 1);                            // returns 3: no longer a root
//!     sets.find(3);                                // 1
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"

namespace vyre {

template <class Parents = std::vector<std::uint32_t>>
class host_union_find {
 public:
  //! What `unite` returns when its ids were in one set already.
  static constexpr std::uint32_t none = 0xffffffffu;

  //! `count` more ids, each a set of its own; on failure nothing is added.
  expected<void> grow(std::size_t count, const char* what) {
    const std::size_t first = parent_.size();
    VYRE_TRY(try_resize(parent_, first + count, what));
    for (std::size_t i = first; i < parent_.size(); ++i) parent_[i] = static_cast<std::uint32_t>(i);
    return {};
  }
  //! One more id, a set of its own (the vector's growth: throws where it throws).
  void add() { parent_.push_back(static_cast<std::uint32_t>(parent_.size())); }
  std::size_t size() const noexcept { return parent_.size(); }

  //! The root of `x`, halving the path on the way (not thread safe).
  std::uint32_t find(std::uint32_t x) noexcept {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  //! The root of `x` without writing (safe beside other readers).
  std::uint32_t find_const(std::uint32_t x) const noexcept {
    while (parent_[x] != x) x = parent_[x];
    return x;
  }
  bool is_root(std::uint32_t x) const noexcept { return parent_[x] == x; }
  //! Joins the sets of `a` and `b`, the smaller root staying. @returns the root that stopped
  //! being one, or `none` when they were one set.
  std::uint32_t unite(std::uint32_t a, std::uint32_t b) noexcept {
    a = find(a);
    b = find(b);
    if (a == b) return none;
    if (b < a) std::swap(a, b);
    parent_[b] = a;
    return b;
  }

  //! Makes root `away` point at root `root`: a join for callers that choose the root by another
  //! rule (the set with more members, say) and keep each set's smallest id themselves; `find`
  //! then answers their roots.
  void link(std::uint32_t away, std::uint32_t root) noexcept { parent_[away] = root; }

  //! Every id's parent (a root's is itself).
  const Parents& parents() const noexcept { return parent_; }
  //! Replaces every parent (each at most its id: the smaller id of a set its root).
  void assign(Parents parents) noexcept { parent_ = std::move(parents); }

 private:
  Parents parent_;
};

//! A union-find in device memory (see the file comment): `parent[0, size)`, each at most its id.
struct union_find_ref {
  std::uint32_t* parent = nullptr;
  std::uint32_t size = 0;  //!< ids `[0, size)`

#if defined(__CUDACC__)
  //! The root (smallest id) of `x`'s set. No path compression.
  __device__ std::uint32_t find(std::uint32_t x) const {
    for (;;) {
      const std::uint32_t p = *static_cast<const volatile std::uint32_t*>(parent + x);
      if (p == x) return x;
      x = p;
    }
  }

  //! Joins the sets of `a` and `b`; true when they were apart (this call linked them).
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
#endif
};

}  // namespace vyre
