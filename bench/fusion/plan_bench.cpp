// SPDX-License-Identifier: Apache-2.0
// Run-time planning cost: 1,000 stages (by default) planned again and again with one reused
// workspace and plan; prints JSON lines, the median over many timed batches. Target for the
// greedy planner: <= 20 ns per stage.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/fusion.hpp>

namespace {

using vyre::fusion::materialization;
using vyre::fusion::plan_mode;
using vyre::fusion::stage;

constexpr std::size_t fixed_stage_count = 1000;

std::vector<stage> make_stages(std::size_t count) {
  std::vector<stage> stages;
  std::uint64_t state = 0x5EED;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  for (std::size_t i = 0; i < count; ++i)
    stages.push_back(
        {.id = static_cast<std::uint32_t>(i * 2654435761u),
         .layout_hash = next() % 16 == 0 ? 2u : 1u,
         .input_bytes = next() % 4096,
         .output_bytes = next() % 4096,
         .scratch_bytes = next() % 1024,
         .boundary = next() % 64 == 0 ? materialization::host : materialization::none});
  return stages;
}

// Median ns per call of `plan_once`, timing batches of `batch` calls.
template <class F>
double median_ns_per_call(F&& plan_once, int batches, int batch) {
  for (int i = 0; i < batch * 4; ++i) plan_once();  // warm caches and the workspace
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(batches));
  for (int b = 0; b < batches; ++b) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < batch; ++i) plan_once();
    const auto stop = std::chrono::steady_clock::now();
    samples.push_back(std::chrono::duration<double, std::nano>(stop - start).count() / batch);
  }
  std::nth_element(samples.begin(), samples.begin() + batches / 2, samples.end());
  return samples[static_cast<std::size_t>(batches / 2)];
}

void print(const char* name, const char* mode, std::size_t stages, double median_ns,
           const char* baseline, double baseline_ns) {
  std::printf(
      "{\"name\":\"%s\",\"params\":{\"stages\":%zu,\"mode\":\"%s\"},\"device\":\"host\","
      "\"median_ns\":%.1f,\"ns_per_stage\":%.3f,\"baseline\":\"%s\",\"baseline_median_ns\":%.1f,"
      "\"ratio\":%.3f}\n",
      name, stages, mode, median_ns, median_ns / static_cast<double>(stages), baseline, baseline_ns,
      baseline_ns / median_ns);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vyre fusion planner benchmark"};
  std::size_t count = fixed_stage_count;
  int batches = 301;
  app.add_option("--stages", count, "stages per plan (run-time planner)");
  app.add_option("--batches", batches, "timed batches (median reported)")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const std::vector<stage> stages = make_stages(count);
  vyre::fusion::plan_workspace workspace;
  vyre::fusion::plan plan;
  bool ok = true;
  std::size_t launches = 0;
  const double target_ns = 20.0 * static_cast<double>(count);

  const double greedy = median_ns_per_call(
      [&] {
        ok &= vyre::fusion::plan_launch_fusion(stages, 1 << 20, workspace, plan).has_value();
        launches += plan.launch_count();
      },
      batches, 20);
  print("fusion.plan.runtime_greedy", "greedy", count, greedy, "target_20ns_per_stage", target_ns);

  const double optimal = median_ns_per_call(
      [&] {
        ok &= vyre::fusion::plan_launch_fusion(stages, 1 << 20, workspace, plan, plan_mode::optimal)
                  .has_value();
        launches += plan.launch_count();
      },
      batches, 5);
  print("fusion.plan.runtime_optimal", "optimal", count, optimal, "runtime_greedy", greedy);

  // The constexpr path (fixed_plan<1000>, arrays, no allocation) executed at run time.
  if (count == fixed_stage_count) {
    auto fixed_stages = std::make_unique<std::array<stage, fixed_stage_count>>();
    std::copy(stages.begin(), stages.end(), fixed_stages->begin());
    ok &= vyre::fusion::plan_launch_fusion(stages, 1 << 20, workspace, plan).has_value();
    const double fixed = median_ns_per_call(
        [&] {
          const auto fixed_plan = vyre::fusion::plan_launch_fusion(*fixed_stages, 1 << 20);
          ok &= fixed_plan.has_value() && vyre::fusion::same_plan(*fixed_plan, plan);
          launches += fixed_plan->launch_count();
        },
        batches, 20);
    print("fusion.plan.fixed_greedy", "greedy", count, fixed, "runtime_greedy", greedy);
  }
  if (!ok || launches == 0) {
    std::fprintf(stderr, "bench_fusion_plan: a plan failed\n");
    return 1;
  }
  return 0;
}
