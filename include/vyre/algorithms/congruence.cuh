// SPDX-License-Identifier: Apache-2.0
//! @file
//! Congruence closure on the device (the GPU rebuild), one shot: `congruence(gpu, image,
//! stream)`. Rows are congruent when they have the same op and the same children after mapping
//! every child to its representative; their e-classes merge until nothing merges, and the
//! result carries the class map and the rebuilt image (canonical, duplicate-free, regrouped,
//! re-signed). The kernels are the congruence pipeline's (`detail/congruence_kernels.cuh`,
//! shared with `congruence_plan`), enqueued once on the caller's stream with bucket = rows: the
//! input checks, the rounds (a flag readback per round, or one conditional WHILE graph), the
//! class map and rebuilt columns, then one readback of the counts and a compaction of the
//! columns into one packed image. Memory comes from the backend's allocation policy, pinned
//! pool and stream pool; results follow its error policy.
#pragma once

#include <climits>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/detail/congruence_kernels.cuh"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/loop_graph.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/egraph/signature.hpp"
#include "vyre/runtime/backend.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! What the device congruence closure found (device buffers, plus counters on the host).
struct device_congruence_result {
  device_array<std::uint32_t> eclass_ids;      //!< G original e-class ids, ascending
  device_array<std::uint32_t> representative;  //!< parallel: smallest id of its merged set
  std::uint64_t merges = 0;                    //!< unions that joined two sets
  std::uint32_t rounds = 0;                    //!< rounds run, the final (merge-free) one included
  egraph::device_image rebuilt;                //!< canonical, duplicate-free, regrouped, re-signed
  device_array<std::uint32_t> kept_rows;       //!< original row of each rebuilt row (R slots)

  VYRE_HOST_MOVE_ONLY_MEMBERS(
      device_congruence_result);  // host-only (vyre/detail/host_special_members.hpp)
};

VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(device_congruence_result);

//! The signature congruence buckets rows by (its `Signature` parameter): the image's row
//! signature (docs/image_format.md), over dense class indices. Tests pass a weaker one to force
//! collisions, which the full-row comparison then resolves.
struct image_row_signature {
  VYRE_HOST_DEVICE std::uint32_t operator()(std::uint32_t op, const std::uint32_t* children,
                                            std::uint32_t length) const noexcept {
    return egraph::row_signature(op, children, length);
  }
};
//! Deprecated name of `image_row_signature`.
using design_signature [[deprecated("use image_row_signature")]] = image_row_signature;

namespace detail {

//! Copies the nine columns of `from` (any placement) into the packed image `to` (layout order).
inline expected<void> pack_columns(const image_columns& from, std::uint32_t* to,
                                   cudaStream_t stream, const char* what) {
  const image_layout at = image_layout::for_counts(from.counts);
  for (std::size_t c = 0; c < egraph::image_column_count; ++c) {
    const auto column = from.column(static_cast<image_column>(c));
    VYRE_TRY(copy_on_device(to + at.spans[c].offset, column.data(), column.size(), stream, what));
  }
  return {};
}

//! The work arrays of one congruence pipeline (all but its parameters, results, rebuilt columns
//! and CUB scratch) for `rows` rows, `parents` union-find entries and `children` children.
struct congruence_work {
  device_array<std::uint32_t> dense_row, parent, dense_child, canon, keys, rows, sorted_keys,
      sorted_rows, run_start, counts;
  device_array<std::uint8_t> leader_flag;

  static expected<congruence_work> allocate(const runtime_ref& runtime, std::size_t rows,
                                            std::size_t parents, std::size_t children,
                                            cudaStream_t stream, const char* what) {
    congruence_work w;
    const std::pair<device_array<std::uint32_t>*, std::size_t> sized[] = {
        {&w.dense_row, rows},   {&w.parent, parents},   {&w.dense_child, children},
        {&w.canon, children},   {&w.keys, rows},        {&w.rows, rows},
        {&w.sorted_keys, rows}, {&w.sorted_rows, rows}, {&w.run_start, rows},
        {&w.counts, rows + 1}};
    for (const auto& [buffer, count] : sized) {
      VYRE_TRY_ASSIGN(*buffer, runtime.allocate<std::uint32_t>(count, stream, what));
    }
    VYRE_TRY_ASSIGN(w.leader_flag, runtime.allocate<std::uint8_t>(rows, stream, what));
    // Stale-but-initialised: the group scan reads counts past the last run.
    VYRE_CUDA_TRY(cudaMemsetAsync(w.counts.get(), 0, w.counts.size_bytes(), stream), what);
    return w;
  }

  //! Points the work fields of `b` at these arrays.
  void wire(congruence_buffers& b) const noexcept {
    b.dense_row = dense_row.get();
    b.parent = parent.get();
    b.dense_child = dense_child.get();
    b.canon = canon.get();
    b.keys = keys.get();
    b.rows = rows.get();
    b.sorted_keys = sorted_keys.get();
    b.sorted_rows = sorted_rows.get();
    b.run_start = run_start.get();
    b.counts = counts.get();
    b.leader_flag = leader_flag.get();
  }
  VYRE_HOST_MOVE_ONLY_MEMBERS(congruence_work);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(congruence_work);

template <class Signature>
expected<device_congruence_result> congruence_once(const runtime_ref& runtime,
                                                   const image_columns& image, cudaStream_t stream,
                                                   loop_driver driver, Signature signature) {
  const std::uint32_t R = image.row_count(), C = image.child_count(), G = image.group_count();
  VYRE_TRY(check_image_counts(image, "congruence: more groups than rows"));
  if (R >= static_cast<std::uint32_t>(INT_MAX))
    return fail(error(errc::abi_limit, "congruence: too many rows for CUB's item counts")
                    .with("rows", R)
                    .with("max_rows", INT_MAX - 1)
                    .fix("shard the e-graph into parts of fewer than 2^31 - 1 rows"));
  device_congruence_result result;
  if (R == 0) {
    if (C != 0) {  // children without rows: the first names no e-class
      device_status status = clean_status;
      status.bad_child = 0;
      return fail(congruence_input_error(status, image));
    }
    VYRE_TRY_ASSIGN(auto words,
                    runtime.allocate<std::uint32_t>(1, stream, "congruence: rebuilt image"));
    VYRE_CUDA_TRY(cudaMemsetAsync(words.get(), 0, sizeof(std::uint32_t), stream),
                  "congruence: rebuilt image");
    result.rebuilt = egraph::device_image(std::move(words), image_layout::for_counts(0, 0, 0));
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "congruence: finish");
    runtime.synced();
    return result;
  }

  // Every buffer of the pipeline at bucket = R; the rebuilt columns in one block laid out for
  // the largest image the input allows (R rows, C children, R groups).
  const char* what = "congruence: allocate";
  struct staged {
    plan_params params;
    plan_counters counters;
  };
  VYRE_TRY_ASSIGN(auto host, pinned_array<staged>::allocate(runtime, 1, "congruence: staging"));
  wait_on_exit copies_done(stream);  // the parameter upload reads `host`
  VYRE_TRY_ASSIGN(auto params, runtime.allocate<plan_params>(1, stream, what));
  VYRE_TRY_ASSIGN(auto counters, runtime.allocate<plan_counters>(1, stream, what));
  VYRE_TRY_ASSIGN(const congruence_work work,
                  congruence_work::allocate(runtime, R, G, C, stream, what));
  VYRE_TRY_ASSIGN(result.eclass_ids, runtime.allocate<std::uint32_t>(G, stream, what));
  VYRE_TRY_ASSIGN(result.representative, runtime.allocate<std::uint32_t>(G, stream, what));
  VYRE_TRY_ASSIGN(result.kept_rows, runtime.allocate<std::uint32_t>(R, stream, what));
  const image_layout largest = image_layout::for_counts(R, C, R);
  VYRE_TRY_ASSIGN(const auto rebuilt_columns,
                  runtime.allocate<std::uint32_t>(static_cast<std::size_t>(largest.word_count()),
                                                  stream, "congruence: rebuilt columns"));

  congruence_buffers b;
  b.params = params.get();
  b.counters = counters.get();
  work.wire(b);
  b.class_ids = result.eclass_ids.get();
  b.representative = result.representative.get();
  b.kept = result.kept_rows.get();
  for (std::size_t c = 0; c < egraph::image_column_count; ++c)
    b.rebuilt[c] = rebuilt_columns.get() + largest.spans[c].offset;
  VYRE_TRY_ASSIGN(b.scratch_bytes, congruence_scratch_bytes(b, R, stream));
  VYRE_TRY_ASSIGN(auto scratch, runtime.allocate<unsigned char>(b.scratch_bytes, stream,
                                                                "congruence: CUB scratch"));
  b.scratch = scratch.get();

  staged& h = *host.get();
  h.params = plan_params{};
  h.params.image = image;
  VYRE_CUDA_TRY(
      cudaMemcpyAsync(params.get(), &h.params, sizeof(plan_params), cudaMemcpyHostToDevice, stream),
      "congruence: upload parameters");
  // A thread per item (resident-sized grids made the congruence kernels 1.12-1.20x slower at
  // 4M-16M rows on an H100, unlike extraction's relaxation rounds).
  const congruence_grids grids{grid_for(R), grid_for(C), grid_for(G)};
  VYRE_TRY(enqueue_congruence_checks(b, grids, stream));

  // The rounds. Every round but the last merges at least once, so G + 1 rounds always
  // suffice; a bad input makes the first round a no-op that merges nothing.
  const std::uint32_t round_limit = G + 1;
  std::uint32_t rounds = 0;
  graph::captured_graph_expected loop;  // kept until the counters are read back
  if (driver == loop_driver::flag_readback) {
    for (bool changed = true; changed;) {
      if (rounds == round_limit)
        return fail(
            error(errc::invalid_state, "congruence: more rounds than e-classes (a library bug)")
                .with("rounds", rounds)
                .with("classes", G)
                .fix("report this with the input"));
      ++rounds;
      VYRE_TRY(enqueue_congruence_round(b, image_by_value{image}, R, grids, signature, stream));
      VYRE_TRY(copy_to_host(runtime, &h.counters.status, &counters.get()->status, 1, stream,
                            "congruence: read round status"));
      changed = h.counters.status.changed != 0;
    }
  } else {
    // One graph whose only node is a conditional WHILE; its body is one round plus the kernel
    // that decides whether to run another (counting the rounds on the device).
    auto body = [&](cudaStream_t on, cudaGraphConditionalHandle handle) -> expected<void> {
      VYRE_TRY(enqueue_congruence_round(b, image_by_value{image}, R, grids, signature, on));
      return enqueue_congruence_continue(b, handle, on);
    };
    using no_part = expected<void> (*)(cudaStream_t);
    if (stream != nullptr && stream != cudaStreamLegacy) {
      // Captured on the work stream itself, which only diverts the round's launches into the
      // graph: the host builds and instantiates it while the checks above run. Then it waits
      // for them (and this call's stream-ordered allocations) before the launch: launched at
      // once, memcheck reported the graph's reads of those buffers as out of bounds, as if it
      // checked against the allocations done at launch (docs/sanitizers.md). The wait costs a
      // launch gap.
      VYRE_TRY_ASSIGN(
          loop, make_loop_graph(stream, static_cast<no_part*>(nullptr), &body,
                                static_cast<no_part*>(nullptr), "congruence: the WHILE graph"));
      VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "congruence: wait for the checks");
      runtime.synced();
    } else {
      // The legacy default stream cannot be captured: a leased stream, ordered after it. The
      // event lease goes back before the capture, and its return waits for the work on
      // `stream` (held until the launch instead, compute-sanitizer's memcheck reports the
      // graph's first reads of this call's stream-ordered buffers as out of bounds).
      VYRE_TRY_ASSIGN(stream_lease capture, runtime.streams->acquire());
      { VYRE_TRY_ASSIGN(event_lease ordered, order_capture_after(runtime, capture.get(), stream)); }
      VYRE_TRY_ASSIGN(
          loop, make_loop_graph(capture.get(), static_cast<no_part*>(nullptr), &body,
                                static_cast<no_part*>(nullptr), "congruence: the WHILE graph"));
    }
    VYRE_TRY(loop.launch(stream));
    if (runtime.telemetry != nullptr) runtime.telemetry->record_graph_launch();
  }

  // The class map and the rebuilt columns, then one readback of every count.
  VYRE_TRY(enqueue_congruence_rebuild(b, R, grids, stream));
  VYRE_TRY(
      copy_to_host(runtime, &h.counters, counters.get(), 1, stream, "congruence: read counters"));
  copies_done.disarm();
  const plan_counters seen = h.counters;
  VYRE_TRY(congruence_outcome(seen, image));
  result.merges = seen.status.merges;
  result.rounds = driver == loop_driver::flag_readback ? rounds : seen.rounds;

  // The rebuilt image, packed: its columns moved out of the largest layout's places.
  image_columns columns;
  columns.counts = rebuilt_counts(seen, image);
  for (std::size_t c = 0; c < egraph::image_column_count; ++c) columns.pointers[c] = b.rebuilt[c];
  const image_layout layout = image_layout::for_counts(columns.counts);
  VYRE_TRY_ASSIGN(auto words,
                  runtime.allocate<std::uint32_t>(static_cast<std::size_t>(layout.word_count()),
                                                  stream, "congruence: rebuilt image"));
  VYRE_TRY(pack_columns(columns, words.get(), stream, "congruence: pack the rebuilt image"));
  result.rebuilt = egraph::device_image(std::move(words), layout);
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "congruence: finish");
  runtime.synced();
  return result;
}

}  // namespace detail

//! Congruence closure of the packed image `image` (device pointers, e.g. `build(...)->columns()`),
//! on `stream`, with `gpu`'s memory. The representative of a set is its smallest original
//! e-class id; the result is ready when the call returns.
//! @param driver `loop_driver::flag_readback`: one 144-byte status readback per round;
//!        `loop_driver::conditional_graph`: the rounds run inside one CUDA graph with a
//!        conditional WHILE node (CUDA 12.4+; built and instantiated per call), with no host
//!        round trip until the fixpoint. The graph is captured on `stream` itself (a leased
//!        stream when `stream` is the legacy default stream): work that other threads enqueue
//!        on `stream` during the call would be captured with it.
//! @tparam Signature the bucketing hash over (op, dense canonical children, length); any
//!         function works, collisions only cost time (tests use a degenerate one).
//! @throws / returns (the backend's error policy): a child without rows (`errc::not_found`),
//!         a children range past the column (`errc::out_of_range`), more groups than rows
//!         (`errc::invalid_layout`), allocation failures (`errc::out_of_memory`), CUDA
//!         failures. Nothing leaks.
template <policy_bundle P, class Signature = image_row_signature>
typename backend<P>::template result<device_congruence_result> congruence(
    backend<P>& gpu, const image_columns& image, cudaStream_t stream,
    loop_driver driver = loop_driver::flag_readback, Signature signature = {}) {
  return apply_error_policy<typename P::error_policy>(
      detail::congruence_once(detail::runtime_of(gpu), image, stream, driver, signature));
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
