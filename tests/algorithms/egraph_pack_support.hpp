// SPDX-License-Identifier: Apache-2.0
// Test support: the egraph layer's host pack of raw rows (compiled by the host compiler, so the
// GPU test can compare the device build with it without nvcc parsing the egraph layer).
#pragma once

#include <cstdint>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

// vyre::egraph::pack of `rows` (op ids interned so that op k keeps id k); throws on error.
std::vector<std::uint32_t> egraph_pack_words(const vyre::algorithms::raw_rows& rows);

}  // namespace vyre_test
