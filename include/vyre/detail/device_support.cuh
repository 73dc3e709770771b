// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device plumbing every component's kernels share (`vyre::detail`, as CUB keeps `cub/detail/`):
//! the runtime services they allocate from (`runtime_ref`: the backend's device resource, pinned
//! pool, stream and event pools, telemetry), pinned staging buffers, CUB two-phase calls with
//! fallible scratch, grid sizes, launch checks and device copies.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/checked.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/runtime/backend.cuh"
#include "vyre/runtime/device_array.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::detail {

//! The runtime services a component's device code draws on, taken from one backend: its allocation
//! policy's device resource, pinned staging pool, stream and event pools and telemetry. A
//! plain view: the backend must outlive every object made with it.
struct runtime_ref {
  device_resource_ref memory;
  pinned_pool* pinned = nullptr;
  stream_pool* streams = nullptr;
  event_pool* events = nullptr;
  telemetry_counters* telemetry = nullptr;
  unsigned sm_count = 0;  //!< the backend device's SMs (`device_caps::sm_count`)
  //! Shared memory a block may opt into (`device_caps::shared_memory_per_block_optin`).
  std::size_t shared_memory_optin = 0;

  //! `count` elements of `T` from the allocation policy, on `stream`.
  template <class T>
  expected<device_array<T>> allocate(std::size_t count, cudaStream_t stream,
                                     const char* what) const noexcept {
    return device_array<T>::allocate(memory, count, stream, what);
  }
  //! Counts a host wait.
  void synced() const noexcept {
    if (telemetry != nullptr) telemetry->record_sync();
  }
};

//! Orders the leased `capture` stream after the work enqueued so far on `stream`, before a graph
//! is captured on it and launched on `stream`. Launch order alone is what CUDA needs; the wait
//! also gives the capture stream the same view of `stream`'s stream-ordered allocations (a
//! leased stream carries the history of earlier leases; compute-sanitizer checks graph nodes
//! captured on it against that view). Keep the returned event lease until the graph is launched:
//! a lease synchronises before it goes back to its pool, and returning it at once would make the
//! host wait for the work on `stream` instead of capturing meanwhile.
inline expected<event_lease> order_capture_after(const runtime_ref& runtime, cudaStream_t capture,
                                                 cudaStream_t stream) {
  VYRE_TRY_ASSIGN(event_lease ready, runtime.events->acquire());
  VYRE_CUDA_TRY(cudaEventRecord(ready.get(), stream), "capture: record the work stream");
  VYRE_CUDA_TRY(cudaStreamWaitEvent(capture, ready.get(), 0), "capture: order after it");
  return ready;
}

//! The runtime services of `gpu`.
template <policy_bundle P>
runtime_ref runtime_of(backend<P>& gpu) noexcept {
  return {gpu.memory_ref(),
          &gpu.pinned(),
          &gpu.streams(),
          &gpu.events(),
          &gpu.telemetry(),
          static_cast<unsigned>(gpu.caps().sm_count),
          gpu.caps().shared_memory_per_block_optin};
}

//! Whether `made_with` was made from `gpu` (a workspace or plan used with another
//! backend would free into the wrong pools).
template <policy_bundle P>
expected<void> same_backend(backend<P>& gpu, const runtime_ref& made_with, const char* what) {
  if (made_with.memory == gpu.memory_ref()) return {};
  return fail(error(errc::invalid_argument, what)
                  .fix("pass the backend the workspace or plan was created with"));
}

//! `count` elements of `T` in a leased pinned block (page-locked: copies from and to it are
//! truly asynchronous), returned to the backend's pinned pool on destruction.
template <class T>
class pinned_array {
 public:
  // User-provided (not defaulted): nvcc infers host-device for a template's defaulted members
  // and then warns that they call the host-only lease.
  pinned_array() noexcept {}
  pinned_array(pinned_array&& other) noexcept
      : lease_(std::move(other.lease_)), count_(std::exchange(other.count_, 0)) {}
  pinned_array& operator=(pinned_array&& other) noexcept {
    lease_ = std::move(other.lease_);
    count_ = std::exchange(other.count_, 0);
    return *this;
  }
  ~pinned_array() {}

  static expected<pinned_array> allocate(const runtime_ref& runtime, std::size_t count,
                                         const char* what) noexcept {
    pinned_array array;
    if (count == 0) return array;
    if (count > SIZE_MAX / sizeof(T))
      return fail(
          error(errc::overflow, what)
              .with("elements", count)
              .fix("the buffer size overflows size_t: process the input in smaller shards"));
    auto lease = runtime.pinned->acquire(count * sizeof(T));
    if (!lease) {
      error reported = lease.error();
      return fail(reported.about(what).with("elements", count));
    }
    array.lease_ = std::move(*lease);
    array.count_ = count;
    return array;
  }
  //! Makes room for `count` elements (contents are not kept).
  expected<void> ensure(const runtime_ref& runtime, std::size_t count, const char* what) noexcept {
    if (count <= count_) return {};
    VYRE_TRY_ASSIGN(pinned_array bigger, allocate(runtime, count, what));
    *this = std::move(bigger);
    return {};
  }
  T* get() const noexcept { return reinterpret_cast<T*>(lease_.data()); }
  std::size_t size() const noexcept { return count_; }

 private:
  pinned_lease lease_;
  std::size_t count_ = 0;
};

//! Waits for `stream` when destroyed while armed. Declared after a leased pinned block that
//! asynchronous copies use, it keeps the block from going back to the pool before they are
//! done when a call returns early with an error; `disarm()` once a readback has waited.
class wait_on_exit {
 public:
  explicit wait_on_exit(cudaStream_t stream) noexcept : stream_(stream) {}
  wait_on_exit(const wait_on_exit&) = delete;
  wait_on_exit& operator=(const wait_on_exit&) = delete;
  ~wait_on_exit() {
    if (armed_) (void)cudaStreamSynchronize(stream_);
  }
  void disarm() noexcept { armed_ = false; }

 private:
  cudaStream_t stream_;
  bool armed_ = true;
};

inline constexpr unsigned block_size = 256;

//! `for (i = this thread's first item; i < count; i += the grid's thread count)`: every
//! pipeline kernel's loop, correct for any grid size (see `resident_grid_for`).
#define VYRE_DETAIL_GRID_LOOP(i, count)                                                     \
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (count); \
       i += std::uint64_t{gridDim.x} * blockDim.x)

inline unsigned grid_for(std::uint64_t items) noexcept {
  const std::uint64_t blocks = (items + block_size - 1) / block_size;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks > 0x7FFFFFFFu ? 0x7FFFFFFFu : blocks));
}

//! A grid for a grid-stride loop over `items` that is no larger than what the current device
//! keeps resident at once (`blocks_per_sm` blocks of `block_size` per SM). Kernels that read
//! their inputs from a device parameter block pay those dependent loads once per thread; with a
//! thread per item they would lengthen every item's latency chain (about 1.45x on extraction's
//! relaxation rounds at 16M rows, H100).
inline unsigned resident_grid_for(const runtime_ref& runtime, std::uint64_t items,
                                  unsigned blocks_per_sm = 8) noexcept {
  const std::uint64_t resident = std::uint64_t{runtime.sm_count} * blocks_per_sm;
  const unsigned grid = grid_for(items);
  return resident != 0 && grid > resident ? static_cast<unsigned>(resident) : grid;
}

//! Checks the launch that was just made.
inline expected<void> launched(const char* what) noexcept {
  return cuda_check(cudaGetLastError(), what);
}

//! Runs a CUB device-wide call twice (size query, then work) with stream-ordered scratch.
//! `call(void* temp, std::size_t& bytes)` returns the cudaError_t of the CUB call.
template <class Call>
expected<void> cub_call(const runtime_ref& runtime, Call&& call, cudaStream_t stream,
                        const char* what) {
  std::size_t bytes = 0;
  VYRE_CUDA_TRY(call(nullptr, bytes), what);
  VYRE_TRY_ASSIGN(device_array<unsigned char> scratch,
                  runtime.allocate<unsigned char>(bytes == 0 ? 1 : bytes, stream, what));
  VYRE_CUDA_TRY(call(scratch.get(), bytes), what);
  return {};
}

//! Copies `count` elements to the host and waits for them (a counted sync point).
template <class T>
expected<void> copy_to_host(const runtime_ref& runtime, T* host, const T* device, std::size_t count,
                            cudaStream_t stream, const char* what) {
  if (count == 0) return {};
  VYRE_CUDA_TRY(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
                what);
  if (runtime.telemetry != nullptr) runtime.telemetry->record_d2h(count * sizeof(T));
  runtime.synced();
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), what);
  return {};
}

template <class T>
expected<void> copy_on_device(T* to, const T* from, std::size_t count, cudaStream_t stream,
                              const char* what) {
  if (count == 0) return {};
  VYRE_CUDA_TRY(cudaMemcpyAsync(to, from, count * sizeof(T), cudaMemcpyDeviceToDevice, stream),
                what);
  return {};
}

//! Index of `id` in the ascending `ids[0, count)`, or `count` when absent.
VYRE_HOST_DEVICE inline std::uint32_t find_sorted(const std::uint32_t* ids, std::uint32_t count,
                                                  std::uint32_t id) noexcept {
  std::uint32_t lo = 0, hi = count;
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < count && ids[lo] == id ? lo : count;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void iota_kernel(std::uint32_t* out, std::uint32_t count) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<std::uint32_t>(i);
}

}  // namespace vyre::detail

#include "vyre/detail/epilogue.hpp"
