// SPDX-License-Identifier: Apache-2.0
//! @file
//! Checking CUDA runtime calls. Host-only (any C++20 compiler with the CUDA include path);
//! builds the error (and its message) only on failure.
#pragma once

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_compat.hpp"
#include "vyre/core/error.hpp"

namespace vyre {

//! `errc::cuda_runtime` (or `errc::out_of_memory` for cudaErrorMemoryAllocation) for a failed
//! runtime call. Clears the thread's last-error slot so the failure is not reported twice;
//! a sticky (context-corrupting) error stays sticky, as CUDA defines.
//! @param context static text naming the call and its purpose.
inline error cuda_error(cudaError_t status, const char* context) noexcept {
  (void)cudaGetLastError();
  const errc code = status == cudaErrorMemoryAllocation ? errc::out_of_memory : errc::cuda_runtime;
  return error(code, context)
      .cuda(status_source::cuda_runtime, static_cast<int>(status), cudaGetErrorName(status));
}

namespace detail {
//! Success, or the failure `to_error(status, context)` makes of a status other than `success`:
//! `cuda_check` and the driver's `cuda_driver_check` are this for their status type.
template <class Status, class ToError>
expected<void> check_status(Status status, Status success, ToError to_error,
                            const char* context) noexcept {
  if (status == success) [[likely]]
    return {};
  return fail(to_error(status, context));
}
}  // namespace detail

//! Checks a runtime status: success, or the error described above.
inline expected<void> cuda_check(cudaError_t status, const char* context) noexcept {
  return detail::check_status(status, cudaSuccess, cuda_error, context);
}

}  // namespace vyre

//! Evaluates `call`, which returns a `Status`, and returns `to_error(status, context)` from the
//! enclosing function when the status is not `success` (`VYRE_CUDA_TRY`, `VYRE_CU_TRY`).
#define VYRE_DETAIL_STATUS_TRY(Status, success, to_error, call, context) \
  do {                                                                   \
    if (const Status vyre_status_ = (call); vyre_status_ != (success))   \
      return ::vyre::fail(to_error(vyre_status_, context));              \
  } while (false)

//! Evaluates a CUDA runtime call and returns its error from the enclosing function (which must
//! return `vyre::expected<...>`) when it fails.
#define VYRE_CUDA_TRY(call, context) \
  VYRE_DETAIL_STATUS_TRY(cudaError_t, cudaSuccess, ::vyre::cuda_error, call, context)
