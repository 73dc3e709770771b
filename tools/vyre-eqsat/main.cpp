// SPDX-License-Identifier: Apache-2.0
// vyre-eqsat: runs an egglog program, from the command line.
//
//   vyre-eqsat PROGRAM.egg [--device auto|gpu|cpu] [--crossover N] [--json] [--quiet]
//              [--node-limit N] [--time-limit S] [--threads N] [--run N] [--emit OUT.json]
//
// stdout holds exactly what `egglog PROGRAM.egg` prints (print-size, print-function, extract,
// ...); a line per iteration (e-nodes, e-classes, matches, unions, the seconds of search,
// apply and rebuild, where it ran) goes to stderr unless --quiet. `--json` prints one object
// instead:
//   {"iterations": [{"iteration", "ruleset", "enodes", "eclasses", "functions": {name: rows},
//     "matches", "unions", "device": "cpu|gpu", "cpu_reason": why the GPU engine did not run
//     it (only where one was asked for and it ran on the CPU), "seconds": {"search", "apply",
//     "rebuild"}},
//     ...],
//    "outputs": [{"kind": "print-size|function-size|extract|variants|print-function|
//     print-stats", "text", "cost" (extract)}, ...],
//    "extract": [{"cost", "best"}, ...], "stopped": "none|saturated|iterations|node_limit|
//    time_limit", "threads", "device": where the last iteration ran ("cpu" when none ran),
//    "crossover": N (--device auto) or null, "gpu_unavailable": why --device auto stayed on
//    the CPU (no usable device) or null}
// A program error ends the JSON with "error": "file:line:col: ..." (exit 2 all the same).
//
// Devices: --device cpu runs every iteration on the CPU engine. --device gpu runs every
// iteration the GPU engine can run there (the rest on the CPU engine: a ruleset with a rule the
// device does not run, a program whose id-holding tables are not constructors over eq and base
// sorts); --device auto (the default) does so only from the first iteration that starts on at
// least --crossover rows (default 8192) and stays on the CPU, saying why once on stderr, when
// there is no usable CUDA device.
// `--run N` runs N more iterations of the default ruleset after the program, `--emit` writes
// the final e-graph as egraph-serialize JSON (what vyre-egraph reads).
//
// Exit status: 0 success; 1 the machine failed (out of memory, a CUDA error); 2 a bad program
// or bad usage (one line on stderr: `file:line:col: what (name). Fix: ...`; a failed check or
// a panic too); 3 `--device gpu` without a usable CUDA device.
#include <sys/stat.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

#include <vyre/eqsat/emit.hpp>
#include <vyre/eqsat/session.hpp>
#include <vyre/io/json_text.hpp>

#include "common/cli.hpp"
#include "common/device.hpp"
#include "engine.hpp"

namespace vyre_tool {
namespace {

struct options {
  std::string file;
  std::string device = "auto";
  bool json = false;
  bool quiet = false;
  std::string node_limit = "0";
  std::string time_limit = "0";
  std::string emit;
  std::string threads = "0";
  std::string run = "0";
  std::string crossover = std::to_string(vyre::eqsat::default_gpu_crossover_enodes);
};

//! A whole number in [0, most], or a usage error naming the option.
bool parse_count(const std::string& text, const char* option, std::uint64_t most,
                 std::uint64_t& out) {
  bool ok = !text.empty() && text.size() <= 20;
  std::uint64_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (most - d) / 10) {
      ok = false;
      break;
    }
    v = v * 10 + d;
  }
  if (!ok) {
    std::fprintf(stderr,
                 "vyre-eqsat: %s %s: not a whole number from 0 to %llu. Fix: pass a count such "
                 "as %s 1000000 (0 means none)\n",
                 option, text.c_str(), static_cast<unsigned long long>(most), option);
    return false;
  }
  out = v;
  return true;
}

bool parse_seconds(const std::string& text, double& out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0 ||
      v > 1e9) {
    std::fprintf(stderr,
                 "vyre-eqsat: --time-limit %s: not a number of seconds from 0 to 1e9. Fix: pass "
                 "seconds such as --time-limit 30 (0 means none)\n",
                 text.c_str());
    return false;
  }
  out = v;
  return true;
}

std::string functions_json(const vyre::eqsat::iteration_record& r) {
  std::string out = "{";
  bool first = true;
  for (std::size_t f = 0; f < r.sizes.size() && f < r.names->size(); ++f) {
    const std::string& name = (*r.names)[f];
    if (name.empty()) continue;
    out += (first ? "" : ", ") + vyre::io::json_string(name) + ": " + std::to_string(r.sizes[f]);
    first = false;
  }
  return out + "}";
}

int run(int argc, char** argv) {
  options opts;
  CLI::App app{"vyre-eqsat: runs an egglog program (stdout: egglog's outputs)", "vyre-eqsat"};
  app.add_option("program", opts.file, "egglog program (.egg)")->required();
  app.add_option("--device", opts.device,
                 "where the engine runs (auto: the GPU when one is present and the program "
                 "fits it, else the CPU)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  app.add_option("--crossover", opts.crossover,
                 "--device auto: the rows an iteration must start on to run on the GPU");
  app.add_flag("--json", opts.json, "print one JSON object with stable keys");
  app.add_flag("--quiet", opts.quiet, "no per-iteration lines on stderr");
  app.add_option("--node-limit", opts.node_limit,
                 "never commit more rows than this (the crossing iteration is rolled back); "
                 "0 = none");
  app.add_option("--time-limit", opts.time_limit, "seconds for all runs; 0 = none");
  app.add_option("--emit", opts.emit, "write the final e-graph as egraph-serialize JSON");
  app.add_option("--threads", opts.threads, "CPU threads (0 = all cores)");
  app.add_option("--run", opts.run, "run N more iterations after the program");
  app.footer(
      "Exit status: 0 success; 1 the machine failed (out of memory, a CUDA error); 2 a bad "
      "program or usage (one line on stderr naming the file, line and column, or the option, "
      "and the fix; a failed check or a panic too); 3 --device gpu without a usable GPU.");
  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  std::uint64_t node_limit = 0;
  std::uint64_t threads = 0;
  std::uint64_t extra_runs = 0;
  std::uint64_t crossover = 0;
  double time_limit = 0;
  if (!parse_count(opts.node_limit, "--node-limit", std::uint64_t{1} << 40, node_limit) ||
      !parse_count(opts.crossover, "--crossover", std::uint64_t{1} << 40, crossover) ||
      !parse_count(opts.threads, "--threads", 4096, threads) ||
      !parse_count(opts.run, "--run", std::uint64_t{1} << 40, extra_runs) ||
      !parse_seconds(opts.time_limit, time_limit))
    return exit_bad_input;
  // CLI11 admitted only the three names.
  const vyre::device_choice where =
      vyre::parse_device_choice(opts.device).value_or(vyre::device_choice::automatic);
  if (where == vyre::device_choice::gpu && !gpu_present()) {
    std::fprintf(stderr,
                 "vyre-eqsat: --device gpu: no usable CUDA device here. Fix: run with --device "
                 "cpu, or on a machine with an NVIDIA GPU and driver.\n");
    return exit_no_device;
  }
  struct stat st {};
  if (stat(opts.file.c_str(), &st) != 0) {
    std::fprintf(stderr, "vyre-eqsat: %s: cannot open the program file. Fix: check the path\n",
                 opts.file.c_str());
    return exit_bad_input;
  }
  if (!S_ISREG(st.st_mode)) {
    std::fprintf(stderr,
                 "vyre-eqsat: %s: not a regular file. Fix: pass the path of an egglog program\n",
                 opts.file.c_str());
    return exit_bad_input;
  }

  vyre::eqsat::session_options so;
  so.node_limit = node_limit;
  so.time_limit = time_limit;
  so.threads = static_cast<unsigned>(threads);
  if (where != vyre::device_choice::cpu) so.offload = make_gpu_offload(where, crossover);
  std::string last_reason;  // why iterations stay on the CPU, said when it changes
  so.on_iteration = [&](const vyre::eqsat::iteration_record& r) {
    if (opts.json || opts.quiet) return;
    if (!r.cpu_reason.empty() && r.cpu_reason != last_reason)
      std::fprintf(stderr, "vyre-eqsat: iterations on the CPU engine from here: %s\n",
                   one_line(r.cpu_reason).c_str());
    last_reason = r.cpu_reason;
    std::fprintf(
        stderr,
        "iteration %llu: %llu e-nodes, %llu e-classes, %llu matches, %llu unions; "
        "search %.4f s, apply %.4f s, rebuild %.4f s in %u rounds (%s)\n",
        static_cast<unsigned long long>(r.iteration), static_cast<unsigned long long>(r.rows),
        static_cast<unsigned long long>(r.eclasses), static_cast<unsigned long long>(r.matches),
        static_cast<unsigned long long>(r.unions), r.search_seconds, r.apply_seconds,
        r.rebuild_seconds, r.rebuild_rounds, r.device.c_str());
  };
  vyre::eqsat::session s(so);
  auto result = s.run_file(opts.file);
  if (result && extra_runs != 0) {
    const std::string run_text = "(run " + std::to_string(extra_runs) + ")";
    result = s.run_text(run_text, "--run");
  }
  // --emit reads the final state: it comes back from the GPU engine first (the outputs are
  // made already; without --emit the download is skipped).
  if (result && !opts.emit.empty()) result = s.finish();
  std::string error_line;
  int status = exit_ok;
  if (!result) {
    error_line = s.describe(result.error());
    switch (result.error().code()) {
      case vyre::errc::out_of_memory:
      case vyre::errc::abi_limit:
      case vyre::errc::cuda_runtime:
      case vyre::errc::cuda_driver:
        status = exit_failure;
        break;
      default:
        status = exit_bad_input;
    }
  }
  const std::string unavailable = so.offload ? gpu_unavailable(*so.offload) : std::string();
  if (!unavailable.empty() && !opts.json && !opts.quiet)
    std::fprintf(stderr, "vyre-eqsat: --device auto: the run stayed on the CPU: %s\n",
                 one_line(unavailable).c_str());
  const auto& its = s.iterations();
  const std::string last_device = its.empty() ? std::string("cpu") : its.back().device;
  if (status == exit_ok && !opts.emit.empty()) {
    auto written = vyre::eqsat::write_egraph_json(s.decl(), s.db(), opts.emit);
    if (!written) {
      std::fprintf(stderr, "vyre-eqsat: %s\n", one_line(written.error().message()).c_str());
      return written.error().code() == vyre::errc::io ? exit_bad_input : exit_failure;
    }
  }

  if (opts.json) {
    std::string out = "{\"iterations\": [";
    for (std::size_t i = 0; i < its.size(); ++i) {
      const auto& r = its[i];
      char seconds[160];
      std::snprintf(seconds, sizeof seconds,
                    "{\"search\": %.6f, \"apply\": %.6f, \"rebuild\": %.6f}", r.search_seconds,
                    r.apply_seconds, r.rebuild_seconds);
      out += (i != 0 ? ",\n  " : "\n  ") + std::string("{\"iteration\": ") +
             std::to_string(r.iteration) + ", \"ruleset\": " + vyre::io::json_string(r.ruleset) +
             ", \"enodes\": " + std::to_string(r.rows) +
             ", \"eclasses\": " + std::to_string(r.eclasses) +
             ", \"functions\": " + functions_json(r) +
             ", \"matches\": " + std::to_string(r.matches) +
             ", \"unions\": " + std::to_string(r.unions) +
             ", \"rebuild_rounds\": " + std::to_string(r.rebuild_rounds) +
             ", \"device\": " + vyre::io::json_string(r.device) +
             (r.cpu_reason.empty() ? std::string()
                                   : ", \"cpu_reason\": " + vyre::io::json_string(r.cpu_reason)) +
             ", \"seconds\": " + seconds + "}";
    }
    out += "],\n \"outputs\": [";
    bool first = true;
    std::string extracts;
    for (const auto& o : s.outputs()) {
      out += (first ? "\n  " : ",\n  ") + std::string("{\"kind\": \"") +
             vyre::eqsat::program_output_kind_name(o.type) +
             "\", \"text\": " + vyre::io::json_string(o.text);
      if (o.type == vyre::eqsat::program_output::kind::extract) {
        out += ", \"cost\": " + std::to_string(o.cost);
        std::string best = o.text;
        if (!best.empty() && best.back() == '\n') best.pop_back();
        extracts += (extracts.empty() ? "" : ", ") + std::string("{\"cost\": ") +
                    std::to_string(o.cost) + ", \"best\": " + vyre::io::json_string(best) + "}";
      }
      out += "}";
      first = false;
    }
    out += "],\n \"extract\": [" + extracts + "],\n \"stopped\": \"" +
           vyre::eqsat::run_stop_name(s.stopped()) +
           "\", \"threads\": " + std::to_string(s.engine().threads()) +
           ", \"device\": " + vyre::io::json_string(last_device) + ", \"crossover\": " +
           (where == vyre::device_choice::automatic ? std::to_string(crossover)
                                                    : std::string("null")) +
           ", \"gpu_unavailable\": " +
           (unavailable.empty() ? std::string("null") : vyre::io::json_string(unavailable));
    if (!error_line.empty()) out += ", \"error\": " + vyre::io::json_string(error_line);
    out += "}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    for (const auto& o : s.outputs()) std::fwrite(o.text.data(), 1, o.text.size(), stdout);
  }
  std::fflush(stdout);
  if (!error_line.empty()) std::fprintf(stderr, "%s\n", error_line.c_str());
  return status;
}

}  // namespace
}  // namespace vyre_tool

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // Buffers of a MiB and more (tables, match parts) go straight to the kernel and back: glibc's
  // moving threshold would otherwise keep a worker thread's freed buffers in its arena, and a
  // run under --node-limit would hold a rolled-back iteration's memory beside the next one's.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
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
