// SPDX-License-Identifier: Apache-2.0
//! @file
//! Bottom-up tree-cost extraction on the device. A round updates every e-class in parallel:
//! the minimum over its group's rows (a segmented reduction over the packed image's groups) of
//! node cost + the current cost of each child class, written in place when it is lower. Costs
//! only decrease, so in-place (chaotic) rounds reach the same least fixpoint as synchronous
//! ones, in no more rounds; `#classes + 1` rounds bound the loop, and still-decreasing costs
//! after that mean a negative-cost cycle (an error). A final pass picks, per class, the cheapest
//! row with ties to the smallest row index: exactly the CPU reference's costs and choices
//! (children are summed in the same order, so the doubles are bit-identical).
//!
//! Small e-graphs run the whole fixpoint inside one thread block (one launch, no round trips);
//! larger ones run one launch per round with one status readback.
#pragma once

// nvcc (C++20) infers __host__ __device__ for the implicit special members of host-only
// aggregates (std::vector or device_buffer members) held in cuda::std::expected, then warns
// (20011, 20013) that they call host-only members. They only ever run on the host.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif

#include <cstdint>
#include <limits>
#include <utility>

#include <cuda/atomic>
#include <cuda/std/span>
#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/reference.hpp"
#include "vyre/algorithms/rows.hpp"
#include "vyre/core/error.hpp"

namespace vyre::algorithms {

//! What the device extraction found.
struct device_extraction_result {
  device_buffer<double> cost;          //!< per group (e-class ids ascending): tree cost or +inf
  device_buffer<std::uint32_t> choice; //!< per group: chosen row, or `no_row`
  double root_cost = 0;                //!< sum of the roots' costs, in the order given
  std::uint32_t rounds = 0;            //!< rounds until no cost changed (that round included)
};

//! Extraction knobs.
struct extract_options {
  //! E-graphs with at most this many groups run the fixpoint in a single thread block.
  std::uint32_t single_block_max_groups = 16384;
  //! `extract_plan` only (its rounds are row-parallel): the single block also needs at most
  //! this many rows (a few per thread); larger e-graphs loop over grid-wide rounds.
  std::uint32_t single_block_max_rows = 4096;
};

namespace detail {

using atomic_double = cuda::atomic_ref<double, cuda::thread_scope_device>;

VYRE_DEVICE inline double read_cost(double* cost, std::uint32_t g) noexcept {
  return atomic_double(cost[g]).load(cuda::std::memory_order_relaxed);
}

//! node cost + each child's current class cost, left to right (the reference's order).
VYRE_DEVICE inline double row_cost(const packed_ref& image, const double* node_cost,
                                   const std::uint32_t* dense_child, double* cost,
                                   std::uint32_t r) noexcept {
  double total = node_cost[r];
  const std::uint32_t* child = dense_child + image.children_offset[r];
  for (std::uint32_t k = 0; k < image.children_length[r]; ++k) total += read_cost(cost, child[k]);
  return total;
}

//! One in-place relaxation of group g; returns whether its cost dropped.
VYRE_DEVICE inline bool relax_group(const packed_ref& image, const double* node_cost,
                                    const std::uint32_t* dense_child, double* cost,
                                    std::uint32_t g) noexcept {
  double best = read_cost(cost, g);
  const double before = best;
  for (std::uint32_t k = image.group_offsets[g]; k < image.group_offsets[g + 1]; ++k) {
    const double total = row_cost(image, node_cost, dense_child, cost, image.group_rows[k]);
    if (total < best) best = total;
  }
  if (best < before) {
    atomic_double(cost[g]).store(best, cuda::std::memory_order_relaxed);
    return true;
  }
  return false;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void extract_setup_kernel(packed_ref image, const double* node_cost, double* cost,
                                      device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    if (!isfinite(node_cost[i])) atomicMin(&status->bad_row, static_cast<std::uint32_t>(i));
    if (i < image.group_count()) cost[i] = cuda::std::numeric_limits<double>::infinity();
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void relax_round_kernel(packed_ref image, const double* node_cost,
                                    const std::uint32_t* dense_child, double* cost,
                                    device_status* status) {
  bool dropped = false;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.group_count(); i += std::uint64_t{gridDim.x} * blockDim.x)
    dropped |= relax_group(image, node_cost, dense_child, cost, static_cast<std::uint32_t>(i));
  if (dropped) status->changed = 1;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void clear_changed_kernel(device_status* status) { status->changed = 0; }

//! The whole fixpoint in one block: rounds separated by __syncthreads, stopping when a round
//! changes nothing or after `round_limit` rounds (status->changed then stays 1).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(1024) relax_single_block_kernel(packed_ref image, const double* node_cost,
                                           const std::uint32_t* dense_child, double* cost,
                                           std::uint32_t round_limit, device_status* status,
                                           std::uint32_t* rounds_out) {
  __shared__ int changed;
  std::uint32_t rounds = 0;
  for (;;) {
    if (threadIdx.x == 0) changed = 0;
    __syncthreads();
    bool dropped = false;
    for (std::uint32_t g = threadIdx.x; g < image.group_count(); g += blockDim.x)
      dropped |= relax_group(image, node_cost, dense_child, cost, g);
    if (dropped) atomicOr(&changed, 1);
    __syncthreads();
    ++rounds;
    const bool again = changed != 0;
    __syncthreads();  // everyone read `changed` before it is cleared
    if (!again) break;
    if (rounds == round_limit) {
      if (threadIdx.x == 0) status->changed = 1;
      break;
    }
  }
  if (threadIdx.x == 0) *rounds_out = rounds;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void choose_kernel(packed_ref image, const double* node_cost,
                               const std::uint32_t* dense_child, double* cost,
                               std::uint32_t* choice) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.group_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto g = static_cast<std::uint32_t>(i);
    double best = cuda::std::numeric_limits<double>::infinity();
    std::uint32_t chosen = no_row;
    for (std::uint32_t k = image.group_offsets[g]; k < image.group_offsets[g + 1]; ++k) {
      const std::uint32_t r = image.group_rows[k];  // ascending: strict < keeps the smallest
      const double total = row_cost(image, node_cost, dense_child, cost, r);
      if (total < best) {
        best = total;
        chosen = r;
      }
    }
    choice[g] = chosen;
  }
}

//! Sums the roots' costs in the given order (one thread: the reference's summation order).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void root_cost_kernel(packed_ref image, const std::uint32_t* roots,
                                  std::uint32_t root_count, const double* cost, double* out,
                                  device_status* status) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double total = 0;
  for (std::uint32_t i = 0; i < root_count; ++i) {
    const std::uint32_t g = find_sorted(image.group_eclass, image.group_count(), roots[i]);
    if (g == image.group_count()) {
      atomicMin(&status->bad_root, i);
      continue;
    }
    total += cost[g];
  }
  *out = total;
}

}  // namespace detail

//! Bottom-up tree-cost extraction over the packed image `image` (device pointers) with one
//! cost per row (`node_cost`, device memory) and root e-class ids (`roots`, host memory), on
//! `stream`. Same definition and results as `extract_reference`.
//! @throws nothing; errors: a non-finite node cost (`errc::invalid_argument`, naming the row),
//!         an unknown root or child (`errc::not_found`), costs still decreasing after
//!         #classes + 1 rounds (`errc::invalid_argument`: a negative-cost cycle), CUDA failures.
inline expected<device_extraction_result> extract(const packed_ref& image, const double* node_cost,
                                                  cuda::std::span<const std::uint32_t> roots,
                                                  cudaStream_t stream, extract_options options = {}) {
  using detail::block_size;
  using detail::grid_for;
  const std::uint32_t R = image.row_count(), C = image.child_count(), G = image.group_count();
  using u32_buffer = device_buffer<std::uint32_t>;
  if (roots.size() > 0xFFFFFFFFu)
    return fail(error(errc::abi_limit, "extract: more roots than u32 can count")
                    .with("roots", roots.size())
                    .fix("pass at most 2^32 - 1 roots"));
  const auto root_count = static_cast<std::uint32_t>(roots.size());

  VYRE_TRY_ASSIGN(auto status, device_buffer<detail::device_status>::allocate(1, stream, "extract: status"));
  VYRE_TRY_ASSIGN(u32_buffer dense_child, u32_buffer::allocate(C, stream, "extract: child classes"));
  VYRE_TRY_ASSIGN(u32_buffer device_roots, u32_buffer::allocate(root_count, stream, "extract: roots"));
  VYRE_TRY_ASSIGN(u32_buffer rounds_out, u32_buffer::allocate(1, stream, "extract: rounds"));
  VYRE_TRY_ASSIGN(auto root_total, device_buffer<double>::allocate(1, stream, "extract: root cost"));
  device_extraction_result result;
  VYRE_TRY_ASSIGN(result.cost, device_buffer<double>::allocate(G, stream, "extract: class costs"));
  VYRE_TRY_ASSIGN(result.choice, u32_buffer::allocate(G, stream, "extract: choices"));
  if (root_count != 0)
    VYRE_CUDA_TRY(cudaMemcpyAsync(device_roots.get(), roots.data(), roots.size_bytes(),
                                  cudaMemcpyHostToDevice, stream),
                  "extract: upload roots");

  detail::init_status_kernel<><<<1, 1, 0, stream>>>(status.get());
  VYRE_TRY(detail::launched("extract: init status"));
  detail::extract_setup_kernel<><<<grid_for((std::max)(R, G)), block_size, 0, stream>>>(
      image, node_cost, result.cost.get(), status.get());
  VYRE_TRY(detail::launched("extract: setup"));
  if (C != 0) {
    detail::dense_children_kernel<><<<grid_for(C), block_size, 0, stream>>>(image, dense_child.get(), status.get());
    VYRE_TRY(detail::launched("extract: child classes"));
  }
  detail::device_status seen{};
  VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "extract: read input status"));
  if (seen.bad_row != 0xFFFFFFFFu)
    return fail(error(errc::invalid_argument, "extract: a node cost is not finite")
                    .with("row", seen.bad_row)
                    .fix("give every node a finite cost (drop nodes that must never be chosen)"));
  if (seen.bad_child != 0xFFFFFFFFu)
    return fail(error(errc::not_found, "extract: a child names an e-class that has no row")
                    .with("child_entry", seen.bad_child)
                    .fix("add a row for that e-class or drop the child"));

  const std::uint64_t round_limit = std::uint64_t{G} + 1;
  bool converged = true;
  if (G != 0 && G <= options.single_block_max_groups) {
    detail::relax_single_block_kernel<><<<1, 1024, 0, stream>>>(
        image, node_cost, dense_child.get(), result.cost.get(),
        static_cast<std::uint32_t>(round_limit), status.get(), rounds_out.get());
    VYRE_TRY(detail::launched("extract: single-block fixpoint"));
    VYRE_TRY(detail::copy_to_host(&result.rounds, rounds_out.get(), 1, stream, "extract: read rounds"));
    VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "extract: read status"));
    converged = seen.changed == 0;
  } else if (G != 0) {
    for (converged = false; result.rounds < round_limit;) {
      ++result.rounds;
      detail::clear_changed_kernel<><<<1, 1, 0, stream>>>(status.get());
      VYRE_TRY(detail::launched("extract: clear flag"));
      detail::relax_round_kernel<><<<grid_for(G), block_size, 0, stream>>>(
          image, node_cost, dense_child.get(), result.cost.get(), status.get());
      VYRE_TRY(detail::launched("extract: relax round"));
      VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "extract: read round status"));
      if (seen.changed == 0) {
        converged = true;
        break;
      }
    }
  }
  if (!converged)
    return fail(error(errc::invalid_argument,
                      "extract: costs still decrease after #classes + 1 rounds (a negative-cost "
                      "cycle makes the tree cost unbounded)")
                    .with("rounds", round_limit)
                    .with("classes", G)
                    .fix("make node costs non-negative, or at least free of negative cycles"));
  if (G != 0) {
    detail::choose_kernel<><<<grid_for(G), block_size, 0, stream>>>(
        image, node_cost, dense_child.get(), result.cost.get(), result.choice.get());
    VYRE_TRY(detail::launched("extract: choose rows"));
  }
  detail::root_cost_kernel<><<<1, 32, 0, stream>>>(image, device_roots.get(), root_count,
                                                 result.cost.get(), root_total.get(), status.get());
  VYRE_TRY(detail::launched("extract: root cost"));
  VYRE_TRY(detail::copy_to_host(&result.root_cost, root_total.get(), 1, stream, "extract: read root cost"));
  VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "extract: read status"));
  if (seen.bad_root != 0xFFFFFFFFu)
    return fail(error(errc::not_found, "extract: a root names an e-class that has no row")
                    .with("root", seen.bad_root)
                    .with("eclass", roots[seen.bad_root])
                    .fix("pass e-class ids that appear in the rows' e-class column"));
  return result;
}

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
