// SPDX-License-Identifier: Apache-2.0
//! @file
//! Host/device dispatch of the plans' `run_host` (a host e-graph runs the CPU engine,
//! `cpu_engine.hpp`, below a measured crossover row count, else the device plan): the choice and
//! its knobs.
#pragma once

#include <cstdint>

#include "vyre/core/device_choice.hpp"

namespace vyre::algorithms {

//! The old name of `vyre::device_choice` (whose `device` and `host` are `gpu` and `cpu`).
using dispatch [[deprecated("use vyre::device_choice")]] = vyre::device_choice;

//! `dispatch_options::host_below_rows` value meaning "the algorithm's default crossover".
inline constexpr std::uint32_t default_crossover = 0xFFFFFFFFu;

//! Where a plan runs an e-graph that lives on the host (`run_host`): `cpu` the CPU engine,
//! `gpu` the device (upload, replay, download), `automatic` the CPU engine below
//! `host_below_rows` rows. A resident device image (`run`) always stays on the device.
struct dispatch_options {
  device_choice where = device_choice::automatic;
  //! `automatic` runs the CPU engine for inputs with fewer rows than this
  //! (`default_crossover`: `congruence_host_below_rows` / `extract_host_below_rows`).
  std::uint32_t host_below_rows = default_crossover;
  //! Worker threads of the CPU engine when the host runs it, and of the host copies around a
  //! device run (staging the input, filling the result's vectors) (0: every core; small inputs
  //! run on the calling thread whatever this says). Never changes the result.
  unsigned host_threads = 0;
};

//! Default crossovers (rows) of `automatic` dispatch: below them the CPU engine is faster than
//! one plan replay plus the upload and download (a replay costs tens of microseconds of launch
//! latency whatever the size). Measured by `bench_algorithms` over the 86 real e-graphs as
//! `run_host` on `device_choice::gpu` against `device_choice::cpu` (its
//! `congruence_dispatch_crossover` / `extract_dispatch_crossover` lines) on an H100 machine
//! with 16 host cores: the device wins on every file from 3,777 rows for congruence and from
//! 20,244 for extraction, whose worklist on a deep e-graph (7,999 rows, 3,999 rounds) runs far
//! longer on the device. Rounded up to a multiple of 1,024, so a file near a crossover runs on
//! the CPU. Re-measure on other machines and pass your own through
//! `dispatch_options::host_below_rows`.
inline constexpr std::uint32_t congruence_host_below_rows = 4096;
inline constexpr std::uint32_t extract_host_below_rows = 20480;

namespace detail {
inline bool runs_on_host(const dispatch_options& options, std::uint32_t rows,
                         std::uint32_t default_rows) noexcept {
  const std::uint32_t below =
      options.host_below_rows == default_crossover ? default_rows : options.host_below_rows;
  return options.where == device_choice::cpu ||
         (options.where == device_choice::automatic && rows < below);
}
}  // namespace detail

}  // namespace vyre::algorithms
