// SPDX-License-Identifier: Apache-2.0
//! @file
//! Launching kernels (nvcc): checked launches that record telemetry, wave launches from a
//! `grid_plan`, occupancy-based block sizes, and cooperative launches that are refused with
//! `errc::unsupported` on a device without them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>
#include <utility>

#include <cuda_runtime.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/launch_plan.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! Grid, block, dynamic shared memory and stream of one launch.
struct launch_config {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  std::size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
};

//! The block size (a multiple of 32) that maximises occupancy of `kernel`, at most
//! `block_limit` threads when non-zero.
template <class... Params>
expected<std::uint32_t> occupancy_block_size(void (*kernel)(Params...),
                                             std::size_t dynamic_shared_bytes = 0,
                                             int block_limit = 0) noexcept {
  int min_grid = 0, block = 0;
  VYRE_CUDA_TRY(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel, dynamic_shared_bytes,
                                                   block_limit),
                "occupancy_block_size: cudaOccupancyMaxPotentialBlockSize failed");
  if (block < 32)
    return fail(error(errc::unsupported,
                      "occupancy_block_size: the kernel cannot run a full warp per block")
                    .with("block", static_cast<std::uint64_t>(block))
                    .with("dynamic_shared_bytes", dynamic_shared_bytes)
                    .fix("reduce the kernel's registers or shared memory"));
  return static_cast<std::uint32_t>(block / 32 * 32);
}

//! A wave plan for `elements` elements of `kernel` at its occupancy-best block size.
template <class... Params>
expected<grid_plan> plan_for_occupancy(void (*kernel)(Params...), std::uint64_t elements,
                                       const device_caps& caps,
                                       std::size_t dynamic_shared_bytes = 0) noexcept {
  VYRE_TRY_ASSIGN(const std::uint32_t block,
                  occupancy_block_size(kernel, dynamic_shared_bytes, caps.max_threads_per_block));
  return plan_grid(elements, block, caps.limits());
}

//! Launches `kernel<<<config>>>(args...)`, checks the launch and records it.
template <class... Params, class... Args>
expected<void> launch(telemetry_counters* telemetry, void (*kernel)(Params...),
                      const launch_config& config, Args&&... args) noexcept {
  kernel<<<config.grid, config.block, config.shared_bytes, config.stream>>>(
      std::forward<Args>(args)...);
  VYRE_CUDA_TRY(cudaGetLastError(), "launch: the kernel launch failed");
  if (telemetry != nullptr) telemetry->record_kernel_launch();
  return {};
}

//! Launches every wave of `plan`: `kernel(plan.wave(i), args...)` on `plan.wave_blocks(i)`
//! blocks. Nothing is launched when `plan.waves == 0`.
template <class... Params, class... Args>
expected<void> launch_waves(telemetry_counters* telemetry, void (*kernel)(wave_range, Params...),
                            const grid_plan& plan, std::size_t shared_bytes, cudaStream_t stream,
                            const Args&... args) noexcept {
  for (std::uint32_t i = 0; i < plan.waves; ++i) {
    const launch_config config{dim3(plan.wave_blocks(i)), dim3(plan.block), shared_bytes, stream};
    VYRE_TRY(launch(telemetry, kernel, config, plan.wave(i), args...));
  }
  return {};
}

//! The most blocks of `block_threads` threads of `kernel` that can be resident at once (the
//! largest cooperative grid).
template <class... Params>
expected<std::uint64_t> max_cooperative_blocks(void (*kernel)(Params...), int block_threads,
                                               std::size_t shared_bytes,
                                               const device_caps& caps) noexcept {
  int per_sm = 0;
  VYRE_CUDA_TRY(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block_threads, shared_bytes),
      "launch_cooperative: cudaOccupancyMaxActiveBlocksPerMultiprocessor failed");
  return static_cast<std::uint64_t>(per_sm) * static_cast<std::uint64_t>(caps.sm_count);
}

//! Launches `kernel` cooperatively (grid-wide synchronisation allowed).
//! @returns `errc::unsupported` when `caps` says the device has no cooperative launch;
//!          `errc::invalid_argument` naming both numbers when the grid exceeds the blocks
//!          that can be resident at once.
template <class... Params, class... Args>
expected<void> launch_cooperative(const device_caps& caps, telemetry_counters* telemetry,
                                  void (*kernel)(Params...), const launch_config& config,
                                  Args&&... args) noexcept {
  if (!caps.cooperative_launch)
    return fail(
        error(errc::unsupported,
              "launch_cooperative: the device does not support cooperative launches")
            .with("device", static_cast<std::uint64_t>(caps.ordinal))
            .with("compute_capability", static_cast<std::uint64_t>(caps.compute_capability()))
            .fix("use a non-cooperative algorithm (one launch per phase) on this device"));
  const std::uint64_t grid = std::uint64_t{config.grid.x} * config.grid.y * config.grid.z;
  const int block = static_cast<int>(config.block.x * config.block.y * config.block.z);
  VYRE_TRY_ASSIGN(const std::uint64_t resident,
                  max_cooperative_blocks(kernel, block, config.shared_bytes, caps));
  if (grid > resident)
    return fail(error(errc::invalid_argument,
                      "launch_cooperative: the grid exceeds the blocks that can be resident")
                    .with("grid_blocks", grid)
                    .with("max_resident_blocks", resident)
                    .fix("launch at most max_cooperative_blocks() blocks and loop inside the "
                         "kernel"));
  std::tuple<Params...> values(std::forward<Args>(args)...);
  void* pointers[sizeof...(Params) > 0 ? sizeof...(Params) : 1] = {};
  if constexpr (sizeof...(Params) > 0)
    std::apply(
        [&](auto&... v) {
          std::size_t i = 0;
          ((pointers[i++] = static_cast<void*>(&v)), ...);
        },
        values);
  VYRE_CUDA_TRY(
      cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(kernel), config.grid, config.block,
                                  pointers, config.shared_bytes, config.stream),
      "launch_cooperative: cudaLaunchCooperativeKernel failed");
  if (telemetry != nullptr) telemetry->record_kernel_launch();
  return {};
}

}  // namespace vyre
