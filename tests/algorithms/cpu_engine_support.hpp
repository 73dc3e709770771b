// SPDX-License-Identifier: Apache-2.0
// Test support: "identical" for the CPU engine against the references, as a first-difference
// description ("" when identical). Costs compare bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "vyre/algorithms/cpu.hpp"

namespace vyre_test {

template <class T>
std::string first_difference(const char* what, const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size())
    return std::string(what) + ": sizes " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0)
      return std::string(what) + "[" + std::to_string(i) + "]: " + std::to_string(a[i]) + " vs " +
             std::to_string(b[i]);
  return "";
}

inline std::string congruence_difference(const vyre::algorithms::congruence_result& engine,
                                         const vyre::algorithms::congruence_result& reference) {
  if (engine.merges != reference.merges)
    return "merges " + std::to_string(engine.merges) + " vs " + std::to_string(reference.merges);
  for (const std::string& d :
       {first_difference("eclass_ids", engine.eclass_ids, reference.eclass_ids),
        first_difference("representative", engine.representative, reference.representative),
        first_difference("kept_rows", engine.kept_rows, reference.kept_rows),
        first_difference("rebuilt eclass", engine.rebuilt.row_eclass_ids,
                         reference.rebuilt.row_eclass_ids),
        first_difference("rebuilt op", engine.rebuilt.row_language_op_ids,
                         reference.rebuilt.row_language_op_ids),
        first_difference("rebuilt lens", engine.rebuilt.row_children_lens,
                         reference.rebuilt.row_children_lens),
        first_difference("rebuilt children", engine.rebuilt.children, reference.rebuilt.children)})
    if (!d.empty()) return d;
  return "";
}

inline std::string extraction_difference(const vyre::algorithms::extraction_result& engine,
                                         const vyre::algorithms::extraction_result& reference) {
  if (std::memcmp(&engine.root_cost, &reference.root_cost, sizeof(double)) != 0)
    return "root_cost " + std::to_string(engine.root_cost) + " vs " +
           std::to_string(reference.root_cost);
  for (const std::string& d :
       {first_difference("eclass_ids", engine.eclass_ids, reference.eclass_ids),
        first_difference("cost", engine.cost, reference.cost),
        first_difference("choice", engine.choice, reference.choice)})
    if (!d.empty()) return d;
  return "";
}

}  // namespace vyre_test
