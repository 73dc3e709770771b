// SPDX-License-Identifier: Apache-2.0
#include <catch2/catch.hpp>

#include <iterator>
#include <set>
#include <string>
#include <type_traits>

#include <vyre/core/error.hpp>

namespace {
constexpr vyre::error sample_error() {
  return vyre::error(vyre::errc::abi_limit, "snapshot::validate: children offset exceeds u32")
      .with("row", 7)
      .with("offset", 4294967296ull)
      .fix("shard the snapshot");
}
}  // namespace

static_assert(std::is_trivially_copyable_v<vyre::error>,
              "vyre::error must be copyable to and from the device as bytes");
static_assert(sample_error().code() == vyre::errc::abi_limit);
static_assert(sample_error().value_count() == 2);
static_assert(sample_error().value_or("offset", 0) == 4294967296ull);
static_assert(sample_error().value_or("absent", 5) == 5);

TEST_CASE("error message names the context, the values and the fix", "[core][error]") {
  const std::string message = sample_error().message();
  CHECK(message ==
        "snapshot::validate: children offset exceeds u32 [row=7, offset=4294967296]. "
        "Fix: shard the snapshot");
}

TEST_CASE("error message carries the subject and the CUDA status", "[core][error]") {
  auto err = vyre::error(vyre::errc::cuda_runtime, "backend::upload: cudaMemcpyAsync failed")
                 .cuda(vyre::status_source::cuda_runtime, 700, "cudaErrorIllegalAddress")
                 .about("image.vyre");
  CHECK(err.message() ==
        "backend::upload: cudaMemcpyAsync failed (image.vyre) "
        "[CUDA runtime: cudaErrorIllegalAddress (700)].");
  CHECK(err.cuda_status() == 700);
  CHECK(err.cuda_source() == vyre::status_source::cuda_runtime);
}

TEST_CASE("a long subject keeps its tail behind an ellipsis, never silently", "[core][error]") {
  const std::string path = "/very/long/" + std::string(300, 'd') + "/egraph.json";
  vyre::error err(vyre::errc::io, "load");
  err.about(path);
  const auto subject = err.subject();
  REQUIRE(subject.size() == vyre::error::subject_capacity);
  CHECK(subject.substr(0, 3) == "...");
  CHECK(subject.substr(subject.size() - 12) == "/egraph.json");
}

TEST_CASE("values beyond the capacity are dropped, never written out of bounds", "[core][error]") {
  static constexpr const char* names[] = {"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7"};
  static_assert(std::size(names) > vyre::error::max_values);
  vyre::error err(vyre::errc::invalid_argument, "too many");
  for (std::size_t i = 0; i < std::size(names); ++i) err.with(names[i], 100 + i);
  REQUIRE(err.value_count() == vyre::error::max_values);
  // The first ones are kept, in order, with their values; the later ones are dropped.
  for (std::size_t i = 0; i < std::size(names); ++i)
    CHECK(err.value_or(names[i], 0) == (i < vyre::error::max_values ? 100 + i : 0));
}

TEST_CASE("error_exception carries the error and its message", "[core][error]") {
  try {
    throw vyre::error_exception(sample_error());
  } catch (const std::runtime_error& thrown) {
    CHECK(std::string(thrown.what()) == sample_error().message());
    const auto& typed = dynamic_cast<const vyre::error_exception&>(thrown);
    CHECK(typed.code() == vyre::errc::abi_limit);
    CHECK(typed.error().value_or("row", 0) == 7);
  }
}

TEST_CASE("every errc has a name", "[core][error]") {
  // Over the whole u8 range, not up to a last code named here: the named codes are 1..N with
  // distinct names, every value past N (and 0) is "unknown error", and N covers the codes
  // this test knows of. An appended code with a name extends N without touching this test.
  const auto name = [](int code) {
    return std::string(vyre::errc_name(static_cast<vyre::errc>(code)));
  };
  CHECK(name(0) == "unknown error");
  int named = 0;
  while (named < 255 && name(named + 1) != "unknown error") ++named;
  CHECK(named >= static_cast<int>(vyre::errc::invalid_state));
  std::set<std::string> distinct;
  for (int code = 1; code <= named; ++code) distinct.insert(name(code));
  CHECK(distinct.size() == static_cast<std::size_t>(named));
  for (int code = named + 1; code <= 255; ++code) CHECK(name(code) == "unknown error");
}

namespace {
vyre::expected<int> half(int value) {
  if (value % 2 != 0)
    return vyre::fail(vyre::error(vyre::errc::invalid_argument, "half: odd").with("value", 3));
  return value / 2;
}
vyre::expected<int> quarter(int value) {
  VYRE_TRY_ASSIGN(const int h, half(value));
  VYRE_TRY(half(h));
  return h / 2;
}
}  // namespace

TEST_CASE("VYRE_TRY and VYRE_TRY_ASSIGN propagate the first error", "[core][error]") {
  CHECK(quarter(8).value() == 2);
  REQUIRE_FALSE(quarter(6).has_value());
  CHECK(quarter(6).error().code() == vyre::errc::invalid_argument);
  CHECK_FALSE(quarter(3).has_value());
}
