// SPDX-License-Identifier: Apache-2.0
//! @file
//! Memset node parameters and the rules CUDA applies when an instantiated graph's memset node is
//! changed, checked before CUDA is asked (host-only C++20). The device-side rule (same device
//! and allocation kind as the captured destination) is checked in `captured_graph`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "vyre/core/error.hpp"

namespace vyre::graph {

//! A 1-D memset: `width` elements of `element_size` bytes (1, 2 or 4) at `dst`, each set to
//! `value`. `pitch` and `height` mirror `cudaMemsetParams`; an update requires `height == 1`.
struct memset_params {
  void* dst = nullptr;
  std::uint32_t value = 0;
  std::uint32_t element_size = 4;
  std::size_t width = 0;
  std::size_t height = 1;
  std::size_t pitch = 0;

  constexpr bool operator==(const memset_params&) const noexcept = default;
};

//! CUDA's rules for `cudaGraphExecMemsetNodeSetParams`, host side: a non-null destination, a
//! non-zero 1-D size, element size 1, 2 or 4, a value that fits the element, and the same
//! element size and height as the node was captured with (CUDA may reject other shape changes;
//! width changes are tried, the driver decides).
constexpr expected<void> check_memset_update(const memset_params& captured,
                                             const memset_params& next) noexcept {
  if (next.dst == nullptr)
    return fail(error(errc::invalid_argument, "memset update: the destination is null")
                    .fix("point the memset at device memory of the node's device"));
  if (next.element_size != 1 && next.element_size != 2 && next.element_size != 4)
    return fail(error(errc::invalid_argument, "memset update: element size must be 1, 2 or 4")
                    .with("element_size", next.element_size)
                    .fix("memset u8, u16 or u32 elements"));
  if (next.width == 0)
    return fail(error(errc::invalid_argument,
                      "memset update: zero-sized memsets are not "
                      "supported by CUDA graph updates")
                    .with("width", next.width)
                    .fix("skip the node's work by other means, for example a kernel that "
                         "reads the size, or update to at least one element"));
  if (next.height != 1 || captured.height != 1)
    return fail(error(errc::unsupported, "memset update: only 1-D memset nodes can be updated")
                    .with("captured_height", captured.height)
                    .with("height", next.height)
                    .fix("capture the memset as a 1-D memset (cudaMemsetAsync) and keep "
                         "height 1"));
  if (next.element_size != captured.element_size)
    return fail(error(errc::unsupported, "memset update: the element size cannot change")
                    .with("captured_element_size", captured.element_size)
                    .with("element_size", next.element_size)
                    .fix("keep the element size of the captured memset, or re-capture"));
  if (next.element_size < 4 && next.value >= (1u << (8u * next.element_size)))
    return fail(error(errc::out_of_range, "memset update: the value does not fit one element")
                    .with("value", next.value)
                    .with("element_size", next.element_size)
                    .fix("pass a value below 2^(8 * element_size)"));
  if (next.width > static_cast<std::size_t>(-1) / next.element_size)
    return fail(error(errc::overflow, "memset update: width * element_size overflows")
                    .with("width", next.width)
                    .with("element_size", next.element_size)
                    .fix("memset fewer elements"));
  return {};
}

}  // namespace vyre::graph
