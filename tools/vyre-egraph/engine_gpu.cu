// SPDX-License-Identifier: Apache-2.0
// The GPU paths of vyre-egraph, the tool's one nvcc translation unit: acquire device 0 through
// vyre::backend, upload the image once (a resident image), run vyre::algorithms on the
// resident words, download what the output needs.
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include <vyre/algorithms.cuh>
#include <vyre/egraph.cuh>
#include <vyre/runtime.cuh>

#include "engine.hpp"

namespace vyre_tool {

namespace {

using vyre::expected;
using tool_policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::native,
                                     vyre::on_error::return_expected>;
using tool_backend = vyre::backend<tool_policies>;

//! A backend, a stream and the input image resident on the device; the algorithms allocate
//! from the backend. Members are destroyed in reverse order: stream-ordered buffers made on
//! `stream` must die before it, so callers declare their results after the session.
struct gpu_session {
  tool_backend gpu;
  vyre::stream_lease stream;
  vyre::egraph::resident_image resident;
  vyre::egraph::image_columns image;  //!< the resident image's columns (device pointers)

  //! @param started set when the device is ready, before the upload: `seconds` counts the
  //!        upload, the algorithm and the downloads, not CUDA's one-time context creation.
  static expected<gpu_session> open(const vyre::egraph::host_image& image,
                                    std::chrono::steady_clock::time_point& started) {
    VYRE_TRY_ASSIGN(tool_backend gpu, tool_backend::acquire(0));
    VYRE_TRY(gpu.warmup());
    VYRE_TRY_ASSIGN(vyre::stream_lease stream, gpu.acquire_stream());
    started = std::chrono::steady_clock::now();
    VYRE_TRY_ASSIGN(const vyre::egraph::resident_image resident, gpu.upload(image));
    VYRE_TRY_ASSIGN(const vyre::egraph::kernel_view view, gpu.kernel_view(resident));
    return gpu_session{std::move(gpu), std::move(stream), resident, view.columns()};
  }

  ~gpu_session() {
    if (stream) (void)stream.reset();  // buffers made on it are gone by now
    if (gpu.id() != 0) (void)gpu.free_resident(resident.handle());
  }
  gpu_session(tool_backend g, vyre::stream_lease s, vyre::egraph::resident_image r,
              vyre::egraph::image_columns i) noexcept
      : gpu(std::move(g)), stream(std::move(s)), resident(r), image(i) {}
  gpu_session(gpu_session&&) noexcept = default;
  gpu_session& operator=(gpu_session&&) = delete;
};

template <class T>
expected<std::vector<T>> download(const T* device, std::size_t count, cudaStream_t stream,
                                  const char* what) {
  std::vector<T> host;
  VYRE_TRY(vyre::try_resize(host, count, what));
  if (count == 0) return host;
  VYRE_CUDA_TRY(
      cudaMemcpyAsync(host.data(), device, count * sizeof(T), cudaMemcpyDeviceToHost, stream),
      what);
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), what);
  return host;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

expected<congruence_summary> congruence_gpu(const graph_input& input, bool keep_rebuilt) {
  std::chrono::steady_clock::time_point start;
  VYRE_TRY_ASSIGN(gpu_session session, gpu_session::open(input.image, start));
  const cudaStream_t stream = session.stream.get();
  VYRE_TRY_ASSIGN(auto found, vyre::algorithms::congruence(session.gpu, session.image, stream));
  congruence_summary summary;
  summary.classes_before = input.image.layout().group_count;
  VYRE_TRY_ASSIGN(auto representative, download(found.representative.get(), summary.classes_before,
                                                stream, "congruence: download representatives"));
  summary.classes_after = distinct_count(std::move(representative));
  const vyre::egraph::image_layout& rebuilt = found.rebuilt.layout();
  summary.nodes_after = rebuilt.row_count;
  summary.merges = found.merges;
  summary.rounds = found.rounds;
  if (keep_rebuilt) {
    VYRE_TRY_ASSIGN(const auto words,
                    download(found.rebuilt.words(), static_cast<std::size_t>(rebuilt.word_count()),
                             stream, "congruence: download the rebuilt image"));
    VYRE_TRY_ASSIGN(summary.rebuilt,
                    vyre::egraph::host_image::from_words<vyre::on_error::return_expected>(
                        {words.data(), words.size()}, rebuilt));
  }
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "congruence: finish");
  summary.seconds = seconds_since(start);
  return summary;
}

expected<dag_summary> extract_dag_gpu(const graph_input& input,
                                      const vyre::algorithms::dag_options& search) {
  VYRE_TRY(check_dag_costs(input));
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(tool_backend gpu, tool_backend::acquire(0));
  VYRE_TRY_ASSIGN(auto found,
                  vyre::algorithms::extract_dag(gpu, input.image.columns(),
                                                {input.node_cost.data(), input.node_cost.size()},
                                                {input.roots.data(), input.roots.size()}, search));
  dag_summary summary = dag_summary_of(std::move(found));
  summary.seconds = seconds_since(start);
  return summary;
}

expected<extraction_summary> extract_gpu(const graph_input& input) {
  VYRE_TRY(check_extractable(input));
  std::chrono::steady_clock::time_point start;
  VYRE_TRY_ASSIGN(gpu_session session, gpu_session::open(input.image, start));
  const cudaStream_t stream = session.stream.get();
  VYRE_TRY_ASSIGN(auto node_cost, vyre::device_array<double>::allocate(
                                      session.gpu.memory_ref(), input.node_cost.size(), stream,
                                      "extract: node costs"));
  if (!input.node_cost.empty())
    VYRE_CUDA_TRY(
        cudaMemcpyAsync(node_cost.get(), input.node_cost.data(),
                        input.node_cost.size() * sizeof(double), cudaMemcpyHostToDevice, stream),
        "extract: upload node costs");
  VYRE_TRY_ASSIGN(auto found,
                  vyre::algorithms::extract(session.gpu, session.image, node_cost.get(),
                                            {input.roots.data(), input.roots.size()}, stream));
  const std::uint32_t classes = input.image.layout().group_count;
  VYRE_TRY_ASSIGN(const auto cost,
                  download(found.cost.get(), classes, stream, "extract: download class costs"));
  VYRE_TRY(check_cost_overflow(input, cost, found.root_cost));
  extraction_summary summary;
  summary.root_tree_cost = found.root_cost;
  summary.rounds = found.rounds;
  for (const double c : cost) summary.unextractable_classes += std::isinf(c) ? 1u : 0u;
  VYRE_TRY(vyre::try_reserve(summary.root_costs, input.roots.size(), "extract: root costs"));
  for (const std::uint32_t root : input.roots)
    summary.root_costs.push_back(cost[*group_of(input.image, root)]);
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace vyre_tool
