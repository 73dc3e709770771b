// SPDX-License-Identifier: Apache-2.0
// Test support: egraph-serialize JSON (through vyre/io/egraph_json.hpp, in egraph_json.cpp so
// nvcc never sees simdjson.h) as the algorithms' raw rows, plus the expected_tree_cost.tsv
// table. Nodes become rows in file order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

struct loaded_egraph {
  vyre::algorithms::raw_rows rows;
  std::vector<double> cost;
  std::vector<std::uint32_t> roots;
};

// Throws vyre::error_exception on malformed input (tests only).
loaded_egraph load_egraph_json(const std::string& path);

struct expected_cost {
  std::string file;
  double root_tree_cost;
};

// Rows of expected_tree_cost.tsv (header skipped).
std::vector<expected_cost> load_expected_costs(const std::string& path);

}  // namespace vyre_test
