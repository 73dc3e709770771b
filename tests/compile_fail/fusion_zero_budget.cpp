// SPDX-License-Identifier: Apache-2.0
// Must not compile: a compile-time plan with a zero budget; the message names the reason.
#include <array>
#include <vyre/fusion.hpp>
constexpr std::array<vyre::fusion::stage, 2> stages{
    {{.id = 1, .layout_hash = 7, .output_bytes = 8},
     {.id = 2, .layout_hash = 7, .output_bytes = 8}}};
constexpr auto plan = vyre::fusion::static_plan(stages, 0);
int main() {
  return static_cast<int>(plan.launch_count());
}
