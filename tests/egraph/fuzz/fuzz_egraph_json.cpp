// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as egraph-serialize JSON. The loader must refuse or accept,
// never crash; an accepted e-graph must be consistent and pack. The scanner and simdjson's DOM
// parser must agree: the same e-graph, or the same error; so must a load in 64-byte slices (the
// same e-graph, or an error).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <vyre/io/egraph_json.hpp>

namespace {

//! Whether two loads are the same e-graph (or the same error).
template <class Loaded>
bool same(const Loaded& a, const Loaded& b) {
  if (!a || !b) return !a && !b && a.error().message() == b.error().message();
  const auto rows_a = a->graph.rows();
  const auto rows_b = b->graph.rows();
  const auto kids_a = a->graph.children();
  const auto kids_b = b->graph.children();
  if (rows_a.size() != rows_b.size() || kids_a.size() != kids_b.size()) return false;
  for (std::size_t r = 0; r < rows_a.size(); ++r)
    if (rows_a[r].eclass != rows_b[r].eclass || rows_a[r].op != rows_b[r].op ||
        rows_a[r].children_offset != rows_b[r].children_offset ||
        rows_a[r].children_length != rows_b[r].children_length)
      return false;
  for (std::size_t c = 0; c < kids_a.size(); ++c)
    if (kids_a[c] != kids_b[c]) return false;
  for (std::uint32_t op = 0; op < a->graph.op_count(); ++op)
    if (a->graph.op_name(op) != b->graph.op_name(op)) return false;
  return a->graph.op_count() == b->graph.op_count() && a->node_costs == b->node_costs &&
         a->node_ids.to_strings() == b->node_ids.to_strings() &&
         a->eclass_ids.to_strings() == b->eclass_ids.to_strings() &&
         a->root_eclasses == b->root_eclasses;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using expect = vyre::on_error::return_expected;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto loaded = vyre::io::parse_egraph_json<expect>(text, "fuzz input");
  vyre::io::json_load_options dom_only;
  dom_only.scanner = false;
  if (!same(loaded, vyre::io::parse_egraph_json<expect>(text, "fuzz input", dom_only)))
    std::abort();
  vyre::io::json_load_options sliced;
  sliced.slice_bytes = 64;
  const auto in_slices = vyre::io::parse_egraph_json<expect>(text, "fuzz input", sliced);
  if (loaded ? !same(loaded, in_slices) : bool(in_slices)) std::abort();
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
