// SPDX-License-Identifier: Apache-2.0
//! @file
//! Bottom-up tree-cost extraction on the device. A round relaxes every row in parallel: its
//! total (node cost + the current cost of each child class, summed left to right as the CPU
//! reference sums) lowers its class's cost with a compare-and-swap when cheaper. Row-parallel,
//! not group-parallel: an e-class with thousands of rows (common in the real e-graphs) does not
//! serialise a round on one thread. Costs only decrease and every value written is some row's
//! total, so in-place (chaotic) rounds reach the same fixpoint as synchronous ones, in no more
//! rounds; `#classes + 1` rounds bound the loop, and still-decreasing costs after that mean a
//! negative-cost cycle (an error). Once a round lowers nothing, each class's cost is exactly the
//! minimum of its rows' totals over the final costs, bit for bit the reference's; the choice is
//! the smallest row reaching it (ties to the smallest row index, as the reference).
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

#include <cuda_runtime_api.h>
#include <cuda/atomic>
#include <cuda/std/span>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"

namespace vyre::algorithms {

//! What the device extraction found.
struct device_extraction_result {
  device_buffer<double> cost;           //!< per group (e-class ids ascending): tree cost or +inf
  device_buffer<std::uint32_t> choice;  //!< per group: chosen row, or `no_row`
  double root_cost = 0;                 //!< sum of the roots' costs, in the order given
  std::uint32_t rounds = 0;             //!< rounds until no cost changed (that round included)

  // Host-only special members, defaulted out of line: nvcc would otherwise infer them
  // __host__ __device__ (the type is held in cuda::std::expected) and reject their calls to
  // host-only members.
  device_extraction_result();
  ~device_extraction_result();
  device_extraction_result(device_extraction_result&&) noexcept;
  device_extraction_result& operator=(device_extraction_result&&) noexcept;
};
inline device_extraction_result::device_extraction_result() = default;
inline device_extraction_result::~device_extraction_result() = default;
inline device_extraction_result::device_extraction_result(device_extraction_result&&) noexcept =
    default;
inline device_extraction_result& device_extraction_result::operator=(
    device_extraction_result&&) noexcept = default;

//! Extraction knobs.
struct extract_options {
  //! E-graphs with at most this many groups and at most `single_block_max_rows` rows run the
  //! fixpoint in a single thread block; larger ones loop over grid-wide rounds.
  std::uint32_t single_block_max_groups = 16384;
  //! Rows are relaxed in parallel: a single block of 1024 threads keeps up to a few per thread.
  std::uint32_t single_block_max_rows = 8192;
};

namespace detail {

using atomic_double = cuda::atomic_ref<double, cuda::thread_scope_device>;

VYRE_DEVICE inline double read_cost(double* cost, std::uint32_t g) noexcept {
  return atomic_double(cost[g]).load(cuda::std::memory_order_relaxed);
}

//! node cost + each child's current class cost, left to right (the reference's order).
VYRE_DEVICE inline double row_cost(const image_columns& image, const double* node_cost,
                                   const std::uint32_t* dense_child, double* cost,
                                   std::uint32_t r) noexcept {
  double total = node_cost[r];
  const std::uint32_t* child = dense_child + image.row_children_offsets()[r];
  for (std::uint32_t k = 0; k < image.row_children_lens()[r]; ++k)
    total += read_cost(cost, child[k]);
  return total;
}

//! cost[g] = min(cost[g], value) as one atomic step; returns whether it lowered the cost.
VYRE_DEVICE inline bool lower_cost(double* cost, double value) noexcept {
  auto* const bits = reinterpret_cast<unsigned long long*>(cost);
  unsigned long long seen =
      cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(*bits).load(
          cuda::std::memory_order_relaxed);
  while (value < __longlong_as_double(static_cast<long long>(seen))) {
    const unsigned long long was =
        atomicCAS(bits, seen, static_cast<unsigned long long>(__double_as_longlong(value)));
    if (was == seen) return true;
    seen = was;
  }
  return false;
}

//! One in-place relaxation of row r: lowers its class's cost to the row's total when cheaper.
VYRE_DEVICE inline bool relax_row(const image_columns& image, const double* node_cost,
                                  const std::uint32_t* dense_child, const std::uint32_t* dense_row,
                                  double* cost, std::uint32_t r) noexcept {
  return lower_cost(cost + dense_row[r], row_cost(image, node_cost, dense_child, cost, r));
}

//! The group of group-rows position i: the last g with group_offsets[g] <= i (a binary search,
//! so no thread walks a whole large group).
VYRE_DEVICE inline std::uint32_t group_of_position(const image_columns& image,
                                                   std::uint32_t i) noexcept {
  std::uint32_t lo = 0, hi = image.group_count();
  while (hi - lo > 1) {
    const std::uint32_t mid = lo + (hi - lo) / 2;
    if (image.group_offsets()[mid] <= i)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

//! Setup of position / row i: node cost check, the row's group, and (i < G) cost +inf and no
//! choice yet.
VYRE_DEVICE inline void extract_setup_at(const image_columns& image, const double* node_cost,
                                         std::uint64_t i, double* cost, std::uint32_t* choice,
                                         std::uint32_t* dense_row, device_status* status) noexcept {
  const auto p = static_cast<std::uint32_t>(i);
  if (!isfinite(node_cost[i])) atomicMin(&status->bad_row, p);
  dense_row[image.group_rows()[i]] = group_of_position(image, p);
  if (i < image.group_count()) {
    cost[i] = cuda::std::numeric_limits<double>::infinity();
    choice[i] = no_row;
  }
}

//! Row r's part of the choice: a class's choice is its smallest row whose total over the final
//! costs equals the class cost (the reference's first strictly cheaper row in ascending order);
//! classes at +inf keep `no_row`.
VYRE_DEVICE inline void choose_row(const image_columns& image, const double* node_cost,
                                   const std::uint32_t* dense_child, const std::uint32_t* dense_row,
                                   double* cost, std::uint32_t* choice, std::uint32_t r) noexcept {
  const double total = row_cost(image, node_cost, dense_child, cost, r);
  const std::uint32_t g = dense_row[r];
  if (total < cuda::std::numeric_limits<double>::infinity() && total == cost[g])
    atomicMin(&choice[g], r);
}

//! The whole fixpoint in the calling block: row-parallel rounds separated by __syncthreads,
//! stopping when a round lowers nothing or after `round_limit` rounds (then `*changed_out` is
//! set: a negative-cost cycle). Thread 0 writes the rounds run.
VYRE_DEVICE inline void relax_in_block(const image_columns& image, const double* node_cost,
                                       const std::uint32_t* dense_child,
                                       const std::uint32_t* dense_row, double* cost,
                                       std::uint64_t round_limit, std::uint32_t* changed_out,
                                       std::uint32_t* rounds_out) noexcept {
  __shared__ int changed;
  std::uint32_t rounds = 0;
  for (;;) {
    if (threadIdx.x == 0) changed = 0;
    __syncthreads();
    bool dropped = false;
    for (std::uint32_t r = threadIdx.x; r < image.row_count(); r += blockDim.x)
      dropped |= relax_row(image, node_cost, dense_child, dense_row, cost, r);
    if (dropped) atomicOr(&changed, 1);
    __syncthreads();
    ++rounds;
    const bool again = changed != 0;
    __syncthreads();  // everyone read `changed` before it is cleared
    if (!again) break;
    if (rounds == round_limit) {
      if (threadIdx.x == 0) *changed_out = 1;
      break;
    }
  }
  if (threadIdx.x == 0) *rounds_out = rounds;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void extract_setup_kernel(image_columns image, const double* node_cost, double* cost,
                                      std::uint32_t* choice, std::uint32_t* dense_row,
                                      device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x)
    extract_setup_at(image, node_cost, i, cost, choice, dense_row, status);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void relax_round_kernel(image_columns image, const double* node_cost,
                                    const std::uint32_t* dense_child,
                                    const std::uint32_t* dense_row, double* cost,
                                    device_status* status) {
  bool dropped = false;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x)
    dropped |=
        relax_row(image, node_cost, dense_child, dense_row, cost, static_cast<std::uint32_t>(i));
  if (dropped) status->changed = 1;
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void clear_changed_kernel(device_status* status) {
  status->changed = 0;
}

//! The whole fixpoint in one block (small e-graphs).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(1024)
    relax_single_block_kernel(image_columns image, const double* node_cost,
                              const std::uint32_t* dense_child, const std::uint32_t* dense_row,
                              double* cost, std::uint32_t round_limit, device_status* status,
                              std::uint32_t* rounds_out) {
  relax_in_block(image, node_cost, dense_child, dense_row, cost, round_limit, &status->changed,
                 rounds_out);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void choose_kernel(image_columns image, const double* node_cost,
                               const std::uint32_t* dense_child, const std::uint32_t* dense_row,
                               double* cost, std::uint32_t* choice) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x)
    choose_row(image, node_cost, dense_child, dense_row, cost, choice,
               static_cast<std::uint32_t>(i));
}

//! Sums the roots' costs in the given order (one thread: the reference's summation order).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void root_cost_kernel(image_columns image, const std::uint32_t* roots,
                                  std::uint32_t root_count, const double* cost, double* out,
                                  device_status* status) {
  if (threadIdx.x != 0 || blockIdx.x != 0) return;
  double total = 0;
  for (std::uint32_t i = 0; i < root_count; ++i) {
    const std::uint32_t g = find_sorted(image.group_eclass_ids(), image.group_count(), roots[i]);
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
inline expected<device_extraction_result> extract(const image_columns& image,
                                                  const double* node_cost,
                                                  cuda::std::span<const std::uint32_t> roots,
                                                  cudaStream_t stream,
                                                  extract_options options = {}) {
  using detail::block_size;
  using detail::grid_for;
  const std::uint32_t R = image.row_count(), C = image.child_count(), G = image.group_count();
  using u32_buffer = device_buffer<std::uint32_t>;
  if (roots.size() > 0xFFFFFFFFu)
    return fail(error(errc::abi_limit, "extract: more roots than u32 can count")
                    .with("roots", roots.size())
                    .fix("pass at most 2^32 - 1 roots"));
  const auto root_count = static_cast<std::uint32_t>(roots.size());

  VYRE_TRY_ASSIGN(auto status,
                  device_buffer<detail::device_status>::allocate(1, stream, "extract: status"));
  VYRE_TRY_ASSIGN(u32_buffer dense_child,
                  u32_buffer::allocate(C, stream, "extract: child classes"));
  VYRE_TRY_ASSIGN(u32_buffer dense_row, u32_buffer::allocate(R, stream, "extract: row classes"));
  VYRE_TRY_ASSIGN(u32_buffer device_roots,
                  u32_buffer::allocate(root_count, stream, "extract: roots"));
  VYRE_TRY_ASSIGN(u32_buffer rounds_out, u32_buffer::allocate(1, stream, "extract: rounds"));
  VYRE_TRY_ASSIGN(auto root_total,
                  device_buffer<double>::allocate(1, stream, "extract: root cost"));
  device_extraction_result result;
  VYRE_TRY_ASSIGN(result.cost, device_buffer<double>::allocate(G, stream, "extract: class costs"));
  VYRE_TRY_ASSIGN(result.choice, u32_buffer::allocate(G, stream, "extract: choices"));
  if (root_count != 0)
    VYRE_CUDA_TRY(cudaMemcpyAsync(device_roots.get(), roots.data(), roots.size_bytes(),
                                  cudaMemcpyHostToDevice, stream),
                  "extract: upload roots");

  detail::init_status_kernel<><<<1, 1, 0, stream>>>(status.get());
  VYRE_TRY(detail::launched("extract: init status"));
  detail::extract_setup_kernel<><<<grid_for(R), block_size, 0, stream>>>(
      image, node_cost, result.cost.get(), result.choice.get(), dense_row.get(), status.get());
  VYRE_TRY(detail::launched("extract: setup"));
  if (C != 0) {
    detail::dense_children_kernel<>
        <<<grid_for(C), block_size, 0, stream>>>(image, dense_child.get(), status.get());
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
  if (G != 0 && G <= options.single_block_max_groups && R <= options.single_block_max_rows) {
    detail::relax_single_block_kernel<><<<1, 1024, 0, stream>>>(
        image, node_cost, dense_child.get(), dense_row.get(), result.cost.get(),
        static_cast<std::uint32_t>(round_limit), status.get(), rounds_out.get());
    VYRE_TRY(detail::launched("extract: single-block fixpoint"));
    VYRE_TRY(
        detail::copy_to_host(&result.rounds, rounds_out.get(), 1, stream, "extract: read rounds"));
    VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "extract: read status"));
    converged = seen.changed == 0;
  } else if (G != 0) {
    for (converged = false; result.rounds < round_limit;) {
      ++result.rounds;
      detail::clear_changed_kernel<><<<1, 1, 0, stream>>>(status.get());
      VYRE_TRY(detail::launched("extract: clear flag"));
      detail::relax_round_kernel<><<<grid_for(R), block_size, 0, stream>>>(
          image, node_cost, dense_child.get(), dense_row.get(), result.cost.get(), status.get());
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
    detail::choose_kernel<><<<grid_for(R), block_size, 0, stream>>>(
        image, node_cost, dense_child.get(), dense_row.get(), result.cost.get(),
        result.choice.get());
    VYRE_TRY(detail::launched("extract: choose rows"));
  }
  detail::root_cost_kernel<><<<1, 32, 0, stream>>>(
      image, device_roots.get(), root_count, result.cost.get(), root_total.get(), status.get());
  VYRE_TRY(detail::launched("extract: root cost"));
  VYRE_TRY(detail::copy_to_host(&result.root_cost, root_total.get(), 1, stream,
                                "extract: read root cost"));
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
