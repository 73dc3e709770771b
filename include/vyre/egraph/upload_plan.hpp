// SPDX-License-Identifier: Apache-2.0
//! @file
//! Upload planning: the byte layout of an image on the device (each column's byte offset and
//! length, checked), as an owning plan (holds the image) or a borrowed one (refers to words).
//! `backend.upload` (egraph/resident.cuh) does the copy.
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

//! The device byte layout of an image: the word layout times 4, column by column (checked).
struct upload_layout {
  image_layout words;  //!< the word layout it was computed from
  //! Each column's bytes in the image allocation, indexed by `image_column`.
  cuda::std::array<column_span, image_column_count> byte_spans{};
  std::uint64_t total_bytes = 0;

  //! The bytes of `which`.
  VYRE_HOST_DEVICE constexpr column_span column(image_column which) const noexcept {
    return byte_spans[column_index(which)];
  }
  //! The first byte of `which`.
  VYRE_HOST_DEVICE constexpr std::uint64_t offset(image_column which) const noexcept {
    return byte_spans[column_index(which)].offset;
  }
};

namespace detail {
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
    result.byte_spans[c] = column_span{*offset, *length};
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
  upload_plan(host_image image, const upload_layout& layout) noexcept;
  // Out-of-line special members: see host_image (nvcc would infer them host-device).
  ~upload_plan();
  upload_plan(upload_plan&&) noexcept;
  upload_plan& operator=(upload_plan&&) noexcept;
  const upload_layout& layout() const noexcept { return layout_; }
  std::uint64_t total_bytes() const noexcept { return layout_.total_bytes; }
  const host_image& image() const noexcept { return image_; }
  cuda::std::span<const std::uint32_t> words() const noexcept { return image_.words(); }
  cuda::std::span<const std::byte> bytes() const noexcept {
    return {reinterpret_cast<const std::byte*>(image_.words().data()), image_.words().size_bytes()};
  }
  //! The borrowed view of this plan (valid while this plan lives).
  upload_plan_ref ref() const noexcept { return {image_.words(), layout_}; }

 private:
  host_image image_;
  upload_layout layout_;
};

inline upload_plan::upload_plan(host_image image, const upload_layout& layout) noexcept
    : image_(std::move(image)), layout_(layout) {}
inline upload_plan::~upload_plan() = default;
inline upload_plan::upload_plan(upload_plan&&) noexcept = default;
inline upload_plan& upload_plan::operator=(upload_plan&&) noexcept = default;

//! Plans the upload of an image it takes over: the plan owns the words.
//! @throws vyre::error_exception `errc::invalid_layout` or `errc::overflow` naming the column.
template <class OnError = on_error::throw_exception>
result_t<OnError, upload_plan> plan_upload(host_image&& image) {
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
result_t<OnError, upload_plan_ref> plan_upload(const host_image& image) {
  return plan_upload<OnError>(image.ref());
}

}  // namespace vyre::egraph
