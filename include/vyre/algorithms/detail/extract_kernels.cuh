// SPDX-License-Identifier: Apache-2.0
//! @file
//! Bottom-up tree-cost extraction on the device, written once for the one-shot `extract` and
//! `extract_plan`: its kernels (they read the input from a device `plan_params` block and
//! report through `plan_counters`) and the functions that enqueue its parts on a stream.
//!
//! A round relaxes every row in parallel: its total (node cost + the current cost of each child
//! class, summed left to right as the CPU reference sums) lowers its class's cost with a
//! compare-and-swap when cheaper. Row-parallel, not group-parallel: an e-class with thousands
//! of rows (common in the real e-graphs) does not serialise a round on one thread. Costs only
//! decrease and every value written is some row's total, so in-place (chaotic) rounds reach the
//! same fixpoint as synchronous ones, in no more rounds; `#classes + 1` rounds bound the loop,
//! and still-decreasing costs after that mean a negative-cost cycle (an error). Once a round
//! lowers nothing, each class's cost is exactly the minimum of its rows' totals over the final
//! costs, bit for bit the reference's; the choice is the smallest row reaching it (ties to the
//! smallest row index, as the reference). Small e-graphs run the whole fixpoint inside one
//! thread block.
#pragma once

#include <cstdint>
#include <limits>

#include <cuda_runtime_api.h>
#include <cuda/atomic>
#include <cuda/std/limits>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/core/error.hpp"

namespace vyre::algorithms::detail {

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
VYRE_KERNEL void extract_setup_kernel(const plan_params* params, double* cost,
                                      std::uint32_t* choice, std::uint32_t* dense_row,
                                      device_status* status) {
  // Inputs read once into registers: the stores below may alias `params` as far as the
  // compiler knows, and would make it read them again on every iteration.
  const image_columns image = params->image;
  const double* const node_cost = params->node_cost;
  VYRE_DETAIL_GRID_LOOP(i, image.row_count())
  extract_setup_at(image, node_cost, i, cost, choice, dense_row, status);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(1024)
    relax_single_block_kernel(const plan_params* params, const std::uint32_t* dense_child,
                              const std::uint32_t* dense_row, double* cost,
                              plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const image_columns image = params->image;
  relax_in_block(image, params->node_cost, dense_child, dense_row, cost,
                 std::uint64_t{image.group_count()} + 1, &counters->status.changed,
                 &counters->rounds);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void relax_round_kernel(const plan_params* params, const std::uint32_t* dense_child,
                                    const std::uint32_t* dense_row, double* cost,
                                    plan_counters* counters) {
  // Both loads issued before the branch: one latency instead of two in front of the rows.
  const bool ok = input_ok(&counters->status);
  const image_columns image = params->image;
  const double* const node_cost = params->node_cost;  // read once (see extract_setup_kernel)
  if (!ok) return;
  bool dropped = false;
  VYRE_DETAIL_GRID_LOOP(i, image.row_count())
  dropped |=
      relax_row(image, node_cost, dense_child, dense_row, cost, static_cast<std::uint32_t>(i));
  if (dropped) counters->status.changed = 1;
}

//! End of an extraction round: count it; clear `changed` for the next one unless the round
//! bound stops the loop with costs still dropping (then it stays set for the host).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void extract_continue_kernel(cudaGraphConditionalHandle handle,
                                         const plan_params* params, plan_counters* counters) {
  const bool ok = input_ok(&counters->status);
  const std::uint32_t done = ok ? ++counters->rounds : counters->rounds;
  const bool changed = counters->status.changed != 0;
  const std::uint64_t limit = std::uint64_t{params->image.group_count()} + 1;
  const bool again = ok && changed && done < limit;
  if (again) counters->status.changed = 0;
  cudaGraphSetConditional(handle, again ? 1u : 0u);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void choose_kernel(const plan_params* params, const std::uint32_t* dense_child,
                               const std::uint32_t* dense_row, double* cost, std::uint32_t* choice,
                               const plan_counters* counters) {
  const bool ok = input_ok(&counters->status) && counters->status.changed == 0;
  const image_columns image = params->image;  // loaded beside the status (see relax_round_kernel)
  const double* const node_cost = params->node_cost;
  if (!ok) return;
  VYRE_DETAIL_GRID_LOOP(i, image.row_count())
  choose_row(image, node_cost, dense_child, dense_row, cost, choice, static_cast<std::uint32_t>(i));
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void root_cost_kernel(const plan_params* params, const double* cost,
                                  plan_counters* counters) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || !input_ok(&counters->status)) return;
  const image_columns image = params->image;
  double total = 0;  // one thread: the reference's summation order
  for (std::uint32_t i = 0; i < params->root_count; ++i) {
    const std::uint32_t g =
        find_sorted(image.group_eclass_ids(), image.group_count(), params->roots[i]);
    if (g == image.group_count()) {
      atomicMin(&counters->status.bad_root, i);
      continue;
    }
    total += cost[g];
  }
  counters->root_cost = total;
}

//! The device memory one extraction works in (a plan's storage, or a one-shot call's
//! temporaries; owned elsewhere): per-row `dense_row`, per-child `dense_child`, per-group
//! `cost` and `choice`.
struct extract_buffers {
  const plan_params* params = nullptr;
  plan_counters* counters = nullptr;
  std::uint32_t* dense_child = nullptr;
  std::uint32_t* dense_row = nullptr;
  double* cost = nullptr;
  std::uint32_t* choice = nullptr;
};

//! Grid sizes: a thread per row for the setup and the choice, a thread per child entry for
//! the dense children, and a resident-sized grid for the relaxation rounds (their parameter
//! loads paid once per thread, not once per row: `resident_grid_for`).
struct extract_grids {
  unsigned rows = 1;
  unsigned children = 1;
  unsigned rounds = 1;
};

//! Part 1: clean counters, input checks, dense indices, costs at +inf; with `single`, the
//! whole fixpoint in one block.
inline expected<void> enqueue_extract_setup(const extract_buffers& b, const extract_grids& grids,
                                            bool single, cudaStream_t on) {
  init_counters_kernel<><<<1, 1, 0, on>>>(b.counters);
  VYRE_TRY(launched("extract: init counters"));
  extract_setup_kernel<><<<grids.rows, block_size, 0, on>>>(b.params, b.cost, b.choice, b.dense_row,
                                                            &b.counters->status);
  VYRE_TRY(launched("extract: input checks"));
  dense_children_kernel<>
      <<<grids.children, block_size, 0, on>>>(b.params, b.dense_child, &b.counters->status);
  VYRE_TRY(launched("extract: dense children"));
  if (!single) return {};
  relax_single_block_kernel<>
      <<<1, 1024, 0, on>>>(b.params, b.dense_child, b.dense_row, b.cost, b.counters);
  return launched("extract: single-block fixpoint");
}

//! Part 2: one grid-wide relaxation round (sets `changed` when a cost dropped; whoever decides
//! about the next round clears it).
inline expected<void> enqueue_extract_round(const extract_buffers& b, const extract_grids& grids,
                                            cudaStream_t on) {
  relax_round_kernel<><<<grids.rounds, block_size, 0, on>>>(b.params, b.dense_child, b.dense_row,
                                                            b.cost, b.counters);
  return launched("extract: relax round");
}

//! The WHILE body's last node: count the round, clear `changed` and run another while it
//! lowered a cost.
inline expected<void> enqueue_extract_continue(const extract_buffers& b,
                                               cudaGraphConditionalHandle handle, cudaStream_t on) {
  extract_continue_kernel<><<<1, 1, 0, on>>>(handle, b.params, b.counters);
  return launched("extract: WHILE condition");
}

//! Part 3: the choices and the roots' cost.
inline expected<void> enqueue_extract_choose(const extract_buffers& b, const extract_grids& grids,
                                             cudaStream_t on) {
  choose_kernel<><<<grids.rows, block_size, 0, on>>>(b.params, b.dense_child, b.dense_row, b.cost,
                                                     b.choice, b.counters);
  VYRE_TRY(launched("extract: choose rows"));
  root_cost_kernel<><<<1, 32, 0, on>>>(b.params, b.cost, b.counters);
  return launched("extract: root cost");
}

//! The error a run's counters report, if any: a bad cost, an unknown child, a negative-cost
//! cycle, an unknown root (in that order).
inline expected<void> extract_outcome(const plan_counters& seen, std::uint32_t group_count,
                                      const std::uint32_t* roots) {
  if (seen.status.bad_row != 0xFFFFFFFFu)
    return fail(error(errc::invalid_argument, "extract: a node cost is not finite")
                    .with("row", seen.status.bad_row)
                    .fix("give every node a finite cost (drop nodes that must never be chosen)"));
  if (seen.status.bad_child != 0xFFFFFFFFu)
    return fail(error(errc::not_found, "extract: a child names an e-class that has no row")
                    .with("child_entry", seen.status.bad_child)
                    .fix("add a row for that e-class or drop the child"));
  if (seen.status.changed != 0)
    return fail(negative_cycle_error(std::uint64_t{group_count} + 1, group_count));
  if (seen.status.bad_root != 0xFFFFFFFFu)
    return fail(error(errc::not_found, "extract: a root names an e-class that has no row")
                    .with("root", seen.status.bad_root)
                    .with("eclass", roots[seen.status.bad_root])
                    .fix("pass e-class ids that appear in the rows' e-class column"));
  return {};
}

}  // namespace vyre::algorithms::detail
