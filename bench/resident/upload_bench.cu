// SPDX-License-Identifier: Apache-2.0
// Image upload throughput: `backend.upload(image)` (one resident allocation, one copy, staged
// through the pinned pool for a pageable source) against a raw cudaMemcpy of the same bytes
// into a preallocated buffer, from pinned and from pageable memory, 1 MiB to 1 GiB, same run.
//
// Prints JSON lines: name, params {bytes}, device, median_ns, gb_per_s, baseline,
// baseline_median_ns, baseline_gb_per_s, ratio (= baseline median / median: above 1 is faster
// than the raw copy).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/egraph.cuh>

#include "bench_cuda.cuh"
#include "bench_support.hpp"

namespace {

namespace eg = vyre::egraph;
constexpr const char* bench = "bench_resident_upload";

void require(cudaError_t status, const char* what) {
  vyre_bench::require(bench, status, what);
}

void emit(const char* name, std::uint64_t bytes, const std::string& device, double ours,
          const char* baseline, double theirs) {
  const auto gbps = [bytes](double ns) { return static_cast<double>(bytes) / ns; };
  std::printf(
      "{\"name\":\"%s\",\"params\":{\"bytes\":%llu},\"device\":\"%s\",\"median_ns\":%.1f,"
      "\"gb_per_s\":%.3f,\"baseline\":\"%s\",\"baseline_median_ns\":%.1f,"
      "\"baseline_gb_per_s\":%.3f,\"ratio\":%.3f}\n",
      name, static_cast<unsigned long long>(bytes), device.c_str(), ours, gbps(ours), baseline,
      theirs, gbps(theirs), theirs / ours);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"vyre image upload throughput vs raw cudaMemcpy"};
  std::uint64_t max_mib = 1024;
  app.add_option("--max-mib", max_mib, "largest image in MiB (powers of 4 from 1 MiB)");
  CLI11_PARSE(app, argc, argv);

  const auto named = vyre_bench::device_name(bench);
  if (!named) return 0;
  const std::string& device = *named;

  const std::uint64_t max_bytes = max_mib << 20;
  // The default caching pool retains at most 256 MiB of free blocks, so a larger image's
  // buffer is a fresh cudaMalloc (and its free a cudaFree) every time; the second backend's
  // pool retains it, as an engine that re-uploads images of that size would configure.
  auto default_gpu = vyre::backend<vyre::policies<>>::acquire(0);
  vyre::backend_options retaining;
  retaining.memory.retained_cap = static_cast<std::size_t>(
      4 * max_bytes);  // the image + fault record rounds up to the next power-of-two class
  auto retaining_gpu = vyre::backend<vyre::policies<>>::acquire(0, retaining);

  // One buffer of random words per source kind, sized for the largest image.
  const vyre_bench::upload_buffers buffers(bench, max_bytes);
  const std::vector<std::uint32_t>& pageable = buffers.pageable;
  const std::uint32_t* const pinned = buffers.pinned;
  void* const raw_target = buffers.raw_target;

  for (std::uint64_t bytes = std::uint64_t{1} << 20; bytes <= max_bytes; bytes *= 4) {
    const std::size_t words = static_cast<std::size_t>(bytes / 4);
    // A layout whose children column holds all but one word: upload moves bytes, whatever
    // they say (the view is not built here).
    const eg::image_layout layout =
        eg::image_layout::for_counts(0, static_cast<std::uint32_t>(words - 1), 0);
    const int repeats = bytes >= (std::uint64_t{256} << 20) ? 7 : 21;

    for (const bool from_pinned : {true, false}) {
      const std::uint32_t* source = from_pinned ? pinned : pageable.data();
      const eg::image_ref image{cuda::std::span<const std::uint32_t>(source, words), layout};
      const double theirs = [&] {
        require(cudaMemcpy(raw_target, source, bytes, cudaMemcpyHostToDevice), "warm-up copy");
        return vyre_bench::median_time(repeats, [&] {
          require(cudaMemcpy(raw_target, source, bytes, cudaMemcpyHostToDevice), "raw copy");
        });
      }();
      for (const bool retains : {false, true}) {
        auto& gpu = retains ? retaining_gpu : default_gpu;
        // Warm-up: pool classes, pinned staging.
        for (int i = 0; i < 2; ++i) gpu.free_resident(gpu.upload(image).handle());
        const double ours = vyre_bench::median_time(repeats, [&] {
          const eg::resident_image resident = gpu.upload(image);
          gpu.free_resident(resident.handle());
        });
        std::string name = from_pinned ? "resident.upload.pinned" : "resident.upload.pageable";
        if (retains) name += ".pool_retains_image";
        emit(name.c_str(), bytes, device, ours,
             from_pinned ? "cudaMemcpy_pinned" : "cudaMemcpy_pageable", theirs);
      }
    }
  }
  return 0;
}
