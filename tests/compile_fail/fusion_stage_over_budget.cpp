// SPDX-License-Identifier: Apache-2.0
// Must not compile: stage 9 alone needs 3000 bytes, the budget is 1024; the message names the
// reason.
#include <array>
#include <vyre/fusion.hpp>
constexpr std::array<vyre::fusion::stage, 2> stages{
    {{.id = 1, .layout_hash = 7, .input_bytes = 8, .output_bytes = 8},
     {.id = 9,
      .layout_hash = 7,
      .input_bytes = 1000,
      .output_bytes = 1000,
      .scratch_bytes = 1000}}};
constexpr auto plan = vyre::fusion::static_plan(stages, 1024);
int main() {
  return static_cast<int>(plan.launch_count());
}
