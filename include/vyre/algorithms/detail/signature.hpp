// SPDX-License-Identifier: Apache-2.0
//! @file
//! The row signature the algorithms use: the image's (docs/image_format.md), exactly
//! `vyre::egraph::row_signature`, plus the same hash folded one child at a time (the build folds it
//! into its copy of the children instead of reading them twice).
#pragma once

#include <cstdint>

#include "vyre/egraph/signature.hpp"

namespace vyre::algorithms::detail {

using vyre::egraph::row_signature;

//! The signature state after a row's op and children length; fold each child in with
//! `signature_fold`: the result equals `row_signature(op, children, length)`.
VYRE_HOST_DEVICE constexpr std::uint32_t signature_begin(std::uint32_t op,
                                                         std::uint32_t length) noexcept {
  using namespace vyre::egraph::detail;
  return signature_step(signature_step(signature_seed, op), length);
}
VYRE_HOST_DEVICE constexpr std::uint32_t signature_fold(std::uint32_t state,
                                                        std::uint32_t child) noexcept {
  return vyre::egraph::detail::signature_step(state, child);
}

namespace signature_check {
inline constexpr std::uint32_t children[3] = {7, 0xFFFFFFFFu, 42};
static_assert(signature_fold(signature_fold(signature_fold(signature_begin(5, 3), 7), 0xFFFFFFFFu),
                             42) == row_signature(5, children, 3));
static_assert(signature_begin(9, 0) == row_signature(9, nullptr, 0));
}  // namespace signature_check

}  // namespace vyre::algorithms::detail
