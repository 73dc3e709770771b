// SPDX-License-Identifier: Apache-2.0
// Host tests of the fault-injection seam (vyre/core/fault_injection.hpp): the counter fails
// exactly the Nth allocation of the armed kind, fallible host growth reports it as
// out-of-memory naming the bytes, and the host operations that allocate (pack, snapshot
// building) fail cleanly at every allocation and succeed once past the last one.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <vyre/egraph.hpp>

namespace eg = vyre::egraph;
using vyre::testing::allocation_kind;
using vyre::testing::scoped_allocation_fault;
using expect = vyre::on_error::return_expected;

namespace {
eg::snapshot sample_snapshot() {
  eg::snapshot s;
  const std::uint32_t lit = s.intern_op("lit");
  const std::uint32_t add = s.intern_op("add");
  for (std::uint32_t i = 0; i < 64; ++i) s.add_row(1000 - i, lit);
  for (std::uint32_t i = 0; i < 64; ++i) {
    const std::uint32_t kids[] = {1000 - i, 1000 - (i * 7 % 64)};
    s.add_row(2000 + i % 16, add, cuda::std::span<const std::uint32_t>(kids));
  }
  return s;
}
}  // namespace

TEST_CASE("fault injector: fails exactly the Nth allocation of the armed kind",
          "[reliability][fault]") {
  auto& faults = vyre::testing::allocation_faults();
  CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::device));
  {
    scoped_allocation_fault fault(allocation_kind::pinned, 3);
    CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::device));  // other kind
    CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::pinned));  // 1st
    CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::pinned));  // 2nd
    CHECK_FALSE(fault.fired());
    CHECK(vyre::testing::inject_allocation_failure(allocation_kind::pinned));  // 3rd fails
    CHECK(fault.fired());
    CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::pinned));  // only once
    CHECK(fault.seen() == 4u);
  }
  CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::pinned));  // disarmed
  CHECK(faults.fired());                      // kept after disarming, for the caller to read
  faults.fail_nth(allocation_kind::host, 0);  // n = 0 disarms
  CHECK_FALSE(vyre::testing::inject_allocation_failure(allocation_kind::host));
  CHECK(std::string(vyre::testing::allocation_kind_name(allocation_kind::host)) == "host");
}

TEST_CASE("fault injector: counts allocations of every thread, fails one", "[reliability][fault]") {
  scoped_allocation_fault fault(allocation_kind::device, 5000);
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&failures, t] {
      for (int i = 0; i < 1000; ++i)
        failures[static_cast<std::size_t>(t)] +=
            vyre::testing::inject_allocation_failure(allocation_kind::device) ? 1 : 0;
    });
  for (auto& thread : threads) thread.join();
  int total = 0;
  for (int f : failures) total += f;
  CHECK(total == 1);
  CHECK(fault.fired());
  CHECK(fault.seen() == 8000u);
}

TEST_CASE(
    "try_reserve / try_resize: an injected failure is out_of_memory naming the bytes and "
    "leaves the container unchanged",
    "[reliability][fault]") {
  std::vector<std::uint64_t> v{1, 2, 3};
  {
    scoped_allocation_fault fault(allocation_kind::host, 1);
    const auto r = vyre::try_reserve(v, 100, "test: reserve");
    REQUIRE_FALSE(r.has_value());
    CHECK(fault.fired());
    CHECK(r.error().code() == vyre::errc::out_of_memory);
    CHECK(r.error().value_or("bytes", 0) == 800u);
    CHECK(r.error().value_or("elements", 0) == 100u);
    CHECK(r.error().message().find("test: reserve") != std::string::npos);
    CHECK(v == std::vector<std::uint64_t>{1, 2, 3});
  }
  {
    // Growth within the capacity allocates nothing, so it is never failed.
    REQUIRE(vyre::try_reserve(v, 16, "test: reserve").has_value());
    scoped_allocation_fault fault(allocation_kind::host, 1);
    CHECK(vyre::try_resize(v, 10, "test: resize").has_value());
    CHECK(vyre::try_reserve(v, 12, "test: reserve").has_value());
    CHECK_FALSE(fault.fired());
    const auto r = vyre::try_resize(v, 17, "test: resize");
    REQUIRE_FALSE(r.has_value());
    CHECK(fault.fired());
    CHECK(r.error().value_or("bytes", 0) == 17u * 8u);
    CHECK(v.size() == 10u);
  }
}

TEST_CASE("pack fails cleanly at every host allocation and succeeds past the last",
          "[reliability][fault]") {
  const eg::snapshot source = sample_snapshot();
  const auto reference = eg::pack<expect>(source);
  REQUIRE(reference.has_value());
  const std::vector<std::uint32_t> expected_words(reference->words().begin(),
                                                  reference->words().end());
  std::uint64_t failures = 0;
  for (std::uint64_t n = 1;; ++n) {
    REQUIRE(n < 1000);  // pack makes a handful of allocations
    scoped_allocation_fault fault(allocation_kind::host, n);
    auto image = eg::pack<expect>(source);
    if (!fault.fired()) {
      REQUIRE(image.has_value());
      CHECK(std::vector<std::uint32_t>(image->words().begin(), image->words().end()) ==
            expected_words);
      break;
    }
    INFO("allocation " << n);
    REQUIRE_FALSE(image.has_value());
    CHECK(image.error().code() == vyre::errc::out_of_memory);
    CHECK(image.error().value_or("bytes", UINT64_MAX) != UINT64_MAX);
    ++failures;
  }
  CHECK(failures >= 2u);  // the grouping scratch and the image words at least
}

TEST_CASE("snapshot building reports an injected host failure and stays usable",
          "[reliability][fault]") {
  eg::snapshot s;
  const std::uint32_t lit = s.intern_op("lit");
  {
    // The first row grows the empty row column: that host allocation is the one failed.
    scoped_allocation_fault fault(allocation_kind::host, 1);
    auto row = s.add_row<expect>(7, lit);
    REQUIRE(fault.fired());
    REQUIRE_FALSE(row.has_value());
    CHECK(row.error().code() == vyre::errc::out_of_memory);
    CHECK(row.error().value_or("bytes", 0) > 0u);
  }
  auto row = s.add_row<expect>(7, lit);
  REQUIRE(row.has_value());
  CHECK(*row == 0u);  // the failed add left no row behind
  auto image = eg::pack<expect>(s);
  REQUIRE(image.has_value());
  CHECK(image->layout().row_count == 1u);
}
