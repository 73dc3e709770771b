// SPDX-License-Identifier: Apache-2.0
// egraph-serialize JSON loading: MB/s of vyre::io::load_egraph_json (file to snapshot, costs,
// names and roots) and the peak resident memory of doing it, per file. Each file is measured in
// a forked child, so its peak RSS is that file's alone. JSON lines.
//
//   vyre_io_bench [FILE ...] [--repeats K] [--slice-bytes N] [--no-threads]
//
// Without FILE: every .json file of the shared e-graph corpus plus .cache/math-11.json (from
// scripts/egglog_math.py --iterations 11) when it is there.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <vyre/io/egraph_json.hpp>

#include "bench_support.hpp"

namespace {

//! Peak resident set of this process so far, bytes.
std::uint64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}

//! Resident set now, bytes.
std::uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

int measure(const std::string& file, int repeats, const vyre::io::json_load_options& options,
            const std::string& cpu) {
  const std::uint64_t bytes = std::filesystem::file_size(file);
  const std::uint64_t base_rss = rss_bytes();
  std::vector<double> seconds;
  std::size_t nodes = 0, classes = 0, roots = 0;
  for (int k = 0; k < repeats; ++k) {
    const auto start = std::chrono::steady_clock::now();
    auto loaded = vyre::io::load_egraph_json<vyre::on_error::return_expected>(file, options);
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!loaded) {
      std::fprintf(stderr, "vyre_io_bench: %s\n", loaded.error().message().c_str());
      return 2;
    }
    nodes = loaded->graph.row_count();
    classes = loaded->eclass_ids.size();
    roots = loaded->root_eclasses.size();
  }
  const double median = vyre_bench::median(seconds);
  const double fastest = *std::min_element(seconds.begin(), seconds.end());
  const std::uint64_t peak = peak_rss_bytes();
  std::printf(
      "{\"name\":\"io.load_egraph_json\",\"params\":{\"file\":\"%s\",\"bytes\":%llu,\"nodes\":%zu,"
      "\"classes\":%zu,\"roots\":%zu,\"repeats\":%d,\"slice_bytes\":%zu,\"threads\":%s},"
      "\"device\":\"%s\",\"median_s\":%.6f,\"min_s\":%.6f,\"mb_per_s\":%.1f,"
      "\"peak_rss_bytes\":%llu,\"peak_rss_over_start_bytes\":%llu,\"peak_over_file\":%.3f}\n",
      file.c_str(), static_cast<unsigned long long>(bytes), nodes, classes, roots, repeats,
      options.slice_bytes, options.threads ? "true" : "false", cpu.c_str(), median, fastest,
      static_cast<double>(bytes) / 1e6 / median, static_cast<unsigned long long>(peak),
      static_cast<unsigned long long>(peak - std::min(peak, base_rss)),
      static_cast<double>(peak) / static_cast<double>(std::max<std::uint64_t>(bytes, 1)));
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  vyre::io::json_load_options options;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--slice-bytes" && i + 1 < argc) {
      options.slice_bytes = static_cast<std::size_t>(std::strtoull(argv[++i], nullptr, 10));
    } else if (arg == "--no-threads") {
      options.threads = false;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "usage: vyre_io_bench [FILE ...] [--repeats K] [--slice-bytes N] "
                   "[--no-threads]\n");
      return 2;
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    const std::filesystem::path corpus = VYRE_EGRAPH_DATA_DIR;
    if (std::filesystem::is_directory(corpus))
      for (const auto& entry : std::filesystem::recursive_directory_iterator(corpus))
        if (entry.path().extension() == ".json") files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    const std::filesystem::path math =
        std::filesystem::path(VYRE_SOURCE_DIR) / ".cache/math-11.json";
    if (std::filesystem::exists(math)) files.push_back(math.string());
    if (files.empty()) {
      std::fprintf(stderr, "vyre_io_bench: no files (no corpus at %s); pass FILE arguments\n",
                   VYRE_EGRAPH_DATA_DIR);
      return 2;
    }
  }
  const std::string cpu = vyre_bench::cpu_name();
  int status = 0;
  for (const std::string& file : files) {
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) std::_Exit(measure(file, repeats, options, cpu));
    int child_status = 0;
    if (child < 0 || waitpid(child, &child_status, 0) < 0 || !WIFEXITED(child_status) ||
        WEXITSTATUS(child_status) != 0)
      status = 1;
  }
  return status;
}
