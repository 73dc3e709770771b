// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <new>
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

namespace {
// Throws std::bad_alloc above a limit, as an exhausted heap would: deterministic in every build
// (AddressSanitizer's operator new aborts on exhaustion instead of throwing).
template <class T>
struct limited_allocator {
  using value_type = T;
  static constexpr std::size_t limit = 1000;
  limited_allocator() = default;
  template <class U>
  limited_allocator(const limited_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > limit) throw std::bad_alloc();
    return std::allocator<T>{}.allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept { std::allocator<T>{}.deallocate(p, n); }
  friend bool operator==(limited_allocator, limited_allocator) { return true; }
};
}  // namespace

TEST_CASE("try_reserve turns bad_alloc into out_of_memory", "[core][reserve]") {
  std::vector<char, limited_allocator<char>> bytes;
  const std::size_t too_many = limited_allocator<char>::limit + 1;
  const auto result = vyre::try_reserve(bytes, too_many, "staging bytes");
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::out_of_memory);
  CHECK(result.error().value_or("bytes", 0) == too_many);
  CHECK(vyre::try_reserve(bytes, 10, "staging bytes").has_value());
}

TEST_CASE("try_resize leaves the container unchanged on failure", "[core][reserve]") {
  std::vector<std::uint32_t, limited_allocator<std::uint32_t>> words{7, 8};
  REQUIRE_FALSE(
      vyre::try_resize(words, limited_allocator<std::uint32_t>::limit + 1, "words").has_value());
  CHECK(words == std::vector<std::uint32_t, limited_allocator<std::uint32_t>>{7, 8});
  REQUIRE(vyre::try_resize(words, 5, "words").has_value());
  CHECK(words.size() == 5);
}
