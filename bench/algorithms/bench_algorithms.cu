// SPDX-License-Identifier: Apache-2.0
// Benchmarks of the device algorithms (JSON lines, one per measurement):
//   build           device build vs the summed medians of the CUB primitives it runs
//   congruence      GPU closure vs the CPU reference; per-round time and e-nodes/s per round
//   extract         GPU extraction vs the CPU reference
// on synthetic e-graphs with planted congruences (--rows 1,4,16 in M rows) and on every real
// e-graph of --data-dir (default VYRE_EGRAPH_DATA_DIR). GPU times: cudaEvents around the
// whole call after a warm-up, median of --repeats; CPU: one thread, std::chrono, median.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>

#include "vyre/algorithms.cuh"

#if VYRE_HAVE_SIMDJSON
#include "egraph_json.hpp"
#endif

using namespace vyre::algorithms;

namespace {

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
double cpu_median_ns(int repeats, Work&& work) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    times.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(times);
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
  std::printf("{\"name\":\"%s\",\"params\":{%s},\"device\":\"%s\",\"median_ns\":%.0f,"
              "\"baseline\":\"%s\",\"baseline_median_ns\":%.0f,\"ratio\":%.4f%s}\n",
              name, params.c_str(), device.c_str(), median_ns, baseline, baseline_ns,
              baseline_ns / median_ns, extra.c_str());
  std::fflush(stdout);
}

template <class T>
device_buffer<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  auto buffer = take(device_buffer<T>::allocate(host.size(), stream, "bench upload"), "upload");
  if (!host.empty())
    check(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice, stream), "upload");
  return buffer;
}

struct on_device {
  device_buffer<std::uint32_t> eclass, op, lens, children;
  device_buffer<double> cost;
  raw_rows_ref rows;
};

on_device upload_graph(const raw_rows& rows, const std::vector<double>& cost, cudaStream_t stream) {
  on_device d{upload(rows.eclass, stream), upload(rows.op, stream), upload(rows.children_length, stream),
              upload(rows.children, stream), upload(cost, stream), {}};
  d.rows = {d.eclass.get(), d.op.get(), d.lens.get(), d.children.get(), rows.row_count(),
            static_cast<std::uint32_t>(rows.children.size())};
  return d;
}

// The CUB primitives `build` runs, each timed alone with preallocated scratch.
double primitives_ns(const on_device& d, std::uint32_t groups, cudaStream_t stream, int repeats) {
  const std::uint32_t R = d.rows.row_count;
  auto keys_out = take(device_buffer<std::uint32_t>::allocate(R, stream, "p"), "p");
  auto vals_in = take(device_buffer<std::uint32_t>::allocate(R, stream, "p"), "p");
  auto vals_out = take(device_buffer<std::uint32_t>::allocate(R, stream, "p"), "p");
  auto unique = take(device_buffer<std::uint32_t>::allocate(R, stream, "p"), "p");
  auto counts = take(device_buffer<std::uint32_t>::allocate(R + 1, stream, "p"), "p");
  auto offsets = take(device_buffer<std::uint32_t>::allocate(R + 1, stream, "p"), "p");
  auto runs = take(device_buffer<int>::allocate(1, stream, "p"), "p");
  auto max_id = take(device_buffer<std::uint32_t>::allocate(1, stream, "p"), "p");
  std::size_t b_max = 0, b_sort = 0, b_rle = 0, b_scan = 0, b_gscan = 0;
  check(cub::DeviceReduce::Max(nullptr, b_max, d.rows.eclass, max_id.get(), R, stream), "size");
  check(cub::DeviceRadixSort::SortPairs(nullptr, b_sort, d.rows.eclass, keys_out.get(), vals_in.get(),
                                        vals_out.get(), R, 0, 32, stream), "size");
  check(cub::DeviceRunLengthEncode::Encode(nullptr, b_rle, keys_out.get(), unique.get(), counts.get(),
                                           runs.get(), static_cast<int>(R), stream), "size");
  check(cub::DeviceScan::ExclusiveSum(nullptr, b_scan, d.rows.children_length, offsets.get(), R, stream), "size");
  check(cub::DeviceScan::ExclusiveSum(nullptr, b_gscan, counts.get(), offsets.get(), groups + 1, stream), "size");
  const std::size_t bytes = std::max({b_max, b_sort, b_rle, b_scan, b_gscan, std::size_t{1}});
  auto temp = take(device_buffer<unsigned char>::allocate(bytes, stream, "p"), "p");
  std::uint32_t host_max = 0;
  check(cub::DeviceReduce::Max(temp.get(), b_max, d.rows.eclass, max_id.get(), R, stream), "max");
  check(cudaMemcpyAsync(&host_max, max_id.get(), 4, cudaMemcpyDeviceToHost, stream), "max");
  check(cudaStreamSynchronize(stream), "max");
  const int end_bit = std::max(1, 32 - __builtin_clz(host_max | 1u));
  double total = 0;
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceReduce::Max(temp.get(), b, d.rows.eclass, max_id.get(), R, stream), "max");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceRadixSort::SortPairs(temp.get(), b, d.rows.eclass, keys_out.get(), vals_in.get(),
                                          vals_out.get(), R, 0, end_bit, stream), "sort");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceRunLengthEncode::Encode(temp.get(), b, keys_out.get(), unique.get(), counts.get(),
                                             runs.get(), static_cast<int>(R), stream), "rle");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceScan::ExclusiveSum(temp.get(), b, d.rows.children_length, offsets.get(), R, stream), "scan");
  });
  total += gpu_median_ns(stream, repeats, [&] {
    std::size_t b = bytes;
    check(cub::DeviceScan::ExclusiveSum(temp.get(), b, counts.get(), offsets.get(), groups + 1, stream), "scan");
  });
  return total;
}

void bench_graph(const std::string& label, const raw_rows& rows, const std::vector<double>& cost,
                 const std::vector<std::uint32_t>& roots, cudaStream_t stream, int repeats,
                 int cpu_repeats, bool with_primitives, const std::string& device) {
  const std::uint32_t R = rows.row_count();
  const std::string params = "\"input\":\"" + label + "\",\"rows\":" + std::to_string(R) +
                             ",\"children\":" + std::to_string(rows.children.size());
  on_device d = upload_graph(rows, cost, stream);
  device_packed_image image = take(build(d.rows, stream), "build");
  const std::uint32_t G = image.layout().group_count;

  // Build.
  const double build_ns = gpu_median_ns(stream, repeats, [&] { (void)take(build(d.rows, stream), "build"); });
  const double build_unchecked_ns = gpu_median_ns(
      stream, repeats, [&] { (void)take(build(d.rows, stream, child_check::off), "build"); });
  const double pack_ns = cpu_median_ns(cpu_repeats, [&] { (void)take(pack_reference(rows.ref()), "pack"); });
  if (with_primitives) {
    const double cub_ns = primitives_ns(d, G, stream, repeats);
    emit("build_vs_cub_primitives", params + ",\"child_check\":\"off\"", device, build_unchecked_ns,
         "sum of CUB primitive medians", cub_ns,
         ",\"rows_per_s\":" + std::to_string(R / (build_unchecked_ns * 1e-9)));
    emit("build_vs_cub_primitives", params + ",\"child_check\":\"on\"", device, build_ns,
         "sum of CUB primitive medians", cub_ns,
         ",\"rows_per_s\":" + std::to_string(R / (build_ns * 1e-9)));
  }
  emit("build_vs_cpu_pack", params, device, build_ns, "pack_reference (1 CPU thread)", pack_ns);

  // Congruence.
  std::uint32_t rounds = 0;
  std::uint64_t merges = 0;
  const double congruence_ns = gpu_median_ns(stream, repeats, [&] {
    auto result = take(congruence(image.ref(), stream), "congruence");
    rounds = result.rounds;
    merges = result.merges;
  });
  const double while_ns = gpu_median_ns(stream, repeats, [&] {
    (void)take(congruence(image.ref(), stream, loop_driver::conditional_graph), "congruence (WHILE)");
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
       ",\"gpu_rounds\":" + std::to_string(rounds) + ",\"cpu_rounds\":" + std::to_string(cpu_rounds) +
           ",\"ns_per_round\":" + std::to_string(per_round) +
           ",\"enodes_per_s_per_round\":" + std::to_string(R / (per_round * 1e-9)));

  // Extraction.
  std::uint32_t extract_rounds = 0;
  const double extract_ns = gpu_median_ns(stream, repeats, [&] {
    extract_rounds = take(extract(image.ref(), d.cost.get(), {roots.data(), roots.size()}, stream), "extract").rounds;
  });
  const double cpu_extract_ns = cpu_median_ns(cpu_repeats, [&] {
    (void)take(extract_reference(rows.ref(), {cost.data(), cost.size()}, {roots.data(), roots.size()}), "extract_reference");
  });
  emit("extract_vs_cpu", params, device, extract_ns, "extract_reference (1 CPU thread)", cpu_extract_ns,
       ",\"gpu_rounds\":" + std::to_string(extract_rounds));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint32_t> sizes_m{1, 4, 16};
  std::string data_dir = VYRE_EGRAPH_DATA_DIR;
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
    } else if (flag == "--repeats") {
      repeats = std::max(1, std::stoi(value));
    } else {
      std::fprintf(stderr, "usage: bench_algorithms [--rows 1,4,16] [--data-dir DIR] [--repeats N]\n");
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
  for (const std::uint32_t m : sizes_m) {
    synthetic_options options;
    options.rows = m << 20;
    options.seed = 42;
    const synthetic_egraph graph = take(make_synthetic_egraph(options), "generator");
    bench_graph("synthetic_" + std::to_string(m) + "M", graph.rows, graph.cost, graph.roots, stream,
                repeats, m >= 4 ? 1 : 3, true, device);
  }
#if VYRE_HAVE_SIMDJSON
  const std::filesystem::path dir{data_dir};
  if (std::filesystem::exists(dir / "expected_tree_cost.tsv")) {
    for (const auto& entry : vyre_test::load_expected_costs((dir / "expected_tree_cost.tsv").string())) {
      const auto graph = vyre_test::load_egraph_json((dir / entry.file).string());
      bench_graph(entry.file, graph.rows, graph.cost, graph.roots, stream, repeats, 5, false, device);
    }
  } else {
    std::printf("{\"skipped\":\"no e-graph data in %s\"}\n", data_dir.c_str());
  }
#endif
  check(cudaStreamDestroy(stream), "stream");
  return 0;
}
