// SPDX-License-Identifier: Apache-2.0
//! @file
//! Internals of stream capture: owning handles for graphs and executable graphs, and the one
//! routine that runs a user callable between the begin and the end of a capture and always
//! ends the capture, whatever the callable does.
#pragma once

#include <concepts>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/graph/node_kind.hpp"

namespace vyre::graph::detail {

struct graph_deleter {
  void operator()(cudaGraph_t graph) const noexcept {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
  }
};
struct exec_deleter {
  void operator()(cudaGraphExec_t exec) const noexcept {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
  }
};
//! Owns a `cudaGraph_t` (a `CUgraph_st*`); destroys it exactly once.
using unique_graph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, graph_deleter>;
//! Owns a `cudaGraphExec_t`; destroys it exactly once.
using unique_exec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, exec_deleter>;

template <class>
inline constexpr bool dependent_false = false;

//! Runs a capture callable and turns what it returns into `expected<void>`: `void` is success,
//! a `cudaError_t` is checked, a `vyre::expected<void>` passes through. Exceptions propagate.
template <class Body, class... Args>
expected<void> invoke_capture_body(Body& body, Args... args) {
  using result = std::invoke_result_t<Body&, Args...>;
  if constexpr (std::is_void_v<result>) {
    std::invoke(body, args...);
    return {};
  } else if constexpr (std::same_as<std::remove_cvref_t<result>, cudaError_t>) {
    return cuda_check(std::invoke(body, args...),
                      "graph capture: the capture callable returned "
                      "a CUDA error");
  } else if constexpr (std::same_as<std::remove_cvref_t<result>, expected<void>>) {
    return std::invoke(body, args...);
  } else {
    static_assert(dependent_false<result>,
                  "vyre::graph capture: the callable must return void, cudaError_t or "
                  "vyre::expected<void>");
  }
}

//! Ends a capture that is being abandoned: ends it on this thread (thread-local capture mode
//! requires the thread that began it), destroys the partial graph when we own it, and clears
//! the launch errors the abandoned capture left in this thread's last-error slot.
inline void abandon_capture(cudaStream_t stream, bool destroy_partial) noexcept {
  cudaGraph_t partial = nullptr;
  (void)cudaStreamEndCapture(stream, &partial);
  if (destroy_partial && partial != nullptr) (void)cudaGraphDestroy(partial);
  (void)cudaGetLastError();
}

//! Checks that `stream` can start a capture: not the legacy default stream, not capturing.
inline expected<void> check_capturable(cudaStream_t stream, const char* context) noexcept {
  if (stream == nullptr)
    return fail(error(errc::invalid_argument, context)
                    .about("the legacy default stream (0) cannot be captured")
                    .fix("capture on a created stream, e.g. cudaStreamCreateWithFlags(&s, "
                         "cudaStreamNonBlocking)"));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  VYRE_CUDA_TRY(cudaStreamIsCapturing(stream, &status), "graph capture: cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone)
    return fail(error(errc::invalid_state, context)
                    .about("the stream is already capturing")
                    .with("capture_status", static_cast<std::uint64_t>(status))
                    .fix("end the other capture first: captures on one stream do not nest"));
  return {};
}

//! Runs `body(args...)` on a stream whose capture has just begun, then ends the capture.
//! Whatever happens (an error returned, an exception thrown, a capture invalidated by a call
//! that cannot be captured) the capture is ended on this thread and, when `owns_partial`, a
//! partial graph is destroyed; the stream is back in normal mode afterwards. Exceptions are
//! rethrown after that cleanup.
//! @return the captured graph (owned by the caller when `owns_partial`).
template <class Body, class... Args>
expected<cudaGraph_t> finish_capture(cudaStream_t stream, bool owns_partial, Body& body,
                                     Args... args) {
  expected<void> body_result;
  try {
    body_result = invoke_capture_body(body, args...);
  } catch (...) {
    abandon_capture(stream, owns_partial);
    throw;
  }
  if (!body_result) {
    abandon_capture(stream, owns_partial);
    return fail(body_result.error());
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t status = cudaStreamEndCapture(stream, &graph);
  if (status != cudaSuccess) {
    if (owns_partial && graph != nullptr) (void)cudaGraphDestroy(graph);
    return fail(cuda_error(status,
                           "graph capture: cudaStreamEndCapture failed; the capture was "
                           "invalidated by a call inside the callable")
                    .fix("inside a capture use only stream-ordered calls on the captured stream "
                         "(no cudaMalloc, cudaMemcpy or synchronisation; use cudaMallocAsync "
                         "and cudaMemcpyAsync), and check each launch with cudaGetLastError"));
  }
  if (graph == nullptr)
    return fail(error(errc::cuda_runtime,
                      "graph capture: cudaStreamEndCapture returned a null "
                      "graph")
                    .fix("report this: CUDA ended a valid capture without a graph"));
  return graph;
}

//! The handles of a graph's nodes in CUDA's order, and their kinds.
struct node_inventory {
  node_inventory() noexcept = default;
  node_inventory(node_inventory&&) noexcept = default;
  node_inventory& operator=(node_inventory&&) noexcept = default;
  ~node_inventory() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  std::unique_ptr<cudaGraphNode_t[]> handles;
  std::unique_ptr<node_kind[]> kinds;
  std::size_t count = 0;
};

inline expected<node_inventory> read_inventory(cudaGraph_t graph) noexcept {
  node_inventory inventory;
  std::size_t count = 0;
  VYRE_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count),
                "captured_graph: cudaGraphGetNodes "
                "(count)");
  if (count != 0) {
    if (!testing::inject_allocation_failure(testing::allocation_kind::host)) {
      inventory.handles.reset(new (std::nothrow) cudaGraphNode_t[count]);
      inventory.kinds.reset(new (std::nothrow) node_kind[count]);
    }
    if (!inventory.handles || !inventory.kinds)
      return fail(error(errc::out_of_memory,
                        "captured_graph: host allocation of the node "
                        "inventory failed")
                      .with("nodes", count)
                      .with("bytes", count * (sizeof(cudaGraphNode_t) + sizeof(node_kind)))
                      .fix("free host memory"));
    std::size_t filled = count;
    VYRE_CUDA_TRY(cudaGraphGetNodes(graph, inventory.handles.get(), &filled),
                  "captured_graph: cudaGraphGetNodes");
    if (filled != count)
      return fail(error(errc::cuda_runtime,
                        "captured_graph: the node count changed between two "
                        "cudaGraphGetNodes calls")
                      .with("first", count)
                      .with("second", filled)
                      .fix("do not add nodes to a captured graph from another thread"));
    for (std::size_t i = 0; i < count; ++i) {
      cudaGraphNodeType type{};
      VYRE_CUDA_TRY(cudaGraphNodeGetType(inventory.handles[i], &type),
                    "captured_graph: cudaGraphNodeGetType");
      inventory.kinds[i] = to_node_kind(static_cast<int>(type));
    }
  }
  inventory.count = count;
  return inventory;
}

//! "expected a kernel node, got a memset node" as an error that names both kinds.
inline error kind_mismatch(const char* context, node_kind wanted, node_kind actual,
                           std::size_t index) noexcept {
  char text[error::subject_capacity];
  std::size_t length = 0;
  auto put = [&](const char* part) {
    while (*part != '\0' && length < sizeof(text)) text[length++] = *part++;
  };
  put("expected a ");
  put(node_kind_name(wanted));
  put(" node, got a ");
  put(node_kind_name(actual));
  put(" node");
  return error(errc::invalid_argument, context)
      .about(text, length)
      .with("node_index", index)
      .with("expected_kind", static_cast<std::uint64_t>(wanted))
      .with("actual_kind", static_cast<std::uint64_t>(actual))
      .fix("pick a node of the right kind from nodes() (see graph_node::kind)");
}

}  // namespace vyre::graph::detail
