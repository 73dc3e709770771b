// SPDX-License-Identifier: Apache-2.0
// Must not compile: a float* where the kernel takes std::uint32_t*, and a narrowing double.
#include <cstdint>

#include <vyre/graph.cuh>

namespace compile_fail_graph {
VYRE_KERNEL void fill(std::uint32_t* out, std::uint32_t count, std::uint32_t value) {
  if (threadIdx.x < count) out[threadIdx.x] = value;
}
}  // namespace compile_fail_graph

void update(vyre::graph::captured_graph& graph, vyre::graph::graph_node node, float* out) {
  graph.set_kernel_args(node, &compile_fail_graph::fill, out, 16u, 2.5);
}

int main() {
  return 0;
}
