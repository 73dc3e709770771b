// SPDX-License-Identifier: Apache-2.0
// Reliability on the device (issue 10), in one executable:
//
// - Fault injection: every public operation that allocates is run with its 1st, 2nd, 3rd, ...
//   device, pinned and host allocation failing until it makes no more allocations. Each
//   failure must be `errc::out_of_memory` naming the bytes and leave nothing behind: pool live
//   allocations, resident buffers and bytes, leased pinned blocks, the telemetry device-bytes
//   gauge and the default pool's used memory back to their baseline, and device free memory
//   (cudaMemGetInfo) back to its baseline once the backend is gone.
// - CUDA faults: an invalidated capture, a kernel that traps inside a graph replay (in a child
//   process: a trap poisons the context), a cleanup while work is in flight, handles used after
//   cleanup, double frees.
// - Stress: 16 threads mixing pool allocate/free, resident upload/free and graph replays on
//   their own streams; no error, no leak, telemetry consistent with the work done.
//
// Environment: VYRE_RELIABILITY_STRESS_OPS overrides the operations per stress thread (10000);
// VYRE_TEST_SKIP_MEMINFO=1 skips the cudaMemGetInfo comparison (compute-sanitizer adds
// its own device allocations; scripts/reliability.sh sets both under the sanitizers).
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <vyre/vyre.cuh>

#include "require_ok.cuh"

// Kernels need external linkage for VYRE_KERNEL's hidden visibility: a named namespace.
namespace reliability_gpu_test {

VYRE_KERNEL void fill_words(std::uint32_t* out, std::uint32_t count, std::uint32_t value) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) out[i] = value + i;
}
VYRE_KERNEL void add_one(std::uint32_t* counter) {
  counter[0] += 1u;
}
// Waits about `cycles` clock ticks, then derives the output from the input: work that is still
// in flight when the host acts.
VYRE_KERNEL void spin_then_copy(const std::uint32_t* source, std::uint32_t* out, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  out[0] = source[0] + 1u;
}
VYRE_KERNEL void trap_after_write(std::uint32_t* out) {
  out[0] = 0xDEADu;
  __trap();
}

struct times_three {
  __host__ __device__ std::uint32_t operator()(std::uint32_t v) const { return v * 3u; }
};
struct plus_five {
  __host__ __device__ std::uint32_t operator()(std::uint32_t v) const { return v + 5u; }
};

}  // namespace reliability_gpu_test

namespace {
using namespace reliability_gpu_test;
namespace eg = vyre::egraph;
namespace alg = vyre::algorithms;
using vyre::errc;
using vyre::graph::captured_graph_expected;
using vyre::testing::allocation_kind;
using vyre::testing::scoped_allocation_fault;
using vyre_test::acquire_or_fail;
using expect = vyre::on_error::return_expected;

template <class Alloc, class Staging = vyre::staging::native>
using expected_policies = vyre::policies<Alloc, Staging, expect>;

constexpr std::uint32_t fused_unit = 4096;
constexpr std::array<vyre::fusion::stage, 2> fused_stages{
    {{.id = 1, .layout_hash = 7, .input_bytes = fused_unit, .output_bytes = fused_unit},
     {.id = 2, .layout_hash = 7, .input_bytes = fused_unit, .output_bytes = fused_unit}}};
constexpr auto fused_plan = vyre::fusion::static_plan(fused_stages, 3 * fused_unit);
static_assert(fused_plan.launch_count() == 1);
using fused_type = vyre::fusion::fused_pipeline<fused_plan, std::uint32_t, times_three, plus_five>;

constexpr std::uint32_t graph_words = 4096;  // words of the graph and pipeline operations

constexpr unsigned blocks_for(std::uint32_t n) {
  return (n + 255u) / 256u;
}

vyre::error wrong_result(const char* what) {
  return vyre::error(errc::invalid_state, what).fix("a test operation computed a wrong result");
}

// Runs `action` when the scope ends (test-side cleanup on every path of an operation).
template <class F>
struct finally {
  F action;
  ~finally() { action(); }
};
template <class F>
finally(F) -> finally<F>;

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return static_cast<std::size_t>(std::strtoull(text, nullptr, 10));
}
bool skip_meminfo() {
  return env_size("VYRE_TEST_SKIP_MEMINFO", 0) != 0;
}

cudaMemPool_t default_pool() {
  cudaMemPool_t pool = nullptr;
  int device = 0;
  REQUIRE(cudaGetDevice(&device) == cudaSuccess);
  REQUIRE(cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess);
  return pool;
}

// Device free memory once everything queued finished and the default pool (the algorithms'
// scratch) returned what it keeps.
std::size_t settled_free_bytes() {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cudaMemPoolTrimTo(default_pool(), 0) == cudaSuccess);
  std::size_t free_bytes = 0, total_bytes = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess);
  return free_bytes;
}

// Everything a backend (and the default pool) could leave behind.
struct leak_counters {
  std::size_t live_allocations = 0;
  std::size_t resident_buffers = 0;
  std::size_t resident_bytes = 0;
  std::size_t pinned_leased = 0;
  std::uint64_t device_bytes = 0;  // telemetry gauge
  std::uint64_t default_pool_used = 0;
  friend bool operator==(const leak_counters&, const leak_counters&) = default;
};
std::ostream& operator<<(std::ostream& out, const leak_counters& c) {
  return out << "{live_allocations=" << c.live_allocations
             << ", resident_buffers=" << c.resident_buffers
             << ", resident_bytes=" << c.resident_bytes << ", pinned_leased=" << c.pinned_leased
             << ", telemetry_device_bytes=" << c.device_bytes
             << ", default_pool_used=" << c.default_pool_used << "}";
}

template <class Backend>
leak_counters counters_of(Backend& gpu) {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  leak_counters c;
  c.live_allocations = gpu.memory().live_allocations();
  c.resident_buffers = gpu.resident().live_buffers();
  c.resident_bytes = gpu.resident().bytes_in_use();
  c.pinned_leased = gpu.pinned().leased_blocks();
  // The gauge counts the caching pool's free blocks too: leave those out.
  c.device_bytes = gpu.telemetry().snapshot().current_device_bytes;
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(gpu.memory())>,
                               vyre::caching_pool_resource>)
    c.device_bytes -= gpu.memory().cached_bytes();
  REQUIRE(cudaMemPoolGetAttribute(default_pool(), cudaMemPoolAttrUsedMemCurrent,
                                  &c.default_pool_used) == cudaSuccess);
  return c;
}

// Copies `count` words from the device and checks them against value + i.
vyre::expected<void> check_fill(const void* device, std::uint32_t count, std::uint32_t value,
                                cudaStream_t stream) {
  std::vector<std::uint32_t> host(count, 0xCDCDCDCDu);
  VYRE_CUDA_TRY(cudaMemcpyAsync(host.data(), device, count * 4u, cudaMemcpyDeviceToHost, stream),
                "test: read back");
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "test: read back");
  for (std::uint32_t i = 0; i < count; ++i)
    if (host[i] != value + i) return vyre::fail(wrong_result("test: filled words differ"));
  return {};
}

// ---- inputs ---------------------------------------------------------------------------------

std::vector<std::byte> pattern_bytes(std::size_t count, std::uint32_t seed) {
  std::vector<std::byte> bytes(count);
  std::uint32_t x = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    bytes[i] = static_cast<std::byte>(x & 0xFFu);
  }
  return bytes;
}

// An e-graph of `rows` rows: leaves, then binary rows over them (several MiB when packed).
eg::snapshot sample_snapshot(std::uint32_t rows) {
  eg::snapshot s;
  const std::uint32_t lit = s.intern_op("lit");
  const std::uint32_t add = s.intern_op("add");
  const std::uint32_t leaves = rows / 4;
  for (std::uint32_t i = 0; i < leaves; ++i) (void)s.add_row(i + 1, lit);
  for (std::uint32_t i = leaves; i < rows; ++i) {
    const std::uint32_t kids[] = {1 + i % leaves, 1 + (i * 7u) % leaves};
    (void)s.add_row(leaves + 1 + i % (rows / 3), add, cuda::std::span<const std::uint32_t>(kids));
  }
  return s;
}

// Rows with planted congruences: row j and row j + 100 of the binary rows have the same op and
// children but different e-classes.
alg::raw_rows sample_rows() {
  alg::raw_rows rows;
  for (std::uint32_t i = 0; i < 100; ++i) {
    rows.row_eclass_ids.push_back(i + 1);
    rows.row_language_op_ids.push_back(0);
    rows.row_children_lens.push_back(0);
  }
  for (std::uint32_t j = 0; j < 200; ++j) {
    rows.row_eclass_ids.push_back(200 + j);
    rows.row_language_op_ids.push_back(1);
    rows.row_children_lens.push_back(2);
    rows.children.push_back(1 + j % 100);
    rows.children.push_back(1 + (j * 7u) % 100);
  }
  return rows;
}

template <class T>
vyre::expected<vyre::device_array<T>> to_device(vyre::device_resource_ref memory,
                                                const std::vector<T>& host, cudaStream_t stream) {
  VYRE_TRY_ASSIGN(vyre::device_array<T> buffer,
                  vyre::device_array<T>::allocate(memory, host.size(), stream, "test: input"));
  if (!host.empty())
    VYRE_CUDA_TRY(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T),
                                  cudaMemcpyHostToDevice, stream),
                  "test: upload input");
  return buffer;
}

// ---- the sweep ------------------------------------------------------------------------------

constexpr allocation_kind all_kinds[] = {allocation_kind::device, allocation_kind::pinned,
                                         allocation_kind::host};

// Runs `op(gpu)` once to warm up (kernel modules load lazily and stay), then with the Nth
// allocation of each kind failing, N = 1, 2, ... until the operation no longer reaches an Nth
// allocation and succeeds. `op` returns vyre::expected<void> and releases what it made.
template <class Policies, class Op>
void sweep(const char* name, Op&& op) {
  using gpu_type = vyre::backend<Policies>;
  const std::string label =
      std::string(name) + " [" + gpu_type::allocation_policy_name() +
      (vyre::staging::swaps_bytes<typename Policies::staging_policy> ? ", forced_swap]" : "]");
  INFO(label);
  {
    auto gpu = gpu_type::acquire(0);
    REQUIRE(gpu.has_value());
    auto warm = op(*gpu);
    if (!warm) FAIL("warm-up run failed: " << warm.error().message());
  }
  const std::size_t free_before = settled_free_bytes();
  std::uint64_t injected[3] = {0, 0, 0};
  {
    auto gpu = gpu_type::acquire(0);
    REQUIRE(gpu.has_value());
    const leak_counters baseline = counters_of(*gpu);
    for (std::size_t k = 0; k < 3; ++k) {
      const allocation_kind kind = all_kinds[k];
      for (std::uint64_t n = 1;; ++n) {
        INFO(vyre::testing::allocation_kind_name(kind) << " allocation " << n << " fails");
        REQUIRE(n < 100000);  // every operation makes far fewer allocations
        vyre::expected<void> result;
        bool fired = false;
        {
          scoped_allocation_fault fault(kind, n);
          result = op(*gpu);
          fired = fault.fired();
        }
        if (!fired) {
          if (!result) FAIL("failed with no injected fault: " << result.error().message());
          break;
        }
        ++injected[k];
        REQUIRE_FALSE(result.has_value());
        INFO(result.error().message());
        CHECK(result.error().code() == errc::out_of_memory);
        CHECK(result.error().value_or("bytes", UINT64_MAX) != UINT64_MAX);
        const leak_counters after = counters_of(*gpu);
        INFO("baseline " << baseline << "\nafter    " << after);
        CHECK(after == baseline);
        // The backend still works after the failure.
        if (n == 1) {
          auto again = op(*gpu);
          if (!again) FAIL("no recovery after a failure: " << again.error().message());
          CHECK(counters_of(*gpu) == baseline);
        }
      }
    }
  }
  std::printf("fault sweep %-48s device %3llu, pinned %3llu, host %3llu injected failures\n",
              label.c_str(), static_cast<unsigned long long>(injected[0]),
              static_cast<unsigned long long>(injected[1]),
              static_cast<unsigned long long>(injected[2]));
  // A sweep that injected nothing tested no failure path: the operation must allocate.
  CHECK(injected[0] + injected[1] + injected[2] >= 1u);
  if (skip_meminfo()) return;
  const std::size_t free_after = settled_free_bytes();
  INFO("device free bytes before " << free_before << ", after " << free_after);
  // A leak can only lower free memory. It may rise: the previous test process's context can
  // still be releasing its memory when this one takes the baseline (seen under CTest).
  CHECK(free_after >= free_before);
}

// Every allocating operation of one backend type.
template <class Policies>
void sweep_runtime_operations() {
  using gpu_type = vyre::backend<Policies>;

  sweep<Policies>("backend acquire", [](gpu_type&) -> vyre::expected<void> {
    auto other = gpu_type::acquire(0);
    if (!other) return vyre::fail(other.error());
    return {};
  });
  sweep<Policies>("backend warmup", [](gpu_type& gpu) { return gpu.warmup(); });
  sweep<Policies>("pool allocate", [](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(vyre::device_buffer tiny_block, gpu.allocate(1000, stream.get()));
    VYRE_TRY_ASSIGN(vyre::device_buffer large_block, gpu.allocate(3u << 20, stream.get()));
    constexpr std::uint32_t n = 1000;
    fill_words<<<blocks_for(n), 256, 0, stream.get()>>>(large_block.as<std::uint32_t>(), n, 11u);
    VYRE_CUDA_TRY(cudaGetLastError(), "test: fill");
    return check_fill(large_block.get(), n, 11u, stream.get());
  });
  sweep<Policies>("pinned acquire", [](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(vyre::pinned_lease lease, gpu.acquire_pinned(std::size_t{1} << 20));
    std::memset(lease.data(), 0x5A, lease.size());
    return {};
  });
  sweep<Policies>("resident allocate", [](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(const vyre::resident_handle h,
                    gpu.allocate_resident(std::size_t{1} << 20, stream.get()));
    return gpu.free_resident(h);
  });

  // Pageable: staged through pinned chunks on three host lanes.
  const std::vector<std::byte> source = pattern_bytes((std::size_t{10} << 20) + 123, 7);
  sweep<Policies>("resident upload (pageable, 3 lanes) + download",
                  [&source](gpu_type& gpu) -> vyre::expected<void> {
                    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
                    vyre::upload_options options;
                    options.chunk_bytes = std::size_t{1} << 20;
                    options.host_lanes = 3;
                    VYRE_TRY_ASSIGN(const vyre::resident_handle h,
                                    gpu.resident().allocate_copy(source, stream.get(), options));
                    finally release{[&] { (void)gpu.free_resident(h); }};
                    std::vector<std::byte> back(source.size(), std::byte{0xCD});
                    VYRE_TRY(gpu.download(h, back, 0, stream.get()));
                    if (back != source) return vyre::fail(wrong_result("test: round trip differs"));
                    return {};
                  });
  // Pinned: one asynchronous copy from the caller's pinned memory.
  sweep<Policies>("resident upload (pinned source) + download",
                  [](gpu_type& gpu) -> vyre::expected<void> {
                    const std::vector<std::byte> bytes = pattern_bytes(std::size_t{3} << 20, 9);
                    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
                    VYRE_TRY_ASSIGN(vyre::pinned_lease lease, gpu.acquire_pinned(bytes.size()));
                    std::memcpy(lease.data(), bytes.data(), bytes.size());
                    VYRE_TRY_ASSIGN(const vyre::resident_handle h,
                                    gpu.allocate_resident(bytes.size(), stream.get()));
                    finally release{[&] { (void)gpu.free_resident(h); }};
                    auto uploaded = gpu.upload(h, lease.bytes(), 0, stream.get());
                    // The lease must outlive the asynchronous copy on every path.
                    VYRE_CUDA_TRY(cudaStreamSynchronize(stream.get()), "test: sync");
                    VYRE_TRY(uploaded);
                    std::vector<std::byte> back(bytes.size(), std::byte{0xCD});
                    VYRE_TRY(gpu.download(h, back, 0, stream.get()));
                    if (back != bytes) return vyre::fail(wrong_result("test: round trip differs"));
                    return {};
                  });
}

// E-graph image upload (pageable words, staged; swapped under forced_swap), kernel view and
// download, byte-identical.
template <class Policies>
void sweep_egraph_upload(const eg::host_image& image) {
  using gpu_type = vyre::backend<Policies>;
  sweep<Policies>("egraph upload + kernel_view + download",
                  [&image](gpu_type& gpu) -> vyre::expected<void> {
                    VYRE_TRY_ASSIGN(const eg::resident_image resident, gpu.upload(image));
                    finally release{[&] { (void)gpu.free_resident(resident.handle()); }};
                    VYRE_TRY_ASSIGN(const eg::kernel_view view, gpu.kernel_view(resident));
                    if (view.row_count() != image.layout().row_count)
                      return vyre::fail(wrong_result("test: view row count"));
                    VYRE_TRY_ASSIGN(const eg::host_image back, eg::download(gpu, resident));
                    if (!std::equal(back.words().begin(), back.words().end(), image.words().begin(),
                                    image.words().end()))
                      return vyre::fail(wrong_result("test: image round trip differs"));
                    return {};
                  });
}

}  // namespace

TEST_CASE("fault injection: runtime operations under every allocation policy",
          "[reliability][gpu][fault]") {
  sweep_runtime_operations<expected_policies<vyre::alloc::caching_pool>>();
  sweep_runtime_operations<expected_policies<vyre::alloc::stream_ordered>>();
  sweep_runtime_operations<expected_policies<vyre::alloc::direct>>();
}

TEST_CASE("fault injection: e-graph upload, view and download (native and swapped staging)",
          "[reliability][gpu][fault]") {
  const eg::snapshot snapshot = sample_snapshot(150000);
  const eg::host_image image = eg::pack(snapshot);
  REQUIRE(image.words().size_bytes() > (std::size_t{4} << 20));  // more than one staging chunk
  sweep_egraph_upload<expected_policies<vyre::alloc::caching_pool>>(image);
  sweep_egraph_upload<expected_policies<vyre::alloc::stream_ordered>>(image);
  sweep_egraph_upload<expected_policies<vyre::alloc::direct>>(image);
  sweep_egraph_upload<expected_policies<vyre::alloc::caching_pool, vyre::staging::forced_swap>>(
      image);
}

TEST_CASE("fault injection: graph capture, instantiate, cache and fused pipeline",
          "[reliability][gpu][fault]") {
  using policies = expected_policies<vyre::alloc::caching_pool>;
  using gpu_type = vyre::backend<policies>;
  sweep<policies>(
      "graph capture + instantiate + replay", [](gpu_type& gpu) -> vyre::expected<void> {
        VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
        VYRE_TRY_ASSIGN(vyre::device_buffer out, gpu.allocate(graph_words * 4u, stream.get()));
        auto graph = captured_graph_expected::capture_on_stream(stream.get(), [&](cudaStream_t s) {
          fill_words<<<blocks_for(graph_words), 256, 0, s>>>(out.as<std::uint32_t>(), graph_words,
                                                             21u);
          return cudaGetLastError();
        });
        if (!graph) return vyre::fail(graph.error());
        VYRE_TRY(graph->launch(stream.get()));
        return check_fill(out.get(), graph_words, 21u, stream.get());
      });
  sweep<policies>("graph_cache get_or_capture + launch", [](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(vyre::device_buffer out, gpu.allocate(graph_words * 4u, stream.get()));
    VYRE_TRY_ASSIGN(auto cache, vyre::graph::graph_cache<expect>::make({4, 1 << 20}));
    vyre::graph::graph_key_inputs inputs;
    inputs.key_arity = 1;
    inputs.key_bytes = 4;
    inputs.probe_rows = graph_words;
    inputs.output_rows = graph_words;
    const auto key = vyre::graph::make_graph_key(inputs);
    for (std::uint32_t round = 0; round < 2; ++round) {  // a miss, then a hit
      VYRE_TRY(cache.launch(stream.get(), key, 64, [&](cudaStream_t s) {
        fill_words<<<blocks_for(graph_words), 256, 0, s>>>(out.as<std::uint32_t>(), graph_words,
                                                           33u);
        return cudaGetLastError();
      }));
      VYRE_TRY(check_fill(out.get(), graph_words, 33u, stream.get()));
    }
    return {};
  });
  sweep<policies>("fused pipeline run", [](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(vyre::device_buffer data, gpu.allocate(graph_words * 4u, stream.get()));
    fill_words<<<blocks_for(graph_words), 256, 0, stream.get()>>>(data.as<std::uint32_t>(),
                                                                  graph_words, 1u);
    VYRE_CUDA_TRY(cudaGetLastError(), "test: fill");
    const fused_type pipeline{times_three{}, plus_five{}};
    VYRE_TRY(pipeline.run(data.as<std::uint32_t>(), data.as<std::uint32_t>(), graph_words,
                          stream.get()));
    std::vector<std::uint32_t> host(graph_words, 0xCDCDCDCDu);
    VYRE_CUDA_TRY(cudaMemcpyAsync(host.data(), data.get(), graph_words * 4u, cudaMemcpyDeviceToHost,
                                  stream.get()),
                  "test: read back");
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream.get()), "test: read back");
    for (std::uint32_t i = 0; i < graph_words; ++i)
      if (host[i] != (1u + i) * 3u + 5u) return vyre::fail(wrong_result("test: fused result"));
    return {};
  });
}

// The input rows on the device, and their packed image built by the device (the algorithms'
// input), all from `gpu`: allocations the sweeps below count too.
struct algorithm_input {
  vyre::device_array<std::uint32_t> eclass, op, lens, children;
  alg::raw_rows_ref rows{};
  vyre::egraph::device_image image;
  vyre::device_array<double> cost;
};

template <class Backend>
vyre::expected<algorithm_input> algorithm_input_on(Backend& gpu, const alg::raw_rows& rows,
                                                   const std::vector<double>& cost, cudaStream_t s,
                                                   bool with_image) {
  algorithm_input in;
  const vyre::device_resource_ref memory = gpu.memory_ref();
  VYRE_TRY_ASSIGN(in.eclass, to_device(memory, rows.row_eclass_ids, s));
  VYRE_TRY_ASSIGN(in.op, to_device(memory, rows.row_language_op_ids, s));
  VYRE_TRY_ASSIGN(in.lens, to_device(memory, rows.row_children_lens, s));
  VYRE_TRY_ASSIGN(in.children, to_device(memory, rows.children, s));
  VYRE_TRY_ASSIGN(in.cost, to_device(memory, cost, s));
  in.rows = {in.eclass.get(),   in.op.get(),      in.lens.get(),
             in.children.get(), rows.row_count(), static_cast<std::uint32_t>(rows.children.size())};
  if (with_image) {
    VYRE_TRY_ASSIGN(in.image, alg::build(gpu, in.rows, s));
  }
  return in;
}

// Every allocation of build, congruence and extraction (one-shot and planned) comes from the
// backend: each sweep injects device, pinned and host faults into them and checks after every
// failure that the resource's live allocations, its bytes in use, the pinned leases and the
// default pool are back at their baseline, and that the next call succeeds.
TEST_CASE("fault injection: algorithms build, congruence, extraction and DAG extraction",
          "[reliability][gpu][fault]") {
  using policies = expected_policies<vyre::alloc::caching_pool>;
  using gpu_type = vyre::backend<policies>;
  const alg::raw_rows rows = sample_rows();
  const auto packed = alg::pack_reference(rows.ref());
  REQUIRE(packed.has_value());
  const auto closure = alg::congruence_reference(rows.ref());
  REQUIRE(closure.has_value());
  REQUIRE(closure->merges > 0u);
  std::vector<double> cost(rows.row_count());
  for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 1.0 + static_cast<double>(i % 5);
  const std::vector<std::uint32_t> roots = {200, 201, 250};
  const cuda::std::span<const std::uint32_t> root_span(roots.data(), roots.size());
  const auto extraction = alg::extract_reference(
      rows.ref(), cuda::std::span<const double>(cost.data(), cost.size()), root_span);
  REQUIRE(extraction.has_value());

  const auto check_image = [&](const vyre::egraph::device_image& image,
                               cudaStream_t s) -> vyre::expected<void> {
    std::vector<std::uint32_t> words(static_cast<std::size_t>(image.word_count()), 0xCDCDCDCDu);
    VYRE_CUDA_TRY(
        cudaMemcpyAsync(words.data(), image.words(), words.size() * 4u, cudaMemcpyDeviceToHost, s),
        "test: read image");
    VYRE_CUDA_TRY(cudaStreamSynchronize(s), "test: read image");
    if (words != std::vector<std::uint32_t>(packed->words().begin(), packed->words().end()))
      return vyre::fail(wrong_result("test: device build differs"));
    return {};
  };

  sweep<policies>("algorithms build", [&](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(auto in, algorithm_input_on(gpu, rows, cost, stream.get(), false));
    VYRE_TRY_ASSIGN(const vyre::egraph::device_image image, alg::build(gpu, in.rows, stream.get()));
    return check_image(image, stream.get());
  });
  sweep<policies>(
      "algorithms build (workspace, twice)", [&](gpu_type& gpu) -> vyre::expected<void> {
        VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
        VYRE_TRY_ASSIGN(auto in, algorithm_input_on(gpu, rows, cost, stream.get(), false));
        alg::build_workspace<policies> workspace(gpu, stream.get());
        for (int i = 0; i < 2; ++i) {
          VYRE_TRY_ASSIGN(const vyre::egraph::device_image image,
                          alg::build(gpu, in.rows, workspace));
          VYRE_TRY(check_image(image, stream.get()));
        }
        return {};
      });
  for (const alg::loop_driver driver :
       {alg::loop_driver::flag_readback, alg::loop_driver::conditional_graph}) {
    const char* name = driver == alg::loop_driver::flag_readback
                           ? "algorithms congruence (flag_readback)"
                           : "algorithms congruence (conditional_graph)";
    sweep<policies>(name, [&](gpu_type& gpu) -> vyre::expected<void> {
      VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
      VYRE_TRY_ASSIGN(auto in, algorithm_input_on(gpu, rows, cost, stream.get(), true));
      VYRE_TRY_ASSIGN(const alg::device_congruence_result merged,
                      alg::congruence(gpu, in.image.columns(), stream.get(), driver));
      if (merged.merges != closure->merges)
        return vyre::fail(wrong_result("test: congruence merges differ"));
      return {};
    });
  }
  for (const std::uint32_t single_block_max : {0u, 1u << 30}) {
    const char* name = single_block_max == 0 ? "algorithms extract (grid rounds)"
                                             : "algorithms extract (single block)";
    sweep<policies>(name, [&](gpu_type& gpu) -> vyre::expected<void> {
      VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
      VYRE_TRY_ASSIGN(auto in, algorithm_input_on(gpu, rows, cost, stream.get(), true));
      VYRE_TRY_ASSIGN(const alg::device_extraction_result best,
                      alg::extract(gpu, in.image.columns(), in.cost.get(), root_span, stream.get(),
                                   alg::extract_options{single_block_max, single_block_max}));
      if (best.root_cost != extraction->root_cost)
        return vyre::fail(wrong_result("test: extraction root cost differs"));
      return {};
    });
  }
  alg::dag_options dag_options;
  dag_options.searches = 3;
  dag_options.kick_budget = 200'000;
  const cuda::std::span<const double> cost_span(cost.data(), cost.size());
  const auto dag_on_cpu = alg::extract_dag(rows.ref(), cost_span, root_span, dag_options);
  REQUIRE(dag_on_cpu.has_value());
  sweep<policies>("algorithms extract_dag", [&](gpu_type& gpu) -> vyre::expected<void> {
    VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
    VYRE_TRY_ASSIGN(
        const alg::dag_extraction_result found,
        alg::extract_dag(gpu, rows.ref(), cost_span, root_span, dag_options, stream.get()));
    if (found.choice != dag_on_cpu->choice)
      return vyre::fail(wrong_result("test: GPU DAG selection differs from the CPU's"));
    return {};
  });
  sweep<policies>(
      "algorithms congruence_plan + extract_plan", [&](gpu_type& gpu) -> vyre::expected<void> {
        VYRE_TRY_ASSIGN(auto stream, gpu.acquire_stream());
        VYRE_TRY_ASSIGN(auto in, algorithm_input_on(gpu, rows, cost, stream.get(), true));
        VYRE_TRY_ASSIGN(auto closure_plan, alg::make_congruence_plan(gpu, stream.get()));
        VYRE_TRY_ASSIGN(const alg::congruence_view merged, closure_plan.run(in.image.columns()));
        if (merged.merges != closure->merges)
          return vyre::fail(wrong_result("test: plan congruence merges differ"));
        VYRE_TRY_ASSIGN(auto best_plan, alg::make_extract_plan(gpu, stream.get()));
        VYRE_TRY_ASSIGN(const alg::extraction_view best,
                        best_plan.run(in.image.columns(), in.cost.get(), root_span));
        if (best.root_cost != extraction->root_cost)
          return vyre::fail(wrong_result("test: plan extraction root cost differs"));
        return {};
      });
}

// ---- CUDA faults ----------------------------------------------------------------------------

namespace {
using fault_policies = expected_policies<vyre::alloc::caching_pool>;

// The backend allocates, launches and round-trips a resident buffer correctly.
template <class Backend>
void require_backend_usable(Backend& gpu) {
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  constexpr std::uint32_t n = 10000;
  auto out = gpu.allocate(n * 4u, stream->get());
  REQUIRE(out.has_value());
  fill_words<<<blocks_for(n), 256, 0, stream->get()>>>(out->template as<std::uint32_t>(), n, 99u);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const auto filled = check_fill(out->get(), n, 99u, stream->get());
  if (!filled) FAIL(filled.error().message());
  const std::vector<std::byte> bytes = pattern_bytes(65536, 3);
  auto h = gpu.allocate_resident(bytes.size(), stream->get());
  REQUIRE(h.has_value());
  REQUIRE(gpu.upload(*h, bytes, 0, stream->get()).has_value());
  std::vector<std::byte> back(bytes.size(), std::byte{0xCD});
  REQUIRE(gpu.download(*h, back, 0, stream->get()).has_value());
  CHECK(back == bytes);
  REQUIRE(gpu.free_resident(*h).has_value());
}

long long cycles_for_milliseconds(int milliseconds) {
  int khz = 0;
  REQUIRE(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess);
  return static_cast<long long>(khz) * milliseconds;
}
}  // namespace

TEST_CASE("an invalidated capture is a clear error; stream and backend stay usable",
          "[reliability][gpu][cuda_fault]") {
  auto gpu = acquire_or_fail<vyre::backend<fault_policies>>();
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  constexpr std::uint32_t n = 2048;
  auto out = gpu.allocate(n * 4u, stream->get());
  REQUIRE(out.has_value());
  auto invalidated = captured_graph_expected::capture_on_stream(stream->get(), [&](cudaStream_t s) {
    fill_words<<<blocks_for(n), 256, 0, s>>>(out->as<std::uint32_t>(), n, 1u);
    // A synchronous call on a capturing stream is not capturable: it invalidates the capture.
    (void)cudaStreamSynchronize(s);
  });
  REQUIRE_FALSE(invalidated.has_value());
  INFO(invalidated.error().message());
  CHECK(invalidated.error().code() == errc::cuda_runtime);
  CHECK(invalidated.error().message().find("invalidated") != std::string::npos);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusActive;
  REQUIRE(cudaStreamIsCapturing(stream->get(), &capturing) == cudaSuccess);
  CHECK(capturing == cudaStreamCaptureStatusNone);
  CHECK(cudaGetLastError() == cudaSuccess);
  // The same stream captures and replays again.
  auto graph = captured_graph_expected::capture_on_stream(stream->get(), [&](cudaStream_t s) {
    fill_words<<<blocks_for(n), 256, 0, s>>>(out->as<std::uint32_t>(), n, 5u);
    return cudaGetLastError();
  });
  REQUIRE(graph.has_value());
  REQUIRE(cudaMemsetAsync(out->get(), 0xCD, n * 4u, stream->get()) == cudaSuccess);
  REQUIRE(graph->launch(stream->get()).has_value());
  const auto replayed = check_fill(out->get(), n, 5u, stream->get());
  if (!replayed) FAIL(replayed.error().message());
  require_backend_usable(gpu);
}

// Runs only as the child of the next test: a trap poisons the CUDA context for the rest of
// the process, so the parent re-executes this binary for it.
TEST_CASE("trap child", "[.][trap_child]") {
  const char* role = std::getenv("VYRE_RELIABILITY_CHILD");
  if (role == nullptr || std::string(role) != "trap") {
    SUCCEED("runs only as the child process of the trap test");
    return;
  }
  using child_policies = expected_policies<vyre::alloc::direct>;
  auto gpu = acquire_or_fail<vyre::backend<child_policies>>();
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  const cudaStream_t s = stream->get();
  auto out = gpu.allocate(256, s);
  REQUIRE(out.has_value());
  auto healthy = captured_graph_expected::capture_on_stream(s, [&](cudaStream_t c) {
    fill_words<<<1, 64, 0, c>>>(out->as<std::uint32_t>(), 64, 5u);
    return cudaGetLastError();
  });
  REQUIRE(healthy.has_value());
  REQUIRE(healthy->launch(s).has_value());
  REQUIRE(gpu.synchronize(s).has_value());
  const auto good = check_fill(out->get(), 64, 5u, s);
  REQUIRE(good.has_value());

  auto trapping = captured_graph_expected::capture_on_stream(s, [&](cudaStream_t c) {
    fill_words<<<1, 64, 0, c>>>(out->as<std::uint32_t>(), 64, 6u);
    trap_after_write<<<1, 1, 0, c>>>(out->as<std::uint32_t>());
    return cudaGetLastError();
  });
  REQUIRE(trapping.has_value());
  const auto launched = trapping->launch(s);  // asynchronous: the trap shows at the wait
  const auto synced = gpu.synchronize(s);
  REQUIRE_FALSE((launched.has_value() && synced.has_value()));
  const vyre::error fault = launched ? synced.error() : launched.error();
  std::printf("VYRE_TRAP_CHILD sync: %s\n", fault.message().c_str());
  CHECK(fault.code() == errc::cuda_runtime);
  CHECK(fault.cuda_status() != 0);
  // The error is sticky: the next call that reaches CUDA reports it clearly instead of
  // crashing, and the backend's destructor runs on the dead context without hanging.
  auto after = gpu.allocate(std::size_t{1} << 20, s);
  REQUIRE_FALSE(after.has_value());
  std::printf("VYRE_TRAP_CHILD after: %s\n", after.error().message().c_str());
  CHECK(after.error().cuda_status() != 0);
  std::fflush(stdout);
}

TEST_CASE("a kernel that traps inside a graph replay is a clear error (child process)",
          "[reliability][gpu][cuda_fault]") {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  REQUIRE(length > 0);
  const std::string command = std::string("VYRE_RELIABILITY_CHILD=trap '") +
                              std::string(exe, static_cast<std::size_t>(length)) +
                              "' '[trap_child]' 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char line[512];
  while (std::fgets(line, sizeof(line), pipe) != nullptr) output += line;
  const int status = pclose(pipe);
  INFO("child output:\n" << output);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(output.find("VYRE_TRAP_CHILD sync: ") != std::string::npos);
  CHECK(output.find("VYRE_TRAP_CHILD after: ") != std::string::npos);
  CHECK(output.find("All tests passed") != std::string::npos);
  // This process's context is untouched.
  auto gpu = acquire_or_fail<vyre::backend<fault_policies>>();
  require_backend_usable(gpu);
}

TEST_CASE("cleanup while work is in flight waits for it; handles used after cleanup are refused",
          "[reliability][gpu][cuda_fault]") {
  auto gpu = acquire_or_fail<vyre::backend<fault_policies>>();
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  const cudaStream_t s = stream->get();
  const std::vector<std::byte> bytes = pattern_bytes(std::size_t{1} << 20, 5);
  std::uint32_t first_word = 0;
  std::memcpy(&first_word, bytes.data(), 4);
  auto h = gpu.allocate_resident(bytes.size(), s);
  REQUIRE(h.has_value());
  REQUIRE(gpu.upload(*h, bytes, 0, s).has_value());
  auto out = gpu.allocate(4, s);  // a live device_buffer: stays valid across cleanup
  REQUIRE(out.has_value());
  REQUIRE(cudaMemsetAsync(out->get(), 0xCD, 4, s) == cudaSuccess);
  auto source = gpu.resident_buffer(*h);
  REQUIRE(source.has_value());
  spin_then_copy<<<1, 1, 0, s>>>(reinterpret_cast<const std::uint32_t*>(source->data),
                                 out->as<std::uint32_t>(), cycles_for_milliseconds(200));
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE(gpu.mark_in_use(*h, s).has_value());

  // Freeing under pending work is refused, naming the launches; nothing is freed.
  auto busy = gpu.free_resident(*h);
  REQUIRE_FALSE(busy.has_value());
  CHECK(busy.error().code() == errc::in_use);
  CHECK(busy.error().value_or("pending_launches", 0) == 1u);
  CHECK(gpu.resident().live_buffers() == 1u);

  // cleanup() waits for the device, then releases the resident buffers.
  REQUIRE(gpu.cleanup().has_value());
  std::uint32_t result = 0;
  REQUIRE(cudaMemcpy(&result, out->get(), 4, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(result == first_word + 1u);
  CHECK(gpu.resident().live_buffers() == 0u);
  CHECK(gpu.resident().bytes_in_use() == 0u);

  SECTION("every use of a handle after cleanup is invalid_handle") {
    std::vector<std::byte> back(16);
    const std::vector<vyre::expected<void>> uses = [&] {
      std::vector<vyre::expected<void>> r;
      auto lookup = gpu.resident_buffer(*h);
      r.push_back(lookup ? vyre::expected<void>{} : vyre::fail(lookup.error()));
      r.push_back(gpu.upload(*h, std::span<const std::byte>(bytes).first(16), 0, s));
      r.push_back(gpu.download(*h, back, 0, s));
      r.push_back(gpu.mark_in_use(*h, s));
      r.push_back(gpu.free_resident(*h));
      return r;
    }();
    for (const auto& use : uses) {
      REQUIRE_FALSE(use.has_value());
      INFO(use.error().message());
      CHECK(use.error().code() == errc::invalid_handle);
      CHECK(use.error().fix_hint() != nullptr);
    }
  }
  SECTION("an e-graph image and its view after cleanup") {
    const eg::host_image image = eg::pack(sample_snapshot(1000));
    auto resident = gpu.upload(image);
    REQUIRE(resident.has_value());
    REQUIRE(gpu.kernel_view(*resident).has_value());
    REQUIRE(gpu.cleanup().has_value());
    auto view = gpu.kernel_view(*resident);
    REQUIRE_FALSE(view.has_value());
    CHECK(view.error().code() == errc::invalid_handle);
    auto back = eg::download(gpu, *resident);
    REQUIRE_FALSE(back.has_value());
    CHECK(back.error().code() == errc::invalid_handle);
  }
  SECTION("a handle of another backend is refused as foreign") {
    auto other = vyre::backend<fault_policies>::acquire(0);
    REQUIRE(other.has_value());
    auto foreign = other->allocate_resident(64, nullptr);
    REQUIRE(foreign.has_value());
    auto refused = gpu.resident_buffer(*foreign);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code() == errc::invalid_handle);
    REQUIRE(other->free_resident(*foreign).has_value());
  }
  // The device_buffer outlived cleanup and is returned normally.
  REQUIRE(out->reset().has_value());
  require_backend_usable(gpu);
}

TEMPLATE_TEST_CASE("double frees are refused with a clear error and count nothing twice",
                   "[reliability][gpu][cuda_fault]", vyre::alloc::caching_pool,
                   vyre::alloc::stream_ordered, vyre::alloc::direct) {
  using policies = expected_policies<TestType>;
  auto gpu = acquire_or_fail<vyre::backend<policies>>();
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  const cudaStream_t s = stream->get();
  const leak_counters baseline = counters_of(gpu);

  // A raw pool pointer freed twice.
  auto raw = gpu.memory().try_allocate(4096, s);
  REQUIRE(raw.has_value());
  REQUIRE(gpu.memory().try_deallocate(*raw, 4096, s).has_value());
  auto twice = gpu.memory().try_deallocate(*raw, 4096, s);
  REQUIRE_FALSE(twice.has_value());
  INFO(twice.error().message());
  CHECK(twice.error().code() == errc::invalid_argument);
  CHECK(twice.error().value_or("pointer", 0) == reinterpret_cast<std::uintptr_t>(*raw));
  // A pointer the pool never handed out.
  int on_stack = 0;
  CHECK_FALSE(gpu.memory().try_deallocate(&on_stack, 4, s).has_value());

  // A device_buffer released by hand then freed again through the pool.
  auto buffer = gpu.allocate(8192, s);
  REQUIRE(buffer.has_value());
  void* ptr = buffer->get();
  REQUIRE(buffer->reset().has_value());
  CHECK(buffer->reset().has_value());  // an empty buffer: a no-op
  CHECK_FALSE(gpu.memory().try_deallocate(ptr, 8192, s).has_value());

  // A resident handle freed twice.
  auto h = gpu.allocate_resident(4096, s);
  REQUIRE(h.has_value());
  REQUIRE(gpu.free_resident(*h).has_value());
  auto again = gpu.free_resident(*h);
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().code() == errc::invalid_handle);

  // A pinned lease returned twice.
  auto lease = gpu.acquire_pinned(100);
  REQUIRE(lease.has_value());
  lease->reset();
  lease->reset();

  // Nothing was counted twice: the gauges are back where they started.
  CHECK(counters_of(gpu) == baseline);
  require_backend_usable(gpu);
  CHECK(counters_of(gpu) == baseline);
}

// ---- stress ---------------------------------------------------------------------------------

TEST_CASE("stress: 16 threads mix pool, resident and graph work on their own streams",
          "[reliability][gpu][stress]") {
  constexpr std::size_t threads = 16;
  const std::size_t ops = env_size("VYRE_RELIABILITY_STRESS_OPS", 10000);
  using policies = expected_policies<vyre::alloc::caching_pool>;
  auto gpu = acquire_or_fail<vyre::backend<policies>>();
  const leak_counters baseline = counters_of(gpu);
  const vyre::telemetry_snapshot before = gpu.telemetry().snapshot();

  struct tally {
    std::uint64_t pool_allocations = 0, resident_allocations = 0, uploads = 0, upload_bytes = 0,
                  downloads = 0, download_bytes = 0, replays = 0, recaptures = 0;
  };
  std::vector<tally> tallies(threads);
  std::atomic<std::uint64_t> failures{0};
  std::mutex first_failure_mutex;
  std::string first_failure;
  const auto report = [&](const std::string& what) {
    failures.fetch_add(1);
    std::lock_guard lock(first_failure_mutex);
    if (first_failure.empty()) first_failure = what;
  };

  const auto worker = [&](std::size_t index) {
    tally& t = tallies[index];
    std::mt19937_64 rng(0x5EED0000u + index);
    auto stream = gpu.acquire_stream();
    if (!stream) return report(stream.error().message());
    const cudaStream_t s = stream->get();
    auto counter = gpu.allocate(4, s);
    if (!counter) return report(counter.error().message());
    ++t.pool_allocations;
    if (cudaMemsetAsync(counter->get(), 0, 4, s) != cudaSuccess) return report("memset counter");
    const auto count_replay = [&](cudaStream_t c) {
      add_one<<<1, 1, 0, c>>>(counter->as<std::uint32_t>());
      return cudaGetLastError();
    };
    auto graph = captured_graph_expected::capture_on_stream(s, count_replay);
    if (!graph) return report(graph.error().message());
    std::vector<vyre::device_buffer> live;
    std::vector<std::byte> data, back;
    for (std::size_t i = 0; i < ops && failures.load(std::memory_order_relaxed) == 0; ++i) {
      const std::uint64_t pick = rng() % 192;
      if (pick == 0) {
        // Re-capture while other threads allocate: the pool must not query this stream (it
        // caches blocks freed here) while it captures, or the capture is invalidated.
        auto fresh = captured_graph_expected::capture_on_stream(s, count_replay);
        if (!fresh) return report("re-capture: " + fresh.error().message());
        if (cudaStreamSynchronize(s) != cudaSuccess) return report("sync before re-capture");
        *graph = std::move(*fresh);
        ++t.recaptures;
        continue;
      }
      switch (pick % 3) {
        case 0: {  // pool allocate / free
          if (live.size() < 8 && (live.empty() || rng() % 2 == 0)) {
            const std::size_t bytes = 1 + rng() % (std::size_t{256} << 10);
            auto block = gpu.allocate(bytes, s);
            if (!block) return report(block.error().message());
            ++t.pool_allocations;
            if (cudaMemsetAsync(block->get(), static_cast<int>(index), bytes, s) != cudaSuccess)
              return report("memset block");
            live.push_back(std::move(*block));
          } else {
            const std::size_t victim = rng() % live.size();
            std::swap(live[victim], live.back());
            if (auto freed = live.back().reset(); !freed) return report(freed.error().message());
            live.pop_back();
          }
          break;
        }
        case 1: {  // resident upload (pageable, staged) / sometimes download / free
          const std::size_t bytes = 1 + rng() % (std::size_t{64} << 10);
          data.resize(bytes);
          for (std::size_t b = 0; b < bytes; b += 61)
            data[b] = static_cast<std::byte>((i * 131 + b + index) & 0xFF);
          auto h = gpu.allocate_resident(bytes, s);
          if (!h) return report(h.error().message());
          ++t.resident_allocations;
          if (auto up = gpu.upload(*h, data, 0, s); !up) return report(up.error().message());
          ++t.uploads;
          t.upload_bytes += bytes;
          if (rng() % 8 == 0) {
            back.assign(bytes, std::byte{0xCD});
            if (auto down = gpu.download(*h, back, 0, s); !down)
              return report(down.error().message());
            ++t.downloads;
            t.download_bytes += bytes;
            if (back != data) return report("resident round trip differs");
          }
          if (auto freed = gpu.free_resident(*h); !freed) return report(freed.error().message());
          break;
        }
        default: {  // graph replay
          if (auto launched = graph->launch(s); !launched)
            return report(launched.error().message());
          ++t.replays;
        }
      }
    }
    live.clear();
    std::uint32_t replays = 0;
    if (cudaMemcpyAsync(&replays, counter->get(), 4, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
      return report("read the replay counter");
    if (replays != t.replays)
      return report("replay counter " + std::to_string(replays) + " != replays " +
                    std::to_string(t.replays));
  };

  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < threads; ++i) pool.emplace_back(worker, i);
  for (auto& thread : pool) thread.join();
  INFO(first_failure);
  REQUIRE(failures.load() == 0u);

  tally total;
  for (const tally& t : tallies) {
    total.pool_allocations += t.pool_allocations;
    total.resident_allocations += t.resident_allocations;
    total.uploads += t.uploads;
    total.upload_bytes += t.upload_bytes;
    total.downloads += t.downloads;
    total.download_bytes += t.download_bytes;
    total.replays += t.replays;
    total.recaptures += t.recaptures;
  }
  const vyre::telemetry_snapshot after = gpu.telemetry().snapshot();
  CHECK(after.h2d_operations - before.h2d_operations == total.uploads);
  CHECK(after.h2d_bytes - before.h2d_bytes == total.upload_bytes);
  CHECK(after.d2h_operations - before.d2h_operations == total.downloads);
  CHECK(after.d2h_bytes - before.d2h_bytes == total.download_bytes);
  CHECK(after.allocations - before.allocations ==
        total.pool_allocations + total.resident_allocations);
  CHECK((after.pool_hits - before.pool_hits) + (after.pool_misses - before.pool_misses) ==
        total.pool_allocations + total.resident_allocations);
  CHECK(after.peak_device_bytes >= after.current_device_bytes);
  CHECK(counters_of(gpu) == baseline);
  std::printf(
      "stress: %zu threads x %zu ops: %llu pool allocations, %llu resident uploads "
      "(%llu bytes), %llu downloads, %llu graph replays, %llu re-captures\n",
      threads, ops, static_cast<unsigned long long>(total.pool_allocations),
      static_cast<unsigned long long>(total.uploads),
      static_cast<unsigned long long>(total.upload_bytes),
      static_cast<unsigned long long>(total.downloads),
      static_cast<unsigned long long>(total.replays),
      static_cast<unsigned long long>(total.recaptures));
}
