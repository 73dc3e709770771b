// SPDX-License-Identifier: Apache-2.0
// The staging plan of pageable uploads (chunk size, chunks, host lanes, staging slots) and the
// persistent host-lane helpers that run them: both pure host code, tested without a GPU.
#include <catch2/catch.hpp>

#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <vyre/runtime/resident.hpp>

namespace {

constexpr std::size_t KiB = std::size_t{1} << 10;
constexpr std::size_t MiB = std::size_t{1} << 20;

constexpr vyre::staging_plan make_plan(std::size_t chunk, std::size_t chunks, std::size_t lanes,
                                       std::size_t slots) {
  vyre::staging_plan plan;
  plan.chunk_bytes = chunk;
  plan.chunks = chunks;
  plan.lanes = lanes;
  plan.slots_per_lane = slots;
  return plan;
}

// The documented automatic choices, checked at compile time.
static_assert(vyre::auto_chunk_bytes(1 * MiB, 2) == 256 * KiB);
static_assert(vyre::auto_chunk_bytes(1 * MiB, 4) == 256 * KiB);
static_assert(vyre::auto_chunk_bytes(2 * MiB, 4) == 256 * KiB);
static_assert(vyre::auto_chunk_bytes(4 * MiB, 4) == 512 * KiB);
static_assert(vyre::auto_chunk_bytes(8 * MiB, 4) == 1 * MiB);
static_assert(vyre::auto_chunk_bytes(64 * MiB, 4) == 4 * MiB);
static_assert(vyre::auto_chunk_bytes(100, 1) == vyre::min_auto_chunk_bytes);
static_assert(vyre::auto_chunk_bytes(std::size_t{1} << 40, 4) == vyre::max_auto_chunk_bytes);
static_assert(vyre::plan_staging(1 * MiB, {}, 1) == make_plan(512 * KiB, 2, 1, 2));
static_assert(vyre::plan_staging(1 * MiB, {}, 2) == make_plan(256 * KiB, 4, 2, 2));
static_assert(vyre::plan_staging(1 * MiB, {}, 4) == make_plan(256 * KiB, 4, 4, 1));
static_assert(vyre::plan_staging(2 * MiB, {}, 4) == make_plan(256 * KiB, 8, 4, 2));
static_assert(vyre::plan_staging(4 * MiB, {}, 4) == make_plan(512 * KiB, 8, 4, 2));
static_assert(vyre::plan_staging(64 * MiB, {}, 4) == make_plan(4 * MiB, 16, 4, 2));

}  // namespace

TEST_CASE("staging plans: small uploads give every chunk its own slot", "[runtime][staging]") {
  const auto plan = vyre::plan_staging(1 * MiB, {}, 2);
  CHECK_FALSE(plan.reuses_slots());
  CHECK(plan.staging_bytes() == 1 * MiB);

  const auto four = vyre::plan_staging(4 * MiB, {}, 4);
  CHECK_FALSE(four.reuses_slots());
  CHECK(four.staging_bytes() == vyre::staging_ring_bytes);
}

TEST_CASE("staging plans: large uploads double-buffer each lane", "[runtime][staging]") {
  const auto plan = vyre::plan_staging(std::size_t{1} << 30, {}, 4);
  CHECK(plan.chunk_bytes == vyre::max_auto_chunk_bytes);
  CHECK(plan.chunks == 256);
  CHECK(plan.lanes == 4);
  CHECK(plan.slots_per_lane == 2);
  CHECK(plan.reuses_slots());
  CHECK(plan.staging_bytes() == 32 * MiB);
}

TEST_CASE("staging plans follow explicit options", "[runtime][staging]") {
  // 10 MiB + 3 in 1 MiB chunks: 11 copies.
  vyre::upload_options options;
  options.chunk_bytes = 1 * MiB;
  const auto eleven = vyre::plan_staging(10 * MiB + 3, options, 4);
  CHECK(eleven.chunk_bytes == 1 * MiB);
  CHECK(eleven.chunks == 11);
  CHECK(eleven.lanes == 4);
  CHECK(eleven.slots_per_lane == 2);

  // One lane of many 64 KiB chunks: double-buffered.
  options.chunk_bytes = 64 * KiB;
  options.host_lanes = 1;
  const auto one_lane = vyre::plan_staging(1 * MiB, options, 4);
  CHECK(one_lane == make_plan(64 * KiB, 16, 1, 2));

  // An odd chunk size is kept as it is; five chunks fit five slots.
  options.chunk_bytes = 1000;
  CHECK(vyre::plan_staging(4096, options, 1) == make_plan(1000, 5, 1, 5));

  // Lanes: capped by max_host_lanes and by the chunk count.
  options.chunk_bytes = 0;
  options.host_lanes = 100;
  CHECK(vyre::plan_staging(64 * MiB, options, 1).lanes == vyre::max_host_lanes);
  options.host_lanes = 8;
  options.chunk_bytes = 1 * MiB;
  CHECK(vyre::plan_staging(3 * MiB, options, 1).lanes == 3);

  // Nothing to stage: no chunks.
  CHECK(vyre::plan_staging(0, options, 4).chunks == 0);
  CHECK_FALSE(vyre::plan_staging(0, options, 4).reuses_slots());

  // A chunk larger than the upload shrinks to it.
  options.host_lanes = 0;
  options.chunk_bytes = 64 * MiB;
  CHECK(vyre::plan_staging(5000, options, 1) == make_plan(5000, 1, 1, 1));
}

TEST_CASE("staging plans cover every byte within their bounds", "[runtime][staging]") {
  const std::size_t sizes[] = {
      1,       3,           4096,    65535,       65536,   65537,         1 * MiB - 1,
      1 * MiB, 3 * MiB + 5, 4 * MiB, 4 * MiB + 1, 8 * MiB, 100 * MiB + 7, std::size_t{1} << 30};
  const std::size_t chunks[] = {0, 1, 4, 1000, 4096, 128 * KiB, 1 * MiB, 16 * MiB};
  for (const std::size_t bytes : sizes)
    for (const std::size_t chunk : chunks)
      for (std::size_t lanes = 0; lanes <= 17; ++lanes) {
        if (chunk != 0 && bytes / chunk > (std::size_t{1} << 20)) continue;  // too many chunks
        vyre::upload_options options;
        options.chunk_bytes = chunk;
        options.host_lanes = lanes;
        const auto plan = vyre::plan_staging(bytes, options, 2);
        INFO("bytes " << bytes << " chunk " << chunk << " lanes " << lanes);
        REQUIRE(plan.chunk_bytes >= 1);
        REQUIRE(plan.chunk_bytes <= bytes);
        REQUIRE(plan.chunks * plan.chunk_bytes >= bytes);
        REQUIRE((plan.chunks - 1) * plan.chunk_bytes < bytes);
        REQUIRE(plan.lanes >= 1);
        REQUIRE(plan.lanes <= vyre::max_host_lanes);
        REQUIRE(plan.lanes <= plan.chunks);
        REQUIRE(plan.slots_per_lane >= 1);
        if (plan.reuses_slots()) {
          REQUIRE(plan.slots_per_lane == 2);
        } else {
          REQUIRE(plan.lanes * plan.slots_per_lane >= plan.chunks);
          REQUIRE(plan.slots_per_lane <= vyre::max_staging_slots_per_lane);
        }
        if (chunk == 0) {
          REQUIRE(std::has_single_bit(plan.chunk_bytes == bytes ? vyre::min_auto_chunk_bytes
                                                                : plan.chunk_bytes));
          REQUIRE(plan.staging_bytes() <= 2 * vyre::max_host_lanes * vyre::max_auto_chunk_bytes);
        }
      }
}

TEST_CASE("auto_host_lanes: one lane per 256 KiB, at most four", "[runtime][staging]") {
  CHECK(vyre::auto_host_lanes(0) == 1);
  CHECK(vyre::auto_host_lanes(512 * KiB - 1) == 1);
  const std::size_t hardware = std::thread::hardware_concurrency();
  const auto capped = [hardware](std::size_t lanes) {
    return hardware != 0 && lanes > hardware ? hardware : lanes;
  };
  CHECK(vyre::auto_host_lanes(512 * KiB) == capped(2));
  CHECK(vyre::auto_host_lanes(1 * MiB) == capped(4));
  CHECK(vyre::auto_host_lanes(4 * MiB) == capped(4));
  CHECK(vyre::auto_host_lanes(std::size_t{1} << 30) == capped(4));
}

TEST_CASE("lane_pool runs every lane exactly once", "[runtime][staging][lanes]") {
  vyre::detail::lane_pool pool;
  CHECK(pool.helpers() == 0);
  int nothing = 0;
  auto none = [&nothing](std::size_t) noexcept { ++nothing; };
  pool.run(0, none);
  CHECK(nothing == 0);
  CHECK(pool.helpers() == 0);

  for (std::size_t lanes = 1; lanes <= 20; ++lanes) {
    std::vector<std::atomic<int>> calls(lanes);
    auto body = [&calls](std::size_t lane) noexcept {
      calls[lane].fetch_add(1, std::memory_order_relaxed);
    };
    for (int repeat = 0; repeat < 20; ++repeat) pool.run(lanes, body);
    for (std::size_t lane = 0; lane < lanes; ++lane) {
      INFO("lanes " << lanes << " lane " << lane);
      CHECK(calls[lane].load() == 20);
    }
  }
  // Helpers are started on demand, never more than max_helpers, and kept between jobs.
  CHECK(pool.helpers() >= 1);
  CHECK(pool.helpers() <= vyre::detail::lane_pool::max_helpers);
  pool.stop();
  CHECK(pool.helpers() == 0);
  std::atomic<int> again{0};
  auto count = [&again](std::size_t) noexcept { again.fetch_add(1); };
  pool.run(3, count);
  CHECK(again.load() == 3);
  CHECK(pool.helpers() >= 1);
}

TEST_CASE("lane_pool shares its helpers between concurrent callers and survives stop",
          "[runtime][staging][lanes]") {
  vyre::detail::lane_pool pool;
  constexpr int callers = 4;
  constexpr int jobs = 300;
  std::atomic<long> total{0};
  std::atomic<bool> wrong{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&, c] {
      for (int j = 0; j < jobs; ++j) {
        const std::size_t lanes = 1 + static_cast<std::size_t>((c + j) % 6);
        std::vector<std::atomic<int>> calls(lanes);
        auto body = [&calls](std::size_t lane) noexcept { calls[lane].fetch_add(1); };
        pool.run(lanes, body);
        for (auto& call : calls)
          if (call.load() != 1) wrong.store(true);
        total.fetch_add(static_cast<long>(lanes));
      }
    });
  // Stopping while jobs run loses no lane: callers take what helpers do not.
  for (int i = 0; i < 20; ++i) {
    pool.stop();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  for (auto& thread : threads) thread.join();
  CHECK_FALSE(wrong.load());
  long expected = 0;
  for (int c = 0; c < callers; ++c)
    for (int j = 0; j < jobs; ++j) expected += 1 + (c + j) % 6;
  CHECK(total.load() == expected);
}
