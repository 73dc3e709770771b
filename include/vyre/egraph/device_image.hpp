// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::egraph::device_image`: an owning packed image in device memory, as the device build
//! (`algorithms::build`) and the congruence rebuild make it. The host twin is `host_image`;
//! both give their columns as `image_columns` (the unchecked view); user kernels take the
//! checked `kernel_view` of an image uploaded to the resident store (`resident.cuh`).
#pragma once

#include <cstdint>
#include <utility>

#include "vyre/egraph/layout.hpp"
#include "vyre/runtime/device_array.hpp"

namespace vyre::egraph {

//! An owning packed image in device memory: the words and their layout.
//! @note Its memory comes from the backend's allocation policy and returns to it, in stream
//!       order on the stream it was made on: keep that stream and the backend alive until the
//!       image is destroyed. The device build sizes the buffer before it knows the group count,
//!       so it may hold up to 2 * (rows - groups) words past `word_count()`.
class device_image {
 public:
  device_image() noexcept;
  device_image(device_array<std::uint32_t> words, const image_layout& layout) noexcept
      : words_(std::move(words)), layout_(layout) {}
  // Host-only special members, defaulted out of line: nvcc would otherwise infer them
  // __host__ __device__ (the type is held in cuda::std::expected) and reject their calls to
  // host-only members.
  ~device_image();
  device_image(device_image&&) noexcept;
  device_image& operator=(device_image&&) noexcept;

  const image_layout& layout() const noexcept { return layout_; }
  //! The image words (device memory), `layout().word_count()` of them.
  const std::uint32_t* words() const noexcept { return words_.get(); }
  std::uint32_t* words() noexcept { return words_.get(); }
  std::uint64_t word_count() const noexcept { return layout_.word_count(); }
  //! The nine columns as device pointers (valid while this image lives and is not moved from).
  image_columns columns() const noexcept {
    return image_columns::from_words(words_.get(), layout_);
  }
  [[deprecated("use columns(): ref() names the owning-type/_ref pair of host_image")]] image_columns
  ref() const noexcept {
    return columns();
  }

 private:
  device_array<std::uint32_t> words_;
  image_layout layout_;
};

inline device_image::device_image() noexcept = default;
inline device_image::~device_image() = default;
inline device_image::device_image(device_image&&) noexcept = default;
inline device_image& device_image::operator=(device_image&&) noexcept = default;

}  // namespace vyre::egraph
