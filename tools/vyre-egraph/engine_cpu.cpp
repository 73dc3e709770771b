// SPDX-License-Identifier: Apache-2.0
// Loading (JSON through vyre::io, image files through vyre::egraph) and the CPU paths (the
// multi-threaded CPU engine, vyre::algorithms::cpu_engine; DAG extraction). Host code: simdjson
// lives here, never in the nvcc translation unit.
#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
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
#include <vyre/io/json_text.hpp>

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
  return image.columns();
}

//! `node "<id>" (e-class "<id>")` of row `row`, with the file's ids (rows and e-classes by
//! number for an image file).
std::string node_and_class(const graph_input& input, std::uint32_t row) {
  const std::uint32_t eclass = input.image.column(vyre::egraph::image_column::row_eclass_ids)[row];
  const std::string node =
      row < input.node_names.size() ? std::string(input.node_names[row]) : std::to_string(row);
  const std::string name = eclass < input.eclass_names.size()
                               ? std::string(input.eclass_names[eclass])
                               : std::to_string(eclass);
  return "node \"" + node + "\" (e-class \"" + name + "\")";
}

//! An extraction error with the file's e-class id in its subject when it carries one (the
//! engines name e-classes by the image's ids: dense ids for JSON input).
error with_eclass_name(const graph_input& input, error err) {
  const std::uint64_t eclass = err.value_or("eclass", ~std::uint64_t{0});
  if (eclass < input.eclass_names.size())
    err.about(input.file + ": e-class \"" + std::string(input.eclass_names[eclass]) + "\"");
  return err;
}

//! A new file beside `path`, opened exclusively (an existing file or link of that name is never
//! followed), for an output renamed over `path` when complete; null when none can be made.
std::FILE* create_beside(const std::string& path, std::string& temporary) {
  static unsigned counter = 0;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const auto clock = static_cast<unsigned long long>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".tmp-%llx-%u", clock, counter++);
    // C11's "x": create the file, or fail if anything of that name exists.
    if (std::FILE* file = std::fopen((path + suffix).c_str(), "wbx")) {
      temporary = path + suffix;
      return file;
    }
    if (errno != EEXIST) return nullptr;
  }
  return nullptr;
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
    VYRE_TRY_ASSIGN(summary.rebuilt, vyre::algorithms::pack_reference(found.rebuilt.ref()));
  }
  summary.seconds = seconds_since(start);
  return summary;
}

expected<extraction_summary> extract_cpu(const graph_input& input, unsigned threads) {
  VYRE_TRY(check_extractable(input));
  const auto start = std::chrono::steady_clock::now();
  auto extracted = vyre::algorithms::cpu_engine::extract(
      packed_view(input.image), {input.node_cost.data(), input.node_cost.size()},
      {input.roots.data(), input.roots.size()}, threads);
  if (!extracted) return fail(with_eclass_name(input, extracted.error()));
  const vyre::algorithms::extraction_result& found = *extracted;
  VYRE_TRY(check_cost_overflow(input, found.cost, found.root_cost));
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
    // Finite tree costs can still give an infinite DAG cost where negative costs cancel.
    if (!std::isfinite(total))
      return fail(error(errc::overflow,
                        "extract: the tree selection's DAG cost overflows a double (a sum "
                        "beyond +-1.8e308)")
                      .about(input.file)
                      .fix("scale the node costs down so that every total stays within "
                           "+-1.8e308"));
    summary.dag_cost = total;
  }
  return summary;
}

expected<void> check_cost_overflow(const graph_input& input, const std::vector<double>& class_cost,
                                   double root_cost) {
  const auto columns = packed_view(input.image);
  const std::uint32_t* group_offsets = columns.group_offsets();
  const std::uint32_t* group_rows = columns.group_rows();
  const std::uint32_t* offsets = columns.row_children_offsets();
  const std::uint32_t* lengths = columns.row_children_lens();
  const std::uint32_t* children = columns.children();
  const auto child_cost = [&](std::uint32_t eclass) {
    const auto g = group_of(input.image, eclass);
    return g ? class_cost[*g] : std::numeric_limits<double>::infinity();
  };
  // Only classes without a finite cost can hide an overflow; most have one.
  for (std::size_t g = 0; g < class_cost.size(); ++g) {
    if (std::isfinite(class_cost[g])) continue;
    for (std::uint32_t i = group_offsets[g]; i < group_offsets[g + 1]; ++i) {
      const std::uint32_t r = group_rows[i];
      double total = input.node_cost[r];  // in the engines' order: children left to right
      bool children_finite = true;
      for (std::uint32_t k = 0; k < lengths[r] && children_finite; ++k) {
        const double c = child_cost(children[offsets[r] + k]);
        children_finite = std::isfinite(c);
        total += c;
      }
      // Every child has a finite tree, so only the sum itself can have left the doubles.
      if (children_finite && !std::isfinite(total))
        return fail(error(errc::overflow,
                          "extract: a tree cost overflows a double (its node costs sum beyond "
                          "+-1.8e308; not an e-class reachable only through cycles)")
                        .with("row", r)
                        .about(input.file + ": " + node_and_class(input, r))
                        .fix("scale the node costs down so that every tree's total stays "
                             "within +-1.8e308"));
    }
  }
  bool roots_finite = true;
  for (const std::uint32_t root : input.roots) {
    const auto g = group_of(input.image, root);
    roots_finite = roots_finite && g && std::isfinite(class_cost[*g]);
  }
  if (roots_finite && !std::isfinite(root_cost))
    return fail(error(errc::overflow,
                      "extract: the roots' total tree cost overflows a double (a sum beyond "
                      "+-1.8e308)")
                    .with("roots", input.roots.size())
                    .about(input.file)
                    .fix("scale the node costs down, or extract fewer roots at a time (--root)"));
  return {};
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

using vyre::io::append_json_string;

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
  // As image files are written (vyre::egraph::write_image_file): never through a symbolic link
  // or onto a device, directory or FIFO; a new file beside the destination, renamed over it.
  std::error_code ec;
  const std::filesystem::file_type type = std::filesystem::symlink_status(path, ec).type();
  if (type != std::filesystem::file_type::regular &&
      type != std::filesystem::file_type::not_found && type != std::filesystem::file_type::none)
    return fail(error(errc::invalid_argument,
                      type == std::filesystem::file_type::symlink
                          ? "--selection: the destination is a symbolic link (it is neither "
                            "replaced nor written through)"
                          : "--selection: the destination is not a regular file (a directory, "
                            "device, FIFO or socket)")
                    .about(path)
                    .fix("pass the path of a regular file or of a new one (for a link, the path "
                         "it points to)"));
  std::string temporary;
  std::FILE* const out = create_beside(path, temporary);
  bool written = out != nullptr && std::fwrite(text.data(), 1, text.size(), out) == text.size();
  if (out != nullptr) written = std::fclose(out) == 0 && written;
  if (written) std::filesystem::rename(temporary, path, ec);
  if (!written || ec) {
    if (out != nullptr) std::filesystem::remove(temporary, ec);
    return fail(error(errc::io, "--selection: cannot write the file")
                    .about(path)
                    .fix("check the path, its directory's permissions and free disk space"));
  }
  return {};
}

}  // namespace vyre_tool
