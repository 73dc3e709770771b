// SPDX-License-Identifier: Apache-2.0
// Loading (JSON through vyre::io, image files through vyre::egraph) and the CPU paths (the
// multi-threaded CPU engine, vyre::algorithms::cpu_engine; DAG extraction). Host code: simdjson
// lives here, never in the nvcc translation unit.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <vyre/algorithms.hpp>
#include <vyre/algorithms/cpu_engine.hpp>
#include <vyre/algorithms/dag_extract.hpp>
#if VYRE_HAVE_CBC
#include <vyre/algorithms/dag_ilp.hpp>
#endif
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
  input.node_names = std::move(loaded.node_ids);  // for --selection and error messages
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

expected<congruence_summary> congruence_cpu(const graph_input& input, bool keep_rebuilt,
                                            unsigned threads) {
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(auto found,
                  vyre::algorithms::cpu_engine::congruence(packed_view(input.image), threads));
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

expected<extraction_summary> extract_cpu(const graph_input& input, unsigned threads) {
  VYRE_TRY(check_extractable(input));
  const auto start = std::chrono::steady_clock::now();
  VYRE_TRY_ASSIGN(const auto found,
                  vyre::algorithms::cpu_engine::extract(
                      packed_view(input.image), {input.node_cost.data(), input.node_cost.size()},
                      {input.roots.data(), input.roots.size()}, threads));
  extraction_summary summary;
  summary.root_tree_cost = found.root_cost;
  summary.rounds = found.rounds;
  summary.unextractable_classes = static_cast<std::uint32_t>(
      std::count_if(found.cost.begin(), found.cost.end(), [](double c) { return std::isinf(c); }));
  summary.root_costs.reserve(input.roots.size());
  for (const std::uint32_t root : input.roots)
    summary.root_costs.push_back(found.cost[*group_of(input.image, root)]);
  summary.seconds = seconds_since(start);
  // The tree selection, restricted to what the roots reach through it, and its DAG cost.
  if (std::isfinite(found.root_cost)) {
    summary.eclass_ids = found.eclass_ids;
    summary.choice.assign(found.choice.size(), vyre::algorithms::no_row);
    const auto columns = packed_view(input.image);
    const std::uint32_t* offsets = columns.row_children_offsets();
    const std::uint32_t* lengths = columns.row_children_lens();
    const std::uint32_t* children = columns.children();
    std::vector<std::uint32_t> stack(input.roots.begin(), input.roots.end());
    double total = 0;
    while (!stack.empty()) {
      const std::uint32_t g = *group_of(input.image, stack.back());
      stack.pop_back();
      if (summary.choice[g] != vyre::algorithms::no_row) continue;
      const std::uint32_t row = summary.choice[g] = found.choice[g];
      total += input.node_cost[row];
      stack.insert(stack.end(), children + offsets[row], children + offsets[row] + lengths[row]);
    }
    summary.dag_cost = total;
  }
  return summary;
}

bool ilp_available() noexcept {
  return VYRE_HAVE_CBC != 0;
}

expected<void> check_dag_costs(const graph_input& input) {
  VYRE_TRY(check_extractable(input));
  // Name the node (the file's id) when a cost is negative; the library can only name the row.
  for (std::size_t r = 0; r < input.node_cost.size(); ++r)
    if (input.node_cost[r] < 0) {
      const std::string node =
          r < input.node_names.size() ? std::string(input.node_names[r]) : std::to_string(r);
      char value[40];
      std::snprintf(value, sizeof value, "%.17g", input.node_cost[r]);
      return fail(error(errc::invalid_argument,
                        "extract --method dag/ilp: a node cost is negative (DAG cost needs "
                        "costs >= 0)")
                      .with("row", r)
                      .about("node \"" + node + "\" has cost " + value)
                      .fix("make every cost non-negative, or use --method tree"));
    }
  return {};
}

dag_summary dag_summary_of(vyre::algorithms::dag_extraction_result&& found) {
  dag_summary summary;
  summary.dag_cost = found.dag_cost;
  summary.heuristic_dag_cost = found.dag_cost;
  summary.tree_selection_dag_cost = found.tree_selection_dag_cost;
  summary.selected_nodes = found.selected_rows;
  summary.optimal = found.optimal;
  summary.lower_bound = found.lower_bound;
  summary.eclass_ids = std::move(found.eclass_ids);
  summary.choice = std::move(found.choice);
  return summary;
}

expected<dag_summary> extract_dag_cpu(const graph_input& input, extract_method method,
                                      double time_limit,
                                      const vyre::algorithms::dag_options& search) {
  VYRE_TRY(check_dag_costs(input));
  const auto start = std::chrono::steady_clock::now();
  const auto columns = packed_view(input.image);
  const cuda::std::span<const double> costs{input.node_cost.data(), input.node_cost.size()};
  const cuda::std::span<const std::uint32_t> roots{input.roots.data(), input.roots.size()};
  dag_summary summary;
  if (method == extract_method::ilp) {
#if VYRE_HAVE_CBC
    vyre::algorithms::dag_ilp_options options;
    options.time_limit_seconds = time_limit;
    options.heuristic = search;
    VYRE_TRY_ASSIGN(auto found, vyre::algorithms::extract_dag_ilp(columns, costs, roots, options));
    summary.optimal = found.optimal;
    summary.lower_bound = found.lower_bound;
    summary.heuristic_dag_cost = found.heuristic_cost;
    summary.dag_cost = found.selection.dag_cost;
    summary.tree_selection_dag_cost = found.selection.tree_selection_dag_cost;
    summary.selected_nodes = found.selection.selected_rows;
    summary.eclass_ids = std::move(found.selection.eclass_ids);
    summary.choice = std::move(found.selection.choice);
#else
    (void)time_limit;
    (void)search;
    return fail(error(errc::invalid_argument,
                      "extract --method ilp: this vyre-egraph was built without COIN-OR CBC")
                    .fix("install coinor-libcbc-dev (pkg-config cbc) and rebuild, or use "
                         "--method dag"));
#endif
  } else {
    VYRE_TRY_ASSIGN(auto found, vyre::algorithms::extract_dag(columns, costs, roots, search));
    summary = dag_summary_of(std::move(found));
  }
  summary.seconds = seconds_since(start);
  return summary;
}

namespace {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", u);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace

expected<void> write_selection(const graph_input& input,
                               const std::vector<std::uint32_t>& eclass_ids,
                               const std::vector<std::uint32_t>& choice, const std::string& path) {
  if (input.format != input_format::json || input.node_names.size() != input.node_cost.size())
    return fail(error(errc::invalid_argument, "--selection: the input has no node ids")
                    .about(input.file)
                    .fix("run extract on an egraph-serialize JSON file"));
  std::string text = "{\"choices\": {";
  bool first = true;
  for (std::size_t g = 0; g < eclass_ids.size(); ++g) {
    if (choice[g] == vyre::algorithms::no_row) continue;
    text += first ? "\n  " : ",\n  ";
    first = false;
    append_json_string(text, input.eclass_names[eclass_ids[g]]);
    text += ": ";
    append_json_string(text, input.node_names[choice[g]]);
  }
  text += first ? "}}\n" : "\n}}\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush())
    return fail(error(errc::io, "--selection: cannot write the file")
                    .about(path)
                    .fix("check the path and permissions"));
  return {};
}

}  // namespace vyre_tool
