// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::io::loaded_egraph`: an e-graph with node costs and the names egraph-serialize gives
//! its nodes and e-classes, as the JSON loader (`vyre/io/egraph_json.hpp`) reads it from a file
//! and as `vyre::eqsat::to_loaded_egraph` builds it from a database in memory. Host code only
//! (no simdjson).
#pragma once

#include <cstdint>
#include <vector>

#include "vyre/egraph/snapshot.hpp"
#include "vyre/io/name_table.hpp"

namespace vyre::io {

//! An e-graph with costs and egraph-serialize names.
struct loaded_egraph {
  egraph::snapshot graph;                    //!< row i = node i (file order); always valid
  std::vector<double> node_costs;            //!< cost of node (row) i, finite
  name_table node_ids;                       //!< node id of row i
  name_table eclass_ids;                     //!< e-class id of dense e-class id k
  std::vector<std::uint32_t> root_eclasses;  //!< dense e-class ids of `root_eclasses`, in order
};

}  // namespace vyre::io
