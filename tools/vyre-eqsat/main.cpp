// SPDX-License-Identifier: Apache-2.0
// vyre-eqsat: equality saturation on an egglog program, from the command line.
//
//   vyre-eqsat PROGRAM.egg [--device auto|gpu|cpu] [--crossover N] [--json] [--node-limit N]
//              [--time-limit S] [--emit OUT.json] [--threads N] [--run N] [--extract-roots]
//
// The program's commands run in order (see vyre/eqsat/program.hpp for the supported subset).
// Per iteration the tool prints e-nodes, e-classes, matches, unions, the seconds of search,
// apply and rebuild and where it ran; then the (extract ...) results and why the run stopped.
// `--json` prints one object instead:
//   {"iterations": [{"iteration", "enodes", "eclasses", "functions": {ctor: n}, "matches",
//     "unions", "device": "cpu|gpu", "seconds": {"search", "apply", "rebuild"}}, ...],
//    "initial": {"enodes", "eclasses", "functions"},
//    "extract": [{"term", "cost", "best"}, ...], "stopped": "saturated|iterations|node_limit|
//    time_limit", "threads", "device": "cpu|gpu" (the engine holding the final e-graph),
//    "crossover": N or null (--device auto), "handoff_seconds": acquiring the GPU and loading
//    the CPU engine's state into it, or null where auto did not try, "gpu_unavailable": why
//    auto stayed on the CPU at the crossover, or null}
// `--run N` runs N more iterations after the program (as a final `(run N)`), `--extract-roots`
// extracts every top-level term and let at the end, `--emit` writes the final e-graph as
// egraph-serialize JSON with the top-level terms as roots.
//
// `--device gpu` runs the GPU engine (vyre/eqsat/gpu_engine.cuh) on device 0, `cpu` the CPU
// engine. `auto` (the default) runs vyre/eqsat/auto_engine.cuh: the CPU engine for every
// iteration that starts below `--crossover` e-nodes (default
// `eqsat::default_gpu_crossover_enodes`, the measured crossover), then the GPU engine on device 0
// from the first one that does not, with the CPU engine's state. Below the crossover no CUDA
// call is made (no context); without a usable device there the run stays on the CPU and says
// why (a line after the iterations, or "gpu_unavailable" in the JSON).
//
// Exit status: 0 success; 1 the machine failed (out of device memory, a CUDA error); 2 a bad
// program or bad usage (one line on stderr, `file:line:col: ...` for program errors); 3
// `--device gpu` without a usable CUDA device.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include <vyre/eqsat.hpp>

#include "common/cli.hpp"
#include "common/device.hpp"
#include "engine.hpp"

namespace vyre_tool {
namespace {

using vyre::eqsat::device_kind;

struct options {
  std::string file;
  std::string device = "auto";
  bool json = false;
  std::uint64_t node_limit = 0;
  double time_limit = 0;
  std::string emit;
  unsigned threads = 0;
  std::uint64_t run = 0;
  bool extract_roots = false;
  std::uint64_t crossover = vyre::eqsat::default_gpu_crossover_enodes;
};

std::string json_text(const std::string& text) {
  std::string out;
  vyre::eqsat::detail::json_string(out, text);
  return out;
}

std::string functions_json(const vyre::eqsat::program& prog,
                           const vyre::eqsat::iteration_stats& s) {
  std::string out = "{";
  for (std::size_t c = 0; c < s.per_constructor.size(); ++c)
    out += (c != 0 ? ", " : "") + json_text(prog.constructors[c].name) + ": " +
           std::to_string(s.per_constructor[c]);
  return out + "}";
}

int run(int argc, char** argv) {
  options opts;
  CLI::App app{"vyre-eqsat: equality saturation on an egglog program", "vyre-eqsat"};
  app.add_option("program", opts.file, "egglog program (.egg)")->required();
  app.add_option("--device", opts.device,
                 "where the engine runs (auto: the CPU below --crossover e-nodes, then the GPU "
                 "when a CUDA device is present)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  app.add_option("--crossover", opts.crossover,
                 "--device auto: e-nodes at the start of an iteration from which it runs on the "
                 "GPU (0 = every iteration)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--json", opts.json, "print one JSON object with stable keys");
  app.add_option("--node-limit", opts.node_limit,
                 "never commit more e-nodes than this (the crossing iteration is rolled back)");
  app.add_option("--time-limit", opts.time_limit, "seconds for all runs; 0 = none")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--emit", opts.emit, "write the final e-graph as egraph-serialize JSON");
  app.add_option("--threads", opts.threads, "CPU threads (0 = all cores)");
  app.add_option("--run", opts.run, "run N more iterations after the program");
  app.add_flag("--extract-roots", opts.extract_roots,
               "extract every top-level term and let at the end");
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  const bool on_gpu = opts.device == "gpu";
  if (on_gpu && !gpu_present()) {
    std::fprintf(stderr,
                 "vyre-eqsat: --device gpu: no usable CUDA device here. Fix: run with --device "
                 "cpu, or on a machine with an NVIDIA GPU and driver.\n");
    return exit_no_device;
  }
  std::ifstream in(opts.file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "vyre-eqsat: %s: cannot open the program file. Fix: check the path\n",
                 opts.file.c_str());
    return exit_bad_input;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto prog = vyre::eqsat::read_program(text.str(), opts.file);
  if (!prog) {
    std::fprintf(stderr, "%s\n", vyre::eqsat::diagnostic(opts.file, prog.error()).c_str());
    return exit_bad_input;
  }
  vyre::eqsat::execute_options xo;
  xo.limits.node_limit = opts.node_limit;
  xo.limits.time_limit = opts.time_limit;
  xo.extra_iterations = opts.run;
  xo.extract_roots = opts.extract_roots;
  vyre::eqsat::execution ex;
  unsigned threads = 0;
  auto_report automatic;
  if (opts.device == "auto") {
    auto done = execute_auto(*prog, xo, opts.crossover, opts.threads, opts.emit, ex, automatic);
    threads = automatic.threads;
    if (!done) {
      std::fprintf(stderr, "vyre-eqsat: %s\n", done.error().message().c_str());
      return exit_failure;
    }
  } else if (on_gpu) {
    auto done = execute_on_gpu(*prog, xo, opts.emit, ex);
    if (!done) {
      std::fprintf(stderr, "vyre-eqsat: %s\n", done.error().message().c_str());
      return exit_failure;
    }
  } else {
    vyre::eqsat::cpu_engine engine(*prog, opts.threads);
    threads = engine.threads();
    ex = vyre::eqsat::execute(*prog, engine, xo);
    if (!opts.emit.empty()) {
      auto written = vyre::eqsat::write_egraph_json(engine, ex.roots, opts.emit);
      if (!written) {
        std::fprintf(stderr, "vyre-eqsat: %s\n", written.error().message().c_str());
        return exit_failure;
      }
    }
  }
  // The engine holding the final e-graph: auto's is the GPU once an iteration ran there.
  bool ended_on_gpu = on_gpu;
  for (const auto& s : ex.iterations) ended_on_gpu = ended_on_gpu || s.device == device_kind::gpu;
  const char* device = ended_on_gpu ? "gpu" : "cpu";
  const bool is_auto = opts.device == "auto";

  std::string handoff = "null";
  if (automatic.handoff_seconds >= 0) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.6f", automatic.handoff_seconds);
    handoff = seconds;
  }

  if (opts.json) {
    std::string out = "{\"iterations\": [";
    for (std::size_t i = 0; i < ex.iterations.size(); ++i) {
      const auto& s = ex.iterations[i];
      char seconds[160];
      std::snprintf(seconds, sizeof seconds,
                    "{\"search\": %.6f, \"apply\": %.6f, \"rebuild\": %.6f}", s.search_seconds,
                    s.apply_seconds, s.rebuild_seconds);
      out += (i != 0 ? ",\n  " : "\n  ") + std::string("{\"iteration\": ") +
             std::to_string(s.iteration) + ", \"enodes\": " + std::to_string(s.enodes) +
             ", \"eclasses\": " + std::to_string(s.eclasses) +
             ", \"functions\": " + functions_json(*prog, s) +
             ", \"matches\": " + std::to_string(s.matches) +
             ", \"unions\": " + std::to_string(s.unions) + ", \"device\": \"" +
             vyre::eqsat::device_name(s.device) + "\", \"seconds\": " + seconds + "}";
    }
    out += "],\n \"initial\": {\"enodes\": " + std::to_string(ex.initial.enodes) +
           ", \"eclasses\": " + std::to_string(ex.initial.eclasses) +
           ", \"functions\": " + functions_json(*prog, ex.initial) + "},\n \"extract\": [";
    for (std::size_t i = 0; i < ex.extracts.size(); ++i)
      out += (i != 0 ? ", " : "") + std::string("{\"term\": ") + json_text(ex.extracts[i].source) +
             ", \"cost\": " + std::to_string(ex.extracts[i].best.cost) +
             ", \"best\": " + json_text(ex.extracts[i].best.term) + "}";
    out += "],\n \"stopped\": \"" + std::string(vyre::eqsat::stop_reason_name(ex.stopped)) +
           "\", \"threads\": " + std::to_string(threads) + ", \"device\": \"" + device +
           "\", \"crossover\": " + (is_auto ? std::to_string(opts.crossover) : "null") +
           ", \"handoff_seconds\": " + handoff + ", \"gpu_unavailable\": " +
           (automatic.gpu_unavailable.empty() ? "null" : json_text(automatic.gpu_unavailable)) +
           "}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    if (is_auto)
      std::printf(
          "%s: %zu constructors, %zu rules, %u threads (auto: cpu, gpu from %llu e-nodes)\n",
          opts.file.c_str(), prog->constructors.size(), prog->rules.size(), threads,
          static_cast<unsigned long long>(opts.crossover));
    else if (on_gpu)
      std::printf("%s: %zu constructors, %zu rules (gpu)\n", opts.file.c_str(),
                  prog->constructors.size(), prog->rules.size());
    else
      std::printf("%s: %zu constructors, %zu rules, %u threads (cpu)\n", opts.file.c_str(),
                  prog->constructors.size(), prog->rules.size(), threads);
    std::printf("iteration 0: %llu e-nodes, %llu e-classes\n",
                static_cast<unsigned long long>(ex.initial.enodes),
                static_cast<unsigned long long>(ex.initial.eclasses));
    for (const auto& s : ex.iterations)
      std::printf(
          "iteration %llu: %llu e-nodes, %llu e-classes, %llu matches, %llu unions; "
          "search %.4f s, apply %.4f s, rebuild %.4f s (%s)\n",
          static_cast<unsigned long long>(s.iteration), static_cast<unsigned long long>(s.enodes),
          static_cast<unsigned long long>(s.eclasses), static_cast<unsigned long long>(s.matches),
          static_cast<unsigned long long>(s.unions), s.search_seconds, s.apply_seconds,
          s.rebuild_seconds, vyre::eqsat::device_name(s.device));
    if (automatic.handoff_seconds >= 0 && automatic.gpu_unavailable.empty())
      std::printf("moved to the gpu at the crossover in %.4f s (device, warm-up, state)\n",
                  automatic.handoff_seconds);
    if (!automatic.gpu_unavailable.empty())
      std::printf("gpu unavailable at the crossover, the run stayed on the cpu: %s\n",
                  automatic.gpu_unavailable.c_str());
    for (const auto& e : ex.extracts)
      std::printf("extract %s: cost %llu: %s\n", e.source.c_str(),
                  static_cast<unsigned long long>(e.best.cost), e.best.term.c_str());
    std::printf("stopped: %s\n", vyre::eqsat::stop_reason_name(ex.stopped));
  }
  return exit_ok;
}

}  // namespace
}  // namespace vyre_tool

int main(int argc, char** argv) {
  try {
    return vyre_tool::run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "vyre-eqsat: out of host memory. Fix: lower --node-limit\n");
    return vyre_tool::exit_failure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vyre-eqsat: %s\n", e.what());
    return vyre_tool::exit_failure;
  }
}
