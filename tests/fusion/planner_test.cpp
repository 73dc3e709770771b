// SPDX-License-Identifier: Apache-2.0
// The planner on hand-checked lists: the greedy semantics, the optimal mode, every error, the
// compile-time and run-time paths agreeing, storage reuse and reservation failure.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <new>
#include <span>
#include <string>
#include <vector>

#include <vyre/fusion.hpp>

namespace {

using vyre::errc;
using vyre::fusion::group;
using vyre::fusion::materialization;
using vyre::fusion::plan_mode;
using vyre::fusion::stage;

constexpr std::uint64_t layout_a = 0xA11Au;
constexpr std::uint64_t layout_b = 0xB22Bu;

// Five stages: 10 and 11 fuse; 12 has another layout; 13 must see the host; 14 joins 13.
constexpr std::array<stage, 5> mixed_stages{{
    {.id = 10, .layout_hash = layout_a, .input_bytes = 100, .output_bytes = 40, .scratch_bytes = 8},
    {.id = 11, .layout_hash = layout_a, .input_bytes = 40, .output_bytes = 30, .scratch_bytes = 4},
    {.id = 12, .layout_hash = layout_b, .input_bytes = 30, .output_bytes = 20},
    {.id = 13,
     .layout_hash = layout_b,
     .input_bytes = 20,
     .output_bytes = 10,
     .boundary = materialization::host},
    {.id = 14, .layout_hash = layout_b, .input_bytes = 10, .output_bytes = 5, .scratch_bytes = 1},
}};

constexpr auto mixed_plan = vyre::fusion::static_plan(mixed_stages, 1000);
static_assert(mixed_plan.launch_count() == 3);
static_assert(mixed_plan.avoided_launches() == 2);
static_assert(mixed_plan.groups()[0] == group{0, 2, layout_a, 100 + 40 + 8 + 30 + 4, 40});
static_assert(mixed_plan.groups()[1] == group{2, 1, layout_b, 30 + 20, 0});
static_assert(mixed_plan.groups()[2] == group{3, 2, layout_b, 20 + 10 + 5 + 1, 10});
static_assert(mixed_plan.avoided_bytes() == 50);
static_assert(mixed_plan.stage_ids(mixed_plan.groups()[2])[1] == 14);

// The budget decides: 20 + 10 fits 30 exactly, a third stage does not.
constexpr std::array<stage, 3> tight_stages{{
    {.id = 1, .layout_hash = layout_a, .input_bytes = 10, .output_bytes = 10},
    {.id = 2, .layout_hash = layout_a, .input_bytes = 10, .output_bytes = 10},
    {.id = 3, .layout_hash = layout_a, .input_bytes = 10, .output_bytes = 10},
}};
static_assert(vyre::fusion::static_plan(tight_stages, 30).launch_count() == 2);
static_assert(vyre::fusion::static_plan(tight_stages, 30).groups()[0].required_bytes == 30);
static_assert(vyre::fusion::static_plan(tight_stages, 29).launch_count() == 3);
static_assert(vyre::fusion::static_plan(tight_stages, 40).launch_count() == 1);

// Greedy joins B to A, after which C's large input must start its own launch and D cannot join
// it: three launches. Cutting after A lets B (no input) carry C and D: two.
constexpr std::array<stage, 4> greedy_loses{{
    {.id = 0, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 50},
    {.id = 1, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 40},
    {.id = 2, .layout_hash = layout_a, .input_bytes = 60, .output_bytes = 20},
    {.id = 3, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 30},
}};
constexpr auto greedy_loses_greedy = vyre::fusion::static_plan(greedy_loses, 100);
constexpr auto greedy_loses_optimal =
    vyre::fusion::static_plan(greedy_loses, 100, plan_mode::optimal);
static_assert(greedy_loses_greedy.launch_count() == 3);
static_assert(greedy_loses_optimal.launch_count() == 2);
static_assert(greedy_loses_optimal.groups()[1] == group{1, 3, layout_a, 0 + 40 + 20 + 30, 60});

// Equal launch counts, but the optimal cut keeps the large intermediate in registers.
constexpr std::array<stage, 3> avoided_differs{{
    {.id = 0, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 10},
    {.id = 1, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 60},
    {.id = 2, .layout_hash = layout_a, .input_bytes = 0, .output_bytes = 30},
}};
static_assert(vyre::fusion::static_plan(avoided_differs, 90).launch_count() == 2);
static_assert(vyre::fusion::static_plan(avoided_differs, 90).avoided_bytes() == 10);
static_assert(vyre::fusion::static_plan(avoided_differs, 90, plan_mode::optimal).launch_count() ==
              2);
static_assert(vyre::fusion::static_plan(avoided_differs, 90, plan_mode::optimal).avoided_bytes() ==
              60);

// Errors are values in a constant expression too.
static_assert(vyre::fusion::plan_launch_fusion(tight_stages, 0).error().code() ==
              errc::invalid_argument);
static_assert(vyre::fusion::plan_launch_fusion(tight_stages, 19).error().code() ==
              errc::out_of_range);
static_assert(vyre::fusion::static_plan(std::array<stage, 0>{}, 1).launch_count() == 0);

template <std::size_t N>
vyre::fusion::plan run_plan(const std::array<stage, N>& stages, std::uint64_t budget,
                            plan_mode mode) {
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan out;
  auto done = vyre::fusion::plan_launch_fusion(stages, budget, workspace, out, mode);
  REQUIRE(done.has_value());
  return out;
}

}  // namespace

TEST_CASE("greedy plan: layout change, host boundary and budget split groups", "[fusion]") {
  const auto out = run_plan(mixed_stages, 1000, plan_mode::greedy);
  CHECK(vyre::fusion::same_plan(out, mixed_plan));
  REQUIRE(out.launch_count() == 3);
  CHECK(out.stage_count() == 5);
  CHECK(out.avoided_launches() == 2);
  CHECK(out.avoided_bytes() == 50);
  const auto ids = out.stage_ids(out.groups()[0]);
  CHECK(std::vector<std::uint32_t>(ids.begin(), ids.end()) == std::vector<std::uint32_t>{10, 11});
}

TEST_CASE("a stage needing host materialization never joins, but may start a group", "[fusion]") {
  constexpr std::array<stage, 3> stages{{
      {.id = 0, .layout_hash = layout_a, .output_bytes = 4, .boundary = materialization::host},
      {.id = 1, .layout_hash = layout_a, .output_bytes = 4},
      {.id = 2, .layout_hash = layout_a, .output_bytes = 4, .boundary = materialization::host},
  }};
  constexpr auto plan = vyre::fusion::static_plan(stages, 1 << 20);
  STATIC_REQUIRE(plan.launch_count() == 2);
  STATIC_REQUIRE(plan.groups()[0].stage_count == 2);
  STATIC_REQUIRE(plan.groups()[1].first_stage == 2);
  CHECK(vyre::fusion::same_plan(run_plan(stages, 1 << 20, plan_mode::greedy), plan));
  CHECK(vyre::fusion::same_plan(run_plan(stages, 1 << 20, plan_mode::optimal),
                                vyre::fusion::static_plan(stages, 1 << 20, plan_mode::optimal)));
}

TEST_CASE("the budget bounds required bytes exactly (<=)", "[fusion]") {
  CHECK(run_plan(tight_stages, 30, plan_mode::greedy).launch_count() == 2);
  CHECK(run_plan(tight_stages, 29, plan_mode::greedy).launch_count() == 3);
  CHECK(run_plan(tight_stages, 40, plan_mode::greedy).launch_count() == 1);
  CHECK(run_plan(tight_stages, 40, plan_mode::greedy).avoided_bytes() == 20);
}

TEST_CASE("optimal mode beats greedy where greedy's eager join blocks later ones", "[fusion]") {
  const auto greedy = run_plan(greedy_loses, 100, plan_mode::greedy);
  const auto optimal = run_plan(greedy_loses, 100, plan_mode::optimal);
  CHECK(greedy.launch_count() == 3);
  CHECK(optimal.launch_count() == 2);
  CHECK(vyre::fusion::same_plan(greedy, greedy_loses_greedy));
  CHECK(vyre::fusion::same_plan(optimal, greedy_loses_optimal));
  const auto same_count = run_plan(avoided_differs, 90, plan_mode::optimal);
  CHECK(same_count.launch_count() == 2);
  CHECK(same_count.avoided_bytes() == 60);
}

TEST_CASE("an empty stage list gives an empty plan", "[fusion]") {
  vyre::fusion::plan_workspace workspace;
  for (const plan_mode mode : {plan_mode::greedy, plan_mode::optimal}) {
    auto out = vyre::fusion::plan_launch_fusion(std::span<const stage>{}, 64, workspace, mode);
    REQUIRE(out.has_value());
    CHECK(out->launch_count() == 0);
    CHECK(out->stage_count() == 0);
    CHECK(out->avoided_launches() == 0);
    CHECK(out->avoided_bytes() == 0);
  }
}

namespace {
vyre::error plan_error(std::span<const stage> stages, std::uint64_t budget,
                       plan_mode mode = plan_mode::greedy) {
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan out;
  auto done = vyre::fusion::plan_launch_fusion(stages, budget, workspace, out, mode);
  REQUIRE_FALSE(done.has_value());
  CHECK(out.launch_count() == 0);  // a failed plan leaves nothing half_of_u64-written
  CHECK(out.stage_count() == 0);
  return done.error();
}
}  // namespace

TEST_CASE("a zero budget is rejected", "[fusion][errors]") {
  const auto err = plan_error(tight_stages, 0);
  CHECK(err.code() == errc::invalid_argument);
  CHECK_THAT(err.message(), Catch::Contains("budget is zero") && Catch::Contains("Fix:"));
  // Even with no stages: the budget is checked first.
  CHECK(plan_error({}, 0).code() == errc::invalid_argument);
}

TEST_CASE("a duplicate stage id is rejected, naming the id and both positions",
          "[fusion][errors]") {
  const std::array<stage, 4> stages{{{.id = 7, .layout_hash = 1},
                                     {.id = 8, .layout_hash = 1},
                                     {.id = 9, .layout_hash = 1},
                                     {.id = 8, .layout_hash = 1}}};
  for (const plan_mode mode : {plan_mode::greedy, plan_mode::optimal}) {
    const auto err = plan_error(stages, 64, mode);
    CHECK(err.code() == errc::duplicate);
    CHECK(err.value_or("stage_id", 0) == 8);
    CHECK(err.value_or("first_position", 0) == 1);
    CHECK(err.value_or("second_position", 0) == 3);
    CHECK_THAT(err.message(), Catch::Contains("stage_id=8"));
  }
  const auto fixed = vyre::fusion::plan_launch_fusion(stages, 64);
  REQUIRE_FALSE(fixed.has_value());
  CHECK(fixed.error().value_or("stage_id", 0) == 8);
}

TEST_CASE("ids colliding in the id table are told apart", "[fusion]") {
  // Many ids, all distinct: the table's probing must not report false duplicates.
  std::vector<stage> stages;
  for (std::uint32_t i = 0; i < 5000; ++i)
    stages.push_back({.id = i * 4096u + 17u, .layout_hash = 3, .output_bytes = 1});
  vyre::fusion::plan_workspace workspace;
  auto out = vyre::fusion::plan_launch_fusion(stages, 1'000'000, workspace);
  REQUIRE(out.has_value());
  CHECK(out->launch_count() == 1);
  stages.push_back({.id = 4096u * 4321u + 17u, .layout_hash = 3});
  CHECK(plan_error(stages, 1'000'000).value_or("second_position", 0) == 5000);
}

TEST_CASE("byte-count overflow is rejected, naming the field and the stage", "[fusion][errors]") {
  const std::array<stage, 2> input_output{
      {{.id = 1, .layout_hash = 1},
       {.id = 2, .layout_hash = 1, .input_bytes = UINT64_MAX, .output_bytes = 1}}};
  auto err = plan_error(input_output, UINT64_MAX);
  CHECK(err.code() == errc::overflow);
  CHECK(err.value_or("stage_id", 0) == 2);
  CHECK_THAT(err.message(), Catch::Contains("input_bytes + output_bytes overflows"));

  const std::array<stage, 1> scratch{{{.id = 5,
                                       .layout_hash = 1,
                                       .input_bytes = UINT64_MAX - 4,
                                       .output_bytes = 4,
                                       .scratch_bytes = 1}}};
  err = plan_error(scratch, UINT64_MAX, plan_mode::optimal);
  CHECK(err.code() == errc::overflow);
  CHECK(err.value_or("stage_id", 0) == 5);
  CHECK_THAT(err.message(), Catch::Contains("+ scratch_bytes overflows"));
}

TEST_CASE("the plan's total avoided bytes overflowing u64 is rejected", "[fusion][errors]") {
  constexpr std::uint64_t half_of_u64 = std::uint64_t{1} << 63;
  // Two groups (layouts differ), each keeping 2^63 bytes in registers: 2^64 in total.
  const std::array<stage, 4> stages{{{.id = 0, .layout_hash = 1, .output_bytes = half_of_u64},
                                     {.id = 1, .layout_hash = 1},
                                     {.id = 2, .layout_hash = 2, .output_bytes = half_of_u64},
                                     {.id = 3, .layout_hash = 2}}};
  for (const plan_mode mode : {plan_mode::greedy, plan_mode::optimal}) {
    const auto err = plan_error(stages, UINT64_MAX, mode);
    CHECK(err.code() == errc::overflow);
    CHECK_THAT(err.message(), Catch::Contains("total avoided bytes"));
  }
}

TEST_CASE("a stage over the budget on its own is rejected with id, required and budget",
          "[fusion][errors]") {
  const std::array<stage, 2> stages{
      {{.id = 1, .layout_hash = 1, .output_bytes = 10},
       {.id = 6, .layout_hash = 1, .input_bytes = 70, .output_bytes = 20, .scratch_bytes = 11}}};
  const auto err = plan_error(stages, 100);
  CHECK(err.code() == errc::out_of_range);
  CHECK(err.value_or("stage_id", 0) == 6);
  CHECK(err.value_or("required", 0) == 101);
  CHECK(err.value_or("budget", 0) == 100);
  CHECK_THAT(err.message(), Catch::Contains("stage_id=6, required=101, budget=100"));
}

TEST_CASE("the stage count must fit u32 positions", "[fusion][errors]") {
  CHECK(vyre::fusion::detail::checked_stage_count(5).value() == 5u);
  const auto too_many = vyre::fusion::detail::checked_stage_count(std::size_t{UINT32_MAX});
  REQUIRE_FALSE(too_many.has_value());
  CHECK(too_many.error().code() == errc::out_of_range);
}

TEST_CASE("throw_exception policy turns a planning error into vyre::error_exception",
          "[fusion][errors]") {
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan out;
  try {
    vyre::fusion::plan_launch_fusion<vyre::on_error::throw_exception>(tight_stages, 0, workspace,
                                                                      out);
    FAIL("expected an exception");
  } catch (const vyre::error_exception& e) {
    CHECK(e.code() == errc::invalid_argument);
  }
  const vyre::fusion::plan planned =
      vyre::fusion::plan_launch_fusion<vyre::on_error::throw_exception>(tight_stages, 30,
                                                                        workspace);
  CHECK(planned.launch_count() == 2);
}

TEST_CASE("one workspace and plan serve lists of changing length", "[fusion]") {
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan out;
  REQUIRE(vyre::fusion::plan_launch_fusion(mixed_stages, 1000, workspace, out, plan_mode::optimal));
  CHECK(vyre::fusion::same_plan(out,
                                vyre::fusion::static_plan(mixed_stages, 1000, plan_mode::optimal)));
  REQUIRE(vyre::fusion::plan_launch_fusion(tight_stages, 30, workspace, out));
  CHECK(vyre::fusion::same_plan(out, vyre::fusion::static_plan(tight_stages, 30)));
  REQUIRE_FALSE(vyre::fusion::plan_launch_fusion(tight_stages, 0, workspace, out));
  CHECK(out.launch_count() == 0);
  REQUIRE(vyre::fusion::plan_launch_fusion(greedy_loses, 100, workspace, out, plan_mode::optimal));
  CHECK(vyre::fusion::same_plan(out, greedy_loses_optimal));
}

namespace {
// An allocator that fails once more than `limit` bytes are live: planner storage failure.
struct allocation_budget {
  std::size_t limit = 0;
  std::size_t live = 0;
};
template <class T>
struct capped_allocator {
  using value_type = T;
  allocation_budget* budget;
  explicit capped_allocator(allocation_budget* b) noexcept : budget(b) {}
  template <class U>
  capped_allocator(const capped_allocator<U>& other) noexcept : budget(other.budget) {}
  T* allocate(std::size_t n) {
    if (n * sizeof(T) > budget->limit - budget->live) throw std::bad_alloc();
    budget->live += n * sizeof(T);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    budget->live -= n * sizeof(T);
    std::allocator<T>().deallocate(p, n);
  }
  template <class U>
  bool operator==(const capped_allocator<U>& other) const noexcept {
    return budget == other.budget;
  }
};
}  // namespace

TEST_CASE("failure to reserve planner storage is an out_of_memory error", "[fusion][errors]") {
  std::vector<stage> stages;
  for (std::uint32_t i = 0; i < 100; ++i) stages.push_back({.id = i, .layout_hash = 1});
  for (const std::size_t limit :
       {std::size_t{0}, std::size_t{256 * 8}, std::size_t{256 * 8 + 400},
        std::size_t{256 * 8 + 400 + 2000}, std::size_t{256 * 8 + 400 + 3200},
        std::size_t{256 * 8 + 400 + 3200 + 404 + 100}}) {
    allocation_budget budget{limit, 0};
    using alloc = capped_allocator<std::byte>;
    vyre::fusion::basic_plan_workspace<alloc> workspace{alloc(&budget)};
    vyre::fusion::basic_plan<alloc> out{alloc(&budget)};
    auto done = vyre::fusion::plan_launch_fusion(stages, 64, workspace, out, plan_mode::optimal);
    REQUIRE_FALSE(done.has_value());
    CHECK(done.error().code() == errc::out_of_memory);
    CHECK_THAT(done.error().message(), Catch::Contains("vyre::fusion::plan_launch_fusion"));
    CHECK(out.launch_count() == 0);
  }
  allocation_budget enough{1 << 20, 0};
  using alloc = capped_allocator<std::byte>;
  vyre::fusion::basic_plan_workspace<alloc> workspace{alloc(&enough)};
  vyre::fusion::basic_plan<alloc> out{alloc(&enough)};
  REQUIRE(vyre::fusion::plan_launch_fusion(stages, 64, workspace, out, plan_mode::optimal));
  CHECK(out.launch_count() == 1);
}
