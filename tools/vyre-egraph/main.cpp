// SPDX-License-Identifier: Apache-2.0
// vyre-egraph: vyre on your own e-graph files, from the command line.
//
//   vyre-egraph [FILE]                     summary: inspect + extract + congruence
//   vyre-egraph inspect [FILE]             rows, e-classes, ops, children, image bytes, columns
//   vyre-egraph pack [FILE] -o OUT         write a vyre image file
//   vyre-egraph extract [FILE] [--root C]  bottom-up tree-cost extraction (JSON input)
//       [--method tree|dag|ilp] [--searches N] [--kick-budget N] [--kick-patience N]
//       [--time-limit S] [--selection OUT.json]
//                                          dag: DAG cost (shared nodes paid once) by the
//                                          heuristic (CPU; --device gpu: GPU, same result),
//                                          ilp: exactly through CBC (CPU);
//                                          --selection writes {"choices": {class: node}}
//   vyre-egraph congruence [FILE] [-o OUT] congruence closure; -o writes the rebuilt image
//
// Each command takes one FILE at most; a second positional argument is refused, and so is an
// unknown subcommand. An output (-o, --selection) is written to a new file beside it and renamed
// into place; a destination that is a symbolic link or not a regular file (a directory, device,
// FIFO) is refused, never replaced or written through.
//
// FILE is egraph-serialize JSON (egg, egglog, extraction-gym) or a vyre image file (recognised
// by its magic); without FILE the tool runs on a built-in e-graph. `--device auto|gpu|cpu` picks
// where extract and congruence run (auto, the default: the CPU below 2^20 e-nodes, without
// creating a CUDA context; above, the GPU when one is present); `--json` prints one
// JSON object with stable keys instead of text. `--root CLASS` (repeatable) names the e-classes
// extract computes (a JSON e-class id); without it the file's `root_eclasses` are used, and a
// file with none (egglog writes `[]` when given no roots) has every e-class extracted.
//
// Exit status: 0 success; 1 the machine failed (a CUDA error, out of memory); 2 bad input or
// bad usage (one line on stderr naming the file and the problem: a malformed or unsupported
// file, a cost that is negative where it must not be or whose sum overflows, a negative-cost
// cycle, a surplus argument, an output path that is not a regular file); 3 `--device gpu`
// without a usable CUDA device. No limit stops a run with a status of its own (--time-limit only
// ends the ILP solver's search, which then reports whether it proved its result optimal).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include <vyre/core/device_choice.hpp>
#include <vyre/egraph.hpp>
#include <vyre/io/json_text.hpp>

#include "common/cli.hpp"
#include "common/device.hpp"
#include "engine.hpp"

namespace vyre_tool {
namespace {

//! A failure with its exit status and the one line that explains it.
struct tool_failure {
  int status;
  std::string line;
};

//! Errors of the input are exit status 2; a failing device or machine is 1.
int status_of(const vyre::error& err) noexcept {
  switch (err.code()) {
    case vyre::errc::out_of_memory:
    case vyre::errc::cuda_runtime:
    case vyre::errc::cuda_driver:
    case vyre::errc::unsupported:
    case vyre::errc::invalid_handle:
    case vyre::errc::in_use:
    case vyre::errc::invalid_state:
      return exit_failure;
    default:
      return exit_bad_input;
  }
}

//! "vyre-egraph: FILE: problem. Fix: ..." (the file once: most messages already name it).
tool_failure failure_of(const std::string& file, const vyre::error& err) {
  const std::string message = err.message();
  const bool named = message.find(file) != std::string::npos;
  return {status_of(err), one_line("vyre-egraph: " + (named ? message : file + ": " + message))};
}

//! Unwraps `value` or throws the failure that names `file`.
template <class T>
T take(vyre::expected<T> value, const std::string& file) {
  if (!value) throw failure_of(file, value.error());
  return std::move(*value);
}
inline void take(vyre::expected<void> value, const std::string& file) {
  if (!value) throw failure_of(file, value.error());
}

// ---- progress ---------------------------------------------------------------------------------

//! Prints "vyre-egraph: <what>..." on stderr when a step takes longer than half a second, and
//! how long it took when it ends; quick steps print nothing.
class progress_note {
 public:
  explicit progress_note(std::string what) : what_(std::move(what)) {
    watcher_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      if (!done_cv_.wait_for(lock, std::chrono::milliseconds(500), [this] { return done_; })) {
        std::fprintf(stderr, "vyre-egraph: %s...\n", what_.c_str());
        std::fflush(stderr);
        printed_ = true;
      }
    });
  }
  ~progress_note() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    watcher_.join();
    if (printed_)
      std::fprintf(
          stderr, "vyre-egraph: %s took %.2f s\n", what_.c_str(),
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  }
  progress_note(const progress_note&) = delete;
  progress_note& operator=(const progress_note&) = delete;

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  bool printed_ = false;
  std::thread watcher_;
};

// ---- JSON output ------------------------------------------------------------------------------

using vyre::io::json_string;

//! Shortest text that reads back as the same double; `null` for infinity (no tree).
std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[64];
  const auto written = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, written.ptr);
}

//! One JSON object, keys in insertion order.
class json_object {
 public:
  json_object& raw(std::string_view key, const std::string& text) {
    body_ += body_.empty() ? "" : ", ";
    body_ += json_string(key) + ": " + text;
    return *this;
  }
  json_object& add(std::string_view key, std::string_view text) {
    return raw(key, json_string(text));
  }
  json_object& add(std::string_view key, const char* text) {
    return add(key, std::string_view(text));
  }
  json_object& add(std::string_view key, std::uint64_t value) {
    return raw(key, std::to_string(value));
  }
  json_object& add(std::string_view key, double value) { return raw(key, json_number(value)); }
  json_object& add(std::string_view key, const json_object& value) { return raw(key, value.str()); }
  std::string str() const { return "{" + body_ + "}"; }

 private:
  std::string body_;
};

// ---- commands ---------------------------------------------------------------------------------

struct options {
  std::string file;                //!< empty: the built-in e-graph
  std::string output;              //!< -o
  std::string device = "auto";     //!< "auto", "gpu" or "cpu"
  std::vector<std::string> roots;  //!< --root: JSON e-class ids to extract
  bool json = false;
  std::string method = "tree";  //!< extract --method: "tree", "dag" or "ilp"
  double time_limit = 10;       //!< extract --time-limit: seconds for the ILP solver
  //! extract --searches, --kick-budget, --kick-patience: the DAG heuristic's knobs (the
  //! threads come from --threads)
  vyre::algorithms::dag_options dag;
  std::string selection;  //!< extract --selection: where to write the chosen nodes
  unsigned threads = 0;   //!< --threads: CPU engine workers (0: every core)
  //! Positional arguments before or without a subcommand, and after it: one FILE in all (what
  //! else is given is refused by `take_file`, not silently dropped).
  std::vector<std::string> top_positionals, command_positionals;
};

using vyre::device_choice;
using vyre::device_choice_name;

//! `--device auto` runs on the CPU below this many e-nodes without touching CUDA at all. A
//! one-shot process pays for the CUDA context (0.2-0.4 s on the GPU machines measured) before
//! the device does anything, and the CPU engine extracts or closes a million e-nodes in about
//! that time; so only e-graphs above it can win on the device end to end.
constexpr std::uint32_t auto_gpu_min_rows = 1u << 20;

//! Where the command runs. `auto` (the default) never creates a CUDA context for an e-graph
//! below `auto_gpu_min_rows`; above it, it uses the GPU when one is present.
device_choice choose_device(const options& opts, std::uint32_t rows) {
  // CLI11 admitted only the three names.
  const device_choice asked =
      vyre::parse_device_choice(opts.device).value_or(device_choice::automatic);
  if (asked == device_choice::cpu) return device_choice::cpu;
  if (asked == device_choice::gpu) {
    if (!gpu_present())
      throw tool_failure{exit_no_device,
                         "vyre-egraph: --device gpu: no usable CUDA device here. Fix: run with "
                         "--device cpu, or on a machine with an NVIDIA GPU and driver."};
    return device_choice::gpu;
  }
  if (rows < auto_gpu_min_rows) return device_choice::cpu;
  if (gpu_present()) return device_choice::gpu;
  std::fprintf(stderr,
               "vyre-egraph: note: no CUDA device found; running on the CPU (--device cpu skips "
               "this check).\n");
  return device_choice::cpu;
}

graph_input load(const options& opts) {
  if (opts.file.empty()) return take(load_default_input(), "the built-in e-graph");
  progress_note note("loading " + opts.file);
  return take(load_input(opts.file), opts.file);
}

std::uint32_t distinct_ops(const graph_input& input) {
  if (!input.op_names.empty()) return static_cast<std::uint32_t>(input.op_names.size());
  std::vector<std::uint32_t> ops;
  const auto column = input.image.column(vyre::egraph::image_column::row_language_op_ids);
  ops.assign(column.data(), column.data() + column.size());
  return distinct_count(std::move(ops));
}

const char* format_name(const graph_input& input) {
  return input.format == input_format::json ? "json" : "image";
}

json_object inspect_json(const graph_input& input) {
  const vyre::egraph::image_layout& layout = input.image.layout();
  json_object columns;
  for (std::size_t c = 0; c < vyre::egraph::image_column_count; ++c) {
    const auto which = static_cast<vyre::egraph::image_column>(c);
    const vyre::egraph::column_span span = layout.column(which);
    columns.add(vyre::egraph::image_column_name(which), json_object()
                                                            .add("offset_words", span.offset)
                                                            .add("words", span.length)
                                                            .add("offset_bytes", span.offset * 4)
                                                            .add("bytes", span.length * 4));
  }
  json_object out;
  out.add("file", input.file)
      .add("format", format_name(input))
      .add("nodes", std::uint64_t{layout.row_count})
      .add("classes", std::uint64_t{layout.group_count})
      .add("ops", std::uint64_t{distinct_ops(input)})
      .add("children", std::uint64_t{layout.child_count})
      .add("roots", std::uint64_t{input.roots.size()})
      .add("image_words", layout.word_count())
      .add("image_bytes", layout.word_count() * 4)
      .add("columns", columns)
      .add("load_seconds", input.load_seconds);
  return out;
}

//! The most frequent ops, "name x count", for the text output.
std::string top_ops(const graph_input& input, std::size_t shown) {
  const auto column = input.image.column(vyre::egraph::image_column::row_language_op_ids);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> counts;  // (op, rows)
  {
    std::vector<std::uint32_t> ops(column.data(), column.data() + column.size());
    std::sort(ops.begin(), ops.end());
    for (std::size_t i = 0; i < ops.size();) {
      std::size_t j = i;
      while (j < ops.size() && ops[j] == ops[i]) ++j;
      counts.emplace_back(ops[i], static_cast<std::uint32_t>(j - i));
      i = j;
    }
  }
  std::stable_sort(counts.begin(), counts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (std::size_t i = 0; i < counts.size() && i < shown; ++i) {
    if (!text.empty()) text += ", ";
    const std::uint32_t op = counts[i].first;
    text +=
        op < input.op_names.size() ? "'" + input.op_names[op] + "'" : "op " + std::to_string(op);
    text += " x" + std::to_string(counts[i].second);
  }
  if (counts.size() > shown) text += ", ...";
  return text;
}

void print_inspect_text(const graph_input& input) {
  const vyre::egraph::image_layout& layout = input.image.layout();
  std::printf("%s (%s)\n", input.file.c_str(),
              input.format == input_format::json ? "egraph-serialize JSON" : "vyre image file");
  std::printf("  e-graph   %u e-nodes, %u e-classes, %u ops, %u children, %zu root%s\n",
              layout.row_count, layout.group_count, distinct_ops(input), layout.child_count,
              input.roots.size(), input.roots.size() == 1 ? "" : "s");
  std::printf("  ops       %s\n", top_ops(input, 6).c_str());
  std::printf("  image     %llu words, %llu bytes\n",
              static_cast<unsigned long long>(layout.word_count()),
              static_cast<unsigned long long>(layout.word_count() * 4));
}

void print_columns_text(const graph_input& input) {
  const vyre::egraph::image_layout& layout = input.image.layout();
  std::printf("  %-22s %12s %12s\n", "column", "byte offset", "bytes");
  for (std::size_t c = 0; c < vyre::egraph::image_column_count; ++c) {
    const auto which = static_cast<vyre::egraph::image_column>(c);
    const auto span = layout.column(which);
    std::printf("  %-22s %12llu %12llu\n", vyre::egraph::image_column_name(which),
                static_cast<unsigned long long>(span.offset * 4),
                static_cast<unsigned long long>(span.length * 4));
  }
}

//! The roots extract computes: --root's e-classes, else the file's roots, else (a JSON file
//! without roots) every e-class, said in one line on stderr.
void choose_roots(graph_input& input, const options& opts) {
  if (input.format != input_format::json) return;
  if (!opts.roots.empty()) {
    std::vector<std::uint32_t> picked;
    for (const std::string& name : opts.roots) {
      const auto found = input.eclass_names.find(name);
      if (!found)
        throw tool_failure{exit_bad_input,
                           one_line("vyre-egraph: " + input.file + ": --root \"" + name +
                                    "\": no node has that e-class. Fix: pass an \"eclass\" "
                                    "value of the file's nodes.")};
      picked.push_back(*found);
    }
    input.roots = std::move(picked);
    return;
  }
  if (!input.roots.empty()) return;
  input.roots.resize(input.eclass_names.size());
  for (std::size_t k = 0; k < input.roots.size(); ++k)
    input.roots[k] = static_cast<std::uint32_t>(k);
  std::fprintf(stderr,
               "vyre-egraph: note: %s has no root_eclasses; extracting all %zu e-classes "
               "(--root CLASS picks roots).\n",
               input.file.c_str(), input.roots.size());
}

extraction_summary run_extract(const graph_input& input, device_choice device, unsigned threads) {
  progress_note note("extracting on the " + std::string(device_choice_name(device)));
  return take(device == device_choice::gpu ? extract_gpu(input) : extract_cpu(input, threads),
              input.file);
}

congruence_summary run_congruence(const graph_input& input, device_choice device, bool keep,
                                  unsigned threads) {
  progress_note note("congruence closure on the " + std::string(device_choice_name(device)));
  return take(device == device_choice::gpu ? congruence_gpu(input, keep)
                                           : congruence_cpu(input, keep, threads),
              input.file);
}

json_object extract_json(const graph_input& input, const extraction_summary& found,
                         device_choice device) {
  std::string costs = "[";
  for (std::size_t i = 0; i < found.root_costs.size(); ++i)
    costs += (i == 0 ? "" : ", ") + json_number(found.root_costs[i]);
  costs += "]";
  json_object out;
  out.add("file", input.file)
      .add("nodes", std::uint64_t{input.image.layout().row_count})
      .add("classes", std::uint64_t{input.image.layout().group_count})
      .add("roots", std::uint64_t{input.roots.size()})
      .add("root_tree_cost", found.root_tree_cost)
      .raw("root_costs", costs)
      .add("unextractable_classes", std::uint64_t{found.unextractable_classes})
      .add("rounds", std::uint64_t{found.rounds})
      .add("device", device_choice_name(device))
      .add("seconds", found.seconds);
  return out;
}

json_object congruence_json(const graph_input& input, const congruence_summary& found,
                            device_choice device) {
  json_object out;
  out.add("file", input.file)
      .add("nodes", std::uint64_t{input.image.layout().row_count})
      .add("nodes_after", std::uint64_t{found.nodes_after})
      .add("classes_before", std::uint64_t{found.classes_before})
      .add("classes_after", std::uint64_t{found.classes_after})
      .add("merges", found.merges)
      .add("rounds", std::uint64_t{found.rounds})
      .add("device", device_choice_name(device))
      .add("seconds", found.seconds);
  return out;
}

std::string root_costs_text(const extraction_summary& found) {
  std::string text;
  for (std::size_t i = 0; i < found.root_costs.size() && i < 8; ++i)
    text += (i == 0 ? "" : ", ") + json_number(found.root_costs[i]);
  if (found.root_costs.size() > 8) text += ", ...";
  return text;
}

void print_extract_text(const extraction_summary& found, device_choice device) {
  std::printf("  extract   root tree cost %s (per root: %s), %u rounds, %.3f ms on the %s\n",
              json_number(found.root_tree_cost).c_str(), root_costs_text(found).c_str(),
              found.rounds, found.seconds * 1e3, device_choice_name(device));
  if (found.unextractable_classes != 0)
    std::printf("            %u e-classes have no finite tree (reachable only through cycles)\n",
                found.unextractable_classes);
}

void print_congruence_text(const graph_input& input, const congruence_summary& found,
                           device_choice device) {
  std::printf(
      "  congruence %u -> %u e-classes (%llu merges, %u rounds), %u -> %u e-nodes, %.3f ms on "
      "the %s\n",
      found.classes_before, found.classes_after, static_cast<unsigned long long>(found.merges),
      found.rounds, input.image.layout().row_count, found.nodes_after, found.seconds * 1e3,
      device_choice_name(device));
  if (found.merges == 0) std::printf("             (already congruence-closed)\n");
}

void write_image(const std::string& path, const vyre::egraph::host_image& image) {
  progress_note note("writing " + path);
  take(vyre::egraph::write_image_file<vyre::on_error::return_expected>(path, image.ref()), path);
}

int command_summary(const options& opts) {
  graph_input input = load(opts);
  choose_roots(input, opts);
  const device_choice device = choose_device(opts, input.image.layout().row_count);
  const bool extractable = static_cast<bool>(check_extractable(input));
  std::optional<extraction_summary> extracted;
  if (extractable) extracted = run_extract(input, device, opts.threads);
  const congruence_summary closed = run_congruence(input, device, false, opts.threads);
  if (opts.json) {
    json_object out;
    out.add("command", "summary").add("file", input.file).add("device", device_choice_name(device));
    out.add("inspect", inspect_json(input));
    if (extracted) out.add("extract", extract_json(input, *extracted, device));
    out.add("congruence", congruence_json(input, closed, device));
    std::printf("%s\n", out.str().c_str());
    return exit_ok;
  }
  std::printf("vyre-egraph: ");
  print_inspect_text(input);
  if (extracted)
    print_extract_text(*extracted, device);
  else
    std::printf("  extract   skipped: an image file has no node costs or roots\n");
  print_congruence_text(input, closed, device);
  return exit_ok;
}

int command_inspect(const options& opts) {
  const graph_input input = load(opts);
  if (opts.json) {
    std::printf("%s\n", inspect_json(input).add("command", "inspect").str().c_str());
    return exit_ok;
  }
  print_inspect_text(input);
  print_columns_text(input);
  return exit_ok;
}

int command_pack(const options& opts) {
  const graph_input input = load(opts);
  const auto start = std::chrono::steady_clock::now();
  write_image(opts.output, input.image);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t file_bytes =
      vyre::egraph::image_file_header_bytes + input.image.layout().word_count() * 4;
  if (opts.json) {
    json_object out;
    out.add("command", "pack")
        .add("file", input.file)
        .add("output", opts.output)
        .add("nodes", std::uint64_t{input.image.layout().row_count})
        .add("classes", std::uint64_t{input.image.layout().group_count})
        .add("image_words", input.image.layout().word_count())
        .add("file_bytes", file_bytes)
        .add("seconds", seconds);
    std::printf("%s\n", out.str().c_str());
    return exit_ok;
  }
  std::printf("wrote %s: %u e-nodes, %u e-classes, %llu bytes\n", opts.output.c_str(),
              input.image.layout().row_count, input.image.layout().group_count,
              static_cast<unsigned long long>(file_bytes));
  return exit_ok;
}

//! extract --method dag|ilp: DAG-cost extraction, on `device` (ilp: the CPU).
dag_summary run_dag_extract(const graph_input& input, const options& opts, device_choice device) {
  const extract_method method = opts.method == "ilp" ? extract_method::ilp : extract_method::dag;
  if (method == extract_method::ilp && !ilp_available())
    throw tool_failure{exit_bad_input,
                       "vyre-egraph: extract --method ilp: this build has no COIN-OR CBC. Fix: "
                       "install coinor-libcbc-dev (pkg-config cbc) and rebuild, or use --method "
                       "dag."};
  progress_note note("DAG-cost extraction (" + opts.method + ") on the " +
                     device_choice_name(device));
  vyre::algorithms::dag_options search = opts.dag;
  search.threads = opts.threads;
  return take(device == device_choice::gpu
                  ? extract_dag_gpu(input, search)
                  : extract_dag_cpu(input, method, opts.time_limit, search),
              input.file);
}

int command_extract(const options& opts) {
  graph_input input = load(opts);
  choose_roots(input, opts);
  take(check_extractable(input), input.file);
  const bool by_dag = opts.method != "tree";
  // dag runs on the GPU only when asked (--device gpu): its search is sequential at heart and a
  // GPU thread block runs it slower than a CPU core (docs/performance.md); ilp runs on the CPU. The
  // tree cost reported beside them runs on the CPU.
  const bool dag_on_gpu = opts.method == "dag" && opts.device == "gpu";
  const device_choice device =
      by_dag ? device_choice::cpu : choose_device(opts, input.image.layout().row_count);
  const device_choice dag_device = dag_on_gpu ? choose_device(opts, 0) : device_choice::cpu;
  if (opts.method == "ilp" && opts.device == "gpu")
    std::fprintf(stderr, "vyre-egraph: note: --method ilp runs on the CPU.\n");
  const extraction_summary found = run_extract(input, device, opts.threads);
  std::optional<dag_summary> dag;
  if (by_dag) dag = run_dag_extract(input, opts, dag_device);
  if (!opts.selection.empty()) {
    if (!dag && found.choice.empty())
      throw tool_failure{exit_bad_input,
                         one_line("vyre-egraph: " + input.file +
                                  ": --selection: the tree selection is kept by the CPU path "
                                  "only. Fix: add --device cpu.")};
    take(write_selection(input, dag ? dag->eclass_ids : found.eclass_ids,
                         dag ? dag->choice : found.choice, opts.selection),
         input.file);
  }
  if (opts.json) {
    json_object out = extract_json(input, found, device);
    out.add("command", "extract").add("method", opts.method);
    if (dag)
      out.add("dag_device", device_choice_name(dag_device))
          .add("searches", std::uint64_t{opts.dag.searches})
          .add("kick_budget", std::uint64_t{opts.dag.kick_budget})
          .add("kick_patience", std::uint64_t{opts.dag.kick_patience});
    if (dag) {
      out.add("dag_cost", dag->dag_cost)
          .add("tree_selection_dag_cost", dag->tree_selection_dag_cost)
          .add("selected_nodes", std::uint64_t{dag->selected_nodes})
          .add("dag_seconds", dag->seconds)
          .raw("optimal", dag->optimal ? "true" : "false")
          .add("lower_bound", dag->lower_bound);
      if (opts.method == "ilp")
        out.add("heuristic_dag_cost", dag->heuristic_dag_cost).add("time_limit", opts.time_limit);
    } else {
      out.raw("dag_cost", found.dag_cost ? json_number(*found.dag_cost) : "null");
    }
    if (!opts.selection.empty()) out.add("selection", opts.selection);
    std::printf("%s\n", out.str().c_str());
    return exit_ok;
  }
  std::printf("%s: %u e-nodes, %u e-classes, %zu roots\n", input.file.c_str(),
              input.image.layout().row_count, input.image.layout().group_count, input.roots.size());
  print_extract_text(found, device);
  if (dag) {
    std::printf("  %-9s DAG cost %s (the tree selection's: %s), %u e-nodes, %.3f ms on the %s\n",
                opts.method.c_str(), json_number(dag->dag_cost).c_str(),
                json_number(dag->tree_selection_dag_cost).c_str(), dag->selected_nodes,
                dag->seconds * 1e3, device_choice_name(dag_device));
    if (opts.method == "ilp")
      std::printf("            %s (lower bound %s, heuristic %s, time limit %s s)\n",
                  dag->optimal ? "proven optimal" : "not proven optimal",
                  json_number(dag->lower_bound).c_str(),
                  json_number(dag->heuristic_dag_cost).c_str(),
                  json_number(opts.time_limit).c_str());
    else
      std::printf("            %s (lower bound %s)\n",
                  dag->optimal ? "proven optimal" : "not proven optimal",
                  json_number(dag->lower_bound).c_str());
  } else if (found.dag_cost) {
    std::printf("            the tree selection's DAG cost %s\n",
                json_number(*found.dag_cost).c_str());
  }
  if (!opts.selection.empty()) std::printf("  wrote the selection to %s\n", opts.selection.c_str());
  return exit_ok;
}

int command_congruence(const options& opts) {
  const graph_input input = load(opts);
  const device_choice device = choose_device(opts, input.image.layout().row_count);
  const bool keep = !opts.output.empty();
  const congruence_summary found = run_congruence(input, device, keep, opts.threads);
  if (keep) write_image(opts.output, *found.rebuilt);
  if (opts.json) {
    json_object out = congruence_json(input, found, device);
    out.add("command", "congruence");
    if (keep) out.add("output", opts.output);
    std::printf("%s\n", out.str().c_str());
    return exit_ok;
  }
  std::printf("%s: %u e-nodes, %u e-classes\n", input.file.c_str(), input.image.layout().row_count,
              found.classes_before);
  print_congruence_text(input, found, device);
  if (keep) std::printf("  wrote the rebuilt image to %s\n", opts.output.c_str());
  return exit_ok;
}

//! A usage error: exit status 2 and "vyre-egraph: <problem> (run with --help for usage)", the
//! line `parse_command_line` prints for CLI11's own.
tool_failure usage_failure(const std::string& problem) {
  return {exit_bad_input, one_line("vyre-egraph: " + problem + " (run with --help for usage)")};
}

//! Sets `opts.file` from the positional arguments: one FILE at most. Without a subcommand, two or
//! more whose first names no file mean it was meant as a subcommand; a lone word that names no
//! file, likewise.
void take_file(options& opts, const CLI::App& app) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  std::string names;  // "inspect, pack, extract, congruence"
  for (const CLI::App* command : app.get_subcommands({}))
    names += (names.empty() ? "" : ", ") + command->get_name();
  const auto unknown = [&](const std::string& word, const char* what) {
    return usage_failure("unknown subcommand '" + word + "'" + what + "; the subcommands are " +
                         names + ", or give one FILE alone for its summary");
  };
  std::vector<std::string> given = opts.top_positionals;
  given.insert(given.end(), opts.command_positionals.begin(), opts.command_positionals.end());
  if (given.empty()) return;
  std::error_code ignored;
  const bool no_such_file = std::filesystem::symlink_status(given[0], ignored).type() ==
                            std::filesystem::file_type::not_found;
  if (chosen.empty() && given.size() > 1 && no_such_file) throw unknown(given[0], "");
  if (given.size() > 1) {
    std::string surplus;
    for (std::size_t i = 1; i < given.size(); ++i)
      surplus += (i == 1 ? "'" : ", '") + given[i] + "'";
    throw usage_failure((chosen.empty() ? app.get_name() : chosen[0]->get_name()) +
                        " takes one FILE; unexpected argument" + (given.size() > 2 ? "s " : " ") +
                        surplus);
  }
  opts.file = given[0];
  // "vyre-egraph extarct": a plain word that names no file is a mistyped subcommand, most likely.
  const bool plain_word = std::all_of(opts.file.begin(), opts.file.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  });
  if (chosen.empty() && plain_word && !opts.file.empty() && no_such_file)
    throw unknown(opts.file, " (and no file has that name)");
}

int run(int argc, char** argv) {
  CLI::App app{
      "vyre-egraph: inspect, pack, extract and run congruence closure on an e-graph, on the GPU "
      "(vyre) or the CPU.\nFILE is egraph-serialize JSON or a vyre image file; without FILE a "
      "built-in e-graph is used. Each command takes one FILE at most.\nOutputs (-o, "
      "--selection) go to a new file renamed into place; a destination that is a symbolic link "
      "or not a regular file (directory, device, FIFO) is refused, never replaced.\nExit "
      "status: 0 ok; 1 the machine failed (CUDA error, out of memory); 2 bad input or usage "
      "(one line on stderr naming the file or argument and the fix); 3 --device gpu without a "
      "usable CUDA device.",
      "vyre-egraph"};
  options opts;
  app.add_option("--device", opts.device,
                 "where extract and congruence run (auto: the CPU below 2^20 e-nodes, where a "
                 "CUDA context alone costs more than the work; above, the GPU when present)")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  app.add_option("--threads", opts.threads,
                 "CPU engine worker threads for extract and congruence on the CPU (0, the "
                 "default: every core); the results do not depend on it");
  app.add_flag("--json", opts.json, "print one JSON object with stable keys");
  app.add_option("--root", opts.roots,
                 "extract this e-class (a JSON e-class id; repeatable); default: the file's "
                 "root_eclasses, or every e-class when it has none")
      ->allow_extra_args(false);
  // Positionals go to vectors, so that a surplus one is seen (and refused) rather than falling
  // through to the top level or being dropped.
  app.add_option("file", opts.top_positionals,
                 "egraph-serialize JSON or vyre image file (one at most)")
      ->type_name("FILE");
  app.require_subcommand(0, 1);

  const auto add_file = [&opts](CLI::App* command) {
    command
        ->add_option("file", opts.command_positionals,
                     "egraph-serialize JSON or vyre image file (one at most)")
        ->type_name("FILE");
    command->fallthrough();  // --device and --json may follow the subcommand
  };
  CLI::App* inspect = app.add_subcommand("inspect",
                                         "rows, e-classes, ops, children, image bytes "
                                         "and column spans");
  add_file(inspect);
  CLI::App* pack = app.add_subcommand("pack", "write a vyre image file");
  add_file(pack);
  pack->add_option("-o,--output", opts.output,
                   "image file to write (a new file renamed into place; a symbolic link or a "
                   "path that is not a regular file is refused)")
      ->required();
  CLI::App* extract = app.add_subcommand(
      "extract", "bottom-up tree-cost extraction (needs node costs: JSON input)");
  add_file(extract);
  extract
      ->add_option("--method", opts.method,
                   "tree: tree cost (default); dag: DAG cost, shared nodes paid once "
                   "(heuristic; CPU, or GPU with --device gpu: the same selection), with a lower "
                   "bound and whether the selection meets it (then it is optimal); ilp: exact "
                   "DAG cost through COIN-OR CBC (CPU; not run where dag's bound already proves "
                   "its selection optimal)")
      ->check(CLI::IsMember({"tree", "dag", "ilp"}));
  extract
      ->add_option("--searches", opts.dag.searches,
                   "independent DAG searches (--method dag|ilp; default 4); each has its own "
                   "start and seed, the cheapest wins. On the GPU they run side by side, one "
                   "per SM at no extra time")
      ->check(CLI::Range(1u, 65535u));
  extract
      ->add_option("--kick-budget", opts.dag.kick_budget,
                   "work units each DAG search may spend on random kicks after its first local "
                   "optimum (--method dag|ilp; default 60000000; 0: plain local search). "
                   "1000000 with --kick-patience 20: about 20x faster over the shared e-graphs, "
                   "still optimal on every one CBC proves, 11% costlier on tensat's bert")
      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1'000'000'000'000'000}));
  extract
      ->add_option("--kick-patience", opts.dag.kick_patience,
                   "a DAG search stops after this many kicks in a row that found nothing "
                   "cheaper (--method dag|ilp; default 1000)")
      ->check(CLI::Range(1u, 0xFFFFFFFFu));
  extract
      ->add_option("--time-limit", opts.time_limit,
                   "seconds the ILP solver may run (--method ilp; default 10)")
      ->check(CLI::PositiveNumber);
  extract->add_option("--selection", opts.selection,
                      "write the chosen e-node of every needed e-class here, as "
                      "{\"choices\": {\"<e-class id>\": \"<node id>\"}} (a new file renamed "
                      "into place; a symbolic link or a path that is not a regular file is "
                      "refused)");
  CLI::App* congruence = app.add_subcommand(
      "congruence", "congruence closure: merges, rounds, e-classes before and after");
  add_file(congruence);
  congruence->add_option("-o,--output", opts.output,
                         "write the rebuilt image file here (a new file renamed into place; a "
                         "symbolic link or a path that is not a regular file is refused)");

  if (const auto status = parse_command_line(app, argc, argv)) return *status;
  take_file(opts, app);

  if (*inspect) return command_inspect(opts);
  if (*pack) return command_pack(opts);
  if (*extract) return command_extract(opts);
  if (*congruence) return command_congruence(opts);
  return command_summary(opts);
}

}  // namespace
}  // namespace vyre_tool

int main(int argc, char** argv) {
  // Nothing escapes: every failure becomes one line on stderr and an exit status.
  try {
    return vyre_tool::run(argc, argv);
  } catch (const vyre_tool::tool_failure& failure) {
    std::fprintf(stderr, "%s\n", failure.line.c_str());
    return failure.status;
  } catch (const vyre::error_exception& e) {
    std::fprintf(stderr, "vyre-egraph: %s\n", vyre_tool::one_line(e.what()).c_str());
    return vyre_tool::status_of(e.error());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "vyre-egraph: out of host memory. Fix: free memory or use a smaller "
                 "e-graph.\n");
    return vyre_tool::exit_failure;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vyre-egraph: internal error: %s\n",
                 vyre_tool::one_line(e.what()).c_str());
    return vyre_tool::exit_failure;
  } catch (...) {
    std::fprintf(stderr, "vyre-egraph: internal error (unknown exception)\n");
    return vyre_tool::exit_failure;
  }
}
