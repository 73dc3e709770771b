// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <vector>

#include <vyre/core/reserve.hpp>

TEST_CASE("try_reserve succeeds for a reasonable size", "[core][reserve]") {
  std::vector<std::uint32_t> words;
  REQUIRE(vyre::try_reserve(words, 1024, "words").has_value());
  CHECK(words.capacity() >= 1024);
}

TEST_CASE("try_reserve turns length_error into out_of_memory naming what and how many",
          "[core][reserve]") {
  std::vector<std::uint64_t> rows{1, 2, 3};
  const std::size_t absurd = std::numeric_limits<std::size_t>::max() / 2;
  const auto result = vyre::try_reserve(rows, absurd, "snapshot rows");
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::out_of_memory);
  CHECK(result.error().value_or("elements", 0) == absurd);
  CHECK(result.error().value_or("bytes", 0) == UINT64_MAX);
  CHECK(result.error().message().find("snapshot rows") == 0);
  CHECK(rows == std::vector<std::uint64_t>{1, 2, 3});
}

TEST_CASE("try_reserve turns bad_alloc into out_of_memory", "[core][reserve]") {
  // Below max_size() (so no length_error) but beyond any real machine (so bad_alloc).
  std::vector<char> bytes;
  const std::size_t huge = std::size_t{1} << 60;
  REQUIRE(huge < bytes.max_size());
  const auto result = vyre::try_reserve(bytes, huge, "staging bytes");
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().value_or("bytes", 0) == huge);
}

TEST_CASE("try_resize leaves the container unchanged on failure", "[core][reserve]") {
  std::vector<std::uint32_t> words{7, 8};
  REQUIRE_FALSE(vyre::try_resize(words, std::size_t{1} << 60, "words").has_value());
  CHECK(words == std::vector<std::uint32_t>{7, 8});
  REQUIRE(vyre::try_resize(words, 5, "words").has_value());
  CHECK(words.size() == 5);
}
