// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include <vyre/core/byte_order.hpp>

static_assert(vyre::staging::staged_word<vyre::staging::forced_swap>(0x11223344u) == 0x44332211u);
static_assert(vyre::staging::staged_word<vyre::staging::native>(0x11223344u) == 0x11223344u);

namespace {
// What a little-endian reader (the device) decodes from the staged bytes.
std::uint32_t read_little_endian(const std::uint32_t& word) {
  unsigned char bytes[4];
  std::memcpy(bytes, &word, 4);
  return std::uint32_t{bytes[0]} | std::uint32_t{bytes[1]} << 8 | std::uint32_t{bytes[2]} << 16 |
         std::uint32_t{bytes[3]} << 24;
}
}  // namespace

TEST_CASE("little_endian staging yields the words a little-endian device reads",
          "[core][staging]") {
  const std::array<std::uint32_t, 4> source{0x01020304u, 0xA0B0C0D0u, 0u, 0xFFFFFFFFu};
  std::vector<std::uint32_t> staged(4, 0xDEADBEEFu);
  REQUIRE(vyre::staging::stage_words<vyre::staging::little_endian>(source, staged).has_value());
  for (std::size_t i = 0; i < source.size(); ++i) CHECK(read_little_endian(staged[i]) == source[i]);
}

TEST_CASE("forced_swap exercises the big-endian path: bytes reversed, twice is identity",
          "[core][staging]") {
  const std::array<std::uint32_t, 3> source{0x01020304u, 0x00000080u, 0x12345678u};
  std::array<std::uint32_t, 3> once{};
  std::array<std::uint32_t, 3> twice{};
  REQUIRE(vyre::staging::stage_words<vyre::staging::forced_swap>(source, once).has_value());
  CHECK(once[0] == 0x04030201u);
  CHECK(once[1] == 0x80000000u);
  REQUIRE(vyre::staging::stage_words<vyre::staging::forced_swap>(once, twice).has_value());
  CHECK(twice == source);
}

TEST_CASE("staging into a too-small buffer is an error naming both lengths", "[core][staging]") {
  const std::array<std::uint32_t, 3> source{1, 2, 3};
  std::array<std::uint32_t, 2> small_buffer{9, 9};
  const auto result = vyre::staging::stage_words<vyre::staging::native>(source, small_buffer);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::invalid_argument);
  CHECK(result.error().value_or("source_words", 0) == 3);
  CHECK(result.error().value_or("destination_words", 0) == 2);
  CHECK(small_buffer == std::array<std::uint32_t, 2>{9, 9});
}

TEST_CASE("staging nothing is fine", "[core][staging]") {
  std::array<std::uint32_t, 1> destination{5};
  CHECK(vyre::staging::stage_words<vyre::staging::little_endian>({}, destination).has_value());
  CHECK(destination[0] == 5);
}

TEST_CASE("copy_for_dma copies every byte at every size and alignment, touching nothing else",
          "[core][staging]") {
  // Sizes around the streaming threshold and the 64-byte line, destination and source at
  // every offset within a 16-byte vector, plus one staging-chunk-sized copy.
  std::vector<unsigned char> source(4096 + 64), destination(4096 + 64);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<unsigned char>(i * 7 + 3);
  for (const std::size_t bytes : {0u, 1u, 15u, 63u, 64u, 255u, 256u, 257u, 1000u, 4095u})
    for (std::size_t to = 0; to < 16; ++to)
      for (const std::size_t from : {0u, 1u, 8u, 13u}) {
        std::fill(destination.begin(), destination.end(), 0xA5);
        vyre::staging::copy_for_dma(destination.data() + to, source.data() + from, bytes);
        INFO("bytes " << bytes << ", destination offset " << to << ", source offset " << from);
        CHECK(std::equal(source.begin() + from, source.begin() + from + bytes,
                         destination.begin() + to));
        CHECK(std::all_of(destination.begin(), destination.begin() + to,
                          [](unsigned char b) { return b == 0xA5; }));
        CHECK(std::all_of(destination.begin() + to + bytes, destination.end(),
                          [](unsigned char b) { return b == 0xA5; }));
      }
  std::vector<unsigned char> big_source(std::size_t{1} << 20),
      big_destination(big_source.size() + 1);
  for (std::size_t i = 0; i < big_source.size(); ++i)
    big_source[i] = static_cast<unsigned char>(i ^ (i >> 9));
  vyre::staging::copy_for_dma(big_destination.data() + 1, big_source.data(), big_source.size());
  CHECK(std::equal(big_source.begin(), big_source.end(), big_destination.begin() + 1));
}
