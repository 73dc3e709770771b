// SPDX-License-Identifier: Apache-2.0
//! @file
//! The CUDA driver API without linking libcuda: the few driver entry points vyre uses are
//! fetched once through the runtime (`cudaGetDriverEntryPointByVersion`, through
//! `vyre/core/cuda_compat.hpp`), so a program that never loads a module needs no driver at
//! build or link time, and a machine without a driver gets an error instead of a loader failure.
//! Plus `cuda_driver_check`, the driver twin of core's `cuda_check`.
#pragma once

#include <cstring>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/cuda_compat.hpp"
#include "vyre/core/error.hpp"

namespace vyre {

//! The driver entry points vyre uses. Obtain with `driver_api::get()`.
struct driver_api {
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*module_load_data_ex)(CUmodule*, const void*, unsigned int, CUjit_option*,
                                  void**) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                            unsigned int, unsigned int, unsigned int, CUstream, void**,
                            void**) = nullptr;

  //! The process-wide table, loaded on first use (thread-safe).
  //! @returns `errc::unsupported` when the runtime cannot reach a driver that has these
  //!          entry points (no driver installed, or one older than CUDA 12).
  static expected<const driver_api*> get() noexcept;
};

namespace detail {
struct loaded_driver_api {
  driver_api api;
  expected<void> status;
};

template <class Fn>
expected<void> fetch_driver_entry(Fn& fn, const char* symbol, unsigned int version) noexcept {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult query = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t status =
      cuda_compat::driver_entry_point(symbol, &pointer, version, cudaEnableDefault, &query);
  if (status != cudaSuccess)
    return fail(cuda_error(status, "driver_api: the CUDA runtime cannot reach the driver")
                    .about(symbol)
                    .fix("install an NVIDIA driver that supports this CUDA version"));
  if (query != cudaDriverEntryPointSuccess || pointer == nullptr)
    return fail(error(errc::unsupported, "driver_api: the driver lacks an entry point")
                    .with("query_result", static_cast<std::uint64_t>(query))
                    .about(symbol)
                    .fix("update the NVIDIA driver"));
  static_assert(sizeof(Fn) == sizeof(void*));
  std::memcpy(&fn, &pointer, sizeof(fn));  // object to function pointer, without UB
  return {};
}

inline loaded_driver_api load_driver_api() noexcept {
  loaded_driver_api result{};
  result.status = [&]() -> expected<void> {
    VYRE_TRY(fetch_driver_entry(result.api.get_error_name, "cuGetErrorName", 6000));
    VYRE_TRY(fetch_driver_entry(result.api.module_load_data_ex, "cuModuleLoadDataEx", 2010));
    VYRE_TRY(fetch_driver_entry(result.api.module_unload, "cuModuleUnload", 2000));
    VYRE_TRY(fetch_driver_entry(result.api.module_get_function, "cuModuleGetFunction", 2000));
    VYRE_TRY(fetch_driver_entry(result.api.launch_kernel, "cuLaunchKernel", 4000));
    return {};
  }();
  return result;
}
}  // namespace detail

inline expected<const driver_api*> driver_api::get() noexcept {
  static const detail::loaded_driver_api table = detail::load_driver_api();
  if (!table.status) return fail(table.status.error());
  return &table.api;
}

//! `errc::cuda_driver` (or `errc::out_of_memory` for CUDA_ERROR_OUT_OF_MEMORY) for a failed
//! driver call, carrying the status and its `cuGetErrorName` name (when a driver is reachable).
//! @param context static text naming the call and its purpose.
inline error cuda_driver_error(CUresult status, const char* context) noexcept {
  const char* name = nullptr;
  if (const auto api = driver_api::get(); api && (*api)->get_error_name != nullptr)
    if ((*api)->get_error_name(status, &name) != CUDA_SUCCESS) name = nullptr;
  const errc code = status == CUDA_ERROR_OUT_OF_MEMORY ? errc::out_of_memory : errc::cuda_driver;
  return error(code, context).cuda(status_source::cuda_driver, static_cast<int>(status), name);
}

//! Checks a driver status: success, or the error described above.
inline expected<void> cuda_driver_check(CUresult status, const char* context) noexcept {
  return detail::check_status(status, CUDA_SUCCESS, cuda_driver_error, context);
}

}  // namespace vyre

//! Evaluates a CUDA driver call and returns its error from the enclosing function (which must
//! return `vyre::expected<...>`) when it fails.
#define VYRE_CU_TRY(call, context) \
  VYRE_DETAIL_STATUS_TRY(CUresult, CUDA_SUCCESS, ::vyre::cuda_driver_error, call, context)
