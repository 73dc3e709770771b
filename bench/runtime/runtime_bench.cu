// SPDX-License-Identifier: Apache-2.0
// Runtime benchmarks. Each line is one JSON object:
//   {"name", "params", "device", "median_ns", "baseline", "baseline_median_ns", "ratio"}
// ratio = median_ns / baseline_median_ns, measured in the same run (below 1: vyre is faster).
// Targets (issue 4): caching-pool hit <= 0.02 x cudaMalloc+cudaFree (50x faster) and
// <= 1.2 x a cudaMallocAsync hit; telemetry on a launch-bound loop < 1.02 x without.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <vyre/runtime.cuh>

namespace runtime_bench {
VYRE_KERNEL void noop() {}
}  // namespace runtime_bench

namespace {
using namespace runtime_bench;
using clock_type = std::chrono::steady_clock;

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
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

// Median over `repeats` of the per-operation time of `ops` calls of `op(thread)` run by
// `threads` threads at once (wall time of the parallel region / ops per thread). The threads
// are started once and meet at a barrier before and after each repeat, so thread start-up and
// exit never land in the timed region.
double time_per_op(int threads, int repeats, int ops, const std::function<void(int)>& op) {
  std::barrier sync(threads + 1);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int r = 0; r < repeats + 2; ++r) {
        sync.arrive_and_wait();  // start
        for (int i = 0; i < ops; ++i) op(t);
        sync.arrive_and_wait();  // done
      }
    });
  std::vector<double> samples;
  for (int r = 0; r < repeats + 2; ++r) {  // two warm-up repeats
    sync.arrive_and_wait();
    const auto start = clock_type::now();
    sync.arrive_and_wait();
    const double ns = std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
    if (r >= 2) samples.push_back(ns / ops);
  }
  for (auto& th : pool) th.join();
  return median(samples);
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
  auto& pool = gpu->memory();
  // Repeats of ~10 ms: long enough for the core to reach its full clock after the barrier.
  const int pool_ops = threads == 1 ? 500000 : 50000;

  const double hit_ns = time_per_op(threads, 15, pool_ops, [&](int t) {
    void* p = value_of(pool.try_allocate(bytes, streams[t]));
    ok(pool.try_deallocate(p, bytes, streams[t]));
  });
  const double malloc_ns = time_per_op(threads, 7, threads == 1 ? 300 : 60, [&](int) {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    check(cudaFree(p), "cudaFree");
  });
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

  // The same pool without telemetry: what the counters cost under contention.
  vyre::caching_pool_resource bare(0, nullptr);
  const double bare_ns = time_per_op(threads, 15, pool_ops, [&](int t) {
    void* p = value_of(bare.try_allocate(bytes, streams[t]));
    ok(bare.try_deallocate(p, bytes, streams[t]));
  });
  const std::string params =
      "\"bytes\":" + std::to_string(bytes) + ",\"threads\":" + std::to_string(threads);
  emit("caching_pool_hit_with_vs_without_telemetry", params, hit_ns, "same pool, no telemetry",
       bare_ns);
  emit("caching_pool_hit_vs_cudaMalloc_cudaFree", params, hit_ns, "cudaMalloc+cudaFree", malloc_ns);
  emit("caching_pool_hit_vs_cudaMallocAsync_hit", params, hit_ns,
       "cudaMallocAsync+cudaFreeAsync hit", async_ns);
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
