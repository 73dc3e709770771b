// SPDX-License-Identifier: Apache-2.0
//! @file
//! The layout of the packed e-graph image: where each of the nine columns lives, in u32 words.
//! Trivially copyable constexpr aggregates usable on host and device (a device `kernel_view` is
//! built from them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "vyre/core/config.hpp"

namespace vyre::egraph {

//! A column of the image: `length` words starting at word `offset`.
struct column_span {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  //! One past the last word.
  VYRE_HOST_DEVICE constexpr std::uint64_t end() const noexcept { return offset + length; }
  VYRE_HOST_DEVICE constexpr bool is_empty() const noexcept { return length == 0; }
  friend constexpr bool operator==(const column_span&, const column_span&) = default;
};

//! The nine columns, in image order.
enum class image_column : std::uint8_t {
  row_eclass_ids,
  row_language_op_ids,
  row_children_offsets,
  row_children_lens,
  row_signatures,
  children,
  group_eclass_ids,
  group_offsets,
  group_rows,
};
inline constexpr std::size_t image_column_count = 9;

//! The column's name as written in the layout (and DESIGN.md).
VYRE_HOST_DEVICE constexpr const char* image_column_name(image_column column) noexcept {
  switch (column) {
    case image_column::row_eclass_ids: return "row_eclass_ids";
    case image_column::row_language_op_ids: return "row_language_op_ids";
    case image_column::row_children_offsets: return "row_children_offsets";
    case image_column::row_children_lens: return "row_children_lens";
    case image_column::row_signatures: return "row_signatures";
    case image_column::children: return "children";
    case image_column::group_eclass_ids: return "group_eclass_ids";
    case image_column::group_offsets: return "group_offsets";
    case image_column::group_rows: return "group_rows";
  }
  return "unknown column";
}

//! Where every column of a packed image lives, in words, plus the three counts. Build it with
//! `image_layout::for_counts`; `pack` and the image file reader do.
struct image_layout {
  std::uint32_t row_count = 0;           //!< R: e-nodes
  std::uint32_t child_count = 0;         //!< C: entries of the children column
  std::uint32_t eclass_group_count = 0;  //!< G: distinct e-classes that have rows

  column_span row_eclass_ids;        //!< R words: e-class of each row
  column_span row_language_op_ids;   //!< R words: interned op id of each row
  column_span row_children_offsets;  //!< R words: first child of each row in `children`
  column_span row_children_lens;     //!< R words: number of children of each row
  column_span row_signatures;        //!< R words: `row_signature` of each row
  column_span children;              //!< C words: child e-class ids
  column_span group_eclass_ids;      //!< G words: distinct e-class ids, ascending
  column_span group_offsets;         //!< G+1 words: prefix offsets into `group_rows`, last = R
  column_span group_rows;            //!< R words: row indices grouped by e-class, ascending

  //! The layout of an image with these counts: 6R + C + 2G + 1 words (never overflows u64).
  VYRE_HOST_DEVICE static constexpr image_layout for_counts(std::uint32_t rows,
                                                            std::uint32_t child_entries,
                                                            std::uint32_t groups) noexcept {
    image_layout layout;
    layout.row_count = rows;
    layout.child_count = child_entries;
    layout.eclass_group_count = groups;
    std::uint64_t at = 0;
    const auto next = [&at](std::uint64_t length) {
      const column_span span{at, length};
      at += length;
      return span;
    };
    layout.row_eclass_ids = next(rows);
    layout.row_language_op_ids = next(rows);
    layout.row_children_offsets = next(rows);
    layout.row_children_lens = next(rows);
    layout.row_signatures = next(rows);
    layout.children = next(child_entries);
    layout.group_eclass_ids = next(groups);
    layout.group_offsets = next(std::uint64_t{groups} + 1);
    layout.group_rows = next(rows);
    return layout;
  }

  //! Total words of the image (the end of the last column).
  VYRE_HOST_DEVICE constexpr std::uint64_t word_count() const noexcept { return group_rows.end(); }

  //! The span of `column`.
  VYRE_HOST_DEVICE constexpr column_span column(image_column which) const noexcept {
    switch (which) {
      case image_column::row_eclass_ids: return row_eclass_ids;
      case image_column::row_language_op_ids: return row_language_op_ids;
      case image_column::row_children_offsets: return row_children_offsets;
      case image_column::row_children_lens: return row_children_lens;
      case image_column::row_signatures: return row_signatures;
      case image_column::children: return children;
      case image_column::group_eclass_ids: return group_eclass_ids;
      case image_column::group_offsets: return group_offsets;
      case image_column::group_rows: return group_rows;
    }
    return {};
  }

  friend constexpr bool operator==(const image_layout&, const image_layout&) = default;
};

}  // namespace vyre::egraph
