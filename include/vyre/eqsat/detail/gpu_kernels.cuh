// SPDX-License-Identifier: Apache-2.0
//! @file
//! The apply step of `vyre::eqsat::gpu_engine`: `gpu_actions` (a `rule_plan`'s head, flattened)
//! and the kernel that evaluates a match's calls and lookups, appends its rows (each make with
//! a fresh class, each set with its value, each subsumed key) and runs its unions. The public
//! device pieces it builds on (e-matching, union-find, rebuild, hash-cons) are in
//! `vyre/eqsat/device/`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>

#include "vyre/core/config.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/eqsat/device/union_find.cuh"

namespace vyre::eqsat::detail {

//! An operand's kind as the apply kernel reads it: `device::operand_kind`'s values, and
//! `gpu_fresh` for the value column of a make (the step's own fresh class).
inline constexpr std::uint8_t gpu_fresh = 4;
static_assert(gpu_fresh > static_cast<std::uint8_t>(device::operand_kind::computed));

//! One appended row: row `row_base + match` of the table at `cells` (its timestamp at
//! `stamps`); column c from operand (`kind[c]`, `value[c]`), the value column too (`gpu_fresh`
//! for a make's). `inline_value`: a set of a function the device merges by min or max over i64,
//! whose value must be one the device orders ([0, 2^31)).
template <std::uint32_t Width>
struct gpu_step {
  std::uint32_t* cells;
  std::uint32_t* stamps;
  std::uint32_t width;
  std::uint32_t row_base;
  std::uint32_t value[Width];
  std::uint8_t kind[Width];
  bool inline_value;
};

//! One value of the head (`device::compute_step`): a primitive call, or a lookup of the value
//! of the table at `cells` (its first `rows` rows, sorted by their keys) at the `arg_count`
//! keys; operands as `gpu_step`'s.
template <std::uint32_t Width>
struct gpu_compute {
  std::uint32_t value[Width - 1];
  std::uint8_t kind[Width - 1];
  std::uint32_t arg_count;
  device::device_prim op;
  bool lookup;
  const std::uint32_t* cells;
  std::uint32_t rows;
  std::uint32_t width;
};

//! A rule's head in the arrays of a size class (`device::narrow_limits`: the apply kernel takes
//! it by value; `device::wide_limits`: from device memory).
template <class Limits>
struct basic_gpu_actions {
  using limits = Limits;
  using step_type = gpu_step<Limits::width>;
  gpu_compute<Limits::width> computes[Limits::computes];
  std::uint32_t compute_count;
  //! Set (to 1) when a call fails or leaves the device's i64 range, a lookup misses or a set's
  //! value is outside it: the match writes nothing and the engine hands the iteration back.
  std::uint32_t* outside;
  step_type steps[Limits::steps];
  std::uint32_t step_count;   //!< the makes, the sets, then the subsumed keys
  std::uint32_t fresh_count;  //!< the makes: step s < fresh_count makes class `fresh(s)`
  std::uint32_t saved_count;
  //! Step s of match m makes class `class_base + m * fresh_count + s`.
  std::uint32_t class_base;
  std::uint32_t unite_value[Limits::unites][2];
  std::uint8_t unite_kind[Limits::unites][2];
  std::uint32_t unite_count;
  std::uint32_t now;  //!< the iteration's timestamp, every appended row's
};
using gpu_actions = basic_gpu_actions<device::narrow_limits>;
using wide_gpu_actions = basic_gpu_actions<device::wide_limits>;

// --- apply ----------------------------------------------------------------------------------

//! Per match: evaluates the head's calls and lookups, appends its rows (no lookup of the rows
//! themselves: the rebuild merges a fresh row into an identical existing one, and a set's row
//! into the row of its key), then runs its unions.
template <class ActionsArg>
VYRE_KERNEL void eqsat_apply_kernel(ActionsArg arg, const std::uint32_t* matches,
                                    std::uint32_t match_count, std::uint32_t* parent) {
  const auto& a = device::detail::kernel_arg(arg);
  using limits = typename std::remove_cvref_t<decltype(a)>::limits;
  VYRE_DETAIL_GRID_LOOP(m, match_count) {
    const std::uint32_t* saved = matches + m * a.saved_count;
    const auto fresh = [&](std::uint32_t step) {
      return static_cast<std::uint32_t>(a.class_base + m * a.fresh_count + step);
    };
    std::uint32_t computed[limits::computes] = {};
    const auto value = [&](std::uint8_t kind, std::uint32_t v) {
      switch (kind) {
        case 0:
          return saved[v];
        case 1:
          return v;
        case 2:
          return fresh(v);
        default:
          return computed[v];
      }
    };
    bool decided = true;
    for (std::uint32_t c = 0; c < a.compute_count && decided; ++c) {
      const auto& g = a.computes[c];
      if (g.lookup) {
        std::uint32_t key[limits::width - 1];
        for (std::uint32_t k = 0; k < g.arg_count; ++k) key[k] = value(g.kind[k], g.value[k]);
        const std::uint32_t r = find_sorted_row(g.cells, g.rows, g.width, key);
        decided = r != g.rows;
        if (decided) computed[c] = g.cells[std::size_t{r} * g.width + g.width - 1];
      } else {
        decided = device::device_prim_eval(g.op, value(g.kind[0], g.value[0]),
                                           value(g.kind[1], g.value[1]),
                                           computed[c]) == device::prim_outcome::ok;
      }
    }
    for (std::uint32_t s = 0; s < a.step_count && decided; ++s) {
      const auto& step = a.steps[s];
      const std::uint32_t last = step.width - 1;
      decided =
          !step.inline_value || value(step.kind[last], step.value[last]) < device::inline_i64_end;
    }
    if (!decided) {  // an error on the CPU engine, or a value only the host decides
      atomicOr(a.outside, 1u);
      continue;
    }
    for (std::uint32_t s = 0; s < a.step_count; ++s) {
      const auto& step = a.steps[s];
      std::uint32_t* row = step.cells + (step.row_base + m) * std::size_t{step.width};
      for (std::uint32_t c = 0; c < step.width; ++c)
        row[c] = step.kind[c] == gpu_fresh ? fresh(s) : value(step.kind[c], step.value[c]);
      if (step.stamps != nullptr) step.stamps[step.row_base + m] = a.now;
    }
    for (std::uint32_t u = 0; u < a.unite_count; ++u)
      (void)device::union_find_ref{parent, 0}.unite(value(a.unite_kind[u][0], a.unite_value[u][0]),
                                                    value(a.unite_kind[u][1], a.unite_value[u][1]));
  }
}

}  // namespace vyre::eqsat::detail
