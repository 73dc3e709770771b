// SPDX-License-Identifier: Apache-2.0
//! @file
//! The hash and equality of a row's argument columns, shared by the CPU engine's hash-consed
//! tables and the device hash-cons (`device/hashcons.cuh`): host and device.
#pragma once

#include <cstdint>

#include "vyre/core/config.hpp"

namespace vyre::eqsat::detail {

//! A 64-bit mix of `key[0, n)` (each word folded in, then a final avalanche).
VYRE_HOST_DEVICE inline std::uint64_t row_hash(const std::uint32_t* key, std::uint32_t n) noexcept {
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  for (std::uint32_t i = 0; i < n; ++i) {
    h ^= key[i];
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h;
}

//! Whether `a[0, n)` and `b[0, n)` are equal.
VYRE_HOST_DEVICE inline bool same_row(const std::uint32_t* a, const std::uint32_t* b,
                                      std::uint32_t n) noexcept {
  for (std::uint32_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace vyre::eqsat::detail
