// SPDX-License-Identifier: Apache-2.0
//! @file
//! `plan_launch_fusion`: which adjacent pipeline stages run as one launch.
//!
//! Greedy (the reference semantics): walk the stages in order. A group starts at stage s with
//! required = input + output + scratch of s. The next stage t joins while its layout hash equals
//! the group's, t needs no host materialization, and required + t.scratch + t.output <= budget;
//! on a join required grows by t.scratch + t.output and the output of the stage before t counts
//! as avoided intermediate bytes. Otherwise t starts the next group. The optimal mode keeps the
//! same join rules and picks the split points by dynamic programming instead.
//!
//! Three ways in, one algorithm (so their plans are identical):
//!
//!     // Compile time: a fixed_plan<N>, or a compile error that names the reason.
//!     constexpr std::array stages{vyre::fusion::stage{.id = 0, .layout_hash = 7, ...}, ...};
//!     constexpr auto plan = vyre::fusion::static_plan(stages, 1 << 20);
//!     static_assert(plan.launch_count() == 1);
//!
//!     // Constant expression or run time, errors as values: expected<fixed_plan<N>>.
//!     constexpr auto maybe = vyre::fusion::plan_launch_fusion(stages, 1 << 20);
//!
//!     // Run time over any number of stages, reusing caller-owned storage.
//!     vyre::fusion::plan_workspace workspace;
//!     vyre::fusion::plan plan;
//!     auto done = vyre::fusion::plan_launch_fusion(stage_vector, budget, workspace, plan);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <cuda/std/limits>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/fusion/detail/planner.hpp"
#include "vyre/fusion/stage.hpp"

namespace vyre::fusion {

//! Plans `N` stages without allocating; usable in a constant expression and at run time.
//!
//! @returns the plan, or the first error in this order: `errc::invalid_argument` for a zero
//!          budget; then, stage by stage, `errc::overflow` naming the byte field that overflowed,
//!          `errc::out_of_range` for a stage whose own input + output + scratch exceeds the
//!          budget (stage_id, required, budget), `errc::duplicate` naming a repeated stage id;
//!          finally `errc::overflow` if the plan's total avoided bytes overflow u64.
//! @note An empty stage list gives an empty plan (no groups, no launches).
template <std::size_t N>
constexpr expected<fixed_plan<N>> plan_launch_fusion(const std::array<stage, N>& stages,
                                                     std::uint64_t budget,
                                                     plan_mode mode = plan_mode::greedy) noexcept {
  static_assert(N < (cuda::std::numeric_limits<std::uint32_t>::max)(),
                "vyre::fusion::plan_launch_fusion: a fixed plan holds fewer than 2^32 - 1 stages");
  std::array<std::uint64_t, detail::id_table_size(N)> id_slots{};
  VYRE_TRY(detail::validate(stages, budget, id_slots));
  fixed_plan<N> plan{};
  expected<detail::grouping> grouped = detail::grouping{};
  if (mode == plan_mode::optimal) {
    std::array<std::uint32_t, N + 1> launches{};
    std::array<std::uint64_t, N + 1> avoided{};
    std::array<std::uint32_t, N + 1> split{};
    grouped = detail::group_optimal(stages, budget, {launches, avoided, split}, plan.stage_ids_,
                                    plan.groups_);
  } else {
    grouped = detail::group_greedy(stages, budget, plan.stage_ids_, plan.groups_);
  }
  if (!grouped) return fail(grouped.error());
  plan.group_count_ = grouped->group_count;
  plan.avoided_bytes_ = grouped->avoided_bytes;
  return plan;
}

//! Functions with no definition, never `constexpr`: `static_plan` calls the one that names why
//! a plan failed, so the compiler's message carries the reason (g++: "call to non-'constexpr'
//! function '... compile_time_error::duplicate_stage_id(uint32_t)'"; nvcc: "cannot call
//! non-constexpr function ...").
namespace compile_time_error {
void fusion_budget_is_zero_pass_a_budget_above_zero(std::uint64_t budget) noexcept;
void duplicate_stage_id_give_every_stage_a_unique_id(std::uint64_t stage_id) noexcept;
void stage_bytes_overflow_u64_input_plus_output_plus_scratch(std::uint64_t stage_id) noexcept;
void stage_needs_more_bytes_than_the_budget_raise_it_or_split_the_stage(
    std::uint64_t stage_id, std::uint64_t required, std::uint64_t budget) noexcept;
void plan_total_avoided_bytes_overflow_u64() noexcept;
}  // namespace compile_time_error

namespace detail {
//! Reached only in constant evaluation (from `static_plan`), and then only on failure.
constexpr void report_at_compile_time(const error& err) noexcept {
  const char* context = err.context();
  if (context == text::zero_budget)
    compile_time_error::fusion_budget_is_zero_pass_a_budget_above_zero(err.value_or("budget", 0));
  else if (context == text::duplicate_id)
    compile_time_error::duplicate_stage_id_give_every_stage_a_unique_id(
        err.value_or("stage_id", 0));
  else if (context == text::input_plus_output_overflow || context == text::plus_scratch_overflow)
    compile_time_error::stage_bytes_overflow_u64_input_plus_output_plus_scratch(
        err.value_or("stage_id", 0));
  else if (context == text::stage_over_budget)
    compile_time_error::stage_needs_more_bytes_than_the_budget_raise_it_or_split_the_stage(
        err.value_or("stage_id", 0), err.value_or("required", 0), err.value_or("budget", 0));
  else if (context == text::plan_avoided_overflow)
    compile_time_error::plan_total_avoided_bytes_overflow_u64();
  // Nothing else can fail in a constant expression (the stage count is checked statically).
}
}  // namespace detail

//! The plan of `stages`, computed by the compiler. A list that cannot be planned stops the
//! compilation with a message naming the reason (see `compile_time_error`).
//!
//!     constexpr auto plan = vyre::fusion::static_plan(stages, budget);
//!     vyre::fusion::fused_pipeline<plan, float, scale, add, square> pipeline;  // fusion.cuh
template <std::size_t N>
consteval fixed_plan<N> static_plan(const std::array<stage, N>& stages, std::uint64_t budget,
                                    plan_mode mode = plan_mode::greedy) {
  auto plan = plan_launch_fusion(stages, budget, mode);
  if (!plan) detail::report_at_compile_time(plan.error());
  return *plan;
}

namespace detail {
template <class Allocator, class T>
using rebound_vector =
    std::vector<T, typename std::allocator_traits<Allocator>::template rebind_alloc<T>>;
struct plan_access;
}  // namespace detail

//! A run-time plan over any number of stages. Reuse one across calls: its storage is kept.
//! @tparam Allocator any allocator; rebound to the element types it stores.
template <class Allocator = std::allocator<std::byte>>
class basic_plan {
 public:
  using allocator_type = Allocator;

  basic_plan() = default;
  explicit basic_plan(const Allocator& allocator) : stage_ids_(allocator), groups_(allocator) {}

  //! Groups in launch order.
  std::span<const group> groups() const noexcept { return groups_; }
  //! Stage ids in stage-list order.
  std::span<const std::uint32_t> stage_ids() const noexcept { return stage_ids_; }
  //! The ids of the stages in `g`, in order.
  std::span<const std::uint32_t> stage_ids(const group& g) const noexcept {
    return stage_ids().subspan(g.first_stage, g.stage_count);
  }
  std::size_t stage_count() const noexcept { return stage_ids_.size(); }
  std::size_t launch_count() const noexcept { return groups_.size(); }
  std::size_t avoided_launches() const noexcept { return stage_ids_.size() - groups_.size(); }
  std::uint64_t avoided_bytes() const noexcept { return avoided_bytes_; }

 private:
  friend struct detail::plan_access;
  detail::rebound_vector<Allocator, std::uint32_t> stage_ids_;
  detail::rebound_vector<Allocator, group> groups_;
  std::uint64_t avoided_bytes_ = 0;
};

//! The planner's scratch: the duplicate-id table and the optimal mode's tables. Reuse one
//! across calls so planning allocates only when a longer stage list arrives.
template <class Allocator = std::allocator<std::byte>>
class basic_plan_workspace {
 public:
  using allocator_type = Allocator;

  basic_plan_workspace() = default;
  explicit basic_plan_workspace(const Allocator& allocator)
      : id_slots_(allocator), launches_(allocator), avoided_(allocator), split_(allocator) {}

 private:
  friend struct detail::plan_access;
  detail::rebound_vector<Allocator, std::uint64_t> id_slots_;
  detail::rebound_vector<Allocator, std::uint32_t> launches_;
  detail::rebound_vector<Allocator, std::uint64_t> avoided_;
  detail::rebound_vector<Allocator, std::uint32_t> split_;
};

using plan = basic_plan<>;
using plan_workspace = basic_plan_workspace<>;

namespace detail {
struct plan_access {
  template <class Allocator>
  static expected<void> run(std::span<const stage> stages, std::uint64_t budget,
                            basic_plan_workspace<Allocator>& workspace, basic_plan<Allocator>& out,
                            plan_mode mode) noexcept {
    auto done = plan_into(stages, budget, workspace, out, mode);
    if (!done) {
      // Whatever failed, the caller sees an empty plan, never a half-written one.
      out.groups_.clear();
      out.stage_ids_.clear();
      out.avoided_bytes_ = 0;
    }
    return done;
  }

 private:
  template <class Allocator>
  static expected<void> plan_into(std::span<const stage> stages, std::uint64_t budget,
                                  basic_plan_workspace<Allocator>& workspace,
                                  basic_plan<Allocator>& out, plan_mode mode) noexcept {
    VYRE_TRY_ASSIGN(const std::uint32_t count, checked_stage_count(stages.size()));
    VYRE_TRY(try_resize(workspace.id_slots_, id_table_size(count),
                        "vyre::fusion::plan_launch_fusion: planner id table"));
    VYRE_TRY(validate(stages, budget, workspace.id_slots_));
    VYRE_TRY(try_resize(out.stage_ids_, count, "vyre::fusion::plan_launch_fusion: plan stage ids"));
    VYRE_TRY(try_resize(out.groups_, count, "vyre::fusion::plan_launch_fusion: plan groups"));
    expected<grouping> grouped = grouping{};
    if (mode == plan_mode::optimal) {
      const std::size_t rows = std::size_t{count} + 1;
      VYRE_TRY(try_resize(workspace.launches_, rows,
                          "vyre::fusion::plan_launch_fusion: optimal planner launch table"));
      VYRE_TRY(try_resize(workspace.avoided_, rows,
                          "vyre::fusion::plan_launch_fusion: optimal planner avoided-bytes table"));
      VYRE_TRY(try_resize(workspace.split_, rows,
                          "vyre::fusion::plan_launch_fusion: optimal planner split table"));
      grouped =
          group_optimal(stages, budget, {workspace.launches_, workspace.avoided_, workspace.split_},
                        out.stage_ids_, out.groups_);
    } else {
      grouped = group_greedy(stages, budget, out.stage_ids_, out.groups_);
    }
    if (!grouped) return fail(grouped.error());
    out.groups_.resize(grouped->group_count);  // shrinking: never allocates
    out.avoided_bytes_ = grouped->avoided_bytes;
    return {};
  }
};
}  // namespace detail

//! Plans `stages` at run time into `out`, reusing the storage of `out` and `workspace`.
//!
//! @returns nothing, or the errors listed for the fixed-size overload, plus `errc::out_of_range`
//!          for 2^32 - 1 stages or more and `errc::out_of_memory` when the planner's storage
//!          cannot be reserved. On failure `out` is empty (its storage is kept).
//! @tparam OnError `vyre::on_error::return_expected` (default) or `throw_exception`.
template <class OnError = on_error::return_expected, class Allocator>
result_t<OnError, void> plan_launch_fusion(std::span<const stage> stages, std::uint64_t budget,
                                           basic_plan_workspace<Allocator>& workspace,
                                           basic_plan<Allocator>& out,
                                           plan_mode mode = plan_mode::greedy) {
  return apply_error_policy<OnError>(
      detail::plan_access::run(stages, budget, workspace, out, mode));
}

//! As above, returning a new plan (its allocator copied from nothing: default-constructed).
template <class OnError = on_error::return_expected, class Allocator>
result_t<OnError, basic_plan<Allocator>> plan_launch_fusion(
    std::span<const stage> stages, std::uint64_t budget, basic_plan_workspace<Allocator>& workspace,
    plan_mode mode = plan_mode::greedy) {
  basic_plan<Allocator> out;
  auto done = detail::plan_access::run(stages, budget, workspace, out, mode);
  if (!done)
    return apply_error_policy<OnError>(expected<basic_plan<Allocator>>(fail(done.error())));
  return apply_error_policy<OnError>(expected<basic_plan<Allocator>>(std::move(out)));
}

}  // namespace vyre::fusion
