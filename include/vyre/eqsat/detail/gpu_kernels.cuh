// SPDX-License-Identifier: Apache-2.0
//! @file
//! The apply step of `vyre::eqsat::gpu_engine`: `gpu_actions` (a rule's `make_node` steps,
//! flattened) and the kernel that appends a match's right-hand side as fresh rows and unites
//! its result with the match's root. The public device pieces it builds on (e-matching,
//! union-find, rebuild, hash-cons) are in `vyre/eqsat/device/`.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/config.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"

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

// --- apply ----------------------------------------------------------------------------------

//! Per match: appends the right-hand side's rows with fresh classes (no lookup: the rebuild
//! merges a fresh row into an identical existing one), then unions the result with the root.
template <int = 0>
VYRE_KERNEL void eqsat_apply_kernel(gpu_actions a, const std::uint32_t* matches,
                                    std::uint32_t match_count, std::uint32_t* parent) {
  VYRE_DETAIL_GRID_LOOP(m, match_count) {
    const std::uint32_t* saved = matches + m * a.saved_count;
    const auto fresh = [&](std::uint32_t step) {
      return static_cast<std::uint32_t>(a.class_base + m * a.step_count + step);
    };
    const auto value = [&](std::uint8_t kind, std::uint32_t v) {
      return kind == 0 ? saved[v] : kind == 1 ? v : fresh(v);  // saved, literal, temp
    };
    for (std::uint32_t s = 0; s < a.step_count; ++s) {
      const gpu_step& step = a.steps[s];
      std::uint32_t* row = step.cells + (step.row_base + m) * std::size_t{step.width};
      for (std::uint32_t c = 0; c + 1 < step.width; ++c)
        row[c] = value(step.kind[c], step.value[c]);
      row[step.width - 1] = fresh(s);
    }
    (void)device::union_find_ref{parent, 0}.unite(saved[0], value(a.result_kind, a.result_value));
  }
}

}  // namespace vyre::eqsat::detail
