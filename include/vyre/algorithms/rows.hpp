// SPDX-License-Identifier: Apache-2.0
//! @file
//! The plain row tables the algorithms run on, host or device alike (the pointers say where):
//!
//! - `raw_rows_ref`: rows as a producer emits them (e-class, op, children length) plus the
//!   children of every row, concatenated in row order. The input of `build` / `pack_reference`.
//! - `packed_layout` / `packed_ref`: the nine columns of DESIGN.md's packed image. A packed
//!   image's first columns are exactly a row table with explicit children offsets, plus the
//!   e-class groups the congruence and extraction passes need.
//!
//! Trivially copyable, non-owning, passed by value (also to kernels).
#pragma once

// nvcc (C++20) infers __host__ __device__ for the implicit special members of host-only
// aggregates (std::vector or device_buffer members) held in cuda::std::expected, then warns
// (20011, 20013) that they call host-only members. They only ever run on the host.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif

#include <cstddef>
#include <cstdint>

#include "vyre/core/checked.hpp"
#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::algorithms {

//! Rows in producer form: `children` holds row 0's children, then row 1's, and so on.
struct raw_rows_ref {
  const std::uint32_t* eclass = nullptr;           //!< R e-class ids (any u32, sparse is fine)
  const std::uint32_t* op = nullptr;               //!< R op ids
  const std::uint32_t* children_length = nullptr;  //!< R children counts
  const std::uint32_t* children = nullptr;         //!< C child e-class ids, in row order
  std::uint32_t row_count = 0;                     //!< R
  std::uint32_t child_count = 0;                   //!< C (must equal the sum of the lengths)
};

//! Word offsets of the nine columns of a packed image with R rows, C children and G groups:
//! eclass, op, offsets, lens, signatures (R each), children (C), group ids (G), group offsets
//! (G+1), group rows (R). Total 6R + C + 2G + 1 words.
struct packed_layout {
  std::uint32_t row_count = 0;
  std::uint32_t child_count = 0;
  std::uint32_t group_count = 0;

  VYRE_HOST_DEVICE constexpr std::uint64_t row_eclass_ids() const noexcept { return 0; }
  VYRE_HOST_DEVICE constexpr std::uint64_t row_language_op_ids() const noexcept {
    return std::uint64_t{row_count};
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t row_children_offsets() const noexcept {
    return 2 * std::uint64_t{row_count};
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t row_children_lens() const noexcept {
    return 3 * std::uint64_t{row_count};
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t row_signatures() const noexcept {
    return 4 * std::uint64_t{row_count};
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t children() const noexcept {
    return 5 * std::uint64_t{row_count};
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t group_eclass_ids() const noexcept {
    return children() + child_count;
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t group_offsets() const noexcept {
    return group_eclass_ids() + group_count;
  }
  VYRE_HOST_DEVICE constexpr std::uint64_t group_rows() const noexcept {
    return group_offsets() + group_count + 1;
  }
  //! 6R + C + 2G + 1 (never overflows u64 for u32 counts).
  VYRE_HOST_DEVICE constexpr std::uint64_t word_count() const noexcept {
    return group_rows() + row_count;
  }
  friend constexpr bool operator==(const packed_layout&, const packed_layout&) = default;
};

//! The nine columns of a packed image (host or device pointers), plus its counts.
struct packed_ref {
  const std::uint32_t* eclass = nullptr;
  const std::uint32_t* op = nullptr;
  const std::uint32_t* children_offset = nullptr;
  const std::uint32_t* children_length = nullptr;
  const std::uint32_t* signature = nullptr;
  const std::uint32_t* children = nullptr;
  const std::uint32_t* group_eclass = nullptr;   //!< G distinct e-class ids, ascending
  const std::uint32_t* group_offsets = nullptr;  //!< G + 1 prefix offsets, last = R
  const std::uint32_t* group_rows = nullptr;     //!< R row indices grouped by e-class
  packed_layout layout;

  VYRE_HOST_DEVICE constexpr std::uint32_t row_count() const noexcept { return layout.row_count; }
  VYRE_HOST_DEVICE constexpr std::uint32_t child_count() const noexcept {
    return layout.child_count;
  }
  VYRE_HOST_DEVICE constexpr std::uint32_t group_count() const noexcept {
    return layout.group_count;
  }

  //! The columns of the image `words` (host or device) laid out as `layout` says.
  VYRE_HOST_DEVICE static constexpr packed_ref from_words(const std::uint32_t* words,
                                                          const packed_layout& layout) noexcept {
    packed_ref view;
    view.eclass = words + layout.row_eclass_ids();
    view.op = words + layout.row_language_op_ids();
    view.children_offset = words + layout.row_children_offsets();
    view.children_length = words + layout.row_children_lens();
    view.signature = words + layout.row_signatures();
    view.children = words + layout.children();
    view.group_eclass = words + layout.group_eclass_ids();
    view.group_offsets = words + layout.group_offsets();
    view.group_rows = words + layout.group_rows();
    view.layout = layout;
    return view;
  }
};

//! The algorithms' view of a `vyre::egraph` image layout (from `pack`, an image file or a
//! resident image): same counts, and the columns must sit in DESIGN.md's standard order.
//! @throws nothing; `errc::invalid_layout` when `layout` is not the standard layout of its counts.
inline expected<packed_layout> to_packed_layout(const egraph::image_layout& layout) noexcept {
  if (!(layout == egraph::image_layout::for_counts(layout.row_count, layout.child_count,
                                                   layout.eclass_group_count)))
    return fail(error(errc::invalid_layout,
                      "to_packed_layout: the image's columns are not in the standard packed order")
                    .with("rows", layout.row_count)
                    .with("child_entries", layout.child_count)
                    .with("groups", layout.eclass_group_count)
                    .fix("pass the layout of an image written by vyre::egraph::pack"));
  return packed_layout{layout.row_count, layout.child_count, layout.eclass_group_count};
}

namespace detail {
//! The largest row count whose packed image stays addressable with u32 group offsets and row
//! indices, and whose word count fits comfortably in memory sizes (6R + C + 2G + 1 < 2^64).
inline constexpr std::uint32_t max_rows = 0xFFFFFFFEu;
}  // namespace detail

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
