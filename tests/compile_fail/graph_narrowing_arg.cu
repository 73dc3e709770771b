// SPDX-License-Identifier: Apache-2.0
// Must not compile: a signed int variable narrows to the kernel's std::uint32_t parameter.
#include <cstdint>

#include <vyre/graph.cuh>

namespace compile_fail_graph {
VYRE_KERNEL void fill(std::uint32_t* out, std::uint32_t count, std::uint32_t value) {
  if (threadIdx.x < count) out[threadIdx.x] = value;
}
}  // namespace compile_fail_graph

void update(vyre::graph::captured_graph& graph, vyre::graph::graph_node node, std::uint32_t* out,
            int count) {
  graph.set_kernel_launch(node, vyre::graph::kernel_launch_shape{}, &compile_fail_graph::fill, out,
                          count, 1u);
}

int main() {
  return 0;
}
