// SPDX-License-Identifier: Apache-2.0
//! @file
//! `congruence_plan`: repeated congruence closure on e-graphs up to a capacity. Every buffer
//! and the CUB scratch are allocated once for a capacity (rows, children); the congruence
//! pipeline (`detail/congruence_kernels.cuh`: input checks, the rounds inside a conditional
//! WHILE node, the class map and rebuilt image) is captured once per row bucket (the rows
//! rounded up to a quarter of their power of two, at least 1024) into one CUDA graph, kept in
//! a `graph::graph_cache`. The graph never changes: its kernels read the input (pointers and
//! counts) from a device parameter block, so a call is one small upload, one graph replay and
//! one small readback. Rows beyond the input up to the bucket are padding the kernels skip
//! (their sort keys sort last), so the CUB calls run at their captured sizes.
//!
//!     auto closure = vyre::algorithms::make_congruence_plan(gpu, stream, {.rows = 1 << 16});
//!     auto merged = closure.run(image.columns());          // resident device image: on the device
//!     auto on_host = closure.run_host(host_image);     // host image: the CPU engine below
//!                                                      // the crossover, else the device
//!
//! Results are the same as the one-shot `congruence`'s (and the CPU reference's). A plan's views
//! point into plan memory and stay valid until its next `run`/`run_host`/`reserve` or its
//! destruction (`copy_rebuilt_image` keeps a rebuilt image longer). Inputs beyond the capacity
//! grow the plan (`plan_growth::reallocate`, one new setup) or fail with the sizes named
//! (`plan_growth::fail`); a failed call leaves the plan usable.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/congruence.cuh"
#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/cpu_engine.hpp"
#include "vyre/algorithms/detail/congruence_kernels.cuh"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/loop_graph.cuh"
#include "vyre/algorithms/detail/plan_base.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/algorithms/dispatch.hpp"
#include "vyre/algorithms/plan_capacity.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/runtime/backend.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! The device result of one `congruence_plan::run`: device pointers into plan memory, valid
//! until the plan's next run (or its destruction). Same contents as `device_congruence_result`.
struct congruence_view {
  const std::uint32_t* eclass_ids = nullptr;      //!< G original e-class ids, ascending
  const std::uint32_t* representative = nullptr;  //!< parallel: smallest id of its merged set
  std::uint32_t class_count = 0;                  //!< G
  std::uint64_t merges = 0;
  std::uint32_t rounds = 0;  //!< rounds run, the final (merge-free) one included
  //! The rebuilt image's nine columns (separate plan buffers, not one contiguous image; see
  //! `congruence_plan::copy_rebuilt_image` for an owning contiguous copy).
  image_columns rebuilt;
  const std::uint32_t* kept_rows = nullptr;  //!< original row of each rebuilt row
};

namespace detail {

//! The buffers of a `congruence_plan`, allocated for its capacity.
struct congruence_plan_storage {
  using u32_buffer = device_array<std::uint32_t>;
  static constexpr const char* too_many_rows = "congruence_plan: too many rows for one plan";
  static constexpr const char* over_capacity = "congruence_plan: the input exceeds the capacity";

  bool ready = false;
  plan_io io;
  pinned_array<std::uint32_t> staging;  //!< run_host: image upload and result download
  u32_buffer input;  //!< run_host: the uploaded image (allocated on the first device run_host)
  congruence_work work;
  u32_buffer class_ids, representative, kept;
  u32_buffer rebuilt[egraph::image_column_count];  //!< the rebuilt image's columns
  device_array<unsigned char> scratch;
  stream_lease capture;
  congruence_buffers buffers;

  static expected<congruence_plan_storage> allocate(const runtime_ref& runtime,
                                                    const plan_capacity& at, cudaStream_t stream) {
    congruence_plan_storage s;
    const std::size_t B = at.rows, C = (std::max)(at.children, 1u);
    const char* what = "congruence_plan: allocate";
    VYRE_TRY_ASSIGN(s.io, plan_io::allocate(runtime, stream, what));
    VYRE_TRY_ASSIGN(s.work, congruence_work::allocate(runtime, B, B, C, stream, what));
    for (u32_buffer* b : {&s.class_ids, &s.representative, &s.kept}) {
      VYRE_TRY_ASSIGN(*b, runtime.allocate<std::uint32_t>(B, stream, what));
    }
    for (std::size_t c = 0; c < egraph::image_column_count; ++c) {
      const auto column = static_cast<image_column>(c);
      const std::size_t n =
          column == image_column::children ? C
          : column == image_column::row_children_offsets || column == image_column::group_offsets
              ? B + 1
              : B;
      VYRE_TRY_ASSIGN(s.rebuilt[c], runtime.allocate<std::uint32_t>(n, stream, what));
    }
    congruence_buffers& b = s.buffers;
    b.params = s.io.params.get();
    b.counters = s.io.counters.get();
    s.work.wire(b);
    b.class_ids = s.class_ids.get();
    b.representative = s.representative.get();
    b.kept = s.kept.get();
    for (std::size_t c = 0; c < egraph::image_column_count; ++c) b.rebuilt[c] = s.rebuilt[c].get();
    // CUB scratch: the largest need over every bucket up to the capacity.
    std::size_t bytes = 1;
    for (std::size_t n = plan_min_bucket; n <= B;
         n = plan_bucket(static_cast<std::uint32_t>(n) + 1)) {
      VYRE_TRY_ASSIGN(const std::size_t need,
                      congruence_scratch_bytes(b, static_cast<std::uint32_t>(n), stream));
      bytes = (std::max)(bytes, need);
    }
    VYRE_TRY_ASSIGN(s.scratch, runtime.allocate<unsigned char>(bytes, stream, what));
    b.scratch = s.scratch.get();
    b.scratch_bytes = bytes;
    VYRE_TRY_ASSIGN(s.capture, runtime.streams->acquire());
    s.ready = true;
    return s;
  }
};

}  // namespace detail

//! Repeated congruence closure on e-graphs up to a capacity: allocations, CUB scratch and the
//! captured graph are paid once; a call is one parameter upload, one graph replay (the rounds
//! loop on the device in a conditional WHILE node) and one small readback. Memory, pinned
//! staging and the capture stream come from the backend the plan was created with; results
//! follow its error policy.
//! @tparam Signature as for `congruence`.
//! @note Not thread-safe; one plan per host thread (or serialise calls). All work runs on the
//!       stream given at creation; results are ready when `run` returns. The backend must
//!       outlive the plan.
template <policy_bundle P = policies<>, class Signature = image_row_signature>
class congruence_plan : public detail::plan_base<P, detail::congruence_plan_storage,
                                                 congruence_plan<P, Signature>, Signature> {
  using base = detail::plan_base<P, detail::congruence_plan_storage, congruence_plan, Signature>;
  friend base;

 public:
  template <class T>
  using result = typename backend<P>::template result<T>;

  //! Congruence closure of the device image `image` (same contract as `congruence`).
  //! @throws / returns (error policy): a child without rows (`errc::not_found`), a children
  //!         range past the column (`errc::out_of_range`), an input beyond capacity with
  //!         `plan_growth::fail` (`errc::out_of_range`, naming sizes and capacity), more groups
  //!         than rows (`errc::invalid_layout`), CUDA failures. The plan stays usable.
  result<congruence_view> run(const image_columns& image) {
    return apply_error_policy<typename P::error_policy>(run_device(image));
  }

  //! Congruence closure of a host image (host pointers, e.g. `pack_reference(...)->columns()` or an
  //! egraph snapshot's packed image), on the CPU engine or the device as `options` says.
  //! Both sides give the same result, except `rounds` (CPU worklist passes vs device rounds).
  result<congruence_result> run_host(const image_columns& host_image,
                                     dispatch_options options = {}) {
    return apply_error_policy<typename P::error_policy>(run_on_host(host_image, options));
  }

  //! An owning contiguous copy of the last run's rebuilt image (stream-ordered on the plan's
  //! stream, memory from the plan's backend), e.g. to keep it past the next run.
  result<egraph::device_image> copy_rebuilt_image(const congruence_view& view) const {
    return apply_error_policy<typename P::error_policy>(copy_rebuilt(view));
  }

 private:
  using storage = detail::congruence_plan_storage;
  using base::capacity_;
  using base::fit;
  using base::runtime_;
  using base::storage_;
  using base::stream_;
  using typename base::graph_type;

  congruence_plan(const detail::runtime_ref& runtime, cudaStream_t stream, plan_growth growth,
                  Signature signature) noexcept
      : base(runtime, stream, growth), signature_(signature) {}

  expected<congruence_view> run_device(const image_columns& image) {
    VYRE_TRY(detail::check_image_counts(image, "congruence_plan: more groups than rows"));
    VYRE_TRY(fit(image.row_count(), image.child_count()));
    const std::uint32_t bucket = detail::plan_bucket(image.row_count());
    VYRE_TRY_ASSIGN(graph_type * graph, graph_for(bucket));
    storage& s = storage_;
    detail::plan_params params;
    params.image = image;
    VYRE_TRY_ASSIGN(const detail::plan_counters seen,
                    s.io.replay(runtime_, *graph, params, stream_, "congruence_plan: run"));
    VYRE_TRY(detail::congruence_outcome(seen, image));
    congruence_view view;
    view.eclass_ids = s.class_ids.get();
    view.representative = s.representative.get();
    view.class_count = image.group_count();
    view.merges = seen.status.merges;
    view.rounds = image.row_count() == 0 ? 0 : seen.rounds;
    for (std::size_t c = 0; c < egraph::image_column_count; ++c)
      view.rebuilt.pointers[c] = s.rebuilt[c].get();
    view.rebuilt.counts = detail::rebuilt_counts(seen, image);
    view.kept_rows = s.kept.get();
    return view;
  }

  expected<congruence_result> run_on_host(const image_columns& host_image,
                                          dispatch_options options) {
    if (detail::runs_on_host(options, host_image.row_count(), congruence_host_below_rows))
      return cpu_engine::congruence(host_image, options.host_threads);
    VYRE_TRY(detail::check_image_counts(host_image, "congruence_plan: more groups than rows"));
    VYRE_TRY(fit(host_image.row_count(), host_image.child_count()));
    storage& s = storage_;
    const image_layout layout = image_layout::for_counts(host_image.counts);
    const auto words = static_cast<std::size_t>(layout.word_count());
    VYRE_TRY(s.staging.ensure(runtime_, words, "congruence_plan: pinned staging"));
    if (s.input.size() < words) {
      // Room for the largest image the capacity allows: 6R + C + 2G + 1 words, G <= R.
      const std::size_t most = 8 * std::size_t{capacity_.rows} + capacity_.children + 1;
      VYRE_TRY_ASSIGN(s.input, runtime_.template allocate<std::uint32_t>(
                                   most, stream_, "congruence_plan: uploaded image"));
    }
    detail::stage_columns(host_image, s.staging.get(), options.host_threads);
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.input.get(), s.staging.get(), words * sizeof(std::uint32_t),
                                  cudaMemcpyHostToDevice, stream_),
                  "congruence_plan: upload the image");
    VYRE_TRY_ASSIGN(const congruence_view view,
                    run_device(image_columns::from_words(s.input.get(), layout)));
    // One staging block for every result column: G + G + 5K + C' words.
    const std::uint32_t G = view.class_count, K = view.rebuilt.row_count(),
                        C = view.rebuilt.child_count();
    const std::size_t total = 2 * std::size_t{G} + 4 * std::size_t{K} + C;
    VYRE_TRY(s.staging.ensure(runtime_, (std::max)(total, std::size_t{1}),
                              "congruence_plan: pinned staging"));
    std::uint32_t* at = s.staging.get();
    const auto fetch = [&](const std::uint32_t* from, std::size_t count) -> expected<void> {
      if (count != 0)
        VYRE_CUDA_TRY(cudaMemcpyAsync(at, from, count * sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost, stream_),
                      "congruence_plan: download the result");
      at += count;
      return {};
    };
    VYRE_TRY(fetch(view.eclass_ids, G));
    VYRE_TRY(fetch(view.representative, G));
    VYRE_TRY(fetch(view.kept_rows, K));
    VYRE_TRY(fetch(view.rebuilt.row_eclass_ids(), K));
    VYRE_TRY(fetch(view.rebuilt.row_language_op_ids(), K));
    VYRE_TRY(fetch(view.rebuilt.row_children_lens(), K));
    VYRE_TRY(fetch(view.rebuilt.children(), C));
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "congruence_plan: download the result");
    runtime_.synced();
    congruence_result result;
    result.merges = view.merges;
    result.rounds = view.rounds;
    std::vector<std::uint32_t>* columns[] = {&result.eclass_ids,
                                             &result.representative,
                                             &result.kept_rows,
                                             &result.rebuilt.row_eclass_ids,
                                             &result.rebuilt.row_language_op_ids,
                                             &result.rebuilt.row_children_lens,
                                             &result.rebuilt.children};
    const std::size_t column_words[] = {G, G, K, K, K, K, C};  // the fetch order above
    const std::uint32_t* from[std::size(column_words)];
    const std::uint32_t* next = s.staging.get();
    for (std::size_t i = 0; i < std::size(column_words); ++i) {
      from[i] = next;
      next += column_words[i];
    }
    VYRE_TRY(detail::take_columns(std::size(column_words), columns, from, column_words,
                                  options.host_threads, "congruence_plan: result"));
    return result;
  }

  expected<egraph::device_image> copy_rebuilt(const congruence_view& view) const {
    const image_layout layout = image_layout::for_counts(view.rebuilt.counts);
    VYRE_TRY_ASSIGN(auto words, runtime_.template allocate<std::uint32_t>(
                                    static_cast<std::size_t>(layout.word_count()), stream_,
                                    "congruence_plan: rebuilt image"));
    VYRE_TRY(detail::pack_columns(view.rebuilt, words.get(), stream_,
                                  "congruence_plan: copy the rebuilt image"));
    return egraph::device_image(std::move(words), layout);
  }

  //! The pipeline's graph for inputs of at most `bucket` rows, captured on first use.
  expected<graph_type*> graph_for(std::uint32_t bucket) {
    return base::graph_for(bucket, 0, [&](cudaStream_t at) { return capture(bucket, at); });
  }

  //! The whole pipeline for inputs of at most `bucket` rows, captured on `at`: checks ->
  //! WHILE(round) -> rebuild.
  expected<graph::captured_graph_expected> capture(std::uint32_t bucket, cudaStream_t at) {
    const detail::congruence_buffers& b = storage_.buffers;
    const std::uint32_t B = bucket;
    const detail::congruence_grids grids{detail::grid_for(B), base::children_grid(B),
                                         detail::grid_for(B)};
    const Signature signature = signature_;
    auto prefix = [&](cudaStream_t on) { return detail::enqueue_congruence_checks(b, grids, on); };
    auto body = [&](cudaStream_t on, cudaGraphConditionalHandle handle) -> expected<void> {
      VYRE_TRY(detail::enqueue_congruence_round(b, detail::image_from_block{b.params}, B, grids,
                                                signature, on));
      return detail::enqueue_congruence_continue(b, handle, on);
    };
    auto suffix = [&](cudaStream_t on) {
      return detail::enqueue_congruence_rebuild(b, B, grids, on);
    };
    return detail::make_loop_graph(at, &prefix, &body, &suffix,
                                   "congruence_plan: capture the pipeline");
  }

  Signature signature_{};
};

//! `congruence_plan<P, Signature>::create`, with the policies and signature deduced.
template <policy_bundle P, class Signature = image_row_signature>
typename backend<P>::template result<congruence_plan<P, Signature>> make_congruence_plan(
    backend<P>& gpu, cudaStream_t stream, plan_capacity capacity = {},
    plan_growth growth = plan_growth::reallocate, Signature signature = {}) {
  return congruence_plan<P, Signature>::create(gpu, stream, capacity, growth, signature);
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
