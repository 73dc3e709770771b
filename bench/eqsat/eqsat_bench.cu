// SPDX-License-Identifier: Apache-2.0
// bench_eqsat: equality saturation on an egglog program (math.egg by default; the chains of
// chain_program.py, the terms of terms_program.py), program text to final counts through
// vyre::eqsat::session, with its iterations on the GPU engine (gpu_offload, every iteration)
// and on the all-core CPU engine, in one process; `auto` (off unless asked) is `vyre-eqsat
// --device auto`: the iterations that start below the crossover on the CPU engine, the others on
// the GPU engine. JSON lines.
//
//   bench_eqsat [--program PATH] [--iterations N[,N...]] [--repeats R] [--engines gpu,auto,cpu]
//
// Per engine and iteration count: one warm-up run, then R timed runs. Each run makes a
// session, runs the program's text plus a final `(run N)` (math.egg has no run of its own) and
// reads the final counts (the last iteration's record): "median_s" is that end-to-end time.
// "sync_s" is what bringing the state back to the host database then takes (`session::finish`:
// on the GPU the download of the rows, which the host tables index one by one, and the
// union-find; what a program pays before its next command that reads the host). "phases_s"
// sums the engine's own search/apply/rebuild times of the median run (the kernel path on the
// GPU, with its per-iteration count readback), "per_iteration" lists them. The GPU line adds
// the peak device memory of the run (the backend's telemetry) per final e-node, and how many
// rebuilds replayed a captured graph and how many captured one. The backend is made once
// (the offload keeps it between sessions). "agrees" says whether the rows of every function
// and the e-classes equal the other engine's after every iteration.
// egglog itself is bench/eqsat/egglog_peer.py, run beside this by bench/eqsat/run.sh.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/eqsat.hpp>
#include <vyre/eqsat/gpu_offload.cuh>
#include <vyre/runtime.cuh>

#include "bench_cuda.cuh"
#include "bench_support.hpp"

namespace {

constexpr const char* bench = "bench_eqsat";

using policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::native,
                                vyre::on_error::return_expected>;
using backend_type = vyre::backend<policies>;
using offload_type = vyre::eqsat::gpu_offload<backend_type>;

struct run_record {
  double seconds = 0;
  double sync_seconds = 0;
  std::vector<vyre::eqsat::iteration_record> iterations;
  vyre::eqsat::run_stop stopped = vyre::eqsat::run_stop::none;
  std::uint64_t peak_device_bytes = 0;
  vyre::graph::cache_stats rebuild_graphs;  //!< the GPU engine's captured rebuilds
};

std::string per_iteration_json(const run_record& run) {
  std::string out = "[";
  for (std::size_t i = 0; i < run.iterations.size(); ++i) {
    const auto& s = run.iterations[i];
    char line[360];
    std::snprintf(line, sizeof line,
                  "%s{\"iteration\": %llu, \"enodes\": %llu, \"eclasses\": %llu, \"matches\": "
                  "%llu, \"search_s\": %.6f, \"apply_s\": %.6f, \"rebuild_s\": %.6f, "
                  "\"rebuild_rounds\": %u, \"device\": \"%s\"}",
                  i != 0 ? ", " : "", static_cast<unsigned long long>(s.iteration),
                  static_cast<unsigned long long>(s.rows),
                  static_cast<unsigned long long>(s.eclasses),
                  static_cast<unsigned long long>(s.matches), s.search_seconds, s.apply_seconds,
                  s.rebuild_seconds, s.rebuild_rounds, s.device.c_str());
    out += line;
  }
  return out + "]";
}

bool same_counts(const run_record& a, const run_record& b) {
  if (a.iterations.size() != b.iterations.size()) return false;
  for (std::size_t i = 0; i < a.iterations.size(); ++i)
    if (a.iterations[i].sizes != b.iterations[i].sizes ||
        a.iterations[i].eclasses != b.iterations[i].eclasses)
      return false;
  return true;
}

//! Warm-up plus `repeats` timed runs of `one()`, sorted by time (the median in the middle).
template <class One>
std::vector<run_record> timed_runs(int repeats, One&& one) {
  std::vector<run_record> runs;
  (void)one();  // warm-up: first-touch of host memory, the device's pools and modules
  for (int r = 0; r < repeats; ++r) runs.push_back(one());
  std::sort(runs.begin(), runs.end(),
            [](const run_record& a, const run_record& b) { return a.seconds < b.seconds; });
  return runs;
}

void print_line(const char* engine, const std::string& program, std::uint64_t iterations,
                const std::vector<run_record>& runs, const std::string& extra, int agrees) {
  const run_record& median = runs[runs.size() / 2];
  double phases = 0;
  for (const auto& s : median.iterations)
    phases += s.search_seconds + s.apply_seconds + s.rebuild_seconds;
  const std::uint64_t enodes = median.iterations.empty() ? 0 : median.iterations.back().rows;
  std::string samples;
  for (const auto& r : runs) samples += (samples.empty() ? "" : ", ") + std::to_string(r.seconds);
  std::printf(
      "{\"name\": \"eqsat.%s\", \"program\": \"%s\", \"iterations\": %llu, \"enodes\": %llu, "
      "\"median_s\": %.6f, \"min_s\": %.6f, \"samples_s\": [%s], \"sync_s\": %.6f, "
      "\"phases_s\": %.6f, "
      "\"stopped\": \"%s\", \"agrees\": %s, %s\"per_iteration\": %s}\n",
      engine, program.c_str(), static_cast<unsigned long long>(iterations),
      static_cast<unsigned long long>(enodes), median.seconds, runs.front().seconds,
      samples.c_str(), median.sync_seconds, phases, vyre::eqsat::run_stop_name(median.stopped),
      agrees < 0 ? "null" : (agrees != 0 ? "true" : "false"), extra.c_str(),
      per_iteration_json(median).c_str());
  std::fflush(stdout);
}

//! One run of `text` on a session (`offload`: the GPU; null: the CPU engine on `threads`).
run_record run_session(const std::string& text, const std::string& name, unsigned threads,
                       const std::shared_ptr<offload_type>& offload) {
  run_record rec;
  vyre::eqsat::session_options options;
  options.threads = threads;
  options.offload = offload;
  if (offload && offload->backend() != nullptr) {
    offload->backend()->telemetry().reset();
    vyre_bench::require(bench, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  const auto start = std::chrono::steady_clock::now();
  vyre::eqsat::session s(options);
  auto ran = s.run_text(text, name);
  if (ran && offload && offload->engine() != nullptr)
    rec.rebuild_graphs = offload->engine()->rebuild_graph_stats();
  rec.iterations = s.iterations();
  const auto ran_at = std::chrono::steady_clock::now();
  rec.seconds = std::chrono::duration<double>(ran_at - start).count();
  if (ran) ran = s.finish();
  if (!ran) {
    std::fprintf(stderr, "%s: %s\n", bench, s.describe(ran.error()).c_str());
    std::exit(1);
  }
  rec.sync_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - ran_at).count();
  rec.stopped = s.stopped();
  if (offload && offload->backend() != nullptr)
    rec.peak_device_bytes = offload->backend()->telemetry().snapshot().peak_device_bytes;
  return rec;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_eqsat: equality saturation, GPU engine and CPU engine (JSON lines)"};
  std::string program_path = VYRE_EGGLOG_DATA_DIR "/math.egg";
  std::vector<std::uint64_t> iteration_counts{11, 12};
  int repeats = 3;
  std::vector<std::string> engines{"gpu", "cpu"};
  app.add_option("--program", program_path, "egglog program");
  app.add_option("--iterations", iteration_counts, "iterations to run (a list)")->delimiter(',');
  app.add_option("--repeats", repeats, "timed runs after one warm-up")->check(CLI::Range(1, 100));
  app.add_option("--engines", engines,
                 "gpu (the GPU engine under the session), auto (the GPU engine from the "
                 "crossover on), cpu")
      ->delimiter(',')
      ->check(CLI::IsMember({"gpu", "auto", "cpu"}));
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(program_path);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read %s. Fix: pass --program PATH\n", bench,
                 program_path.c_str());
    return 1;
  }
  std::stringstream text_stream;
  text_stream << in.rdbuf();
  const std::string text = text_stream.str();
  const std::string name = program_path.substr(program_path.find_last_of('/') + 1);

  const auto wanted = [&](const char* engine) {
    return std::find(engines.begin(), engines.end(), engine) != engines.end();
  };
  std::shared_ptr<offload_type> offload, automatic;
  std::string device = "none";
  if (wanted("gpu") || wanted("auto")) {
    const auto named = vyre_bench::device_name(bench);
    if (named) {
      const auto acquire = [] { return backend_type::acquire(0); };
      if (wanted("gpu"))
        offload = std::make_shared<offload_type>(acquire, vyre::device_choice::gpu);
      if (wanted("auto"))
        automatic = std::make_shared<offload_type>(acquire, vyre::device_choice::automatic);
      device = *named;
    }
  }
  const unsigned threads = std::thread::hardware_concurrency();
  std::fprintf(stderr, "%s: %s, gpu %s, cpu %s (%u threads)\n", bench, name.c_str(), device.c_str(),
               vyre_bench::cpu_name().c_str(), threads);

  for (const std::uint64_t iterations : iteration_counts) {
    const std::string program = text + "\n(run " + std::to_string(iterations) + ")\n";
    // In the order `--engines` gives (swap it to see whether the order matters).
    std::vector<run_record> gpu_runs, auto_runs, cpu_runs;
    for (const std::string& engine : engines) {
      if (engine == "gpu" && offload)
        gpu_runs =
            timed_runs(repeats, [&] { return run_session(program, name, threads, offload); });
      if (engine == "auto" && automatic)
        auto_runs =
            timed_runs(repeats, [&] { return run_session(program, name, threads, automatic); });
      if (engine == "cpu")
        cpu_runs =
            timed_runs(repeats, [&] { return run_session(program, name, threads, nullptr); });
    }
    // Whether a device line's counts equal the CPU engine's (null without both).
    const auto agrees_with_cpu = [&](const std::vector<run_record>& runs) {
      if (runs.empty() || cpu_runs.empty()) return -1;
      return same_counts(runs[runs.size() / 2], cpu_runs[cpu_runs.size() / 2]) ? 1 : 0;
    };
    const auto print_device_line = [&](const char* engine, const std::vector<run_record>& runs) {
      if (runs.empty()) return;
      const run_record& m = runs[runs.size() / 2];
      const std::uint64_t enodes = m.iterations.empty() ? 1 : m.iterations.back().rows;
      char extra[512];
      std::snprintf(extra, sizeof extra,
                    "\"device\": \"%s\", \"peak_device_bytes\": %llu, "
                    "\"device_bytes_per_enode\": %.2f, \"rebuild_graphs\": {\"replays\": %llu, "
                    "\"captures\": %llu}, ",
                    device.c_str(), static_cast<unsigned long long>(m.peak_device_bytes),
                    static_cast<double>(m.peak_device_bytes) / static_cast<double>(enodes),
                    static_cast<unsigned long long>(m.rebuild_graphs.hits),
                    static_cast<unsigned long long>(m.rebuild_graphs.captures));
      print_line(engine, name, iterations, runs, extra, agrees_with_cpu(runs));
    };
    print_device_line("gpu", gpu_runs);
    print_device_line("auto", auto_runs);
    const int agrees = agrees_with_cpu(gpu_runs.empty() ? auto_runs : gpu_runs);
    if (!cpu_runs.empty()) {
      const std::string extra = "\"cpu\": \"" + vyre_bench::cpu_name() +
                                "\", \"threads\": " + std::to_string(threads) + ", ";
      print_line("cpu", name, iterations, cpu_runs, extra, agrees);
    }
  }
  return 0;
}
