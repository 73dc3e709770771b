// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::gpu_offload`: the GPU engine as a `session`'s `iteration_offload`, so a
//! program's iterations run on the device where they can, and on the CPU engine where not.
//!
//!     using gpu_backend = vyre::backend<>;  // any policies
//!     vyre::eqsat::session_options options;
//!     options.offload = std::make_shared<vyre::eqsat::gpu_offload<gpu_backend>>(
//!         [] { return gpu_backend::acquire(0); }, vyre::device_choice::automatic);
//!     vyre::eqsat::session s(std::move(options));
//!     s.run_file("prog.egg");  // iteration_record::device says where each iteration ran
//!
//! The session asks `accepts` before every iteration. It says yes when every rule of the
//! ruleset lowers to a device plan (`device::plan_rule`: table atoms and device primitives,
//! primitive calls, lookups, makes, sets, subsumes, deletes, panics and unions), the database
//! can move (`gpu_resident_check`: the tables that hold ids are constructors' or functions'
//! merged by new, min, max, and or or or with :no-merge, over eq and base sorts, no container
//! of ids) and, in `device_choice::automatic`, the iteration starts on at least `crossover` rows
//! and neither its rules nor the tables need the wide kernels (`device::wide_limits`: luminal's
//! programs, whose iterations of hundreds of matches over rules of up to 126 atoms cost the
//! device several times the CPU engine's time; `docs/performance.md`). Once on the device, the
//! run stays there for every ruleset it accepts: moving back costs a download. Otherwise the
//! session syncs the state back and runs the iteration on its CPU engine.
//!
//! The backend is made by the factory on the first accepted iteration, so a program that never
//! reaches the device makes no CUDA call. In automatic mode a factory that fails (no device)
//! leaves the run on the CPU for good and `unavailable()` says why; with `device_choice::gpu`
//! its error is the iteration's (`device_choice::cpu` accepts nothing). The first iteration after
//! the host held the state uploads it
//! (`gpu_engine::create`); `sync` downloads it and drops the engine. Plans are made once per
//! ruleset and declarations (rules may be added between runs). A ruleset whose iteration the
//! engine hands back because a primitive, lookup or set met a value it does not decide (a
//! negative i64, a missing key) runs on the CPU engine from then on.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "vyre/core/device_choice.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/gpu_engine.cuh"
#include "vyre/eqsat/session.hpp"

namespace vyre::eqsat {

//! The old spelling of the offload's `device_choice` (`always` is `gpu`), taken by a deprecated
//! constructor.
enum class offload_mode : std::uint8_t { always, automatic };

//! A `session`'s iterations on the GPU engine (see the file comment), on a `vyre::backend<P>`
//! (`Backend`) that the factory makes and the offload owns.
template <class Backend>
class gpu_offload final : public iteration_offload {
 public:
  //! Makes the backend at the first accepted iteration: `Backend::acquire(ordinal)` (with a
  //! `warmup()` when wanted), returning the backend as its error policy returns results.
  using backend_factory = std::function<typename Backend::template result<Backend>()>;

  //! `where`: `gpu` every iteration the GPU engine can run, `automatic` those that start on at
  //! least `crossover` rows while a device is there, `cpu` none.
  explicit gpu_offload(backend_factory acquire, device_choice where = device_choice::gpu,
                       std::uint64_t crossover = default_gpu_crossover_enodes)
      : acquire_(std::move(acquire)), where_(where), crossover_(crossover) {}
  [[deprecated("pass a vyre::device_choice")]] gpu_offload(
      backend_factory acquire, offload_mode mode,
      std::uint64_t crossover = default_gpu_crossover_enodes)
      : gpu_offload(std::move(acquire),
                    mode == offload_mode::always ? device_choice::gpu : device_choice::automatic,
                    crossover) {}
  gpu_offload(const gpu_offload&) = delete;
  gpu_offload& operator=(const gpu_offload&) = delete;

  device_choice where() const noexcept { return where_; }
  std::uint64_t crossover() const noexcept { return crossover_; }
  //! Why automatic mode stays on the CPU for good (the factory failed); empty while the
  //! device may still be used.
  const std::string& unavailable() const noexcept { return unavailable_; }
  //! The backend once the factory made it (null before): its telemetry, its memory.
  Backend* backend() noexcept { return backend_.get(); }
  //! The engine while it holds the state (null otherwise).
  const gpu_engine<Backend>* engine() const noexcept { return engine_ ? &*engine_ : nullptr; }
  //! `gpu_engine::capture_rebuilds` for the engines made from now on (default on).
  void capture_rebuilds(bool on) noexcept { capture_rebuilds_ = on; }
  //! Iterations run on the device so far.
  std::uint64_t iterations() const noexcept { return iterations_; }

  bool accepts(const declarations& decl, const database& db, std::uint32_t ruleset,
               std::string& why) override {
    why.clear();
    if (!unavailable_.empty()) {
      why = unavailable_;
      return false;
    }
    if (where_ == device_choice::cpu) {
      why = "the offload was made with device_choice::cpu";
      return false;
    }
    if (!engine_ && where_ == device_choice::automatic && db.total_rows() < crossover_) {
      why = "the iteration starts below the crossover (" + std::to_string(crossover_) + " rows)";
      return false;
    }
    const cached_plans& plans = plans_for(decl, ruleset);
    if (!plans.refused.empty()) {
      why = plans.refused;
      return false;
    }
    if (!engine_ && where_ == device_choice::automatic && plans.wide) {
      why =
          "automatic mode keeps rules and rows past the narrow kernels' arrays on the CPU "
          "engine, which runs them faster at the sizes such programs reach (--device gpu "
          "moves them)";
      return false;
    }
    if (engine_) return true;  // the host's database is stale: the engine checked it
    if (auto fits = gpu_resident_check(decl, db); !fits) {
      why = fits.error().message();
      return false;
    }
    if (where_ == device_choice::automatic && !backend_) {
      auto made = acquire();
      if (!made) {
        unavailable_ = made.error().message();
        why = unavailable_;
        return false;
      }
    }
    return true;
  }

  expected<iteration_report> run_iteration(const declarations& decl, database& db,
                                           std::uint32_t ruleset,
                                           const iteration_limits& limits) override {
    if (!backend_) VYRE_TRY(acquire());
    if (!engine_) {
      VYRE_TRY_ASSIGN(gpu_engine<Backend> made, caught<gpu_engine<Backend>>([&] {
                        return gpu_engine<Backend>::create(*backend_, decl, db);
                      }));
      engine_.emplace(std::move(made));
      engine_->capture_rebuilds(capture_rebuilds_);
    }
    const cached_plans& plans = plans_for(decl, ruleset);
    if (!plans.refused.empty())
      return fail(error(errc::unsupported,
                        "eqsat gpu_offload: the ruleset does not run on the "
                        "GPU engine")
                      .about(plans.refused)
                      .fix("ask accepts() before run_iteration()"));
    const std::span<const device::rule_plan> rules(plans.plans);
    // Seminaive: each rule matches what is new since its last run, as on the CPU engine, and
    // the clock and the rules' last runs move on in `db` as they do there.
    if (db.last_run.size() < decl.rules.size()) db.last_run.resize(decl.rules.size(), 0);
    std::vector<std::uint32_t> last_run(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) last_run[i] = db.last_run[rules[i].rule];
    const std::uint32_t ts = engine_->now();
    VYRE_TRY_ASSIGN(iteration_report report, caught<iteration_report>([&] {
                      return engine_->run_iteration(rules, limits, last_run);
                    }));
    if (report.stopped == iteration_stop::none) {
      ++iterations_;
      for (const device::rule_plan& plan : rules) db.last_run[plan.rule] = ts;
      db.now = (std::max)(db.now, engine_->now());
    }
    // A primitive met a value only the host decides (a negative i64, an interned one): the
    // ruleset's next iterations would likely meet it again, so they stay on the CPU engine
    // rather than move the state back and forth.
    if (report.stopped == iteration_stop::handed_to_cpu && engine_->met_outside_values())
      refuse(ruleset,
             "a primitive, lookup or set met a value the GPU engine does not decide (an i64 "
             "outside [0, 2^31), a failed call in a rule's actions, a missing key, two values "
             "of a :no-merge function for one key), so this ruleset runs on the CPU engine");
    return report;
  }

  bool holds_state() const override { return engine_.has_value(); }

  expected<void> sync(const declarations& decl, database& db, unsigned threads) override {
    (void)decl;
    if (!engine_) return {};
    auto done = caught<void>([&] { return engine_->download(db, threads); });
    engine_.reset();  // its memory goes back now: the host holds the state
    plans_.clear();
    return done;
  }

  std::vector<std::uint64_t> sizes() const override {
    return engine_ ? engine_->sizes() : std::vector<std::uint64_t>{};
  }
  std::uint64_t eclasses() const override { return engine_ ? engine_->eclasses() : 0; }
  const char* name() const override { return "gpu"; }
  std::string handback_reason() const override {
    if (engine_ && engine_->met_outside_values())
      return "a primitive, lookup or set met a value the GPU engine does not decide: an i64 "
             "outside [0, 2^31), a failed call in a rule's actions, a missing key, or two "
             "values of a :no-merge function for one key";
    return "its matches could reach the node limit, which the CPU engine checks exactly";
  }

 private:
  //! A ruleset's plans, or why it stays on the CPU, for the declarations of `key`.
  struct cached_plans {
    std::uint32_t ruleset = 0;
    std::vector<std::size_t> key;    //!< the declarations' sizes
    std::vector<std::string> names;  //!< the ruleset's rules' names
    std::vector<device::rule_plan> plans;
    std::string refused;
    //! Whether a plan, or a table the state holds, needs the wide kernels.
    bool wide = false;
  };

  static constexpr bool throws =
      std::same_as<typename Backend::error_policy, on_error::throw_exception>;

  //! A policy's result as `expected`: a throwing call's `error_exception` becomes its error.
  template <class T, class F>
  static expected<T> caught(F&& f) {
    if constexpr (throws) {
      try {
        if constexpr (std::is_void_v<T>) {
          f();
          return {};
        } else {
          return expected<T>(f());
        }
      } catch (const error_exception& e) {
        return fail(e.error());
      }
    } else {
      return f();
    }
  }

  expected<void> acquire() {
    if (!acquire_)
      return fail(error(errc::invalid_state, "eqsat gpu_offload: no backend factory")
                      .fix("pass a factory that acquires the backend, e.g. "
                           "[] { return vyre::backend<>::acquire(0); }"));
    VYRE_TRY_ASSIGN(Backend made, caught<Backend>([&] { return acquire_(); }));
    backend_ = std::make_unique<Backend>(std::move(made));
    return {};
  }

  //! Keeps `ruleset`'s iterations on the CPU engine from now on (its cached plans say `why`).
  //! `sync` forgets the plans, not these.
  void refuse(std::uint32_t ruleset, const char* why) {
    for (cached_plans& c : plans_) {
      if (c.ruleset != ruleset) continue;
      c.refused = why;
      c.plans.clear();
      if (refused_.size() >= 64) refused_.clear();
      refused_.push_back(c);
    }
  }

  //! The plans of `ruleset` over `decl`, made now unless the declarations are those of the
  //! last call for it.
  const cached_plans& plans_for(const declarations& decl, std::uint32_t ruleset) {
    const std::vector<std::size_t> key{decl.functions.size(), decl.rules.size(),
                                       decl.rulesets.size(), decl.sorts.size()};
    const std::vector<std::uint32_t> rules = device::ruleset_rules(decl, ruleset);
    std::vector<std::string> names;
    for (const std::uint32_t r : rules) names.push_back(decl.rules[r].name);
    for (const std::vector<cached_plans>* cache : {&refused_, &plans_})
      for (const cached_plans& c : *cache)
        if (c.ruleset == ruleset && c.key == key && c.names == names) return c;
    cached_plans made;
    made.ruleset = ruleset;
    made.key = key;
    made.names = std::move(names);
    // Id literals are canonicalized by the engine before each iteration.
    static const database no_ids;
    for (const std::uint32_t r : rules) {
      auto plan = device::plan_rule(decl, no_ids, decl.rules[r]);
      if (!plan) {
        made.refused = plan.error().message();
        made.plans.clear();
        break;
      }
      made.wide = made.wide || !plan->query_fits<device::narrow_limits>() ||
                  !plan->actions_fit<device::narrow_limits>();
      made.plans.push_back(std::move(*plan));
    }
    for (std::uint32_t f = 0; f < decl.functions.size() && made.refused.empty(); ++f)
      made.wide = made.wide || (device::device_resident(decl, f) &&
                                decl.functions[f].arity() + 1 > device::narrow_limits::width);
    if (plans_.size() >= 64) plans_.clear();
    plans_.push_back(std::move(made));
    return plans_.back();
  }

  // Members: the backend before the engine, which uses it and dies first.
  backend_factory acquire_;
  device_choice where_;
  std::uint64_t crossover_;
  std::string unavailable_;
  std::unique_ptr<Backend> backend_;
  std::optional<gpu_engine<Backend>> engine_;
  std::vector<cached_plans> plans_;
  std::vector<cached_plans> refused_;  //!< rulesets kept on the CPU engine (`refuse`)
  std::uint64_t iterations_ = 0;
  bool capture_rebuilds_ = true;
};

}  // namespace vyre::eqsat
