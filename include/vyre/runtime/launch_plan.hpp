// SPDX-License-Identifier: Apache-2.0
//! @file
//! Launch planning (host, constexpr): a 1-D grid from an element count and a block size within
//! the device's limits, split into waves when one grid cannot cover the elements. The nvcc
//! half (occupancy-based block size, cooperative launch) is in `vyre/runtime/launch.cuh`.
//!
//!     constexpr auto plan = vyre::plan_grid(1000, 256, {.max_threads_per_block = 1024,
//!                                                       .max_grid_x = 2});
//!     static_assert(plan->waves == 2 && plan->blocks_per_wave == 2);
//!     // wave i launches plan->wave_blocks(i) blocks and hands the kernel plan->wave(i), a
//!     // vyre::wave_range{first, count}: its threads cover [first, first + count).
#pragma once

#include <cstdint>

#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"

namespace vyre {

//! The device limits a grid must respect (defaults: every CUDA device of compute capability
//! 3.0 or newer).
struct launch_limits {
  std::uint32_t max_threads_per_block = 1024;
  std::uint32_t max_grid_x = 2147483647u;
};

//! The elements one wave (one kernel launch) covers: `[first, first + count)`. Passed to
//! kernels by value.
struct wave_range {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

//! A 1-D launch plan: `waves` launches of up to `blocks_per_wave` blocks of `block` threads,
//! one thread per element. `waves == 0` when there is nothing to launch.
struct grid_plan {
  std::uint64_t elements = 0;
  std::uint32_t block = 0;
  std::uint32_t blocks_per_wave = 0;
  std::uint32_t waves = 0;

  //! Elements a full wave covers.
  VYRE_HOST_DEVICE constexpr std::uint64_t elements_per_wave() const noexcept {
    return std::uint64_t{blocks_per_wave} * block;
  }
  //! The element range of wave `i` (`i < waves`).
  VYRE_HOST_DEVICE constexpr wave_range wave(std::uint32_t i) const noexcept {
    const std::uint64_t first = std::uint64_t{i} * elements_per_wave();
    const std::uint64_t rest = elements - first;
    return {first, rest < elements_per_wave() ? rest : elements_per_wave()};
  }
  //! Blocks wave `i` launches (the last wave may be smaller).
  VYRE_HOST_DEVICE constexpr std::uint32_t wave_blocks(std::uint32_t i) const noexcept {
    return static_cast<std::uint32_t>((wave(i).count + block - 1) / block);
  }

  friend constexpr bool operator==(const grid_plan&, const grid_plan&) = default;
};

//! Plans a grid of `block`-thread blocks over `elements` elements.
//! @returns `errc::invalid_argument` when `block` is 0, above `limits.max_threads_per_block`
//!          or not a multiple of 32 (a partial warp wastes lanes), or when a limit is 0;
//!          `errc::overflow` when more than 2^32 - 1 waves would be needed.
constexpr expected<grid_plan> plan_grid(std::uint64_t elements, std::uint32_t block,
                                        launch_limits limits = {}) noexcept {
  if (limits.max_threads_per_block == 0 || limits.max_grid_x == 0)
    return fail(error(errc::invalid_argument, "plan_grid: a device limit is zero")
                    .with("max_threads_per_block", limits.max_threads_per_block)
                    .with("max_grid_x", limits.max_grid_x)
                    .fix("pass the limits read from the device (device_caps::limits())"));
  if (block == 0 || block > limits.max_threads_per_block || block % 32 != 0)
    return fail(error(errc::invalid_argument,
                      "plan_grid: block size must be a non-zero multiple of 32 within the "
                      "device limit")
                    .with("block", block)
                    .with("max_threads_per_block", limits.max_threads_per_block)
                    .fix("use a multiple of 32 between 32 and max_threads_per_block, e.g. 256"));
  grid_plan plan;
  plan.elements = elements;
  plan.block = block;
  if (elements == 0) return plan;
  // ceil(elements / block) cannot overflow: block >= 32.
  const std::uint64_t blocks = elements / block + (elements % block != 0 ? 1 : 0);
  const std::uint64_t waves =
      blocks / limits.max_grid_x + (blocks % limits.max_grid_x != 0 ? 1 : 0);
  if (waves > 0xFFFFFFFFull)
    return fail(error(errc::overflow, "plan_grid: more than 2^32 - 1 waves")
                    .with("elements", elements)
                    .with("block", block)
                    .with("waves", waves)
                    .fix("split the input: one plan covers at most 2^32 - 1 waves"));
  plan.waves = static_cast<std::uint32_t>(waves);
  plan.blocks_per_wave = static_cast<std::uint32_t>(
      blocks < limits.max_grid_x ? blocks : std::uint64_t{limits.max_grid_x});
  return plan;
}

}  // namespace vyre
