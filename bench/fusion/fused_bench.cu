// SPDX-License-Identifier: Apache-2.0
// A 4-stage elementwise chain over 256 M floats (by default): fused by a compile-time plan into
// one launch vs one launch per stage (the plan with no fusion), timed in the same run with
// cudaEvents, median of many repeats after warm-up. Prints JSON lines; target ratio >= 3x.
//
// Why ~4x: each stage is a few flops per 4-byte element, far below what the SMs can do, so the
// time is bytes over bandwidth. Unfused, every stage reads and writes the whole buffer:
// 4 x (1 GiB + 1 GiB) = 8 GiB. Fused, the chain reads 1 GiB and writes 1 GiB once: 2 GiB.
//
// The strongest peer is a hand-written kernel doing the whole chain in registers, one element
// per thread, written plainly (`hand_fused` below): the plan's fused launch should match it
// (fusion.chain4.fused_vs_hand_written, ratio = hand-written time / plan time, 1.0 = parity).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/fusion.cuh>

#include "bench_cuda.cuh"
#include "bench_support.hpp"
#include "fusion_chain.cuh"

namespace fusion_bench {

using vyre::fusion::stage;
constexpr std::uint64_t buffer_bytes = std::uint64_t{256} << 22;  // 256 M floats
constexpr std::array<stage, 4> chain{
    {{.id = 1, .layout_hash = 1, .input_bytes = buffer_bytes, .output_bytes = buffer_bytes},
     {.id = 2, .layout_hash = 1, .input_bytes = buffer_bytes, .output_bytes = buffer_bytes},
     {.id = 3, .layout_hash = 1, .input_bytes = buffer_bytes, .output_bytes = buffer_bytes},
     {.id = 4, .layout_hash = 1, .input_bytes = buffer_bytes, .output_bytes = buffer_bytes}}};
// Budget for all four (input + 4 outputs): one launch. Budget for one stage: four launches.
constexpr auto fused_plan = vyre::fusion::static_plan(chain, 5 * buffer_bytes);
constexpr auto unfused_plan = vyre::fusion::static_plan(chain, 2 * buffer_bytes);
static_assert(fused_plan.launch_count() == 1 && unfused_plan.launch_count() == 4);

// The chain by hand: one launch, each thread loads one float, applies the four stages in
// registers and stores the result. The stages come in as kernel arguments, as the plan's do.
__global__ void hand_fused_chain(const float* __restrict__ in, float* __restrict__ out,
                                 std::size_t count, fusion_chain::scale s1, fusion_chain::shift s2,
                                 fusion_chain::square s3, fusion_chain::clamp_unit s4) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < count) out[i] = s4(s3(s2(s1(in[i]))));
}

struct hand_fused {
  static constexpr std::size_t launch_count = 1;
  vyre::expected<void> run(const float* in, float* out, std::size_t count,
                           cudaStream_t stream) const noexcept {
    constexpr unsigned threads = 256;
    const auto blocks = static_cast<unsigned>((count + threads - 1) / threads);
    hand_fused_chain<<<blocks, threads, 0, stream>>>(in, out, count, fusion_chain::stage1,
                                                     fusion_chain::stage2, fusion_chain::stage3,
                                                     fusion_chain::stage4);
    return vyre::cuda_check(cudaGetLastError(), "bench_fusion: hand_fused_chain launch");
  }
};

}  // namespace fusion_bench

namespace {
using namespace fusion_bench;

#define BENCH_CHECK(call)                                          \
  do {                                                             \
    const cudaError_t bench_status_ = (call);                      \
    if (bench_status_ != cudaSuccess) {                            \
      std::fprintf(stderr, "bench_fusion: %s failed: %s\n", #call, \
                   cudaGetErrorString(bench_status_));             \
      return 1;                                                    \
    }                                                              \
  } while (false)

template <class Pipeline>
int time_pipeline(const Pipeline& pipeline, const float* in, float* out, std::size_t count,
                  int repeats, cudaStream_t stream, double& median_ns) {
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  std::vector<double> samples;
  int rc = 0;
  for (int r = -3; r < repeats && rc == 0; ++r) {  // three warm-up runs
    if (cudaEventRecord(start, stream) != cudaSuccess) rc = 1;
    if (auto done = pipeline.run(in, out, count, stream); !done) {
      std::fprintf(stderr, "bench_fusion: %s\n", done.error().message().c_str());
      rc = 1;
    }
    float ms = 0;
    if (rc == 0 && (cudaEventRecord(stop, stream) != cudaSuccess ||
                    cudaEventSynchronize(stop) != cudaSuccess ||
                    cudaEventElapsedTime(&ms, start, stop) != cudaSuccess))
      rc = 1;
    if (r >= 0) samples.push_back(static_cast<double>(ms) * 1e6);
  }
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  if (rc != 0) {
    std::fprintf(stderr, "bench_fusion: timing failed: %s\n",
                 cudaGetErrorString(cudaGetLastError()));
    return rc;
  }
  median_ns = vyre_bench::median(std::move(samples));
  return 0;
}

// Spot-check the output against the host: a benchmark of wrong results measures nothing.
int verify(const float* device_out, const std::vector<float>& input, std::size_t count) {
  const std::size_t samples = 1 << 16;
  std::vector<float> got(samples);
  const std::size_t step = count / samples;
  for (std::size_t k = 0; k < samples; ++k) {
    const std::size_t i = k * step;
    BENCH_CHECK(cudaMemcpy(&got[k], device_out + i, sizeof(float), cudaMemcpyDeviceToHost));
    const float want = fusion_chain::apply(input[i]);
    if (!(std::fabs(got[k] - want) <= 1e-5f * (1.0f + std::fabs(want)))) {
      std::fprintf(stderr, "bench_fusion: wrong result at %zu: %g, want %g\n", i,
                   static_cast<double>(got[k]), static_cast<double>(want));
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vyre fused-kernel benchmark"};
  std::size_t count = std::size_t{256} << 20;
  int repeats = 21;
  app.add_option("--count", count, "floats in the chain's buffers")->check(CLI::PositiveNumber);
  app.add_option("--repeats", repeats, "timed runs (median reported)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const auto device = vyre_bench::device_name("bench_fusion");
  if (!device) return 0;

  std::vector<float> input(count);
  std::uint64_t state = 0xC0FFEE;
  for (float& v : input) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = static_cast<float>(static_cast<double>(state >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  }
  float* in = nullptr;
  float* out = nullptr;
  cudaStream_t stream = nullptr;
  BENCH_CHECK(cudaMalloc(&in, count * sizeof(float)));
  if (cudaMalloc(&out, count * sizeof(float)) != cudaSuccess) {
    (void)cudaFree(in);
    std::fprintf(stderr, "bench_fusion: cudaMalloc of the output failed\n");
    return 1;
  }
  int rc = 0;
  double fused_ns = 0;
  double unfused_ns = 0;
  double hand_ns = 0;
  const hand_fused hand;
  using fusion_chain::stage1, fusion_chain::stage2, fusion_chain::stage3, fusion_chain::stage4;
  const fusion_chain::pipeline<fused_plan> fused{stage1, stage2, stage3, stage4};
  const fusion_chain::pipeline<unfused_plan> unfused{stage1, stage2, stage3, stage4};
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMemcpy(in, input.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess)
    rc = 1;
  // Alternate the two variants so clocks and thermal state treat them alike.
  if (rc == 0) rc = time_pipeline(unfused, in, out, count, 3, stream, unfused_ns);
  if (rc == 0) rc = time_pipeline(fused, in, out, count, repeats, stream, fused_ns);
  if (rc == 0) rc = time_pipeline(unfused, in, out, count, repeats, stream, unfused_ns);
  if (rc == 0) rc = time_pipeline(hand, in, out, count, repeats, stream, hand_ns);
  // The plan's fused launch again after the hand-written kernel: the plan's time in the
  // comparison is the mean of its two medians, so neither side always runs first.
  double fused_again_ns = 0;
  if (rc == 0) rc = time_pipeline(fused, in, out, count, repeats, stream, fused_again_ns);
  if (rc == 0) rc = cudaMemset(out, 0xFF, count * sizeof(float)) == cudaSuccess ? 0 : 1;
  if (rc == 0)
    rc = fused.run(in, out, count, stream) && cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 1;
  if (rc == 0) rc = verify(out, input, count);
  if (rc == 0) rc = cudaMemset(out, 0xFF, count * sizeof(float)) == cudaSuccess ? 0 : 1;
  if (rc == 0)
    rc =
        unfused.run(in, out, count, stream) && cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 1;
  if (rc == 0) rc = verify(out, input, count);
  if (rc == 0) rc = cudaMemset(out, 0xFF, count * sizeof(float)) == cudaSuccess ? 0 : 1;
  if (rc == 0)
    rc = hand.run(in, out, count, stream) && cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 1;
  if (rc == 0) rc = verify(out, input, count);
  if (stream != nullptr) (void)cudaStreamDestroy(stream);
  (void)cudaFree(in);
  (void)cudaFree(out);
  if (rc != 0) {
    std::fprintf(stderr, "bench_fusion: failed\n");
    return rc;
  }
  const double bytes_fused = 2.0 * static_cast<double>(count) * sizeof(float);
  std::printf(
      "{\"name\":\"fusion.chain4.fused\",\"params\":{\"floats\":%zu,\"stages\":4,\"launches\":%zu,"
      "\"repeats\":%d,\"effective_GBps\":%.1f},\"device\":\"%s\",\"median_ns\":%.0f,"
      "\"baseline\":\"four_separate_launches\",\"baseline_median_ns\":%.0f,\"ratio\":%.3f}\n",
      count, fused.launch_count, repeats, bytes_fused / fused_ns, device->c_str(), fused_ns,
      unfused_ns, unfused_ns / fused_ns);
  std::printf(
      "{\"name\":\"fusion.chain4.unfused\",\"params\":{\"floats\":%zu,\"stages\":4,\"launches\":%"
      "zu,"
      "\"repeats\":%d,\"effective_GBps\":%.1f},\"device\":\"%s\",\"median_ns\":%.0f,"
      "\"baseline\":\"fusion.chain4.fused\",\"baseline_median_ns\":%.0f,\"ratio\":%.3f}\n",
      count, unfused.launch_count, repeats, 4.0 * bytes_fused / unfused_ns, device->c_str(),
      unfused_ns, fused_ns, fused_ns / unfused_ns);
  const double plan_ns = 0.5 * (fused_ns + fused_again_ns);
  std::printf(
      "{\"name\":\"fusion.chain4.fused_vs_hand_written\",\"params\":{\"floats\":%zu,"
      "\"stages\":4,\"repeats\":%d,\"effective_GBps\":%.1f,\"baseline_effective_GBps\":%.1f},"
      "\"device\":\"%s\",\"median_ns\":%.0f,\"baseline\":\"hand_written_fused_kernel\","
      "\"baseline_median_ns\":%.0f,\"ratio\":%.3f}\n",
      count, repeats, bytes_fused / plan_ns, bytes_fused / hand_ns, device->c_str(), plan_ns,
      hand_ns, hand_ns / plan_ns);
  return 0;
}
