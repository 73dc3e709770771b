// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::auto_engine`: equality saturation that runs small iterations on the CPU engine
//! and moves to the GPU engine at the measured crossover; the same calls as the engines (so
//! `eqsat::execute` and `eqsat::write_egraph_json` run it) and the same counts.
//!
//!     using gpu_backend = vyre::backend<>;  // any policies
//!     vyre::eqsat::auto_engine<gpu_backend> engine(prog, [] { return gpu_backend::acquire(0); });
//!     const vyre::eqsat::execution ex = vyre::eqsat::execute(prog, engine);
//!     // ex.iterations[i].device: where iteration i ran; engine.handoff_failure(): why the
//!     // run stayed on the CPU at or above the crossover (no device, a rule too large for it)
//!
//! The engine starts on a `cpu_engine` and runs iteration by iteration. Before an iteration that
//! would start on at least `crossover` e-nodes (`default_gpu_crossover_enodes` unless given) it
//! calls the backend factory, once: no CUDA call is made below the crossover, so a program that
//! stays small never creates a CUDA context. It then loads the CPU engine's committed state into
//! a `gpu_engine` (`gpu_engine::create(gpu, cpu)`: class ids, `let` classes and the iteration
//! count carry over), frees the CPU engine and runs every later iteration, `add_term` and
//! `extract` there. When the factory or the load fails the engine stays on the CPU, records the
//! error in `handoff_failure()` and does not try again.
//!
//! A run behaves as one engine's run: the node limit rolls the crossing iteration back on
//! whichever engine runs it, the time limit counts over the whole run (the handoff included),
//! and a saturated iteration ends it. After the handoff `failure()` is the GPU engine's (out of
//! device memory, a CUDA error: the run stops as `stop_reason::failed`, the last committed
//! iteration kept); the CPU engine never fails.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/gpu_engine.cuh"
#include "vyre/eqsat/program.hpp"

namespace vyre::eqsat {

//! The engine on the CPU below `crossover` e-nodes, on a `vyre::backend<P>` (`Backend`, made by
//! the factory at the crossover and owned by the engine) from there.
template <class Backend>
class auto_engine {
 public:
  //! Makes the backend at the crossover: `Backend::acquire(ordinal)` (with a `warmup()` when
  //! wanted), returning the backend as its error policy returns results.
  using backend_factory = std::function<typename Backend::template result<Backend>()>;

  //! An engine for `prog` (kept by reference) on `threads` CPU threads (0: every core) that
  //! moves to the GPU through `acquire` before the first iteration starting on `crossover` or
  //! more e-nodes (0: before the first iteration). An empty `acquire` keeps it on the CPU.
  auto_engine(const program& prog, backend_factory acquire,
              std::uint64_t crossover = default_gpu_crossover_enodes, unsigned threads = 0)
      : prog_(&prog), acquire_(std::move(acquire)), crossover_(crossover) {
    cpu_.emplace(prog, threads);
    threads_ = cpu_->threads();
  }
  auto_engine(const auto_engine&) = delete;
  auto_engine& operator=(const auto_engine&) = delete;
  auto_engine(auto_engine&&) = delete;
  auto_engine& operator=(auto_engine&&) = delete;

  const program& prog() const noexcept { return *prog_; }
  //! The CPU engine's threads (kept after the handoff).
  unsigned threads() const noexcept { return threads_; }
  std::uint64_t crossover() const noexcept { return crossover_; }
  //! Whether the run has moved to the GPU engine.
  bool on_gpu() const noexcept { return gpu_.has_value(); }
  //! Where the next iteration runs unless it crosses over.
  device_kind device() const noexcept { return on_gpu() ? device_kind::gpu : device_kind::cpu; }
  //! Why the engine stayed on the CPU at the crossover (empty: it moved, or never reached it).
  const std::optional<error>& handoff_failure() const noexcept { return handoff_failure_; }
  //! Seconds the handoff took (the factory, then the load), counted in no iteration's seconds;
  //! negative while none was tried.
  double handoff_seconds() const noexcept { return handoff_seconds_; }
  //! The GPU engine's first error (empty on the CPU engine, which does not fail).
  const std::optional<error>& failure() const noexcept {
    static const std::optional<error> none;
    return gpu_ ? gpu_->failure() : none;
  }

  //! Adds a ground term; returns its canonical e-class.
  std::uint32_t add_term(const term& t) { return gpu_ ? gpu_->add_term(t) : cpu_->add_term(t); }
  void set_global(std::uint32_t global, std::uint32_t eclass) {
    if (gpu_)
      gpu_->set_global(global, eclass);
    else
      cpu_->set_global(global, eclass);
  }

  //! Runs up to `iterations` iterations of the rules `active`, each where its starting size
  //! says (see the file comment); `iteration_stats::device` says where each ran.
  run_result run(std::uint64_t iterations, const std::vector<std::uint32_t>& active,
                 const run_limits& limits = {}) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    run_result result;
    result.stopped = stop_reason::iterations;
    // The limits of the part of the run left; false when no time is left.
    auto rest = [&](run_limits& out) {
      out = limits;
      if (limits.time_limit <= 0) return true;
      out.time_limit -= std::chrono::duration<double>(clock::now() - start).count();
      return out.time_limit > 0;
    };
    run_limits left;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      if (!gpu_ && !tried_ && cpu_->enode_count() >= crossover_) hand_off();
      if (!rest(left)) {
        result.stopped = stop_reason::time_limit;
        break;
      }
      if (gpu_) {
        run_result r = gpu_->run(iterations - i, active, left);
        for (auto& s : r.iterations) result.iterations.push_back(std::move(s));
        result.stopped = r.stopped;
        break;
      }
      run_result r = cpu_->run(1, active, left);
      for (auto& s : r.iterations) result.iterations.push_back(std::move(s));
      if (r.stopped != stop_reason::iterations) {
        result.stopped = r.stopped;
        break;
      }
    }
    return result;
  }

  //! Counts of the committed e-graph (`device`: the engine holding it).
  iteration_stats counts() const { return gpu_ ? gpu_->counts() : cpu_->counts(); }
  //! The cheapest term of `eclass` (egglog's tree cost).
  extraction extract(std::uint32_t eclass) const {
    return gpu_ ? gpu_->extract(eclass) : cpu_->extract(eclass);
  }
  //! Canonical e-class id of `x`.
  std::uint32_t find(std::uint32_t x) { return gpu_ ? gpu_->find(x) : cpu_->find(x); }
  std::uint32_t find_const(std::uint32_t x) const {
    return gpu_ ? gpu_->find_const(x) : cpu_->find_const(x);
  }
  std::uint64_t class_id_count() const noexcept {
    return gpu_ ? gpu_->class_id_count() : cpu_->class_id_count();
  }
  //! Rows of constructor `c` (on the GPU: a host copy, see `gpu_engine::rows`).
  const std::vector<std::uint32_t>& rows(std::uint32_t c) const {
    return gpu_ ? gpu_->rows(c) : cpu_->rows(c);
  }
  std::uint32_t width(std::uint32_t c) const noexcept {
    return gpu_ ? gpu_->width(c) : cpu_->width(c);
  }

 private:
  static constexpr bool throws =
      std::same_as<typename Backend::error_policy, on_error::throw_exception>;

  //! A policy's result as `expected`: a throwing call's `error_exception` becomes its error.
  template <class T, class F>
  static expected<T> caught(F&& f) {
    if constexpr (throws) {
      try {
        return expected<T>(f());
      } catch (const error_exception& e) {
        return fail(e.error());
      }
    } else {
      return f();
    }
  }

  expected<void> try_hand_off() {
    if (!acquire_)
      return fail(error(errc::invalid_state, "eqsat auto_engine: no backend factory")
                      .with("crossover", crossover_)
                      .fix("pass a factory that acquires the backend, e.g. "
                           "[] { return vyre::backend<>::acquire(0); }"));
    VYRE_TRY_ASSIGN(Backend made, caught<Backend>([&] { return acquire_(); }));
    backend_ = std::make_unique<Backend>(std::move(made));
    VYRE_TRY_ASSIGN(gpu_engine<Backend> engine, caught<gpu_engine<Backend>>([&] {
                      return gpu_engine<Backend>::create(*backend_, *cpu_);
                    }));
    gpu_.emplace(std::move(engine));
    return {};
  }

  //! Moves the run to the GPU engine, or records why it stays on the CPU; tried once.
  void hand_off() {
    tried_ = true;
    const auto start = std::chrono::steady_clock::now();
    auto moved = try_hand_off();
    handoff_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (moved) {
      cpu_.reset();  // its memory goes back now: the GPU engine holds the state
      return;
    }
    handoff_failure_ = moved.error();
    gpu_.reset();
    backend_.reset();
  }

  // Members: the backend before the GPU engine, which uses it and dies first.
  const program* prog_;
  backend_factory acquire_;
  std::uint64_t crossover_;
  unsigned threads_ = 1;
  bool tried_ = false;
  double handoff_seconds_ = -1;
  std::optional<error> handoff_failure_;
  std::optional<cpu_engine> cpu_;
  std::unique_ptr<Backend> backend_;
  std::optional<gpu_engine<Backend>> gpu_;
};

}  // namespace vyre::eqsat
