// SPDX-License-Identifier: Apache-2.0
//! @file
//! The algorithms' one builder of device loops as CUDA graphs: `prefix -> WHILE(body) ->
//! suffix`, instantiated and owned (`graph::captured_graph_expected`). Every WHILE graph the
//! algorithms make (the plans' pipelines, the one-shot congruence's `conditional_graph` driver)
//! comes from `make_loop_graph`, so switching to the graph component's builder is one edit
//! here. Also the plans' graph-cache key.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/detail/capture.cuh"
#include "vyre/graph/key.hpp"

namespace vyre::algorithms::detail {

//! Captures `(*part)(stream)` on `stream` into a new graph; the capture always ends.
template <class Part>
expected<graph::detail::unique_graph> capture_part(cudaStream_t stream, Part& part,
                                                   const char* what) {
  VYRE_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), what);
  VYRE_TRY_ASSIGN(cudaGraph_t raw, graph::detail::finish_capture(stream, true, part, stream));
  return graph::detail::unique_graph(raw);
}

//! Adds `part` (when not null) as a child graph after `*before` (when not null); `*before`
//! becomes the new node.
template <class Part>
expected<void> add_part(cudaStream_t stream, cudaGraph_t graph, cudaGraphNode_t* before, Part* part,
                        const char* what) {
  if (part == nullptr) return {};
  VYRE_TRY_ASSIGN(auto child, capture_part(stream, *part, what));
  cudaGraphNode_t node = nullptr;
  VYRE_CUDA_TRY(cudaGraphAddChildGraphNode(&node, graph, *before == nullptr ? nullptr : before,
                                           *before == nullptr ? 0 : 1, child.get()),
                what);
  *before = node;
  return {};
}

//! The instantiated graph `prefix -> WHILE(body) -> suffix`, each part captured on `stream`
//! (a created, non-capturing stream): `(*prefix)(stream)` and `(*suffix)(stream)` return
//! `vyre::expected<void>`; `(*body)(stream, handle)` enqueues one round whose last kernel sets
//! the condition `handle` (`cudaGraphSetConditional`, non-zero: run again). Any part may be
//! null (absent; a null body gives `prefix -> suffix`). The condition is 1 on every launch:
//! the body runs at least once.
//! @note Conditional WHILE nodes need CUDA 12.4+.
template <class Prefix, class Body, class Suffix>
expected<graph::captured_graph_expected> make_loop_graph(cudaStream_t stream, Prefix* prefix,
                                                         Body* body, Suffix* suffix,
                                                         const char* what) {
  cudaGraph_t raw = nullptr;
  VYRE_CUDA_TRY(cudaGraphCreate(&raw, 0), what);
  graph::detail::unique_graph top(raw);
  cudaGraphNode_t before = nullptr;
  VYRE_TRY(add_part(stream, raw, &before, prefix, what));
  if (body != nullptr) {
    cudaGraphConditionalHandle handle{};
    VYRE_CUDA_TRY(cudaGraphConditionalHandleCreate(&handle, raw, 1, cudaGraphCondAssignDefault),
                  what);
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t loop = nullptr;
    const std::size_t dependencies = before == nullptr ? 0 : 1;
    const cudaGraphNode_t* after = before == nullptr ? nullptr : &before;
#if CUDART_VERSION >= 13000
    VYRE_CUDA_TRY(cudaGraphAddNode(&loop, raw, after, nullptr, dependencies, &params), what);
#else
    VYRE_CUDA_TRY(cudaGraphAddNode(&loop, raw, after, dependencies, &params), what);
#endif
    const cudaGraph_t body_graph = params.conditional.phGraph_out[0];
    if (body_graph == nullptr)
      return fail(
          error(errc::cuda_runtime, what).fix("report this: CUDA returned no WHILE body graph"));
    VYRE_CUDA_TRY(cudaStreamBeginCaptureToGraph(stream, body_graph, nullptr, nullptr, 0,
                                                cudaStreamCaptureModeThreadLocal),
                  what);
    // The body graph belongs to the conditional node: an abandoned capture must not free it.
    VYRE_TRY(graph::detail::finish_capture(stream, false, *body, stream, handle));
    before = loop;
  }
  VYRE_TRY(add_part(stream, raw, &before, suffix, what));
  auto exec = graph::captured_graph_expected::adopt(top.release());
  if (!exec) {
    error reported = exec.error();
    return fail(reported.fix("conditional WHILE nodes need CUDA 12.4+ (driver and runtime)"));
  }
  return std::move(*exec);
}

//! Plans cache one graph per row bucket (and variant) in a `graph::graph_cache`: its key,
//! spelled in the cache's key type (`probe_capacity` = bucket, `key_arity` = variant).
inline graph::graph_key plan_graph_key(std::uint32_t bucket, std::uint8_t variant) noexcept {
  graph::graph_key key;
  key.key_arity = variant;
  key.probe_capacity = bucket;
  key.node_layout_version = 0x706C616Eu;  // "plan": never a join pipeline's key
  return key;
}

}  // namespace vyre::algorithms::detail
