// SPDX-License-Identifier: Apache-2.0
// Host half of the example: egraph-serialize JSON -> snapshot -> packed image.
#include "load_egraph.hpp"

#include <vyre/io/egraph_json.hpp>

namespace example {
namespace {

// A small e-graph that is not congruence-closed, as an e-graph looks right after a rewrite
// merged two e-classes and before the rebuild: x and y were merged into class "xy", but f(x)
// and f(y) still sit in classes "fx" and "fy", and g(f(x)), g(f(y)) in "gfx" and "gfy".
// Congruence closure merges fx with fy (same op, same canonical child), then gfx with gfy.
constexpr const char* builtin_json = R"json({
  "nodes": {
    "x":    {"op": "x", "cost": 1, "eclass": "xy", "children": []},
    "y":    {"op": "y", "cost": 5, "eclass": "xy", "children": []},
    "fx":   {"op": "f", "cost": 2, "eclass": "fx", "children": ["x"]},
    "fy":   {"op": "f", "cost": 2, "eclass": "fy", "children": ["y"]},
    "h":    {"op": "h", "cost": 1, "eclass": "fy", "children": []},
    "gfx":  {"op": "g", "cost": 3, "eclass": "gfx", "children": ["fx"]},
    "gfy":  {"op": "g", "cost": 3, "eclass": "gfy", "children": ["fy"]},
    "top":  {"op": "+", "cost": 1, "eclass": "top", "children": ["gfx", "gfy"]}
  },
  "root_eclasses": ["top"]
})json";

}  // namespace

egraph_file load_egraph(const char* path) {
  vyre::io::loaded_egraph loaded = path != nullptr
                                       ? vyre::io::load_egraph_json(path)
                                       : vyre::io::parse_egraph_json(builtin_json, "built-in");
  egraph_file file;
  file.name = path != nullptr ? path : "the built-in e-graph";
  file.image = vyre::egraph::pack(loaded.graph);
  file.node_cost = std::move(loaded.node_costs);
  file.roots = std::move(loaded.root_eclasses);
  return file;
}

}  // namespace example
