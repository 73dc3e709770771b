// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <string_view>
#include <type_traits>

#include <vyre/core/device_choice.hpp>
#include <vyre/core/policies.hpp>

using default_policies = vyre::policies<>;
static_assert(std::is_same_v<default_policies::alloc_policy, vyre::alloc::caching_pool>);
static_assert(std::is_same_v<default_policies::staging_policy, vyre::staging::little_endian>);
static_assert(std::is_same_v<default_policies::error_policy, vyre::on_error::throw_exception>);
static_assert(vyre::policy_bundle<default_policies>);
static_assert(!vyre::policy_bundle<int>);

static_assert(vyre::alloc::policy<vyre::alloc::stream_ordered>);
static_assert(!vyre::alloc::policy<vyre::on_error::throw_exception>);
static_assert(vyre::staging::policy<vyre::staging::forced_swap>);
static_assert(vyre::on_error::policy<vyre::on_error::return_expected>);
static_assert(!vyre::on_error::policy<int>);
static_assert(std::is_same_v<decltype(vyre::on_error::return_expected_v),
                             const vyre::on_error::return_expected>);

static_assert(std::is_same_v<vyre::result_t<vyre::on_error::throw_exception, int>, int>);
static_assert(std::is_same_v<vyre::result_t<vyre::on_error::return_expected, int>,
                             cuda::std::expected<int, vyre::error>>);
static_assert(std::is_same_v<vyre::result_t<vyre::on_error::throw_exception, void>, void>);

static_assert(vyre::staging::swaps_bytes<vyre::staging::forced_swap>);
static_assert(!vyre::staging::swaps_bytes<vyre::staging::native>);
static_assert(vyre::staging::swaps_bytes<vyre::staging::little_endian> ==
              (std::endian::native == std::endian::big));

namespace {
vyre::expected<int> parse_digit(char c) {
  if (c < '0' || c > '9')
    return vyre::fail(vyre::error(vyre::errc::parse, "parse_digit: not a digit")
                          .with("char", static_cast<unsigned char>(c))
                          .fix("pass a character from '0' to '9'"));
  return c - '0';
}
vyre::expected<void> require_even(int value) {
  if (value % 2 != 0)
    return vyre::fail(vyre::error(vyre::errc::invalid_argument, "require_even: odd value")
                          .with("value", static_cast<std::uint64_t>(value)));
  return {};
}

// A public entry point written once, generic over the error policy, as vyre's boundaries are.
template <class OnError>
vyre::result_t<OnError, int> public_parse(char c) {
  return vyre::apply_error_policy<OnError>(parse_digit(c));
}
template <class OnError>
vyre::result_t<OnError, void> public_require_even(int value) {
  return vyre::apply_error_policy<OnError>(require_even(value));
}
}  // namespace

TEST_CASE("throw_exception returns plain values and throws error_exception", "[core][policies]") {
  using policy = vyre::on_error::throw_exception;
  CHECK(public_parse<policy>('7') == 7);
  CHECK_NOTHROW(public_require_even<policy>(4));
  try {
    (void)public_parse<policy>('x');
    FAIL("expected an exception");
  } catch (const vyre::error_exception& thrown) {
    CHECK(thrown.code() == vyre::errc::parse);
    CHECK(thrown.error().value_or("char", 0) == static_cast<unsigned char>('x'));
    CHECK(std::string(thrown.what()).find("Fix: pass a character") != std::string::npos);
  }
  CHECK_THROWS_AS(public_require_even<policy>(3), vyre::error_exception);
}

TEST_CASE("return_expected hands back the same errors without throwing", "[core][policies]") {
  using policy = vyre::on_error::return_expected;
  CHECK(public_parse<policy>('7').value() == 7);
  const auto bad = public_parse<policy>('x');
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == vyre::errc::parse);
  CHECK(public_require_even<policy>(4).has_value());
  const auto odd = public_require_even<policy>(3);
  REQUIRE_FALSE(odd.has_value());
  CHECK(odd.error().value_or("value", 0) == 3);
}

TEST_CASE("both policies produce identical error messages", "[core][policies]") {
  std::string thrown_message;
  try {
    (void)public_parse<vyre::on_error::throw_exception>('?');
  } catch (const vyre::error_exception& thrown) {
    thrown_message = thrown.what();
  }
  const auto returned = public_parse<vyre::on_error::return_expected>('?');
  REQUIRE_FALSE(returned.has_value());
  CHECK(thrown_message == returned.error().message());
}

TEST_CASE("device_choice: one spelling from the library to the command line", "[core]") {
  for (const vyre::device_choice c :
       {vyre::device_choice::automatic, vyre::device_choice::gpu, vyre::device_choice::cpu}) {
    const std::string_view name = vyre::device_choice_name(c);
    INFO(name);
    CHECK(vyre::parse_device_choice(name) == c);
  }
  CHECK(std::string_view(vyre::device_choice_name(vyre::device_choice::automatic)) == "auto");
  CHECK(std::string_view(vyre::device_choice_name(vyre::device_choice::gpu)) == "gpu");
  CHECK(std::string_view(vyre::device_choice_name(vyre::device_choice::cpu)) == "cpu");
  for (const char* bad : {"", "GPU", "automatic", "device", "host", "cpu "})
    CHECK_FALSE(vyre::parse_device_choice(bad).has_value());
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // The old names (algorithms::dispatch's) are the same values, for one release.
  CHECK(vyre::device_choice::device == vyre::device_choice::gpu);
  CHECK(vyre::device_choice::host == vyre::device_choice::cpu);
#pragma GCC diagnostic pop
}
