// SPDX-License-Identifier: Apache-2.0
//! @file
//! `extract_plan`: repeated bottom-up extraction on e-graphs up to a capacity. Buffers are
//! allocated once; the extraction pipeline (`detail/extract_kernels.cuh`: setup, the
//! single-block fixpoint or a conditional WHILE loop of rounds, the choices and root cost) is
//! captured once per row bucket and variant into one CUDA graph, kept in a
//! `graph::graph_cache`; a call is one parameter upload (with the roots), one graph replay and
//! one small readback.
//!
//!     auto best = vyre::algorithms::make_extract_plan(gpu, stream);
//!     auto cheapest = best.run(image.columns(), costs, roots);     // device image, device costs
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/std/bit>
#include <cuda/std/span>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/cpu_engine.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/extract_kernels.cuh"
#include "vyre/algorithms/detail/loop_graph.cuh"
#include "vyre/algorithms/detail/plan_base.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/algorithms/dispatch.hpp"
#include "vyre/algorithms/extract.cuh"
#include "vyre/algorithms/plan_capacity.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/runtime/backend.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! The device result of one `extract_plan::run`: device pointers into plan memory, valid until
//! the plan's next run. Same contents as `device_extraction_result`.
struct extraction_view {
  const double* cost = nullptr;           //!< per group: tree cost or +inf
  const std::uint32_t* choice = nullptr;  //!< per group: chosen row, or `no_row`
  std::uint32_t class_count = 0;
  double root_cost = 0;
  std::uint32_t rounds = 0;
};

namespace detail {

//! The buffers of an `extract_plan`, allocated for its capacity.
struct extract_plan_storage {
  static constexpr const char* too_many_rows = "extract_plan: too many rows for one plan";
  static constexpr const char* over_capacity = "extract_plan: the input exceeds the capacity";

  bool ready = false;
  plan_io io;
  pinned_array<std::uint32_t> host_roots;
  pinned_array<std::uint32_t> staging;  //!< run_host: image + costs up, results down
  device_array<std::uint32_t> input;    //!< run_host: the uploaded image and costs (lazily)
  device_array<std::uint32_t> roots;
  device_array<std::uint32_t> dense_child, dense_row, choice;
  device_array<double> cost;
  stream_lease capture;

  static expected<extract_plan_storage> allocate(const runtime_ref& runtime,
                                                 const plan_capacity& at, cudaStream_t stream) {
    extract_plan_storage s;
    const std::size_t B = at.rows, C = (std::max)(at.children, 1u);
    const char* what = "extract_plan: allocate";
    VYRE_TRY_ASSIGN(s.io, plan_io::allocate(runtime, stream, what));
    VYRE_TRY_ASSIGN(s.dense_child, runtime.allocate<std::uint32_t>(C, stream, what));
    VYRE_TRY_ASSIGN(s.choice, runtime.allocate<std::uint32_t>(B, stream, what));
    VYRE_TRY_ASSIGN(s.dense_row, runtime.allocate<std::uint32_t>(B, stream, what));
    VYRE_TRY_ASSIGN(s.cost, runtime.allocate<double>(B, stream, what));
    VYRE_TRY_ASSIGN(s.capture, runtime.streams->acquire());
    s.ready = true;
    return s;
  }

  extract_buffers buffers() const noexcept {
    return {io.params.get(), io.counters.get(), dense_child.get(),
            dense_row.get(), cost.get(),        choice.get()};
  }
};

}  // namespace detail

//! Repeated bottom-up extraction on e-graphs up to a capacity: one parameter upload (with the
//! roots), one graph replay (single-block fixpoint for small e-graphs, else a conditional WHILE
//! loop of rounds) and one small readback per call. Same costs and choices as `extract` and
//! `extract_reference` (bit for bit); `rounds` may differ (in-place rounds see each other's
//! updates in scheduling order).
//! Memory, pinned staging and the capture stream come from the backend the plan was created
//! with; results follow its error policy.
//! @note Not thread-safe; all work runs on the stream given at creation. The backend must
//!       outlive the plan.
template <policy_bundle P = policies<>>
class extract_plan
    : public detail::plan_base<P, detail::extract_plan_storage, extract_plan<P>, extract_options> {
  using base = detail::plan_base<P, detail::extract_plan_storage, extract_plan, extract_options>;
  friend base;

 public:
  template <class T>
  using result = typename backend<P>::template result<T>;

  //! Extraction over the device image `image` with device `node_cost` (one per row) and host
  //! `roots`; same contract and results as `extract`.
  //! @throws / returns (error policy) as `extract`, plus capacity errors as
  //!         `congruence_plan::run`.
  result<extraction_view> run(const image_columns& image, const double* node_cost,
                              cuda::std::span<const std::uint32_t> roots) {
    return apply_error_policy<typename P::error_policy>(run_device(image, node_cost, roots));
  }

  //! Extraction over a host image (host pointers) with host costs and roots, on the CPU
  //! engine or the device as `options` says; both give the same costs (bit for bit),
  //! choices and root cost. `rounds` counts the passes of the side that ran.
  result<extraction_result> run_host(const image_columns& host_image,
                                     cuda::std::span<const double> node_cost,
                                     cuda::std::span<const std::uint32_t> roots,
                                     dispatch_options options = {}) {
    return apply_error_policy<typename P::error_policy>(
        run_on_host(host_image, node_cost, roots, options));
  }

 private:
  using storage = detail::extract_plan_storage;
  using base::capacity_;
  using base::fit;
  using base::runtime_;
  using base::storage_;
  using base::stream_;
  using typename base::graph_type;

  extract_plan(const detail::runtime_ref& runtime, cudaStream_t stream, plan_growth growth,
               extract_options options) noexcept
      : base(runtime, stream, growth), options_(options) {}

  expected<extraction_view> run_device(const image_columns& image, const double* node_cost,
                                       cuda::std::span<const std::uint32_t> roots) {
    VYRE_TRY(detail::check_image_counts(image, "extract_plan: more groups than rows"));
    if (roots.size() > 0xFFFFFFFFu)
      return fail(error(errc::abi_limit, "extract_plan: more roots than u32 can count")
                      .with("roots", roots.size())
                      .fix("pass at most 2^32 - 1 roots"));
    VYRE_TRY(fit(image.row_count(), image.child_count()));
    storage& s = storage_;
    const auto root_count = static_cast<std::uint32_t>(roots.size());
    if (root_count > s.roots.size()) {
      VYRE_TRY_ASSIGN(auto bigger,
                      runtime_.template allocate<std::uint32_t>(cuda::std::bit_ceil(root_count),
                                                                stream_, "extract_plan: roots"));
      VYRE_TRY(s.host_roots.ensure(runtime_, bigger.size(), "extract_plan: pinned roots"));
      s.roots = std::move(bigger);
    }
    if (root_count != 0) {
      std::memcpy(s.host_roots.get(), roots.data(), roots.size_bytes());
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.roots.get(), s.host_roots.get(), roots.size_bytes(),
                                    cudaMemcpyHostToDevice, stream_),
                    "extract_plan: upload roots");
    }
    const bool single = image.group_count() <= options_.single_block_max_groups &&
                        image.row_count() <= options_.single_block_max_rows;
    const std::uint32_t bucket = detail::plan_bucket(image.row_count());
    VYRE_TRY_ASSIGN(graph_type * graph, graph_for(bucket, single));
    detail::plan_params p;
    p.image = image;
    p.node_cost = node_cost;
    p.roots = s.roots.get();
    p.root_count = root_count;
    VYRE_TRY_ASSIGN(const detail::plan_counters seen,
                    s.io.replay(runtime_, *graph, p, stream_, "extract_plan: run"));
    VYRE_TRY(detail::extract_outcome(seen, image.group_count(), roots.data()));
    extraction_view view;
    view.cost = s.cost.get();
    view.choice = s.choice.get();
    view.class_count = image.group_count();
    view.root_cost = seen.root_cost;
    view.rounds = image.group_count() == 0 ? 0 : seen.rounds;
    return view;
  }

  expected<extraction_result> run_on_host(const image_columns& host_image,
                                          cuda::std::span<const double> node_cost,
                                          cuda::std::span<const std::uint32_t> roots,
                                          dispatch_options options) {
    if (detail::runs_on_host(options, host_image.row_count(), extract_host_below_rows))
      return cpu_engine::extract(host_image, node_cost, roots, options.host_threads);
    if (node_cost.size() != host_image.row_count())
      return fail(error(errc::invalid_argument, "extract: one node cost per row is required")
                      .with("costs", node_cost.size())
                      .with("rows", host_image.row_count())
                      .fix("pass exactly one cost per row, in row order"));
    VYRE_TRY(detail::check_image_counts(host_image, "extract_plan: more groups than rows"));
    VYRE_TRY(fit(host_image.row_count(), host_image.child_count()));
    storage& s = storage_;
    const image_layout layout = image_layout::for_counts(host_image.counts);
    const std::uint32_t R = layout.row_count, G = layout.group_count;
    const auto words = static_cast<std::size_t>(layout.word_count());
    // Staging: the image words, then the costs (as 2 words each, 8-byte aligned).
    const std::size_t cost_at = (words + 1) & ~std::size_t{1};
    VYRE_TRY(s.staging.ensure(runtime_, cost_at + 2 * std::size_t{R} + 1,
                              "extract_plan: pinned staging"));
    if (s.input.size() < cost_at + 2 * std::size_t{R}) {
      // Room for the largest image the capacity allows (8R + C + 1 words), one alignment word
      // and the costs (2 words per row).
      const std::size_t most = 10 * std::size_t{capacity_.rows} + capacity_.children + 2;
      VYRE_TRY_ASSIGN(s.input, runtime_.template allocate<std::uint32_t>(
                                   most, stream_, "extract_plan: uploaded image"));
    }
    detail::stage_columns(host_image, s.staging.get(), options.host_threads,
                          {s.staging.get() + cost_at, node_cost.data(), node_cost.size_bytes()});
    VYRE_CUDA_TRY(
        cudaMemcpyAsync(s.input.get(), s.staging.get(), (cost_at + 2 * std::size_t{R}) * 4,
                        cudaMemcpyHostToDevice, stream_),
        "extract_plan: upload the image and costs");
    const auto* device_cost = reinterpret_cast<const double*>(s.input.get() + cost_at);
    VYRE_TRY_ASSIGN(
        const extraction_view view,
        run_device(image_columns::from_words(s.input.get(), layout), device_cost, roots));
    // Costs (2 words each) then choices.
    VYRE_TRY(s.staging.ensure(runtime_, 3 * std::size_t{G} + 1, "extract_plan: pinned staging"));
    if (G != 0) {
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.staging.get(), view.cost, G * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_),
                    "extract_plan: download costs");
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.staging.get() + 2 * std::size_t{G}, view.choice,
                                    G * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream_),
                    "extract_plan: download choices");
    }
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "extract_plan: download the result");
    runtime_.synced();
    extraction_result result;
    const auto* host_cost = reinterpret_cast<const double*>(s.staging.get());
    const std::uint32_t* host_choice = s.staging.get() + 2 * std::size_t{G};
    expected<void> taken[3];
    detail::parallel_tasks(3, G * (2 * sizeof(std::uint32_t) + sizeof(double)),
                           options.host_threads, [&](std::size_t i) noexcept {
                             const char* what = "extract_plan: result";
                             if (i == 0)
                               taken[i] = try_assign(result.eclass_ids,
                                                     host_image.group_eclass_ids(), G, what);
                             else if (i == 1)
                               taken[i] = try_assign(result.cost, host_cost, G, what);
                             else
                               taken[i] = try_assign(result.choice, host_choice, G, what);
                           });
    for (const expected<void>& t : taken)
      if (!t) return fail(t.error());
    result.root_cost = view.root_cost;
    result.rounds = view.rounds;
    return result;
  }

  expected<graph_type*> graph_for(std::uint32_t bucket, bool single) {
    return base::graph_for(bucket, single ? 1 : 0,
                           [&](cudaStream_t at) { return capture(bucket, single, at); });
  }

  //! Captured on `at`: setup (-> single-block fixpoint) -> WHILE(round) unless single ->
  //! choices and root cost.
  expected<graph::captured_graph_expected> capture(std::uint32_t bucket, bool single,
                                                   cudaStream_t at) {
    const detail::extract_buffers b = storage_.buffers();
    const unsigned round_grid = detail::resident_grid_for(runtime_, bucket);
    const detail::extract_grids grids{detail::grid_for(bucket), base::children_grid(bucket),
                                      round_grid};
    auto prefix = [&](cudaStream_t on) {
      return detail::enqueue_extract_setup(b, grids, single, on);
    };
    auto body = [&](cudaStream_t on, cudaGraphConditionalHandle handle) -> expected<void> {
      VYRE_TRY(detail::enqueue_extract_round(b, grids, on));
      return detail::enqueue_extract_continue(b, handle, on);
    };
    auto suffix = [&](cudaStream_t on) { return detail::enqueue_extract_choose(b, grids, on); };
    return detail::make_loop_graph(at, &prefix, single ? nullptr : &body, &suffix,
                                   "extract_plan: capture the pipeline");
  }

  extract_options options_{};
};

//! `extract_plan<P>::create`, with the policies deduced.
template <policy_bundle P>
typename backend<P>::template result<extract_plan<P>> make_extract_plan(
    backend<P>& gpu, cudaStream_t stream, plan_capacity capacity = {},
    plan_growth growth = plan_growth::reallocate, extract_options options = {}) {
  return extract_plan<P>::create(gpu, stream, capacity, growth, options);
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
