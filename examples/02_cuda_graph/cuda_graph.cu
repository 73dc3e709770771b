// SPDX-License-Identifier: Apache-2.0
// CUDA graphs with vyre, as a tutorial.
//
// An engine replays the same launch pipeline thousands of times. Launching each kernel from the
// host costs a few microseconds of CPU time per kernel; a CUDA graph enqueues the whole pipeline
// at once. vyre::graph::captured_graph makes that safe:
//
//   1. Capture: run your usual launch code once inside capture_on_stream; vyre records it into a
//      graph and instantiates it. If your code fails or throws, the capture is still ended and
//      nothing leaks.
//   2. Replay: graph.launch(stream), as often as you like.
//   3. Update: point a kernel node at new buffers or sizes with a typed setter (a wrong argument
//      count or type does not compile), far cheaper than capturing again.
//   4. Loop on the device: a conditional WHILE graph repeats a fixpoint round until nothing
//      changes, without returning to the host between rounds.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/graph.cuh>

namespace example {

// out[i] = i * scale
VYRE_KERNEL void iota_scaled(std::uint32_t* out, std::uint32_t count, std::uint32_t scale) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = i * scale;
}
// data[i] += add
VYRE_KERNEL void add(std::uint32_t* data, std::uint32_t count, std::uint32_t value) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] += value;
}
// One fixpoint round of a prefix maximum: next[i] = max(cur[i-1], cur[i]).
VYRE_KERNEL void prefix_max_round(const std::uint32_t* cur, std::uint32_t* next,
                                  std::uint32_t count, vyre::graph::fixpoint_control* control) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const std::uint32_t value = (i > 0 && cur[i - 1] > cur[i]) ? cur[i - 1] : cur[i];
  next[i] = value;
  if (value != cur[i]) vyre::graph::mark_changed(control);  // "this round changed something"
}

}  // namespace example

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw vyre::error_exception(vyre::cuda_error(status, what));
}

// A tiny RAII device buffer for the example.
struct device_words {
  std::uint32_t* ptr = nullptr;
  std::uint32_t count = 0;
  explicit device_words(std::uint32_t n) : count(n) {
    check(cudaMalloc(&ptr, n * sizeof(std::uint32_t)), "example: cudaMalloc");
  }
  ~device_words() { cudaFree(ptr); }
  device_words(const device_words&) = delete;
  device_words& operator=(const device_words&) = delete;
  std::vector<std::uint32_t> read(cudaStream_t stream) const {
    std::vector<std::uint32_t> host(count);
    check(cudaMemcpyAsync(host.data(), ptr, count * sizeof(std::uint32_t), cudaMemcpyDeviceToHost,
                          stream),
          "example: download");
    check(cudaStreamSynchronize(stream), "example: sync");
    return host;
  }
};

int run() {
  constexpr std::uint32_t n = 1 << 16;
  constexpr std::uint32_t blocks = (n + 255) / 256;
  cudaStream_t stream = nullptr;
  // Capture needs a created stream (never the legacy default stream 0).
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "example: stream");
  device_words first(n), second(n);

  // 1. Capture. The callable is ordinary launch code; it returns cudaError_t (void and
  //    vyre::expected<void> work too). Nothing runs yet: the launches are recorded.
  vyre::graph::captured_graph graph =
      vyre::graph::captured_graph::capture_on_stream(stream, [&](cudaStream_t s) {
        example::iota_scaled<<<blocks, 256, 0, s>>>(first.ptr, n, 3u);
        for (std::uint32_t step = 0; step < 8; ++step)
          example::add<<<blocks, 256, 0, s>>>(first.ptr, n, 1u);
        return cudaGetLastError();
      });
  std::printf("captured %zu nodes\n", graph.node_count());

  // 2. Replay: one call enqueues all nine kernels.
  for (int i = 0; i < 100; ++i) graph.launch(stream);
  auto values = first.read(stream);
  const bool replay_ok = values[10] == 10u * 3u + 8u && values[n - 1] == (n - 1) * 3u + 8u;
  std::printf("replay: first[10] = %u (expected %u)\n", values[10], 10u * 3u + 8u);

  // 3. Update the first kernel node to write `second` with scale 5. The setter is typed: it
  //    takes the kernel itself, so `set_kernel_args(node, &example::iota_scaled, second.ptr)`
  //    (a missing argument) or a float* would not compile. kernel_nodes finds the nodes that
  //    run a given kernel; nodes() lists every node with its kind, in CUDA's order.
  const vyre::graph::graph_node iota_node = graph.kernel_nodes(&example::iota_scaled).at(0);
  graph.set_kernel_args(iota_node, &example::iota_scaled, second.ptr, n, 5u);
  // The add kernels still target `first`, so `second` holds just the new iota.
  graph.launch(stream);
  values = second.read(stream);
  const bool update_ok = values[10] == 50u;
  std::printf("after update: second[10] = %u (expected 50)\n", values[10]);

  // 4. A device fixpoint: repeat one prefix-max round until a round changes nothing.
  device_words current(1024), next(1024);
  std::vector<std::uint32_t> input(1024);
  for (std::uint32_t i = 0; i < 1024; ++i) input[i] = (i * 7919u) % 1000u;
  input[0] = 5000u;  // the maximum must travel the whole array: 1023 rounds that change
  check(cudaMemcpyAsync(current.ptr, input.data(), 1024 * 4, cudaMemcpyHostToDevice, stream),
        "example: upload");
  // Every round's kernel writes all of `next` before the copy reads it; clearing it once up
  // front changes nothing but keeps compute-sanitizer's initcheck quiet, which does not count
  // kernel writes inside a conditional body as initialising memory for the copy after them
  // (scripts/probes/conditional_while_sanitizers.cu shows it without vyre).
  check(cudaMemsetAsync(next.ptr, 0, 1024 * 4, stream), "example: clear next");
  vyre::graph::fixpoint_control* control = nullptr;
  check(cudaMalloc(&control, sizeof(*control)), "example: control");
  {
    auto fixpoint = vyre::graph::build_fixpoint_graph(
        stream, control, /*max_rounds=*/4096u, [&](cudaStream_t s) {
          example::prefix_max_round<<<4, 256, 0, s>>>(current.ptr, next.ptr, 1024, control);
          return cudaMemcpyAsync(current.ptr, next.ptr, 1024 * 4, cudaMemcpyDeviceToDevice, s);
        });
    fixpoint.launch(stream);  // one host call; every round is decided on the device
  }
  vyre::graph::fixpoint_control result{};
  check(cudaMemcpyAsync(&result, control, sizeof(result), cudaMemcpyDeviceToHost, stream),
        "example: read control");
  values = current.read(stream);
  cudaFree(control);
  const bool fixpoint_ok =
      result.converged == 1u && result.rounds == 1024u && values[1023] == 5000u;
  std::printf("fixpoint: %u rounds, converged = %u, last = %u\n", result.rounds, result.converged,
              values[1023]);

  check(cudaStreamDestroy(stream), "example: destroy stream");
  return replay_ok && update_ok && fixpoint_ok ? 0 : 1;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "cuda_graph example: no CUDA device here; nothing to run.\n");
    return 0;
  }
  try {
    return run();
  } catch (const vyre::error_exception& e) {
    // vyre's errors say what failed, with the values, and how to fix it.
    std::fprintf(stderr, "cuda_graph example: %s\n", e.what());
    return 1;
  }
}
