// SPDX-License-Identifier: Apache-2.0
//! @file
//! How the algorithms make device loops as CUDA graphs: `prefix -> WHILE(body) -> suffix`,
//! instantiated and owned (`graph::captured_graph_expected`), through the graph component's
//! one builder (`vyre::graph::build_loop_graph`). Every WHILE graph the algorithms make (the
//! plans' pipelines, the one-shot congruence's `conditional_graph` driver) comes from
//! `make_loop_graph`. Also the plans' graph-cache key.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/key.hpp"
#include "vyre/graph/loop_graph.cuh"

namespace vyre::algorithms::detail {

//! The instantiated graph `prefix -> WHILE(body) -> suffix`, each part captured on `stream`
//! (a created, non-capturing stream): `(*prefix)(stream)` and `(*suffix)(stream)` return
//! `vyre::expected<void>`; `(*body)(stream, handle)` enqueues one round whose last kernel sets
//! the condition `handle` (`cudaGraphSetConditional`, non-zero: run again). Any part may be
//! null (absent; a null body gives `prefix -> suffix`). The condition is 1 on every launch:
//! the body runs at least once. Built by the graph component's one loop builder
//! (`vyre::graph::build_loop_graph`); the algorithms' kernels take the raw handle.
template <class Prefix, class Body, class Suffix>
expected<graph::captured_graph_expected> make_loop_graph(cudaStream_t stream, Prefix* prefix,
                                                         Body* body, Suffix* suffix,
                                                         const char* what) {
  auto round = [body](cudaStream_t on, graph::while_condition condition) {
    return (*body)(on, condition.handle);
  };
  graph::loop_graph_options options;
  options.what = what;
  return graph::build_loop_graph<on_error::return_expected>(
      stream, prefix, body != nullptr ? &round : nullptr, suffix, options);
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
