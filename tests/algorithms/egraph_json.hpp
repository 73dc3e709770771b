// SPDX-License-Identifier: Apache-2.0
// Test support: a small egraph-serialize JSON reader (simdjson, in egraph_json.cpp so nvcc
// never sees simdjson.h) into the algorithms' raw rows,
// plus the expected_tree_cost.tsv table. Used until the egraph branch's io/egraph_json.hpp is
// merged; e-class names become ids in first-seen order, nodes become rows in file order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vyre/algorithms/reference.hpp"

namespace vyre_test {

struct loaded_egraph {
  vyre::algorithms::raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;
  std::unordered_map<std::string, std::uint32_t> class_ids;
};

// Throws std::runtime_error / simdjson errors on malformed input (tests only).
loaded_egraph load_egraph_json(const std::string& path);

struct expected_cost {
  std::string file;
  double root_tree_cost;
};

// Rows of expected_tree_cost.tsv (header skipped).
std::vector<expected_cost> load_expected_costs(const std::string& path);

}  // namespace vyre_test
