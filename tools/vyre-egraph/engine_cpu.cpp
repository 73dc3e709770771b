// SPDX-License-Identifier: Apache-2.0
// Loading (JSON through vyre::io, image files through vyre::egraph) and the CPU paths (vyre's
// CPU references). Host code: simdjson lives here, never in the nvcc translation unit.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <vyre/algorithms.hpp>
#include <vyre/egraph.hpp>
#include <vyre/io/egraph_json.hpp>

#include "default_egraph.hpp"
#include "engine.hpp"

namespace vyre_tool {

namespace {

using vyre::errc;
using vyre::error;
using vyre::expected;
using vyre::fail;
using return_expected = vyre::on_error::return_expected;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

//! Whether the file starts with the image file magic (either byte order: the image reader then
//! explains a byte-swapped file). Unreadable or short files are not images.
bool looks_like_image_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::array<unsigned char, 8> head{};
  if (!in.read(reinterpret_cast<char*>(head.data()), head.size())) return false;
  const auto word = [&](std::size_t at, bool swapped) {
    std::uint32_t value = 0;
    for (std::size_t i = 0; i < 4; ++i) {
      const std::size_t byte = swapped ? at + 3 - i : at + i;
      value |= std::uint32_t{head[byte]} << (8 * i);
    }
    return value;
  };
  for (const bool swapped : {false, true})
    if (word(0, swapped) == vyre::egraph::image_file_magic0 &&
        word(4, swapped) == vyre::egraph::image_file_magic1)
      return true;
  return false;
}

expected<graph_input> from_json(vyre::io::loaded_egraph loaded, std::string name) {
  graph_input input;
  input.file = std::move(name);
  input.format = input_format::json;
  loaded.node_ids = {};  // the tool never shows node ids: free them before packing
  VYRE_TRY_ASSIGN(input.image, vyre::egraph::pack<return_expected>(loaded.graph));
  try {
    input.op_names.reserve(loaded.graph.op_count());
    for (std::uint32_t op = 0; op < loaded.graph.op_count(); ++op)
      input.op_names.emplace_back(loaded.graph.op_name(op));
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "vyre-egraph: op names").fix("free host memory"));
  }
  input.node_cost = std::move(loaded.node_costs);
  input.roots = std::move(loaded.root_eclasses);
  input.eclass_names = std::move(loaded.eclass_ids);
  return input;
}

vyre::algorithms::image_columns packed_view(const vyre::egraph::host_image& image) noexcept {
  return image.ref().columns();
}

}  // namespace

expected<graph_input> load_input(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  if (std::ifstream probe(path, std::ios::binary); !probe)
    return fail(
        error(errc::io, "cannot open the file").about(path).fix("check the path and permissions"));
  expected<graph_input> input = [&]() -> expected<graph_input> {
    if (looks_like_image_file(path)) {
      graph_input image_input;
      image_input.file = path;
      image_input.format = input_format::image;
      VYRE_TRY_ASSIGN(image_input.image, vyre::egraph::read_image_file<return_expected>(path));
      return image_input;
    }
    VYRE_TRY_ASSIGN(auto loaded, vyre::io::load_egraph_json<return_expected>(path));
    return from_json(std::move(loaded), path);
  }();
  if (input) input->load_seconds = seconds_since(start);
  return input;
}

expected<graph_input> load_default_input() {
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(auto loaded, vyre::io::parse_egraph_json<return_expected>(default_egraph_json,
                                                                            default_egraph_name));
  VYRE_TRY_ASSIGN(auto input, from_json(std::move(loaded), default_egraph_name));
  input.load_seconds = seconds_since(start);
  return input;
}

std::optional<std::uint32_t> group_of(const vyre::egraph::host_image& image,
                                      std::uint32_t eclass) noexcept {
  const auto ids = image.column(vyre::egraph::image_column::group_eclass_ids);
  const auto found = std::lower_bound(ids.begin(), ids.end(), eclass);
  if (found == ids.end() || *found != eclass) return std::nullopt;
  return static_cast<std::uint32_t>(found - ids.begin());
}

std::uint32_t distinct_count(std::vector<std::uint32_t> representative) {
  std::sort(representative.begin(), representative.end());
  return static_cast<std::uint32_t>(std::unique(representative.begin(), representative.end()) -
                                    representative.begin());
}

expected<void> check_extractable(const graph_input& input) {
  if (input.format == input_format::image ||
      input.node_cost.size() != input.image.layout().row_count)
    return fail(
        error(errc::invalid_argument, "extract: an image file has no node costs or roots")
            .about(input.file)
            .fix("run extract on the egraph-serialize JSON file the image was packed from"));
  for (const std::uint32_t root : input.roots)
    if (!group_of(input.image, root))
      return fail(error(errc::not_found, "extract: a root names an e-class that has no node")
                      .with("root", root)
                      .about(input.file)
                      .fix("every root must be the e-class of some node"));
  return {};
}

expected<congruence_summary> congruence_cpu(const graph_input& input, bool keep_rebuilt) {
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(auto found, vyre::algorithms::congruence_reference(packed_view(input.image)));
  congruence_summary summary;
  summary.classes_before = input.image.layout().group_count;
  summary.classes_after = distinct_count(std::move(found.representative));
  summary.nodes_after = found.rebuilt.row_count();
  summary.merges = found.merges;
  summary.rounds = found.rounds;
  if (keep_rebuilt) {
    VYRE_TRY_ASSIGN(const auto packed, vyre::algorithms::pack_reference(found.rebuilt.ref()));
    VYRE_TRY_ASSIGN(summary.rebuilt,
                    vyre::egraph::host_image::from_words<return_expected>(
                        {packed.words.data(), packed.words.size()}, packed.layout));
  }
  summary.seconds = seconds_since(start);
  return summary;
}

expected<extraction_summary> extract_cpu(const graph_input& input) {
  VYRE_TRY(check_extractable(input));
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(const auto found,
                  vyre::algorithms::extract_reference(
                      packed_view(input.image), {input.node_cost.data(), input.node_cost.size()},
                      {input.roots.data(), input.roots.size()}));
  extraction_summary summary;
  summary.root_tree_cost = found.root_cost;
  summary.rounds = found.rounds;
  summary.unextractable_classes = static_cast<std::uint32_t>(
      std::count_if(found.cost.begin(), found.cost.end(), [](double c) { return std::isinf(c); }));
  summary.root_costs.reserve(input.roots.size());
  for (const std::uint32_t root : input.roots)
    summary.root_costs.push_back(found.cost[*group_of(input.image, root)]);
  summary.seconds = seconds_since(start);
  return summary;
}

}  // namespace vyre_tool
