// SPDX-License-Identifier: Apache-2.0
//! @file
//! Staging: copy host words into a buffer bound for the device, in the image's little-endian
//! byte order, as the staging policy says (byte-swap on big-endian hosts or when forced).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda/std/bit>
#include <cuda/std/span>

#include "vyre/core/policies.hpp"

namespace vyre::staging {

//! Copies `source` into the front of `destination`, swapping bytes when `Policy` says so.
//! @returns `errc::invalid_argument` naming both lengths when `destination` is too small.
template <policy Policy>
expected<void> stage_words(cuda::std::span<const std::uint32_t> source,
                           cuda::std::span<std::uint32_t> destination) noexcept {
  if (destination.size() < source.size())
    return fail(error(errc::invalid_argument, "staging::stage_words: destination too small")
                    .with("source_words", source.size())
                    .with("destination_words", destination.size())
                    .fix("pass a staging buffer of at least source_words words"));
  if constexpr (swaps_bytes<Policy>) {
    for (std::size_t i = 0; i < source.size(); ++i)
      destination[i] = cuda::std::byteswap(source[i]);
  } else if (!source.empty()) {
    std::memcpy(destination.data(), source.data(), source.size_bytes());
  }
  return {};
}

//! The word a little-endian reader sees for `word` staged under `Policy` (constexpr helper).
template <policy Policy>
VYRE_HOST_DEVICE constexpr std::uint32_t staged_word(std::uint32_t word) noexcept {
  if constexpr (swaps_bytes<Policy>) return cuda::std::byteswap(word);
  else return word;
}

}  // namespace vyre::staging
