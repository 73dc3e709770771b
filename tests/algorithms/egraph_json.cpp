// SPDX-License-Identifier: Apache-2.0
// Test support: the egraph-serialize JSON reader and the expected-cost table (host compiler).
#include "egraph_json.hpp"

#include <fstream>
#include <sstream>

#include <simdjson.h>

namespace vyre_test {

loaded_egraph load_egraph_json(const std::string& path) {
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
