// SPDX-License-Identifier: Apache-2.0
#include "egraph_pack_support.hpp"

#include <algorithm>
#include <string>

#include "vyre/egraph.hpp"

namespace vyre_test {

std::vector<std::uint32_t> egraph_pack_words(const vyre::algorithms::raw_rows& rows) {
  vyre::egraph::snapshot snapshot;
  const std::uint32_t ops =
      rows.row_language_op_ids.empty()
          ? 0
          : *std::max_element(rows.row_language_op_ids.begin(), rows.row_language_op_ids.end()) + 1;
  for (std::uint32_t op = 0; op < ops; ++op) snapshot.intern_op("op" + std::to_string(op));
  std::size_t at = 0;
  for (std::uint32_t r = 0; r < rows.row_count(); ++r) {
    snapshot.add_row(
        rows.row_eclass_ids[r], rows.row_language_op_ids[r],
        cuda::std::span<const std::uint32_t>(rows.children.data() + at, rows.row_children_lens[r]));
    at += rows.row_children_lens[r];
  }
  const vyre::egraph::host_image image = vyre::egraph::pack(snapshot);
  return {image.words().begin(), image.words().end()};
}

}  // namespace vyre_test
