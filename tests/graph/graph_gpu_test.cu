// SPDX-License-Identifier: Apache-2.0
// GPU tests of the graph component: capture and replay, failure cleanup, node inventory,
// kernel/memset/whole-graph updates, conditional WHILE fixpoints, the cache, and thread-local
// capture. Every output is poisoned before a kernel writes it and checked against a host
// reference; every CUDA call is checked.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <vyre/graph.cuh>

#include "require_error.hpp"

#define CUDA_REQUIRE(call)                              \
  do {                                                  \
    const cudaError_t status_ = (call);                 \
    INFO(#call << " -> " << cudaGetErrorName(status_)); \
    REQUIRE(status_ == cudaSuccess);                    \
  } while (false)

// Kernels need external linkage for VYRE_KERNEL's hidden visibility: a named namespace.
namespace graph_gpu_test {

VYRE_KERNEL void fill(std::uint32_t* out, std::uint32_t count, std::uint32_t value) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = value + i;
}
// Same signature as fill, different function: the typed setter must refuse it.
VYRE_KERNEL void fill_twice(std::uint32_t* out, std::uint32_t count, std::uint32_t value) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = 2u * (value + i);
}
VYRE_KERNEL void affine(std::uint32_t* data, std::uint32_t count, std::uint32_t mul,
                        std::uint32_t add) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] = data[i] * mul + add;
}
// One synchronous step of a prefix-max propagation: out[i] = max(in[i-1], in[i]).
VYRE_KERNEL void propagate_max(const std::uint32_t* in, std::uint32_t* out, std::uint32_t count,
                               vyre::graph::fixpoint_control* control) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const std::uint32_t next = i == 0 ? in[0] : (in[i - 1] > in[i] ? in[i - 1] : in[i]);
  out[i] = next;
  if (next != in[i]) vyre::graph::mark_changed(control);
}
// Counts down; clears the WHILE condition at zero.
VYRE_KERNEL void count_down(std::uint32_t* remaining, std::uint32_t* runs,
                            vyre::graph::while_condition condition) {
  *runs += 1u;
  if (*remaining != 0u) *remaining -= 1u;
  condition.set(*remaining != 0u);
}

// A gate's prefix: opens the loop when *open is set.
VYRE_KERNEL void open_gate(const std::uint32_t* open, vyre::graph::while_condition gate) {
  gate.set(*open != 0u);
}

// Loop graph parts: prefix sets state, each round adds one to every element and decides, the
// suffix doubles every element.
VYRE_KERNEL void add_one_round(std::uint32_t* data, std::uint32_t count) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) data[i] += 1u;
}
// Counts rounds in state[0]; keeps looping while state[0] < state[1] (the target).
VYRE_KERNEL void count_round(std::uint32_t* state, vyre::graph::while_condition condition) {
  state[0] += 1u;
  condition.set(state[0] < state[1]);
}
// A prefix that opens the loop only when state[1] (the target) is non-zero.
VYRE_KERNEL void open_if_target(const std::uint32_t* state,
                                vyre::graph::while_condition condition) {
  condition.set(state[1] != 0u);
}

}  // namespace graph_gpu_test

namespace {
using namespace graph_gpu_test;
using vyre::graph::captured_graph;
using vyre::graph::captured_graph_expected;
using vyre::graph::node_kind;

template <class T>
struct device_buffer {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit device_buffer(std::size_t n) : count(n) {
    CUDA_REQUIRE(cudaMalloc(&ptr, n * sizeof(T)));
  }
  ~device_buffer() { (void)cudaFree(ptr); }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  // cudaMemset and a pageable cudaMemcpy to the device can return before the device is
  // written, and run on the legacy stream, which does not order the tests' non-blocking
  // streams: wait for them, or a replay can race its own poison (seen under load).
  void poison(unsigned char byte = 0xCD) {
    CUDA_REQUIRE(cudaMemset(ptr, byte, count * sizeof(T)));
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
  std::vector<T> read() const {
    std::vector<T> host(count);
    CUDA_REQUIRE(cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  void write(const std::vector<T>& host) {
    REQUIRE(host.size() == count);
    CUDA_REQUIRE(cudaMemcpy(ptr, host.data(), count * sizeof(T), cudaMemcpyHostToDevice));
    CUDA_REQUIRE(cudaDeviceSynchronize());
  }
};

struct stream_owner {
  cudaStream_t stream = nullptr;
  stream_owner() { CUDA_REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking)); }
  ~stream_owner() { (void)cudaStreamDestroy(stream); }
  stream_owner(const stream_owner&) = delete;
  stream_owner& operator=(const stream_owner&) = delete;
  void sync() const { CUDA_REQUIRE(cudaStreamSynchronize(stream)); }
};

constexpr std::uint32_t blocks_for(std::uint32_t n) {
  return (n + 255u) / 256u;
}

std::vector<std::uint32_t> fill_reference(std::uint32_t count, std::uint32_t value) {
  std::vector<std::uint32_t> v(count);
  for (std::uint32_t i = 0; i < count; ++i) v[i] = value + i;
  return v;
}

void require_not_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  CUDA_REQUIRE(cudaStreamIsCapturing(stream, &status));
  REQUIRE(status == cudaStreamCaptureStatusNone);
  CUDA_REQUIRE(cudaGetLastError());
}

// The stream still runs work: a launch on it computes what it should.
void require_stream_usable(cudaStream_t stream) {
  constexpr std::uint32_t n = 1000;
  device_buffer<std::uint32_t> out(n);
  out.poison();
  fill<<<blocks_for(n), 256, 0, stream>>>(out.ptr, n, 17u);
  CUDA_REQUIRE(cudaGetLastError());
  CUDA_REQUIRE(cudaStreamSynchronize(stream));
  REQUIRE(out.read() == fill_reference(n, 17u));
}

// A CUDA user object whose destructor records that every graph holding it was destroyed:
// attached to a capture in progress, it proves the partial graph was freed.
struct release_probe {
  std::atomic<int> released{0};
  static void on_release(void* self) { static_cast<release_probe*>(self)->released.fetch_add(1); }
  // Moves one reference of a new user object into the graph `stream` is capturing into.
  cudaError_t attach_to_capture(cudaStream_t stream) {
    cudaStreamCaptureStatus status{};
    cudaGraph_t graph = nullptr;
    if (cudaError_t e = cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph);
        e != cudaSuccess)
      return e;
    if (status != cudaStreamCaptureStatusActive || graph == nullptr) return cudaErrorIllegalState;
    cudaUserObject_t object = nullptr;
    if (cudaError_t e =
            cudaUserObjectCreate(&object, this, &on_release, 1, cudaUserObjectNoDestructorSync);
        e != cudaSuccess)
      return e;
    return cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove);
  }
  // CUDA may run user-object destructors asynchronously: wait a bounded time.
  bool wait_released() {
    (void)cudaDeviceSynchronize();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (released.load() == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return released.load() == 1;
  }
};

}  // namespace

TEST_CASE("capture then replay gives the results of direct launches", "[graph][gpu]") {
  constexpr std::uint32_t n = 50'000;
  stream_owner s;
  device_buffer<std::uint32_t> direct(n), replay(n);
  auto pipeline = [](std::uint32_t* data) {
    return [data](cudaStream_t stream) -> cudaError_t {
      fill<<<blocks_for(n), 256, 0, stream>>>(data, n, 3u);
      for (std::uint32_t step = 1; step <= 5; ++step)
        affine<<<blocks_for(n), 256, 0, stream>>>(data, n, step + 1u, step * 7u);
      return cudaGetLastError();
    };
  };
  direct.poison();
  CUDA_REQUIRE(pipeline(direct.ptr)(s.stream));
  s.sync();
  const std::vector<std::uint32_t> expected_values = direct.read();
  // Host reference (u32 wrap-around, as on the device).
  for (std::uint32_t i = 0; i < n; i += 997) {
    std::uint32_t v = 3u + i;
    for (std::uint32_t step = 1; step <= 5; ++step) v = v * (step + 1u) + step * 7u;
    REQUIRE(expected_values[i] == v);
  }

  vyre::graph::graph_event_counters counters;
  vyre::graph::graph_options options;
  options.hook = counters.hook();
  captured_graph graph = captured_graph::capture_on_stream(s.stream, pipeline(replay.ptr), options);
  REQUIRE(graph);
  REQUIRE(graph.node_count() == 6u);
  CHECK(graph.kernel_nodes(&affine).size() == 5u);
  CHECK(graph.kernel_nodes(&fill).size() == 1u);
  CHECK(graph.kernel_nodes(&fill_twice).empty());
  require_not_capturing(s.stream);
  // Capturing launched nothing.
  replay.poison();
  s.sync();
  graph.upload(s.stream);
  for (int round = 0; round < 3; ++round) {
    replay.poison();
    graph.launch(s.stream);
    s.sync();
    REQUIRE(replay.read() == expected_values);
  }
  CHECK(counters.count(vyre::graph::graph_event::capture) == 1u);
  CHECK(counters.count(vyre::graph::graph_event::instantiate) == 1u);
  CHECK(counters.count(vyre::graph::graph_event::launch) == 3u);
  CHECK(counters.count(vyre::graph::graph_event::upload) == 1u);

  SECTION("move, release and reset own the handles exactly once") {
    captured_graph moved = std::move(graph);
    CHECK_FALSE(graph);
    CHECK(moved);
    auto expected_graph = std::move(moved).with_policy<vyre::on_error::return_expected>();
    CHECK_FALSE(moved);
    replay.poison();
    REQUIRE(expected_graph.launch(s.stream).has_value());
    s.sync();
    CHECK(replay.read() == expected_values);
    const vyre::graph::graph_handles handles = expected_graph.release();
    REQUIRE(handles.graph != nullptr);
    REQUIRE(handles.exec != nullptr);
    CHECK_FALSE(expected_graph);
    const auto empty_launch = expected_graph.launch(s.stream);
    REQUIRE_ERROR(empty_launch, vyre::errc::invalid_state);
    CUDA_REQUIRE(cudaGraphExecDestroy(handles.exec));
    CUDA_REQUIRE(cudaGraphDestroy(handles.graph));
    CHECK_THROWS_AS(captured_graph{}.launch(s.stream), vyre::error_exception);
  }
}

TEST_CASE("a failing capture callable ends the capture and frees the partial graph",
          "[graph][gpu]") {
  stream_owner s;
  constexpr std::uint32_t n = 4096;
  device_buffer<std::uint32_t> scratch(n);
  release_probe probe;
  auto partial_work = [&](cudaStream_t stream) {
    REQUIRE(probe.attach_to_capture(stream) == cudaSuccess);
    fill<<<blocks_for(n), 256, 0, stream>>>(scratch.ptr, n, 1u);
  };

  SECTION("returned vyre::error under return_expected") {
    auto result = captured_graph_expected::capture_on_stream(
        s.stream, [&](cudaStream_t stream) -> vyre::expected<void> {
          partial_work(stream);
          return vyre::fail(
              vyre::error(vyre::errc::invalid_argument, "test: body failed").with("answer", 42));
        });
    REQUIRE_ERROR(result, vyre::errc::invalid_argument);
    CHECK(result.error().value_or("answer", 0) == 42u);
  }
  SECTION("returned cudaError_t under throw_exception") {
    try {
      (void)captured_graph::capture_on_stream(s.stream, [&](cudaStream_t stream) {
        partial_work(stream);
        return cudaErrorInvalidValue;
      });
      FAIL("no exception");
    } catch (const vyre::error_exception& e) {
      CHECK(e.code() == vyre::errc::cuda_runtime);
      CHECK(e.error().cuda_status() == static_cast<int>(cudaErrorInvalidValue));
    }
  }
  SECTION("thrown exception, rethrown after cleanup under either policy") {
    CHECK_THROWS_WITH(
        captured_graph_expected::capture_on_stream(s.stream,
                                                   [&](cudaStream_t stream) {
                                                     partial_work(stream);
                                                     throw std::runtime_error("body threw");
                                                   }),
        "body threw");
  }
  SECTION("capture invalidated by a call that cannot be captured") {
    auto result = captured_graph_expected::capture_on_stream(s.stream, [&](cudaStream_t stream) {
      partial_work(stream);
      // A synchronous call on the capturing stream invalidates the capture.
      (void)cudaStreamSynchronize(stream);
    });
    REQUIRE_ERROR_WITH(result, vyre::errc::cuda_runtime, "invalidated");
  }
  SECTION("nested capture on the same stream is refused, and the outer one cleaned up") {
    auto result = captured_graph_expected::capture_on_stream(
        s.stream, [&](cudaStream_t stream) -> vyre::expected<void> {
          partial_work(stream);
          auto inner = captured_graph_expected::capture_on_stream(stream, [](cudaStream_t) {});
          if (inner) return {};
          return vyre::fail(inner.error());
        });
    REQUIRE_ERROR(result, vyre::errc::invalid_state);
  }
  require_not_capturing(s.stream);
  CHECK(probe.wait_released());
  require_stream_usable(s.stream);
}

TEST_CASE("capture refuses the legacy default stream; a destroyed graph releases its objects",
          "[graph][gpu]") {
  const auto legacy = captured_graph_expected::capture_on_stream(nullptr, [](cudaStream_t) {});
  REQUIRE_ERROR_WITH(legacy, vyre::errc::invalid_argument, "legacy default stream");

  stream_owner s;
  constexpr std::uint32_t n = 256;
  device_buffer<std::uint32_t> out(n);
  release_probe probe;
  {
    captured_graph graph = captured_graph::capture_on_stream(s.stream, [&](cudaStream_t stream) {
      REQUIRE(probe.attach_to_capture(stream) == cudaSuccess);
      fill<<<1, 256, 0, stream>>>(out.ptr, n, 5u);
    });
    out.poison();
    graph.launch(s.stream);
    s.sync();
    CHECK(out.read() == fill_reference(n, 5u));
    CHECK(probe.released.load() == 0);
  }
  CHECK(probe.wait_released());
}

TEST_CASE("kernel parameter updates change what the replay computes", "[graph][gpu]") {
  constexpr std::uint32_t n = 10'000;
  stream_owner s;
  device_buffer<std::uint32_t> first(n), second(n), memset_target(n);
  captured_graph graph = captured_graph::capture_on_stream(s.stream, [&](cudaStream_t stream) {
    CUDA_REQUIRE(cudaMemsetAsync(memset_target.ptr, 0, n * sizeof(std::uint32_t), stream));
    fill<<<blocks_for(n), 256, 0, stream>>>(first.ptr, n, 100u);
    return cudaGetLastError();
  });
  const auto nodes = graph.nodes();
  REQUIRE(nodes.size() == 2u);
  const auto kernel_it = std::find_if(nodes.begin(), nodes.end(),
                                      [](const auto& x) { return x.kind == node_kind::kernel; });
  const auto memset_it = std::find_if(nodes.begin(), nodes.end(),
                                      [](const auto& x) { return x.kind == node_kind::memset; });
  REQUIRE(kernel_it != nodes.end());
  REQUIRE(memset_it != nodes.end());
  const vyre::graph::graph_node kernel_node = *kernel_it;

  // Read what was captured.
  const vyre::graph::kernel_node_params captured = graph.kernel_params(kernel_node);
  CHECK(captured.shape.grid.x == blocks_for(n));
  CHECK(captured.shape.block.x == 256u);
  REQUIRE(captured.args != nullptr);
  std::uint32_t* captured_out = nullptr;
  std::uint32_t captured_count = 0, captured_value = 0;
  std::memcpy(&captured_out, captured.args[0], sizeof(captured_out));
  std::memcpy(&captured_count, captured.args[1], sizeof(captured_count));
  std::memcpy(&captured_value, captured.args[2], sizeof(captured_value));
  CHECK(captured_out == first.ptr);
  CHECK(captured_count == n);
  CHECK(captured_value == 100u);

  first.poison();
  second.poison();
  graph.launch(s.stream);
  s.sync();
  CHECK(first.read() == fill_reference(n, 100u));

  SECTION("typed: new pointer and value") {
    graph.set_kernel_args(kernel_node, &fill, second.ptr, n, 7u);
    first.poison();
    graph.launch(s.stream);
    s.sync();
    CHECK(second.read() == fill_reference(n, 7u));
    CHECK(first.read() == std::vector<std::uint32_t>(n, 0xCDCDCDCDu));  // untouched now
    // The captured graph still describes the original arguments.
    std::uint32_t value_after = 0;
    std::memcpy(&value_after, graph.kernel_params(kernel_node).args[2], sizeof(value_after));
    CHECK(value_after == 100u);
  }
  SECTION("typed with a new launch shape: half the elements") {
    const std::uint32_t half = n / 2;
    vyre::graph::kernel_launch_shape shape{dim3(blocks_for(half)), dim3(256), 0};
    graph.set_kernel_launch(kernel_node, shape, &fill, second.ptr, half, 9u);
    graph.launch(s.stream);
    s.sync();
    const auto values = second.read();
    for (std::uint32_t i = 0; i < n; ++i) REQUIRE(values[i] == (i < half ? 9u + i : 0xCDCDCDCDu));
  }
  SECTION("untyped, from the captured parameters") {
    vyre::graph::kernel_node_params params = captured;
    std::uint32_t* out = second.ptr;
    std::uint32_t count = n;
    std::uint32_t value = 55u;
    void* args[] = {&out, &count, &value};
    params.args = args;
    graph.set_kernel_params(kernel_node, params);
    graph.launch(s.stream);
    s.sync();
    CHECK(second.read() == fill_reference(n, 55u));
  }
  SECTION("errors: another kernel, a memset node, a foreign node, an empty graph") {
    auto checked = std::move(graph).with_policy<vyre::on_error::return_expected>();
    const auto wrong_kernel = checked.set_kernel_args(kernel_node, &fill_twice, second.ptr, n, 1u);
    REQUIRE_ERROR_WITH(wrong_kernel, vyre::errc::invalid_argument, "different kernel");

    const auto on_memset = checked.kernel_params(*memset_it);
    REQUIRE_ERROR(on_memset, vyre::errc::invalid_argument);
    const std::string message = on_memset.error().message();
    CHECK(message.find("expected a kernel node, got a memset node") != std::string::npos);
    const auto memset_on_kernel = checked.memset_node_params(kernel_node);
    REQUIRE_FALSE(memset_on_kernel.has_value());
    CHECK(memset_on_kernel.error().message().find("expected a memset node, got a kernel node") !=
          std::string::npos);

    vyre::graph::graph_node foreign = kernel_node;
    foreign.handle = memset_it->handle;
    const auto foreign_result = checked.set_kernel_args(foreign, &fill, second.ptr, n, 1u);
    REQUIRE_ERROR(foreign_result, vyre::errc::invalid_handle);
    const auto past_end = checked.node(2);
    REQUIRE_ERROR(past_end, vyre::errc::out_of_range);

    // After all refusals the graph still runs its captured work.
    first.poison();
    REQUIRE(checked.launch(s.stream).has_value());
    s.sync();
    CHECK(first.read() == fill_reference(n, 100u));
  }
}

TEST_CASE("memset node parameters are read and updated with CUDA's rules checked", "[graph][gpu]") {
  constexpr std::uint32_t n = 4096;
  stream_owner s;
  device_buffer<std::uint32_t> a(n), b(n);
  captured_graph graph = captured_graph::capture_on_stream(s.stream, [&](cudaStream_t stream) {
    return cudaMemsetAsync(a.ptr, 0x11, n * sizeof(std::uint32_t), stream);
  });
  REQUIRE(graph.node_count() == 1u);
  const vyre::graph::graph_node node = graph.node(0);
  REQUIRE(node.kind == node_kind::memset);
  const vyre::graph::memset_params captured = graph.memset_node_params(node);
  CHECK(captured.dst == a.ptr);
  CHECK(captured.height == 1u);
  // CUDA may widen a byte memset to wider elements; the bytes written are the same.
  REQUIRE(
      (captured.element_size == 1u || captured.element_size == 2u || captured.element_size == 4u));
  CHECK(captured.width * captured.element_size == n * sizeof(std::uint32_t));
  const std::uint32_t byte_pattern = captured.element_size == 1   ? 0x11u
                                     : captured.element_size == 2 ? 0x1111u
                                                                  : 0x11111111u;
  CHECK(captured.value == byte_pattern);

  a.poison();
  graph.launch(s.stream);
  s.sync();
  CHECK(a.read() == std::vector<std::uint32_t>(n, 0x11111111u));

  // New destination and value.
  vyre::graph::memset_params next = captured;
  next.dst = b.ptr;
  next.value = captured.element_size == 1   ? 0x5Au
               : captured.element_size == 2 ? 0x5A5Au
                                            : 0x5A5A5A5Au;
  graph.set_memset_params(node, next);
  a.poison();
  b.poison();
  graph.launch(s.stream);
  s.sync();
  CHECK(b.read() == std::vector<std::uint32_t>(n, 0x5A5A5A5Au));
  CHECK(a.read() == std::vector<std::uint32_t>(n, 0xCDCDCDCDu));

  auto checked = std::move(graph).with_policy<vyre::on_error::return_expected>();
  vyre::graph::memset_params zero = next;
  zero.width = 0;
  const auto zero_result = checked.set_memset_params(node, zero);
  REQUIRE_ERROR(zero_result, vyre::errc::invalid_argument);

  std::vector<std::uint32_t> host_memory(n);
  vyre::graph::memset_params on_host = next;
  on_host.dst = host_memory.data();
  const auto host_result = checked.set_memset_params(node, on_host);
  REQUIRE_ERROR(host_result, vyre::errc::invalid_argument);
  CHECK(host_result.error().value_or("memory_type_changed", 0) == 1u);

  const auto kernel_result = checked.kernel_params(node);
  REQUIRE_FALSE(kernel_result.has_value());
  CHECK(kernel_result.error().message().find("expected a kernel node, got a memset node") !=
        std::string::npos);

  // The refused updates left the last good one in place.
  b.poison();
  REQUIRE(checked.launch(s.stream).has_value());
  s.sync();
  CHECK(b.read() == std::vector<std::uint32_t>(n, 0x5A5A5A5Au));
}

namespace {
void count_host_call(void* counter) {
  static_cast<std::atomic<int>*>(counter)->fetch_add(1);
}
}  // namespace

TEST_CASE("the node inventory names every kind in a graph with many kinds", "[graph][gpu]") {
  constexpr std::uint32_t n = 1024;
  stream_owner s;
  device_buffer<std::uint32_t> src(n), dst(n), kernel_out(n), memset_out(n);
  std::vector<std::uint32_t> source(n);
  std::iota(source.begin(), source.end(), 1000u);
  src.write(source);
  dst.poison();
  kernel_out.poison();
  memset_out.poison();
  std::atomic<int> host_calls{0};
  cudaEvent_t recorded = nullptr, waited = nullptr;
  CUDA_REQUIRE(cudaEventCreateWithFlags(&recorded, cudaEventDisableTiming));
  CUDA_REQUIRE(cudaEventCreateWithFlags(&waited, cudaEventDisableTiming));
  CUDA_REQUIRE(cudaEventRecord(waited, s.stream));

  cudaGraph_t raw = nullptr;
  CUDA_REQUIRE(cudaGraphCreate(&raw, 0));
  std::vector<node_kind> added;
  cudaGraphNode_t node = nullptr;

  std::uint32_t* out_arg = kernel_out.ptr;
  std::uint32_t count_arg = n;
  std::uint32_t value_arg = 40u;
  void* kernel_args[] = {&out_arg, &count_arg, &value_arg};
  cudaKernelNodeParams kernel{};
  kernel.func = reinterpret_cast<void*>(&fill);
  kernel.gridDim = dim3(blocks_for(n));
  kernel.blockDim = dim3(256);
  kernel.kernelParams = kernel_args;
  CUDA_REQUIRE(cudaGraphAddKernelNode(&node, raw, nullptr, 0, &kernel));
  added.push_back(node_kind::kernel);

  CUDA_REQUIRE(cudaGraphAddMemcpyNode1D(&node, raw, nullptr, 0, dst.ptr, src.ptr,
                                        n * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice));
  added.push_back(node_kind::memcpy);

  cudaMemsetParams memset{};
  memset.dst = memset_out.ptr;
  memset.value = 0x2A2A2A2Au;
  memset.elementSize = 4;
  memset.width = n;
  memset.height = 1;
  CUDA_REQUIRE(cudaGraphAddMemsetNode(&node, raw, nullptr, 0, &memset));
  added.push_back(node_kind::memset);

  cudaHostNodeParams host{&count_host_call, &host_calls};
  CUDA_REQUIRE(cudaGraphAddHostNode(&node, raw, nullptr, 0, &host));
  added.push_back(node_kind::host);

  cudaGraph_t child = nullptr;
  CUDA_REQUIRE(cudaGraphCreate(&child, 0));
  cudaGraphNode_t child_empty = nullptr;
  CUDA_REQUIRE(cudaGraphAddEmptyNode(&child_empty, child, nullptr, 0));
  CUDA_REQUIRE(cudaGraphAddChildGraphNode(&node, raw, nullptr, 0, child));  // clones `child`
  CUDA_REQUIRE(cudaGraphDestroy(child));
  added.push_back(node_kind::child_graph);

  CUDA_REQUIRE(cudaGraphAddEmptyNode(&node, raw, nullptr, 0));
  added.push_back(node_kind::empty);
  CUDA_REQUIRE(cudaGraphAddEventRecordNode(&node, raw, nullptr, 0, recorded));
  added.push_back(node_kind::event_record);
  CUDA_REQUIRE(cudaGraphAddEventWaitNode(&node, raw, nullptr, 0, waited));
  added.push_back(node_kind::event_wait);

  int device = 0;
  CUDA_REQUIRE(cudaGetDevice(&device));
  cudaMemAllocNodeParams alloc{};
  alloc.poolProps.allocType = cudaMemAllocationTypePinned;
  alloc.poolProps.location.type = cudaMemLocationTypeDevice;
  alloc.poolProps.location.id = device;
  alloc.bytesize = 1 << 20;
  cudaGraphNode_t alloc_node = nullptr;
  CUDA_REQUIRE(cudaGraphAddMemAllocNode(&alloc_node, raw, nullptr, 0, &alloc));
  REQUIRE(alloc.dptr != nullptr);
  added.push_back(node_kind::mem_alloc);
  CUDA_REQUIRE(cudaGraphAddMemFreeNode(&node, raw, &alloc_node, 1, alloc.dptr));
  added.push_back(node_kind::mem_free);

  captured_graph graph = captured_graph::adopt(raw);
  REQUIRE(graph.node_count() == added.size());
  const auto nodes = graph.nodes();
  REQUIRE(nodes.size() == added.size());
  std::vector<node_kind> seen;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    CHECK(nodes[i].index == i);
    CHECK(graph.node(i).handle == nodes[i].handle);
    CHECK(graph.node(i).kind == nodes[i].kind);
    cudaGraphNodeType type{};
    CUDA_REQUIRE(cudaGraphNodeGetType(nodes[i].handle, &type));
    CHECK(vyre::graph::to_node_kind(type) == nodes[i].kind);
    seen.push_back(nodes[i].kind);
  }
  std::vector<node_kind> expected_kinds = added;
  std::sort(expected_kinds.begin(), expected_kinds.end());
  std::sort(seen.begin(), seen.end());
  CHECK(seen == expected_kinds);

  // The graph runs: every node did its work.
  graph.launch(s.stream);
  s.sync();
  CHECK(dst.read() == source);
  CHECK(kernel_out.read() == fill_reference(n, 40u));
  CHECK(memset_out.read() == std::vector<std::uint32_t>(n, 0x2A2A2A2Au));
  CHECK(host_calls.load() == 1);
  CUDA_REQUIRE(cudaEventQuery(recorded));

  // A WHILE graph's top level is one conditional node.
  device_buffer<std::uint32_t> counter(2);
  CUDA_REQUIRE(cudaMemset(counter.ptr, 0, 2 * sizeof(std::uint32_t)));
  CUDA_REQUIRE(cudaDeviceSynchronize());  // the memset is not ordered before s.stream
  captured_graph loop = vyre::graph::build_while_graph(
      s.stream, [&](cudaStream_t stream, vyre::graph::while_condition condition) {
        count_down<<<1, 1, 0, stream>>>(counter.ptr, counter.ptr + 1, condition);
        return cudaGetLastError();
      });
  REQUIRE(loop.node_count() == 1u);
  CHECK(loop.node(0).kind == node_kind::conditional);

  graph.reset();
  CUDA_REQUIRE(cudaEventDestroy(recorded));
  CUDA_REQUIRE(cudaEventDestroy(waited));
}

TEST_CASE("a WHILE graph runs a device fixpoint without returning to the host", "[graph][gpu]") {
  stream_owner s;
  SECTION("user-controlled condition: the body runs until it clears it") {
    device_buffer<std::uint32_t> state(2);  // remaining, runs
    captured_graph loop = vyre::graph::build_while_graph(
        s.stream, [&](cudaStream_t stream, vyre::graph::while_condition condition) {
          count_down<<<1, 1, 0, stream>>>(state.ptr, state.ptr + 1, condition);
          return cudaGetLastError();
        });
    for (std::uint32_t rounds : {5u, 1u, 37u}) {
      state.write({rounds, 0u});
      loop.launch(s.stream);
      s.sync();
      const auto after = state.read();
      CHECK(after[0] == 0u);
      CHECK(after[1] == rounds);
    }
  }
  SECTION("fixpoint: prefix maximum, one step per round") {
    constexpr std::uint32_t n = 300;
    device_buffer<std::uint32_t> current(n), next(n);
    device_buffer<vyre::graph::fixpoint_control> control(1);
    std::mt19937 rng(1234);
    std::vector<std::uint32_t> input(n);
    for (auto& v : input) v = rng() % 1'000'000u;
    input[0] = 5'000'000u;  // strictly largest: needs n - 1 changing rounds to reach the end
    std::vector<std::uint32_t> reference(n);
    std::uint32_t running = 0;
    for (std::uint32_t i = 0; i < n; ++i) reference[i] = running = std::max(running, input[i]);

    auto body = [&](cudaStream_t stream) -> cudaError_t {
      propagate_max<<<blocks_for(n), 256, 0, stream>>>(current.ptr, next.ptr, n, control.ptr);
      if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
      return cudaMemcpyAsync(current.ptr, next.ptr, n * sizeof(std::uint32_t),
                             cudaMemcpyDeviceToDevice, stream);
    };
    auto read_control = [&] {
      vyre::graph::fixpoint_control host{};
      CUDA_REQUIRE(cudaMemcpy(&host, control.ptr, sizeof(host), cudaMemcpyDeviceToHost));
      return host;
    };

    captured_graph fixpoint = vyre::graph::build_fixpoint_graph(s.stream, control.ptr, 1000u, body);
    REQUIRE(fixpoint.node_count() == 2u);  // the control reset, then the loop
    current.write(input);
    control.poison();  // the graph must reset the counters itself
    next.poison();
    fixpoint.launch(s.stream);
    s.sync();
    CHECK(current.read() == reference);
    auto outcome = read_control();
    CHECK(outcome.rounds == n);  // n - 1 rounds that changed something, one that did not
    CHECK(outcome.converged == 1u);
    CHECK(outcome.changed == 0u);

    // Relaunch on converged data: one round, nothing changes.
    fixpoint.launch(s.stream);
    s.sync();
    outcome = read_control();
    CHECK(outcome.rounds == 1u);
    CHECK(outcome.converged == 1u);
    CHECK(current.read() == reference);

    // A round cap stops a loop that has not converged.
    fixpoint.reset();  // one instantiation of a conditional graph at a time
    captured_graph capped = vyre::graph::build_fixpoint_graph(s.stream, control.ptr, 10u, body);
    current.write(input);
    capped.launch(s.stream);
    s.sync();
    outcome = read_control();
    CHECK(outcome.rounds == 10u);
    CHECK(outcome.converged == 0u);
    const auto partial = current.read();
    for (std::uint32_t i = 0; i <= 10; ++i) CHECK(partial[i] == input[0]);

    // A suffix runs once per launch, after the loop converged: here it copies the result out.
    capped.reset();
    device_buffer<std::uint32_t> after(n);
    captured_graph with_suffix = vyre::graph::build_fixpoint_graph(
        s.stream, control.ptr, 1000u, body, [&](cudaStream_t stream) {
          return cudaMemcpyAsync(after.ptr, current.ptr, n * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, stream);
        });
    REQUIRE(with_suffix.node_count() == 3u);  // reset, loop, suffix
    current.write(input);
    after.poison();
    with_suffix.launch(s.stream);
    s.sync();
    CHECK(after.read() == reference);
    CHECK(read_control().converged == 1u);

    // Behind a gate: the prefix's kernel opens the loop or not; the suffix runs either way.
    with_suffix.reset();
    device_buffer<std::uint32_t> open(1);
    captured_graph gated = vyre::graph::build_gated_fixpoint_graph(
        s.stream, control.ptr, 1000u,
        [&](cudaStream_t stream, vyre::graph::while_condition gate) {
          open_gate<<<1, 1, 0, stream>>>(open.ptr, gate);
          return cudaGetLastError();
        },
        body,
        [&](cudaStream_t stream) {
          return cudaMemcpyAsync(after.ptr, current.ptr, n * sizeof(std::uint32_t),
                                 cudaMemcpyDeviceToDevice, stream);
        });
    for (const bool opened : {true, false}) {
      CAPTURE(opened);
      open.write({opened ? 1u : 0u});
      current.write(input);
      after.poison();
      control.poison();
      gated.launch(s.stream);
      s.sync();
      CHECK(after.read() == (opened ? reference : input));
      outcome = read_control();
      CHECK(outcome.rounds == (opened ? n : 0u));
      CHECK(outcome.converged == (opened ? 1u : 0u));
    }
  }
  SECTION("bad arguments and a failing body") {
    device_buffer<vyre::graph::fixpoint_control> control(1);
    const auto no_rounds = vyre::graph::build_fixpoint_graph<vyre::on_error::return_expected>(
        s.stream, control.ptr, 0u, [](cudaStream_t) {});
    REQUIRE_ERROR(no_rounds, vyre::errc::invalid_argument);
    const auto no_control = vyre::graph::build_fixpoint_graph<vyre::on_error::return_expected>(
        s.stream, nullptr, 5u, [](cudaStream_t) {});
    REQUIRE_FALSE(no_control.has_value());
    const auto failing = vyre::graph::build_while_graph<vyre::on_error::return_expected>(
        s.stream, [](cudaStream_t, vyre::graph::while_condition) { return cudaErrorInvalidValue; });
    REQUIRE_FALSE(failing.has_value());
    CHECK(failing.error().cuda_status() == static_cast<int>(cudaErrorInvalidValue));
    CHECK_THROWS_WITH(
        vyre::graph::build_while_graph(s.stream,
                                       [](cudaStream_t, vyre::graph::while_condition) {
                                         throw std::runtime_error("loop body threw");
                                       }),
        "loop body threw");
    require_not_capturing(s.stream);
    require_stream_usable(s.stream);
  }
}

TEST_CASE("build_loop_graph runs prefix -> WHILE(body) -> suffix on the device", "[graph][gpu]") {
  constexpr std::uint32_t n = 1000;
  stream_owner s;
  device_buffer<std::uint32_t> data(n);
  device_buffer<std::uint32_t> state(2);  // rounds run, target rounds
  std::uint32_t target = 0;
  auto prefix = [&](cudaStream_t stream) -> cudaError_t {
    // The prefix resets the data and the round counter on every launch.
    if (cudaError_t e = cudaMemsetAsync(data.ptr, 0, n * sizeof(std::uint32_t), stream);
        e != cudaSuccess)
      return e;
    return cudaMemsetAsync(state.ptr, 0, sizeof(std::uint32_t), stream);
  };
  auto body = [&](cudaStream_t stream, vyre::graph::while_condition condition) -> cudaError_t {
    add_one_round<<<blocks_for(n), 256, 0, stream>>>(data.ptr, n);
    count_round<<<1, 1, 0, stream>>>(state.ptr, condition);
    return cudaGetLastError();
  };
  auto suffix = [&](cudaStream_t stream) -> cudaError_t {
    affine<<<blocks_for(n), 256, 0, stream>>>(data.ptr, n, 2u, 0u);
    return cudaGetLastError();
  };
  auto set_target = [&](std::uint32_t rounds) {
    target = rounds;
    state.write({0xDEADu, rounds});
    data.poison();
  };

  SECTION("all three parts: the body repeats until its kernel clears the condition") {
    captured_graph loop = vyre::graph::build_loop_graph(s.stream, prefix, body, suffix);
    // Flat: two memsets, the conditional node, the suffix kernel (no child graphs).
    REQUIRE(loop.node_count() == 4u);
    std::size_t conditionals = 0;
    for (const auto& node : loop.nodes()) conditionals += node.kind == node_kind::conditional;
    CHECK(conditionals == 1u);
    for (std::uint32_t rounds : {7u, 1u, 40u}) {
      set_target(rounds);
      loop.launch(s.stream);
      s.sync();
      CHECK(state.read() == std::vector<std::uint32_t>{rounds, rounds});
      CHECK(data.read() == std::vector<std::uint32_t>(n, 2u * rounds));
    }
    require_not_capturing(s.stream);
  }
  SECTION("a null body pointer gives prefix -> suffix with no loop") {
    decltype(body)* no_body = nullptr;
    captured_graph straight = vyre::graph::build_loop_graph(s.stream, prefix, no_body, suffix);
    CHECK(straight.node_count() == 3u);
    for (const auto& node : straight.nodes()) CHECK(node.kind != node_kind::conditional);
    set_target(5u);
    straight.launch(s.stream);
    s.sync();
    CHECK(data.read() == std::vector<std::uint32_t>(n, 0u));
    CHECK(state.read() == std::vector<std::uint32_t>{0u, 5u});
  }
  SECTION("a body alone, and a body behind a pointer") {
    captured_graph alone = vyre::graph::build_loop_graph(s.stream, vyre::graph::no_stage{}, &body,
                                                         vyre::graph::no_stage{});
    REQUIRE(alone.node_count() == 1u);
    CHECK(alone.node(0).kind == node_kind::conditional);
    state.write({0u, 3u});
    data.write(std::vector<std::uint32_t>(n, 10u));
    alone.launch(s.stream);
    s.sync();
    CHECK(data.read() == std::vector<std::uint32_t>(n, 13u));
  }
  SECTION("loop_entry::prefix_decides: a prefix kernel opens the loop or skips it") {
    auto opening_prefix = [&](cudaStream_t stream, vyre::graph::while_condition condition) {
      if (cudaError_t e = prefix(stream); e != cudaSuccess) return e;
      open_if_target<<<1, 1, 0, stream>>>(state.ptr, condition);
      return cudaGetLastError();
    };
    captured_graph loop = vyre::graph::build_loop_graph(
        s.stream, opening_prefix, body, suffix,
        {.entry = vyre::graph::loop_entry::prefix_decides, .what = "gpu test loop"});
    set_target(0u);  // the body never runs
    loop.launch(s.stream);
    s.sync();
    CHECK(state.read() == std::vector<std::uint32_t>{0u, 0u});
    CHECK(data.read() == std::vector<std::uint32_t>(n, 0u));
    set_target(4u);
    loop.launch(s.stream);
    s.sync();
    CHECK(state.read() == std::vector<std::uint32_t>{4u, 4u});
    CHECK(data.read() == std::vector<std::uint32_t>(n, 8u));
  }
  SECTION("a failing or throwing part leaves the stream usable and names the caller") {
    const auto failing_prefix = vyre::graph::build_loop_graph<vyre::on_error::return_expected>(
        s.stream, [](cudaStream_t) { return cudaErrorInvalidValue; }, body, suffix,
        {.what = "gpu test loop"});
    REQUIRE_FALSE(failing_prefix.has_value());
    CHECK(failing_prefix.error().cuda_status() == static_cast<int>(cudaErrorInvalidValue));
    require_not_capturing(s.stream);
    const auto failing_suffix = vyre::graph::build_loop_graph<vyre::on_error::return_expected>(
        s.stream, prefix, body, [](cudaStream_t) -> vyre::expected<void> {
          return vyre::fail(vyre::error(vyre::errc::invalid_state, "suffix refused"));
        });
    REQUIRE_ERROR(failing_suffix, vyre::errc::invalid_state);
    require_not_capturing(s.stream);
    CHECK_THROWS_WITH(vyre::graph::build_loop_graph(
                          s.stream, prefix,
                          [](cudaStream_t, vyre::graph::while_condition) {
                            throw std::runtime_error("loop body threw");
                          },
                          suffix),
                      "loop body threw");
    require_not_capturing(s.stream);
    const auto legacy = vyre::graph::build_loop_graph<vyre::on_error::return_expected>(
        nullptr, prefix, body, suffix);
    REQUIRE_ERROR(legacy, vyre::errc::invalid_argument);
    require_stream_usable(s.stream);
  }
  SECTION("graph_cache::get_or_build caches loop graphs under any key") {
    vyre::graph::graph_cache<vyre::on_error::return_expected, std::uint32_t> cache;
    int builds = 0;
    auto build = [&] {
      ++builds;
      return vyre::graph::build_loop_graph<vyre::on_error::return_expected>(s.stream, prefix, body,
                                                                            suffix);
    };
    for (std::uint32_t rounds : {3u, 9u}) {
      set_target(rounds);
      auto graph = cache.get_or_build(7u, 0, build);
      REQUIRE(graph.has_value());
      REQUIRE((*graph)->launch(s.stream).has_value());
      s.sync();
      CHECK(data.read() == std::vector<std::uint32_t>(n, 2u * rounds));
    }
    CHECK(builds == 1);
    CHECK(cache.stats().captures == 1u);
    CHECK(cache.stats().hits == 1u);
    const auto refused = cache.get_or_build(8u, 0, [] {
      return vyre::expected<vyre::graph::captured_graph_expected>(
          vyre::fail(vyre::error(vyre::errc::invalid_state, "build refused")));
    });
    REQUIRE_FALSE(refused.has_value());
    CHECK(cache.size() == 1u);
  }
}

TEST_CASE("whole-graph updates apply in place, report refusals, and can re-instantiate",
          "[graph][gpu]") {
  constexpr std::uint32_t n = 2048;
  stream_owner s;
  device_buffer<std::uint32_t> first(n), second(n);
  auto fill_into = [](std::uint32_t* out, std::uint32_t value) {
    return [out, value](cudaStream_t stream) {
      fill<<<blocks_for(n), 256, 0, stream>>>(out, n, value);
      return cudaGetLastError();
    };
  };
  captured_graph graph = captured_graph::capture_on_stream(s.stream, fill_into(first.ptr, 1u));

  // Same topology, new pointer and value: updated in place.
  CHECK(graph.recapture(s.stream, fill_into(second.ptr, 7u)) ==
        vyre::graph::update_outcome::updated_in_place);
  first.poison();
  second.poison();
  graph.launch(s.stream);
  s.sync();
  CHECK(second.read() == fill_reference(n, 7u));
  CHECK(first.read() == std::vector<std::uint32_t>(n, 0xCDCDCDCDu));
  // In place: the nodes keep their identity and the readers describe the capture; per-node
  // updates still apply on top of the whole-graph one.
  REQUIRE(graph.node_count() == 1u);
  const vyre::graph::graph_node node = graph.node(0);
  std::uint32_t value = 0;
  std::memcpy(&value, graph.kernel_params(node).args[2], sizeof(value));
  CHECK(value == 1u);
  graph.set_kernel_args(node, &fill, second.ptr, n, 9u);
  second.poison();
  graph.launch(s.stream);
  s.sync();
  CHECK(second.read() == fill_reference(n, 9u));
  graph.set_kernel_args(node, &fill, second.ptr, n, 7u);

  auto memset_instead = [&](cudaStream_t stream) {
    return cudaMemsetAsync(first.ptr, 0x33, n * sizeof(std::uint32_t), stream);
  };
  SECTION("a node type change is refused with the reason and the failing node") {
    auto checked = std::move(graph).with_policy<vyre::on_error::return_expected>();
    const auto refused = checked.recapture(s.stream, memset_instead);
    REQUIRE_ERROR(refused, vyre::errc::cuda_runtime);
    CHECK(refused.error().cuda_status() == static_cast<int>(cudaErrorGraphExecUpdateFailure));
    const auto reason = refused.error().value_or("reason", 0);
    CHECK((reason == cudaGraphExecUpdateErrorNodeTypeChanged ||
           reason == cudaGraphExecUpdateErrorTopologyChanged));
    if (reason == cudaGraphExecUpdateErrorNodeTypeChanged) {
      CHECK(refused.error().value_or("failing_node_index", 99) == 0u);
      CHECK(refused.error().message().find("memset") != std::string::npos);
    }
    require_not_capturing(s.stream);
    // Unchanged: still fills `second` with 7.
    second.poison();
    REQUIRE(checked.launch(s.stream).has_value());
    s.sync();
    CHECK(second.read() == fill_reference(n, 7u));
  }
  SECTION("a topology change falls back to a new instantiation when asked") {
    auto two_kernels = [&](cudaStream_t stream) {
      fill<<<blocks_for(n), 256, 0, stream>>>(first.ptr, n, 3u);
      fill<<<blocks_for(n), 256, 0, stream>>>(second.ptr, n, 4u);
      return cudaGetLastError();
    };
    CHECK_THROWS_AS(graph.recapture(s.stream, two_kernels), vyre::error_exception);
    CHECK(graph.recapture(s.stream, two_kernels, vyre::graph::update_fallback::reinstantiate) ==
          vyre::graph::update_outcome::reinstantiated);
    CHECK(graph.node_count() == 2u);
    first.poison();
    second.poison();
    graph.launch(s.stream);
    s.sync();
    CHECK(first.read() == fill_reference(n, 3u));
    CHECK(second.read() == fill_reference(n, 4u));
  }
  SECTION("update from a separately captured definition") {
    auto definition =
        vyre::graph::graph_definition::capture_on_stream(s.stream, fill_into(first.ptr, 11u));
    REQUIRE(definition);
    CHECK(graph.update(std::move(definition)) == vyre::graph::update_outcome::updated_in_place);
    first.poison();
    graph.launch(s.stream);
    s.sync();
    CHECK(first.read() == fill_reference(n, 11u));
  }
}

TEST_CASE("graph_cache captures on a miss, hits after, and evicts by count and bytes",
          "[graph][gpu]") {
  constexpr std::uint32_t n = 1024;
  stream_owner s;
  device_buffer<std::uint32_t> out(n);
  auto key_for = [](std::uint64_t probe_rows) {
    vyre::graph::graph_key_inputs inputs;
    inputs.key_arity = 1;
    inputs.key_bytes = 4;
    inputs.probe_rows = probe_rows;
    inputs.output_rows = probe_rows;
    return vyre::graph::make_graph_key(inputs);
  };
  int captures_run = 0;
  auto capture_fill = [&](std::uint32_t value) {
    return [&, value](cudaStream_t stream) {
      ++captures_run;
      fill<<<blocks_for(n), 256, 0, stream>>>(out.ptr, n, value);
      return cudaGetLastError();
    };
  };
  vyre::graph::graph_event_counters counters;
  vyre::graph::graph_options options;
  options.hook = counters.hook();

  SECTION("by entry count") {
    vyre::graph::graph_cache<> cache({2, 1 << 20}, options);
    for (std::uint32_t round = 0; round < 2; ++round) {
      for (std::uint64_t rows : {100u, 1000u}) {
        out.poison();
        cache.launch(s.stream, key_for(rows), 64, capture_fill(static_cast<std::uint32_t>(rows)));
        s.sync();
        REQUIRE(out.read() == fill_reference(n, static_cast<std::uint32_t>(rows)));
      }
    }
    auto stats = cache.stats();
    CHECK(stats.misses == 2u);
    CHECK(stats.hits == 2u);
    CHECK(stats.captures == 2u);
    CHECK(stats.evictions == 0u);
    CHECK(captures_run == 2);
    // 120 rows share 100's class (128): a hit, no new capture.
    out.poison();
    cache.launch(s.stream, key_for(120), 64, capture_fill(999u));
    s.sync();
    CHECK(out.read() == fill_reference(n, 100u));
    // A third class evicts the least recently used (1000's class).
    cache.launch(s.stream, key_for(5000), 64, capture_fill(5000u));
    s.sync();
    stats = cache.stats();
    CHECK(stats.evictions == 1u);
    CHECK(stats.entries == 2u);
    CHECK(cache.contains(key_for(100)));
    CHECK_FALSE(cache.contains(key_for(1000)));
    CHECK(cache.find(key_for(1000)) == nullptr);
    CHECK(counters.count(vyre::graph::graph_event::capture) == 3u);
    CHECK(counters.count(vyre::graph::graph_event::launch) == 6u);
  }
  SECTION("by device bytes, and refusals that capture nothing") {
    auto cache = vyre::graph::graph_cache<vyre::on_error::return_expected>::make({8, 100});
    REQUIRE(cache.has_value());
    REQUIRE(cache->get_or_capture(s.stream, key_for(10), 60, capture_fill(10u)).has_value());
    REQUIRE(cache->get_or_capture(s.stream, key_for(100), 60, capture_fill(100u)).has_value());
    CHECK(cache->stats().evictions == 1u);
    CHECK(cache->stats().device_bytes == 60u);
    CHECK_FALSE(cache->contains(key_for(10)));
    const int before = captures_run;
    const auto too_big = cache->get_or_capture(s.stream, key_for(1000), 101, capture_fill(1u));
    REQUIRE_ERROR(too_big, vyre::errc::out_of_memory);
    CHECK(captures_run == before);
    const auto failing = cache->get_or_capture(s.stream, key_for(1000), 10,
                                               [](cudaStream_t) { return cudaErrorInvalidValue; });
    REQUIRE_FALSE(failing.has_value());
    CHECK(cache->size() == 1u);
    require_not_capturing(s.stream);
    out.poison();
    REQUIRE(cache->launch(s.stream, key_for(100), 60, capture_fill(1u)).has_value());
    s.sync();
    CHECK(out.read() == fill_reference(n, 100u));
    const auto bad_limits = vyre::graph::graph_cache<vyre::on_error::return_expected>::make({0, 1});
    CHECK_FALSE(bad_limits.has_value());
    CHECK_THROWS_AS(vyre::graph::graph_cache<>({1, 0}), vyre::error_exception);
  }
}

TEST_CASE("capturing on one thread does not disturb CUDA calls on another", "[graph][gpu]") {
  constexpr std::uint32_t n = 100'000;
  stream_owner capture_stream;
  device_buffer<std::uint32_t> captured_out(n);
  std::promise<void> capture_started, other_done, capture_ended;
  std::future<void> other_done_future = other_done.get_future();

  // The other thread: allocates (prohibited during a global-mode capture), launches, copies
  // and synchronises its own stream while the capture is open; frees after it ended.
  std::vector<std::uint32_t> other_result(n);
  cudaError_t other_status = cudaSuccess;
  std::thread other(
      [&, started = capture_started.get_future(), ended = capture_ended.get_future()]() mutable {
        started.wait();
        cudaStream_t stream = nullptr;
        std::uint32_t* buffer = nullptr;
        other_status = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
        if (other_status == cudaSuccess)
          other_status = cudaMalloc(&buffer, n * sizeof(std::uint32_t));
        if (other_status == cudaSuccess) {
          fill<<<blocks_for(n), 256, 0, stream>>>(buffer, n, 77u);
          other_status = cudaGetLastError();
        }
        if (other_status == cudaSuccess)
          other_status = cudaMemcpyAsync(other_result.data(), buffer, n * sizeof(std::uint32_t),
                                         cudaMemcpyDeviceToHost, stream);
        if (other_status == cudaSuccess) other_status = cudaStreamSynchronize(stream);
        other_done.set_value();
        ended.wait();
        if (buffer != nullptr) (void)cudaFree(buffer);
        if (stream != nullptr) (void)cudaStreamDestroy(stream);
      });
  // Whatever happens below, release the other thread and join it.
  struct joiner {
    std::thread& thread;
    std::promise<void>& started;
    std::promise<void>& ended;
    bool started_set = false;
    ~joiner() {
      if (!started_set) started.set_value();
      ended.set_value();
      thread.join();
    }
  } join_other{other, capture_started, capture_ended};

  bool other_finished_in_time = false;
  auto result =
      captured_graph_expected::capture_on_stream(capture_stream.stream, [&](cudaStream_t stream) {
        fill<<<blocks_for(n), 256, 0, stream>>>(captured_out.ptr, n, 5u);
        join_other.started_set = true;
        capture_started.set_value();
        other_finished_in_time =
            other_done_future.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
        affine<<<blocks_for(n), 256, 0, stream>>>(captured_out.ptr, n, 3u, 1u);
        return cudaGetLastError();
      });
  INFO((result ? std::string("captured") : result.error().message()));
  REQUIRE(result.has_value());
  REQUIRE(other_finished_in_time);
  INFO("other thread: " << cudaGetErrorName(other_status));
  REQUIRE(other_status == cudaSuccess);
  CHECK(other_result == fill_reference(n, 77u));
  captured_graph_expected graph = std::move(*result);
  REQUIRE(graph.node_count() == 2u);
  captured_out.poison();
  REQUIRE(graph.launch(capture_stream.stream).has_value());
  capture_stream.sync();
  std::vector<std::uint32_t> expected_values = fill_reference(n, 5u);
  for (auto& v : expected_values) v = v * 3u + 1u;
  CHECK(captured_out.read() == expected_values);
}
