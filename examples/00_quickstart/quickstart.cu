// SPDX-License-Identifier: Apache-2.0
// Quickstart: an e-graph from host rows to a user kernel on the GPU.
//
//   1. Build a snapshot: rows of (e-class, op, children), children naming e-classes.
//   2. Pack it into vyre's image: one u32 slab of nine columns (see vyre/egraph.hpp).
//   3. Upload it: one device allocation, one host-to-device copy.
//   4. Get a checked kernel view and pass it to your kernel by value.
//
// The e-graph below holds (a * 2) / 2 and its rewrites a * (2 / 2), a * 1 and a, so the e-class
// of the whole expression has four e-nodes: the kind of graph equality saturation grows.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/egraph.cuh>

namespace quickstart {

// One thread per row: count the rows of each op, through the view's checked accessors.
VYRE_KERNEL void count_ops(vyre::egraph::kernel_view view, std::uint32_t* per_op) {
  const std::uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < view.row_count()) atomicAdd(&per_op[view.op(row)], 1u);
}

}  // namespace quickstart

int main() {
  namespace eg = vyre::egraph;
  // 1. e-classes: 0 = a, 1 = 2, 2 = a * 2, 3 = the whole expression, 4 = 2 / 2 (= 1).
  eg::snapshot snap = eg::snapshot::build({
      {0, "a", {}},
      {1, "2", {}},
      {2, "*", {0, 1}},
      {4, "/", {1, 1}},
      {4, "1", {}},
      {3, "/", {2, 1}},  // (a * 2) / 2
      {3, "*", {0, 4}},  // a * (2 / 2), a * 1
      {3, "a", {}},      // a
  });

  // 2. Pack (validates first; throws vyre::error_exception with a "Fix: ..." on bad input).
  const eg::host_image image = eg::pack(snap);
  const eg::image_layout& layout = image.layout();
  std::printf("packed %u rows, %u children, %u e-classes into %llu words\n", layout.row_count,
              layout.child_count, layout.group_count,
              static_cast<unsigned long long>(layout.word_count()));

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "quickstart: no CUDA device here; stopping before the GPU part.\n");
    return 0;
  }

  // 3. A backend owns the pools, the resident store and the telemetry of one device.
  auto gpu = vyre::backend<vyre::policies<>>::acquire(0);
  const eg::resident_image resident = gpu.upload(image);

  // 4. The view is checked against the resident buffer once, here; kernels get it by value.
  const eg::kernel_view view = gpu.kernel_view(resident);
  const std::uint32_t op_count = static_cast<std::uint32_t>(snap.op_count());
  std::uint32_t* per_op = nullptr;
  vyre::cuda_check(cudaMalloc(&per_op, op_count * sizeof(std::uint32_t)), "cudaMalloc").value();
  vyre::cuda_check(cudaMemset(per_op, 0, op_count * sizeof(std::uint32_t)), "cudaMemset").value();
  quickstart::count_ops<<<1, 128>>>(view, per_op);
  vyre::cuda_check(cudaGetLastError(), "launch count_ops").value();
  std::vector<std::uint32_t> counts(op_count);
  vyre::cuda_check(
      cudaMemcpy(counts.data(), per_op, op_count * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
      "download counts")
      .value();
  cudaFree(per_op);
  eg::check_view_faults(gpu, resident);  // throws if a checked accessor went out of bounds

  for (std::uint32_t op = 0; op < op_count; ++op)
    std::printf("  op %-2s: %u row(s)\n", std::string(snap.op_name(op)).c_str(), counts[op]);
  const auto stats = gpu.telemetry().snapshot();
  std::printf("uploads: %llu (%llu bytes)\n", static_cast<unsigned long long>(stats.h2d_operations),
              static_cast<unsigned long long>(stats.h2d_bytes));
  return 0;
}
