// SPDX-License-Identifier: Apache-2.0
//! @file
//! `build_loop_graph`: the one builder of device loops as CUDA graphs,
//! `prefix -> WHILE(body) -> suffix`, each part captured from a callable that enqueues work on
//! a stream, returned instantiated and owned (`basic_captured_graph`). The WHILE node is a
//! conditional node (CUDA 12.4+): its body repeats while a condition that the body's own
//! kernels set stays non-zero, so a fixpoint never returns to the host between rounds.
//!
//!     auto loop = vyre::graph::build_loop_graph(
//!         stream,
//!         [&](cudaStream_t s) { reset<<<1, 1, 0, s>>>(state); },              // prefix
//!         [&](cudaStream_t s, vyre::graph::while_condition condition) {       // body
//!           step<<<blocks, 256, 0, s>>>(state);
//!           decide<<<1, 1, 0, s>>>(state, condition);  // condition.set(again), one thread
//!         },
//!         [&](cudaStream_t s) { finish<<<blocks, 256, 0, s>>>(state); });    // suffix
//!     loop.launch(stream);
//!
//! Each part is a callable, `vyre::graph::no_stage{}` (absent), or a pointer to a callable that
//! is absent when null (chosen at run time: a null body gives `prefix -> suffix` with no loop).
//! The graph is flat: the prefix and suffix nodes are captured straight into it (no child
//! graphs), so they may hold what a captured stream may hold, allocations included.
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/cuda_compat.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/detail/capture.cuh"

namespace vyre::graph {

//! The condition of a WHILE node, passed by value to the loop's kernels. Trivially copyable.
struct while_condition {
  cudaGraphConditionalHandle handle = 0;

#if defined(__CUDACC__)
  //! Sets whether the body runs again after this round (`cudaGraphSetConditional`). Call it
  //! from one thread (concurrent calls race, as CUDA defines).
  VYRE_DEVICE void set(bool keep_going) const noexcept {
    cudaGraphSetConditional(handle, keep_going ? 1u : 0u);
  }
#endif
};

//! Marks an absent part of `build_loop_graph` (no prefix, no suffix).
struct no_stage {};

//! What the WHILE condition holds when each launch reaches the loop.
enum class loop_entry : std::uint8_t {
  body_runs_first,  //!< 1: the body runs at least once, then decides (the default)
  prefix_decides,   //!< 0: the loop is skipped unless a prefix kernel calls `condition.set(true)`
};

//! Options of `build_loop_graph`.
struct loop_graph_options {
  //! Event hook and `cudaGraphInstantiate` flags of the instantiation.
  graph_options graph{};
  loop_entry entry = loop_entry::body_runs_first;
  //! Static text that starts every error message (name the caller's pipeline).
  const char* what = "build_loop_graph";
};

namespace detail {

template <class Stage>
inline constexpr bool is_no_stage = std::same_as<std::remove_cvref_t<Stage>, no_stage> ||
                                    std::same_as<std::remove_cvref_t<Stage>, std::nullptr_t>;

//! Whether a part is there: `no_stage` never, a pointer when non-null, a callable always.
template <class Stage>
constexpr bool stage_present(const Stage& stage) noexcept {
  if constexpr (is_no_stage<Stage>) {
    return false;
  } else if constexpr (std::is_pointer_v<std::remove_cvref_t<Stage>>) {
    return stage != nullptr;
  } else {
    return true;
  }
}

//! The callable of a present part.
template <class Stage>
constexpr decltype(auto) stage_callable(Stage& stage) noexcept {
  if constexpr (std::is_pointer_v<std::remove_cvref_t<Stage>>) {
    return *stage;
  } else {
    return (stage);
  }
}

//! Runs a part with `(stream, condition)` when it takes the condition, else with `(stream)`.
template <class Callable>
expected<void> run_stage(Callable& callable, cudaStream_t stream, while_condition condition) {
  if constexpr (std::is_invocable_v<Callable&, cudaStream_t, while_condition>) {
    return invoke_capture_body(callable, stream, condition);
  } else {
    static_assert(std::is_invocable_v<Callable&, cudaStream_t>,
                  "vyre::graph::build_loop_graph: a part must be callable as f(cudaStream_t) or "
                  "f(cudaStream_t, vyre::graph::while_condition)");
    return invoke_capture_body(callable, stream);
  }
}

//! The nodes the next part depends on, with their edge data.
struct loop_frontier {
  loop_frontier() noexcept = default;
  loop_frontier(loop_frontier&&) noexcept = default;
  loop_frontier& operator=(loop_frontier&&) noexcept = default;
  ~loop_frontier() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  std::vector<cudaGraphNode_t> nodes;
  std::vector<cudaGraphEdgeData> edges;

  //! Null when every edge is a default edge (CUDA's spelling of "no edge data").
  const cudaGraphEdgeData* edge_data() const noexcept {
    for (const cudaGraphEdgeData& edge : edges) {
      const cudaGraphEdgeData zero{};
      if (std::memcmp(&edge, &zero, sizeof(edge)) != 0) return edges.data();
    }
    return nullptr;
  }
};

//! Reads the frontier of the capture under way on `stream` (before it ends).
inline expected<void> read_frontier(cudaStream_t stream, loop_frontier& out, const char* what) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaGraphNode_t* nodes = nullptr;
  const cudaGraphEdgeData* edges = nullptr;
  std::size_t count = 0;
  VYRE_CUDA_TRY(cuda_compat::capture_frontier(stream, &status, &nodes, &edges, &count), what);
  if (status != cudaStreamCaptureStatusActive)
    return {};  // invalidated: ending the capture reports it
  try {
    out.nodes.assign(nodes, nodes + count);
    if (edges != nullptr)
      out.edges.assign(edges, edges + count);
    else
      out.edges.assign(count, cudaGraphEdgeData{});
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, what)
                    .about("host allocation of the loop graph's frontier failed")
                    .with("nodes", count)
                    .fix("free host memory"));
  }
  return {};
}

//! Captures one part into `graph` after `after`; its last nodes become `after`.
template <class Callable>
expected<void> capture_part(cudaStream_t stream, cudaGraph_t graph, loop_frontier& after,
                            Callable& callable, while_condition condition, const char* what) {
  VYRE_CUDA_TRY(
      cuda_compat::begin_capture_to_graph(stream, graph, after.nodes.data(), after.edge_data(),
                                          after.nodes.size(), cudaStreamCaptureModeThreadLocal),
      what);
  loop_frontier next;
  auto part_then_frontier = [&](cudaStream_t s) -> expected<void> {
    VYRE_TRY(run_stage(callable, s, condition));
    return read_frontier(s, next, what);
  };
  // The graph is ours, not the capture's: an abandoned capture must not destroy it.
  VYRE_TRY(finish_capture(stream, false, part_then_frontier, stream));
  after = std::move(next);
  return {};
}

//! Captures a prefix or suffix when it is present.
template <class Stage>
expected<void> capture_stage(cudaStream_t stream, cudaGraph_t graph, loop_frontier& after,
                             Stage& stage, while_condition condition, const char* what) {
  if constexpr (is_no_stage<Stage>) {
    return {};
  } else {
    if (!stage_present(stage)) return {};
    return capture_part(stream, graph, after, stage_callable(stage), condition, what);
  }
}

//! The graph `prefix -> WHILE(body) -> suffix`, not instantiated.
template <class Prefix, class Body, class Suffix>
expected<unique_graph> build_loop(cudaStream_t stream, Prefix& prefix, Body& body, Suffix& suffix,
                                  const loop_graph_options& options) {
  const char* what = options.what;
  VYRE_TRY(check_capturable(stream, what));
  cudaGraph_t raw = nullptr;
  VYRE_CUDA_TRY(cudaGraphCreate(&raw, 0), what);
  unique_graph graph(raw);

  const bool looping = stage_present(body);
  while_condition condition{};
  if (looping) {
    const unsigned int start = options.entry == loop_entry::body_runs_first ? 1u : 0u;
    VYRE_CUDA_TRY(cuda_compat::conditional_handle_create(&condition.handle, raw, start,
                                                         cudaGraphCondAssignDefault),
                  what);
  }

  loop_frontier after;
  VYRE_TRY(capture_stage(stream, raw, after, prefix, condition, what));

  if constexpr (!is_no_stage<Body>) {
    if (looping) {
      auto& loop_body = stage_callable(body);
      static_assert(std::is_invocable_v<decltype(loop_body), cudaStream_t, while_condition>,
                    "vyre::graph::build_loop_graph: the body must be callable as "
                    "f(cudaStream_t, vyre::graph::while_condition): its kernels end the loop");
      cudaGraphNodeParams params{};
      params.type = cudaGraphNodeTypeConditional;
      params.conditional.handle = condition.handle;
      params.conditional.type = cudaGraphCondTypeWhile;
      params.conditional.size = 1;
      cudaGraphNode_t loop = nullptr;
      VYRE_CUDA_TRY(cuda_compat::graph_add_node(&loop, raw, after.nodes.data(), after.edge_data(),
                                                after.nodes.size(), &params),
                    what);
      const cudaGraph_t body_graph = params.conditional.phGraph_out[0];
      if (body_graph == nullptr)
        return fail(error(errc::cuda_runtime, what)
                        .about("CUDA returned no body graph for the WHILE node")
                        .fix("report this: cudaGraphAddNode succeeded without a body graph"));
      // The body graph belongs to the WHILE node (destroyed with `graph`).
      VYRE_CUDA_TRY(cuda_compat::begin_capture_to_graph(stream, body_graph, nullptr, nullptr, 0,
                                                        cudaStreamCaptureModeThreadLocal),
                    what);
      VYRE_TRY(finish_capture(stream, false, loop_body, stream, condition));
      try {
        after.nodes.assign(1, loop);
        after.edges.assign(1, cudaGraphEdgeData{});
      } catch (const std::bad_alloc&) {
        return fail(error(errc::out_of_memory, what)
                        .about("host allocation of the loop graph's frontier failed")
                        .fix("free host memory"));
      }
    }
  }

  VYRE_TRY(capture_stage(stream, raw, after, suffix, condition, what));
  return graph;
}

}  // namespace detail

//! Builds and instantiates `prefix -> WHILE(body) -> suffix` (see the file comment).
//!
//! - `prefix(stream)` / `suffix(stream)`: enqueue work on `stream`; either may also take the
//!   `while_condition` (with `loop_entry::prefix_decides` the prefix opens the loop).
//! - `body(stream, condition)`: enqueues one round; one of its kernels calls
//!   `condition.set(again)` from one thread. It may hold kernels, memsets, memcpys, empty nodes
//!   and child graphs of one device (CUDA's rule for conditional bodies).
//! - Each callable returns `void`, `cudaError_t` or `vyre::expected<void>`. Whatever a part
//!   does (returns an error, throws, invalidates its capture) the capture is ended on this
//!   thread, the partial graph is destroyed, and `stream` is usable afterwards; an exception is
//!   rethrown after that cleanup.
//! - With no body (a null pointer or `no_stage`), the graph is `prefix -> suffix` and a part
//!   that takes the condition gets an empty one (`handle == 0`) that it must not set.
//!
//! @pre `stream` is a created stream (not the legacy default stream 0) that is not capturing;
//!      it is only used to capture (launch the result on any stream).
//! @note CUDA allows one instantiation of a graph with a conditional node at a time, and such a
//!       graph cannot be cloned or used as a child graph.
//! @throws vyre::error_exception under `throw_exception` for any failure above.
template <class OnError = on_error::throw_exception, class Prefix, class Body, class Suffix>
result_t<OnError, basic_captured_graph<OnError>> build_loop_graph(
    cudaStream_t stream, Prefix&& prefix, Body&& body, Suffix&& suffix,
    const loop_graph_options& options = {}) {
  auto run = [&]() -> expected<basic_captured_graph<OnError>> {
    VYRE_TRY_ASSIGN(detail::unique_graph graph,
                    detail::build_loop(stream, prefix, body, suffix, options));
    options.graph.hook(graph_event::capture);
    auto adopted =
        basic_captured_graph<on_error::return_expected>::adopt(graph.release(), options.graph);
    if (!adopted) return fail(adopted.error());
    return std::move(*adopted).template with_policy<OnError>();
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::graph
