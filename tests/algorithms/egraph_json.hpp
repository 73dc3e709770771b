// SPDX-License-Identifier: Apache-2.0
// Test support: a small egraph-serialize JSON reader (simdjson) into the algorithms' raw rows,
// plus the expected_tree_cost.tsv table. Used until the egraph branch's io/egraph_json.hpp is
// merged; e-class names become ids in first-seen order, nodes become rows in file order.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "vyre/algorithms/reference.hpp"

namespace vyre_test {

struct loaded_egraph {
  vyre::algorithms::raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;
  std::unordered_map<std::string, std::uint32_t> class_ids;
};

// Throws std::runtime_error on malformed input (tests only).
inline loaded_egraph load_egraph_json(const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.load(path);
  loaded_egraph out;
  std::unordered_map<std::string, std::uint32_t> ops;
  std::unordered_map<std::string, std::uint32_t> node_class;
  const auto class_id = [&](std::string_view name) {
    const auto [it, inserted] =
        out.class_ids.emplace(std::string(name), static_cast<std::uint32_t>(out.class_ids.size()));
    return it->second;
  };
  simdjson::dom::object nodes = doc["nodes"];
  for (auto field : nodes) {
    simdjson::dom::object node = field.value;
    node_class.emplace(std::string(field.key), class_id(std::string_view(node["eclass"])));
  }
  for (auto field : nodes) {
    simdjson::dom::object node = field.value;
    out.rows.eclass.push_back(node_class.at(std::string(field.key)));
    const std::string_view op = node["op"];
    out.rows.op.push_back(
        ops.emplace(std::string(op), static_cast<std::uint32_t>(ops.size())).first->second);
    simdjson::dom::array children = node["children"];
    std::uint32_t length = 0;
    for (std::string_view child : children) {
      out.rows.children.push_back(node_class.at(std::string(child)));
      ++length;
    }
    out.rows.children_length.push_back(length);
    out.cost.push_back(double(node["cost"]));
  }
  for (std::string_view root : simdjson::dom::array(doc["root_eclasses"]))
    out.roots.push_back(out.class_ids.at(std::string(root)));
  return out;
}

struct expected_cost {
  std::string file;
  double root_tree_cost;
};

// Rows of expected_tree_cost.tsv (header skipped).
inline std::vector<expected_cost> load_expected_costs(const std::string& path) {
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
