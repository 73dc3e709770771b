// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::session`: runs an egglog program, command by command, as egglog does.
//!
//!     vyre::eqsat::session s;
//!     if (auto ok = s.run_file("prog.egg"); !ok) std::puts(s.describe(ok.error()).c_str());
//!     for (const auto& out : s.outputs()) std::fputs(out.text.c_str(), stdout);
//!
//! Each command is type checked against what the program declared so far (`lang::compiler`)
//! and then run on the engine: declarations extend the `declarations`, actions and `let`s
//! run once, `run`/`run-schedule` run iterations (`cpu_engine`), `check` queries, `extract`,
//! `print-size`, `print-function` and `print-stats` produce outputs with egglog's text.
//! `push` copies the whole state (declarations, globals, database), `pop` restores it.
//!
//! Limits: `node_limit` bounds the rows ever committed (the iteration that crosses it is rolled
//! back by the database's undo record, `database::begin_undo`; the GPU engine hands an
//! iteration that could cross it to the CPU engine, so both stop at the same iteration),
//! `time_limit` the seconds of all runs; a run stopped by either ends the program's runs
//! (later commands still declare, add and output). Errors stop the program: a bad program is
//! `errc::parse` (`describe` renders `file:line:col: what (name). Fix: ...`), a failed `check`,
//! a `panic` or a failing action likewise; running out of memory is `errc::out_of_memory`.
//!
//! Not supported (refused with an error naming the command): proof mode (`prove`,
//! `prove-exists`), `set-option`.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/enum_name.hpp"
#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/extract.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/lang/compiler.hpp"
#include "vyre/eqsat/lang/sexpr.hpp"
#include "vyre/eqsat/primitives_base.hpp"

namespace vyre::eqsat {

//! One output of the program, as egglog prints it.
struct program_output {
  enum class kind : std::uint8_t {
    print_size,      //!< `(print-size)`: every function's size
    function_size,   //!< `(print-size f)`
    extract,         //!< `(extract e)`: the best term; `cost` is its cost
    variants,        //!< `(extract e n)`
    print_function,  //!< `(print-function f ...)`
    print_stats,     //!< `(print-stats)`
  } type = kind::print_size;
  std::string text;  //!< egglog's text, ending with a newline
  std::uint64_t cost = 0;
};

//! The kind's name in `--json` outputs: egglog's command ("print-size", "extract", ...), or
//! "function-size" and "variants" for the forms of `print-size` and `extract` with an argument.
inline const char* program_output_kind_name(program_output::kind k) noexcept {
  using kind = program_output::kind;
  constexpr const char* names[] = {"print-size", "function-size",  "extract",
                                   "variants",   "print-function", "print-stats"};
  return vyre::detail::enum_name<kind::print_size, kind::print_stats>(k, names, "unknown");
}

//! What one committed iteration did.
struct iteration_record : iteration_counts {
  std::uint64_t iteration = 0;  //!< 1-based over the whole program
  std::string ruleset;          //!< the ruleset it ran ("" the default one)
  //! The functions' names when it ran (a `pop` may drop declarations later); "" for hidden
  //! ones. Shared by the iterations of one set of declarations.
  std::shared_ptr<const std::vector<std::string>> names;
  std::uint64_t rows = 0;            //!< every function's rows after it
  std::uint64_t eclasses = 0;        //!< e-classes after it
  std::vector<std::uint64_t> sizes;  //!< rows per function (indexed like the declarations)
  std::string device = "cpu";        //!< where it ran
  //! Why the offload engine (the GPU engine) did not run it: its refusal, or why it handed the
  //! iteration back. Empty where it ran there, or where the session has no offload.
  std::string cpu_reason;
};

//! Why the program's last run stopped.
enum class run_stop : std::uint8_t { none, saturated, iterations, node_limit, time_limit };

inline const char* run_stop_name(run_stop r) noexcept {
  constexpr const char* names[] = {"none", "saturated", "iterations", "node_limit", "time_limit"};
  return vyre::detail::enum_name<run_stop::none, run_stop::time_limit>(r, names, "none");
}

//! E-nodes (rows over every table) at which `--device auto` moves iterations to the GPU engine
//! (`gpu_offload`'s automatic mode): below it an iteration is cheaper on the CPU than the
//! handoff (acquiring the device and uploading the state) and its launches.
inline constexpr std::uint64_t default_gpu_crossover_enodes = 8192;

//! An engine that runs some iterations elsewhere: the GPU engine (`gpu_engine.cuh`'s
//! `gpu_offload`). The session asks it before every iteration; while it holds the state
//! (`holds_state()`), the session's database is stale and `sync` brings the state back before
//! anything on the host reads or writes it.
class iteration_offload {
 public:
  virtual ~iteration_offload() = default;
  //! Whether it runs the next iteration of `ruleset` (its rules fit it and the e-graph is large
  //! enough); `why` says why not (for the report).
  virtual bool accepts(const declarations& decl, const database& db, std::uint32_t ruleset,
                       std::string& why) = 0;
  //! One iteration. A limit crossed rolls it back (the report says which); an iteration that
  //! could reach the node limit may be rolled back as `iteration_stop::handed_to_cpu`, and the
  //! session then runs it on the CPU engine.
  virtual expected<iteration_report> run_iteration(const declarations& decl, database& db,
                                                   std::uint32_t ruleset,
                                                   const iteration_limits& limits) = 0;
  virtual bool holds_state() const = 0;
  //! Writes the state back into `db` and lets go of it, the tables' key indexes filled on up
  //! to `threads` threads.
  virtual expected<void> sync(const declarations& decl, database& db, unsigned threads) = 0;
  //! Rows per function and e-classes while it holds the state.
  virtual std::vector<std::uint64_t> sizes() const = 0;
  virtual std::uint64_t eclasses() const = 0;
  //! Its name in reports ("gpu").
  virtual const char* name() const = 0;
  //! Why the last `run_iteration` handed its iteration back (`iteration_stop::handed_to_cpu`).
  virtual std::string handback_reason() const { return "the offload engine handed it back"; }
};

struct session_options {
  std::uint64_t node_limit = 0;  //!< rows over every table; 0: none
  double time_limit = 0;         //!< seconds of all runs; 0: none
  unsigned threads = 0;          //!< CPU engine threads; 0: every core
  //! Called after every committed iteration (progress, reports).
  std::function<void(const iteration_record&)> on_iteration;
  //! Called with warnings (egglog's `$` naming advice); the default prints to stderr.
  std::function<void(const std::string&)> on_warning;
  //! Where iterations may run besides the CPU engine (the GPU engine); null: the CPU only.
  std::shared_ptr<iteration_offload> offload;
  //! Whether `include`, `input`, `output` and `print-function :file` may read and write files
  //! (false: they are refused, for programs from untrusted sources such as a fuzzer).
  bool file_access = true;
};

class session {
 public:
  explicit session(session_options options = {}) : options_(std::move(options)) {
    state_ = std::make_unique<state>();
    state_->decl.sorts = base_sorts();
    for (std::uint32_t s = 0; s < state_->decl.sorts.size(); ++s)
      state_->decl.sort_ids.emplace(state_->decl.sorts[s].name, s);
    register_base_primitives(state_->decl.prims);
    for (std::uint32_t s = 0; s < state_->decl.sorts.size(); ++s)
      register_sort_primitives(state_->decl.prims, state_->decl.sorts, s);
    ruleset_decl default_rules;
    state_->decl.rulesets.push_back(std::move(default_rules));
    state_->decl.ruleset_ids.emplace("", 0);
    engine_ = std::make_unique<cpu_engine>(state_->decl, state_->db, options_.threads);
    start_ = std::chrono::steady_clock::now();
  }

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  //! Reads and runs the program in `path` (`include`d paths are relative to the working
  //! directory, as egglog's). @returns the first error.
  expected<void> run_file(const std::string& path) {
    VYRE_TRY_ASSIGN(std::string text, read_file(path, ~0u));
    return run_text(text, path);
  }

  //! Runs the program `text`; `name` names it in errors.
  expected<void> run_text(std::string_view text, const std::string& name) {
    const auto file = static_cast<std::uint32_t>(files_.size());
    files_.push_back(name);
    try {
      VYRE_TRY_ASSIGN(const lang::sexpr_tree tree, lang::read_sexprs(text, file));
      for (const std::uint32_t form : tree.top) VYRE_TRY(command(tree, form, false));
      return {};
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "the program ran out of host memory")
                      .fix("stop earlier with --node-limit, or run on a machine with more "
                           "memory"));
    }
  }

  //! Brings the state back from the offload engine (the GPU) into `db()`; call before reading
  //! `db()` after a run.
  expected<void> finish() { return settle(); }

  const std::vector<program_output>& outputs() const noexcept { return outputs_; }
  const std::vector<iteration_record>& iterations() const noexcept { return iterations_; }
  run_stop stopped() const noexcept { return stopped_; }
  const declarations& decl() const noexcept { return state_->decl; }
  const database& db() const noexcept { return state_->db; }
  //! The value of the global `name` (a top-level `let`, named with its `$`), if there is one:
  //! an e-class id for a datatype sort (a root for `to_loaded_egraph`).
  std::optional<value> global(const std::string& name) const {
    auto it = state_->env.globals.find(name);
    if (it == state_->env.globals.end()) return std::nullopt;
    return it->second.v;
  }
  cpu_engine& engine() noexcept { return *engine_; }
  const std::vector<std::string>& files() const noexcept { return files_; }

  //! One line for an error: `file:line:col: what (subject) [values]. Fix: ...`.
  std::string describe(const error& err) const {
    std::string out;
    const std::uint64_t file = err.value_or("file", ~std::uint64_t{0});
    const std::uint64_t line = err.value_or("line", 0);
    if (file < files_.size()) out += files_[file];
    if (line != 0) {
      out += ':' + std::to_string(line) + ':' + std::to_string(err.value_or("col", 0));
    }
    if (!out.empty()) out += ": ";
    out += err.context() != nullptr ? err.context() : errc_name(err.code());
    if (!err.subject().empty()) {
      out += " (";
      out += err.subject();
      out += ')';
    }
    std::string values;
    for (int i = 0; i < err.value_count(); ++i) {
      const error_value v = err.value_at(i);
      const std::string_view n(v.name);
      if (n == "file" || n == "line" || n == "col") continue;
      values += (values.empty() ? "" : ", ") + std::string(n) + '=' + std::to_string(v.value);
    }
    if (!values.empty()) out += " [" + values + ']';
    out += '.';
    if (err.fix_hint() != nullptr) {
      out += " Fix: ";
      out += err.fix_hint();
    }
    for (char& c : out)
      if (c == '\n' || c == '\r') c = ' ';
    return out;
  }

  //! Rows per function now (indexed like the declarations).
  std::vector<std::uint64_t> sizes() const {
    std::vector<std::uint64_t> out;
    for (const table& t : state_->db.tables) out.push_back(t.size());
    return out;
  }
  //! E-classes now: roots of the id space that are not containers.
  std::uint64_t eclasses() const {
    const database& db = state_->db;
    std::uint64_t roots = db.ids.roots_below(db.ids.size());
    std::uint64_t container_roots = 0;
    db.containers.for_each([&](value id, const container_store::entry&) {
      container_roots += db.ids.is_root(id) ? 1 : 0;
    });
    return roots - container_roots;
  }

 private:
  struct state {
    declarations decl;
    lang::scope env;
    database db;
  };

  static constexpr std::uint32_t max_include_depth = 64;

  //! A regular file's text (a device or a fifo could be endless, a directory has none).
  expected<std::string> read_file(const std::string& path, std::uint32_t form_file) const {
    (void)form_file;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      return fail(error(errc::io, "not a regular file").about(path).fix("check the path"));
    // stdio: a read error (EIO from /proc/self/mem) shows in ferror, not as an early end.
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"),
                                                             &std::fclose);
    if (!in) return fail(error(errc::io, "cannot open the file").about(path).fix("check the path"));
    std::string text;
    std::vector<char> buffer(std::size_t{1} << 16);
    for (std::size_t got; (got = std::fread(buffer.data(), 1, buffer.size(), in.get())) != 0;)
      text.append(buffer.data(), got);
    if (std::ferror(in.get()))
      return fail(error(errc::io, "cannot read the file").about(path).fix("check the path"));
    return text;
  }

  void warn(const std::string& message) {
    if (options_.on_warning)
      options_.on_warning(message);
    else
      std::fprintf(stderr, "%s\n", message.c_str());
  }

  error at(const lang::sexpr_tree& tree, std::uint32_t node, const char* what,
           std::string_view subject, const char* fix) const {
    return lang::syntax_error(what, tree[node].span, subject, fix);
  }
  //! Refuses a command that reads or writes files where `session_options::file_access` is off.
  expected<void> file_access(const lang::sexpr_tree& tree, std::uint32_t form,
                             std::string_view command) const {
    if (options_.file_access) return {};
    return fail(at(tree, form, "file access is off in this session", command,
                   "set session_options::file_access to run programs that read or write files"));
  }
  //! An error of the running program (what `(fail ...)` catches).
  error runtime(const lang::sexpr_tree& tree, std::uint32_t node, const char* what,
                std::string_view subject, const char* fix) const {
    error err = detail::action_error(what, tree[node].span, subject);
    return err.fix(fix);
  }

  //! Runs one command. `in_fail`: inside `(fail ...)`, where run-time errors are what is
  //! expected (compile errors still stop the program, as in egglog).
  expected<void> command(const lang::sexpr_tree& tree, std::uint32_t form, bool in_fail) {
    (void)in_fail;
    const std::string_view head = tree.head(form);
    if (head.empty())
      return fail(at(tree, form, "a command must be a list that starts with a name", "",
                     "write (command args ...)"));
    // Runs stay on the offload engine between run commands; anything else reads the host.
    if (head != "run" && head != "run-schedule") VYRE_TRY(settle());
    // Consecutive extracts share one cost table; any other command may change the database.
    if (head != "extract") extract_memo_.reset();
    lang::compiler c(state_->decl, state_->env, tree);
    c.set_values(state_->db.base);
    auto declared = [&](const expected<void>& r) -> expected<void> {
      if (r) engine_->sync();
      return r;
    };
    if (head == "sort") return declared((c.declare_sort(form)));
    if (head == "datatype") return declared((c.declare_datatype(form)));
    if (head == "datatype*") return declared((c.declare_datatypes(form)));
    if (head == "constructor") return declared((c.declare_constructor(form)));
    if (head == "function") return declared((c.declare_function(form)));
    if (head == "relation") return declared((c.declare_relation(form)));
    if (head == "ruleset") return declared((c.declare_ruleset(form)));
    if (head == "unstable-combined-ruleset") return declared((c.declare_combined_ruleset(form)));
    if (head == "rule") return declared((c.add_rule(form)));
    if (head == "rewrite") return declared((c.add_rewrite(form, false)));
    if (head == "birewrite") return declared((c.add_rewrite(form, true)));
    if (head == "let") return global_let(c, tree, form);
    if (head == "run") {
      VYRE_TRY_ASSIGN(const schedule s, (c.compile_run(form)));
      return run_schedule(s);
    }
    if (head == "run-schedule") {
      VYRE_TRY_ASSIGN(const schedule s, (c.compile_run_schedule(form)));
      return run_schedule(s);
    }
    if (head == "check") {
      std::vector<std::uint32_t> facts;
      for (std::uint32_t i = 1; i < tree.size(form); ++i) facts.push_back(tree.child(form, i));
      VYRE_TRY_ASSIGN(const query q, (c.compile_facts(facts)));
      VYRE_TRY_ASSIGN(const bool ok, engine_->holds(q));
      if (!ok)
        return fail(runtime(tree, form, "check failed: the facts do not hold", c.text_of(form),
                            "run more iterations, or fix the facts"));
      return {};
    }
    if (head == "fail") {
      if (tree.size(form) != 2)
        return fail(
            at(tree, form, "(fail command) takes one command", "fail", "write (fail (check ...))"));
      // A running program's errors are what fail expects; compile errors and the machine's
      // stop the program.
      auto r = command(tree, tree.child(form, 1), true);
      if (!r && (r.error().code() == errc::parse || r.error().code() == errc::out_of_memory ||
                 r.error().code() == errc::abi_limit))
        return r;
      if (r)
        return fail(runtime(tree, form, "the command should have failed but succeeded",
                            c.text_of(tree.child(form, 1)),
                            "fix the program or drop the (fail ...)"));
      return {};
    }
    if (head == "push" || head == "pop") return push_pop(tree, form, head == "push");
    if (head == "extract") return extract(c, tree, form);
    if (head == "print-size") return print_size(tree, form);
    if (head == "print-function") return print_function(tree, form);
    if (head == "print-stats" || head == "print-overall-statistics") {
      program_output out;
      out.type = program_output::kind::print_stats;
      out.text = "Overall statistics:\n";
      outputs_.push_back(std::move(out));
      return {};
    }
    if (head == "include") return include(tree, form);
    if (head == "input") return input(tree, form);
    if (head == "output") return output(c, tree, form);
    if (head == "prove" || head == "prove-exists" || head == "check-proof")
      return (fail(at(tree, form, "proof mode is not supported by vyre", head,
                      "run proofs with egglog itself; vyre runs the rest of the language")));
    if (head == "set-option" || head == "query-extract" || head == "simplify" || head == "calc" ||
        head == "define" || head == "declare")
      return (fail(at(tree, form, "the command is not in egglog 3.0's language", head,
                      "see egglog's documentation for the current commands")));
    // Anything else is a top-level action: (union a b), (set (f x) v), (Add 1 2), ...
    VYRE_TRY_ASSIGN(const action_block block, (c.compile_actions({form})));
    VYRE_TRY(engine_->run_actions(block, prim_context::full));
    return {};
  }

  expected<void> global_let(lang::compiler& c, const lang::sexpr_tree& tree, std::uint32_t form) {
    if (tree.size(form) != 3 || !tree.is_symbol(tree.child(form, 1)))
      return fail(at(tree, form, "(let name expr) expected", "let", "write (let $name expr)"));
    const std::string name(tree.name(tree.child(form, 1)));
    VYRE_TRY_ASSIGN(const lang::compiled_expr e, (c.compile_expr(tree.child(form, 2))));
    if (state_->env.globals.count(name) != 0 ||
        state_->env.globals.count(lang::detail::strip_dollar(name)) != 0 ||
        state_->env.globals.count("$" + name) != 0)
      return fail(at(tree, tree.child(form, 1),
                     "the global is already defined (egglog allows no "
                     "shadowing)",
                     name, "give the let a fresh name"));
    VYRE_TRY(c.take_name(name, tree.child(form, 1)));
    if (!lang::detail::starts_with(name, "$") && !dollar_warned_) {
      dollar_warned_ = true;
      warn("warning: global `" + name + "` should start with `$` (egglog's convention)");
    }
    VYRE_TRY_ASSIGN(const std::vector<value> regs,
                    engine_->run_actions(e.block, prim_context::full));
    value v = e.result.is_reg() ? regs[e.result.v] : e.result.v;
    v = engine_->canonical(v, e.sort);
    state_->env.globals.emplace(name, lang::global_binding{e.sort, v, tree[form].span});
    return {};
  }

  expected<void> push_pop(const lang::sexpr_tree& tree, std::uint32_t form, bool push) {
    std::uint64_t n = 1;
    if (tree.size(form) == 2) {
      const lang::sexpr_node& arg = tree[tree.child(form, 1)];
      if (arg.kind != lang::sexpr_kind::integer || arg.integer < 0)
        return fail(at(tree, form, "(push N) and (pop N) take a count >= 0", push ? "push" : "pop",
                       "write (push) or (push 2)"));
      n = static_cast<std::uint64_t>(arg.integer);
    } else if (tree.size(form) != 1) {
      return fail(at(tree, form, "(push [N]) and (pop [N]) take at most a count",
                     push ? "push" : "pop", "write (push) or (pop 2)"));
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      if (push) {
        saved_.push_back(std::make_unique<state>(*state_));
        continue;
      }
      if (saved_.empty())
        return fail(runtime(tree, form, "pop without a matching push", "pop",
                            "pop only as many times as the program pushed"));
      *state_ = std::move(*saved_.back());
      saved_.pop_back();
      engine_->state_replaced();
    }
    return {};
  }

  expected<void> extract(lang::compiler& c, const lang::sexpr_tree& tree, std::uint32_t form) {
    const std::uint32_t n = tree.size(form);
    if (n != 2 && n != 3)
      return fail(at(tree, form, "(extract expr [variants]) expected", "extract",
                     "write (extract e) or (extract e 5)"));
    std::uint64_t variants = 0;
    if (n == 3) {
      const lang::sexpr_node& k = tree[tree.child(form, 2)];
      if (k.kind != lang::sexpr_kind::integer || k.integer < 0)
        return fail(at(tree, tree.child(form, 2), "the number of variants must be an integer >= 0",
                       "extract", "write (extract e 5)"));
      variants = static_cast<std::uint64_t>(k.integer);
    }
    VYRE_TRY_ASSIGN(const lang::compiled_expr e, (c.compile_expr(tree.child(form, 1))));
    VYRE_TRY_ASSIGN(const std::vector<value> regs,
                    engine_->run_actions(e.block, prim_context::full));
    const value v = engine_->canonical(e.result.is_reg() ? regs[e.result.v] : e.result.v, e.sort);
    extractor& ex = memo_extractor();
    program_output out;
    if (variants == 0) {
      const std::uint64_t cost = ex.cost(v, e.sort);
      if (!ex.extractable(v, e.sort))
        return fail(runtime(tree, form,
                            "nothing to extract: every term of the value was subsumed or "
                            "deleted",
                            c.text_of(tree.child(form, 1)), "extract a value with a live term"));
      if (cost == infinite_cost)
        return fail(runtime(tree, form,
                            "the cheapest term's cost overflows 2^64 - 1 (costs are unsigned "
                            "64-bit sums)",
                            c.text_of(tree.child(form, 1)),
                            "lower the :cost of the constructors it is made of"));
      out.type = program_output::kind::extract;
      out.cost = cost;
      out.text = ex.text(v, e.sort) + "\n";
    } else {
      out.type = program_output::kind::variants;
      out.text = "(\n";
      for (const std::string& t : ex.variants(v, e.sort, variants)) out.text += "   " + t + "\n";
      out.text += ")\n";
    }
    outputs_.push_back(std::move(out));
    return {};
  }

  //! The extractor of the current database: the previous extract's while nothing changed since
  //! (an extract's own expression may add rows or unite, which the signature sees; its rebuild
  //! moves the timestamp only), so a run of extracts computes the costs of a large e-graph once.
  extractor& memo_extractor() {
    const database& db = state_->db;
    std::uint64_t cells = 0;
    for (const table& t : db.tables) cells += t.rows();
    const std::array<std::uint64_t, 3> now{cells, db.ids.size(), db.ids.unions()};
    if (extract_memo_ == nullptr || now != extract_memo_state_) {
      extract_memo_.reset();
      extract_memo_ = std::make_unique<extractor>(state_->decl, db);
      extract_memo_state_ = now;
    }
    return *extract_memo_;
  }

  expected<std::uint32_t> function_named(const lang::sexpr_tree& tree, std::uint32_t node) const {
    if (!tree.is_symbol(node))
      return fail(at(tree, node, "a function name expected", "", "name a declared function"));
    const std::int64_t f = state_->decl.find_function(tree.name(node));
    if (f < 0 || state_->decl.functions[static_cast<std::size_t>(f)].hidden)
      return fail(at(tree, node, "unknown function", tree.name(node),
                     "name a function, constructor or relation the program declared"));
    return static_cast<std::uint32_t>(f);
  }

  expected<void> print_size(const lang::sexpr_tree& tree, std::uint32_t form) {
    program_output out;
    if (tree.size(form) == 2) {
      VYRE_TRY_ASSIGN(const std::uint32_t f, function_named(tree, tree.child(form, 1)));
      out.type = program_output::kind::function_size;
      out.text = std::to_string(state_->db.tables[f].size()) + "\n";
      outputs_.push_back(std::move(out));
      return {};
    }
    if (tree.size(form) != 1)
      return fail(at(tree, form, "(print-size [function]) expected", "print-size",
                     "write (print-size) or (print-size f)"));
    std::vector<std::pair<std::string, std::uint64_t>> rows;
    for (std::uint32_t f = 0; f < state_->decl.functions.size(); ++f) {
      const function_decl& fn = state_->decl.functions[f];
      if (fn.hidden) continue;
      rows.emplace_back(fn.name, state_->db.tables[f].size());
    }
    std::sort(rows.begin(), rows.end());
    out.type = program_output::kind::print_size;
    out.text = "(";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i != 0) out.text += " ";
      out.text += "(" + rows[i].first + " " + std::to_string(rows[i].second) + ")";
      if (i + 1 < rows.size()) out.text += "\n";
    }
    out.text += ")\n";
    outputs_.push_back(std::move(out));
    return {};
  }

  expected<void> print_function(const lang::sexpr_tree& tree, std::uint32_t form) {
    const std::uint32_t n = tree.size(form);
    if (n < 2)
      return fail(at(tree, form, "(print-function f [n] [:mode csv] [:file \"f\"]) expected",
                     "print-function", "name the function to print"));
    VYRE_TRY_ASSIGN(const std::uint32_t f, function_named(tree, tree.child(form, 1)));
    std::uint64_t limit = ~std::uint64_t{0};
    bool csv = false;
    std::string file;
    for (std::uint32_t i = 2; i < n; ++i) {
      const std::uint32_t item = tree.child(form, i);
      if (i == 2 && tree[item].kind == lang::sexpr_kind::integer && tree[item].integer >= 0) {
        limit = static_cast<std::uint64_t>(tree[item].integer);
      } else if (tree.is_symbol(item, ":mode") && i + 1 < n) {
        const std::uint32_t m = tree.child(form, ++i);
        if (tree.is_symbol(m, "csv"))
          csv = true;
        else if (!tree.is_symbol(m, "default"))
          return fail(at(tree, m, "unknown print-function mode", tree.name(m),
                         "use :mode default or :mode csv"));
      } else if (tree.is_symbol(item, ":file") && i + 1 < n &&
                 tree[tree.child(form, i + 1)].kind == lang::sexpr_kind::string) {
        file = std::string(tree.name(tree.child(form, ++i)));
      } else {
        return fail(at(tree, item, "unknown print-function option", tree.name(item),
                       "print-function takes a row count, :mode csv and :file \"path\""));
      }
    }
    const function_decl& fn = state_->decl.functions[f];
    const table& t = state_->db.tables[f];
    extractor ex(state_->decl, state_->db);
    const bool unit = state_->decl.sorts[fn.output].kind == sort_kind::unit;
    std::string text = csv ? "" : "(\n";
    std::uint64_t printed = 0;
    for (std::size_t r = 0; r < t.rows() && printed < limit; ++r) {
      if (t.state(r) == row_state::stale) continue;
      ++printed;
      std::vector<std::string> fields;
      for (std::uint32_t a = 0; a < t.arity(); ++a) {
        std::string s = ex.text(t.row(r)[a], fn.inputs[a]);
        fields.push_back(s.empty() ? "Unextractable" : s);
      }
      std::string out_text = ex.text(t.value_of(r), fn.output);
      if (out_text.empty()) out_text = "Unextractable";
      if (csv) {
        auto quote = [](const std::string& s) {
          if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
          std::string q = "\"";
          for (const char ch : s) {
            if (ch == '"') q += '"';
            q += ch;
          }
          return q + '"';
        };
        text += quote(fn.name);
        for (const std::string& s : fields) text += "," + quote(s);
        if (!unit) text += "," + quote(out_text);
        text += "\n";
        continue;
      }
      text += "   (" + fn.name;
      for (const std::string& s : fields) text += " " + s;
      text += ")";
      if (!unit) text += " -> " + out_text;
      text += "\n";
    }
    if (!csv) text += ")\n";
    if (!file.empty()) {
      VYRE_TRY(file_access(tree, form, "print-function :file"));
      std::ofstream o(file, std::ios::binary | std::ios::trunc);
      if (!o || !(o << text))
        return fail(at(tree, form, "cannot write the print-function file", file,
                       "check the path and permissions"));
      return {};
    }
    program_output out;
    out.type = program_output::kind::print_function;
    out.text = std::move(text);
    outputs_.push_back(std::move(out));
    return {};
  }

  expected<void> include(const lang::sexpr_tree& tree, std::uint32_t form) {
    if (tree.size(form) != 2 || tree[tree.child(form, 1)].kind != lang::sexpr_kind::string)
      return fail(at(tree, form, "(include \"path\") expected", "include",
                     "write (include \"path/to/file.egg\")"));
    if (include_depth_ >= max_include_depth)
      return fail(at(tree, form, "includes nest deeper than 64 files (a cycle?)", "include",
                     "remove the include cycle"));
    const std::string path(tree.name(tree.child(form, 1)));
    VYRE_TRY(file_access(tree, form, "include"));
    auto text = read_file(path, 0);
    if (!text)
      return fail(at(tree, form,
                     "cannot read the included file (missing, unreadable or not a regular file)",
                     path, "include paths are relative to the working directory"));
    ++include_depth_;
    auto r = run_text(*text, path);
    --include_depth_;
    return r;
  }

  expected<void> input(const lang::sexpr_tree& tree, std::uint32_t form) {
    if (tree.size(form) != 3 || tree[tree.child(form, 2)].kind != lang::sexpr_kind::string)
      return fail(at(tree, form, "(input function \"file\") expected", "input",
                     "write (input f \"facts.tsv\")"));
    VYRE_TRY_ASSIGN(const std::uint32_t f, function_named(tree, tree.child(form, 1)));
    const function_decl& fn = state_->decl.functions[f];
    const std::string path(tree.name(tree.child(form, 2)));
    VYRE_TRY(file_access(tree, form, "input"));
    auto text = read_file(path, 0);
    if (!text)
      return fail(at(tree, form,
                     "cannot read the input file (missing, unreadable or not a regular file)", path,
                     "input paths are relative to the working directory"));
    const bool with_value = fn.kind == function_kind::function;
    std::vector<std::uint32_t> column_sorts = fn.inputs;
    if (with_value) column_sorts.push_back(fn.output);
    for (const std::uint32_t s : column_sorts) {
      const sort_kind k = state_->decl.sorts[s].kind;
      if (k != sort_kind::i64 && k != sort_kind::f64 && k != sort_kind::string)
        return fail(at(tree, form, "input reads only i64, f64 and String columns", fn.name,
                       "declare the function over i64, f64 and String"));
    }
    action_block block;
    std::size_t line_no = 0;
    std::istringstream lines(*text);
    std::string line;
    while (std::getline(lines, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      std::vector<std::string> fields;
      std::size_t start = 0;
      for (;;) {
        const std::size_t tab = line.find('\t', start);
        fields.push_back(
            line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) break;
        start = tab + 1;
      }
      if (fields.size() != column_sorts.size())
        return fail(error(errc::parse, "an input line has the wrong number of tab-separated fields")
                        .about(path)
                        .with("line", line_no)
                        .with("expected", column_sorts.size())
                        .with("got", fields.size())
                        .fix("give every line one field per column"));
      action a;
      a.op = with_value ? action_op::set : action_op::make;
      a.target = f;
      a.span = tree[form].span;
      for (std::size_t i = 0; i < fields.size(); ++i) {
        const sort_kind k = state_->decl.sorts[column_sorts[i]].kind;
        value v = 0;
        if (k == sort_kind::string) {
          VYRE_TRY_ASSIGN(v, state_->db.base.from_string(fields[i]));
        } else {
          std::int64_t iv = 0;
          bool overflow = false;
          double dv = 0;
          if (k == sort_kind::i64 && lang::detail::parse_i64(fields[i], iv, overflow)) {
            VYRE_TRY_ASSIGN(v, state_->db.base.from_i64(iv));
          } else if (k == sort_kind::f64 && (lang::detail::parse_f64(fields[i], dv) ||
                                             lang::detail::parse_i64(fields[i], iv, overflow))) {
            if (!lang::detail::parse_f64(fields[i], dv)) dv = static_cast<double>(iv);
            VYRE_TRY_ASSIGN(v, state_->db.base.from_f64(dv));
          } else {
            return fail(error(errc::parse, "an input field is not a number of the column's sort")
                            .about(fields[i])
                            .with("line", line_no)
                            .fix("write i64 and f64 fields as numbers"));
          }
        }
        a.args.push_back(operand::constant(v));
      }
      if (!with_value) {
        a.dst = block.register_count();
        block.register_sorts.push_back(fn.output);
      }
      block.actions.push_back(std::move(a));
    }
    VYRE_TRY(engine_->run_actions(block, prim_context::full));
    return {};
  }

  expected<void> output(lang::compiler& c, const lang::sexpr_tree& tree, std::uint32_t form) {
    if (tree.size(form) < 2 || tree[tree.child(form, 1)].kind != lang::sexpr_kind::string)
      return fail(at(tree, form, "(output \"file\" expr ...) expected", "output",
                     "write (output \"out.txt\" e ...)"));
    const std::string path(tree.name(tree.child(form, 1)));
    VYRE_TRY(file_access(tree, form, "output"));
    std::string text;
    for (std::uint32_t i = 2; i < tree.size(form); ++i) {
      VYRE_TRY_ASSIGN(const lang::compiled_expr e, (c.compile_expr(tree.child(form, i))));
      VYRE_TRY_ASSIGN(const std::vector<value> regs,
                      engine_->run_actions(e.block, prim_context::full));
      const value v = engine_->canonical(e.result.is_reg() ? regs[e.result.v] : e.result.v, e.sort);
      extractor ex(state_->decl, state_->db);
      text += ex.text(v, e.sort) + "\n";
    }
    std::ofstream o(path, std::ios::binary | std::ios::app);
    if (!o || !(o << text))
      return fail(
          at(tree, form, "cannot write the output file", path, "check the path and permissions"));
    return {};
  }

  // ---------------------------------------------------------------- schedules --------------

  struct run_report {
    bool updated = false;
    bool can_stop = true;
  };

  expected<void> run_schedule(const schedule& s) {
    if (runs_stopped_) return {};
    bool last_changed = true;
    VYRE_TRY_ASSIGN(const run_report r, exec(s, s.root(), last_changed));
    (void)r;
    if (!runs_stopped_) stopped_ = last_changed ? run_stop::iterations : run_stop::saturated;
    return {};
  }

  expected<run_report> exec(const schedule& s, std::uint32_t node, bool& last_changed) {
    const schedule_node& n = s.nodes[node];
    run_report out;
    switch (n.type) {
      case schedule_node::kind::run: {
        if (runs_stopped_) return out;
        if (n.has_until) {
          VYRE_TRY(settle());  // the query runs on the host
          VYRE_TRY_ASSIGN(const bool done, engine_->holds(n.until));
          if (done) {
            last_changed = false;
            return out;
          }
        }
        VYRE_TRY_ASSIGN(const bool changed, iterate(n.ruleset));
        last_changed = changed;
        out.updated = changed;
        out.can_stop = !changed;
        return out;
      }
      case schedule_node::kind::repeat:
        for (std::uint64_t i = 0; i < n.times && !runs_stopped_; ++i) {
          VYRE_TRY_ASSIGN(const run_report r, exec(s, n.children[0], last_changed));
          out.updated = out.updated || r.updated;
          if (r.can_stop) break;
        }
        return out;
      case schedule_node::kind::saturate:
        for (;;) {
          if (runs_stopped_) return out;
          VYRE_TRY_ASSIGN(const run_report r, exec(s, n.children[0], last_changed));
          out.updated = out.updated || r.updated;
          if (!r.updated) break;
        }
        return out;
      case schedule_node::kind::seq: {
        out.can_stop = true;
        for (const std::uint32_t c : n.children) {
          VYRE_TRY_ASSIGN(const run_report r, exec(s, c, last_changed));
          out.updated = out.updated || r.updated;
          out.can_stop = out.can_stop && r.can_stop;
        }
        return out;
      }
    }
    return out;
  }

  //! Brings the state back from the offload engine, if it holds it.
  expected<void> settle() {
    if (options_.offload && options_.offload->holds_state())
      VYRE_TRY(options_.offload->sync(state_->decl, state_->db, engine_->threads()));
    return {};
  }

  //! One iteration of `ruleset` under the limits; a crossing iteration is rolled back and
  //! ends the program's runs. @returns whether it changed the database.
  expected<bool> iterate(std::uint32_t ruleset) {
    using clock = std::chrono::steady_clock;
    iteration_limits limits;
    limits.node_limit = options_.node_limit;
    if (options_.time_limit > 0) {
      const auto budget = std::chrono::duration_cast<clock::duration>(
          std::chrono::duration<double>(options_.time_limit));
      limits.deadline = start_ + budget;
      if (clock::now() >= limits.deadline) {
        runs_stopped_ = true;
        stopped_ = run_stop::time_limit;
        return false;
      }
    }
    const bool guarded = options_.node_limit != 0 || options_.time_limit > 0;
    iteration_offload* offload = options_.offload.get();
    std::string why;
    iteration_report r;
    if (offload != nullptr && offload->accepts(state_->decl, state_->db, ruleset, why)) {
      // The offload engine rolls a crossing iteration back itself; one it hands back (it could
      // reach the node limit) runs here, on the state `settle` brings back.
      VYRE_TRY_ASSIGN(r, offload->run_iteration(state_->decl, state_->db, ruleset, limits));
      if (r.stopped == iteration_stop::handed_to_cpu) {
        why = offload->handback_reason();
        offload = nullptr;
      }
    } else {
      offload = nullptr;
    }
    if (offload == nullptr) {
      VYRE_TRY(settle());
      database& db = state_->db;
      if (guarded) db.begin_undo();
      expected<iteration_report> ran = [&] {
        try {
          return engine_->run_iteration(ruleset, limits);
        } catch (...) {
          db.drop_undo();  // out of memory: the program stops with the error
          throw;
        }
      }();
      if (!ran) {
        db.drop_undo();
        return fail(ran.error());
      }
      r = *ran;
      if (r.stopped == iteration_stop::none && options_.time_limit > 0 &&
          clock::now() > limits.deadline)
        r.stopped = iteration_stop::time_limit;
      if (r.stopped != iteration_stop::none)
        db.roll_back(engine_->threads());
      else
        db.keep(engine_->threads());
    }
    if (r.stopped != iteration_stop::none) {
      runs_stopped_ = true;
      stopped_ =
          r.stopped == iteration_stop::node_limit ? run_stop::node_limit : run_stop::time_limit;
      return false;
    }
    iteration_record rec;
    rec.iteration = ++iteration_count_;
    rec.ruleset = state_->decl.rulesets[ruleset].name;
    rec.names = function_names();
    rec.device = offload != nullptr ? offload->name() : "cpu";
    if (offload == nullptr && options_.offload) rec.cpu_reason = std::move(why);
    rec.sizes = offload != nullptr ? offload->sizes() : sizes();
    for (const std::uint64_t n : rec.sizes) rec.rows += n;
    rec.eclasses = offload != nullptr ? offload->eclasses() : eclasses();
    static_cast<iteration_counts&>(rec) = r;
    if (options_.on_iteration) options_.on_iteration(rec);
    iterations_.push_back(std::move(rec));
    return r.changed;
  }

  //! The functions' names now ("" for hidden ones), shared while the declarations stay.
  std::shared_ptr<const std::vector<std::string>> function_names() {
    const auto& fns = state_->decl.functions;
    bool same = names_ != nullptr && names_->size() == fns.size();
    for (std::size_t f = 0; same && f < fns.size(); ++f)
      same = (*names_)[f] == (fns[f].hidden ? std::string() : fns[f].name);
    if (!same) {
      auto names = std::make_shared<std::vector<std::string>>();
      for (const function_decl& fn : fns) names->push_back(fn.hidden ? std::string() : fn.name);
      names_ = std::move(names);
    }
    return names_;
  }

  session_options options_;
  std::shared_ptr<const std::vector<std::string>> names_;
  std::unique_ptr<state> state_;
  std::unique_ptr<extractor> extract_memo_;  //!< `memo_extractor`
  std::array<std::uint64_t, 3> extract_memo_state_{};
  std::vector<std::unique_ptr<state>> saved_;
  std::unique_ptr<cpu_engine> engine_;
  std::vector<std::string> files_;
  std::vector<program_output> outputs_;
  std::vector<iteration_record> iterations_;
  std::uint64_t iteration_count_ = 0;
  run_stop stopped_ = run_stop::none;
  bool runs_stopped_ = false;
  bool dollar_warned_ = false;
  std::uint32_t include_depth_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace vyre::eqsat
