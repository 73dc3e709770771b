// SPDX-License-Identifier: Apache-2.0
//! @file
//! One CUDA device: its capabilities, read once (`device_caps`), and a scoped guard that makes
//! it current on the calling thread. Host code; compiles with any C++20 compiler.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/runtime/launch_plan.hpp"

namespace vyre {

//! What a device can do, read when a backend acquires it.
struct device_caps {
  int ordinal = 0;
  //! NUL-terminated device name (a plain array keeps the struct trivially copyable, which
  //! `cuda::std::expected` needs under nvcc).
  char name[256] = {};
  int compute_major = 0;
  int compute_minor = 0;
  int sm_count = 0;
  bool cooperative_launch = false;
  bool memory_pools = false;  //!< cudaMallocAsync / cudaMemPool_t support
  std::size_t total_memory = 0;
  std::size_t free_memory_at_acquire = 0;
  int l2_bytes = 0;
  int warp_size = 32;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_grid_x = 0;
  std::size_t shared_memory_per_block = 0;  //!< without opt-in
  std::size_t shared_memory_per_block_optin =
      0;  //!< with cudaFuncAttributeMaxDynamicSharedMemorySize
  std::size_t shared_memory_per_sm = 0;

  //! Compute capability as major * 10 + minor (90 for sm_90).
  constexpr int compute_capability() const noexcept { return compute_major * 10 + compute_minor; }
  //! The limits `plan_grid` needs.
  constexpr launch_limits limits() const noexcept {
    return {static_cast<std::uint32_t>(max_threads_per_block),
            static_cast<std::uint32_t>(max_grid_x)};
  }
};

namespace detail {
//! Sets `ordinal` current for the guard's lifetime and restores the previous device after.
//! Skips both calls when the device is already current (the common case costs one TLS read).
class device_guard {
 public:
  explicit device_guard(int ordinal) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != ordinal) {
      status_ = cudaSetDevice(ordinal);
      switched_ = status_ == cudaSuccess && previous_ >= 0;
    }
  }
  ~device_guard() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;
  //! Whether the device could be made current.
  expected<void> status() const noexcept {
    return cuda_check(status_, "device_guard: cudaSetDevice failed");
  }

 private:
  int previous_ = -1;
  bool switched_ = false;
  cudaError_t status_ = cudaSuccess;
};

inline expected<int> device_attribute(cudaDeviceAttr attribute, int ordinal) noexcept {
  int value = 0;
  VYRE_CUDA_TRY(cudaDeviceGetAttribute(&value, attribute, ordinal),
                "device_caps: cudaDeviceGetAttribute failed");
  return value;
}

inline std::size_t to_size(int value) noexcept {
  return value < 0 ? 0 : static_cast<std::size_t>(value);
}
}  // namespace detail

//! Reads the capabilities of device `ordinal` and initialises its primary context.
//! @returns `errc::unsupported` when no driver or no device is present,
//!          `errc::invalid_argument` naming the ordinal and the device count when the ordinal
//!          is out of range, `errc::cuda_runtime` for any other failure.
inline expected<device_caps> query_device(int ordinal) noexcept {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver ||
      (status == cudaSuccess && count == 0))
    return fail(
        error(errc::unsupported, "backend::acquire: no usable CUDA device")
            .cuda(status_source::cuda_runtime, static_cast<int>(status), cudaGetErrorName(status))
            .fix("run on a machine with an NVIDIA GPU and a driver that supports this "
                 "CUDA version (nvidia-smi should list the GPU)"));
  VYRE_CUDA_TRY(status, "backend::acquire: cudaGetDeviceCount failed");
  if (ordinal < 0 || ordinal >= count)
    return fail(error(errc::invalid_argument, "backend::acquire: device ordinal out of range")
                    .with("ordinal", static_cast<std::uint64_t>(static_cast<std::int64_t>(ordinal)))
                    .with("device_count", static_cast<std::uint64_t>(count))
                    .fix("pass an ordinal in [0, device_count), e.g. 0"));
  detail::device_guard guard(ordinal);
  VYRE_TRY(guard.status());
  VYRE_CUDA_TRY(cudaInitDevice(ordinal, 0, 0), "backend::acquire: cudaInitDevice failed");
  // cudaFree(nullptr) binds the primary context to this thread, so driver-API calls (module
  // loads) find a current context.
  VYRE_CUDA_TRY(cudaFree(nullptr), "backend::acquire: initialising the primary context failed");

  device_caps caps;
  caps.ordinal = ordinal;
  VYRE_CUDA_TRY(
      cudaDeviceGetAttribute(&caps.compute_major, cudaDevAttrComputeCapabilityMajor, ordinal),
      "device_caps: compute capability");
  VYRE_TRY_ASSIGN(caps.compute_minor,
                  detail::device_attribute(cudaDevAttrComputeCapabilityMinor, ordinal));
  VYRE_TRY_ASSIGN(caps.sm_count, detail::device_attribute(cudaDevAttrMultiProcessorCount, ordinal));
  VYRE_TRY_ASSIGN(const int cooperative,
                  detail::device_attribute(cudaDevAttrCooperativeLaunch, ordinal));
  caps.cooperative_launch = cooperative != 0;
  VYRE_TRY_ASSIGN(const int pools,
                  detail::device_attribute(cudaDevAttrMemoryPoolsSupported, ordinal));
  caps.memory_pools = pools != 0;
  VYRE_TRY_ASSIGN(caps.l2_bytes, detail::device_attribute(cudaDevAttrL2CacheSize, ordinal));
  VYRE_TRY_ASSIGN(caps.warp_size, detail::device_attribute(cudaDevAttrWarpSize, ordinal));
  VYRE_TRY_ASSIGN(caps.max_threads_per_block,
                  detail::device_attribute(cudaDevAttrMaxThreadsPerBlock, ordinal));
  VYRE_TRY_ASSIGN(caps.max_threads_per_sm,
                  detail::device_attribute(cudaDevAttrMaxThreadsPerMultiProcessor, ordinal));
  VYRE_TRY_ASSIGN(caps.max_grid_x, detail::device_attribute(cudaDevAttrMaxGridDimX, ordinal));
  VYRE_TRY_ASSIGN(const int smem_block,
                  detail::device_attribute(cudaDevAttrMaxSharedMemoryPerBlock, ordinal));
  VYRE_TRY_ASSIGN(const int smem_optin,
                  detail::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, ordinal));
  VYRE_TRY_ASSIGN(const int smem_sm,
                  detail::device_attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor, ordinal));
  caps.shared_memory_per_block = detail::to_size(smem_block);
  caps.shared_memory_per_block_optin = detail::to_size(smem_optin);
  caps.shared_memory_per_sm = detail::to_size(smem_sm);
  cudaDeviceProp props{};
  VYRE_CUDA_TRY(cudaGetDeviceProperties(&props, ordinal), "device_caps: device name");
  static_assert(sizeof(props.name) == sizeof(caps.name));
  std::memcpy(caps.name, props.name, sizeof(caps.name));
  caps.name[sizeof(caps.name) - 1] = '\0';
  VYRE_CUDA_TRY(cudaMemGetInfo(&caps.free_memory_at_acquire, &caps.total_memory),
                "device_caps: cudaMemGetInfo failed");
  return caps;
}

}  // namespace vyre
