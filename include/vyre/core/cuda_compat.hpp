// SPDX-License-Identifier: Apache-2.0
//! @file
//! Every difference between the CUDA runtime versions vyre supports (12.4 up to 13.x), in one
//! place: the rest of vyre calls these wrappers and never tests `CUDART_VERSION` itself.
//! Host-only (any C++20 compiler with the CUDA include path).
//!
//! | call                                  | CUDA 12.x                      | CUDA 13            |
//! | ------------------------------------- | ------------------------------ | ------------------ |
//! | add a node with edge data             | `cudaGraphAddNode_v2` (12.3+)  | `cudaGraphAddNode` |
//! | a capture's current dependencies      | `cudaStreamGetCaptureInfo_v3`  |
//! `cudaStreamGetCaptureInfo` | | a driver entry point of one version   |
//! `cudaGetDriverEntryPointByVersion` (12.5+), else `cudaGetDriverEntryPoint` |
//! `cudaGetDriverEntryPointByVersion` |
//!
//! `cudaStreamBeginCaptureToGraph` and `cudaGraphConditionalHandleCreate` (both 12.3+) have
//! one signature in every supported version; they are wrapped here too so that a future change
//! lands in this file only.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

#include "vyre/core/config.hpp"

#if !defined(CUDART_VERSION)
#error \
    "vyre/core/cuda_compat.hpp: <cuda_runtime_api.h> did not define CUDART_VERSION. Fix: put the include directory of a CUDA toolkit >= 12.4 on the include path."
#elif CUDART_VERSION < VYRE_MIN_CUDART_VERSION && !defined(VYRE_DETAIL_OLD_CUDART_REPORTED)
#error \
    "vyre needs the CUDA runtime headers of CUDA 12.4 or newer (CUDART_VERSION >= 12040) for conditional WHILE graph nodes, but an older toolkit's headers were found. Fix: install CUDA >= 12.4 and put its include directory first (or point CMake at it: -DCMAKE_CUDA_COMPILER=/path/to/cuda-12.4+/bin/nvcc)."
#endif

namespace vyre::cuda_compat {

//! Adds a node with explicit edge data (`edges` may be null: default edges).
inline cudaError_t graph_add_node(cudaGraphNode_t* node, cudaGraph_t graph,
                                  const cudaGraphNode_t* dependencies,
                                  const cudaGraphEdgeData* edges, std::size_t count,
                                  cudaGraphNodeParams* params) noexcept {
#if CUDART_VERSION >= 13000
  return cudaGraphAddNode(node, graph, dependencies, edges, count, params);
#else
  return cudaGraphAddNode_v2(node, graph, dependencies, edges, count, params);
#endif
}

//! The dependencies (and their edge data) that the next node captured on `stream` would get:
//! the capture's current frontier. The arrays belong to CUDA and stay valid until the next call
//! on `stream`.
inline cudaError_t capture_frontier(cudaStream_t stream, cudaStreamCaptureStatus* status,
                                    const cudaGraphNode_t** dependencies,
                                    const cudaGraphEdgeData** edges, std::size_t* count) noexcept {
#if CUDART_VERSION >= 13000
  return cudaStreamGetCaptureInfo(stream, status, nullptr, nullptr, dependencies, edges, count);
#else
  return cudaStreamGetCaptureInfo_v3(stream, status, nullptr, nullptr, dependencies, edges, count);
#endif
}

//! Begins a capture of `stream` that appends to the existing `graph`, after `dependencies`.
inline cudaError_t begin_capture_to_graph(cudaStream_t stream, cudaGraph_t graph,
                                          const cudaGraphNode_t* dependencies,
                                          const cudaGraphEdgeData* edges, std::size_t count,
                                          cudaStreamCaptureMode mode) noexcept {
  return cudaStreamBeginCaptureToGraph(stream, graph, dependencies, edges, count, mode);
}

//! Creates the condition handle of a conditional node of `graph`.
inline cudaError_t conditional_handle_create(cudaGraphConditionalHandle* handle, cudaGraph_t graph,
                                             unsigned int default_value,
                                             unsigned int flags) noexcept {
  return cudaGraphConditionalHandleCreate(handle, graph, default_value, flags);
}

//! The driver function `symbol` as of CUDA `version` (1000 * major + 10 * minor). Before 12.5
//! the runtime has no by-version query; it then returns the variant of the runtime's own
//! version, which is the same function for every entry point whose ABI did not change since
//! `version`.
inline cudaError_t driver_entry_point(const char* symbol, void** function, unsigned int version,
                                      unsigned long long flags,
                                      cudaDriverEntryPointQueryResult* query) noexcept {
#if CUDART_VERSION >= 12050
  return cudaGetDriverEntryPointByVersion(symbol, function, version, flags, query);
#else
  (void)version;
  return cudaGetDriverEntryPoint(symbol, function, flags, query);
#endif
}

}  // namespace vyre::cuda_compat
