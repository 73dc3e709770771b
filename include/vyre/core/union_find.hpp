// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::host_union_find`: the union-find of vyre's host code over dense ids (the e-classes of
//! `vyre::eqsat`'s CPU engine, the classes of `vyre::algorithms`' congruence on the host). The
//! smallest id of a set is its root, as egglog's union-find keeps it, so every engine names a
//! class by the same id, and the device's union-find (`vyre::eqsat::device::union_find_ref`)
//! agrees with it (`link` joins by another rule, for a caller that keeps its own
//! representatives); `find` halves the path it walks. `Parents`: the vector of u32 that holds
//! every id's parent (`std::vector`, or one with another allocator).
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

}  // namespace vyre
