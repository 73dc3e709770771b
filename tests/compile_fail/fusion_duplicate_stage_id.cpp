// SPDX-License-Identifier: Apache-2.0
// Must not compile: two stages share id 4; the message names the reason.
#include <array>
#include <vyre/fusion.hpp>
constexpr std::array<vyre::fusion::stage, 3> stages{
    {{.id = 4, .layout_hash = 7, .output_bytes = 8},
     {.id = 5, .layout_hash = 7, .output_bytes = 8},
     {.id = 4, .layout_hash = 7, .output_bytes = 8}}};
constexpr auto plan = vyre::fusion::static_plan(stages, 1024);
int main() {
  return static_cast<int>(plan.launch_count());
}
