// SPDX-License-Identifier: Apache-2.0
// GPU tests of launches and modules: waves from a plan, occupancy block size, cooperative
// launches and their refusal, PTX generated with NVRTC at test time and loaded through the
// driver (memory cache, disk cache round trip), and telemetry consistency.
#include <catch2/catch.hpp>

#include <cooperative_groups.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <nvrtc.h>

#include <vyre/runtime.cuh>

#include "require_ok.cuh"

namespace runtime_gpu_launch_test {

// Counts how often each element is visited: every element must be visited exactly once.
VYRE_KERNEL void visit(vyre::wave_range wave, std::uint32_t* counts) {
  const std::uint64_t local = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (local < wave.count) atomicAdd(&counts[wave.first + local], 1u);
}

// Phase 1: every block writes its index; grid-wide barrier; phase 2: block 0 sums them.
VYRE_KERNEL void grid_sum(std::uint32_t* slots, std::uint64_t* total) {
  namespace cg = cooperative_groups;
  cg::grid_group grid = cg::this_grid();
  if (threadIdx.x == 0) slots[blockIdx.x] = blockIdx.x + 1;
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    std::uint64_t sum = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) sum += slots[b];
    *total = sum;
  }
}

VYRE_KERNEL void noop() {}

}  // namespace runtime_gpu_launch_test

// A component that plugs into backend::upload / backend::kernel_view through the ADL hooks.
namespace runtime_gpu_extension {
struct words {
  std::vector<std::uint32_t> values;
};
struct resident_words {
  vyre::resident_handle handle;
  std::size_t count;
};
struct words_view {
  const std::uint32_t* data;
  std::size_t count;
};
template <class Backend>
typename Backend::template result<resident_words> upload_to_backend(Backend& gpu, const words& w) {
  auto h = gpu.resident().allocate_copy(std::as_bytes(std::span(w.values)), nullptr);
  if (!h)
    return vyre::apply_error_policy<typename Backend::error_policy>(
        vyre::expected<resident_words>(vyre::fail(h.error())));
  return vyre::apply_error_policy<typename Backend::error_policy>(
      vyre::expected<resident_words>(resident_words{*h, w.values.size()}));
}
template <class Backend>
words_view kernel_view_of(Backend& gpu, const resident_words& r) {
  const auto span = gpu.resident().lookup(r.handle);
  return {span ? reinterpret_cast<const std::uint32_t*>(span->data) : nullptr, r.count};
}
}  // namespace runtime_gpu_extension

namespace {
using namespace runtime_gpu_launch_test;
using test_backend =
    vyre::backend<vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                 vyre::on_error::return_expected>>;

test_backend acquire_or_fail() {
  return vyre_test::acquire_or_fail<test_backend>();
}
using vyre_test::acquire_stream_or_fail;

// extern "C": the kernel's name in the PTX is "fill_affine".
constexpr const char* fill_source = R"(
extern "C" __global__ void fill_affine(unsigned* out, unsigned n, unsigned a, unsigned b) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * i + b;
}
)";

struct temp_dir {
  std::filesystem::path path;
  explicit temp_dir(const char* name) {
    path = std::filesystem::temp_directory_path() /
           (std::string(name) + "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    std::filesystem::remove_all(path);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// Runs fill_affine from `module` over `n` words and checks every word.
void run_fill(test_backend& gpu, CUmodule module, unsigned n, unsigned a, unsigned b) {
  auto fn = gpu.modules().function(module, "fill_affine");
  REQUIRE_OK(fn);
  auto stream = acquire_stream_or_fail(gpu);
  auto out = gpu.allocate(n * sizeof(unsigned), stream->get());
  REQUIRE_OK(out);
  REQUIRE(cudaMemsetAsync(out->get(), 0xFF, out->size(), stream->get()) == cudaSuccess);
  void* ptr = out->get();
  void* args[] = {&ptr, &n, &a, &b};
  REQUIRE_OK(gpu.modules().launch(*fn, dim3((n + 127) / 128), dim3(128), 0, stream->get(), args));
  std::vector<unsigned> host(n, 0);
  REQUIRE(cudaMemcpyAsync(host.data(), out->get(), out->size(), cudaMemcpyDeviceToHost,
                          stream->get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
  for (unsigned i = 0; i < n; ++i)
    if (host[i] != a * i + b) FAIL("word " << i << " is " << host[i]);
}
}  // namespace

TEST_CASE("waves from a plan visit every element exactly once", "[runtime][gpu][launch]") {
  auto gpu = acquire_or_fail();
  auto stream = acquire_stream_or_fail(gpu);
  const std::uint64_t n = 100'003;
  // A tiny grid limit forces many waves.
  const auto plan = vyre::plan_grid(n, 128, {1024, 5});
  REQUIRE_OK(plan);
  REQUIRE(plan->waves > 100);
  auto counts = gpu.allocate(n * 4, stream->get());
  REQUIRE_OK(counts);
  REQUIRE(cudaMemsetAsync(counts->get(), 0, counts->size(), stream->get()) == cudaSuccess);
  gpu.telemetry().reset();
  REQUIRE_OK(gpu.launch_waves(visit, *plan, 0, stream->get(), counts->as<std::uint32_t>()));
  CHECK(gpu.telemetry().snapshot().kernel_launches == plan->waves);
  std::vector<std::uint32_t> host(n, 7);
  REQUIRE(cudaMemcpyAsync(host.data(), counts->get(), n * 4, cudaMemcpyDeviceToHost,
                          stream->get()) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
  for (std::uint64_t i = 0; i < n; ++i)
    if (host[i] != 1) FAIL("element " << i << " visited " << host[i] << " times");

  // The device's own limits: one wave.
  const auto device_plan = gpu.plan(n, 256);
  REQUIRE_OK(device_plan);
  CHECK(device_plan->waves == 1);
}

TEST_CASE("the occupancy block size is a warp multiple within the device limit",
          "[runtime][gpu][launch]") {
  auto gpu = acquire_or_fail();
  const auto block = vyre::occupancy_block_size(visit);
  REQUIRE_OK(block);
  CHECK(*block % 32 == 0);
  CHECK(*block >= 32);
  CHECK(*block <= static_cast<std::uint32_t>(gpu.caps().max_threads_per_block));
  const auto plan = gpu.plan_for(visit, 1'000'000);
  REQUIRE_OK(plan);
  CHECK(plan->block == *block);
  CHECK(plan->waves == 1);
  const auto limited = vyre::occupancy_block_size(visit, 0, 64);
  REQUIRE_OK(limited);
  CHECK(*limited <= 64);
}

TEST_CASE("a bad launch configuration is a checked error", "[runtime][gpu][launch]") {
  auto gpu = acquire_or_fail();
  const auto bad = gpu.launch(noop, vyre::launch_config{dim3(1), dim3(4096), 0, nullptr});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == vyre::errc::cuda_runtime);
  CHECK(gpu.telemetry().snapshot().kernel_launches == 0);
  REQUIRE_OK(gpu.launch(noop, vyre::launch_config{dim3(1), dim3(32), 0, nullptr}));
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(gpu.telemetry().snapshot().kernel_launches == 1);
}

TEST_CASE("cooperative launches synchronise the grid; devices without them are refused",
          "[runtime][gpu][launch]") {
  auto gpu = acquire_or_fail();
  auto stream = acquire_stream_or_fail(gpu);
  const auto max_blocks = vyre::max_cooperative_blocks(grid_sum, 128, 0, gpu.caps());
  REQUIRE_OK(max_blocks);
  const auto blocks = static_cast<unsigned>(gpu.caps().sm_count);
  REQUIRE(*max_blocks >= blocks);
  auto slots = gpu.allocate(blocks * 4, stream->get());
  auto total = gpu.allocate(8, stream->get());
  REQUIRE_OK(slots);
  REQUIRE_OK(total);
  REQUIRE(cudaMemsetAsync(total->get(), 0xFF, 8, stream->get()) == cudaSuccess);
  const vyre::launch_config config{dim3(blocks), dim3(128), 0, stream->get()};
  if (gpu.caps().cooperative_launch) {
    REQUIRE_OK(gpu.launch_cooperative(grid_sum, config, slots->as<std::uint32_t>(),
                                      total->as<std::uint64_t>()));
    std::uint64_t host = 0;
    REQUIRE(cudaMemcpyAsync(&host, total->get(), 8, cudaMemcpyDeviceToHost, stream->get()) ==
            cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
    CHECK(host == std::uint64_t{blocks} * (blocks + 1) / 2);

    // A grid larger than can be resident is refused before launching.
    const vyre::launch_config too_big{dim3(static_cast<unsigned>(*max_blocks + 1)), dim3(128), 0,
                                      stream->get()};
    const auto refused = gpu.launch_cooperative(grid_sum, too_big, slots->as<std::uint32_t>(),
                                                total->as<std::uint64_t>());
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code() == vyre::errc::invalid_argument);
    CHECK(refused.error().value_or("max_resident_blocks", 0) == *max_blocks);
  }
  // The same launch on a device that lacks cooperative launch: unsupported, nothing launched.
  vyre::device_caps without = gpu.caps();
  without.cooperative_launch = false;
  const auto launches = gpu.telemetry().snapshot().kernel_launches;
  const auto unsupported =
      vyre::launch_cooperative(without, &gpu.telemetry(), grid_sum, config,
                               slots->as<std::uint32_t>(), total->as<std::uint64_t>());
  REQUIRE_FALSE(unsupported.has_value());
  CHECK(unsupported.error().code() == vyre::errc::unsupported);
  CHECK(unsupported.error().message().find("cooperative") != std::string::npos);
  CHECK(gpu.telemetry().snapshot().kernel_launches == launches);
}

TEST_CASE("PTX generated with NVRTC loads, runs and is cached by content",
          "[runtime][gpu][modules]") {
  auto gpu = acquire_or_fail();
  auto ptx = gpu.compile(fill_source);
  REQUIRE_OK(ptx);
  CHECK(ptx->find(".entry fill_affine") != std::string::npos);
  auto module = gpu.load_ptx(*ptx);
  REQUIRE_OK(module);
  run_fill(gpu, *module, 10'000, 3, 11);
  // The same bytes again: the loaded module, no second driver load.
  const std::string copy = *ptx;
  auto again = gpu.load_ptx(copy);
  REQUIRE_OK(again);
  CHECK(*again == *module);
  const auto stats = gpu.modules().stats();
  CHECK(stats.loads == 1);
  CHECK(stats.memory_hits == 1);
  CHECK(stats.compiles == 1);
  CHECK(gpu.modules().loaded_modules() == 1);
  // Different bytes (one more comment line): a different module.
  auto other = gpu.load_ptx(copy + "\n// another module\n");
  REQUIRE_OK(other);
  CHECK(*other != *module);
  CHECK(gpu.modules().loaded_modules() == 2);
  run_fill(gpu, *other, 1000, 5, 1);
  CHECK(gpu.telemetry().snapshot().kernel_launches == 2);
}

TEST_CASE("a cubin compiled by NVRTC for this device loads and runs", "[runtime][gpu][modules]") {
  auto gpu = acquire_or_fail();
  nvrtcProgram program = nullptr;
  REQUIRE(nvrtcCreateProgram(&program, fill_source, "fill.cu", 0, nullptr, nullptr) ==
          NVRTC_SUCCESS);
  const std::string arch =
      "--gpu-architecture=sm_" + std::to_string(gpu.caps().compute_capability());
  const char* options[] = {arch.c_str()};
  REQUIRE(nvrtcCompileProgram(program, 1, options) == NVRTC_SUCCESS);
  std::size_t size = 0;
  REQUIRE(nvrtcGetCUBINSize(program, &size) == NVRTC_SUCCESS);
  std::vector<std::byte> cubin(size);
  REQUIRE(nvrtcGetCUBIN(program, reinterpret_cast<char*>(cubin.data())) == NVRTC_SUCCESS);
  REQUIRE(nvrtcDestroyProgram(&program) == NVRTC_SUCCESS);
  auto module = gpu.load_cubin(cubin);
  REQUIRE_OK(module);
  run_fill(gpu, *module, 4096, 7, 2);
  auto again = gpu.load_cubin(cubin);
  REQUIRE_OK(again);
  CHECK(*again == *module);
}

TEST_CASE("module errors name the problem", "[runtime][gpu][modules]") {
  auto gpu = acquire_or_fail();
  const auto broken = gpu.compile("__global__ void k() { this is not C++; }");
  REQUIRE_FALSE(broken.has_value());
  CHECK(broken.error().code() == vyre::errc::invalid_argument);
  CHECK(broken.error().subject().find("error") != std::string_view::npos);

  const auto garbage = gpu.load_ptx(".version 99.9\n.target sm_999\nnot ptx at all\n");
  REQUIRE_FALSE(garbage.has_value());
  CHECK(garbage.error().code() == vyre::errc::cuda_driver);
  CHECK(garbage.error().cuda_status() != 0);
  CHECK(garbage.error().cuda_status_name() != nullptr);

  const auto empty = gpu.load_ptx("");
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().code() == vyre::errc::invalid_argument);

  auto module = gpu.modules().compile_and_load(fill_source);
  REQUIRE_OK(module);
  const auto missing = gpu.modules().function(*module, "no_such_kernel");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == vyre::errc::not_found);
  CHECK(missing.error().subject() == "no_such_kernel");
}

TEST_CASE("the disk cache answers a second backend's compilation", "[runtime][gpu][modules]") {
  temp_dir dir("vyre-ptx-cache-test");
  std::string first_ptx;
  {
    auto gpu = acquire_or_fail();
    gpu.modules().use_disk_cache(dir.path);
    auto ptx = gpu.compile(fill_source);
    REQUIRE_OK(ptx);
    first_ptx = *ptx;
    const auto stats = gpu.modules().stats();
    CHECK(stats.compiles == 1);
    CHECK(stats.disk_hits == 0);
    CHECK(stats.disk_writes == 1);
  }
  {
    // A fresh backend finds it through VYRE_PTX_CACHE_DIR.
    const char* previous = std::getenv("VYRE_PTX_CACHE_DIR");
    const std::string saved = previous != nullptr ? previous : "";
    REQUIRE(setenv("VYRE_PTX_CACHE_DIR", dir.path.c_str(), 1) == 0);
    auto gpu = acquire_or_fail();
    auto resolved = gpu.modules().use_disk_cache_from_environment();
    if (previous != nullptr)
      setenv("VYRE_PTX_CACHE_DIR", saved.c_str(), 1);
    else
      unsetenv("VYRE_PTX_CACHE_DIR");
    REQUIRE_OK(resolved);
    CHECK(*resolved == dir.path);
    auto ptx = gpu.compile(fill_source);
    REQUIRE_OK(ptx);
    CHECK(*ptx == first_ptx);
    const auto stats = gpu.modules().stats();
    CHECK(stats.compiles == 0);
    CHECK(stats.disk_hits == 1);
    auto module = gpu.load_ptx(*ptx);
    REQUIRE_OK(module);
    run_fill(gpu, *module, 257, 1, 0);
    // Other options are another entry: compiled, not answered from the disk.
    const std::vector<std::string> options{"-DVYRE_UNUSED=1"};
    REQUIRE_OK(gpu.compile(fill_source, options));
    CHECK(gpu.modules().stats().compiles == 1);
  }
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) {
    CHECK(e.path().extension() == ".ptx");
    ++entries;
  }
  CHECK(entries == 2);
}

TEST_CASE("telemetry agrees with what was done and exports it", "[runtime][gpu][telemetry]") {
  auto gpu = acquire_or_fail();
  auto stream = acquire_stream_or_fail(gpu);
  gpu.telemetry().reset();
  for (int i = 0; i < 25; ++i)
    REQUIRE_OK(gpu.launch(noop, vyre::launch_config{dim3(1), dim3(32), 0, stream->get()}));
  gpu.telemetry().record_graph_launch();  // how other components record theirs
  REQUIRE_OK(gpu.synchronize(stream->get()));
  std::vector<std::byte> data(1000, std::byte{9});
  auto h = gpu.resident().allocate_copy(data, stream->get());
  REQUIRE_OK(h);
  std::vector<std::byte> back(1000);
  REQUIRE_OK(gpu.download(*h, back, 0, stream->get()));
  CHECK(back == data);
  const auto s = gpu.telemetry().snapshot();
  CHECK(s.kernel_launches == 25);
  CHECK(s.graph_launches == 1);
  CHECK(s.h2d_operations == 1);
  CHECK(s.h2d_bytes == 1000);
  CHECK(s.d2h_operations == 1);
  CHECK(s.d2h_bytes == 1000);
  CHECK(s.sync_points >= 2);
  CHECK(s.current_device_bytes >= 1000);
  const std::string text = gpu.prometheus();
  CHECK(text.find("vyre_kernel_launches_total{device=\"0\"} 25\n") != std::string::npos);
  CHECK(text.find("vyre_h2d_bytes_total{device=\"0\"} 1000\n") != std::string::npos);
}

TEST_CASE("components plug into backend::upload and backend::kernel_view",
          "[runtime][gpu][backend]") {
  auto gpu = acquire_or_fail();
  const runtime_gpu_extension::words w{{5, 6, 7, 8}};
  auto resident = gpu.upload(w);
  REQUIRE_OK(resident);
  const auto view = gpu.kernel_view(*resident);
  REQUIRE(view.data != nullptr);
  CHECK(view.count == 4);
  std::vector<std::uint32_t> back(4, 0);
  REQUIRE(cudaMemcpy(back.data(), view.data, 16, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(back == w.values);
  CHECK(gpu.telemetry().snapshot().h2d_operations == 1);
}
