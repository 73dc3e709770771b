// SPDX-License-Identifier: Apache-2.0
//! @file
//! The apply step of `vyre::eqsat::gpu_engine`: `gpu_actions` (a rule's `make_node` steps,
//! flattened) and the kernel that appends a match's right-hand side as fresh rows and unites
//! its result with the match's root; and the one-thread kernel that places every rule's new
//! rows and classes from match totals on the device (the engine's captured iterations). The public
//! device pieces it builds on (e-matching, union-find, rebuild, hash-cons) are in
//! `vyre/eqsat/device/`.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/config.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/graph/loop_graph.cuh"

namespace vyre::eqsat::detail {

inline constexpr std::uint32_t gpu_max_steps = 16;  //!< `make_node` steps of a right side

//! One `make_node` step: its row `row_base + match` of the table at `cells`.
struct gpu_step {
  std::uint32_t* cells;
  std::uint32_t width;
  std::uint32_t row_base;
  std::uint32_t value[device::max_width];
  std::uint8_t kind[device::max_width];  //!< an `operand_kind` per argument column
};

struct gpu_actions {
  gpu_step steps[gpu_max_steps];
  std::uint32_t step_count;
  std::uint32_t saved_count;
  std::uint32_t class_base;  //!< step s of match m makes class `class_base + m * steps + s`
  std::uint32_t result_value;
  std::uint8_t result_kind;
};

//! Where one rule's apply writes, placed on the device (`eqsat_place_kernel`): u32
//! `[matches, class_base, row_base of each step]`.
inline constexpr std::uint32_t gpu_placed_words = 2 + gpu_max_steps;

//! What placing a rule needs: the table of each step and the matches its buffer holds.
struct gpu_rule_shape {
  std::uint32_t step_count = 0;
  std::uint32_t match_capacity = 0;
  std::uint32_t ctor[gpu_max_steps] = {};
};

// --- apply ----------------------------------------------------------------------------------

//! Per match: appends the right-hand side's rows with fresh classes (no lookup: the rebuild
//! merges a fresh row into an identical existing one), then unions the result with the root.
//! `placed` null: `match_count` matches at the rows and classes of `a`. Else the
//! `gpu_placed_words` the device placed, read when the kernel runs, and `match_count` is the
//! most the grid covers (a captured launch).
template <int = 0>
VYRE_KERNEL void eqsat_apply_kernel(gpu_actions a, const std::uint32_t* matches,
                                    std::uint32_t match_count, std::uint32_t* parent,
                                    const std::uint32_t* placed) {
  const std::uint32_t count =
      placed == nullptr || placed[0] > match_count ? match_count : placed[0];
  const std::uint32_t class_base = placed != nullptr ? placed[1] : a.class_base;
  VYRE_DETAIL_GRID_LOOP(m, count) {
    const std::uint32_t* saved = matches + m * a.saved_count;
    const auto fresh = [&](std::uint32_t step) {
      return static_cast<std::uint32_t>(class_base + m * a.step_count + step);
    };
    const auto value = [&](std::uint8_t kind, std::uint32_t v) {
      return kind == 0 ? saved[v] : kind == 1 ? v : fresh(v);  // saved, literal, temp
    };
    for (std::uint32_t s = 0; s < a.step_count; ++s) {
      const gpu_step& step = a.steps[s];
      const std::uint32_t row_base = placed != nullptr ? placed[2 + s] : step.row_base;
      std::uint32_t* row = step.cells + (row_base + m) * std::size_t{step.width};
      for (std::uint32_t c = 0; c + 1 < step.width; ++c)
        row[c] = value(step.kind[c], step.value[c]);
      row[step.width - 1] = fresh(s);
    }
    (void)device::union_find_ref{parent, 0}.unite(saved[0], value(a.result_kind, a.result_value));
  }
}

// --- placing ----------------------------------------------------------------------------------

//! One thread, after the search of a captured iteration: from every rule's match total
//! (`totals`), the rows in use (`live`, then the class-id count at `live[tables]`) and the
//! capacities (`caps`, the union-find's at `caps[tables]`), whether the apply fits. If it
//! does: `placed` per rule (rows appended after the tables' rows in rule order, classes after
//! the ids, as the launched apply places them), `live_after` the rows after the apply,
//! `status = {1, ids after}`, and the gate opens the rebuild. If not: nothing is placed
//! (every rule's count 0), `live_after = live`, `status = {0, ids}`, the gate stays shut, so
//! the launch leaves the e-graph as it was.
template <int = 0>
VYRE_KERNEL void eqsat_place_kernel(const unsigned long long* totals, const gpu_rule_shape* rules,
                                    std::uint32_t rule_count, const std::uint32_t* live,
                                    const std::uint32_t* caps, std::uint32_t tables,
                                    std::uint32_t* placed, std::uint32_t* live_after,
                                    std::uint32_t* status, graph::while_condition gate) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  bool fits = true;
  std::uint64_t ids = live[tables];
  for (std::uint32_t t = 0; t < tables; ++t) live_after[t] = live[t];
  for (std::uint32_t r = 0; r < rule_count && fits; ++r) {
    const unsigned long long total = totals[r];
    const gpu_rule_shape& rule = rules[r];
    fits = total <= rule.match_capacity;
    for (std::uint32_t s = 0; s < rule.step_count && fits; ++s) {
      const std::uint64_t rows = std::uint64_t{live_after[rule.ctor[s]]} + total;
      fits = rows <= caps[rule.ctor[s]];
      if (fits) live_after[rule.ctor[s]] = static_cast<std::uint32_t>(rows);
    }
    ids += total * rule.step_count;
    fits = fits && ids <= caps[tables];
  }
  for (std::uint32_t t = 0; t < tables; ++t) live_after[t] = live[t];
  std::uint32_t class_base = live[tables];
  for (std::uint32_t r = 0; r < rule_count; ++r) {
    const gpu_rule_shape& rule = rules[r];
    const auto total = fits ? static_cast<std::uint32_t>(totals[r]) : 0u;
    std::uint32_t* at = placed + std::size_t{r} * gpu_placed_words;
    at[0] = total;
    at[1] = class_base;
    for (std::uint32_t s = 0; s < rule.step_count; ++s) {
      at[2 + s] = live_after[rule.ctor[s]];
      live_after[rule.ctor[s]] += total;
    }
    class_base += total * rule.step_count;
  }
  status[0] = fits ? 1u : 0u;
  status[1] = class_base;
  gate.set(fits);
}

}  // namespace vyre::eqsat::detail
