// SPDX-License-Identifier: Apache-2.0
//! @file
//! Bottom-up tree-cost extraction on the device, one shot: `extract(gpu, image, node_cost,
//! roots, stream)`. The kernels are the extraction pipeline's (`detail/extract_kernels.cuh`,
//! shared with `extract_plan`), enqueued once on the caller's stream: small e-graphs run the
//! whole fixpoint inside one thread block (one launch), larger ones one grid-wide round per
//! launch with one status readback each. Memory comes from the backend's allocation policy and
//! pinned pool; results follow its error policy. Engines that extract repeatedly keep an
//! `extract_plan` (one graph replay per call).
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/std/span>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/extract_kernels.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/runtime/backend.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! What the device extraction found.
struct device_extraction_result {
  device_array<double> cost;           //!< per group (e-class ids ascending): tree cost or +inf
  device_array<std::uint32_t> choice;  //!< per group: chosen row, or `no_row`
  double root_cost = 0;                //!< sum of the roots' costs, in the order given
  std::uint32_t rounds = 0;            //!< rounds until no cost changed (that round included)

  VYRE_HOST_MOVE_ONLY_MEMBERS(
      device_extraction_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(device_extraction_result);

//! Extraction knobs.
struct extract_options {
  //! E-graphs with at most this many groups and at most `single_block_max_rows` rows run the
  //! fixpoint in a single thread block; larger ones loop over grid-wide rounds.
  std::uint32_t single_block_max_groups = 16384;
  //! Rows are relaxed in parallel: a single block of 1024 threads keeps up to a few per thread.
  std::uint32_t single_block_max_rows = 8192;
};

namespace detail {

inline expected<device_extraction_result> extract_once(const runtime_ref& runtime,
                                                       const image_columns& image,
                                                       const double* node_cost,
                                                       cuda::std::span<const std::uint32_t> roots,
                                                       cudaStream_t stream,
                                                       const extract_options& options) {
  const std::uint32_t R = image.row_count(), C = image.child_count(), G = image.group_count();
  if (roots.size() > 0xFFFFFFFFu)
    return fail(error(errc::abi_limit, "extract: more roots than u32 can count")
                    .with("roots", roots.size())
                    .fix("pass at most 2^32 - 1 roots"));
  VYRE_TRY(check_image_counts(image, "extract: more groups than rows"));
  const auto root_count = static_cast<std::uint32_t>(roots.size());

  // One pinned block: the parameters and roots up, the counters down.
  struct staged {
    plan_params params;
    plan_counters counters;
  };
  VYRE_TRY_ASSIGN(auto host, pinned_array<staged>::allocate(runtime, 1, "extract: staging"));
  VYRE_TRY_ASSIGN(auto host_roots,
                  pinned_array<std::uint32_t>::allocate(runtime, root_count, "extract: roots"));
  wait_on_exit copies_done(stream);  // the uploads read `host` and `host_roots`
  VYRE_TRY_ASSIGN(auto params, runtime.allocate<plan_params>(1, stream, "extract: parameters"));
  VYRE_TRY_ASSIGN(auto counters, runtime.allocate<plan_counters>(1, stream, "extract: counters"));
  VYRE_TRY_ASSIGN(auto dense_child,
                  runtime.allocate<std::uint32_t>(C, stream, "extract: child classes"));
  VYRE_TRY_ASSIGN(auto dense_row,
                  runtime.allocate<std::uint32_t>(R, stream, "extract: row classes"));
  VYRE_TRY_ASSIGN(auto device_roots,
                  runtime.allocate<std::uint32_t>(root_count, stream, "extract: roots"));
  device_extraction_result result;
  VYRE_TRY_ASSIGN(result.cost, runtime.allocate<double>(G, stream, "extract: class costs"));
  VYRE_TRY_ASSIGN(result.choice, runtime.allocate<std::uint32_t>(G, stream, "extract: choices"));

  staged& h = *host.get();
  h.params = plan_params{};
  h.params.image = image;
  h.params.node_cost = node_cost;
  h.params.roots = device_roots.get();
  h.params.root_count = root_count;
  if (root_count != 0) {
    std::memcpy(host_roots.get(), roots.data(), roots.size_bytes());
    VYRE_CUDA_TRY(cudaMemcpyAsync(device_roots.get(), host_roots.get(), roots.size_bytes(),
                                  cudaMemcpyHostToDevice, stream),
                  "extract: upload roots");
  }
  VYRE_CUDA_TRY(
      cudaMemcpyAsync(params.get(), &h.params, sizeof(plan_params), cudaMemcpyHostToDevice, stream),
      "extract: upload parameters");

  const extract_buffers b{params.get(),    counters.get(),    dense_child.get(),
                          dense_row.get(), result.cost.get(), result.choice.get()};
  const unsigned round_grid = resident_grid_for(runtime, R);
  const extract_grids grids{grid_for(R), grid_for(C), round_grid};
  const bool single = G <= options.single_block_max_groups && R <= options.single_block_max_rows;
  VYRE_TRY(enqueue_extract_setup(b, grids, single, stream));
  std::uint32_t rounds = 0;
  if (!single) {
    // One round per launch and one status readback, until a round lowers nothing or the
    // bound is reached (`changed` then stays set: a negative-cost cycle).
    const std::uint64_t round_limit = std::uint64_t{G} + 1;
    device_status* const status = &counters.get()->status;
    while (rounds < round_limit) {
      ++rounds;
      VYRE_CUDA_TRY(cudaMemsetAsync(&status->changed, 0, sizeof(status->changed), stream),
                    "extract: clear flag");
      VYRE_TRY(enqueue_extract_round(b, grids, stream));
      VYRE_TRY(copy_to_host(runtime, &h.counters.status, status, 1, stream,
                            "extract: read round status"));
      if (h.counters.status.changed == 0) break;
    }
  }
  VYRE_TRY(enqueue_extract_choose(b, grids, stream));
  VYRE_TRY(copy_to_host(runtime, &h.counters, counters.get(), 1, stream, "extract: read counters"));
  copies_done.disarm();
  const plan_counters seen = h.counters;
  VYRE_TRY(extract_outcome(seen, G, roots.data()));
  result.root_cost = seen.root_cost;
  result.rounds = G == 0 ? 0 : (single ? seen.rounds : rounds);
  return result;
}

}  // namespace detail

//! Bottom-up tree-cost extraction over the packed image `image` (device pointers) with one
//! cost per row (`node_cost`, device memory) and root e-class ids (`roots`, host memory), on
//! `stream`, with `gpu`'s memory. Same definition and results as `extract_reference`
//! (costs bit for bit, choices, root cost); `rounds` counts the rounds until no cost changed
//! (that round included).
//! @throws / returns (the backend's error policy): a non-finite node cost
//!         (`errc::invalid_argument`, naming the row), an unknown root or child
//!         (`errc::not_found`), costs still decreasing after #classes + 1 rounds
//!         (`errc::invalid_argument`: a negative-cost cycle), more groups than rows
//!         (`errc::invalid_layout`), allocation failures (`errc::out_of_memory`), CUDA
//!         failures. Nothing leaks.
template <policy_bundle P>
typename backend<P>::template result<device_extraction_result> extract(
    backend<P>& gpu, const image_columns& image, const double* node_cost,
    cuda::std::span<const std::uint32_t> roots, cudaStream_t stream, extract_options options = {}) {
  return apply_error_policy<typename P::error_policy>(
      detail::extract_once(detail::runtime_of(gpu), image, node_cost, roots, stream, options));
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
