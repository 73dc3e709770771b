// SPDX-License-Identifier: Apache-2.0
//! @file
//! `plan_base`: what `congruence_plan` and `extract_plan` are both made of (the runtime, stream
//! and growth rule a plan was created with, its capacity and the storage allocated for it, its
//! captured graphs) and the capacity rules both follow (`create`, `reserve`, growing on demand).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/loop_graph.cuh"
#include "vyre/algorithms/plan_capacity.hpp"
#include "vyre/core/error.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/runtime/backend.cuh"

namespace vyre::algorithms::detail {

//! The base of a `Plan` on policies `P` whose buffers are a `Storage`: a default-constructible,
//! movable type with a `ready` flag, `static expected<Storage> allocate(const runtime_ref&,
//! const plan_capacity&, cudaStream_t)` and the plan's error texts `too_many_rows` and
//! `over_capacity` and a `capture` stream lease. `Plan` has a constructor `(const runtime_ref&,
//! cudaStream_t, plan_growth, Options)` that it lets this base call (`friend`).
template <policy_bundle P, class Storage, class Plan, class Options>
class plan_base {
 public:
  template <class T>
  using result = typename backend<P>::template result<T>;

  //! A plan on `gpu` and `stream`, allocated for `capacity` (rows rounded up to a row bucket,
  //! at least 1024), with the plan's `options`.
  //! @throws / returns (error policy) too many rows (`errc::abi_limit`), allocation failures.
  static result<Plan> create(backend<P>& gpu, cudaStream_t stream, plan_capacity capacity = {},
                             plan_growth growth = plan_growth::reallocate, Options options = {}) {
    auto grown = [&]() -> expected<Plan> {
      Plan plan(runtime_of(gpu), stream, growth, options);
      VYRE_TRY(static_cast<plan_base&>(plan).grow(capacity));
      return plan;
    };
    return apply_error_policy<typename P::error_policy>(grown());
  }

  const plan_capacity& capacity() const noexcept { return capacity_; }
  cudaStream_t stream() const noexcept { return stream_; }

  //! Makes room for `capacity` (rows rounded up to a row bucket >= 1024). Drops the captured
  //! graphs when it reallocates. Strong guarantee: on failure the plan keeps its old storage.
  result<void> reserve(plan_capacity capacity) {
    return apply_error_policy<typename P::error_policy>(grow(capacity));
  }

 protected:
  using graph_type = graph::graph_cache<on_error::return_expected>::graph_type;

  plan_base(const runtime_ref& runtime, cudaStream_t stream, plan_growth growth) noexcept
      : runtime_(runtime), stream_(stream), growth_(growth) {}
  plan_base(plan_base&&) noexcept = default;
  plan_base& operator=(plan_base&&) noexcept = default;
  ~plan_base() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  //! Room for an input of `rows` and `children`: nothing when it fits, else grows the plan
  //! (`plan_growth::reallocate`) or fails naming the sizes and the capacity.
  expected<void> fit(std::uint32_t rows, std::uint32_t children) {
    if (rows <= plan_max_bucket && storage_.ready && plan_bucket(rows) <= capacity_.rows &&
        children <= capacity_.children)
      return {};
    if (growth_ == plan_growth::fail && storage_.ready)
      return fail(plan_capacity_error(Storage::over_capacity, rows, children, capacity_));
    return grow({rows, children});
  }

  //! The plan's graph for inputs of at most `bucket` rows in `variant`, captured on first use
  //! by `capture(capture_stream)` after the work already queued on the plan's stream.
  template <class Capture>
  expected<graph_type*> graph_for(std::uint32_t bucket, std::uint32_t variant, Capture capture) {
    return graphs_.get_or_build(
        plan_graph_key(bucket, variant), 0, [&]() -> expected<graph::captured_graph_expected> {
          // Held until the capture is done (one wait per captured graph, not per run).
          VYRE_TRY_ASSIGN(event_lease ordered,
                          order_capture_after(runtime_, storage_.capture.get(), stream_));
          return capture(storage_.capture.get());
        });
  }

  //! The grid over the children of an input of at most `bucket` rows (at most 4 per row).
  unsigned children_grid(std::uint32_t bucket) const noexcept {
    return grid_for((std::min)(std::uint64_t{capacity_.children}, std::uint64_t{4} * bucket));
  }

  //! `reserve`, for the plan's own calls.
  expected<void> grow(plan_capacity capacity) {
    if (capacity.rows > plan_max_bucket)
      return fail(error(errc::abi_limit, Storage::too_many_rows)
                      .with("rows", capacity.rows)
                      .with("max_rows", plan_max_bucket)
                      .fix("shard the e-graph"));
    const std::uint32_t rows = plan_bucket(capacity.rows);
    if (storage_.ready && rows <= capacity_.rows && capacity.children <= capacity_.children)
      return {};
    const plan_capacity grown{(std::max)(rows, capacity_.rows),
                              (std::max)(capacity.children, capacity_.children)};
    VYRE_TRY_ASSIGN(Storage fresh, Storage::allocate(runtime_, grown, stream_));
    graphs_.clear();
    storage_ = std::move(fresh);
    capacity_ = grown;
    return {};
  }

  runtime_ref runtime_;
  cudaStream_t stream_ = nullptr;
  plan_growth growth_ = plan_growth::reallocate;
  plan_capacity capacity_{};
  Storage storage_{};
  graph::graph_cache<on_error::return_expected> graphs_;
};

}  // namespace vyre::algorithms::detail
