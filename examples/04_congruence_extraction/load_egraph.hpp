// SPDX-License-Identifier: Apache-2.0
// The example's loader, between the host file (simdjson) and the CUDA file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <vyre/egraph.hpp>

namespace example {

struct egraph_file {
  std::string name;
  vyre::egraph::host_image image;    // the packed image (host memory)
  std::vector<double> node_cost;     // one per row
  std::vector<std::uint32_t> roots;  // root e-class ids
};

// Loads egraph-serialize JSON from `path`, or the built-in e-graph when `path` is null.
// Throws vyre::error_exception naming the file on bad input.
egraph_file load_egraph(const char* path);

}  // namespace example
