// SPDX-License-Identifier: Apache-2.0
// Must not compile: input + output of stage 3 overflows u64; the message names the reason.
#include <array>
#include <cstdint>
#include <vyre/fusion.hpp>
constexpr std::array<vyre::fusion::stage, 1> stages{
    {{.id = 3, .layout_hash = 7, .input_bytes = UINT64_MAX, .output_bytes = 1}}};
constexpr auto plan = vyre::fusion::static_plan(stages, UINT64_MAX);
int main() {
  return static_cast<int>(plan.launch_count());
}
