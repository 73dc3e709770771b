// SPDX-License-Identifier: Apache-2.0
//! @file
//! The one planning algorithm behind both plan shapes. It writes into caller-provided spans, so
//! the same code runs in a constant expression (over std::array storage) and at run time (over
//! reusable vectors). Validation runs first and is the only place a stage can be rejected;
//! grouping after it cannot overflow except in the plan's running total.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda/std/limits>

#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/fusion/stage.hpp"

namespace vyre::fusion::detail {

//! Error contexts, named so `static_plan` can tell the reasons apart by identity.
namespace text {
inline constexpr char zero_budget[] = "vyre::fusion::plan_launch_fusion: the memory budget is zero";
inline constexpr char too_many_stages[] =
    "vyre::fusion::plan_launch_fusion: too many stages for u32 stage positions";
inline constexpr char input_plus_output_overflow[] =
    "vyre::fusion::plan_launch_fusion: stage input_bytes + output_bytes overflows u64";
inline constexpr char plus_scratch_overflow[] =
    "vyre::fusion::plan_launch_fusion: stage input_bytes + output_bytes + scratch_bytes "
    "overflows u64";
inline constexpr char stage_over_budget[] =
    "vyre::fusion::plan_launch_fusion: a stage alone needs more bytes (input + output + "
    "scratch) than the budget";
inline constexpr char duplicate_id[] = "vyre::fusion::plan_launch_fusion: two stages share an id";
inline constexpr char plan_avoided_overflow[] =
    "vyre::fusion::plan_launch_fusion: the plan's total avoided bytes overflow u64";
}  // namespace text

//! Slots of the open-addressing id table for `stage_count` stages: a power of two at least
//! twice the count (load <= 1/2 keeps probes short), never below 16.
constexpr std::size_t id_table_size(std::size_t stage_count) noexcept {
  std::size_t size = 16;
  while (size < stage_count * 2) size *= 2;
  return size;
}

//! An empty slot. Occupied slots hold (position << 32 | id); position < 2^32 - 1, so an
//! occupied slot is never all ones.
inline constexpr std::uint64_t empty_slot = ~std::uint64_t{0};

//! Whether the stage list fits the plan's u32 positions.
constexpr expected<std::uint32_t> checked_stage_count(std::size_t count) noexcept {
  if (count >= (cuda::std::numeric_limits<std::uint32_t>::max)())
    return fail(error(errc::out_of_range, text::too_many_stages)
                    .with("stage_count", count)
                    .with("max", (cuda::std::numeric_limits<std::uint32_t>::max)() - 1u)
                    .fix("plan the pipeline in parts of fewer than 2^32 - 1 stages"));
  return static_cast<std::uint32_t>(count);
}

//! Input + output + scratch of `s` alone; `errc::overflow` naming the field that overflowed.
constexpr expected<std::uint64_t> own_required_bytes(const stage& s) noexcept {
  auto with_output =
      checked_add<std::uint64_t>(s.input_bytes, s.output_bytes, text::input_plus_output_overflow);
  if (!with_output) return fail(error(with_output.error()).with("stage_id", s.id));
  auto total =
      checked_add<std::uint64_t>(*with_output, s.scratch_bytes, text::plus_scratch_overflow);
  if (!total) return fail(error(total.error()).with("stage_id", s.id));
  return *total;
}

//! Checks the budget, then each stage in order: its byte counts (overflow, then the budget),
//! then its id against the ids before it. `id_slots` has `id_table_size(stages.size())` slots;
//! its contents on entry do not matter.
constexpr expected<void> validate(std::span<const stage> stages, std::uint64_t budget,
                                  std::span<std::uint64_t> id_slots) noexcept {
  if (budget == 0)
    return fail(error(errc::invalid_argument, text::zero_budget)
                    .with("budget", budget)
                    .fix("pass the bytes one launch may hold (input + output + scratch of its "
                         "stages); it must be greater than zero"));
  for (auto& slot : id_slots) slot = empty_slot;
  const std::size_t mask = id_slots.size() - 1;
  // Fibonacci hashing: the top log2(size) bits of id * 2^64/phi pick the slot.
  const int shift = 64 - std::countr_zero(id_slots.size());
  for (std::size_t position = 0; position < stages.size(); ++position) {
    const stage& s = stages[position];
    auto required = own_required_bytes(s);
    if (!required) return fail(required.error());
    if (*required > budget)
      return fail(error(errc::out_of_range, text::stage_over_budget)
                      .with("stage_id", s.id)
                      .with("required", *required)
                      .with("budget", budget)
                      .fix("raise the budget to at least the stage's required bytes, or split "
                           "the stage"));
    std::size_t slot = static_cast<std::size_t>((s.id * 0x9E3779B97F4A7C15ull) >> shift);
    while (id_slots[slot] != empty_slot) {
      if (static_cast<std::uint32_t>(id_slots[slot]) == s.id)
        return fail(error(errc::duplicate, text::duplicate_id)
                        .with("stage_id", s.id)
                        .with("first_position", id_slots[slot] >> 32)
                        .with("second_position", position)
                        .fix("give every stage of the list a unique id"));
      slot = (slot + 1) & mask;
    }
    id_slots[slot] = (static_cast<std::uint64_t>(position) << 32) | s.id;
  }
  return {};
}

//! The result of grouping: how many groups were written and the plan's avoided bytes.
struct grouping {
  std::uint32_t group_count = 0;
  std::uint64_t avoided_bytes = 0;
};

//! Whether stage `next` may join a group of layout `layout_hash` that already holds `required`
//! bytes (<= budget, so `budget - required` cannot wrap and the test cannot overflow).
constexpr bool can_join(const stage& next, std::uint64_t layout_hash, std::uint64_t required,
                        std::uint64_t budget) noexcept {
  // Validation bounded output + scratch by the stage's own required bytes: no overflow here.
  return next.layout_hash == layout_hash && next.boundary == materialization::none &&
         next.output_bytes + next.scratch_bytes <= budget - required;
}

constexpr expected<std::uint64_t> add_plan_avoided(std::uint64_t total,
                                                   std::uint64_t group_avoided) noexcept {
  return checked_add<std::uint64_t>(total, group_avoided, text::plan_avoided_overflow);
}

//! Writes the stage ids (in order) into `ids_out` and the groups into `groups_out`, both at
//! least `stages.size()` long. Stages must have passed `validate`.
constexpr expected<grouping> group_greedy(std::span<const stage> stages, std::uint64_t budget,
                                          std::span<std::uint32_t> ids_out,
                                          std::span<group> groups_out) noexcept {
  grouping result{};
  const std::size_t n = stages.size();
  std::size_t position = 0;
  while (position < n) {
    const stage& first = stages[position];
    group g{static_cast<std::uint32_t>(position), 1, first.layout_hash,
            first.input_bytes + first.output_bytes + first.scratch_bytes, 0};
    ids_out[position] = first.id;
    ++position;
    while (position < n && can_join(stages[position], g.layout_hash, g.required_bytes, budget)) {
      const stage& next = stages[position];
      g.required_bytes += next.output_bytes + next.scratch_bytes;
      // The stage before `next` hands its output over in registers, never through memory.
      g.avoided_bytes += stages[position - 1].output_bytes;  // <= required <= budget
      ++g.stage_count;
      ids_out[position] = next.id;
      ++position;
    }
    auto total = add_plan_avoided(result.avoided_bytes, g.avoided_bytes);
    if (!total) return fail(total.error());
    result.avoided_bytes = *total;
    groups_out[result.group_count++] = g;
  }
  return result;
}

//! Storage of the optimal planner's table, each span `stages.size() + 1` long.
struct optimal_tables {
  std::span<std::uint32_t> launches;  //!< fewest launches covering stages [0, i)
  std::span<std::uint64_t> avoided;   //!< most avoided bytes among those (saturating)
  std::span<std::uint32_t> split;     //!< start of the last group of that best cover
};

constexpr std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) noexcept {
  return a > (cuda::std::numeric_limits<std::uint64_t>::max)() - b
             ? (cuda::std::numeric_limits<std::uint64_t>::max)()
             : a + b;
}

//! Like `group_greedy`, but chooses the split points by dynamic programming: among all ways to
//! cut the list into groups that each satisfy the join rules (same layout, no host boundary
//! inside a group, required bytes within the budget), one with the fewest groups and, among
//! those, the most avoided bytes. Ties go to the cover found first (earliest last-group start).
//!
//! Whether [i, j) is a valid group is monotone in j for fixed i (its required bytes only grow),
//! so each start extends until the first stage that cannot join: O(stages x longest group).
//! @note Running totals saturate during the search; the chosen plan's total is summed with
//!       checked arithmetic, so an overflow is reported exactly when the best plan overflows.
constexpr expected<grouping> group_optimal(std::span<const stage> stages, std::uint64_t budget,
                                           const optimal_tables& table,
                                           std::span<std::uint32_t> ids_out,
                                           std::span<group> groups_out) noexcept {
  const std::size_t n = stages.size();
  constexpr std::uint32_t unreached = (cuda::std::numeric_limits<std::uint32_t>::max)();
  table.launches[0] = 0;
  table.avoided[0] = 0;
  table.split[0] = 0;
  for (std::size_t i = 1; i <= n; ++i) table.launches[i] = unreached;

  for (std::size_t start = 0; start < n; ++start) {
    // launches[start] is final here: every group ending at `start` began before it.
    const std::uint32_t launches = table.launches[start] + 1;
    const stage& first = stages[start];
    std::uint64_t required = first.input_bytes + first.output_bytes + first.scratch_bytes;
    std::uint64_t avoided = 0;
    std::size_t end = start + 1;  // the group is [start, end)
    while (true) {
      const std::uint64_t candidate = saturating_add(table.avoided[start], avoided);
      if (launches < table.launches[end] ||
          (launches == table.launches[end] && candidate > table.avoided[end])) {
        table.launches[end] = launches;
        table.avoided[end] = candidate;
        table.split[end] = static_cast<std::uint32_t>(start);
      }
      if (end == n || !can_join(stages[end], first.layout_hash, required, budget)) break;
      required += stages[end].output_bytes + stages[end].scratch_bytes;
      avoided += stages[end - 1].output_bytes;
      ++end;
    }
  }

  grouping result{};
  result.group_count = n == 0 ? 0 : table.launches[n];
  // Walk the splits back from the end, writing groups last to first.
  std::size_t end = n;
  std::uint32_t slot = result.group_count;
  while (end > 0) {
    const std::size_t start = table.split[end];
    const stage& first = stages[start];
    group g{static_cast<std::uint32_t>(start), static_cast<std::uint32_t>(end - start),
            first.layout_hash, first.input_bytes + first.output_bytes + first.scratch_bytes, 0};
    ids_out[start] = first.id;
    for (std::size_t k = start + 1; k < end; ++k) {
      g.required_bytes += stages[k].output_bytes + stages[k].scratch_bytes;
      g.avoided_bytes += stages[k - 1].output_bytes;
      ids_out[k] = stages[k].id;
    }
    auto total = add_plan_avoided(result.avoided_bytes, g.avoided_bytes);
    if (!total) return fail(total.error());
    result.avoided_bytes = *total;
    groups_out[--slot] = g;
    end = start;
  }
  return result;
}

}  // namespace vyre::fusion::detail
