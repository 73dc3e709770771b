// SPDX-License-Identifier: Apache-2.0
// Congruence closure and extraction on the GPU, on a real e-graph.
//
//   congruence_extraction [egraph.json]
//
// 1. Load an egraph-serialize JSON file (egg, egglog, extraction-gym export), or a small
//    built-in e-graph, and pack it into vyre's image (load_egraph.cpp: host code).
// 2. Upload the image once: it becomes a resident image on the backend's device.
// 3. Extraction: the cheapest tree of every e-class, bottom-up to a fixpoint.
// 4. Congruence closure (the "rebuild" of equality saturation): rows with the same op and the
//    same children, after mapping every child to its representative, make their e-classes
//    merge, until nothing merges. Out comes a rebuilt image: canonical, duplicate-free.
// 5. Extraction again, on the rebuilt image: merged e-classes pool their choices, so the best
//    tree can only get cheaper.
// 6. Check the numbers against vyre's CPU references.
//
// On the built-in e-graph: root tree cost 11, then 8 -> 6 e-nodes, 6 -> 4 e-classes, 2 merges,
// and root tree cost 9 after congruence (g(f(x)) may now use the cheap h for f).
//
// The algorithms take the backend (their memory comes from its allocation policy, so its
// budget, telemetry and fault injection see it; their errors follow its error policy, here:
// throw) and the image's columns (`vyre::egraph::image_columns`, what the checked
// `kernel_view` wraps), so they run on a resident image as well as on an image built on the
// device.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/algorithms.cuh>
#include <vyre/egraph.cuh>

#include "load_egraph.hpp"

namespace {

namespace alg = vyre::algorithms;

template <class T>
std::vector<T> download(const T* device, std::size_t count, cudaStream_t stream) {
  std::vector<T> host(count);
  if (count == 0) return host;
  vyre::cuda_check(
      cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
      "download")
      .value();
  vyre::cuda_check(cudaStreamSynchronize(stream), "download").value();
  return host;
}

template <class Backend, class T>
vyre::device_array<T> upload(Backend& gpu, const std::vector<T>& host, cudaStream_t stream) {
  // Library code composes the backend's components (`vyre::expected`); the boundary applies
  // the backend's error policy.
  auto buffer = vyre::apply_error_policy<typename Backend::error_policy>(
      vyre::device_array<T>::allocate(gpu.memory_ref(), host.size(), stream, "example upload"));
  if (!host.empty())
    vyre::cuda_check(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T),
                                     cudaMemcpyHostToDevice, stream),
                     "upload")
        .value();
  return buffer;
}

int run(const char* path) {
  // 1. Load and pack.
  const example::egraph_file file = example::load_egraph(path);
  const vyre::egraph::image_layout& layout = file.image.layout();
  std::printf("%s: %u e-nodes, %u e-classes, %zu root(s)\n", file.name.c_str(), layout.row_count,
              layout.group_count, file.roots.size());

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr,
                 "congruence_extraction: no CUDA device here; stopping before the GPU "
                 "part.\n");
    return 0;
  }

  // 2. A backend for device 0, a stream from its pool, and the image made resident. The
  //    algorithms allocate from the backend and free in stream order, so everything they
  //    return must go before the stream does: declared after it, destroyed before it.
  auto gpu = vyre::backend<vyre::policies<>>::acquire(0);
  const vyre::stream_lease stream_lease = gpu.acquire_stream();
  const cudaStream_t stream = stream_lease.get();
  const vyre::egraph::resident_image resident = gpu.upload(file.image);
  // The algorithms take the image's columns; the checked view hands them over.
  const vyre::egraph::image_columns image = gpu.kernel_view(resident).columns();

  // 3. Extraction on the image as loaded.
  const auto node_cost = upload(gpu, file.node_cost, stream);
  const auto before =
      alg::extract(gpu, image, node_cost.get(), {file.roots.data(), file.roots.size()}, stream);
  std::printf("extraction:  root tree cost %g (%u rounds)\n", before.root_cost, before.rounds);

  // 4. Congruence closure.
  const auto closed = alg::congruence(gpu, image, stream);
  const vyre::egraph::image_layout& rebuilt = closed.rebuilt.layout();
  std::printf("congruence:  %u -> %u e-nodes, %u -> %u e-classes, %llu merges in %u rounds\n",
              layout.row_count, rebuilt.row_count, layout.group_count, rebuilt.group_count,
              static_cast<unsigned long long>(closed.merges), closed.rounds);

  // 5. Extraction on the rebuilt image. Its rows are the kept original rows, so their costs
  //    are the originals'; its e-class ids are the representatives (smallest merged id), so a
  //    root becomes its representative.
  const auto kept = download(closed.kept_rows.get(), rebuilt.row_count, stream);
  const auto class_ids = download(closed.eclass_ids.get(), layout.group_count, stream);
  const auto representative = download(closed.representative.get(), class_ids.size(), stream);
  std::vector<double> kept_cost(kept.size());
  for (std::size_t i = 0; i < kept.size(); ++i) kept_cost[i] = file.node_cost[kept[i]];
  std::vector<std::uint32_t> kept_roots;
  for (const std::uint32_t root : file.roots) {
    const auto at = std::lower_bound(class_ids.begin(), class_ids.end(), root) - class_ids.begin();
    kept_roots.push_back(representative[static_cast<std::size_t>(at)]);
  }
  const auto rebuilt_cost = upload(gpu, kept_cost, stream);
  const auto after = alg::extract(gpu, closed.rebuilt.columns(), rebuilt_cost.get(),
                                  {kept_roots.data(), kept_roots.size()}, stream);
  std::printf("extraction:  root tree cost %g after congruence (%u rounds)\n", after.root_cost,
              after.rounds);

  // 6. The CPU references compute the same things on the host copy of the image (they return
  //    `vyre::expected`; the boundary applies the same throwing policy).
  using throwing = vyre::on_error::throw_exception;
  const vyre::egraph::image_columns host_image = file.image.columns();
  const auto cpu_extract = vyre::apply_error_policy<throwing>(
      alg::extract_reference(host_image, {file.node_cost.data(), file.node_cost.size()},
                             {file.roots.data(), file.roots.size()}));
  const auto cpu_closed = vyre::apply_error_policy<throwing>(alg::congruence_reference(host_image));
  const bool same = cpu_extract.root_cost == before.root_cost &&
                    cpu_closed.merges == closed.merges &&
                    cpu_closed.rebuilt.row_count() == rebuilt.row_count &&
                    cpu_closed.representative == representative;
  std::printf("CPU reference agrees: %s\n", same ? "yes" : "NO");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : nullptr);
  } catch (const vyre::error_exception& e) {
    std::fprintf(stderr, "congruence_extraction: %s\n", e.what());
    return 2;
  }
}
