// SPDX-License-Identifier: Apache-2.0
// DAG-cost extraction: the heuristic (vyre/algorithms/dag_extract.hpp) against CBC's optimum
// (vyre/algorithms/dag_ilp.hpp, warm-started from the heuristic, proven or not within the time
// limit), per real e-graph and per set (tensat, egg, ...). JSON lines:
//
//   {"name":"dag.extract", "params":{file, set, nodes, classes}, heuristic_dag_cost,
//    heuristic_median_s, tree_selection_dag_cost, ilp_dag_cost, ilp_optimal, ilp_lower_bound,
//    ilp_s (warm start + model + CBC), cbc_s (CBC alone), gap (heuristic / ilp - 1)}
//   {"name":"dag.extract.set", "params":{set}, files, proven, cumulative_ratio (sum of the
//    heuristic's costs / sum of the optima, proven files), geomean_gap, worst_gap, worst_file
//    ("" when every proven file is at the optimum),
//    heuristic_s, ilp_s}  -- one per set, then set "all"
//
//   bench_dag [FILE ...] [--data-dir D] [--time-limit S] [--repeats K] [--threads N]
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
#include <string>
#include <vector>

#include "egraph_json.hpp"
#include "vyre/algorithms/dag_extract.hpp"
#include "vyre/algorithms/dag_ilp.hpp"

namespace {

using namespace vyre::algorithms;

std::string cpu_name() {
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown cpu";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct set_totals {
  int files = 0;
  int proven = 0;
  double heuristic_sum = 0, optimum_sum = 0, log_ratio_sum = 0;
  double worst_gap = 0;
  std::string worst_file;
  double heuristic_s = 0, ilp_s = 0;

  void add(const std::string& file, double heuristic, double optimum, bool optimal,
           double heuristic_seconds, double ilp_seconds) {
    ++files;
    heuristic_s += heuristic_seconds;
    ilp_s += ilp_seconds;
    if (!optimal) return;
    ++proven;
    heuristic_sum += heuristic;
    optimum_sum += optimum;
    const double ratio = optimum > 0 ? heuristic / optimum : (heuristic > 0 ? INFINITY : 1.0);
    log_ratio_sum += std::log(ratio);
    if (ratio - 1 > worst_gap || worst_file.empty()) {
      worst_gap = ratio - 1;
      worst_file = file;
    }
  }
};

void print_set(const std::string& name, const set_totals& t, const std::string& cpu) {
  std::printf(
      "{\"name\":\"dag.extract.set\",\"params\":{\"set\":\"%s\"},\"device\":\"%s\",\"files\":%d,"
      "\"proven\":%d,\"cumulative_ratio\":%.9f,\"geomean_gap\":%.9f,\"worst_gap\":%.9f,"
      "\"worst_file\":\"%s\",\"heuristic_s\":%.6f,\"ilp_s\":%.3f}\n",
      name.c_str(), cpu.c_str(), t.files, t.proven,
      t.optimum_sum > 0 ? t.heuristic_sum / t.optimum_sum : 1.0,
      t.proven > 0 ? std::exp(t.log_ratio_sum / t.proven) - 1 : 0.0, t.worst_gap,
      t.worst_gap > 0 ? t.worst_file.c_str() : "", t.heuristic_s, t.ilp_s);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string data_dir = VYRE_EGRAPH_DATA_DIR;
  double time_limit = 30;
  int repeats = 3;
  std::uint32_t threads = 0;
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
      threads = static_cast<std::uint32_t>(std::atoi(argv[++i]));
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
  const std::string cpu = cpu_name();
  std::map<std::string, set_totals> sets;
  set_totals all;
  for (const std::string& file : files) {
    const std::string path = file.front() == '/' ? file : data_dir + "/" + file;
    const std::string set =
        file.find('/') == std::string::npos ? "other" : file.substr(0, file.find('/'));
    const auto graph = vyre_test::load_egraph_json(path);
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
    dag_options options;
    options.threads = threads;
    std::vector<double> times;
    double heuristic = 0, tree_selection = 0;
    for (int k = 0; k < repeats; ++k) {
      const auto start = std::chrono::steady_clock::now();
      const auto found = extract_dag(graph.rows.ref(), graph.cost, graph.roots, options);
      times.push_back(seconds_since(start));
      if (!found) {
        std::fprintf(stderr, "bench_dag: %s: %s\n", file.c_str(), found.error().message().c_str());
        return 1;
      }
      heuristic = found->dag_cost;
      tree_selection = found->tree_selection_dag_cost;
    }
    std::sort(times.begin(), times.end());
    const double heuristic_s = times[times.size() / 2];
    dag_ilp_options ilp_options;
    ilp_options.time_limit_seconds = time_limit;
    ilp_options.heuristic = options;
    const auto start = std::chrono::steady_clock::now();
    const auto exact = extract_dag_ilp(graph.rows.ref(), graph.cost, graph.roots, ilp_options);
    const double ilp_s = seconds_since(start);
    if (!exact) {
      std::fprintf(stderr, "bench_dag: %s: %s\n", file.c_str(), exact.error().message().c_str());
      return 1;
    }
    const double best = exact->selection.dag_cost;
    std::printf(
        "{\"name\":\"dag.extract\",\"params\":{\"file\":\"%s\",\"set\":\"%s\",\"nodes\":%u,"
        "\"classes\":%zu,\"time_limit\":%g},\"device\":\"%s\",\"heuristic_dag_cost\":%.17g,"
        "\"heuristic_median_s\":%.6f,\"tree_selection_dag_cost\":%.17g,\"ilp_dag_cost\":%.17g,"
        "\"ilp_optimal\":%s,\"ilp_lower_bound\":%.17g,\"ilp_improved\":%s,\"ilp_s\":%.3f,\"cbc_s\":"
        "%.3f,"
        "\"gap\":%.9f}\n",
        file.c_str(), set.c_str(), graph.rows.row_count(), classes, time_limit, cpu.c_str(),
        heuristic, heuristic_s, tree_selection, best, exact->optimal ? "true" : "false",
        exact->lower_bound, exact->solver_improved ? "true" : "false", ilp_s, exact->solver_seconds,
        best > 0 ? heuristic / best - 1 : 0.0);
    std::fflush(stdout);
    sets[set].add(file, heuristic, best, exact->optimal, heuristic_s, ilp_s);
    all.add(file, heuristic, best, exact->optimal, heuristic_s, ilp_s);
  }
  for (const auto& [name, totals] : sets) print_set(name, totals, cpu);
  print_set("all", all, cpu);
  return 0;
}
