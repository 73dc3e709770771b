// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <cstdint>

#include <catch2/catch.hpp>

#include <vyre/egraph.hpp>

namespace eg = vyre::egraph;

namespace {
constexpr std::array<std::uint32_t, 2> one_two{1, 2};
constexpr std::array<std::uint32_t, 2> two_one{2, 1};
constexpr std::array<std::uint32_t, 1> all_ones{0xFFFFFFFFu};
constexpr std::array<std::uint32_t, 3> zeros{0, 0, 0};
}  // namespace

// Values pinned against an independent implementation of the function in docs/image_format.md
// (Python, u32 wrapping); they keep images bit-compatible with the Rust packer.
static_assert(eg::row_signature(0, nullptr, 0) == 1959786413u);
static_assert(eg::row_signature(1, one_two.data(), 2) == 2225812561u);
static_assert(eg::row_signature(1, two_one.data(), 2) == 2156159711u);
static_assert(eg::row_signature(7, all_ones.data(), 1) == 2613906010u);
static_assert(eg::row_signature(0xFFFFFFFFu, zeros.data(), 3) == 1454366416u);

TEST_CASE("row_signature: pinned values at run time, span overload", "[egraph][signature]") {
  const cuda::std::span<const std::uint32_t> children(one_two.data(), one_two.size());
  CHECK(eg::row_signature(1, children) == 2225812561u);
  CHECK(eg::row_signature(0, cuda::std::span<const std::uint32_t>{}) == 1959786413u);
}

TEST_CASE("row_signature: order of children matters, own e-class does not exist in it",
          "[egraph][signature]") {
  CHECK(eg::row_signature(1, one_two.data(), 2) != eg::row_signature(1, two_one.data(), 2));
  // Length is hashed: [] and [0] differ even though 0 would be a "neutral" child.
  constexpr std::array<std::uint32_t, 1> zero{0};
  CHECK(eg::row_signature(3, nullptr, 0) != eg::row_signature(3, zero.data(), 1));
}

TEST_CASE("row_signature_begin and row_signature_fold give row_signature one child at a time",
          "[egraph][signature]") {
  static_assert(eg::row_signature_fold(eg::row_signature_fold(eg::row_signature_begin(1, 2), 1),
                                       2) == 2225812561u);
  std::uint32_t state = 0x12345u;  // a small generator: every length up to 40, any ids
  for (std::uint32_t length = 0; length <= 40; ++length) {
    std::array<std::uint32_t, 40> children{};
    for (std::uint32_t i = 0; i < length; ++i) children[i] = state = state * 1664525u + 1013904223u;
    const std::uint32_t op = length * 7919u;
    std::uint32_t folded = eg::row_signature_begin(op, length);
    for (std::uint32_t i = 0; i < length; ++i) folded = eg::row_signature_fold(folded, children[i]);
    CHECK(folded == eg::row_signature(op, children.data(), length));
  }
}
