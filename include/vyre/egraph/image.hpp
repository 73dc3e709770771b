// SPDX-License-Identifier: Apache-2.0
//! @file
//! The packed image: `host_image` (owning u32 words plus layout), `image_ref` (its non-owning
//! twin, trivially copyable, host and device) and `validate_image` (every invariant of the format,
//! for images that come from outside, such as files).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include <cuda/std/span>

#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/parallel.hpp"
#include "vyre/egraph/detail/host_buffer.hpp"
#include "vyre/egraph/layout.hpp"
#include "vyre/egraph/signature.hpp"

namespace vyre::egraph {

//! A non-owning view of a packed image: the words and their layout. Trivially copyable and
//! usable in device code once `words` points at device memory.
struct image_ref {
  cuda::std::span<const std::uint32_t> words;
  image_layout layout;

  //! The words of `column`.
  //! @pre the layout fits `words` (true for images from `pack` and `validate_image`).
  VYRE_HOST_DEVICE constexpr cuda::std::span<const std::uint32_t> column(
      image_column which) const noexcept {
    const column_span span = layout.column(which);
    return words.subspan(static_cast<std::size_t>(span.offset),
                         static_cast<std::size_t>(span.length));
  }
  //! The columns as the algorithms take them.
  //! @pre the layout fits `words`.
  VYRE_HOST_DEVICE constexpr image_columns columns() const noexcept {
    return image_columns::from_words(words.data(), layout);
  }
};

namespace detail {
//! Owned image words: uninitialized (packing writes every word), huge-page friendly.
using word_storage = std::unique_ptr<std::uint32_t[], free_memory>;

inline expected<word_storage> allocate_words(std::uint64_t count, const char* what) noexcept {
  return allocate_uninitialized<std::uint32_t>(count, what);
}
}  // namespace detail

//! Checks every invariant of the packed image format, for an image that comes from outside
//! (a file, another process). Images from `pack` satisfy them by construction.
//! - `errc::invalid_layout`: the spans do not follow `image_layout::for_counts` of the counts,
//!   or the words are not exactly `layout.word_count()` long (names the column);
//! - `errc::corrupt_data`: a row's children range leaves the children column, a stored
//!   signature differs from `row_signature`, group ids are not strictly ascending, group offsets
//!   do not run from 0 to R through non-empty groups, a grouped row is out of range, out of
//!   order or of another e-class, or a child names an e-class with no group.
//! Each check names the first bad item, whatever `threads` is: large images are checked on up
//! to `threads` host threads (0: every core), small ones on the caller's thread.
inline expected<void> validate_image(const image_ref& image, unsigned threads = 0) noexcept {
  const image_layout& layout = image.layout;
  const image_layout expected_layout =
      image_layout::for_counts(layout.row_count, layout.child_count, layout.group_count);
  for (std::size_t c = 0; c < image_column_count; ++c) {
    const auto which = static_cast<image_column>(c);
    if (layout.column(which) != expected_layout.column(which))
      return fail(
          error(errc::invalid_layout, "validate_image: column span does not follow from the counts")
              .with("offset", layout.column(which).offset)
              .with("length", layout.column(which).length)
              .with("expected_offset", expected_layout.column(which).offset)
              .with("expected_length", expected_layout.column(which).length)
              .fix("rebuild the layout with image_layout::for_counts")
              .about(image_column_name(which)));
  }
  if (image.words.size() != layout.word_count())
    return fail(error(errc::invalid_layout, "validate_image: word count differs from the layout")
                    .with("words", image.words.size())
                    .with("layout_words", layout.word_count())
                    .fix("pass the whole image, exactly layout.word_count() words"));

  const std::uint32_t rows = layout.row_count;
  const std::uint32_t groups = layout.group_count;
  const auto eclass_ids = image.column(image_column::row_eclass_ids);
  const auto op_ids = image.column(image_column::row_language_op_ids);
  const auto offsets = image.column(image_column::row_children_offsets);
  const auto lengths = image.column(image_column::row_children_lens);
  const auto signatures = image.column(image_column::row_signatures);
  const auto children = image.column(image_column::children);
  const auto group_ids = image.column(image_column::group_eclass_ids);
  const auto group_offsets = image.column(image_column::group_offsets);
  const auto group_rows = image.column(image_column::group_rows);
  // Items per thread: below this a thread costs more than it saves.
  constexpr std::size_t grain = std::size_t{1} << 16;

  const auto children_end = [&](std::size_t r) { return std::uint64_t{offsets[r]} + lengths[r]; };
  const auto signature_of = [&](std::size_t r) {
    return row_signature(op_ids[r], children.data() + offsets[r], lengths[r]);
  };
  // A group's first bad grouped row, or `end` when its rows are all in order.
  const auto first_bad_member = [&](std::uint32_t g) {
    const std::uint32_t begin = group_offsets[g];
    const std::uint32_t end = group_offsets[g + 1];
    for (std::uint32_t i = begin; i < end; ++i) {
      const std::uint32_t r = group_rows[i];
      if (r >= rows || eclass_ids[r] != group_ids[g] || (i > begin && r <= group_rows[i - 1]))
        return i;
    }
    return end;
  };
  const auto bad_span = [&](std::uint32_t g) {
    return group_offsets[g + 1] <= group_offsets[g] || group_offsets[g + 1] > rows;
  };
  // Every child names a group. A bit per id up to the largest group id when that takes no more
  // memory than the image (a lookup in cache instead of a binary search over all the groups);
  // sparse ids, or no memory for the bits, keep the binary search.
  const std::uint64_t bit_words = groups == 0 ? 0 : (std::uint64_t{group_ids[groups - 1]} >> 6) + 1;
  std::unique_ptr<std::uint64_t[]> has_group;
  if (bit_words != 0 && bit_words * 8 <= image.words.size_bytes())
    has_group.reset(new (std::nothrow) std::uint64_t[bit_words]());
  if (has_group)
    for (const std::uint32_t id : group_ids)
      if ((id >> 6) < bit_words) has_group[id >> 6] |= std::uint64_t{1} << (id & 63);
  const auto orphan_child = [&](std::size_t i) {
    const std::uint32_t id = children[i];
    if (!has_group) return !std::binary_search(group_ids.begin(), group_ids.end(), id);
    return (id >> 6) >= bit_words || (has_group[id >> 6] >> (id & 63) & 1) == 0;
  };

  // The four scans in one fork-join; the errors below come in the order of the rules.
  enum check : std::size_t { row_check, group_order, group_check, child_check };
  const std::array<std::size_t, 4> first_bad = vyre::detail::parallel_find_first(
      threads, {rows, groups, groups, children.size()}, grain,
      [&](std::size_t r) {
        return children_end(r) > children.size() || signatures[r] != signature_of(r);
      },
      [&](std::size_t g) { return g != 0 && group_ids[g] <= group_ids[g - 1]; },
      [&](std::size_t i) {
        const auto g = static_cast<std::uint32_t>(i);
        return bad_span(g) || first_bad_member(g) != group_offsets[g + 1];
      },
      orphan_child);
  if (const std::size_t r = first_bad[row_check]; r != rows) {
    if (children_end(r) > children.size())
      return fail(error(errc::corrupt_data, "validate_image: row children range leaves the column")
                      .with("row", r)
                      .with("children_end", children_end(r))
                      .with("child_entries", children.size())
                      .fix("the image is corrupt: pack the snapshot again"));
    return fail(error(errc::corrupt_data, "validate_image: stored row signature is wrong")
                    .with("row", r)
                    .with("stored", signatures[r])
                    .with("computed", signature_of(r))
                    .fix("the image is corrupt: pack the snapshot again"));
  }
  if (const std::size_t g = first_bad[group_order]; g != groups)
    return fail(error(errc::corrupt_data, "validate_image: group e-class ids not ascending")
                    .with("group", g)
                    .with("eclass", group_ids[g])
                    .with("previous", group_ids[g - 1])
                    .fix("the image is corrupt: pack the snapshot again"));
  if (group_offsets[0] != 0 || group_offsets[groups] != rows)
    return fail(error(errc::corrupt_data,
                      "validate_image: group offsets must start at 0 and end at the row count")
                    .with("first", group_offsets[0])
                    .with("last", group_offsets[groups])
                    .with("rows", rows)
                    .fix("the image is corrupt: pack the snapshot again"));
  if (first_bad[group_check] != groups) {
    const auto g = static_cast<std::uint32_t>(first_bad[group_check]);
    if (bad_span(g))
      return fail(error(errc::corrupt_data,
                        "validate_image: group offsets must increase (every group has a row)")
                      .with("group", g)
                      .with("begin", group_offsets[g])
                      .with("end", group_offsets[g + 1])
                      .fix("the image is corrupt: pack the snapshot again"));
    const std::uint32_t i = first_bad_member(g);
    return fail(error(errc::corrupt_data,
                      "validate_image: grouped row out of range, out of order or of another "
                      "e-class")
                    .with("group", g)
                    .with("position", i)
                    .with("row", group_rows[i])
                    .fix("the image is corrupt: pack the snapshot again"));
  }
  if (const std::size_t i = first_bad[child_check]; i != children.size())
    return fail(error(errc::corrupt_data, "validate_image: a child names an e-class with no group")
                    .with("child_entry", i)
                    .with("child_eclass", children[i])
                    .fix("the image is corrupt: pack the snapshot again"));
  return {};
}

//! The packed image: one u32 slab holding the nine columns, plus its layout. Move-only (it can
//! be large); `clone` copies explicitly.
class host_image {
 public:
  VYRE_HOST_MOVE_ONLY_MEMBERS(host_image);  // host-only (vyre/detail/host_special_members.hpp)
  host_image(const host_image&) = delete;
  host_image& operator=(const host_image&) = delete;

  //! The words, host byte order.
  cuda::std::span<const std::uint32_t> words() const noexcept {
    return {words_.get(), static_cast<std::size_t>(layout_.word_count())};
  }
  const image_layout& layout() const noexcept { return layout_; }
  //! A non-owning view of the words and layout (valid while this image lives and is not
  //! moved from): what files, validation and uploads take.
  image_ref ref() const noexcept { return {words(), layout_}; }
  //! The nine columns (the unchecked view the algorithms take), host pointers.
  image_columns columns() const noexcept { return ref().columns(); }
  //! The words of one column.
  cuda::std::span<const std::uint32_t> column(image_column which) const noexcept {
    return ref().column(which);
  }

  //! A deep copy.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, host_image> clone() const {
    return apply_error_policy<OnError>(clone_impl());
  }

  //! An image from words and layout that come from outside, after `validate_image`.
  template <class OnError = on_error::throw_exception>
  static result_t<OnError, host_image> from_words(cuda::std::span<const std::uint32_t> words,
                                                  const image_layout& layout) {
    return apply_error_policy<OnError>(from_words_impl(words, layout));
  }

  //! An image of `layout` written by `fill(std::uint32_t* words)`, which must write all
  //! `layout.word_count()` words as the format says (no validation): for packers of other
  //! inputs, such as the algorithms' packer of raw rows. `fill` returns `expected<void>`; its
  //! error is returned and the words freed.
  template <class Fill>
  static expected<host_image> written(const image_layout& layout, Fill&& fill) {
    VYRE_TRY_ASSIGN(auto storage, detail::allocate_words(layout.word_count(), "host_image words"));
    VYRE_TRY(fill(storage.get()));
    return adopt(std::move(storage), layout);
  }

  //! Internal: adopts words written by `pack` (no validation).
  static host_image adopt(detail::word_storage words, const image_layout& layout) noexcept {
    host_image image;
    image.words_ = std::move(words);
    image.layout_ = layout;
    return image;
  }

  static expected<host_image> from_words_impl(cuda::std::span<const std::uint32_t> words,
                                              const image_layout& layout) noexcept {
    VYRE_TRY(validate_image(image_ref{words, layout}));
    VYRE_TRY_ASSIGN(auto storage, detail::allocate_words(words.size(), "host_image words"));
    if (!words.empty()) std::memcpy(storage.get(), words.data(), words.size_bytes());
    return adopt(std::move(storage), layout);
  }

 private:
  expected<host_image> clone_impl() const noexcept {
    VYRE_TRY_ASSIGN(auto storage, detail::allocate_words(layout_.word_count(), "host_image clone"));
    if (layout_.word_count() != 0) std::memcpy(storage.get(), words_.get(), words().size_bytes());
    return adopt(std::move(storage), layout_);
  }

  detail::word_storage words_;
  // A default-constructed image holds nothing: every span empty, zero words (unlike the pack of
  // an empty snapshot, which has its one group-offset word).
  image_layout layout_;
};

VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(host_image);

}  // namespace vyre::egraph
