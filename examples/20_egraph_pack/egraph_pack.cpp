// SPDX-License-Identifier: Apache-2.0
// From an e-graph to the bytes an upload copies, on the host.
#include <cstdio>
#include <filesystem>
#include <vector>

#include <vyre/egraph.hpp>
#if EGRAPH_PACK_WITH_JSON
#include <vyre/io/egraph_json.hpp>
#endif

namespace eg = vyre::egraph;

int main(int argc, char** argv) {
  eg::snapshot snap;
  if (argc > 1) {
#if EGRAPH_PACK_WITH_JSON
    auto loaded = vyre::io::load_egraph_json<vyre::on_error::return_expected>(argv[1]);
    if (!loaded) {
      std::fprintf(stderr, "%s\n", loaded.error().message().c_str());
      return 1;
    }
    std::printf("%s: %zu nodes, %zu e-classes, %zu roots\n", argv[1], loaded->graph.row_count(),
                loaded->eclass_ids.size(), loaded->root_eclasses.size());
    snap = std::move(loaded->graph);
#else
    std::fprintf(stderr, "built without simdjson: no JSON loader\n");
    return 1;
#endif
  } else {
    // (x + 1) and (1 + x) in one e-class: 0 = x, 1 = 1, 2 = the sums.
    snap = eg::snapshot::build({{0, "x", {}}, {1, "1", {}}, {2, "+", {0, 1}}, {2, "+", {1, 0}}});
  }

  // Validate and group once; then the size is known and the image goes straight into the
  // caller's buffer (pinned memory in a real upload).
  auto prepared = eg::prepare_pack(snap);
  const eg::image_layout layout = prepared.layout();
  std::vector<std::uint32_t> staging(prepared.word_count());
  std::move(prepared).write_into(staging);

  const auto plan = eg::plan_upload(eg::image_ref{staging, layout});
  std::printf("rows %u, children %u, e-classes %u: %llu bytes\n", layout.row_count,
              layout.child_count, layout.group_count,
              static_cast<unsigned long long>(plan.total_bytes()));
  for (std::size_t c = 0; c < eg::image_column_count; ++c) {
    const auto column = static_cast<eg::image_column>(c);
    const auto bytes = plan.layout().column(column);
    std::printf("  %-22s bytes [%llu, %llu)\n", eg::image_column_name(column),
                static_cast<unsigned long long>(bytes.offset),
                static_cast<unsigned long long>(bytes.end()));
  }

  const auto path = std::filesystem::temp_directory_path() / "egraph_pack_example.vyreimg";
  eg::write_image_file(path, eg::image_ref{staging, layout});
  const auto back = eg::read_image_file(path);
  std::printf("%s: read back %zu words, %s\n", path.string().c_str(), back.words().size(),
              back.layout() == layout ? "same layout" : "DIFFERENT LAYOUT");
  std::filesystem::remove(path);
  return back.layout() == layout ? 0 : 1;
}
