// SPDX-License-Identifier: Apache-2.0
// Where the device build's time goes: builds a synthetic e-graph of --rows M rows (default 16),
// then times `algorithms::build` with a reused workspace (cudaEvents, median of 20) for each
// child check, and brackets one more build with cudaProfilerStart/Stop so Nsight Compute can
// time each kernel of it alone:
//   nvcc -std=c++20 -arch=sm_90 --extended-lambda -I include -o build_profile build_profile.cu
//   ./build_profile 16
//   ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum \
//       --csv ./build_profile 16 on
// The sum of the kernel times against the event-timed build is the host-wait gap.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_profiler_api.h>

#include "probe_support.cuh"

using namespace vyre::algorithms;

using probe::check;
using probe::take;

int main(int argc, char** argv) {
  probe::name = "build_profile";
  const std::uint32_t millions = argc > 1 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 16;
  const bool profile_checked = argc > 2 && std::string(argv[2]) == "on";
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaMemPool_t pool = nullptr;
  check(cudaDeviceGetDefaultMemPool(&pool, 0), "pool");
  std::uint64_t keep_all = UINT64_MAX;
  check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_all), "pool");

  const probe::synthetic_rows on_device(millions, stream);
  const raw_rows_ref& ref = on_device.ref;

  build_workspace<probe::policies> workspace(probe::gpu(), stream);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  for (const child_check mode : {child_check::off, child_check::on}) {
    std::vector<float> times;
    for (int i = 0; i < 21; ++i) {
      check(cudaEventRecord(start, stream), "record");
      auto image = take(build(probe::gpu(), ref, workspace, mode), "build");
      check(cudaEventRecord(stop, stream), "record");
      check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      if (i > 0) times.push_back(ms);
      if (i == 0 && mode == child_check::off)
        std::printf("rows %u children %u groups %u\n", ref.row_count, ref.child_count,
                    image.layout().group_count);
    }
    std::sort(times.begin(), times.end());
    std::printf("build child_check=%s median %.1f us\n", mode == child_check::on ? "on" : "off",
                times[times.size() / 2] * 1000.0);
  }
  check(cudaProfilerStart(), "profiler start");
  {
    auto image = take(
        build(probe::gpu(), ref, workspace, profile_checked ? child_check::on : child_check::off),
        "build");
  }
  check(cudaStreamSynchronize(stream), "sync");
  check(cudaProfilerStop(), "profiler stop");
  return 0;
}
