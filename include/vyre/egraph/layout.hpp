// SPDX-License-Identifier: Apache-2.0
//! @file
//! The packed e-graph image, described once: its nine columns (`image_column`, one name table),
//! their lengths from the three counts (`image_counts`, `column_length`), where each column
//! lives (`image_layout`, in words; `upload_layout` reuses it in bytes) and the one non-owning
//! view of the columns that user kernels (`kernel_view`, checked) and the algorithms
//! (unchecked) both take (`image_columns`). The format itself is specified in
//! docs/image_format.md. Everything here is a trivially copyable constexpr aggregate, usable on
//! host and device.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda/std/array>
#include <cuda/std/span>

#include "vyre/core/config.hpp"

namespace vyre::egraph {

//! The nine columns, in image order.
enum class image_column : std::uint8_t {
  row_eclass_ids,        //!< R: e-class of each row
  row_language_op_ids,   //!< R: interned op id of each row
  row_children_offsets,  //!< R: first child of each row in `children`
  row_children_lens,     //!< R: number of children of each row
  row_signatures,        //!< R: `row_signature` of each row
  children,              //!< C: child e-class ids, row after row
  group_eclass_ids,      //!< G: distinct e-class ids, ascending
  group_offsets,         //!< G + 1: prefix offsets into `group_rows`, last = R
  group_rows,            //!< R: row indices grouped by e-class, ascending inside a group
};
inline constexpr std::size_t image_column_count = 9;

//! The column names, indexed by `image_column` (the spelling of layouts, errors and the spec).
inline constexpr cuda::std::array<const char*, image_column_count> image_column_names{
    "row_eclass_ids",    "row_language_op_ids", "row_children_offsets",
    "row_children_lens", "row_signatures",      "children",
    "group_eclass_ids",  "group_offsets",       "group_rows"};

VYRE_HOST_DEVICE constexpr std::size_t column_index(image_column column) noexcept {
  return static_cast<std::size_t>(column);
}

//! The column's name as written in the layout and the spec.
constexpr const char* image_column_name(image_column column) noexcept {
  return column_index(column) < image_column_count ? image_column_names[column_index(column)]
                                                   : "unknown column";
}

//! The three counts every column length follows from.
struct image_counts {
  std::uint32_t row_count = 0;    //!< R: e-nodes
  std::uint32_t child_count = 0;  //!< C: entries of the children column
  std::uint32_t group_count = 0;  //!< G: distinct e-classes that have rows
  friend constexpr bool operator==(const image_counts&, const image_counts&) = default;
};

//! Length in words of `column` in an image with `counts` (never overflows u64).
VYRE_HOST_DEVICE constexpr std::uint64_t column_length(image_column column,
                                                       const image_counts& counts) noexcept {
  switch (column) {
    case image_column::children:
      return counts.child_count;
    case image_column::group_eclass_ids:
      return counts.group_count;
    case image_column::group_offsets:
      return std::uint64_t{counts.group_count} + 1;
    default:
      return counts.row_count;
  }
}

//! A column: `length` units starting at `offset` (words in an `image_layout`, bytes in an
//! `upload_layout`).
struct column_span {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  //! One past the last unit.
  VYRE_HOST_DEVICE constexpr std::uint64_t end() const noexcept { return offset + length; }
  VYRE_HOST_DEVICE constexpr bool is_empty() const noexcept { return length == 0; }
  friend constexpr bool operator==(const column_span&, const column_span&) = default;
};

//! Where every column of a packed image lives, in words, plus the three counts. Build it with
//! `image_layout::for_counts`; `pack` and the image file reader do.
struct image_layout {
  std::uint32_t row_count = 0;    //!< R: e-nodes
  std::uint32_t child_count = 0;  //!< C: entries of the children column
  std::uint32_t group_count = 0;  //!< G: distinct e-classes that have rows
  //! The span of each column, indexed by `image_column`.
  cuda::std::array<column_span, image_column_count> spans{};

  //! The standard layout of an image with these counts: the columns back to back in image
  //! order, 6R + C + 2G + 1 words.
  VYRE_HOST_DEVICE static constexpr image_layout for_counts(std::uint32_t rows,
                                                            std::uint32_t child_entries,
                                                            std::uint32_t groups) noexcept {
    image_layout layout;
    layout.row_count = rows;
    layout.child_count = child_entries;
    layout.group_count = groups;
    std::uint64_t at = 0;
    for (std::size_t c = 0; c < image_column_count; ++c) {
      const std::uint64_t length = column_length(static_cast<image_column>(c), layout.counts());
      layout.spans[c] = column_span{at, length};
      at += length;
    }
    return layout;
  }
  VYRE_HOST_DEVICE static constexpr image_layout for_counts(const image_counts& counts) noexcept {
    return for_counts(counts.row_count, counts.child_count, counts.group_count);
  }

  VYRE_HOST_DEVICE constexpr image_counts counts() const noexcept {
    return {row_count, child_count, group_count};
  }
  //! The span of `which`.
  VYRE_HOST_DEVICE constexpr column_span column(image_column which) const noexcept {
    return spans[column_index(which)];
  }
  //! The first word of `which`.
  VYRE_HOST_DEVICE constexpr std::uint64_t offset(image_column which) const noexcept {
    return spans[column_index(which)].offset;
  }
  //! Total words of the image (the end of the last column).
  VYRE_HOST_DEVICE constexpr std::uint64_t word_count() const noexcept {
    return spans[column_index(image_column::group_rows)].end();
  }
  //! Whether the columns sit where `for_counts` puts them (what the algorithms and
  //! `image_columns::from_words` assume).
  VYRE_HOST_DEVICE constexpr bool is_standard() const noexcept {
    return *this == for_counts(row_count, child_count, group_count);
  }

  friend constexpr bool operator==(const image_layout&, const image_layout&) = default;
};

//! The nine columns of one packed image (host or device pointers, the caller knows which) and
//! its counts: non-owning, trivially copyable, passed by value (also to kernels). The
//! algorithms take it as it is; user kernels get it checked through `kernel_view`.
struct image_columns {
  //! The first word of each column, indexed by `image_column` (null for an empty column).
  cuda::std::array<const std::uint32_t*, image_column_count> pointers{};
  image_counts counts{};

  //! The columns of the standard-layout image whose first word is `words`.
  //! @pre `layout.is_standard()` or at least every span lies inside the words.
  VYRE_HOST_DEVICE static constexpr image_columns from_words(const std::uint32_t* words,
                                                             const image_layout& layout) noexcept {
    image_columns view;
    for (std::size_t c = 0; c < image_column_count; ++c)
      view.pointers[c] = words + layout.spans[c].offset;
    view.counts = layout.counts();
    return view;
  }

  VYRE_HOST_DEVICE constexpr std::uint32_t row_count() const noexcept { return counts.row_count; }
  VYRE_HOST_DEVICE constexpr std::uint32_t child_count() const noexcept {
    return counts.child_count;
  }
  VYRE_HOST_DEVICE constexpr std::uint32_t group_count() const noexcept {
    return counts.group_count;
  }

  //! The whole of `which`, as long as the counts say.
  VYRE_HOST_DEVICE constexpr cuda::std::span<const std::uint32_t> column(
      image_column which) const noexcept {
    const std::uint32_t* first = pointers[column_index(which)];
    return {first, first == nullptr ? 0 : static_cast<std::size_t>(column_length(which, counts))};
  }

  // Named columns: unchecked pointers for kernels whose indices are right by construction.
  VYRE_HOST_DEVICE constexpr const std::uint32_t* row_eclass_ids() const noexcept {
    return pointers[column_index(image_column::row_eclass_ids)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* row_language_op_ids() const noexcept {
    return pointers[column_index(image_column::row_language_op_ids)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* row_children_offsets() const noexcept {
    return pointers[column_index(image_column::row_children_offsets)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* row_children_lens() const noexcept {
    return pointers[column_index(image_column::row_children_lens)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* row_signatures() const noexcept {
    return pointers[column_index(image_column::row_signatures)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* children() const noexcept {
    return pointers[column_index(image_column::children)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* group_eclass_ids() const noexcept {
    return pointers[column_index(image_column::group_eclass_ids)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* group_offsets() const noexcept {
    return pointers[column_index(image_column::group_offsets)];
  }
  VYRE_HOST_DEVICE constexpr const std::uint32_t* group_rows() const noexcept {
    return pointers[column_index(image_column::group_rows)];
  }
};

}  // namespace vyre::egraph
