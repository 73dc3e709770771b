// SPDX-License-Identifier: Apache-2.0
// Test support: whether a test may run a loop captured in a conditional WHILE graph.
// compute-sanitizer's racecheck and synccheck fail on a CUB sort inside a conditional WHILE
// body, with or without vyre (scripts/probes/conditional_while_sanitizers.cu), so
// scripts/reliability.sh sets VYRE_TEST_LOOP_DRIVERS=flag_readback for those two tools and the
// tests run only the driver that launches the same kernels round by round.
#pragma once

#include <cstdlib>
#include <string_view>

namespace vyre_test {

inline bool capture_loops() {
  const char* only = std::getenv("VYRE_TEST_LOOP_DRIVERS");
  return only == nullptr || std::string_view(only) != "flag_readback";
}

}  // namespace vyre_test
