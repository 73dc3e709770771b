// SPDX-License-Identifier: Apache-2.0
// Launch planning: grids, waves and their errors (host only, constexpr where possible).
#include <catch2/catch.hpp>

#include <cstdint>

#include <vyre/runtime/launch_plan.hpp>

namespace {
constexpr vyre::launch_limits tiny{1024, 2};
constexpr auto small_plan = vyre::plan_grid(1000, 256, tiny);
static_assert(small_plan.has_value());
static_assert(small_plan->waves == 2 && small_plan->blocks_per_wave == 2);
static_assert(small_plan->wave(0).first == 0 && small_plan->wave(0).count == 512);
static_assert(small_plan->wave(1).first == 512 && small_plan->wave(1).count == 488);
static_assert(small_plan->wave_blocks(1) == 2);
static_assert(!vyre::plan_grid(10, 0).has_value());
}  // namespace

TEST_CASE("a grid covers every element once with one thread each", "[runtime][launch]") {
  for (const std::uint64_t elements : {1ull, 31ull, 32ull, 255ull, 256ull, 257ull, 1000000ull}) {
    const auto plan = vyre::plan_grid(elements, 256);
    REQUIRE(plan.has_value());
    CHECK(plan->waves == 1);
    CHECK(plan->block == 256);
    CHECK(std::uint64_t{plan->blocks_per_wave} * 256 >= elements);
    CHECK(std::uint64_t{plan->blocks_per_wave - 1} * 256 < elements);
    CHECK(plan->wave(0).first == 0);
    CHECK(plan->wave(0).count == elements);
  }
}

TEST_CASE("zero elements plan zero waves", "[runtime][launch]") {
  const auto plan = vyre::plan_grid(0, 128);
  REQUIRE(plan.has_value());
  CHECK(plan->waves == 0);
  CHECK(plan->blocks_per_wave == 0);
}

TEST_CASE("a grid over the device limit is split into waves that tile the input",
          "[runtime][launch]") {
  const vyre::launch_limits limits{1024, 7};
  for (const std::uint64_t elements : {7ull * 64, 7ull * 64 + 1, 1000ull, 100000ull}) {
    const auto plan = vyre::plan_grid(elements, 64, limits);
    REQUIRE(plan.has_value());
    CHECK(plan->blocks_per_wave <= 7);
    std::uint64_t next = 0;
    for (std::uint32_t i = 0; i < plan->waves; ++i) {
      const auto w = plan->wave(i);
      CHECK(w.first == next);
      CHECK(w.count > 0);
      CHECK(plan->wave_blocks(i) <= 7);
      CHECK(std::uint64_t{plan->wave_blocks(i)} * 64 >= w.count);
      next += w.count;
    }
    CHECK(next == elements);
  }
}

TEST_CASE("the largest inputs plan on real device limits", "[runtime][launch]") {
  // 2^40 elements at 1024 threads: 2^30 blocks fit one wave of a 2^31 - 1 grid.
  const auto one = vyre::plan_grid(1ull << 40, 1024);
  REQUIRE(one.has_value());
  CHECK(one->waves == 1);
  // 2^63 elements at 32 threads: 2^58 blocks, 2^27 + 1 waves (wave_blocks never overflows).
  const auto many = vyre::plan_grid(1ull << 63, 32);
  REQUIRE(many.has_value());
  CHECK(many->waves == (1u << 27) + 1);
  CHECK(many->wave(many->waves - 1).count > 0);
}

TEST_CASE("more than 2^32 - 1 waves is an overflow error", "[runtime][launch]") {
  const auto plan = vyre::plan_grid(~0ull, 32, {1024, 1});
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().code() == vyre::errc::overflow);
  CHECK(plan.error().value_or("waves", 0) > 0xFFFFFFFFull);
}

TEST_CASE("bad block sizes and limits are rejected with the values", "[runtime][launch]") {
  for (const std::uint32_t block : {0u, 33u, 100u, 2048u}) {
    const auto plan = vyre::plan_grid(100, block);
    REQUIRE_FALSE(plan.has_value());
    CHECK(plan.error().code() == vyre::errc::invalid_argument);
    CHECK(plan.error().value_or("block", 99999) == block);
    CHECK(plan.error().message().find("Fix:") != std::string::npos);
  }
  const auto zero_limit = vyre::plan_grid(100, 32, {0, 10});
  REQUIRE_FALSE(zero_limit.has_value());
  CHECK(zero_limit.error().code() == vyre::errc::invalid_argument);
  const auto over_limit = vyre::plan_grid(100, 512, {256, 10});
  REQUIRE_FALSE(over_limit.has_value());
  CHECK(over_limit.error().value_or("max_threads_per_block", 0) == 256);
}
