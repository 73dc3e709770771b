// SPDX-License-Identifier: Apache-2.0
//! @file
//! Upload planning: the byte layout of an image on the device (each column's byte offset and
//! length, checked), as an owning plan (holds the image) or a borrowed one (refers to words).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda/std/span>

#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::egraph {

//! A column on the device: `length` bytes at byte `offset` of the image allocation.
struct byte_span {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  VYRE_HOST_DEVICE constexpr std::uint64_t end() const noexcept { return offset + length; }
  VYRE_HOST_DEVICE constexpr bool is_empty() const noexcept { return length == 0; }
  friend constexpr bool operator==(const byte_span&, const byte_span&) = default;
};

//! The device byte layout of an image: the word layout times 4, column by column.
struct upload_layout {
  image_layout words;  //!< the word layout it was computed from
  byte_span row_eclass_ids;
  byte_span row_language_op_ids;
  byte_span row_children_offsets;
  byte_span row_children_lens;
  byte_span row_signatures;
  byte_span children;
  byte_span group_eclass_ids;
  byte_span group_offsets;
  byte_span group_rows;
  std::uint64_t total_bytes = 0;

  VYRE_HOST_DEVICE constexpr byte_span column(image_column which) const noexcept {
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
};

namespace detail {
inline byte_span& upload_column(upload_layout& layout, image_column which) noexcept {
  switch (which) {
    case image_column::row_eclass_ids: return layout.row_eclass_ids;
    case image_column::row_language_op_ids: return layout.row_language_op_ids;
    case image_column::row_children_offsets: return layout.row_children_offsets;
    case image_column::row_children_lens: return layout.row_children_lens;
    case image_column::row_signatures: return layout.row_signatures;
    case image_column::children: return layout.children;
    case image_column::group_eclass_ids: return layout.group_eclass_ids;
    case image_column::group_offsets: return layout.group_offsets;
    case image_column::group_rows: break;
  }
  return layout.group_rows;
}

//! Byte layout of `layout` over `word_count` words: every span must lie inside the words, and
//! every word-to-byte conversion is checked (the error names the column).
inline expected<upload_layout> compute_upload_layout(const image_layout& layout,
                                                     std::uint64_t word_count) noexcept {
  upload_layout result;
  result.words = layout;
  for (std::size_t c = 0; c < image_column_count; ++c) {
    const auto which = static_cast<image_column>(c);
    const column_span span = layout.column(which);
    VYRE_TRY_ASSIGN(const std::uint64_t end,
                    checked_add<std::uint64_t>(span.offset, span.length,
                                               "plan_upload: column end overflows u64"));
    if (end > word_count)
      return fail(error(errc::invalid_layout, "plan_upload: column ends past the image words")
                      .with("offset", span.offset)
                      .with("length", span.length)
                      .with("words", word_count)
                      .fix("use the layout the image was packed with")
                      .about(image_column_name(which)));
    auto offset = words_to_bytes(span.offset, "plan_upload: column byte offset overflows u64");
    auto length = words_to_bytes(span.length, "plan_upload: column byte length overflows u64");
    if (!offset) return fail(offset.error().about(image_column_name(which)));
    if (!length) return fail(length.error().about(image_column_name(which)));
    upload_column(result, which) = byte_span{*offset, *length};
  }
  auto total = words_to_bytes(word_count, "plan_upload: image byte length overflows u64");
  if (!total) return fail(total.error().about("image"));
  result.total_bytes = *total;
  return result;
}
}  // namespace detail

//! A borrowed upload plan: the byte layout plus a view of words owned elsewhere (no copy).
class upload_plan_ref {
 public:
  upload_plan_ref(cuda::std::span<const std::uint32_t> words, const upload_layout& layout) noexcept
      : words_(words), layout_(layout) {}
  const upload_layout& layout() const noexcept { return layout_; }
  std::uint64_t total_bytes() const noexcept { return layout_.total_bytes; }
  cuda::std::span<const std::uint32_t> words() const noexcept { return words_; }
  //! The bytes to copy to the device (host byte order; stage them with the staging policy).
  cuda::std::span<const std::byte> bytes() const noexcept {
    return {reinterpret_cast<const std::byte*>(words_.data()), words_.size_bytes()};
  }

 private:
  cuda::std::span<const std::uint32_t> words_;
  upload_layout layout_;
};

//! An owning upload plan: holds the image it describes.
class upload_plan {
 public:
  upload_plan(device_image image, const upload_layout& layout) noexcept;
  // Out-of-line special members: see device_image (nvcc would infer them host-device).
  ~upload_plan();
  upload_plan(upload_plan&&) noexcept;
  upload_plan& operator=(upload_plan&&) noexcept;
  const upload_layout& layout() const noexcept { return layout_; }
  std::uint64_t total_bytes() const noexcept { return layout_.total_bytes; }
  const device_image& image() const noexcept { return image_; }
  cuda::std::span<const std::uint32_t> words() const noexcept { return image_.words(); }
  cuda::std::span<const std::byte> bytes() const noexcept {
    return {reinterpret_cast<const std::byte*>(image_.words().data()), image_.words().size_bytes()};
  }
  //! The borrowed view of this plan (valid while this plan lives).
  upload_plan_ref ref() const noexcept { return {image_.words(), layout_}; }

 private:
  device_image image_;
  upload_layout layout_;
};

inline upload_plan::upload_plan(device_image image, const upload_layout& layout) noexcept
    : image_(std::move(image)), layout_(layout) {}
inline upload_plan::~upload_plan() = default;
inline upload_plan::upload_plan(upload_plan&&) noexcept = default;
inline upload_plan& upload_plan::operator=(upload_plan&&) noexcept = default;

//! Plans the upload of an image it takes over: the plan owns the words.
//! @throws vyre::error_exception `errc::invalid_layout` or `errc::overflow` naming the column.
template <class OnError = on_error::throw_exception>
result_t<OnError, upload_plan> plan_upload(device_image&& image) {
  auto run = [&]() -> expected<upload_plan> {
    VYRE_TRY_ASSIGN(const upload_layout layout,
                    detail::compute_upload_layout(image.layout(), image.words().size()));
    return upload_plan(std::move(image), layout);
  };
  return apply_error_policy<OnError>(run());
}

//! Plans the upload of words owned elsewhere: the plan borrows them (no copy).
//! @throws vyre::error_exception `errc::invalid_layout` when a span leaves the words, or
//!         `errc::overflow` naming the column whose byte offset or length overflows.
template <class OnError = on_error::throw_exception>
result_t<OnError, upload_plan_ref> plan_upload(const image_ref& image) {
  auto run = [&]() -> expected<upload_plan_ref> {
    VYRE_TRY_ASSIGN(const upload_layout layout,
                    detail::compute_upload_layout(image.layout, image.words.size()));
    return upload_plan_ref(image.words, layout);
  };
  return apply_error_policy<OnError>(run());
}

//! @overload Borrows the words of `image` (which must outlive the plan).
template <class OnError = on_error::throw_exception>
result_t<OnError, upload_plan_ref> plan_upload(const device_image& image) {
  return plan_upload<OnError>(image.ref());
}

}  // namespace vyre::egraph
