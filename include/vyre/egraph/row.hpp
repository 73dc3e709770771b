// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::egraph::row` (one e-node of a snapshot) and `snapshot_limits` (the u32 image ABI).
#pragma once

#include <cstdint>

#include <cuda/std/limits>

#include "vyre/core/config.hpp"

namespace vyre::egraph {

//! One e-node: its e-class, its interned op, and where its children sit in the snapshot's flat
//! children column. Trivially copyable; all fields are u32 as in the image.
struct row {
  std::uint32_t eclass = 0;
  std::uint32_t op = 0;
  std::uint32_t children_offset = 0;
  std::uint32_t children_length = 0;

  //! One past the last child, in u64 so that it cannot wrap.
  VYRE_HOST_DEVICE constexpr std::uint64_t children_end() const noexcept {
    return std::uint64_t{children_offset} + children_length;
  }
  friend constexpr bool operator==(const row&, const row&) = default;
};

//! The fix an `errc::abi_limit` error of a snapshot or an image names (the packer's, the JSON
//! reader's).
inline constexpr const char* shard_hint =
    "the snapshot exceeds the u32 image ABI: shard it into several snapshots";

//! The largest snapshot the u32 image ABI can describe. The defaults are the ABI itself; pass
//! smaller limits to `snapshot::validate` to check that a snapshot fits a budget (for example
//! before sharding), or to exercise the limit errors in tests.
struct snapshot_limits {
  static constexpr std::uint64_t u32_max = (cuda::std::numeric_limits<std::uint32_t>::max)();

  //! Rows: grouped row indices and group offsets (whose last entry is the row count) are u32.
  std::uint64_t max_rows = u32_max;
  //! Entries of the children column: children offsets are u32.
  std::uint64_t max_child_entries = u32_max;
  //! Children of one row: row child counts are u32.
  std::uint64_t max_row_children = u32_max;
  //! Interned ops: op ids are u32.
  std::uint64_t max_ops = u32_max;
};

}  // namespace vyre::egraph
