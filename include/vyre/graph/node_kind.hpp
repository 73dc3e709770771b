// SPDX-License-Identifier: Apache-2.0
//! @file
//! `node_kind`: every graph node type CUDA 12 and 13 report, plus `unknown` for a type a
//! future driver adds. Host-only C++20 (no nvcc needed).
#pragma once

#include <cstdint>

#include <driver_types.h>

#include "vyre/detail/enum_name.hpp"

namespace vyre::graph {

//! The kind of one graph node. The numbering follows CUDA's (driver and runtime share it);
//! 12 is the driver's batch memory operation node, which the runtime enum leaves unnamed.
enum class node_kind : std::uint8_t {
  kernel = 0,
  memcpy = 1,
  memset = 2,
  host = 3,
  child_graph = 4,
  empty = 5,
  event_wait = 6,
  event_record = 7,
  external_semaphore_signal = 8,
  external_semaphore_wait = 9,
  mem_alloc = 10,
  mem_free = 11,
  batch_mem_op = 12,
  conditional = 13,
  unknown = 255,  //!< a type this build of vyre does not know (a newer driver)
};

//! The kind of a raw CUDA node type; any value outside the known set is `unknown` (never
//! undefined behaviour: the value is compared, not cast blindly).
constexpr node_kind to_node_kind(int cuda_type) noexcept {
  switch (cuda_type) {
    case cudaGraphNodeTypeKernel:
      return node_kind::kernel;
    case cudaGraphNodeTypeMemcpy:
      return node_kind::memcpy;
    case cudaGraphNodeTypeMemset:
      return node_kind::memset;
    case cudaGraphNodeTypeHost:
      return node_kind::host;
    case cudaGraphNodeTypeGraph:
      return node_kind::child_graph;
    case cudaGraphNodeTypeEmpty:
      return node_kind::empty;
    case cudaGraphNodeTypeWaitEvent:
      return node_kind::event_wait;
    case cudaGraphNodeTypeEventRecord:
      return node_kind::event_record;
    case cudaGraphNodeTypeExtSemaphoreSignal:
      return node_kind::external_semaphore_signal;
    case cudaGraphNodeTypeExtSemaphoreWait:
      return node_kind::external_semaphore_wait;
    case cudaGraphNodeTypeMemAlloc:
      return node_kind::mem_alloc;
    case cudaGraphNodeTypeMemFree:
      return node_kind::mem_free;
    case 12:
      return node_kind::batch_mem_op;  // CU_GRAPH_NODE_TYPE_BATCH_MEM_OP
    case cudaGraphNodeTypeConditional:
      return node_kind::conditional;
    default:
      return node_kind::unknown;
  }
}
constexpr node_kind to_node_kind(cudaGraphNodeType cuda_type) noexcept {
  return to_node_kind(static_cast<int>(cuda_type));
}

//! Human name of a node kind ("kernel", "memset", ...).
constexpr const char* node_kind_name(node_kind kind) noexcept {
  constexpr const char* names[] = {"kernel",
                                   "memcpy",
                                   "memset",
                                   "host",
                                   "child graph",
                                   "empty",
                                   "event wait",
                                   "event record",
                                   "external semaphore signal",
                                   "external semaphore wait",
                                   "mem alloc",
                                   "mem free",
                                   "batch mem op",
                                   "conditional"};
  // `unknown` (255) is past the table: it gets the fallback, its own name.
  return vyre::detail::enum_name<node_kind::kernel, node_kind::conditional>(kind, names, "unknown");
}

//! Why a whole-graph update (`cudaGraphExecUpdate`) was refused, in words.
constexpr const char* update_result_name(int result) noexcept {
  switch (result) {
    case cudaGraphExecUpdateSuccess:
      return "success";
    case cudaGraphExecUpdateError:
      return "the update failed for a reason CUDA did not classify";
    case cudaGraphExecUpdateErrorTopologyChanged:
      return "the topology changed";
    case cudaGraphExecUpdateErrorNodeTypeChanged:
      return "a node changed its type";
    case cudaGraphExecUpdateErrorFunctionChanged:
      return "a kernel node changed its function";
    case cudaGraphExecUpdateErrorParametersChanged:
      return "a node's parameters changed in a way an update cannot apply";
    case cudaGraphExecUpdateErrorNotSupported:
      return "a node does not support updates";
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
      return "a kernel node changed its function in an unsupported way";
    case cudaGraphExecUpdateErrorAttributesChanged:
      return "a node's attributes changed in an unsupported way";
    default:
      return "an update result this build of vyre does not know";
  }
}

}  // namespace vyre::graph
