// SPDX-License-Identifier: Apache-2.0
// Must not compile: a plan of two stages given one functor; the message says what to pass.
#include <array>
#include <vyre/fusion.cuh>
struct twice {
  __device__ float operator()(float v) const { return 2.0f * v; }
};
constexpr std::array<vyre::fusion::stage, 2> stages{
    {{.id = 1, .layout_hash = 7, .output_bytes = 8},
     {.id = 2, .layout_hash = 7, .output_bytes = 8}}};
constexpr auto plan = vyre::fusion::static_plan(stages, 1024);
int main() {
  vyre::fusion::fused_pipeline<plan, float, twice> pipeline;
  (void)pipeline;
}
