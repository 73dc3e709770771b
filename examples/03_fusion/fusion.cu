// SPDX-License-Identifier: Apache-2.0
// Launch fusion, step by step: describe a pipeline's stages, let the compiler plan which ones
// share a launch, and run the plan as fused kernels.
//
// 1. Describe each stage: an id, its memory layout (stages fuse only within one layout), the
//    bytes it reads, writes and needs as scratch, and whether the host must see its input.
// 2. `static_plan` groups adjacent stages under a memory budget at compile time. A plan that
//    cannot be built (zero budget, duplicate id, a stage over budget) is a compile error whose
//    message names the reason.
// 3. `fused_pipeline<plan, T, functors...>` instantiates one kernel per group. Inside a group
//    each element is read once, passes through the group's functors in registers, and is
//    written once: the intermediates between fused stages never touch device memory.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/fusion.cuh>

// Step 0: the stages' work, as elementwise functors. Kernel arguments, so trivially copyable;
// __host__ __device__ here only so main() can check the GPU's answer on the CPU.
namespace fusion_example {
struct to_celsius {
  __host__ __device__ float operator()(float fahrenheit) const {
    return (fahrenheit - 32.0f) * (5.0f / 9.0f);
  }
};
struct calibrate {
  float gain;
  float offset;
  __host__ __device__ float operator()(float v) const { return v * gain + offset; }
};
struct rectify {
  __host__ __device__ float operator()(float v) const { return v < 0.0f ? 0.0f : v; }
};
struct to_kelvin {
  __host__ __device__ float operator()(float celsius) const { return celsius + 273.15f; }
};
}  // namespace fusion_example

using namespace fusion_example;
using vyre::fusion::materialization;
using vyre::fusion::stage;

// Step 1: the stage list. Bytes are per launch of `n` floats; a tutorial-sized n here.
constexpr std::size_t n = 1 << 20;
constexpr std::uint64_t buffer = n * sizeof(float);
constexpr std::uint64_t row_major = 0x0101;  // any hash that identifies the layout
constexpr std::array<stage, 4> stages{{
    {.id = 10, .layout_hash = row_major, .input_bytes = buffer, .output_bytes = buffer},
    {.id = 20, .layout_hash = row_major, .input_bytes = buffer, .output_bytes = buffer},
    // The host wants to log what reaches rectify: its input must be materialized.
    {.id = 30,
     .layout_hash = row_major,
     .input_bytes = buffer,
     .output_bytes = buffer,
     .boundary = materialization::host},
    {.id = 40, .layout_hash = row_major, .input_bytes = buffer, .output_bytes = buffer},
}};

// Step 2: plan at compile time. Budget: four buffers per launch.
constexpr auto plan = vyre::fusion::static_plan(stages, 4 * buffer);

// The plan is an ordinary constexpr value: check it with static_assert.
static_assert(plan.launch_count() == 2);      // {10, 20} and {30, 40}
static_assert(plan.avoided_launches() == 2);  // four stages, two launches
static_assert(plan.avoided_bytes() == 2 * buffer);

// Step 3: one kernel per group, from the plan.
using pipeline =
    vyre::fusion::fused_pipeline<plan, float, to_celsius, calibrate, rectify, to_kelvin>;

static vyre::expected<void> run_example() {
  std::vector<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = 20.0f + static_cast<float>(i % 1000) * 0.1f;

  float* in = nullptr;
  float* out = nullptr;
  float* boundary = nullptr;  // group 0's output: what the host wanted to see
  VYRE_CUDA_TRY(cudaMalloc(&in, buffer), "fusion example: cudaMalloc input");
  auto result = [&]() -> vyre::expected<void> {
    VYRE_CUDA_TRY(cudaMalloc(&out, buffer), "fusion example: cudaMalloc output");
    VYRE_CUDA_TRY(cudaMalloc(&boundary, buffer), "fusion example: cudaMalloc boundary");
    VYRE_CUDA_TRY(cudaMemcpy(in, host.data(), buffer, cudaMemcpyHostToDevice), "upload");

    const pipeline fused{to_celsius{}, calibrate{1.02f, -0.5f}, rectify{}, to_kelvin{}};
    std::array<float*, pipeline::launch_count - 1> boundaries{boundary};
    VYRE_TRY(fused.run(in, out, n, cuda::std::span<float* const>(boundaries), nullptr));

    std::vector<float> kelvin(n);
    std::vector<float> logged(n);
    VYRE_CUDA_TRY(cudaMemcpy(kelvin.data(), out, buffer, cudaMemcpyDeviceToHost), "download");
    VYRE_CUDA_TRY(cudaMemcpy(logged.data(), boundary, buffer, cudaMemcpyDeviceToHost),
                  "download boundary");
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float before_rectify = calibrate{1.02f, -0.5f}(to_celsius{}(host[i]));
      const float want = to_kelvin{}(rectify{}(before_rectify));
      if (std::fabs(kelvin[i] - want) > 1e-3f || std::fabs(logged[i] - before_rectify) > 1e-3f)
        ++wrong;
    }
    std::printf("%zu stages in %zu launches; %llu intermediate bytes kept in registers\n",
                plan.stage_count(), plan.launch_count(),
                static_cast<unsigned long long>(plan.avoided_bytes()));
    std::printf(
        "first reading: %.2f F -> %.2f K (logged before rectify: %.2f C); mismatches: %zu\n",
        static_cast<double>(host[0]), static_cast<double>(kelvin[0]),
        static_cast<double>(logged[0]), wrong);
    if (wrong != 0)
      return vyre::fail(vyre::error(vyre::errc::invalid_state, "fusion example: wrong results")
                            .with("mismatches", wrong));
    return {};
  }();
  (void)cudaFree(boundary);
  (void)cudaFree(out);
  (void)cudaFree(in);
  return result;
}

int main() {
  // The plan needs no GPU: it was made by the compiler.
  for (const vyre::fusion::group& g : plan.groups())
    std::printf("launch: stages %u..%u, %llu bytes\n", g.first_stage,
                g.first_stage + g.stage_count - 1,
                static_cast<unsigned long long>(g.required_bytes));
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "fusion example: no CUDA device here; the fused kernels did not run.\n");
    return 0;
  }
  if (auto done = run_example(); !done) {
    std::fprintf(stderr, "fusion example: %s\n", done.error().message().c_str());
    return 1;
  }
  return 0;
}
