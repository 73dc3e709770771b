// SPDX-License-Identifier: Apache-2.0
//! @file
//! The planner's vocabulary: a pipeline `stage`, a fused `group` of adjacent stages, and the two
//! plan shapes that hold groups: `fixed_plan<N>` (no allocation, usable in constant expressions
//! and as a template argument) and `basic_plan<Allocator>` (run time, reusable storage).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

namespace vyre::fusion {

//! Whether the boundary in front of a stage must be materialized where the host can see it.
//! A stage that needs it never joins the launch of the stage before it.
enum class materialization : std::uint8_t {
  none = 0,  //!< the stage's input may stay on the device, in registers: it may be fused
  host = 1,  //!< the stage's input must reach the host first: it always starts a new launch
};

//! Which planner `plan_launch_fusion` runs.
enum class plan_mode : std::uint8_t {
  //! One pass, each stage joins the current launch when it can (the reference semantics).
  greedy = 0,
  //! Dynamic programming over split points: fewest launches, then most avoided bytes.
  optimal = 1,
};

//! One pipeline stage as the planner sees it. An aggregate, so stage lists can be `constexpr`.
struct stage {
  std::uint32_t id = 0;           //!< unique within one stage list
  std::uint64_t layout_hash = 0;  //!< stages fuse only with stages of the same memory layout
  std::uint64_t input_bytes = 0;
  std::uint64_t output_bytes = 0;
  std::uint64_t scratch_bytes = 0;
  materialization boundary = materialization::none;

  friend constexpr bool operator==(const stage&, const stage&) = default;
};

//! Adjacent stages that run as one launch.
struct group {
  std::uint32_t first_stage = 0;  //!< position of the group's first stage in the stage list
  std::uint32_t stage_count = 0;  //!< how many consecutive stages the launch runs
  std::uint64_t layout_hash = 0;  //!< the layout every stage of the group shares
  //! Input + output + scratch of the first stage, plus output + scratch of each joined stage.
  std::uint64_t required_bytes = 0;
  //! Output bytes of every stage but the last: intermediates that never reach device memory.
  std::uint64_t avoided_bytes = 0;

  friend constexpr bool operator==(const group&, const group&) = default;
};

//! A plan over exactly `N` stages, held in arrays: no allocation, so it can be computed in a
//! constant expression and passed as a template argument (`fused_pipeline<plan, ...>`).
//!
//! @note The data members are public only because a class used as a template argument must
//!       have public members; read the plan through the accessors.
template <std::size_t N>
struct fixed_plan {
  std::array<std::uint32_t, N> stage_ids_{};
  std::array<group, N> groups_{};
  std::uint32_t group_count_ = 0;
  std::uint64_t avoided_bytes_ = 0;

  static constexpr std::size_t capacity = N;

  //! Groups in launch order.
  constexpr std::span<const group> groups() const noexcept {
    return {groups_.data(), group_count_};
  }
  //! Stage ids in stage-list order (a plan never reorders stages).
  constexpr std::span<const std::uint32_t> stage_ids() const noexcept {
    return {stage_ids_.data(), N};
  }
  //! The ids of the stages in `g`, in order.
  constexpr std::span<const std::uint32_t> stage_ids(const group& g) const noexcept {
    return stage_ids().subspan(g.first_stage, g.stage_count);
  }
  constexpr std::size_t stage_count() const noexcept { return N; }
  //! One launch per group.
  constexpr std::size_t launch_count() const noexcept { return group_count_; }
  //! Launches saved against one launch per stage: stages - groups.
  constexpr std::size_t avoided_launches() const noexcept { return N - group_count_; }
  //! Intermediate bytes that stay out of device memory, over all groups.
  constexpr std::uint64_t avoided_bytes() const noexcept { return avoided_bytes_; }

  friend constexpr bool operator==(const fixed_plan&, const fixed_plan&) = default;
};

//! Satisfied by both plan shapes.
template <class P>
concept plan_like = requires(const P& p, const group& g) {
  { p.groups() } -> std::convertible_to<std::span<const group>>;
  { p.stage_ids() } -> std::convertible_to<std::span<const std::uint32_t>>;
  { p.stage_ids(g) } -> std::convertible_to<std::span<const std::uint32_t>>;
  { p.avoided_bytes() } -> std::convertible_to<std::uint64_t>;
};

//! Whether two plans (of either shape) hold the same groups, stage ids and totals.
template <plan_like A, plan_like B>
constexpr bool same_plan(const A& a, const B& b) noexcept {
  const auto ga = a.groups(), gb = b.groups();
  const auto ia = a.stage_ids(), ib = b.stage_ids();
  if (ga.size() != gb.size() || ia.size() != ib.size() || a.avoided_bytes() != b.avoided_bytes())
    return false;
  for (std::size_t i = 0; i < ga.size(); ++i)
    if (!(ga[i] == gb[i])) return false;
  for (std::size_t i = 0; i < ia.size(); ++i)
    if (ia[i] != ib[i]) return false;
  return true;
}

}  // namespace vyre::fusion
