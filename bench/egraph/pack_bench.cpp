// SPDX-License-Identifier: Apache-2.0
// Host pack throughput: rows/s of vyre::egraph::pack_into (reused caller buffer) and pack (new
// image) at 1 M and 16 M rows, dense and sparse e-class ids, against a baseline in the same
// run: the same image built with std::sort-based grouping. Single-threaded. JSON lines.
//
//   vyre_egraph_bench [--rows N ...] [--repeats K]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <vyre/egraph.hpp>

#include "bench_support.hpp"

namespace eg = vyre::egraph;

namespace {

//! `rows` rows over rows/2 e-classes; ids 0..rows/2-1 (dense) or random u32 (sparse); 0..4
//! children per row (2 on average), each naming an e-class that has a row.
eg::snapshot make_snapshot(std::uint32_t rows, bool dense, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::uint32_t classes = std::max<std::uint32_t>(1, rows / 2);
  std::vector<std::uint32_t> ids(classes);
  if (dense) {
    for (std::uint32_t i = 0; i < classes; ++i) ids[i] = i;
  } else {
    for (auto& id : ids) id = static_cast<std::uint32_t>(rng());
  }
  eg::snapshot snap;
  snap.reserve(rows, std::size_t{rows} * 2 + 8);
  for (int op = 0; op < 16; ++op) snap.intern_op("op" + std::to_string(op));
  std::uint32_t kids[4];
  for (std::uint32_t r = 0; r < rows; ++r) {
    const std::uint64_t bits = rng();
    const std::uint32_t eclass = r < classes ? ids[r] : ids[(bits >> 8) % classes];
    const auto arity = static_cast<std::uint32_t>(bits & 3u) + ((bits >> 2) & 1u);  // 0..4
    for (std::uint32_t k = 0; k < arity; ++k) kids[k] = ids[rng() % classes];
    snap.add_row(eclass, static_cast<std::uint32_t>((bits >> 4) & 15u), {kids, arity});
  }
  return snap;
}

//! The baseline: the same image, grouping by std::sort of (eclass, row) pairs.
void baseline_pack(const eg::snapshot& snap, std::vector<std::uint32_t>& out) {
  const auto rows = snap.rows();
  const auto children = snap.children();
  std::vector<std::pair<std::uint32_t, std::uint32_t>> keyed(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    keyed[r] = {rows[r].eclass, static_cast<std::uint32_t>(r)};
  std::sort(keyed.begin(), keyed.end());
  std::uint32_t groups = 0;
  for (std::size_t i = 0; i < keyed.size(); ++i)
    groups += (i == 0 || keyed[i].first != keyed[i - 1].first) ? 1u : 0u;
  const auto layout = eg::image_layout::for_counts(
      static_cast<std::uint32_t>(rows.size()), static_cast<std::uint32_t>(children.size()), groups);
  out.resize(layout.word_count());
  std::uint32_t* w = out.data();
  for (std::size_t r = 0; r < rows.size(); ++r) {
    w[layout.offset(eg::image_column::row_eclass_ids) + r] = rows[r].eclass;
    w[layout.offset(eg::image_column::row_language_op_ids) + r] = rows[r].op;
    w[layout.offset(eg::image_column::row_children_offsets) + r] = rows[r].children_offset;
    w[layout.offset(eg::image_column::row_children_lens) + r] = rows[r].children_length;
    w[layout.offset(eg::image_column::row_signatures) + r] = eg::row_signature(
        rows[r].op, children.data() + rows[r].children_offset, rows[r].children_length);
  }
  std::memcpy(w + layout.offset(eg::image_column::children), children.data(),
              children.size_bytes());
  std::uint32_t g = 0;
  for (std::size_t i = 0; i < keyed.size(); ++i) {
    if (i == 0 || keyed[i].first != keyed[i - 1].first) {
      w[layout.offset(eg::image_column::group_eclass_ids) + g] = keyed[i].first;
      w[layout.offset(eg::image_column::group_offsets) + g] = static_cast<std::uint32_t>(i);
      ++g;
    }
    w[layout.offset(eg::image_column::group_rows) + i] = keyed[i].second;
  }
  w[layout.offset(eg::image_column::group_offsets) + g] = static_cast<std::uint32_t>(rows.size());
}

//! Median nanoseconds of `repeats` calls of `run`, after one untimed call (page faults, caches).
template <class F>
double median_ns(int repeats, F&& run) {
  run();
  return vyre_bench::median_time<std::nano>(repeats, run);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::uint32_t> sizes;
  int repeats = 7;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
      sizes.push_back(static_cast<std::uint32_t>(std::strtoul(argv[++i], nullptr, 10)));
    else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--rows N ...] [--repeats K]\n", argv[0]);
      return 2;
    }
  }
  if (sizes.empty()) sizes = {1u << 20, 1u << 24};
  const std::string device = "host: " + vyre_bench::cpu_name() + " (1 thread)";
  for (const std::uint32_t rows : sizes)
    for (const bool dense : {true, false}) {
      const auto snap = make_snapshot(rows, dense, 42 + rows);
      const std::uint64_t words = eg::packed_word_count(snap);
      std::vector<std::uint32_t> buffer(words);
      std::vector<std::uint32_t> baseline_words;
      const double baseline = median_ns(repeats, [&] { baseline_pack(snap, baseline_words); });
      const double into = median_ns(repeats, [&] {
        eg::pack_into(snap, cuda::std::span<std::uint32_t>(buffer.data(), buffer.size()));
      });
      const double owned = median_ns(repeats, [&] { (void)eg::pack(snap); });
      if (baseline_words != buffer) {
        std::fprintf(stderr, "baseline and pack_into disagree\n");
        return 1;
      }
      const char* ids = dense ? "dense" : "sparse";
      const auto line = [&](const char* name, double ns) {
        std::printf(
            "{\"name\":\"%s\",\"params\":{\"rows\":%u,\"ids\":\"%s\",\"child_entries\":%zu,"
            "\"words\":%llu},\"device\":\"%s\",\"median_ns\":%.0f,\"rows_per_s\":%.4g,"
            "\"baseline\":\"std::sort grouping\",\"baseline_median_ns\":%.0f,"
            "\"baseline_rows_per_s\":%.4g,\"ratio\":%.3f}\n",
            name, rows, ids, snap.child_count(), static_cast<unsigned long long>(words),
            device.c_str(), ns, rows / (ns * 1e-9), baseline, rows / (baseline * 1e-9),
            baseline / ns);
        std::fflush(stdout);
      };
      line("egraph.pack_into", into);
      line("egraph.pack", owned);
    }
  return 0;
}
