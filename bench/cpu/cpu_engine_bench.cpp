// SPDX-License-Identifier: Apache-2.0
// CPU engine vs the references: congruence closure and tree-cost extraction on synthetic
// e-graphs (default 1 M, 4 M, 16 M rows, dense ids) and on every real e-graph listed in
// VYRE_EGRAPH_DATA_DIR/expected_tree_cost.tsv; the engine at 1 and 2 threads. Same process;
// each measurement runs once to warm up, then --repeats times, and reports the median. At
// --single-run-rows and above the reference runs once, unwarmed (16 M rows take about a minute).
// Each result line says whether the engine's result equals the reference's. JSON lines; the
// first names the CPU model and core count.
//
//   vyre_cpu_engine_bench [--sizes 1048576,4194304,16777216] [--repeats 3] [--threads 1,2]
//                         [--single-run-rows 16777216] [--no-synthetic] [--no-files]
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_support.hpp"
#include "egraph_json.hpp"
#include "vyre/algorithms.hpp"
#include "vyre/algorithms/cpu_engine.hpp"

using namespace vyre::algorithms;

namespace {

std::vector<std::uint64_t> parse_list(const char* text) {
  std::vector<std::uint64_t> values;
  for (const char* p = text; *p != 0;) {
    char* end = nullptr;
    values.push_back(std::strtoull(p, &end, 10));
    p = *end == ',' ? end + 1 : end;
    if (end == p && *p != 0) break;
  }
  return values;
}

//! Median milliseconds of `repeats` calls of `run`, after one untimed call when `warm`.
template <class F>
double median_ms(F&& run, int repeats, bool warm) {
  if (warm) run();
  return vyre_bench::median_time<std::milli>(repeats, run);
}

bool same_closure(const congruence_result& a, const congruence_result& b) {
  return a.merges == b.merges && a.representative == b.representative &&
         a.kept_rows == b.kept_rows && a.rebuilt.children == b.rebuilt.children &&
         a.rebuilt.row_eclass_ids == b.rebuilt.row_eclass_ids;
}
bool same_extraction(const extraction_result& a, const extraction_result& b) {
  return std::memcmp(&a.root_cost, &b.root_cost, sizeof(double)) == 0 && a.choice == b.choice &&
         a.cost.size() == b.cost.size() &&
         std::memcmp(a.cost.data(), b.cost.data(), a.cost.size() * sizeof(double)) == 0;
}

struct options {
  std::vector<std::uint64_t> sizes{1u << 20, 1u << 22, 1u << 24};
  std::vector<std::uint64_t> threads{1, 2};
  int repeats = 3;
  std::uint64_t single_run_rows = 1u << 24;
  bool synthetic = true;
  bool files = true;
};

void measure(const std::string& input, const raw_rows& rows, const std::vector<double>& cost,
             const std::vector<std::uint32_t>& roots, const options& opt, bool reference_once) {
  const cuda::std::span<const double> costs{cost.data(), cost.size()};
  const cuda::std::span<const std::uint32_t> root_span{roots.data(), roots.size()};
  const int reference_repeats = reference_once ? 1 : opt.repeats;
  vyre::expected<congruence_result> closure = congruence_result{};
  vyre::expected<extraction_result> extraction = extraction_result{};
  const double ref_closure_ms = median_ms([&] { closure = congruence_reference(rows.ref()); },
                                          reference_repeats, !reference_once);
  const double ref_extract_ms =
      median_ms([&] { extraction = extract_reference(rows.ref(), costs, root_span); },
                reference_repeats, !reference_once);
  if (!closure || !extraction) {
    std::printf("{\"input\":\"%s\",\"error\":\"reference failed\"}\n", input.c_str());
    return;
  }
  const auto line = [&](const char* op, const char* impl, std::uint64_t threads, double ms,
                        int runs, double reference_ms, bool identical, std::uint32_t rounds) {
    std::printf(
        "{\"bench\":\"cpu_engine\",\"input\":\"%s\",\"rows\":%u,\"children\":%u,\"op\":\"%s\","
        "\"impl\":\"%s\",\"threads\":%llu,\"median_ms\":%.3f,\"runs\":%d,\"warmed\":%s,"
        "\"rounds\":%u,\"speedup_vs_reference\":%.2f,\"identical\":%s}\n",
        input.c_str(), rows.row_count(), static_cast<unsigned>(rows.children.size()), op, impl,
        static_cast<unsigned long long>(threads), ms, runs,
        (std::strcmp(impl, "reference") == 0 && reference_once) ? "false" : "true", rounds,
        reference_ms / ms, identical ? "true" : "false");
    std::fflush(stdout);
  };
  line("congruence", "reference", 1, ref_closure_ms, reference_repeats, ref_closure_ms, true,
       closure->rounds);
  line("extract", "reference", 1, ref_extract_ms, reference_repeats, ref_extract_ms, true,
       extraction->rounds);
  for (const std::uint64_t t : opt.threads) {
    const auto threads = static_cast<unsigned>(t);
    vyre::expected<congruence_result> fast_closure = congruence_result{};
    vyre::expected<extraction_result> fast_extraction = extraction_result{};
    const double closure_ms = median_ms(
        [&] { fast_closure = cpu_engine::congruence(rows.ref(), threads); }, opt.repeats, true);
    const double extract_ms = median_ms(
        [&] { fast_extraction = cpu_engine::extract(rows.ref(), costs, root_span, threads); },
        opt.repeats, true);
    line("congruence", "engine", t, closure_ms, opt.repeats, ref_closure_ms,
         fast_closure && same_closure(*fast_closure, *closure),
         fast_closure ? fast_closure->rounds : 0);
    line("extract", "engine", t, extract_ms, opt.repeats, ref_extract_ms,
         fast_extraction && same_extraction(*fast_extraction, *extraction),
         fast_extraction ? fast_extraction->rounds : 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--sizes" && i + 1 < argc)
      opt.sizes = parse_list(argv[++i]);
    else if (arg == "--threads" && i + 1 < argc)
      opt.threads = parse_list(argv[++i]);
    else if (arg == "--repeats" && i + 1 < argc)
      opt.repeats = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--single-run-rows" && i + 1 < argc)
      opt.single_run_rows = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--no-synthetic")
      opt.synthetic = false;
    else if (arg == "--no-files")
      opt.files = false;
    else {
      std::fprintf(stderr, "unknown argument %s\n", arg.c_str());
      return 2;
    }
  }
  std::printf("{\"bench\":\"cpu_engine\",\"cpu\":\"%s\",\"cores\":%u,\"repeats\":%d}\n",
              vyre_bench::cpu_name().c_str(), std::thread::hardware_concurrency(), opt.repeats);
  if (opt.synthetic)
    for (const std::uint64_t size : opt.sizes) {
      synthetic_options so;
      so.rows = static_cast<std::uint32_t>(size);
      so.seed = 42;
      auto graph = make_synthetic_egraph(so);
      if (!graph) {
        std::printf("{\"input\":\"synthetic\",\"error\":\"%s\"}\n",
                    graph.error().message().c_str());
        return 1;
      }
      measure("synthetic_" + std::to_string(size), graph->rows, graph->cost, graph->roots, opt,
              size >= opt.single_run_rows);
    }
  if (opt.files) {
    const std::filesystem::path dir{VYRE_EGRAPH_DATA_DIR};
    if (!std::filesystem::exists(dir / "expected_tree_cost.tsv")) {
      std::printf("{\"input\":\"files\",\"skipped\":\"no data in %s\"}\n", dir.string().c_str());
      return 0;
    }
    for (const auto& entry :
         vyre_test::load_expected_costs((dir / "expected_tree_cost.tsv").string())) {
      const auto graph = vyre_test::load_egraph_json((dir / entry.file).string());
      measure(entry.file, graph.rows, graph.cost, graph.roots, opt, false);
    }
  }
  return 0;
}
