// SPDX-License-Identifier: Apache-2.0
//! @file
//! The row signature of DESIGN.md, private to the algorithms until they are switched to
//! `vyre::egraph::row_signature` (same definition, bit for bit).
#pragma once

#include <cstdint>

#include <cuda/std/bit>

#include "vyre/core/config.hpp"

namespace vyre::algorithms::detail {

inline constexpr std::uint32_t signature_seed = 0xA24BAED4u;

//! One mixing step; u32 wrapping arithmetic throughout.
VYRE_HOST_DEVICE constexpr std::uint32_t signature_step(std::uint32_t h, std::uint32_t v) noexcept {
  const std::uint32_t m = h ^ (v + 0x9E3779B9u + (h << 6) + (h >> 2));
  return cuda::std::rotl(m, 13) * 0x85EBCA6Bu;
}

//! Signature over (op, length, child_0, ...): ignores the row's e-class; child order matters.
VYRE_HOST_DEVICE constexpr std::uint32_t row_signature(std::uint32_t op,
                                                       const std::uint32_t* children,
                                                       std::uint32_t length) noexcept {
  std::uint32_t h = signature_step(signature_seed, op);
  h = signature_step(h, length);
  for (std::uint32_t i = 0; i < length; ++i) h = signature_step(h, children[i]);
  return h;
}

}  // namespace vyre::algorithms::detail
