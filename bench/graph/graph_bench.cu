// SPDX-License-Identifier: Apache-2.0
// CUDA graph benchmarks, one JSON line per measurement, ratios taken within this run:
//   graph.chain.end_to_end   chain of N tiny kernels: graph replay vs N stream launches
//                            (cudaEvent time from before the first enqueue to after the last
//                            kernel); target: N = 64 replay >= 3x faster.
//   graph.chain.cpu_enqueue  the same, host time spent enqueueing.
//   graph.update.kernel_params  one typed kernel-node update vs re-capture + instantiate of the
//                            64-kernel chain; target >= 50x cheaper.
//   graph.update.kernel_params_vs_raw  the same typed update vs the raw
//                            cudaGraphExecKernelNodeSetParams call (same node, same new
//                            arguments), timed interleaved; ratio = raw / typed (1.0 = parity).
//   graph.update.raw_set_params  that raw call vs re-capture + instantiate.
//   graph.update.whole_graph recapture + cudaGraphExecUpdate vs re-capture + instantiate.
//   graph.cache.hit_launch   graph_cache hit + launch vs launching the graph directly.
// Medians of many repeats after warm-up.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <vyre/graph.cuh>

#include "bench_cuda.cuh"

namespace graph_bench {
VYRE_KERNEL void tiny(std::uint32_t* data) {
  data[threadIdx.x] += 1u;
}
}  // namespace graph_bench

namespace {
using graph_bench::tiny;
using clock_type = std::chrono::steady_clock;

void check(cudaError_t status, const char* what) {
  vyre_bench::require("graph_bench", status, what);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 != 0 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double ns_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - start).count();
}

void print_line(const char* name, const std::string& params, const std::string& device,
                double median_ns, const char* baseline, double baseline_ns) {
  std::printf(
      "{\"name\":\"%s\",\"params\":{%s},\"device\":\"%s\",\"median_ns\":%.1f,"
      "\"baseline\":\"%s\",\"baseline_median_ns\":%.1f,\"ratio\":%.3f}\n",
      name, params.c_str(), device.c_str(), median_ns, baseline, baseline_ns,
      baseline_ns / median_ns);
  std::fflush(stdout);
}

void enqueue_chain(cudaStream_t stream, std::uint32_t* data, int kernels) {
  for (int k = 0; k < kernels; ++k) tiny<<<1, 32, 0, stream>>>(data);
}

struct timing {
  double cpu_ns;
  double end_to_end_ns;
};

// Times `enqueue()` `repeats` times: host time of the enqueue and event time around it.
template <class Enqueue>
timing measure(cudaStream_t stream, int repeats, Enqueue&& enqueue) {
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  for (int i = 0; i < 5; ++i) enqueue();  // warm-up
  check(cudaStreamSynchronize(stream), "warm-up sync");
  std::vector<double> cpu, gpu;
  for (int i = 0; i < repeats; ++i) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    const auto t0 = clock_type::now();
    enqueue();
    cpu.push_back(ns_since(t0));
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    gpu.push_back(static_cast<double>(ms) * 1e6);
  }
  check(cudaEventDestroy(start), "cudaEventDestroy");
  check(cudaEventDestroy(stop), "cudaEventDestroy");
  return {median(cpu), median(gpu)};
}

}  // namespace

int main() {
  const std::optional<std::string> found = vyre_bench::device_name("graph_bench");
  if (!found) return 0;
  const std::string device = *found;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::uint32_t* data = nullptr;
  std::uint32_t* other = nullptr;
  check(cudaMalloc(&data, 32 * sizeof(std::uint32_t)), "cudaMalloc");
  check(cudaMalloc(&other, 32 * sizeof(std::uint32_t)), "cudaMalloc");

  // 1. Chains: stream launches vs graph replay.
  for (int kernels = 1; kernels <= 512; kernels *= 2) {
    const int repeats = kernels <= 64 ? 200 : 60;
    auto graph = vyre::graph::captured_graph::capture_on_stream(stream, [&](cudaStream_t s) {
      enqueue_chain(s, data, kernels);
      return cudaGetLastError();
    });
    graph.upload(stream);
    // Correctness once: one replay adds `kernels` to every element.
    check(cudaMemsetAsync(data, 0, 32 * sizeof(std::uint32_t), stream), "memset");
    graph.launch(stream);
    std::uint32_t host[32] = {};
    check(cudaMemcpyAsync(host, data, sizeof(host), cudaMemcpyDeviceToHost, stream), "copy");
    check(cudaStreamSynchronize(stream), "sync");
    for (std::uint32_t value : host) {
      if (value != static_cast<std::uint32_t>(kernels)) {
        std::fprintf(stderr, "graph_bench: replay computed %u, expected %d\n", value, kernels);
        return 1;
      }
    }
    const timing launches = measure(stream, repeats, [&] {
      enqueue_chain(stream, data, kernels);
      check(cudaGetLastError(), "launch");
    });
    const timing replay = measure(stream, repeats, [&] { graph.launch(stream); });
    const std::string params = "\"kernels\":" + std::to_string(kernels) +
                               ",\"repeats\":" + std::to_string(repeats) +
                               (kernels == 64 ? ",\"target_ratio\":3" : "");
    print_line("graph.chain.end_to_end", params, device, replay.end_to_end_ns, "stream_launches",
               launches.end_to_end_ns);
    print_line("graph.chain.cpu_enqueue", params, device, replay.cpu_ns, "stream_launches",
               launches.cpu_ns);
  }

  // 2. Updates of a 64-kernel chain.
  {
    constexpr int kernels = 64;
    auto body = [&](std::uint32_t* target) {
      return [target](cudaStream_t s) {
        enqueue_chain(s, target, kernels);
        return cudaGetLastError();
      };
    };
    auto graph = vyre::graph::captured_graph::capture_on_stream(stream, body(data));
    const vyre::graph::graph_node node = graph.node(kernels / 2);
    std::vector<double> update_ns, raw_update_ns, recapture_ns, whole_update_ns;
    // The raw peer: the node's captured parameters with the argument array replaced, set
    // straight on the executable graph, as code without the library would.
    cudaKernelNodeParams raw{};
    check(cudaGraphKernelNodeGetParams(node.handle, &raw), "cudaGraphKernelNodeGetParams");
    std::uint32_t* raw_target = nullptr;
    void* raw_args[] = {&raw_target};
    raw.kernelParams = raw_args;
    raw.extra = nullptr;
    const cudaGraphExec_t exec = graph.get().exec;
    // Interleaved (typed, raw, raw, typed, ...) so drift treats both alike; every call flips
    // the argument, so neither ever sets the value the node already has.
    int calls = 0;
    for (int i = 0; i < 2000 + 20; ++i) {
      for (int turn = 0; turn < 2; ++turn) {
        std::uint32_t* target = (calls++ % 2 == 0) ? other : data;
        if ((turn == 0) == (i % 2 == 0)) {
          const auto t0 = clock_type::now();
          graph.set_kernel_args(node, &tiny, target);
          if (i >= 20) update_ns.push_back(ns_since(t0));
        } else {
          const auto t0 = clock_type::now();
          raw_target = target;
          check(cudaGraphExecKernelNodeSetParams(exec, node.handle, &raw),
                "cudaGraphExecKernelNodeSetParams");
          if (i >= 20) raw_update_ns.push_back(ns_since(t0));
        }
      }
    }
    for (int i = 0; i < 100 + 5; ++i) {
      const auto t0 = clock_type::now();
      auto fresh = vyre::graph::captured_graph::capture_on_stream(stream, body(other));
      const double elapsed = ns_since(t0);
      if (i >= 5) recapture_ns.push_back(elapsed);
    }
    for (int i = 0; i < 100 + 5; ++i) {
      const auto t0 = clock_type::now();
      (void)graph.recapture(stream, body((i % 2 == 0) ? other : data));
      if (i >= 5) whole_update_ns.push_back(ns_since(t0));
    }
    graph.launch(stream);
    check(cudaStreamSynchronize(stream), "sync");
    const double recapture = median(recapture_ns);
    print_line("graph.update.kernel_params", "\"kernels\":64,\"target_ratio\":50", device,
               median(update_ns), "recapture_instantiate", recapture);
    print_line("graph.update.kernel_params_vs_raw", "\"kernels\":64", device, median(update_ns),
               "cudaGraphExecKernelNodeSetParams", median(raw_update_ns));
    print_line("graph.update.raw_set_params", "\"kernels\":64", device, median(raw_update_ns),
               "recapture_instantiate", recapture);
    print_line("graph.update.whole_graph", "\"kernels\":64", device, median(whole_update_ns),
               "recapture_instantiate", recapture);
  }

  // 3. Cache hit overhead (host time per launch; synchronised every 64 launches).
  {
    auto key_inputs = vyre::graph::graph_key_inputs{};
    key_inputs.key_arity = 2;
    key_inputs.key_bytes = 8;
    key_inputs.probe_rows = 1000;
    key_inputs.output_rows = 1000;
    const vyre::graph::graph_key key = vyre::graph::make_graph_key(key_inputs);
    auto body = [&](cudaStream_t s) {
      tiny<<<1, 32, 0, s>>>(data);
      return cudaGetLastError();
    };
    vyre::graph::graph_cache<> cache({16, 1 << 20});
    cache.launch(stream, key, 0, body);  // the miss
    auto direct = vyre::graph::captured_graph::capture_on_stream(stream, body);
    std::vector<double> hit_ns, direct_ns;
    for (int i = 0; i < 20'000; ++i) {
      auto t0 = clock_type::now();
      cache.launch(stream, key, 0, body);
      hit_ns.push_back(ns_since(t0));
      t0 = clock_type::now();
      direct.launch(stream);
      direct_ns.push_back(ns_since(t0));
      if (i % 64 == 63) check(cudaStreamSynchronize(stream), "sync");
    }
    check(cudaStreamSynchronize(stream), "sync");
    const auto stats = cache.stats();
    print_line(
        "graph.cache.hit_launch",
        "\"hits\":" + std::to_string(stats.hits) + ",\"misses\":" + std::to_string(stats.misses),
        device, median(hit_ns), "direct_graph_launch", median(direct_ns));
  }

  check(cudaFree(data), "cudaFree");
  check(cudaFree(other), "cudaFree");
  check(cudaStreamDestroy(stream), "cudaStreamDestroy");
  return 0;
}
