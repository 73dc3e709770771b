// SPDX-License-Identifier: Apache-2.0
//! @file
//! What the algorithms' kernels share beyond the library's device plumbing
//! (`vyre/detail/device_support.cuh`, whose names the algorithms use unqualified): how an
//! iterative algorithm stops, and the status word its kernels report bad input through.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/std/atomic>

#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/detail/device_support.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! How an iterative device algorithm decides to stop.
enum class loop_driver : std::uint8_t {
  flag_readback,     //!< one small status readback per round
  conditional_graph  //!< a CUDA graph with a conditional WHILE node (no host round trip)
};

namespace detail {

using vyre::detail::block_size;
using vyre::detail::copy_on_device;
using vyre::detail::copy_to_host;
using vyre::detail::cub_call;
using vyre::detail::find_sorted;
using vyre::detail::grid_for;
using vyre::detail::iota_kernel;
using vyre::detail::launched;
using vyre::detail::order_capture_after;
using vyre::detail::pinned_array;
using vyre::detail::resident_grid_for;
using vyre::detail::runtime_of;
using vyre::detail::runtime_ref;
using vyre::detail::same_backend;
using vyre::detail::wait_on_exit;

//! Where kernels report bad input: the smallest offending index per kind (u32 max = none).
struct device_status {
  std::uint32_t bad_child;  //!< a child entry naming no e-class
  std::uint32_t bad_row;    //!< a row whose children range is inconsistent / bad cost
  std::uint32_t bad_root;   //!< a root naming no e-class
  // Every thread of a round reads the three fields above (`input_ok`) while the unions update
  // the two below: 128 bytes apart, those reads never share a line with the unions' atomics.
  // Explicit words rather than alignment, so every byte is a field that gets written.
  std::uint32_t apart[29];
  std::uint32_t changed;      //!< set when a round changed something
  std::uint32_t reserved;     //!< 0
  unsigned long long merges;  //!< successful unions so far
};
static_assert(offsetof(device_status, changed) == 128 && sizeof(device_status) == 144,
              "device_status: no padding, the union fields on a line of their own");

inline constexpr device_status clean_status{0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, {}, 0, 0, 0};

}  // namespace detail
}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
