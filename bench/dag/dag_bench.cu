// SPDX-License-Identifier: Apache-2.0
// DAG-cost extraction: the heuristic on the CPU (vyre/algorithms/dag_extract.hpp, all cores) and
// on the GPU (dag_extract.cuh, one block per search; same options, so the same selection)
// against the optimum: CBC's (vyre/algorithms/dag_ilp.hpp, warm-started from the heuristic,
// proven or not within the time limit) where CBC was built in, or the optima of an earlier run
// (`--optima FILE`, its JSON lines; the GPU machine has no CBC). Per real e-graph and per set
// (tensat, egg, ...). JSON lines:
//
//   {"name":"dag.extract", "params":{file, set, nodes, classes, searches, kick_budget}, device,
//    gpu, heuristic_dag_cost, tree_selection_dag_cost, cpu_median_s (rows to result, all
//    cores), gpu_median_s (host rows to host result: problem and starts on the host, upload,
//    searches, download), gpu_device_s (upload + searches + download: gpu_median_s minus the
//    host's problem and starts), gpu_equals_cpu, heuristic_lower_bound, heuristic_optimal (the
//    heuristic's own bound and whether its selection meets it), ilp_dag_cost, ilp_optimal,
//    ilp_lower_bound, ilp_s, cbc_s (CBC always runs here, also where the heuristic proved its
//    selection optimal), optimum_from ("cbc" | "file" | "none"), gap (heuristic / optimum - 1)}
//   {"name":"dag.extract.set", "params":{set}, files, proven, heuristic_proven,
//    cumulative_ratio, geomean_gap,
//    worst_gap, worst_file, cpu_s, gpu_s, gpu_max_s, ilp_s, cbc_reached, cbc_reach_s,
//    cbc_reach_over_cpu_min, cbc_reach_over_cpu_geomean}  -- one per set, then set "all"
//
// With --cbc-reach (needs CBC): CBC is also run cold (no warm start) and stopped at its first
// selection costing at most the heuristic's, within the time limit: "CBC reaching the same
// cost". Each file's line gains cbc_reached, cbc_reach_s (the limit when not reached) and
// cbc_reach_over_cpu / cbc_reach_over_gpu; the set lines' ratios are over the reached files.
//
//   bench_dag [FILE ...] [--data-dir D] [--time-limit S] [--repeats K] [--threads N]
//             [--searches N] [--kick-budget N] [--kick-patience N] [--optima FILE.jsonl]
//             [--no-gpu] [--cbc-reach]
//
// Without FILE: every file of expected_tree_cost.tsv in the data folder. Files with negative
// costs (maxsat) are reported as skipped: DAG extraction refuses them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_cuda.cuh"
#include "bench_support.hpp"
#include "dag_bench_ilp.hpp"
#include "egraph_json.hpp"
#include "vyre/algorithms/dag_extract.cuh"

namespace {

using namespace vyre::algorithms;
using gpu_backend =
    vyre::backend<vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                 vyre::on_error::return_expected>>;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A number field of a JSON line written by this benchmark ("key":value), or nullopt.
std::optional<double> number_field(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const auto at = line.find(tag);
  if (at == std::string::npos) return std::nullopt;
  const std::string rest = line.substr(at + tag.size());
  if (rest.rfind("true", 0) == 0) return 1.0;
  if (rest.rfind("false", 0) == 0) return 0.0;
  return std::strtod(rest.c_str(), nullptr);
}

std::map<std::string, vyre_bench::known_optimum> load_optima(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bench_dag: cannot read --optima %s\n", path.c_str());
    std::exit(2);
  }
  std::map<std::string, vyre_bench::known_optimum> optima;
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"name\":\"dag.extract\"") == std::string::npos) continue;
    const auto file_at = line.find("\"file\":\"");
    if (file_at == std::string::npos) continue;
    const auto begin = file_at + 8;
    const std::string file = line.substr(begin, line.find('"', begin) - begin);
    const auto cost = number_field(line, "ilp_dag_cost");
    if (!cost) continue;
    vyre_bench::known_optimum o;
    o.cost = *cost;
    o.optimal = number_field(line, "ilp_optimal").value_or(0) != 0;
    o.lower_bound = number_field(line, "ilp_lower_bound").value_or(0);
    o.ilp_s = number_field(line, "ilp_s").value_or(0);
    o.cbc_s = number_field(line, "cbc_s").value_or(0);
    optima[file] = o;
  }
  return optima;
}

struct set_totals {
  int files = 0;
  int proven = 0;
  int heuristic_proven = 0;  // files whose heuristic selection meets its own lower bound
  double heuristic_sum = 0, optimum_sum = 0, log_ratio_sum = 0;
  double worst_gap = 0;
  std::string worst_file;
  double cpu_s = 0, gpu_s = 0, gpu_max_s = 0, ilp_s = 0;
  int cbc_reached = 0;
  double cbc_reach_s = 0, reach_log_ratio_sum = 0, reach_ratio_min = INFINITY;

  //! A cold CBC run stopped at the heuristic's cost, against the CPU engine's time.
  void add_reach(const vyre_bench::cbc_reach& reach, double cpu) {
    cbc_reach_s += reach.cbc_s;
    if (!reach.reached || !(cpu > 0)) return;
    ++cbc_reached;
    reach_log_ratio_sum += std::log(reach.cbc_s / cpu);
    reach_ratio_min = std::min(reach_ratio_min, reach.cbc_s / cpu);
  }

  void add(const std::string& file, double heuristic, bool heuristic_optimal,
           const vyre_bench::known_optimum& optimum, double cpu, double gpu) {
    ++files;
    heuristic_proven += heuristic_optimal ? 1 : 0;
    cpu_s += cpu;
    gpu_s += gpu;
    gpu_max_s = std::max(gpu_max_s, gpu);
    ilp_s += optimum.ilp_s;
    if (!optimum.optimal) return;
    ++proven;
    heuristic_sum += heuristic;
    optimum_sum += optimum.cost;
    const double ratio =
        optimum.cost > 0 ? heuristic / optimum.cost : (heuristic > 0 ? INFINITY : 1.0);
    log_ratio_sum += std::log(ratio);
    if (ratio - 1 > worst_gap || worst_file.empty()) {
      worst_gap = ratio - 1;
      worst_file = file;
    }
  }
};

void print_set(const std::string& name, const set_totals& t, const std::string& cpu,
               const std::string& gpu) {
  std::printf(
      "{\"name\":\"dag.extract.set\",\"params\":{\"set\":\"%s\"},\"device\":\"%s\","
      "\"gpu\":\"%s\",\"files\":%d,\"proven\":%d,\"heuristic_proven\":%d,"
      "\"cumulative_ratio\":%.9f,\"geomean_gap\":%.9f,"
      "\"worst_gap\":%.9f,\"worst_file\":\"%s\",\"cpu_s\":%.6f,\"gpu_s\":%.6f,\"gpu_max_s\":%.6f,"
      "\"ilp_s\":%.3f,\"cbc_reached\":%d,\"cbc_reach_s\":%.6f,\"cbc_reach_over_cpu_min\":%.6g,"
      "\"cbc_reach_over_cpu_geomean\":%.6g}\n",
      name.c_str(), cpu.c_str(), gpu.c_str(), t.files, t.proven, t.heuristic_proven,
      t.optimum_sum > 0 ? t.heuristic_sum / t.optimum_sum : 1.0,
      t.proven > 0 ? std::exp(t.log_ratio_sum / t.proven) - 1 : 0.0, t.worst_gap,
      t.worst_gap > 0 ? t.worst_file.c_str() : "", t.cpu_s, t.gpu_s, t.gpu_max_s, t.ilp_s,
      t.cbc_reached, t.cbc_reach_s, t.cbc_reached > 0 ? t.reach_ratio_min : 0.0,
      t.cbc_reached > 0 ? std::exp(t.reach_log_ratio_sum / t.cbc_reached) : 0.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = VYRE_EGRAPH_DATA_DIR;
  std::string optima_file;
  double time_limit = 30;
  int repeats = 3;
  bool use_gpu = true;
  bool cbc_reach = false;
  dag_options options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--data-dir" && i + 1 < argc) {
      data_dir = argv[++i];
    } else if (arg == "--time-limit" && i + 1 < argc) {
      time_limit = std::atof(argv[++i]);
    } else if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--threads" && i + 1 < argc) {
      options.threads = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    } else if (arg == "--searches" && i + 1 < argc) {
      options.searches = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    } else if (arg == "--kick-budget" && i + 1 < argc) {
      options.kick_budget = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--kick-patience" && i + 1 < argc) {
      options.kick_patience = static_cast<std::uint32_t>(std::atoi(argv[++i]));
    } else if (arg == "--optima" && i + 1 < argc) {
      optima_file = argv[++i];
    } else if (arg == "--no-gpu") {
      use_gpu = false;
    } else if (arg == "--cbc-reach") {
      cbc_reach = true;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr, "bench_dag: unknown option %s\n", arg.c_str());
      return 2;
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    for (const auto& entry : vyre_test::load_expected_costs(data_dir + "/expected_tree_cost.tsv"))
      files.push_back(entry.file);
    if (files.empty()) {
      std::printf("{\"skipped\":\"no e-graph data in %s\"}\n", data_dir.c_str());
      return 0;
    }
  }
  if (cbc_reach && !vyre_bench::have_ilp) {
    std::fprintf(stderr, "bench_dag: --cbc-reach needs CBC (this build has none)\n");
    return 2;
  }
  const auto optima = optima_file.empty() ? std::map<std::string, vyre_bench::known_optimum>{}
                                          : load_optima(optima_file);
  std::optional<gpu_backend> gpu;
  std::string gpu_name = "none";
  if (use_gpu) {
    if (const auto name = vyre_bench::device_name("bench_dag")) {
      auto acquired = gpu_backend::acquire(0);
      if (!acquired) {
        std::fprintf(stderr, "bench_dag: %s\n", acquired.error().message().c_str());
        return 1;
      }
      gpu.emplace(std::move(*acquired));
      gpu_name = *name;
    }
  }
  const std::string cpu = vyre_bench::cpu_name();
  std::map<std::string, set_totals> sets;
  set_totals all;
  for (const std::string& file : files) {
    const std::string path = file.front() == '/' ? file : data_dir + "/" + file;
    const std::string set =
        file.find('/') == std::string::npos ? "other" : file.substr(0, file.find('/'));
    vyre_test::loaded_egraph graph;
    try {
      graph = vyre_test::load_egraph_json(path);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "bench_dag: %s: %s\n", path.c_str(), e.what());
      return 2;
    }
    const std::size_t classes = [&] {
      std::vector<std::uint32_t> ids(graph.rows.row_eclass_ids);
      std::sort(ids.begin(), ids.end());
      return static_cast<std::size_t>(std::unique(ids.begin(), ids.end()) - ids.begin());
    }();
    if (std::any_of(graph.cost.begin(), graph.cost.end(), [](double c) { return c < 0; })) {
      std::printf(
          "{\"name\":\"dag.extract\",\"params\":{\"file\":\"%s\",\"set\":\"%s\"},"
          "\"skipped\":\"negative node costs\"}\n",
          file.c_str(), set.c_str());
      continue;
    }
    const cuda::std::span<const double> costs(graph.cost.data(), graph.cost.size());
    const cuda::std::span<const std::uint32_t> roots(graph.roots.data(), graph.roots.size());
    auto fail = [&](const char* what, const vyre::error& e) {
      std::fprintf(stderr, "bench_dag: %s: %s: %s\n", file.c_str(), what, e.message().c_str());
      std::exit(1);
    };

    // CPU engine: a warm-up, then the median of `repeats`.
    dag_extraction_result on_cpu;
    std::vector<double> cpu_times;
    for (int k = 0; k <= repeats; ++k) {
      const auto start = std::chrono::steady_clock::now();
      auto found = extract_dag(graph.rows.ref(), costs, roots, options);
      if (k > 0) cpu_times.push_back(seconds_since(start));
      if (!found) fail("CPU", found.error());
      on_cpu = std::move(*found);
    }
    const double cpu_s = vyre_bench::median(cpu_times);

    // GPU engine, end to end and without the host's problem and starts.
    double gpu_s = 0, gpu_device_s = 0;
    bool same = false;
    if (gpu) {
      std::vector<double> gpu_times, host_times;
      dag_extraction_result on_gpu;
      for (int k = 0; k <= repeats; ++k) {
        const auto start = std::chrono::steady_clock::now();
        auto found = extract_dag(*gpu, graph.rows.ref(), costs, roots, options);
        if (k > 0) gpu_times.push_back(seconds_since(start));
        if (!found) fail("GPU", found.error());
        on_gpu = std::move(*found);
        const auto host_start = std::chrono::steady_clock::now();
        const auto input = dag_rows(graph.rows.ref()).input(costs, roots, "bench");
        if (!input) fail("host problem", input.error());
        const auto starts = detail::make_dag_starts(input->problem, "bench", &input->tree);
        if (!starts) fail("host starts", starts.error());
        if (k > 0) host_times.push_back(seconds_since(host_start));
      }
      gpu_s = vyre_bench::median(gpu_times);
      gpu_device_s = std::max(0.0, gpu_s - vyre_bench::median(host_times));
      same = on_gpu.choice == on_cpu.choice && on_gpu.dag_cost == on_cpu.dag_cost &&
             on_gpu.moves == on_cpu.moves && on_gpu.optimal == on_cpu.optimal &&
             on_gpu.lower_bound == on_cpu.lower_bound;
    }

    // The optimum: CBC here, or the earlier run's.
    vyre_bench::known_optimum optimum;
    const char* optimum_from = "none";
    if (const auto it = optima.find(file); it != optima.end()) {
      optimum = it->second;
      optimum_from = "file";
    } else if (vyre_bench::have_ilp) {
      std::string problem;
      if (!vyre_bench::solve_ilp(graph, options, time_limit, optimum, problem)) {
        std::fprintf(stderr, "bench_dag: %s: ILP: %s\n", file.c_str(), problem.c_str());
        return 1;
      }
      optimum_from = "cbc";
    }
    const double heuristic = on_cpu.dag_cost;
    vyre_bench::cbc_reach reach;
    std::string reach_fields;
    if (cbc_reach) {
      std::string problem;
      if (!vyre_bench::cbc_reach_cost(graph, options, time_limit, heuristic, reach, problem)) {
        std::fprintf(stderr, "bench_dag: %s: cold CBC: %s\n", file.c_str(), problem.c_str());
        return 1;
      }
      char text[256];
      std::snprintf(text, sizeof text,
                    ",\"cbc_reached\":%s,\"cbc_reach_s\":%.6f,\"cbc_reach_best_cost\":%.17g,"
                    "\"cbc_reach_over_cpu\":%.6g,\"cbc_reach_over_gpu\":%.6g",
                    reach.reached ? "true" : "false", reach.cbc_s,
                    std::isfinite(reach.best_cost) ? reach.best_cost : -1.0,
                    cpu_s > 0 ? reach.cbc_s / cpu_s : 0.0, gpu_s > 0 ? reach.cbc_s / gpu_s : 0.0);
      reach_fields = text;
      sets[set].add_reach(reach, cpu_s);
      all.add_reach(reach, cpu_s);
    }
    std::printf(
        "{\"name\":\"dag.extract\",\"params\":{\"file\":\"%s\",\"set\":\"%s\",\"nodes\":%u,"
        "\"classes\":%zu,\"searches\":%u,\"kick_budget\":%llu,\"kick_patience\":%u,\"time_limit\":%"
        "g},\"device\":\"%s\","
        "\"gpu\":\"%s\",\"heuristic_dag_cost\":%.17g,\"tree_selection_dag_cost\":%.17g,"
        "\"cpu_median_s\":%.6f,\"gpu_median_s\":%.6f,\"gpu_device_s\":%.6f,\"gpu_equals_cpu\":%s,"
        "\"heuristic_lower_bound\":%.17g,\"heuristic_optimal\":%s,"
        "\"ilp_dag_cost\":%.17g,\"ilp_optimal\":%s,\"ilp_lower_bound\":%.17g,\"ilp_s\":%.6f,"
        "\"cbc_s\":%.6f,\"optimum_from\":\"%s\",\"gap\":%.9f%s}\n",
        file.c_str(), set.c_str(), graph.rows.row_count(), classes, options.searches,
        static_cast<unsigned long long>(options.kick_budget), options.kick_patience, time_limit,
        cpu.c_str(), gpu_name.c_str(), heuristic, on_cpu.tree_selection_dag_cost, cpu_s, gpu_s,
        gpu_device_s, gpu ? (same ? "true" : "false") : "null", on_cpu.lower_bound,
        on_cpu.optimal ? "true" : "false", optimum.cost, optimum.optimal ? "true" : "false",
        optimum.lower_bound, optimum.ilp_s, optimum.cbc_s, optimum_from,
        optimum.cost > 0 ? heuristic / optimum.cost - 1 : 0.0, reach_fields.c_str());
    std::fflush(stdout);
    sets[set].add(file, heuristic, on_cpu.optimal, optimum, cpu_s, gpu_s);
    all.add(file, heuristic, on_cpu.optimal, optimum, cpu_s, gpu_s);
  }
  for (const auto& [name, totals] : sets) print_set(name, totals, cpu, gpu_name);
  print_set("all", all, cpu, gpu_name);
  return 0;
}
