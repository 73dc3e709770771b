// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::io::loaded_egraph`: an e-graph with node costs and the names egraph-serialize gives
//! its nodes and e-classes, as the JSON loader (`vyre/io/egraph_json.hpp`) reads it from a file
//! and as `vyre::eqsat::to_loaded_egraph` builds it from a database in memory, and
//! `json_load_options`, how the JSON loader reads. Host code only (no simdjson).
#pragma once

#include <cstddef>
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

//! How `load_egraph_json` reads (tests and benchmarks change it; the defaults suit real files).
struct json_load_options {
  std::size_t slice_bytes = std::size_t{4} << 20;  //!< bytes of one slice (at least 64)
  bool threads = true;  //!< parse the next slice on a second thread (when there is more than one)
  //! Read with the scanner where it can (false: simdjson's DOM parser only; tests compare them).
  bool scanner = true;
};

}  // namespace vyre::io
