// SPDX-License-Identifier: Apache-2.0
//! @file
//! Byte order of device-bound words: copy host words into a buffer bound for the device in the
//! image's little-endian byte order, as the staging policy says (byte-swap on big-endian hosts
//! or when forced), and `copy_for_dma`, the cache-friendly fill of pinned staging. How uploads
//! are cut into chunks is runtime/staging_plan.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>  // SSE2: part of every x86-64 target
#endif

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
    for (std::size_t i = 0; i < source.size(); ++i) destination[i] = cuda::std::byteswap(source[i]);
  } else if (!source.empty()) {
    std::memcpy(destination.data(), source.data(), source.size_bytes());
  }
  return {};
}

//! Copies `bytes` bytes into staging memory that a DMA engine reads next. On x86-64 the
//! destination is written with non-temporal stores: the lines go straight to memory instead of
//! being read for ownership into the CPU's cache and then snooped out of it by the copy engine,
//! which is what bounds a plain memcpy into pinned memory. Elsewhere it is `std::memcpy`.
//! The stores are fenced before returning, so a copy queued afterwards sees them.
inline void copy_for_dma(void* destination, const void* source, std::size_t bytes) noexcept {
#if defined(__x86_64__) || defined(_M_X64)
  auto* to = static_cast<unsigned char*>(destination);
  const auto* from = static_cast<const unsigned char*>(source);
  constexpr std::size_t line = 64;
  // Below a few lines the fence costs more than the cache traffic it saves.
  if (bytes < 4 * line) {
    std::memcpy(to, from, bytes);
    return;
  }
  const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16;
  std::memcpy(to, from, head);
  to += head;
  from += head;
  bytes -= head;
  for (; bytes >= line; bytes -= line, to += line, from += line) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(to), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 48), d);
  }
  std::memcpy(to, from, bytes);
  _mm_sfence();
#else
  std::memcpy(destination, source, bytes);
#endif
}

//! The word a little-endian reader sees for `word` staged under `Policy` (constexpr helper).
template <policy Policy>
VYRE_HOST_DEVICE constexpr std::uint32_t staged_word(std::uint32_t word) noexcept {
  if constexpr (swaps_bytes<Policy>)
    return cuda::std::byteswap(word);
  else
    return word;
}

}  // namespace vyre::staging
