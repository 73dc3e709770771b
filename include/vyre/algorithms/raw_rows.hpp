// SPDX-License-Identifier: Apache-2.0
//! @file
//! `raw_rows_ref`: rows as a producer emits them (e-class, op, children length, any row order)
//! plus the children of every row, concatenated in row order, host or device alike (the
//! pointers say where). The input of the device `build` and of its host reference `pack_reference`.
//! The packed image the algorithms produce and consume is `vyre::egraph::image_columns`
//! (egraph/layout.hpp).
//!
//! Trivially copyable, non-owning, passed by value (also to kernels).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vyre/core/checked.hpp"
#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/egraph/layout.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

// The one image vocabulary, under the names the algorithms use it by.
using egraph::column_index;
using egraph::image_column;
using egraph::image_columns;
using egraph::image_counts;
using egraph::image_layout;

//! Rows in producer form: `children` holds row 0's children, then row 1's, and so on. The
//! columns are spelled as the image's columns they become.
struct raw_rows_ref {
  const std::uint32_t* row_eclass_ids = nullptr;       //!< R e-class ids (any u32, sparse is fine)
  const std::uint32_t* row_language_op_ids = nullptr;  //!< R op ids
  const std::uint32_t* row_children_lens = nullptr;    //!< R children counts
  const std::uint32_t* children = nullptr;             //!< C child e-class ids, in row order
  std::uint32_t row_count = 0;                         //!< R
  std::uint32_t child_count = 0;                       //!< C (must equal the sum of the lengths)
};

//! Old names of the image view and layout, kept for one release.
using packed_ref [[deprecated("use vyre::egraph::image_columns")]] = egraph::image_columns;
using packed_layout [[deprecated("use vyre::egraph::image_layout")]] = egraph::image_layout;

//! Checks that `layout` is the standard layout of its counts (the algorithms index columns by
//! `image_layout::for_counts`).
//! @throws nothing; `errc::invalid_layout` naming the counts otherwise.
inline expected<image_layout> require_standard_layout(const image_layout& layout) noexcept {
  if (!layout.is_standard())
    return fail(error(errc::invalid_layout,
                      "algorithms: the image's columns are not in the standard packed order")
                    .with("rows", layout.row_count)
                    .with("child_entries", layout.child_count)
                    .with("groups", layout.group_count)
                    .fix("pass the layout of an image written by vyre::egraph::pack or build"));
  return layout;
}

namespace detail {
//! The largest row count whose packed image stays addressable with u32 group offsets and row
//! indices, and whose word count fits comfortably in memory sizes (6R + C + 2G + 1 < 2^64).
inline constexpr std::uint32_t max_rows = 0xFFFFFFFEu;
}  // namespace detail

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
