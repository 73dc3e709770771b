// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device plumbing of the algorithms: a move-only stream-ordered buffer, CUB two-phase calls
//! with fallible scratch, launch checks, and the status word kernels report through.
#pragma once

// nvcc (C++20) infers __host__ __device__ for the implicit special members of host-only
// aggregates (std::vector or device_buffer members) held in cuda::std::expected, then warns
// (20011, 20013) that they call host-only members. They only ever run on the host.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/std/atomic>

#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"

namespace vyre::algorithms {

//! A move-only device array of `T`, allocated and freed in stream order (cudaMallocAsync), so a
//! temporary lives exactly as long as the work that uses it. Freed on every path.
template <class T>
class device_buffer {
 public:
  device_buffer() noexcept = default;
  device_buffer(std::nullptr_t) = delete;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        stream_(other.stream_) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      stream_ = other.stream_;
    }
    return *this;
  }
  ~device_buffer() { reset(); }

  //! `count` elements (uninitialised) on `stream`; zero elements allocate nothing.
  //! @param what static text naming the buffer, for the error.
  static expected<device_buffer> allocate(std::size_t count, cudaStream_t stream,
                                          const char* what) noexcept {
    device_buffer buffer;
    buffer.stream_ = stream;
    if (count == 0) return buffer;
    if (count > SIZE_MAX / sizeof(T))
      return fail(
          error(errc::overflow, what)
              .with("elements", count)
              .fix("the buffer size overflows size_t: process the input in smaller shards"));
    void* raw = nullptr;
    const cudaError_t status = testing::inject_allocation_failure(testing::allocation_kind::device)
                                   ? cudaErrorMemoryAllocation
                                   : cudaMallocAsync(&raw, count * sizeof(T), stream);
    if (status != cudaSuccess)
      return fail(
          cuda_error(status, what).with("elements", count).with("bytes", count * sizeof(T)));
    buffer.data_ = static_cast<T*>(raw);
    buffer.size_ = count;
    return buffer;
  }

  T* get() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  cudaStream_t stream() const noexcept { return stream_; }
  //! Gives up ownership (the caller frees with cudaFreeAsync).
  T* release() noexcept {
    size_ = 0;
    return std::exchange(data_, nullptr);
  }
  void reset() noexcept {
    if (data_ != nullptr) (void)cudaFreeAsync(data_, stream_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  cudaStream_t stream_ = nullptr;
};

//! How an iterative device algorithm decides to stop.
enum class loop_driver : std::uint8_t {
  flag_readback,     //!< one small status readback per round
  conditional_graph  //!< a CUDA graph with a conditional WHILE node (no host round trip)
};

namespace detail {

//! Page-locked host memory (copies from and to it are truly asynchronous), freed on every path.
template <class T>
class pinned_buffer {
 public:
  pinned_buffer() noexcept = default;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  pinned_buffer(pinned_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~pinned_buffer() { reset(); }

  static expected<pinned_buffer> allocate(std::size_t count, const char* what) noexcept {
    pinned_buffer buffer;
    if (count == 0) return buffer;
    if (count > SIZE_MAX / sizeof(T))
      return fail(
          error(errc::overflow, what)
              .with("elements", count)
              .fix("the buffer size overflows size_t: process the input in smaller shards"));
    void* raw = nullptr;
    const cudaError_t status = testing::inject_allocation_failure(testing::allocation_kind::pinned)
                                   ? cudaErrorMemoryAllocation
                                   : cudaMallocHost(&raw, count * sizeof(T));
    if (status != cudaSuccess)
      return fail(
          cuda_error(status, what).with("elements", count).with("bytes", count * sizeof(T)));
    buffer.data_ = static_cast<T*>(raw);
    buffer.size_ = count;
    return buffer;
  }
  //! Makes room for `count` elements (contents are not kept).
  expected<void> ensure(std::size_t count, const char* what) noexcept {
    if (count <= size_) return {};
    VYRE_TRY_ASSIGN(pinned_buffer bigger, allocate(count, what));
    *this = std::move(bigger);
    return {};
  }
  T* get() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  void reset() noexcept {
    if (data_ != nullptr) (void)cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
  }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

// Owning CUDA event and stream handles, the graph module's `unique_graph` idiom.
struct event_deleter {
  void operator()(cudaEvent_t event) const noexcept { (void)cudaEventDestroy(event); }
};
struct stream_deleter {
  void operator()(cudaStream_t stream) const noexcept { (void)cudaStreamDestroy(stream); }
};
using owned_event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, event_deleter>;
using owned_stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_deleter>;

//! A timing-free event.
inline expected<owned_event> make_event(const char* what) noexcept {
  cudaEvent_t event = nullptr;
  VYRE_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), what);
  return owned_event(event);
}
//! A private non-blocking stream (to capture on: capturing the caller's stream would fail on
//! the legacy default stream and would disturb work already queued there).
inline expected<owned_stream> make_stream(const char* what) noexcept {
  cudaStream_t stream = nullptr;
  VYRE_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), what);
  return owned_stream(stream);
}

inline constexpr unsigned block_size = 256;

inline unsigned grid_for(std::uint64_t items) noexcept {
  const std::uint64_t blocks = (items + block_size - 1) / block_size;
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks > 0x7FFFFFFFu ? 0x7FFFFFFFu : blocks));
}

//! Checks the launch that was just made.
inline expected<void> launched(const char* what) noexcept {
  return cuda_check(cudaGetLastError(), what);
}

//! Runs a CUB device-wide call twice (size query, then work) with stream-ordered scratch.
//! `call(void* temp, std::size_t& bytes)` returns the cudaError_t of the CUB call.
template <class Call>
expected<void> cub_call(Call&& call, cudaStream_t stream, const char* what) {
  std::size_t bytes = 0;
  VYRE_CUDA_TRY(call(nullptr, bytes), what);
  VYRE_TRY_ASSIGN(device_buffer<unsigned char> scratch,
                  device_buffer<unsigned char>::allocate(bytes == 0 ? 1 : bytes, stream, what));
  VYRE_CUDA_TRY(call(scratch.get(), bytes), what);
  return {};
}

template <class T>
expected<void> copy_to_host(T* host, const T* device, std::size_t count, cudaStream_t stream,
                            const char* what) {
  if (count == 0) return {};
  VYRE_CUDA_TRY(cudaMemcpyAsync(host, device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
                what);
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

//! Where kernels report bad input: the smallest offending index per kind (u32 max = none).
struct device_status {
  std::uint32_t changed;      //!< set when a round changed something
  std::uint32_t bad_child;    //!< a child entry naming no e-class
  std::uint32_t bad_row;      //!< a row whose children range is inconsistent / bad cost
  std::uint32_t bad_root;     //!< a root naming no e-class
  unsigned long long merges;  //!< successful unions so far
};

inline constexpr device_status clean_status{0, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0};

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
VYRE_KERNEL void init_status_kernel(device_status* status) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *status = clean_status;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void iota_kernel(std::uint32_t* out, std::uint32_t count) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    out[i] = static_cast<std::uint32_t>(i);
}

//! dense_child[i] = group index of child i (0 plus a status flag when it names no group).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void dense_children_kernel(image_columns image, std::uint32_t* dense_child,
                                       device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.child_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t g =
        find_sorted(image.group_eclass_ids(), image.group_count(), image.children()[i]);
    if (g == image.group_count()) {
      atomicMin(&status->bad_child, static_cast<std::uint32_t>(i));
      dense_child[i] = 0;
    } else {
      dense_child[i] = g;
    }
  }
}

}  // namespace detail
}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
