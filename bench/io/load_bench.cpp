// SPDX-License-Identifier: Apache-2.0
// egraph-serialize JSON loading (and image files): MB/s of vyre::io::load_egraph_json (file to
// snapshot, costs, names and roots) and the peak resident memory of doing it, per file. Each file
// is measured in a forked child, so its peak RSS is that file's alone. JSON lines.
//
//   vyre_io_bench [FILE ...] [--repeats K] [--slice-bytes N] [--no-threads]
//
// Without FILE: every .json file of the shared e-graph corpus plus .cache/math-11.json (from
// scripts/egglog_math.py --iterations 11) when it is there.
//
// --image-round-trip adds, per file, the image file round trip of its packed image:
// vyre::egraph::write_image_file then read_image_file (checksum and validation both ways, on
// every core) in the temporary directory, median of the repeats, against the same bytes written
// and read back raw (std::ofstream/std::ifstream, no checks) in the same process. Each repeat
// writes new files, removed after its clock stops: replacing a file of the same size makes the
// kernel free the old file's pages inside the call (in rename, or in the raw baseline's
// O_TRUNC), 15-35 ms for 37 MB on the GPU machine's ext4, whoever writes. That case is measured
// too: `replace_write_median_s`, write_image_file over the previous repeat's file.
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

#include <vyre/egraph/image_file.hpp>
#include <vyre/egraph/pack.hpp>
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

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

//! The image file round trip of `graph`'s packed image (see the file comment).
int measure_round_trip(const std::string& file, const vyre::egraph::snapshot& graph, int repeats,
                       const std::string& cpu) {
  namespace eg = vyre::egraph;
  using vyre::on_error::return_expected;
  auto image = eg::pack<return_expected>(graph);
  if (!image) {
    std::fprintf(stderr, "vyre_io_bench: %s: %s\n", file.c_str(), image.error().message().c_str());
    return 2;
  }
  const std::filesystem::path base =
      std::filesystem::temp_directory_path() / ("vyre_io_bench_" + std::to_string(getpid()));
  const std::filesystem::path path = base.string() + ".vyreimg";
  const std::filesystem::path raw_path = base.string() + ".raw";
  const std::filesystem::path kept = base.string() + ".kept.vyreimg";
  const auto words = image->words();
  std::vector<double> write_s, read_s, total_s, raw_s, replace_s;
  std::uint64_t file_bytes = 0;
  // The baseline reads into memory allocated (and touched) before its clock starts.
  std::vector<std::uint32_t> raw(words.size());
  const auto failed = [&](const vyre::error& error) {
    std::fprintf(stderr, "vyre_io_bench: %s: %s\n", path.c_str(), error.message().c_str());
    return 2;
  };
  if (auto first = eg::write_image_file<return_expected>(kept, image->ref()); !first)
    return failed(first.error());
  for (int k = 0; k < repeats + 1; ++k) {  // the first round warms the page cache
    auto start = std::chrono::steady_clock::now();
    auto written = eg::write_image_file<return_expected>(path, image->ref());
    const double write = seconds_since(start);
    start = std::chrono::steady_clock::now();
    auto read = eg::read_image_file<return_expected>(path);
    const double read_time = seconds_since(start);
    if (!written) return failed(written.error());
    if (!read) return failed(read.error());
    const auto back = read->words();
    if (!std::equal(back.begin(), back.end(), words.begin(), words.end())) {
      std::fprintf(stderr, "vyre_io_bench: %s: the image read back differs\n", path.c_str());
      return 2;
    }
    file_bytes = std::filesystem::file_size(path);
    std::filesystem::remove(path);
    // Baseline: the same bytes, raw, to a new file too.
    start = std::chrono::steady_clock::now();
    {
      std::ofstream out(raw_path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(words.data()),
                static_cast<std::streamsize>(words.size_bytes()));
    }
    {
      std::ifstream in(raw_path, std::ios::binary);
      in.read(reinterpret_cast<char*>(raw.data()),
              static_cast<std::streamsize>(words.size_bytes()));
    }
    const double raw_time = seconds_since(start);
    std::filesystem::remove(raw_path);
    // Replacing a file of the same size.
    start = std::chrono::steady_clock::now();
    auto replaced = eg::write_image_file<return_expected>(kept, image->ref());
    const double replace = seconds_since(start);
    if (!replaced) return failed(replaced.error());
    if (k == 0) continue;
    write_s.push_back(write);
    read_s.push_back(read_time);
    total_s.push_back(write + read_time);
    raw_s.push_back(raw_time);
    replace_s.push_back(replace);
  }
  std::filesystem::remove(kept);
  std::printf(
      "{\"name\":\"io.image_file_round_trip\",\"params\":{\"file\":\"%s\",\"image_bytes\":%zu,"
      "\"file_bytes\":%llu,\"rows\":%u,\"repeats\":%d},\"device\":\"%s\",\"median_s\":%.6f,"
      "\"min_s\":%.6f,\"write_median_s\":%.6f,\"read_median_s\":%.6f,"
      "\"replace_write_median_s\":%.6f,"
      "\"baseline\":\"the same bytes written to a new file and read raw (std::ofstream, "
      "std::ifstream)\",\"baseline_median_s\":%.6f}\n",
      file.c_str(), words.size_bytes(), static_cast<unsigned long long>(file_bytes),
      image->layout().row_count, repeats, cpu.c_str(), vyre_bench::median(total_s),
      *std::min_element(total_s.begin(), total_s.end()), vyre_bench::median(write_s),
      vyre_bench::median(read_s), vyre_bench::median(replace_s), vyre_bench::median(raw_s));
  std::fflush(stdout);
  return 0;
}

int measure(const std::string& file, int repeats, const vyre::io::json_load_options& options,
            const std::string& cpu, bool round_trip) {
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
  if (!round_trip) return 0;
  auto loaded = vyre::io::load_egraph_json<vyre::on_error::return_expected>(file, options);
  if (!loaded) return 2;
  return measure_round_trip(file, loaded->graph, repeats, cpu);
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 3;
  bool round_trip = false;
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
    } else if (arg == "--image-round-trip") {
      round_trip = true;
    } else if (arg.rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "usage: vyre_io_bench [FILE ...] [--repeats K] [--slice-bytes N] "
                   "[--no-threads] [--image-round-trip]\n");
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
    if (child == 0) std::_Exit(measure(file, repeats, options, cpu, round_trip));
    int child_status = 0;
    if (child < 0 || waitpid(child, &child_status, 0) < 0 || !WIFEXITED(child_status) ||
        WEXITSTATUS(child_status) != 0)
      status = 1;
  }
  return status;
}
