// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::execute`: runs a program's commands in order on an engine (`cpu_engine`,
//! `gpu_engine`, or any engine with the same `add_term`/`set_global`/`run`/`extract`/`counts`/
//! `find` calls).
//!
//! Rules take part in the runs that follow their declaration; terms, `let`s and `extract`s are
//! added when reached. A run that stops on the node or time limit ends the program's runs (the
//! later commands still add their terms and extract; a run that stops as `failed` likewise, and
//! the caller checks the engine's failure). `extra_iterations` runs that many more
//! iterations after the last command, as if the program ended with `(run N)`; `extract_roots`
//! then extracts every top-level term and `let`.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/program.hpp"

namespace vyre::eqsat {

struct execute_options {
  run_limits limits;                   //!< the time limit counts over every run of the program
  std::uint64_t extra_iterations = 0;  //!< a final `(run N)`
  bool extract_roots = false;          //!< extract every top-level term and let at the end
};

struct extracted {
  std::string source;  //!< the term as written
  std::uint32_t eclass = 0;
  extraction best;
};

struct execution {
  iteration_stats initial;                  //!< the e-graph before the first iteration
  std::vector<iteration_stats> iterations;  //!< every committed iteration, in order
  std::vector<extracted> extracts;
  stop_reason stopped = stop_reason::iterations;
  std::vector<std::uint32_t> roots;  //!< e-classes of the top-level terms and lets
};

template <class Engine>
execution execute(const program& prog, Engine& engine, const execute_options& options = {}) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  execution out;
  std::vector<std::uint32_t> active;
  std::vector<const term*> root_terms;
  bool stopped_early = false;
  bool initial_taken = false;
  auto do_run = [&](std::uint64_t iterations) {
    if (!initial_taken) {
      out.initial = engine.counts();
      initial_taken = true;
    }
    if (stopped_early) return;
    run_limits limits = options.limits;
    if (limits.time_limit > 0) {
      limits.time_limit -= std::chrono::duration<double>(clock::now() - start).count();
      if (limits.time_limit <= 0) {
        out.stopped = stop_reason::time_limit;
        stopped_early = true;
        return;
      }
    }
    run_result r = engine.run(iterations, active, limits);
    for (auto& it : r.iterations) out.iterations.push_back(std::move(it));
    out.stopped = r.stopped;
    stopped_early = r.stopped == stop_reason::node_limit || r.stopped == stop_reason::time_limit ||
                    r.stopped == stop_reason::failed;
  };
  auto do_extract = [&](const term& t) {
    const std::uint32_t cls = engine.add_term(t);
    out.extracts.push_back(extracted{prog.term_text(t), cls, engine.extract(cls)});
  };
  for (const command& cmd : prog.commands) {
    switch (cmd.kind) {
      case command_kind::add_rule:
        active.push_back(cmd.index);
        break;
      case command_kind::add_term:
        out.roots.push_back(engine.add_term(cmd.value));
        root_terms.push_back(&cmd.value);
        break;
      case command_kind::let: {
        const std::uint32_t cls = engine.add_term(cmd.value);
        engine.set_global(cmd.index, cls);
        out.roots.push_back(cls);
        root_terms.push_back(&cmd.value);
        break;
      }
      case command_kind::run:
        do_run(cmd.iterations);
        break;
      case command_kind::extract:
        do_extract(cmd.value);
        break;
    }
  }
  if (options.extra_iterations != 0) do_run(options.extra_iterations);
  if (!initial_taken) out.initial = engine.counts();
  if (options.extract_roots)
    for (const term* t : root_terms) do_extract(*t);
  for (std::uint32_t& r : out.roots) r = engine.find(r);
  return out;
}

}  // namespace vyre::eqsat
