// SPDX-License-Identifier: Apache-2.0
// What the raw-CUDA reproducers (no vyre code) share: CHECK, which prints the failed call and
// returns 1 from main(), and a conditional WHILE graph whose body is captured from a stream.
// Included by path from the probes' folder; nvcc finds it next to the including file.
#pragma once

#include <cstdio>

#include <cuda_runtime.h>

#define CHECK(x)                                          \
  do {                                                    \
    cudaError_t e = (x);                                  \
    if (e != cudaSuccess) {                               \
      std::printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                           \
    }                                                     \
  } while (0)

// Builds and instantiates a graph of one conditional WHILE node (condition initially 1) into
// `exec`; `capture(handle)` records the body on `s` and must return cudaSuccess or the error,
// and the body must set the condition to 0 through `handle` to stop. The graph itself is
// destroyed once instantiated (`exec` does not need it). Returns 1 on a failed call (after
// printing it), else 0.
template <class Capture>
int make_while_graph(cudaStream_t s, cudaGraphExec_t* exec, Capture&& capture) {
  cudaGraph_t graph;
  CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle handle;
  CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams params = {};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = handle;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  cudaGraphNode_t node;
  CHECK(cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &params));
  cudaGraph_t body = params.conditional.phGraph_out[0];
  CHECK(cudaStreamBeginCaptureToGraph(s, body, nullptr, nullptr, 0,
                                      cudaStreamCaptureModeThreadLocal));
  CHECK(capture(handle));
  CHECK(cudaStreamEndCapture(s, &body));
  CHECK(cudaGraphInstantiate(exec, graph, 0));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}
