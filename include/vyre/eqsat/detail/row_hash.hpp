// SPDX-License-Identifier: Apache-2.0
//! @file
//! The hash and equality of a row's argument columns, shared by the CPU engine's hash-consed
//! tables and the device hash-cons (`device/hashcons.cuh`), and the search of a table sorted by
//! its keys (the GPU engine's lookups and subsumed rows): host and device.
#pragma once

#include <cstddef>
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

//! The row of `key[0, width - 1)` among the `rows` rows of `width` words at `cells`, sorted by
//! their first `width - 1` columns (lexicographically, as the GPU engine's rebuild leaves a
//! table), or `rows` when none has it: a binary search.
VYRE_HOST_DEVICE inline std::uint32_t find_sorted_row(const std::uint32_t* cells,
                                                      std::uint32_t rows, std::uint32_t width,
                                                      const std::uint32_t* key) noexcept {
  const std::uint32_t arity = width - 1;
  std::uint32_t lo = 0, hi = rows;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    const std::uint32_t* row = cells + static_cast<std::size_t>(mid) * width;
    std::uint32_t c = 0;
    while (c < arity && row[c] == key[c]) ++c;
    if (c < arity && row[c] < key[c])
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == rows || !same_row(cells + static_cast<std::size_t>(lo) * width, key, arity))
    return rows;
  return lo;
}

}  // namespace vyre::eqsat::detail
