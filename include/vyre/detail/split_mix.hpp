// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::detail::split_mix`: the splitmix64 generator, the same sequence on every platform and
//! standard library, host and device (the synthetic e-graphs, the generated test inputs and the
//! DAG extraction's searches draw from it).
#pragma once

#include <cstdint>

#include "vyre/core/config.hpp"

namespace vyre::detail {

struct split_mix {
  std::uint64_t state;
  VYRE_HOST_DEVICE std::uint64_t next() noexcept {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  //! Uniform in [0, bound) from the high 32 bits (multiply-shift, no division).
  VYRE_HOST_DEVICE std::uint32_t below(std::uint32_t bound) noexcept {
    return static_cast<std::uint32_t>((next() >> 32) * bound >> 32);
  }
  //! True with probability `p`.
  VYRE_HOST_DEVICE bool chance(double p) noexcept {
    return static_cast<double>(next() >> 11) * 0x1.0p-53 < p;
  }
};

}  // namespace vyre::detail
