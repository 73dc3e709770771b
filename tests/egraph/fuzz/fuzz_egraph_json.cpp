// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as egraph-serialize JSON. The loader must refuse or accept,
// never crash; an accepted e-graph must be consistent and pack.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <vyre/io/egraph_json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using expect = vyre::on_error::return_expected;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto loaded = vyre::io::parse_egraph_json<expect>(text, "fuzz input");
  if (!loaded) {
    if (loaded.error().message().empty()) std::abort();
    return 0;
  }
  const auto& snap = loaded->graph;
  if (loaded->node_costs.size() != snap.row_count() || loaded->node_ids.size() != snap.row_count())
    std::abort();
  for (const std::uint32_t root : loaded->root_eclasses)
    if (root >= loaded->eclass_ids.size()) std::abort();
  if (!snap.validate<expect>()) std::abort();
  const auto image = vyre::egraph::pack<expect>(snap);
  if (!image || image->layout().group_count != loaded->eclass_ids.size()) std::abort();
  return 0;
}
