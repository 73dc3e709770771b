// SPDX-License-Identifier: Apache-2.0
//! @file
//! What `vyre-egraph` computes, split by where it runs: loading and the CPU paths are host code
//! (`engine_cpu.cpp`, which also owns simdjson), the GPU paths are the one nvcc translation
//! unit (`engine_gpu.cu`). Everything returns `vyre::expected`; only `main.cpp` turns an error
//! into an exit status.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vyre/algorithms/dag_extract.hpp"
#include "vyre/core/error.hpp"
#include "vyre/egraph.hpp"
#include "vyre/io/name_table.hpp"

namespace vyre_tool {

//! Where the input came from.
enum class input_format : std::uint8_t { json, image };

//! An e-graph ready for the algorithms: the packed image plus what JSON adds (names, costs,
//! roots). E-class ids in the image are the loader's dense ids (JSON) or the file's (image).
struct graph_input {
  std::string file;  //!< as named in messages and in the `file` key
  input_format format = input_format::json;
  vyre::egraph::host_image image;
  std::vector<std::string> op_names;  //!< by op id; empty for image files
  std::vector<double> node_cost;      //!< one per row; empty for image files
  std::vector<std::uint32_t> roots;   //!< root e-class ids; empty for image files
  vyre::io::name_table eclass_names;  //!< JSON e-class id of dense id k; empty for images
  vyre::io::name_table node_names;    //!< JSON node id of row r; empty for images
  double load_seconds = 0;
};

//! Loads `path`: a vyre image file when it starts with the image magic, else egraph-serialize
//! JSON. Errors name the file.
vyre::expected<graph_input> load_input(const std::string& path);
//! Loads the built-in default e-graph (`default_egraph.hpp`).
vyre::expected<graph_input> load_default_input();

//! What congruence closure found.
struct congruence_summary {
  std::uint32_t classes_before = 0;
  std::uint32_t classes_after = 0;
  std::uint32_t nodes_after = 0;  //!< rows of the rebuilt image (duplicates removed)
  std::uint64_t merges = 0;
  std::uint32_t rounds = 0;
  std::optional<vyre::egraph::host_image> rebuilt;  //!< when asked for (`-o`)
  double seconds = 0;
};

//! What tree-cost extraction found.
struct extraction_summary {
  double root_tree_cost = 0;       //!< sum of the roots' costs (+infinity if one has no tree)
  std::vector<double> root_costs;  //!< parallel to `graph_input::roots`
  std::uint32_t unextractable_classes = 0;  //!< classes whose cost stays infinite (cycles only)
  std::uint32_t rounds = 0;
  double seconds = 0;
  //! The CPU path only (empty on the GPU path): the tree selection (e-class ids ascending,
  //! the chosen row of each or `no_row`) and its DAG cost (each chosen node reachable from the
  //! roots paid once).
  std::vector<std::uint32_t> eclass_ids;
  std::vector<std::uint32_t> choice;
  std::optional<double> dag_cost;
};

//! What `extract --method` asks for: tree cost (the default, CPU or GPU), or DAG cost by the
//! heuristic (`dag`, CPU or, with `--device gpu`, GPU) or exactly through CBC (`ilp`, CPU).
enum class extract_method : std::uint8_t { tree, dag, ilp };

//! What DAG-cost extraction found.
struct dag_summary {
  double dag_cost = 0;
  double tree_selection_dag_cost = 0;  //!< the tree selection's DAG cost
  std::uint32_t selected_nodes = 0;
  std::vector<std::uint32_t> eclass_ids;  //!< ascending
  std::vector<std::uint32_t> choice;      //!< parallel: row, or `no_row` when not needed
  // ilp only:
  bool optimal = false;
  double lower_bound = 0;
  double heuristic_dag_cost = 0;
  double seconds = 0;
};

//! Extraction needs node costs and roots: an image file has neither (`errc::invalid_argument`).
vyre::expected<void> check_extractable(const graph_input& input);
//! After extraction (`class_cost` per image group, `root_cost` their roots' sum): refuses a sum
//! that overflowed (`errc::overflow`, naming the node and its e-class), which the engines cannot
//! tell from an e-class reachable only through cycles (both +infinity), and a roots' total that
//! overflowed.
vyre::expected<void> check_cost_overflow(const graph_input& input,
                                         const std::vector<double>& class_cost, double root_cost);

//! Congruence closure and tree-cost extraction on the CPU engine (`vyre::algorithms::cpu_engine`,
//! results identical to the references) with `threads` workers (0: every core).
vyre::expected<congruence_summary> congruence_cpu(const graph_input& input, bool keep_rebuilt,
                                                  unsigned threads);
vyre::expected<extraction_summary> extract_cpu(const graph_input& input, unsigned threads);
//! DAG-cost extraction on the CPU (`method` dag or ilp; `time_limit` seconds bounds CBC;
//! `search`: the heuristic's searches, kicks and worker threads, 0: every core).
//! Errors: a negative node cost (naming the node and its cost), a needed e-class with no
//! acyclic choice, ilp in a build without CBC.
vyre::expected<dag_summary> extract_dag_cpu(const graph_input& input, extract_method method,
                                            double time_limit,
                                            const vyre::algorithms::dag_options& search);
//! The same heuristic on device 0 (`vyre::algorithms::extract_dag` on a backend): the CPU's
//! selection, found by one thread block per search.
vyre::expected<dag_summary> extract_dag_gpu(const graph_input& input,
                                            const vyre::algorithms::dag_options& search);
//! What DAG extraction needs of the input: costs and roots, every cost >= 0 (a negative one is
//! named by its node id).
vyre::expected<void> check_dag_costs(const graph_input& input);
//! The tool's summary of a heuristic selection.
dag_summary dag_summary_of(vyre::algorithms::dag_extraction_result&& found);
//! Whether this build has the exact (CBC) mode.
bool ilp_available() noexcept;
//! Writes extraction-gym's result shape, `{"choices": {"<e-class id>": "<node id>", ...}}`,
//! with the file's own ids, one entry per e-class with a choice.
vyre::expected<void> write_selection(const graph_input& input,
                                     const std::vector<std::uint32_t>& eclass_ids,
                                     const std::vector<std::uint32_t>& choice,
                                     const std::string& path);
//! The same on device 0 through `vyre::backend` (upload to a resident image, run the
//! algorithms on it, download the results). Results equal the CPU ones except `rounds` and
//! `seconds`.
vyre::expected<congruence_summary> congruence_gpu(const graph_input& input, bool keep_rebuilt);
vyre::expected<extraction_summary> extract_gpu(const graph_input& input);

//! The image's e-class id -> group index (the e-class ids ascend in `group_eclass_ids`).
std::optional<std::uint32_t> group_of(const vyre::egraph::host_image& image,
                                      std::uint32_t eclass) noexcept;
//! Number of distinct values of `representative`.
std::uint32_t distinct_count(std::vector<std::uint32_t> representative);

}  // namespace vyre_tool
