// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>

#include <vyre/core/checked.hpp>

using u32 = std::uint32_t;
using u64 = std::uint64_t;

static_assert(vyre::checked_add<u32>(1, 2, "f").value() == 3);
static_assert(!vyre::checked_add<u32>(0xFFFFFFFFu, 1, "f").has_value());
static_assert(vyre::checked_add<u32>(0xFFFFFFFEu, 1, "f").value() == 0xFFFFFFFFu);
static_assert(vyre::checked_mul<u64>(1ull << 32, 1ull << 31, "f").value() == 1ull << 63);
static_assert(!vyre::checked_mul<u64>(1ull << 32, 1ull << 32, "f").has_value());
static_assert(vyre::checked_mul<u32>(0, 0xFFFFFFFFu, "f").value() == 0);
static_assert(vyre::narrow<u32>(u64{0xFFFFFFFFu}, "f").value() == 0xFFFFFFFFu);
static_assert(!vyre::narrow<u32>(u64{1} << 32, "f").has_value());
static_assert(!vyre::narrow<u32>(-1, "f").has_value());
static_assert(!vyre::narrow<std::int8_t>(200, "f").has_value());
static_assert(vyre::narrow<std::int8_t>(-128, "f").value() == -128);
static_assert(vyre::words_to_bytes(19, "f").value() == 76);
static_assert(!vyre::words_to_bytes(u64{1} << 62, "f").has_value());
static_assert(vyre::checked_add<u32>(0xFFFFFFFFu, 1, "f").error().code() == vyre::errc::overflow);

TEST_CASE("checked_add names the field and both operands", "[core][checked]") {
  const auto result = vyre::checked_add<u32>(0xFFFFFFF0u, 0x20u, "children offset + length");
  REQUIRE_FALSE(result.has_value());
  const auto& err = result.error();
  CHECK(err.code() == vyre::errc::overflow);
  CHECK(err.value_or("lhs", 0) == 0xFFFFFFF0u);
  CHECK(err.value_or("rhs", 0) == 0x20u);
  CHECK(err.message().rfind("children offset + length [lhs=4294967280, rhs=32, max=4294967295]",
                            0) == 0);
}

TEST_CASE("checked_mul detects every overflowing product at the boundary", "[core][checked]") {
  const u64 max = std::numeric_limits<u64>::max();
  for (u64 a : {u64{1}, u64{2}, u64{3}, u64{7}, u64{1} << 32, max}) {
    const u64 largest_ok = max / a;
    CHECK(vyre::checked_mul<u64>(a, largest_ok, "p").value() == a * largest_ok);
    if (largest_ok != max) CHECK_FALSE(vyre::checked_mul<u64>(a, largest_ok + 1, "p").has_value());
  }
}

TEST_CASE("narrow reports the value, its sign and the limit", "[core][checked]") {
  const auto too_big = vyre::narrow<u32>(u64{5'000'000'000}, "row count");
  REQUIRE_FALSE(too_big.has_value());
  CHECK(too_big.error().code() == vyre::errc::out_of_range);
  CHECK(too_big.error().value_or("value", 0) == 5'000'000'000u);
  CHECK(too_big.error().value_or("max", 0) == 0xFFFFFFFFu);
  CHECK(too_big.error().value_or("negative", 9) == 0);
  const auto negative = vyre::narrow<u32>(-5, "offset");
  REQUIRE_FALSE(negative.has_value());
  CHECK(negative.error().value_or("negative", 9) == 1);
}

TEST_CASE("words_to_bytes names the column on overflow", "[core][checked]") {
  const auto bytes = vyre::words_to_bytes(u64{1} << 63, "children column");
  REQUIRE_FALSE(bytes.has_value());
  CHECK(bytes.error().message().find("children column") == 0);
}
