// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::backend<Policies>`: one CUDA device and everything vyre keeps for it: the allocation
//! policy's device resource, the pinned staging pool, the resident store, stream and event
//! pools, telemetry and loaded modules. Move-only; every backend has a unique non-zero id that
//! its resident handles carry.
//!
//!     auto gpu = vyre::backend<>::acquire(0);             // throws vyre::error_exception
//!     auto stream = gpu.acquire_stream();
//!     auto buffer = gpu.allocate(1 << 20, stream.get());  // vyre::device_buffer, RAII
//!     std::puts(gpu.prometheus().c_str());
//!
//! Public calls apply the error policy (throw, or return `cuda::std::expected`); the
//! components reached through `memory()`, `resident()`, `streams()`, ... return
//! `vyre::expected` for library code that composes them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/launch.cuh"
#include "vyre/runtime/launch_plan.hpp"
#include "vyre/runtime/memory.hpp"
#include "vyre/runtime/modules.hpp"
#include "vyre/runtime/pinned.hpp"
#include "vyre/runtime/resident.hpp"
#include "vyre/runtime/streams.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! Sizes and caps of a backend's pools.
struct backend_options {
  device_memory_options memory{};
  std::size_t pinned_retained_cap = default_pinned_retained_cap;
  std::size_t stream_cap = default_lease_pool_cap;
  std::size_t event_cap = default_lease_pool_cap;
  //! Resident budget in bytes; unset: 90% of the device's total memory.
  std::optional<std::size_t> resident_budget{};
};

namespace detail {
inline std::uint32_t next_backend_id() noexcept {
  static std::atomic<std::uint32_t> next{1};
  std::uint32_t id = next.fetch_add(1, std::memory_order_relaxed);
  if (id == 0) id = next.fetch_add(1, std::memory_order_relaxed);  // 0 means "no backend"
  return id;
}

//! Everything a backend owns, at a stable address (leases and handles point into it).
//! Members are destroyed in reverse order: modules, resident buffers, events, streams,
//! pinned memory, device memory, then telemetry.
template <class Resource>
struct backend_state {
  backend_state(device_caps device, const backend_options& options)
      : caps(std::move(device)),
        id(next_backend_id()),
        memory(caps.ordinal, &telemetry, options.memory),
        pinned(options.pinned_retained_cap),
        streams(caps.ordinal, &telemetry, options.stream_cap),
        events(caps.ordinal, &telemetry, options.event_cap),
        resident(id, caps.ordinal, device_resource_ref(memory), &pinned, &telemetry,
                 caps.total_memory),
        modules(caps.ordinal, caps.compute_capability(), &telemetry) {
    if (options.resident_budget) resident.set_budget(*options.resident_budget);
  }

  device_caps caps;
  std::uint32_t id;
  telemetry_counters telemetry;
  Resource memory;
  pinned_pool pinned;
  stream_pool streams;
  event_pool events;
  resident_store resident;
  module_cache modules;
};
}  // namespace detail

//! One device under policies `P` (`vyre::policies<Alloc, Staging, OnError>`).
template <policy_bundle P = policies<>>
class backend {
 public:
  using policies_type = P;
  using alloc_policy = typename P::alloc_policy;
  using staging_policy = typename P::staging_policy;
  using error_policy = typename P::error_policy;
  //! The device resource of the allocation policy.
  using resource_type = resource_for_t<alloc_policy>;
  //! What a public call returning `T` returns under the error policy.
  template <class T>
  using result = typename P::template result<T>;

  //! Acquires device `ordinal`: reads its capabilities and creates the pools.
  //! @throws / returns `errc::unsupported` without a driver or device, `errc::invalid_argument`
  //!         naming the ordinal and the device count for a bad ordinal.
  static result<backend> acquire(int ordinal = 0, const backend_options& options = {}) {
    return apply_error_policy<error_policy>(make(ordinal, options));
  }

  // User-provided (not defaulted): nvcc would otherwise infer __host__ __device__ special
  // members for a type held in cuda::std::expected and reject the host-only unique_ptr.
  backend(backend&& other) noexcept : state_(std::move(other.state_)) {}
  backend& operator=(backend&& other) noexcept {
    state_ = std::move(other.state_);
    return *this;
  }
  backend(const backend&) = delete;
  backend& operator=(const backend&) = delete;
  ~backend() {}  // NOLINT(modernize-use-equals-default): see above

  //! Unique non-zero id of this backend (0 only for a moved-from backend).
  std::uint32_t id() const noexcept { return state_ ? state_->id : 0; }
  const device_caps& caps() const noexcept { return state_->caps; }
  int device() const noexcept { return state_->caps.ordinal; }
  //! The policy's name, e.g. "alloc::caching_pool".
  static constexpr const char* allocation_policy_name() noexcept {
    return resource_type::policy_name;
  }

  //! Live counters; other components record their launches and copies here.
  telemetry_counters& telemetry() noexcept { return state_->telemetry; }
  const telemetry_counters& telemetry() const noexcept { return state_->telemetry; }
  //! Prometheus exposition of the counters, labelled with the device ordinal.
  std::string prometheus() const {
    return to_prometheus(state_->telemetry.snapshot(),
                         prometheus_label("device", std::to_string(device())));
  }

  //! Components, for library code (their calls return `vyre::expected`).
  resource_type& memory() noexcept { return state_->memory; }
  device_resource_ref memory_ref() noexcept { return device_resource_ref(state_->memory); }
  pinned_pool& pinned() noexcept { return state_->pinned; }
  stream_pool& streams() noexcept { return state_->streams; }
  event_pool& events() noexcept { return state_->events; }
  resident_store& resident() noexcept { return state_->resident; }
  module_cache& modules() noexcept { return state_->modules; }

  //! Creates what first use would: context, one stream and event, pool blocks.
  result<void> warmup() { return apply_error_policy<error_policy>(do_warmup()); }
  //! Waits for the device, then returns everything held: resident buffers, loaded modules,
  //! cached device and pinned blocks, idle streams and events, host-lane helper threads.
  //! Leased objects and live `device_buffer`s stay valid.
  result<void> cleanup() { return apply_error_policy<error_policy>(do_cleanup()); }

  //! Device memory from the allocation policy, returned on destruction (RAII).
  result<device_buffer> allocate(std::size_t bytes, cudaStream_t stream = nullptr) {
    return apply_error_policy<error_policy>(do_allocate(bytes, stream));
  }
  result<stream_lease> acquire_stream() {
    return apply_error_policy<error_policy>(state_->streams.acquire());
  }
  result<event_lease> acquire_event() {
    return apply_error_policy<error_policy>(state_->events.acquire());
  }
  result<pinned_lease> acquire_pinned(std::size_t bytes) {
    return apply_error_policy<error_policy>(state_->pinned.acquire(bytes));
  }
  //! Waits for `stream` (counted as a sync point).
  result<void> synchronize(cudaStream_t stream) {
    state_->telemetry.record_sync();
    return apply_error_policy<error_policy>(cuda_check(
        cudaStreamSynchronize(stream), "backend::synchronize: cudaStreamSynchronize failed"));
  }

  //! Resident store (see `resident_store` for the semantics).
  result<resident_handle> allocate_resident(std::size_t bytes, cudaStream_t stream = nullptr) {
    return apply_error_policy<error_policy>(state_->resident.allocate(bytes, stream));
  }
  result<resident_span> resident_buffer(resident_handle h) const {
    return apply_error_policy<error_policy>(state_->resident.lookup(h));
  }
  result<void> upload(resident_handle h, std::span<const std::byte> source, std::size_t offset = 0,
                      cudaStream_t stream = nullptr) {
    return apply_error_policy<error_policy>(state_->resident.upload(h, source, offset, stream));
  }
  result<void> download(resident_handle h, std::span<std::byte> destination, std::size_t offset = 0,
                        cudaStream_t stream = nullptr) {
    return apply_error_policy<error_policy>(
        state_->resident.download(h, destination, offset, stream));
  }
  result<void> mark_in_use(resident_handle h, cudaStream_t stream) {
    return apply_error_policy<error_policy>(state_->resident.mark_in_use(h, stream));
  }
  result<void> free_resident(resident_handle h) {
    return apply_error_policy<error_policy>(state_->resident.free(h));
  }
  result<void> clear_resident() {
    return apply_error_policy<error_policy>(state_->resident.clear());
  }

  //! Extension point for components built on the runtime: `gpu.upload(x)` calls
  //! `upload_to_backend(gpu, x)` found by argument-dependent lookup in `x`'s namespace (the
  //! e-graph image does this), and `gpu.kernel_view(r)` calls `kernel_view_of(gpu, r)`. The
  //! hook applies the error policy itself (`backend::result<T>`).
  template <class Source>
  requires requires(backend& b, const Source& s) { upload_to_backend(b, s); }
  decltype(auto) upload(const Source& source) { return upload_to_backend(*this, source); }
  template <class Resident>
  requires requires(backend& b, const Resident& r) { kernel_view_of(b, r); }
  decltype(auto) kernel_view(const Resident& resident) { return kernel_view_of(*this, resident); }

  //! Modules (see `module_cache`).
  result<CUmodule> load_ptx(std::string_view ptx) {
    return apply_error_policy<error_policy>(state_->modules.load_ptx(ptx));
  }
  result<CUmodule> load_cubin(std::span<const std::byte> cubin) {
    return apply_error_policy<error_policy>(state_->modules.load_cubin(cubin));
  }
  result<std::string> compile(std::string_view source, std::span<const std::string> options = {}) {
    return apply_error_policy<error_policy>(state_->modules.compile(source, options));
  }

  //! Launch planning and launches (recorded in telemetry).
  result<grid_plan> plan(std::uint64_t elements, std::uint32_t block) const {
    return apply_error_policy<error_policy>(plan_grid(elements, block, state_->caps.limits()));
  }
  template <class... Params>
  result<grid_plan> plan_for(void (*kernel)(Params...), std::uint64_t elements,
                             std::size_t dynamic_shared_bytes = 0) const {
    return apply_error_policy<error_policy>(
        plan_for_occupancy(kernel, elements, state_->caps, dynamic_shared_bytes));
  }
  template <class... Params, class... Args>
  result<void> launch(void (*kernel)(Params...), const launch_config& config, Args&&... args) {
    return apply_error_policy<error_policy>(
        vyre::launch(&state_->telemetry, kernel, config, std::forward<Args>(args)...));
  }
  template <class... Params, class... Args>
  result<void> launch_waves(void (*kernel)(wave_range, Params...), const grid_plan& plan,
                            std::size_t shared_bytes, cudaStream_t stream, const Args&... args) {
    return apply_error_policy<error_policy>(
        vyre::launch_waves(&state_->telemetry, kernel, plan, shared_bytes, stream, args...));
  }
  template <class... Params, class... Args>
  result<void> launch_cooperative(void (*kernel)(Params...), const launch_config& config,
                                  Args&&... args) {
    return apply_error_policy<error_policy>(vyre::launch_cooperative(
        state_->caps, &state_->telemetry, kernel, config, std::forward<Args>(args)...));
  }

 private:
  using state_type = detail::backend_state<resource_type>;
  explicit backend(std::unique_ptr<state_type> state) noexcept : state_(std::move(state)) {}

  static expected<backend> make(int ordinal, const backend_options& options) noexcept {
    VYRE_TRY_ASSIGN(device_caps caps, query_device(ordinal));
    std::unique_ptr<state_type> state;
    try {
      if (testing::inject_allocation_failure(testing::allocation_kind::host))
        throw std::bad_alloc();
      state = std::make_unique<state_type>(std::move(caps), options);
    } catch (...) {
      return fail(error(errc::out_of_memory, "backend::acquire: host allocation failed")
                      .with("bytes", sizeof(state_type)));
    }
    if constexpr (std::is_same_v<resource_type, stream_ordered_resource>)
      VYRE_TRY(state->memory.status());
    return backend(std::move(state));
  }

  expected<device_buffer> do_allocate(std::size_t bytes, cudaStream_t stream) noexcept {
    VYRE_TRY_ASSIGN(void* ptr, state_->memory.try_allocate(bytes, stream));
    return device_buffer(device_resource_ref(state_->memory), ptr, bytes, stream);
  }

  expected<void> do_warmup() noexcept {
    VYRE_TRY_ASSIGN(stream_lease stream, state_->streams.acquire());
    VYRE_TRY_ASSIGN(event_lease event, state_->events.acquire());
    {
      VYRE_TRY_ASSIGN(device_buffer block, do_allocate(std::size_t{1} << 20, stream.get()));
      VYRE_TRY_ASSIGN(pinned_lease staging, state_->pinned.acquire(std::size_t{1} << 20));
      VYRE_CUDA_TRY(cudaMemsetAsync(block.get(), 0, block.size(), stream.get()),
                    "backend::warmup: cudaMemsetAsync failed");
      VYRE_CUDA_TRY(cudaEventRecord(event.get(), stream.get()),
                    "backend::warmup: cudaEventRecord failed");
      VYRE_CUDA_TRY(cudaEventSynchronize(event.get()), "backend::warmup: synchronise failed");
    }
    return {};
  }

  expected<void> do_cleanup() noexcept {
    detail::device_guard guard(device());
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaDeviceSynchronize(), "backend::cleanup: cudaDeviceSynchronize failed");
    state_->telemetry.record_sync();
    expected<void> result = state_->resident.clear();
    state_->resident.stop_host_lanes();
    const auto keep_first = [&result](expected<void> r) {
      if (!r && result) result = std::move(r);
    };
    keep_first(state_->modules.clear());
    keep_first(state_->memory.release_cached());
    keep_first(state_->pinned.release_cached());
    keep_first(state_->streams.release_idle());
    keep_first(state_->events.release_idle());
    return result;
  }

  std::unique_ptr<state_type> state_;
};

}  // namespace vyre
