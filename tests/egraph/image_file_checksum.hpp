// SPDX-License-Identifier: Apache-2.0
// The image file checksum as docs/image_format.md defines it, for the version in the file's word
// 2, written out again from the text (no library code) so that the tests check the library's
// chunking and threads against the document. Shared by image_file_test.cpp and the fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace vyre_test {

//! The checksum of the image file `bytes` (`size` a multiple of 4, at least the 48-byte header),
//! words 10 and 11 left out.
inline std::uint64_t documented_image_file_checksum(const std::byte* bytes, std::size_t size) {
  constexpr std::uint64_t basis = 0xCBF29CE484222325ull, prime = 0x100000001B3ull;
  const auto word = [&](std::size_t i) {
    std::uint32_t w;
    std::memcpy(&w, bytes + 4 * i, 4);
    return w;  // little-endian hosts: the tests check that they run on one
  };
  const auto fnv = [](std::uint64_t h, std::uint32_t w) { return (h ^ w) * prime; };
  const auto fnv64 = [&](std::uint64_t h, std::uint64_t w) {
    return fnv(fnv(h, static_cast<std::uint32_t>(w)), static_cast<std::uint32_t>(w >> 32));
  };
  std::uint64_t sum = basis;
  for (std::size_t i = 0; i < 10; ++i) sum = fnv(sum, word(i));
  const std::size_t words = size / 4 - 12;
  if (word(2) == 1) {
    for (std::size_t i = 0; i < words; ++i) sum = fnv(sum, word(12 + i));
    return sum;
  }
  constexpr std::size_t chunk = std::size_t{1} << 16;
  for (std::size_t begin = 0; begin < words; begin += chunk) {
    std::uint64_t lanes[4] = {basis, basis, basis, basis};
    for (std::size_t i = 0; i < chunk && begin + i < words; ++i)
      lanes[i % 4] = fnv(lanes[i % 4], word(12 + begin + i));
    std::uint64_t digest = basis;
    for (const std::uint64_t lane : lanes) digest = fnv64(digest, lane);
    sum = fnv64(sum, digest);
  }
  return sum;
}

}  // namespace vyre_test
