// SPDX-License-Identifier: Apache-2.0
// bench_eqsat: equality saturation on an egglog program (math.egg by default), program text to
// final counts, on the GPU engine and the all-core CPU engine in one process. JSON lines.
//
//   bench_eqsat [--program PATH] [--iterations N[,N...]] [--repeats R] [--engines gpu,cpu]
//
// Per engine and iteration count: one warm-up run, then R timed runs. Each run reads the
// program text, makes the engine, runs the program's commands plus N iterations (as a final
// `(run N)`; math.egg has no run of its own) and reads the final counts: "median_s" is that
// end-to-end time. "phases_s" sums the engine's own search/apply/rebuild times of the median
// run (the kernel path on the GPU, with its per-iteration count readback), "per_iteration"
// lists them. The GPU line adds the peak device memory of the run (the backend's telemetry)
// per final e-node, and how many rebuilds replayed a captured graph and how many captured one.
// "agrees" says whether the per-constructor counts equal the other engine's after every iteration.
// egglog itself is bench/eqsat/egglog_peer.py, run beside this by bench/eqsat/run.sh.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/eqsat.hpp>
#include <vyre/eqsat/gpu_engine.cuh>
#include <vyre/runtime.cuh>

#include "bench_cuda.cuh"
#include "bench_support.hpp"

namespace {

constexpr const char* bench = "bench_eqsat";

struct run_record {
  double seconds = 0;
  vyre::eqsat::execution execution;
  std::uint64_t peak_device_bytes = 0;
  vyre::graph::cache_stats rebuild_graphs;    //!< the GPU engine's captured rebuilds
  vyre::graph::cache_stats iteration_graphs;  //!< and its captured iterations
};

std::string per_iteration_json(const vyre::eqsat::execution& ex) {
  std::string out = "[";
  for (std::size_t i = 0; i < ex.iterations.size(); ++i) {
    const auto& s = ex.iterations[i];
    char line[320];
    std::snprintf(line, sizeof line,
                  "%s{\"iteration\": %llu, \"enodes\": %llu, \"eclasses\": %llu, \"matches\": "
                  "%llu, \"search_s\": %.6f, \"apply_s\": %.6f, \"rebuild_s\": %.6f}",
                  i != 0 ? ", " : "", static_cast<unsigned long long>(s.iteration),
                  static_cast<unsigned long long>(s.enodes),
                  static_cast<unsigned long long>(s.eclasses),
                  static_cast<unsigned long long>(s.matches), s.search_seconds, s.apply_seconds,
                  s.rebuild_seconds);
    out += line;
  }
  return out + "]";
}

bool same_counts(const vyre::eqsat::execution& a, const vyre::eqsat::execution& b) {
  if (a.iterations.size() != b.iterations.size()) return false;
  for (std::size_t i = 0; i < a.iterations.size(); ++i)
    if (a.iterations[i].per_constructor != b.iterations[i].per_constructor ||
        a.iterations[i].eclasses != b.iterations[i].eclasses)
      return false;
  return true;
}

//! Warm-up plus `repeats` timed runs of `one()`; the record of the median run.
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
  for (const auto& s : median.execution.iterations)
    phases += s.search_seconds + s.apply_seconds + s.rebuild_seconds;
  const std::uint64_t enodes =
      median.execution.iterations.empty() ? 0 : median.execution.iterations.back().enodes;
  std::string samples;
  for (const auto& r : runs) samples += (samples.empty() ? "" : ", ") + std::to_string(r.seconds);
  std::printf(
      "{\"name\": \"eqsat.%s\", \"program\": \"%s\", \"iterations\": %llu, \"enodes\": %llu, "
      "\"median_s\": %.6f, \"min_s\": %.6f, \"samples_s\": [%s], \"phases_s\": %.6f, "
      "\"stopped\": \"%s\", \"agrees\": %s, %s\"per_iteration\": %s}\n",
      engine, program.c_str(), static_cast<unsigned long long>(iterations),
      static_cast<unsigned long long>(enodes), median.seconds, runs.front().seconds,
      samples.c_str(), phases, vyre::eqsat::stop_reason_name(median.execution.stopped),
      agrees < 0 ? "null" : (agrees != 0 ? "true" : "false"), extra.c_str(),
      per_iteration_json(median.execution).c_str());
  std::fflush(stdout);
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
                 "gpu, gpu-captured (the GPU engine with capture_iterations(true)), cpu")
      ->delimiter(',')
      ->check(CLI::IsMember({"gpu", "gpu-captured", "cpu"}));
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
  auto read = [&] {
    auto prog = vyre::eqsat::read_program(text, program_path);
    if (!prog) {
      std::fprintf(stderr, "%s\n", vyre::eqsat::diagnostic(program_path, prog.error()).c_str());
      std::exit(1);
    }
    return std::move(*prog);
  };

  using policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::native,
                                  vyre::on_error::return_expected>;
  using backend_type = vyre::backend<policies>;
  std::optional<backend_type> gpu;
  const auto wanted = [&](const char* engine) {
    return std::find(engines.begin(), engines.end(), engine) != engines.end();
  };
  const bool want_gpu = wanted("gpu") || wanted("gpu-captured"), want_cpu = wanted("cpu");
  std::string device = "none";
  if (want_gpu) {
    const auto named = vyre_bench::device_name(bench);
    if (named) {
      auto acquired = backend_type::acquire(0);
      if (!acquired) {
        std::fprintf(stderr, "%s: %s\n", bench, acquired.error().message().c_str());
        return 1;
      }
      gpu.emplace(std::move(*acquired));
      device = *named;
    }
  }
  const unsigned threads = std::thread::hardware_concurrency();
  std::fprintf(stderr, "%s: %s, gpu %s, cpu %s (%u threads)\n", bench, name.c_str(), device.c_str(),
               vyre_bench::cpu_name().c_str(), threads);

  for (const std::uint64_t iterations : iteration_counts) {
    vyre::eqsat::execute_options options;
    options.extra_iterations = iterations;
    // The GPU engine as it runs by default, or with `capture`: iterations of a shape met
    // before run as one captured graph.
    const auto gpu_runs_of = [&](bool capture) {
      return timed_runs(repeats, [&] {
        run_record rec;
        gpu->telemetry().reset();
        vyre_bench::require(bench, cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        const auto start = std::chrono::steady_clock::now();
        const vyre::eqsat::program prog = read();
        auto engine = vyre::eqsat::gpu_engine<backend_type>::create(*gpu, prog);
        if (!engine) {
          std::fprintf(stderr, "%s: %s\n", bench, engine.error().message().c_str());
          std::exit(1);
        }
        engine->capture_iterations(capture);
        rec.execution = vyre::eqsat::execute(prog, *engine, options);
        if (engine->failure()) {
          std::fprintf(stderr, "%s: %s\n", bench, engine->failure()->message().c_str());
          std::exit(1);
        }
        rec.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        rec.peak_device_bytes = gpu->telemetry().snapshot().peak_device_bytes;
        rec.rebuild_graphs = engine->rebuild_graph_stats();
        rec.iteration_graphs = engine->iteration_graph_stats();
        return rec;
      });
    };
    // In the order `--engines` gives (swap it to see whether the order matters).
    std::vector<run_record> gpu_runs, captured_runs, cpu_runs;
    for (const std::string& engine : engines) {
      if (gpu && engine == "gpu" && gpu_runs.empty()) gpu_runs = gpu_runs_of(false);
      if (gpu && engine == "gpu-captured" && captured_runs.empty())
        captured_runs = gpu_runs_of(true);
    }
    if (want_cpu) {
      cpu_runs = timed_runs(repeats, [&] {
        run_record rec;
        const auto start = std::chrono::steady_clock::now();
        const vyre::eqsat::program prog = read();
        vyre::eqsat::cpu_engine engine(prog, threads);
        rec.execution = vyre::eqsat::execute(prog, engine, options);
        rec.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return rec;
      });
    }
    // Whether a GPU run's counts equal the CPU engine's (null without both).
    const auto agrees = [&](const std::vector<run_record>& runs) {
      if (runs.empty() || !want_cpu) return -1;
      return same_counts(runs[repeats / 2].execution, cpu_runs[repeats / 2].execution) ? 1 : 0;
    };
    const auto print_gpu = [&](const char* engine, const std::vector<run_record>& runs) {
      if (runs.empty()) return;
      const run_record& m = runs[runs.size() / 2];
      const std::uint64_t enodes =
          m.execution.iterations.empty() ? 1 : m.execution.iterations.back().enodes;
      char extra[512];
      std::snprintf(extra, sizeof extra,
                    "\"device\": \"%s\", \"peak_device_bytes\": %llu, "
                    "\"device_bytes_per_enode\": %.2f, \"rebuild_graphs\": {\"replays\": %llu, "
                    "\"captures\": %llu}, \"iteration_graphs\": {\"replays\": %llu, "
                    "\"captures\": %llu}, ",
                    device.c_str(), static_cast<unsigned long long>(m.peak_device_bytes),
                    static_cast<double>(m.peak_device_bytes) / static_cast<double>(enodes),
                    static_cast<unsigned long long>(m.rebuild_graphs.hits),
                    static_cast<unsigned long long>(m.rebuild_graphs.captures),
                    static_cast<unsigned long long>(m.iteration_graphs.hits),
                    static_cast<unsigned long long>(m.iteration_graphs.captures));
      print_line(engine, name, iterations, runs, extra, agrees(runs));
    };
    print_gpu("gpu", gpu_runs);
    print_gpu("gpu-captured", captured_runs);
    if (want_cpu) {
      const std::string extra = "\"cpu\": \"" + vyre_bench::cpu_name() +
                                "\", \"threads\": " + std::to_string(threads) + ", ";
      print_line("cpu", name, iterations, cpu_runs, extra,
                 agrees(gpu_runs.empty() ? captured_runs : gpu_runs));
    }
  }
  return 0;
}
