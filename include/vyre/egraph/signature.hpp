// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::egraph::row_signature`: the structural hash of an e-node, identical on host and device
//! and usable in constant expressions. Bit-compatible with the Rust vyre-foundation packer.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda/std/bit>
#include <cuda/std/span>

#include "vyre/core/config.hpp"

namespace vyre::egraph {

namespace detail {
inline constexpr std::uint32_t signature_seed = 0xA24BAED4u;
inline constexpr std::uint32_t signature_golden = 0x9E3779B9u;
inline constexpr std::uint32_t signature_multiplier = 0x85EBCA6Bu;

//! One mixing step; u32 wrapping arithmetic throughout.
VYRE_HOST_DEVICE constexpr std::uint32_t signature_step(std::uint32_t h, std::uint32_t v) noexcept {
  const std::uint32_t m = h ^ (v + signature_golden + (h << 6) + (h >> 2));
  return cuda::std::rotl(m, 13) * signature_multiplier;
}
}  // namespace detail

//! Row signature over (op, children length, child_0, child_1, ...); ignores the row's own
//! e-class, and the order of children matters.
//!
//!     h = 0xA24BAED4
//!     for v in (op, len, child_0, ...): m = h ^ (v + 0x9E3779B9 + (h << 6) + (h >> 2))
//!                                       h = rotl(m, 13) * 0x85EBCA6B
//!
//! @note A 32-bit signature collides at scale: use it to bucket rows, compare full rows to
//!       decide equality.
VYRE_HOST_DEVICE constexpr std::uint32_t row_signature(std::uint32_t op,
                                                       const std::uint32_t* children,
                                                       std::uint32_t length) noexcept {
  std::uint32_t h = detail::signature_step(detail::signature_seed, op);
  h = detail::signature_step(h, length);
  for (std::uint32_t i = 0; i < length; ++i) h = detail::signature_step(h, children[i]);
  return h;
}

//! The same signature folded one child at a time, for code that visits the children anyway
//! (the device build folds them into its copy of the children column):
//! `row_signature_fold(... row_signature_fold(row_signature_begin(op, length), child_0) ...)`
//! equals `row_signature(op, children, length)`.
VYRE_HOST_DEVICE constexpr std::uint32_t row_signature_begin(std::uint32_t op,
                                                             std::uint32_t length) noexcept {
  return detail::signature_step(detail::signature_step(detail::signature_seed, op), length);
}
//! @copydoc row_signature_begin
VYRE_HOST_DEVICE constexpr std::uint32_t row_signature_fold(std::uint32_t state,
                                                            std::uint32_t child) noexcept {
  return detail::signature_step(state, child);
}

namespace detail::signature_check {
inline constexpr std::uint32_t children[3] = {7, 0xFFFFFFFFu, 42};
static_assert(row_signature_fold(
                  row_signature_fold(row_signature_fold(row_signature_begin(5, 3), 7), 0xFFFFFFFFu),
                  42) == row_signature(5, children, 3));
static_assert(row_signature_begin(9, 0) == row_signature(9, nullptr, 0));
}  // namespace detail::signature_check

//! @overload
//! @pre `children.size()` fits in u32 (every validated snapshot guarantees it).
VYRE_HOST_DEVICE constexpr std::uint32_t row_signature(
    std::uint32_t op, cuda::std::span<const std::uint32_t> children) noexcept {
  return row_signature(op, children.data(), static_cast<std::uint32_t>(children.size()));
}

}  // namespace vyre::egraph
