// SPDX-License-Identifier: Apache-2.0
// Runtime benchmarks. Each line is one JSON object:
//   {"name", "params", "device", "median_ns", "baseline", "baseline_median_ns", "ratio"}
// ratio = median_ns / baseline_median_ns, measured in the same run (below 1: vyre is faster).
// A peer that could not be measured prints {"name", "params", "skipped": "why"} instead.
// Targets (issue 4): caching-pool hit <= 0.02 x cudaMalloc+cudaFree (50x faster) and
// <= 1.2 x a cudaMallocAsync hit; telemetry on a pool hit and on a launch-bound loop
// < 1.02 x without. Peers (issue 17), on the same allocate + free hit loop, same bytes, same
// threads, each thread on its own stream: CUB's cub::CachingDeviceAllocator (from the
// toolkit's CCCL) and RMM's rmm::mr::pool_memory_resource over cuda_memory_resource (when
// built with VYRE_BENCH_RMM_DIR; see CMakeLists.txt).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <cub/util_allocator.cuh>

#include <vyre/runtime.cuh>

#include "bench_timing.hpp"
#if defined(VYRE_BENCH_HAVE_RMM)
#include "rmm_peer.hpp"
#endif

namespace runtime_bench {
VYRE_KERNEL void noop() {}
}  // namespace runtime_bench

namespace {
using namespace runtime_bench;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
    std::exit(1);
  }
}
template <class T>
T value_of(vyre::expected<T>&& r) {
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    std::exit(1);
  }
  return std::move(*r);
}
void ok(const vyre::expected<void>& r) {
  if (!r) {
    std::fprintf(stderr, "%s\n", r.error().message().c_str());
    std::exit(1);
  }
}

std::string device_name;

void emit(const char* name, const std::string& params, double ns, const char* baseline,
          double baseline_ns) {
  std::printf(
      "{\"name\":\"%s\",\"params\":{%s},\"device\":\"%s\",\"median_ns\":%.1f,\"baseline\":\"%s\","
      "\"baseline_median_ns\":%.1f,\"ratio\":%.4f}\n",
      name, params.c_str(), device_name.c_str(), ns, baseline, baseline_ns, ns / baseline_ns);
  std::fflush(stdout);
}

void skip(const char* name, const std::string& params, const std::string& why) {
  std::string escaped;
  for (const char c : why) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c == '\n' ? ' ' : c;
  }
  std::printf("{\"name\":\"%s\",\"params\":{%s},\"device\":\"%s\",\"skipped\":\"%s\"}\n", name,
              params.c_str(), device_name.c_str(), escaped.c_str());
  std::fflush(stdout);
}

void bench_device_allocation(int threads) {
  constexpr std::size_t bytes = std::size_t{1} << 20;
  auto gpu = vyre::backend<vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                          vyre::on_error::return_expected>>::acquire(0);
  if (!gpu) {
    std::fprintf(stderr, "%s\n", gpu.error().message().c_str());
    std::exit(1);
  }
  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  const std::string params =
      "\"bytes\":" + std::to_string(bytes) + ",\"threads\":" + std::to_string(threads);
  // Repeats of ~10 ms: long enough for the core to reach its full clock after the barrier.
  const int pool_ops = threads == 1 ? 500000 : 50000;

  // With telemetry against without: what the counters cost on a hit. Two pools made the same
  // way and used alike, one counting into its own telemetry (the backend's pool carries the
  // history of the other benchmarks). Alternating rounds, fresh threads each: neither always
  // runs first.
  vyre::telemetry_counters counters;
  vyre::caching_pool_resource counted(0, &counters);
  vyre::caching_pool_resource bare(0, nullptr);
  const auto [hit_ns, bare_ns] = time_pair(
      threads, 6, 5, pool_ops,
      [&](int t) {
        void* p = value_of(counted.try_allocate(bytes, streams[t]));
        ok(counted.try_deallocate(p, bytes, streams[t]));
      },
      [&](int t) {
        void* p = value_of(bare.try_allocate(bytes, streams[t]));
        ok(bare.try_deallocate(p, bytes, streams[t]));
      });
  const auto snapshot = counters.snapshot();
  if (snapshot.pool_hits == 0 || snapshot.allocations < snapshot.pool_hits) {
    std::fprintf(stderr, "telemetry counted %llu hits, %llu allocations: not a hit loop\n",
                 static_cast<unsigned long long>(snapshot.pool_hits),
                 static_cast<unsigned long long>(snapshot.allocations));
    std::exit(1);
  }
  emit("caching_pool_hit_with_vs_without_telemetry", params, hit_ns, "same pool, no telemetry",
       bare_ns);

  const double malloc_ns = time_per_op(threads, 7, threads == 1 ? 300 : 60, [&](int) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaFree(p), "cudaFree");
  });
  emit("caching_pool_hit_vs_cudaMalloc_cudaFree", params, hit_ns, "cudaMalloc+cudaFree", malloc_ns);

  // A cudaMallocAsync hit: a dedicated pool that keeps everything (threshold = max).
  cudaMemPool_t mempool = nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  check(cudaMemPoolCreate(&mempool, &props), "cudaMemPoolCreate");
  std::uint64_t threshold = UINT64_MAX;
  check(cudaMemPoolSetAttribute(mempool, cudaMemPoolAttrReleaseThreshold, &threshold), "threshold");
  const double async_ns = time_per_op(threads, 15, 20000, [&](int t) {
    void* p = nullptr;
    check(cudaMallocFromPoolAsync(&p, bytes, mempool, streams[t]), "cudaMallocFromPoolAsync");
    check(cudaFreeAsync(p, streams[t]), "cudaFreeAsync");
  });
  check(cudaDeviceSynchronize(), "sync");
  check(cudaMemPoolDestroy(mempool), "pool destroy");
  emit("caching_pool_hit_vs_cudaMallocAsync_hit", params, hit_ns,
       "cudaMallocAsync+cudaFreeAsync hit", async_ns);

  // CUB's caching allocator (bins of powers of 8 from 512 B to 2 MiB; the 1 MiB request takes
  // a 2 MiB bin) with a cache large enough for every thread's block. A free records an event
  // on the block's stream; the next allocation on that stream reuses the block at once.
  {
    cub::CachingDeviceAllocator cub_pool(8, 3, 7, std::size_t{1} << 30);
    const double cub_ns = time_per_op(threads, 15, threads == 1 ? 50000 : 5000, [&](int t) {
      void* p = nullptr;
      check(cub_pool.DeviceAllocate(&p, bytes, streams[t]), "cub DeviceAllocate");
      check(cub_pool.DeviceFree(p), "cub DeviceFree");
    });
    check(cudaDeviceSynchronize(), "sync");
    emit("caching_pool_hit_vs_cub_CachingDeviceAllocator_hit", params, hit_ns,
         "cub::CachingDeviceAllocator DeviceAllocate+DeviceFree hit", cub_ns);
  }

  // RMM's pool over cudaMalloc; its hit path is compiled into librmm.so.
  {
    const char* name = "caching_pool_hit_vs_rmm_pool_memory_resource_hit";
#if defined(VYRE_BENCH_HAVE_RMM)
    std::string why;
    const std::function<void(int)> rmm_hit = make_rmm_pool_hit(bytes, streams, why);
    if (rmm_hit) {
      const double rmm_ns = time_per_op(threads, 15, threads == 1 ? 200000 : 20000, rmm_hit);
      check(cudaDeviceSynchronize(), "sync");
      const std::string baseline =
          "rmm::mr::pool_memory_resource " + rmm_version() + " allocate+deallocate hit";
      emit(name, params, hit_ns, baseline.c_str(), rmm_ns);
    } else {
      skip(name, params, why);
    }
#else
    skip(name, params,
         "built without RMM: run scripts/fetch-device-deps.sh (it unpacks the librmm-cu13 and "
         "rapids-logger wheels into .deps/rmm, found at configure time) or configure with "
         "-DVYRE_BENCH_RMM_DIR=<dir>");
#endif
  }
  for (auto s : streams) check(cudaStreamDestroy(s), "stream destroy");
}

void bench_stream_ordered_policy(int threads) {
  constexpr std::size_t bytes = std::size_t{1} << 20;
  auto gpu = vyre::backend<vyre::policies<vyre::alloc::stream_ordered, vyre::staging::little_endian,
                                          vyre::on_error::return_expected>>::acquire(0);
  if (!gpu) std::exit(1);
  std::vector<cudaStream_t> streams(threads);
  for (auto& s : streams) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  auto& pool = gpu->memory();
  const double ours = time_per_op(threads, 15, 20000, [&](int t) {
    void* p = value_of(pool.try_allocate(bytes, streams[t]));
    ok(pool.try_deallocate(p, bytes, streams[t]));
  });
  const double raw = time_per_op(threads, 15, 20000, [&](int t) {
    void* p = nullptr;
    check(cudaMallocFromPoolAsync(&p, bytes, pool.pool(), streams[t]), "cudaMallocFromPoolAsync");
    check(cudaFreeAsync(p, streams[t]), "cudaFreeAsync");
  });
  check(cudaDeviceSynchronize(), "sync");
  emit("stream_ordered_policy_vs_raw_pool",
       "\"bytes\":1048576,\"threads\":" + std::to_string(threads), ours,
       "cudaMallocFromPoolAsync+cudaFreeAsync", raw);
  for (auto s : streams) check(cudaStreamDestroy(s), "stream destroy");
}

void bench_pinned() {
  constexpr std::size_t bytes = std::size_t{4} << 20;
  vyre::pinned_pool pool;
  const double ours = time_per_op(1, 15, 20000, [&](int) { (void)value_of(pool.acquire(bytes)); });
  const double raw = time_per_op(1, 7, 50, [&](int) {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable), "cudaHostAlloc");
    check(cudaFreeHost(p), "cudaFreeHost");
  });
  emit("pinned_pool_hit_vs_cudaHostAlloc", "\"bytes\":4194304,\"threads\":1", ours,
       "cudaHostAlloc+cudaFreeHost", raw);
}

void bench_telemetry_overhead() {
  auto gpu = vyre::backend<vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                          vyre::on_error::return_expected>>::acquire(0);
  if (!gpu) std::exit(1);
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  constexpr int launches = 20000;
  auto& telemetry = gpu->telemetry();
  // Interleave the two variants so clock and thermal drift hit both alike.
  std::vector<double> with, without;
  for (int r = 0; r < 23; ++r) {
    for (const bool record : {false, true}) {
      check(cudaEventRecord(start, stream), "record");
      for (int i = 0; i < launches; ++i) {
        noop<<<1, 32, 0, stream>>>();
        if (record) telemetry.record_kernel_launch();
      }
      check(cudaEventRecord(stop, stream), "record");
      check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      if (r >= 3) (record ? with : without).push_back(double(ms) * 1e6 / launches);
    }
  }
  check(cudaGetLastError(), "launches");
  emit("telemetry_overhead_launch_loop", "\"launches\":20000,\"kernel\":\"empty\"", median(with),
       "same loop without telemetry", median(without));
  // The checked launch (cudaGetLastError + telemetry) for reference.
  std::vector<double> checked;
  for (int r = 0; r < 13; ++r) {
    check(cudaEventRecord(start, stream), "record");
    for (int i = 0; i < launches; ++i)
      ok(vyre::launch(&telemetry, noop, vyre::launch_config{dim3(1), dim3(32), 0, stream}));
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    if (r >= 3) checked.push_back(double(ms) * 1e6 / launches);
  }
  emit("checked_launch_vs_raw_launch", "\"launches\":20000,\"kernel\":\"empty\"", median(checked),
       "raw <<<>>> launch", median(without));
  check(cudaEventDestroy(start), "event");
  check(cudaEventDestroy(stop), "event");
  check(cudaStreamDestroy(stream), "stream");
}
}  // namespace

int main() {
  cudaDeviceProp props{};
  if (cudaGetDeviceProperties(&props, 0) != cudaSuccess) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  device_name = props.name;
  bench_device_allocation(1);
  bench_device_allocation(16);
  bench_stream_ordered_policy(1);
  bench_stream_ordered_policy(16);
  bench_pinned();
  bench_telemetry_overhead();
  return 0;
}
