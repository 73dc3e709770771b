// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::device_choice`: where a piece of work runs, spelled once from the library to the
//! command line (`--device auto|gpu|cpu`). `automatic` picks by size: each component states its
//! measured crossover (`algorithms::congruence_host_below_rows`, the eqsat offload's
//! `default_gpu_crossover_enodes`).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "vyre/core/config.hpp"
#include "vyre/detail/enum_name.hpp"

namespace vyre {

enum class device_choice : std::uint8_t {
  automatic,  //!< the CPU below the component's crossover, the GPU above it
  gpu,        //!< always the GPU
  cpu,        //!< always the CPU
  device [[deprecated("use vyre::device_choice::gpu")]] = gpu,
  host [[deprecated("use vyre::device_choice::cpu")]] = cpu,
};

//! The command-line spelling of `choice`: "auto", "gpu" or "cpu".
VYRE_HOST_DEVICE constexpr const char* device_choice_name(device_choice choice) noexcept {
  constexpr const char* names[] = {"auto", "gpu", "cpu"};
  return detail::enum_name<device_choice::automatic, device_choice::cpu>(choice, names, "?");
}

//! `text` ("auto", "gpu" or "cpu") as a choice; none for anything else.
constexpr std::optional<device_choice> parse_device_choice(std::string_view text) noexcept {
  if (text == "auto") return device_choice::automatic;
  if (text == "gpu") return device_choice::gpu;
  if (text == "cpu") return device_choice::cpu;
  return std::nullopt;
}

}  // namespace vyre
