// SPDX-License-Identifier: Apache-2.0
// Test support: the egraph-serialize JSON reader and the expected-cost table (host compiler).
#include "egraph_json.hpp"

#include <fstream>
#include <sstream>

#include <vyre/io/egraph_json.hpp>

namespace vyre_test {

loaded_egraph load_egraph_json(const std::string& path) {
  const vyre::io::loaded_egraph loaded = vyre::io::load_egraph_json(path);
  loaded_egraph out;
  const auto rows = loaded.graph.rows();
  const auto children = loaded.graph.children();
  for (const vyre::egraph::row& row : rows) {
    out.rows.row_eclass_ids.push_back(row.eclass);
    out.rows.row_language_op_ids.push_back(row.op);
    out.rows.row_children_lens.push_back(row.children_length);
    for (std::uint32_t i = 0; i < row.children_length; ++i)
      out.rows.children.push_back(children[row.children_offset + i]);
  }
  out.cost = loaded.node_costs;
  out.roots = loaded.root_eclasses;
  return out;
}

std::vector<expected_cost> load_expected_costs(const std::string& path) {
  std::ifstream in(path);
  std::vector<expected_cost> rows;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, '\t');) fields.push_back(field);
    if (fields.size() >= 5) rows.push_back({fields[0], std::stod(fields[4])});
  }
  return rows;
}

}  // namespace vyre_test
