// SPDX-License-Identifier: Apache-2.0
// Benchmarks of the device algorithms (JSON lines, one per measurement):
//   build           device build vs the summed medians of the CUB primitives it runs
//                   (DeviceReduce::Max, DeviceRadixSort::SortPairs over the id bits,
//                   DeviceRunLengthEncode::Encode, DeviceScan::ExclusiveSum twice), each timed
//                   alone on the same input in the same run
//   congruence      GPU closure vs the CPU reference; per-round time and e-nodes/s per round
//   extract         GPU extraction vs the CPU reference
//   *_plan_vs_cpu   one congruence_plan / extract_plan call on the resident device image
//                   (one graph replay + readback) vs the CPU reference
//   *_host_device_vs_cpu  plan.run_host(device_choice::gpu) on the host image (upload, replay,
//                   download) vs the CPU reference on the same host image
//   *_auto_vs_cpu   plan.run_host(device_choice::automatic) vs the CPU reference
//   *_host_device_vs_host_engine  per real file: run_host(device_choice::gpu) vs
//                   run_host(device_choice::cpu), the CPU engine that `automatic` runs below its
//                   crossover (same host image in, same host result out)
//   *_dispatch_crossover  the smallest row count from which run_host(device) beats
//                   run_host(host) on every real file at least that large (what `automatic`
//                   should use)
// on synthetic e-graphs with planted congruences (--rows 1,4,16 in M rows), on each --file
// (large e-graphs such as egglog's math after 12 iterations, made by vyre-eqsat --emit) and on
// every real e-graph of --data-dir (default VYRE_EGRAPH_DATA_DIR). One-shot GPU times: cudaEvents
// around the whole call after a warm-up, median of --repeats; plan and dispatch times: wall clock
// around the (synchronous) call after a warm-up, median; CPU: one thread, std::chrono, median.
// --parts build stops after the build lines of each input; --parts gpu skips the CPU baselines
// (for same-run comparisons of two builds of vyre). --parts engine (synthetic sizes, --file):
//   *_vs_cpu_engine[_1t]  the GPU kernel path (one-shot call on the resident image) vs the
//                   multi-threaded CPU engine (cpu_engine.hpp) on the host packed image, on
//                   every core and on one thread (median of 3 after a warm-up)
//   *_host_device_vs_cpu_engine  end to end: plan.run_host(device_choice::gpu) from the host
//                   image (upload, replay, download to host vectors) vs the same CPU engine
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "vyre/algorithms.cuh"
#include "vyre/algorithms/cpu_engine.hpp"
#include "vyre/detail/enum_name.hpp"

#include "bench_support.hpp"

#if VYRE_HAVE_SIMDJSON
#include "egraph_json.hpp"
#endif

using namespace vyre::algorithms;
using vyre::device_choice;

namespace {

bool build_only = false;   // --parts build: the build lines only
bool skip_cpu = false;     // --parts gpu: no CPU baselines (their lines report 0 ns)
bool engine_only = false;  // --parts engine: GPU against the CPU engine, synthetic sizes only

// Every algorithm allocates from one backend: the caching pool keeping everything freed (an
// engine running them repeatedly would), so the timings measure the algorithms rather than
// the driver mapping memory again after each synchronisation. Errors come back as values.
using bench_policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                      vyre::on_error::return_expected>;
using bench_backend = vyre::backend<bench_policies>;
bench_backend* bench_gpu_instance = nullptr;
bench_backend& bench_gpu() {
  return *bench_gpu_instance;
}

void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "bench_algorithms: %s failed: %s\n", what, cudaGetErrorString(status));
  std::exit(1);
}

template <class T>
T take(vyre::expected<T>&& value, const char* what) {
  if (!value) {
    std::fprintf(stderr, "bench_algorithms: %s: %s\n", what, value.error().message().c_str());
    std::exit(1);
  }
  return std::move(*value);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median GPU time (ns) of `work` on `stream`, after one warm-up call.
template <class Work>
double gpu_median_ns(cudaStream_t stream, int repeats, Work&& work) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  work();
  check(cudaStreamSynchronize(stream), "warm-up");
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    check(cudaEventRecord(start, stream), "record");
    work();
    check(cudaEventRecord(stop, stream), "record");
    check(cudaEventSynchronize(stop), "sync");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
    times.push_back(ms * 1e6);
  }
  check(cudaEventDestroy(start), "event");
  check(cudaEventDestroy(stop), "event");
  return median(times);
}

template <class Work>
double host_clock_median_ns(int repeats, Work&& work) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    times.push_back(
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(times);
}

// A CPU baseline (none under --parts gpu: its lines report 0 ns).
template <class Work>
double cpu_median_ns(int repeats, Work&& work) {
  return skip_cpu ? 0.0 : host_clock_median_ns(repeats, work);
}

std::string device_name() {
  cudaDeviceProp prop{};
  int device = 0;
  check(cudaGetDevice(&device), "device");
  check(cudaGetDeviceProperties(&prop, device), "properties");
  return prop.name;
}

void emit(const char* name, const std::string& params, const std::string& device, double median_ns,
          const char* baseline, double baseline_ns, const std::string& extra = "") {
  std::printf(
      "{\"name\":\"%s\",\"params\":{%s},\"device\":\"%s\",\"median_ns\":%.0f,"
      "\"baseline\":\"%s\",\"baseline_median_ns\":%.0f,\"ratio\":%.4f%s}\n",
      name, params.c_str(), device.c_str(), median_ns, baseline, baseline_ns,
      median_ns > 0 ? baseline_ns / median_ns : 0.0, extra.c_str());
  std::fflush(stdout);
}

template <class T>
vyre::device_array<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  auto buffer = take(vyre::device_array<T>::allocate(bench_gpu().memory_ref(), host.size(), stream,
                                                     "bench upload"),
                     "upload");
  if (!host.empty())
    check(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T),
                          cudaMemcpyHostToDevice, stream),
          "upload");
  return buffer;
}

struct on_device {
  vyre::device_array<std::uint32_t> eclass, op, lens, children;
  vyre::device_array<double> cost;
  raw_rows_ref rows;
};

on_device upload_graph(const raw_rows& rows, const std::vector<double>& cost, cudaStream_t stream) {
  on_device d{upload(rows.row_eclass_ids, stream),
              upload(rows.row_language_op_ids, stream),
              upload(rows.row_children_lens, stream),
              upload(rows.children, stream),
              upload(cost, stream),
              {}};
  d.rows = {d.eclass.get(),   d.op.get(),       d.lens.get(),
            d.children.get(), rows.row_count(), static_cast<std::uint32_t>(rows.children.size())};
  return d;
}

// The CUB primitives `build` runs, each timed alone with preallocated scratch.
double primitives_ns(const on_device& d, std::uint32_t groups, cudaStream_t stream, int repeats) {
  const std::uint32_t R = d.rows.row_count;
  auto keys_out = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R, stream, "p"), "p");
  auto vals_in = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R, stream, "p"), "p");
  auto vals_out = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R, stream, "p"), "p");
  auto unique = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R, stream, "p"), "p");
  auto counts = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R + 1, stream, "p"),
      "p");
  auto offsets = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), R + 1, stream, "p"),
      "p");
  auto runs =
      take(vyre::device_array<int>::allocate(bench_gpu().memory_ref(), 1, stream, "p"), "p");
  auto max_id = take(
      vyre::device_array<std::uint32_t>::allocate(bench_gpu().memory_ref(), 1, stream, "p"), "p");
  std::size_t b_max = 0, b_sort = 0, b_rle = 0, b_scan = 0, b_gscan = 0;
  check(cub::DeviceReduce::Max(nullptr, b_max, d.rows.row_eclass_ids, max_id.get(), R, stream),
        "size");
  check(cub::DeviceRadixSort::SortPairs(nullptr, b_sort, d.rows.row_eclass_ids, keys_out.get(),
                                        vals_in.get(), vals_out.get(), R, 0, 32, stream),
        "size");
  check(cub::DeviceRunLengthEncode::Encode(nullptr, b_rle, keys_out.get(), unique.get(),
                                           counts.get(), runs.get(), static_cast<int>(R), stream),
        "size");
  check(cub::DeviceScan::ExclusiveSum(nullptr, b_scan, d.rows.row_children_lens, offsets.get(), R,
                                      stream),
        "size");
  check(cub::DeviceScan::ExclusiveSum(nullptr, b_gscan, counts.get(), offsets.get(), groups + 1,
                                      stream),
        "size");
  const std::size_t bytes = std::max({b_max, b_sort, b_rle, b_scan, b_gscan, std::size_t{1}});
  auto temp = take(
      vyre::device_array<unsigned char>::allocate(bench_gpu().memory_ref(), bytes, stream, "p"),
      "p");
  std::uint32_t host_max = 0;
  check(cub::DeviceReduce::Max(temp.get(), b_max, d.rows.row_eclass_ids, max_id.get(), R, stream),
        "max");
  check(cudaMemcpyAsync(&host_max, max_id.get(), 4, cudaMemcpyDeviceToHost, stream), "max");
  check(cudaStreamSynchronize(stream), "max");
  const int end_bit = std::max(1, 32 - __builtin_clz(host_max | 1u));
  double total = 0;
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceReduce::Max(temp.get(), b, d.rows.row_eclass_ids, max_id.get(), R, stream),
          "max");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceRadixSort::SortPairs(temp.get(), b, d.rows.row_eclass_ids, keys_out.get(),
                                          vals_in.get(), vals_out.get(), R, 0, end_bit, stream),
          "sort");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceRunLengthEncode::Encode(temp.get(), b, keys_out.get(), unique.get(),
                                             counts.get(), runs.get(), static_cast<int>(R), stream),
          "rle");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceScan::ExclusiveSum(temp.get(), b, d.rows.row_children_lens, offsets.get(), R,
                                        stream),
          "scan");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceScan::ExclusiveSum(temp.get(), b, counts.get(), offsets.get(), groups + 1,
                                        stream),
          "scan");
  });
  return total;
}

struct plans {
  congruence_plan<bench_policies> closure;
  extract_plan<bench_policies> best;
};

// Per real file: row count, run_host(device) and run_host(host) medians (the crossover lines).
struct dispatch_sample {
  std::uint32_t rows;
  double device_ns, cpu_ns;
};

// The smallest row count r such that run_host(device) is no slower than the host on every
// sample with at least r rows (one past the largest sample when the device never wins).
std::uint32_t crossover_rows(std::vector<dispatch_sample> samples) {
  std::sort(samples.begin(), samples.end(),
            [](const dispatch_sample& a, const dispatch_sample& b) { return a.rows < b.rows; });
  std::uint32_t from = samples.empty() ? 0 : samples.back().rows + 1;
  for (std::size_t i = samples.size(); i-- > 0;) {
    if (samples[i].device_ns > samples[i].cpu_ns) break;
    from = samples[i].rows;
  }
  return from;
}

void emit_crossover(const char* name, const std::vector<dispatch_sample>& samples,
                    std::uint32_t default_rows, const std::string& device) {
  const std::uint32_t rows = crossover_rows(samples);
  std::printf(
      "{\"name\":\"%s\",\"params\":{\"files\":%zu,\"crossover_rows\":%u,"
      "\"default_host_below_rows\":%u},\"device\":\"%s\",\"crossover_rows\":%u}\n",
      name, samples.size(), rows, default_rows, device.c_str(), rows);
  std::fflush(stdout);
}

template <class T>
T& must(vyre::expected<T>& value, const char* what) {
  if (!value) {
    std::fprintf(stderr, "bench_algorithms: %s: %s\n", what, value.error().message().c_str());
    std::exit(1);
  }
  return *value;
}

// Wall-clock median of a synchronous call, after one warm-up call (which captures the plan's
// graph for this size).
template <class Work>
double wall_median_ns(int repeats, Work&& work) {
  work();
  return host_clock_median_ns(repeats, work);
}

// Wall-clock medians of congruence_plan::run_host and then extract_plan::run_host, from the
// same host image to the same host result, on the side `where` picks.
std::pair<double, double> run_host_ns(plans& plan, const image_columns& host,
                                      cuda::std::span<const double> cost,
                                      cuda::std::span<const std::uint32_t> roots, int repeats,
                                      device_choice where) {
  const std::string side = std::string("::run_host(") + vyre::device_choice_name(where) + ")";
  const std::string congruence_what = "congruence_plan" + side,
                    extract_what = "extract_plan" + side;
  const double congruence_ns = wall_median_ns(repeats, [&] {
    auto result = plan.closure.run_host(host, {where});
    (void)must(result, congruence_what.c_str());
  });
  const double extract_ns = wall_median_ns(repeats, [&] {
    auto result = plan.best.run_host(host, cost, roots, {where});
    (void)must(result, extract_what.c_str());
  });
  return {congruence_ns, extract_ns};
}

// The CPU's model and this process's hardware threads, for the CPU engine lines.
std::string cpu_params() {
  return ",\"cpu\":\"" + vyre_bench::cpu_name() + "\",\"cpu_threads\":" +
         std::to_string(vyre::algorithms::cpu_engine::detail::resolve_threads(0));
}

// --parts engine: the GPU (kernel path and end to end) against the multi-threaded CPU engine.
void emit_engine_lines(const std::string& params, const std::string& device, const raw_rows& rows,
                       const std::vector<double>& cost, const std::vector<std::uint32_t>& roots,
                       double congruence_ns, double extract_ns, plans& plan) {
  auto host_image = pack_reference(rows.ref());
  const image_columns host = must(host_image, "pack_reference").columns();
  const cuda::std::span<const std::uint32_t> root_span{roots.data(), roots.size()};
  const cuda::std::span<const double> cost_span{cost.data(), cost.size()};
  const auto engine_ns = [&](auto&& run) {
    run();  // warm-up: page faults, thread start-up
    return host_clock_median_ns(3, run);
  };
  for (const unsigned threads : {0u, 1u}) {
    const double cpu_congruence_ns = engine_ns([&] {
      auto found = cpu_engine::congruence(host, threads);
      (void)must(found, "cpu_engine::congruence");
    });
    const double cpu_extract_ns = engine_ns([&] {
      auto found = cpu_engine::extract(host, cost_span, root_span, threads);
      (void)must(found, "cpu_engine::extract");
    });
    const std::string suffix = threads == 0 ? "" : "_1t";
    const std::string with_cpu = params + cpu_params();
    const char* congruence_baseline =
        threads == 0 ? "cpu_engine::congruence, every core" : "cpu_engine::congruence, 1 thread";
    const char* extract_baseline =
        threads == 0 ? "cpu_engine::extract, every core" : "cpu_engine::extract, 1 thread";
    emit(("congruence_vs_cpu_engine" + suffix).c_str(), with_cpu, device, congruence_ns,
         congruence_baseline, cpu_congruence_ns);
    emit(("extract_vs_cpu_engine" + suffix).c_str(), with_cpu, device, extract_ns, extract_baseline,
         cpu_extract_ns);
    if (threads != 0) continue;
    const auto [host_device_congruence_ns, host_device_extract_ns] =
        run_host_ns(plan, host, cost_span, root_span, 3, device_choice::gpu);
    emit("congruence_host_device_vs_cpu_engine", with_cpu + ",\"timer\":\"wall\"", device,
         host_device_congruence_ns, congruence_baseline, cpu_congruence_ns);
    emit("extract_host_device_vs_cpu_engine", with_cpu + ",\"timer\":\"wall\"", device,
         host_device_extract_ns, extract_baseline, cpu_extract_ns);
  }
}

void bench_graph(const std::string& label, const raw_rows& rows, const std::vector<double>& cost,
                 const std::vector<std::uint32_t>& roots, cudaStream_t stream, int repeats,
                 int cpu_repeats, bool with_primitives, const std::string& device, plans& plan,
                 std::vector<dispatch_sample>* congruence_samples,
                 std::vector<dispatch_sample>* extract_samples) {
  const std::uint32_t R = rows.row_count();
  const std::string params = "\"input\":\"" + label + "\",\"rows\":" + std::to_string(R) +
                             ",\"children\":" + std::to_string(rows.children.size());
  on_device d = upload_graph(rows, cost, stream);
  vyre::egraph::device_image image = take(build(bench_gpu(), d.rows, stream), "build");
  const std::uint32_t G = image.layout().group_count;

  // Build.
  const double build_ns = gpu_median_ns(
      stream, repeats, [&] { (void)take(build(bench_gpu(), d.rows, stream), "build"); });
  const double build_unchecked_ns = gpu_median_ns(stream, repeats, [&] {
    (void)take(build(bench_gpu(), d.rows, stream, child_check::off), "build");
  });
  const double pack_ns =
      cpu_median_ns(cpu_repeats, [&] { (void)take(pack_reference(rows.ref()), "pack"); });
  if (with_primitives) {
    // A reused workspace: the temporaries and CUB scratch stay allocated between builds, as
    // the primitives' scratch does in the baseline; only the image is allocated per call.
    build_workspace<bench_policies> workspace(bench_gpu(), stream);
    const double build_reused_ns = gpu_median_ns(stream, repeats, [&] {
      (void)take(build(bench_gpu(), d.rows, workspace, child_check::off), "build");
    });
    const double build_reused_checked_ns = gpu_median_ns(stream, repeats, [&] {
      (void)take(build(bench_gpu(), d.rows, workspace, child_check::on), "build");
    });
    const double cub_ns = primitives_ns(d, G, stream, repeats);
    const auto line = [&](const char* check, const char* workspace_mode, double ns) {
      emit("build_vs_cub_primitives",
           params + ",\"child_check\":\"" + check + "\",\"pool_release_threshold\":\"max\"" +
               ",\"workspace\":\"" + workspace_mode + "\"",
           device, ns, "sum of CUB primitive medians", cub_ns,
           ",\"rows_per_s\":" + std::to_string(R / (ns * 1e-9)));
    };
    line("off", "one_shot", build_unchecked_ns);
    line("on", "one_shot", build_ns);
    line("off", "reused", build_reused_ns);
    line("on", "reused", build_reused_checked_ns);
  }
  emit("build_vs_cpu_pack", params, device, build_ns, "pack_reference (1 CPU thread)", pack_ns);
  if (build_only) return;

  // Congruence.
  std::uint32_t rounds = 0;
  std::uint64_t merges = 0;
  const double congruence_ns = gpu_median_ns(stream, repeats, [&] {
    auto result = take(congruence(bench_gpu(), image.columns(), stream), "congruence");
    rounds = result.rounds;
    merges = result.merges;
  });
  const double while_ns = gpu_median_ns(stream, repeats, [&] {
    (void)take(congruence(bench_gpu(), image.columns(), stream, loop_driver::conditional_graph),
               "congruence (WHILE)");
  });
  emit("congruence_while_graph_vs_flag_readback", params, device, while_ns,
       "congruence with one flag readback per round", congruence_ns,
       ",\"gpu_rounds\":" + std::to_string(rounds));
  std::uint32_t cpu_rounds = 0;
  const double cpu_congruence_ns = cpu_median_ns(cpu_repeats, [&] {
    cpu_rounds = take(congruence_reference(rows.ref()), "congruence_reference").rounds;
  });
  const double per_round = congruence_ns / std::max(1u, rounds);
  emit("congruence_vs_cpu", params + ",\"merges\":" + std::to_string(merges), device, congruence_ns,
       "congruence_reference (1 CPU thread)", cpu_congruence_ns,
       ",\"gpu_rounds\":" + std::to_string(rounds) + ",\"cpu_rounds\":" +
           std::to_string(cpu_rounds) + ",\"ns_per_round\":" + std::to_string(per_round) +
           ",\"enodes_per_s_per_round\":" + std::to_string(R / (per_round * 1e-9)));

  // Extraction.
  std::uint32_t extract_rounds = 0;
  const double extract_ns = gpu_median_ns(stream, repeats, [&] {
    extract_rounds = take(extract(bench_gpu(), image.columns(), d.cost.get(),
                                  {roots.data(), roots.size()}, stream),
                          "extract")
                         .rounds;
  });
  const double cpu_extract_ns = cpu_median_ns(cpu_repeats, [&] {
    (void)take(
        extract_reference(rows.ref(), {cost.data(), cost.size()}, {roots.data(), roots.size()}),
        "extract_reference");
  });
  emit("extract_vs_cpu", params, device, extract_ns, "extract_reference (1 CPU thread)",
       cpu_extract_ns, ",\"gpu_rounds\":" + std::to_string(extract_rounds));

  if (engine_only) {
    emit_engine_lines(params, device, rows, cost, roots, congruence_ns, extract_ns, plan);
    return;
  }

  // Plans on the resident image: one replay + one readback per call.
  const cuda::std::span<const std::uint32_t> root_span{roots.data(), roots.size()};
  const cuda::std::span<const double> cost_span{cost.data(), cost.size()};
  const double plan_congruence_ns = wall_median_ns(repeats, [&] {
    auto view = plan.closure.run(image.columns());
    (void)must(view, "congruence_plan::run");
  });
  const double plan_extract_ns = wall_median_ns(repeats, [&] {
    auto view = plan.best.run(image.columns(), d.cost.get(), root_span);
    (void)must(view, "extract_plan::run");
  });
  if (congruence_samples == nullptr) {
    // Synthetic sizes: the CPU baselines above (raw rows; the CPU runs take seconds).
    emit("congruence_plan_vs_cpu", params + ",\"timer\":\"wall\"", device, plan_congruence_ns,
         "congruence_reference (1 CPU thread)", cpu_congruence_ns);
    emit("extract_plan_vs_cpu", params + ",\"timer\":\"wall\"", device, plan_extract_ns,
         "extract_reference (1 CPU thread)", cpu_extract_ns);
    return;
  }
  // Real files: the CPU reference on the same host packed image the dispatch gets.
  auto host_image = pack_reference(rows.ref());
  const image_columns host = must(host_image, "pack_reference").columns();
  // As many repeats as the device lines (the real files are small): like-for-like medians.
  const int packed_repeats = std::max(cpu_repeats, repeats);
  const double cpu_packed_congruence_ns = cpu_median_ns(packed_repeats, [&] {
    auto result = congruence_reference(host);
    (void)must(result, "congruence_reference");
  });
  const double cpu_packed_extract_ns = cpu_median_ns(packed_repeats, [&] {
    auto result = extract_reference(host, cost_span, root_span);
    (void)must(result, "extract_reference");
  });
  const char* cpu_congruence = "congruence_reference on the host packed image (1 CPU thread)";
  const char* cpu_extract = "extract_reference on the host packed image (1 CPU thread)";
  const auto [host_device_congruence_ns, host_device_extract_ns] =
      run_host_ns(plan, host, cost_span, root_span, repeats, device_choice::gpu);
  const auto [auto_congruence_ns, auto_extract_ns] =
      run_host_ns(plan, host, cost_span, root_span, repeats, device_choice::automatic);
  // What `automatic` runs below its crossover: the CPU engine behind run_host(device_choice::cpu).
  const auto [host_engine_congruence_ns, host_engine_extract_ns] =
      run_host_ns(plan, host, cost_span, root_span, packed_repeats, device_choice::cpu);
  const char* engine_congruence = "run_host(device_choice::cpu): the CPU engine, every core";
  const char* engine_extract = "run_host(device_choice::cpu): the CPU engine, every core";
  const std::string wall = params + ",\"timer\":\"wall\"";
  const auto side = [&](std::uint32_t crossover) {
    return wall + ",\"automatic_runs_on\":\"" + (R < crossover ? "host" : "device") + "\"";
  };
  emit("congruence_plan_vs_cpu", wall, device, plan_congruence_ns, cpu_congruence,
       cpu_packed_congruence_ns);
  emit("congruence_host_device_vs_cpu", wall, device, host_device_congruence_ns, cpu_congruence,
       cpu_packed_congruence_ns);
  emit("congruence_auto_vs_cpu", side(congruence_host_below_rows), device, auto_congruence_ns,
       cpu_congruence, cpu_packed_congruence_ns);
  emit("extract_plan_vs_cpu", wall, device, plan_extract_ns, cpu_extract, cpu_packed_extract_ns);
  emit("extract_host_device_vs_cpu", wall, device, host_device_extract_ns, cpu_extract,
       cpu_packed_extract_ns);
  emit("extract_auto_vs_cpu", side(extract_host_below_rows), device, auto_extract_ns, cpu_extract,
       cpu_packed_extract_ns);
  emit("congruence_host_device_vs_host_engine", wall, device, host_device_congruence_ns,
       engine_congruence, host_engine_congruence_ns);
  emit("extract_host_device_vs_host_engine", wall, device, host_device_extract_ns, engine_extract,
       host_engine_extract_ns);
  congruence_samples->push_back({R, host_device_congruence_ns, host_engine_congruence_ns});
  extract_samples->push_back({R, host_device_extract_ns, host_engine_extract_ns});
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint32_t> sizes_m{1, 4, 16};
  std::string data_dir = VYRE_EGRAPH_DATA_DIR;
  std::vector<std::string> files;  // --file: e-graphs beyond the data folder (egglog's math)
  int repeats = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--rows") {
      sizes_m.clear();
      for (std::size_t at = 0; at < value.size();) {
        const std::size_t comma = value.find(',', at);
        sizes_m.push_back(static_cast<std::uint32_t>(std::stoul(value.substr(at, comma - at))));
        at = comma == std::string::npos ? value.size() : comma + 1;
      }
    } else if (flag == "--data-dir") {
      data_dir = value;
    } else if (flag == "--file") {
      files.push_back(value);
    } else if (flag == "--repeats") {
      repeats = std::max(1, std::stoi(value));
    } else if (flag == "--parts" &&
               (value == "all" || value == "build" || value == "gpu" || value == "engine")) {
      build_only = value == "build";
      skip_cpu = value == "gpu" || value == "engine";
      engine_only = value == "engine";
    } else {
      std::fprintf(stderr,
                   "usage: bench_algorithms [--rows 1,4,16] [--data-dir DIR] [--file JSON]... "
                   "[--repeats N] [--parts all|build|gpu|engine]\n");
      return 2;
    }
  }
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("{\"skipped\":\"no CUDA device\"}\n");
    return 0;
  }
  const std::string device = device_name();
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  vyre::backend_options options;
  options.memory.retained_cap = SIZE_MAX;  // keep all freed memory, like a max release threshold
  auto acquired = bench_backend::acquire(0, options);
  bench_gpu_instance = new bench_backend(take(std::move(acquired), "backend::acquire"));
  // One plan of each kind for the whole run, as an engine would hold them (they grow as the
  // inputs need; each size's graph is captured in its warm-up call).
  std::optional<plans> plan_storage;
  plan_storage.emplace(plans{take(make_congruence_plan(bench_gpu(), stream), "congruence_plan"),
                             take(make_extract_plan(bench_gpu(), stream), "extract_plan")});
  plans& plan = *plan_storage;
  for (const std::uint32_t m : sizes_m) {
    synthetic_options options;
    options.rows = m << 20;
    options.seed = 42;
    const synthetic_egraph graph = take(make_synthetic_egraph(options), "generator");
    bench_graph("synthetic_" + std::to_string(m) + "M", graph.rows, graph.cost, graph.roots, stream,
                repeats, m >= 4 ? 1 : 3, true, device, plan, nullptr, nullptr);
  }
#if VYRE_HAVE_SIMDJSON
  // Large e-graphs named one by one (scripts/egglog_math.py or vyre-eqsat --emit make them):
  // the synthetic sizes' lines (the engine's with --parts engine), one CPU repeat at 4M+ rows.
  for (const std::string& file : files) {
    const auto graph = vyre_test::load_egraph_json(file);
    const std::uint32_t rows = graph.rows.row_count();
    bench_graph(std::filesystem::path(file).filename().string(), graph.rows, graph.cost,
                graph.roots, stream, repeats, rows >= (4u << 20) ? 1 : 3, false, device, plan,
                nullptr, nullptr);
  }
  const std::filesystem::path dir{data_dir};
  if (std::filesystem::exists(dir / "expected_tree_cost.tsv")) {
    std::vector<dispatch_sample> congruence_samples, extract_samples;
    for (const auto& entry :
         vyre_test::load_expected_costs((dir / "expected_tree_cost.tsv").string())) {
      const auto graph = vyre_test::load_egraph_json((dir / entry.file).string());
      bench_graph(entry.file, graph.rows, graph.cost, graph.roots, stream, repeats, 5, false,
                  device, plan, &congruence_samples, &extract_samples);
    }
    emit_crossover("congruence_dispatch_crossover", congruence_samples, congruence_host_below_rows,
                   device);
    emit_crossover("extract_dispatch_crossover", extract_samples, extract_host_below_rows, device);
  } else {
    std::printf("{\"skipped\":\"no e-graph data in %s\"}\n", data_dir.c_str());
  }
#endif
  plan_storage.reset();  // free the plans' memory (stream-ordered) while their stream exists
  check(cudaStreamSynchronize(stream), "stream");
  check(cudaStreamDestroy(stream), "stream");
  delete bench_gpu_instance;
  return 0;
}
