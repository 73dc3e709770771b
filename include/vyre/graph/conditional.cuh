// SPDX-License-Identifier: Apache-2.0
//! @file
//! Conditional WHILE graphs (CUDA 12.4+): a body that repeats on the device while a condition
//! the body itself sets stays non-zero, so a fixpoint loop never returns to the host between
//! rounds.
//!
//! Two levels:
//! - `build_while_graph(stream, body)`: the body gets the loop's `while_condition` and decides
//!   itself (`condition.set(keep_going)` from one device thread per round).
//! - `build_fixpoint_graph(stream, control, max_rounds, body)`: the body's kernels call
//!   `mark_changed(control)` when they change anything; vyre appends a one-thread decision
//!   kernel that repeats the body while something changed, up to `max_rounds` rounds, and
//!   records the rounds run and whether the loop converged in `*control`.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <cuda/std/cstdint>

#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/detail/capture.cuh"

#if CUDART_VERSION < 12040
#error "vyre/graph/conditional.cuh needs CUDA 12.4 or newer (conditional WHILE graph nodes)"
#endif

namespace vyre::graph {

//! The condition of a WHILE node, passed by value to the body's kernels. Trivially copyable.
struct while_condition {
  cudaGraphConditionalHandle handle = 0;

#if defined(__CUDACC__)
  //! Sets whether the body runs again after this round. Call it from one thread per round
  //! (concurrent calls race, as CUDA defines).
  VYRE_DEVICE void set(bool keep_going) const noexcept {
    cudaGraphSetConditional(handle, keep_going ? 1u : 0u);
  }
#endif
};

//! Device-resident state of a fixpoint loop (user-allocated device memory, 16 bytes, 4-byte
//! aligned). Each graph launch zeroes `changed`, `rounds` and `converged` first.
struct fixpoint_control {
  cuda::std::uint32_t changed = 0;    //!< set by the body when a round changed something
  cuda::std::uint32_t rounds = 0;     //!< rounds run in the last launch
  cuda::std::uint32_t converged = 0;  //!< 1 when the last round changed nothing
  cuda::std::uint32_t reserved = 0;
};

#if defined(__CUDACC__)
//! Records, from any device thread, that this round changed something.
VYRE_DEVICE inline void mark_changed(fixpoint_control* control) noexcept {
  atomicExch(&control->changed, 1u);
}

namespace detail {
// One thread: end of a round. A template so a header kernel has one definition per program.
template <int = 0>
VYRE_KERNEL void fixpoint_decide(cudaGraphConditionalHandle handle, fixpoint_control* control,
                                 cuda::std::uint32_t max_rounds) {
  const cuda::std::uint32_t rounds = control->rounds + 1u;
  const bool changed = control->changed != 0u;
  control->rounds = rounds;
  control->changed = 0u;
  control->converged = changed ? 0u : 1u;
  cudaGraphSetConditional(handle, (changed && rounds < max_rounds) ? 1u : 0u);
}
}  // namespace detail
#endif

namespace detail {

//! A graph holding `[first] -> WHILE(handle){ body }`: `first` (optional) is a memset that
//! runs before the loop. The body is captured into the WHILE node's body graph.
template <class Body>
expected<unique_graph> build_while(cudaStream_t stream, const cudaMemsetParams* first,
                                   Body& body) {
  VYRE_TRY(check_capturable(stream, "build_while_graph"));
  cudaGraph_t raw = nullptr;
  VYRE_CUDA_TRY(cudaGraphCreate(&raw, 0), "build_while_graph: cudaGraphCreate");
  unique_graph graph(raw);

  cudaGraphNode_t before = nullptr;
  if (first != nullptr)
    VYRE_CUDA_TRY(cudaGraphAddMemsetNode(&before, raw, nullptr, 0, first),
                  "build_while_graph: cudaGraphAddMemsetNode (loop state reset)");

  // Each launch starts with the condition at 1: the body runs at least once.
  cudaGraphConditionalHandle handle = 0;
  VYRE_CUDA_TRY(cudaGraphConditionalHandleCreate(&handle, raw, 1u, cudaGraphCondAssignDefault),
                "build_while_graph: cudaGraphConditionalHandleCreate");
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t loop = nullptr;
  VYRE_CUDA_TRY(cudaGraphAddNode(&loop, raw, before != nullptr ? &before : nullptr, nullptr,
                                 before != nullptr ? 1u : 0u, &params),
                "build_while_graph: cudaGraphAddNode (conditional WHILE)");
  cudaGraph_t body_graph = params.conditional.phGraph_out[0];
  if (body_graph == nullptr)
    return fail(error(errc::cuda_runtime, "build_while_graph: CUDA returned no body graph for "
                                          "the WHILE node")
                    .fix("report this: cudaGraphAddNode succeeded without a body graph"));

  // The body graph belongs to the WHILE node (destroyed with `graph`), never to us.
  VYRE_CUDA_TRY(cudaStreamBeginCaptureToGraph(stream, body_graph, nullptr, nullptr, 0,
                                              cudaStreamCaptureModeThreadLocal),
                "build_while_graph: cudaStreamBeginCaptureToGraph");
  VYRE_TRY(finish_capture(stream, false, body, stream, while_condition{handle}));
  return graph;
}

}  // namespace detail

//! Builds and instantiates a graph whose single WHILE node repeats `body` while its condition
//! is non-zero. The condition starts at 1 on every launch; the body's kernels receive the
//! `while_condition` and must clear it (`condition.set(false)`) to stop.
//!
//! `body(stream, condition)` enqueues the body on `stream` and returns `void`, `cudaError_t`
//! or `vyre::expected<void>`; the capture rules and cleanup guarantees are those of
//! `captured_graph::capture_on_stream`. The body may hold kernels, memsets, memcpys, empty
//! nodes and child graphs of one device (CUDA's rule for conditional bodies).
//! @note CUDA allows one instantiation of a graph with conditional nodes at a time, and such
//!       a graph cannot be cloned or used as a child graph.
template <class OnError = on_error::throw_exception, class Body>
result_t<OnError, basic_captured_graph<OnError>> build_while_graph(
    cudaStream_t stream, Body&& body, const graph_options& options = {}) {
  auto run = [&]() -> expected<basic_captured_graph<OnError>> {
    VYRE_TRY_ASSIGN(detail::unique_graph graph, detail::build_while(stream, nullptr, body));
    options.hook(graph_event::capture);
    auto adopted = basic_captured_graph<on_error::return_expected>::adopt(graph.release(), options);
    if (!adopted) return fail(adopted.error());
    return std::move(*adopted).template with_policy<OnError>();
  };
  return apply_error_policy<OnError>(run());
}

#if defined(__CUDACC__)
//! Builds and instantiates a device fixpoint loop. Each launch: zero `control`'s counters, then
//! repeat { `body(stream)`; decide } where decide ends the loop once a round did not call
//! `mark_changed(control)` or after `max_rounds` rounds. Read `control->rounds` and
//! `control->converged` after the launch completes (`converged == 0` with `rounds ==
//! max_rounds` means the cap stopped it).
//! @pre `control` points at device memory for one `fixpoint_control`; `max_rounds >= 1`.
template <class OnError = on_error::throw_exception, class Body>
result_t<OnError, basic_captured_graph<OnError>> build_fixpoint_graph(
    cudaStream_t stream, fixpoint_control* control, std::uint32_t max_rounds, Body&& body,
    const graph_options& options = {}) {
  auto run = [&]() -> expected<basic_captured_graph<OnError>> {
    if (control == nullptr)
      return fail(error(errc::invalid_argument, "build_fixpoint_graph: control is null")
                      .fix("pass device memory for one vyre::graph::fixpoint_control"));
    if (max_rounds == 0)
      return fail(error(errc::invalid_argument, "build_fixpoint_graph: max_rounds must be at "
                                                "least 1")
                      .with("max_rounds", max_rounds)
                      .fix("bound the loop by the most rounds the fixpoint may need"));
    cudaMemsetParams reset{};
    reset.dst = control;
    reset.value = 0;
    reset.elementSize = 4;
    reset.width = sizeof(fixpoint_control) / 4;  // every field: the host reads it whole
    reset.height = 1;
    auto decide_after_body = [&](cudaStream_t s, while_condition condition) -> expected<void> {
      VYRE_TRY(detail::invoke_capture_body(body, s));
      detail::fixpoint_decide<<<1, 1, 0, s>>>(condition.handle, control, max_rounds);
      return cuda_check(cudaGetLastError(), "build_fixpoint_graph: launch of the decision kernel");
    };
    VYRE_TRY_ASSIGN(detail::unique_graph graph,
                    detail::build_while(stream, &reset, decide_after_body));
    options.hook(graph_event::capture);
    auto adopted = basic_captured_graph<on_error::return_expected>::adopt(graph.release(), options);
    if (!adopted) return fail(adopted.error());
    return std::move(*adopted).template with_policy<OnError>();
  };
  return apply_error_policy<OnError>(run());
}
#endif

}  // namespace vyre::graph
