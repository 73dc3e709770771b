// SPDX-License-Identifier: Apache-2.0
// vyre::eqsat::gpu_engine against cpu_engine through eqsat::execute: every count of every
// iteration (e-nodes per constructor, e-classes, matches, unions), the stop reason and the
// extract costs equal; the node limit rolls the crossing iteration back and the engine goes
// on from the committed state. (math.egg 1-11 and the oracle's programs: the
// vyre_eqsat_gpu_vs_cpu test through the tool.) auto_engine likewise at crossovers that keep it
// on the CPU, move it before the first iteration and move it mid-run (gpu_engine::create from a
// cpu_engine), on math.egg too (VYRE_EGGLOG_DATA_DIR).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/eqsat.cuh>
#include <vyre/runtime.cuh>

namespace eq = vyre::eqsat;
using gpu_backend = vyre::backend<>;

namespace {

//! The program of `text`; throws std::runtime_error with the diagnostic when it is bad.
eq::program read_test_program(const char* text) {
  auto prog = eq::read_program(text, "t.egg");
  if (!prog) throw std::runtime_error(eq::diagnostic("t.egg", prog.error()));
  return std::move(*prog);
}

void check_same_stats(const eq::iteration_stats& cpu, const eq::iteration_stats& gpu) {
  CHECK(gpu.iteration == cpu.iteration);
  CHECK(gpu.enodes == cpu.enodes);
  CHECK(gpu.eclasses == cpu.eclasses);
  CHECK(gpu.per_constructor == cpu.per_constructor);
  CHECK(gpu.matches == cpu.matches);
  CHECK(gpu.unions == cpu.unions);
}

void check_same(const eq::execution& cpu, const eq::execution& gpu) {
  check_same_stats(cpu.initial, gpu.initial);
  REQUIRE(gpu.iterations.size() == cpu.iterations.size());
  for (std::size_t i = 0; i < cpu.iterations.size(); ++i)
    check_same_stats(cpu.iterations[i], gpu.iterations[i]);
  CHECK(gpu.stopped == cpu.stopped);
  REQUIRE(gpu.extracts.size() == cpu.extracts.size());
  for (std::size_t i = 0; i < cpu.extracts.size(); ++i)
    CHECK(gpu.extracts[i].best.cost == cpu.extracts[i].best.cost);
}

using auto_engine = eq::auto_engine<gpu_backend>;

//! The auto engine's backend factory: device 0 (this backend's policy throws).
auto_engine::backend_factory device_zero() {
  return [] { return gpu_backend::acquire(0); };
}

//! Every iteration ran where the crossover says: on the GPU from the first one that started on
//! `crossover` or more e-nodes (the programs here add every term before their first run).
void check_devices(const eq::execution& ex, std::uint64_t crossover, bool gpu_usable = true) {
  std::uint64_t start = ex.initial.enodes;
  bool moved = false;
  for (const eq::iteration_stats& s : ex.iterations) {
    moved = moved || (gpu_usable && start >= crossover);
    INFO("iteration " << s.iteration << " started on " << start << " e-nodes, crossover "
                      << crossover);
    CHECK(s.device == (moved ? eq::device_kind::gpu : eq::device_kind::cpu));
    start = s.enodes;
  }
}

//! `prog` on the auto engine at `crossover` equals `want` (the CPU engine's run of `options`):
//! every count, the extract costs, the roots' classes (ids made on the CPU before the handoff
//! are kept by it, and the smallest id of a class is its representative on both engines).
void check_auto(const eq::program& prog, const eq::execute_options& options,
                const eq::execution& want, std::uint64_t crossover) {
  INFO("crossover " << crossover);
  auto_engine engine(prog, device_zero(), crossover, 2);
  const eq::execution got = eq::execute(prog, engine, options);
  REQUIRE_FALSE(engine.failure());
  CHECK_FALSE(engine.handoff_failure());
  check_same(want, got);
  CHECK(got.roots == want.roots);
  check_devices(got, crossover);
}

//! math.egg from VYRE_EGGLOG_DATA_DIR; false (a visible warning) when it is missing.
bool read_math(eq::program& out) {
  const std::string path = std::string(VYRE_EGGLOG_DATA_DIR) + "/math.egg";
  std::ifstream file(path);
  if (!file) {
    WARN("no " << path << " (set VYRE_EGGLOG_DATA_DIR): this math.egg test is SKIPPED");
    return false;
  }
  std::stringstream text;
  text << file.rdbuf();
  out = read_test_program(text.str().c_str());
  return true;
}

constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

const char* const programs[] = {
    // repeated variables, literals, a nullary constructor
    R"((datatype M (Add M M) (Mul M M) (Num i64) (V String) (Zero))
(rewrite (Add x x) (Mul (Num 2) x))
(rewrite (Mul a b) (Mul b a))
(rewrite (Add a (Num 0)) a)
(rewrite (Num 0) (Zero))
(Add (V "a") (V "a"))
(Add (Add (V "a") (V "b")) (Add (V "a") (V "b")))
(Add (V "c") (Num 0))
(extract (Add (V "a") (V "a"))))",
    // let, depth 3, a rule that never matches
    R"((datatype M (Add M M) (Neg M) (V String) (G M))
(let $x (V "x"))
(let y (Neg $x))
(rewrite (Neg (Neg a)) a)
(rewrite (Neg (Add (Neg a) b)) (Add a (Neg b)))
(rewrite (G (G (G x))) x)
(rewrite (Add a b) (Add b a))
(Add $x (Neg y))
(Neg (Add (Neg (V "p")) (V "q")))
(extract (Add $x (Neg y))))",
    // two datatypes, growth
    R"((datatype E (Lit i64) (Plus E E) (Times E E))
(datatype S (Assign String E) (Seq S S))
(rewrite (Plus a b) (Plus b a))
(rewrite (Plus a (Plus b c)) (Plus (Plus a b) c))
(rewrite (Times a (Plus b c)) (Plus (Times a b) (Times a c)))
(rewrite (Seq (Assign v e) (Assign v e)) (Assign v e))
(Seq (Assign "x" (Times (Lit 2) (Plus (Lit 0) (Plus (Lit 5) (Lit 7))))) (Assign "x" (Lit 1)))
(extract (Assign "x" (Lit 1))))",
};

//! The small programs' run: six iterations past the program's own, every root extracted.
eq::execute_options small_program_options() {
  eq::execute_options options;
  options.extra_iterations = 6;
  options.extract_roots = true;
  return options;
}

//! One term and a rule that adds a G row and an F row per match, one match per F row: the
//! tables grow by one row each per iteration and the class ids by 2k in iteration k, so an
//! e-graph that keeps its capacity classes (its shape) for about 30 iterations, then outgrows
//! them (class ids 2 + k(k + 1) > 1024 at k = 32) and keeps the next ones for a dozen.
std::string chain_program(int iterations) {
  return "(datatype T (F T) (G T) (A))\n(rewrite (F x) (F (G x)))\n(F (A))\n(run " +
         std::to_string(iterations) + ")\n";
}

//! The CPU engine's run of `prog` (two threads), the oracle of the GPU and auto engines.
eq::execution cpu_execution(const eq::program& prog, const eq::execute_options& options) {
  eq::cpu_engine cpu(prog, 2);
  return eq::execute(prog, cpu, options);
}

}  // namespace

TEST_CASE("gpu engine: equal to the cpu engine on small programs", "[eqsat][gpu]") {
  auto gpu = gpu_backend::acquire(0);
  for (const char* text : programs) {
    const eq::program prog = read_test_program(text);
    const eq::execute_options options = small_program_options();
    const eq::execution want = cpu_execution(prog, options);
    auto engine = eq::gpu_engine<gpu_backend>::create(gpu, prog);  // throws on failure
    const eq::execution got = eq::execute(prog, engine, options);
    REQUIRE_FALSE(engine.failure());
    check_same(want, got);
  }
}

TEST_CASE("gpu engine: rebuilds of one shape replay one captured graph", "[eqsat][gpu]") {
  // 60 top-level terms (a rebuild each, and another when `extract_roots` adds them again) and
  // iterations that add a few rows: every table stays in its first capacity class, so the
  // first rebuild is launched, the second captures the shape and every later one replays it.
  std::string text = R"((datatype M (Add M M) (Mul M M) (Num i64) (V String))
(rewrite (Add a b) (Add b a))
(rewrite (Mul (Num 1) a) a)
)";
  for (int i = 0; i < 60; ++i)
    text += "(Add (Mul (Num " + std::to_string(i % 3) + ") (V \"v" + std::to_string(i) +
            "\")) (Num " + std::to_string(i) + "))\n";
  text += "(run 4)\n";
  const eq::program prog = read_test_program(text.c_str());
  eq::execute_options options;
  options.extract_roots = true;
  const eq::execution want = cpu_execution(prog, options);
  auto gpu = gpu_backend::acquire(0);
  auto engine = eq::gpu_engine<gpu_backend>::create(gpu, prog);  // throws on failure
  engine.capture_iterations(false);  // every iteration's rebuild on its own (counted below)
  const eq::execution got = eq::execute(prog, engine, options);
  REQUIRE_FALSE(engine.failure());
  check_same(want, got);
  const vyre::graph::cache_stats graphs = engine.rebuild_graph_stats();
  const std::uint64_t rebuilds = 2 * 60 + want.iterations.size();
  INFO("hits " << graphs.hits << ", captures " << graphs.captures << ", rebuilds " << rebuilds);
  CHECK(graphs.captures == 1);
  CHECK(graphs.misses == 1);
  CHECK(graphs.hits == rebuilds - 2);
}

TEST_CASE("gpu engine: iterations of one shape replay one captured graph", "[eqsat][gpu]") {
  // 45 iterations of `chain_program`: iterations 1 and 2 are launched (a shape's first two
  // meetings), iteration 3 captures the shape and 4-31 replay it; iteration 32's class ids
  // outgrow the graph, which leaves the e-graph unchanged and is dropped, and the iteration
  // runs launched (the union-find's next class); the next shape is captured at its third
  // meeting. With captures off, every iteration is launched.
  const eq::program prog = read_test_program(chain_program(45).c_str());
  eq::execute_options options;
  options.extract_roots = true;
  const eq::execution want = cpu_execution(prog, options);
  REQUIRE(want.iterations.size() == 45);
  const bool capture = GENERATE(true, false);
  CAPTURE(capture);
  auto gpu = gpu_backend::acquire(0);
  auto engine = eq::gpu_engine<gpu_backend>::create(gpu, prog);  // throws on failure
  engine.capture_iterations(capture);
  const eq::execution got = eq::execute(prog, engine, options);
  REQUIRE_FALSE(engine.failure());
  check_same(want, got);
  const vyre::graph::cache_stats graphs = engine.iteration_graph_stats();
  INFO("hits " << graphs.hits << ", misses " << graphs.misses << ", captures " << graphs.captures);
  if (capture) {
    CHECK(graphs.hits >= 28);     // iterations 4-31 at least
    CHECK(graphs.captures >= 2);  // the first shape, and one after it was outgrown
    // Every replayed iteration reported its phases' device times.
    for (const eq::iteration_stats& it : got.iterations)
      CHECK(it.search_seconds + it.apply_seconds + it.rebuild_seconds > 0);
  } else {
    CHECK(graphs.hits + graphs.misses + graphs.captures == 0);
  }
}

TEST_CASE("gpu engine: the node limit rolls the crossing iteration back", "[eqsat][gpu]") {
  auto gpu = gpu_backend::acquire(0);
  const eq::program prog = read_test_program(programs[2]);
  eq::execute_options free_run;
  free_run.extra_iterations = 6;
  eq::cpu_engine reference(prog, 2);
  const eq::execution unlimited = eq::execute(prog, reference, free_run);
  REQUIRE(unlimited.iterations.size() >= 4);
  // A limit between the sizes after iterations 2 and 3: iteration 3 is rolled back.
  eq::execute_options limited = free_run;
  limited.limits.node_limit = unlimited.iterations[1].enodes + 1;
  REQUIRE(limited.limits.node_limit < unlimited.iterations[2].enodes);

  eq::cpu_engine cpu(prog, 2);
  const eq::execution want = eq::execute(prog, cpu, limited);
  auto engine = eq::gpu_engine<gpu_backend>::create(gpu, prog);  // throws on failure
  const eq::execution got = eq::execute(prog, engine, limited);
  REQUIRE_FALSE(engine.failure());
  CHECK(got.stopped == eq::stop_reason::node_limit);
  REQUIRE(got.iterations.size() == 2);
  check_same(want, got);
  // The committed state is the second iteration's, and running on from it matches the CPU.
  check_same_stats(cpu.counts(), engine.counts());
  CHECK(engine.counts().enodes == unlimited.iterations[1].enodes);
  std::vector<std::uint32_t> every_rule;
  for (std::uint32_t r = 0; r < prog.rules.size(); ++r) every_rule.push_back(r);
  const eq::run_result more_cpu = cpu.run(2, every_rule);
  const eq::run_result more_gpu = engine.run(2, every_rule);
  REQUIRE_FALSE(engine.failure());
  REQUIRE(more_gpu.iterations.size() == more_cpu.iterations.size());
  for (std::size_t i = 0; i < more_cpu.iterations.size(); ++i)
    check_same_stats(more_cpu.iterations[i], more_gpu.iterations[i]);
}

TEST_CASE("gpu engine: a failed device allocation keeps the last committed iteration",
          "[eqsat][gpu]") {
  using vyre::testing::allocation_kind;
  using vyre::testing::scoped_allocation_fault;
  // A program that grows every iteration (a new shape each), and `chain_program`, whose
  // iterations from the third on run as a captured graph.
  const std::string text = GENERATE(std::string(programs[2]), chain_program(6));
  CAPTURE(text);
  const eq::program prog = read_test_program(text.c_str());
  eq::execute_options options;
  options.extra_iterations = 5;
  eq::cpu_engine cpu(prog, 2);
  const eq::execution want = eq::execute(prog, cpu, options);
  auto gpu = gpu_backend::acquire(0);
  {  // warm-up: kernel modules load once and stay
    auto warm = eq::gpu_engine<gpu_backend>::create(gpu, prog);
    (void)eq::execute(prog, warm, options);
  }
  // The Nth device allocation of a whole run (engine made, terms added, five iterations)
  // fails, N = 1, 2, ... until the run no longer reaches an Nth allocation.
  std::uint64_t injected = 0, mid_run = 0;
  for (std::uint64_t n = 1;; ++n) {
    INFO("device allocation " << n << " fails");
    REQUIRE(n < 10000);
    bool fired = false;
    try {
      scoped_allocation_fault fault(allocation_kind::device, n);
      auto engine = eq::gpu_engine<gpu_backend>::create(gpu, prog);
      engine.capture_iterations(true);
      const eq::execution got = eq::execute(prog, engine, options);
      fired = fault.fired();
      if (!fired) {
        REQUIRE_FALSE(engine.failure());
        check_same(want, got);
        break;
      }
      ++injected;
      // The failure is reported, the run stopped, and every iteration it committed is the CPU
      // engine's; the engine's state is the last of them.
      REQUIRE(engine.failure());
      CHECK(engine.failure()->code() == vyre::errc::out_of_memory);
      CHECK(got.stopped == eq::stop_reason::failed);
      REQUIRE(got.iterations.size() < want.iterations.size());
      for (std::size_t i = 0; i < got.iterations.size(); ++i)
        check_same_stats(want.iterations[i], got.iterations[i]);
      if (!got.iterations.empty()) {
        ++mid_run;
        const eq::iteration_stats now = engine.counts();
        CHECK(now.per_constructor == got.iterations.back().per_constructor);
        CHECK(now.eclasses == got.iterations.back().eclasses);
      }
    } catch (const vyre::error_exception& e) {  // `create` failed: the backend's policy throws
      ++injected;
      CHECK(e.error().code() == vyre::errc::out_of_memory);
    }
  }
  std::printf("eqsat gpu fault sweep: %llu injected device failures, %llu after an iteration\n",
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(mid_run));
  CHECK(injected >= 1);
  CHECK(mid_run >= 1);  // some failure hit a later iteration, after others were committed
}

TEST_CASE("auto engine: equal to the cpu engine at every crossover", "[eqsat][gpu][auto]") {
  for (const char* text : programs) {
    const eq::program prog = read_test_program(text);
    const eq::execute_options options = small_program_options();
    const eq::execution want = cpu_execution(prog, options);
    REQUIRE_FALSE(want.iterations.empty());
    check_auto(prog, options, want, never);  // the CPU engine throughout, no backend made
    check_auto(prog, options, want, 0);      // the GPU engine from the first iteration
    // Mid-run: the iteration after the middle one starts at the crossover.
    check_auto(prog, options, want, want.iterations[(want.iterations.size() - 1) / 2].enodes);
  }
}

TEST_CASE("auto engine: math.egg 1-9 with the handoff before iteration 6", "[eqsat][gpu][auto]") {
  eq::program prog;
  if (!read_math(prog)) return;
  eq::execute_options options;
  options.extra_iterations = 9;
  options.extract_roots = true;
  eq::cpu_engine cpu(prog, 2);
  const eq::execution want = eq::execute(prog, cpu, options);
  REQUIRE(want.iterations.size() == 9);
  const std::uint64_t crossover = want.iterations[4].enodes;  // 784: iteration 6 starts there
  auto_engine engine(prog, device_zero(), crossover, 2);
  const eq::execution got = eq::execute(prog, engine, options);
  REQUIRE_FALSE(engine.failure());
  CHECK_FALSE(engine.handoff_failure());
  CHECK(engine.on_gpu());
  check_same(want, got);
  CHECK(got.roots == want.roots);
  REQUIRE(got.iterations.size() == 9);
  CHECK(got.iterations[4].device == eq::device_kind::cpu);
  CHECK(got.iterations[5].device == eq::device_kind::gpu);
  check_devices(got, crossover);
  REQUIRE(got.extracts.size() == want.extracts.size());
  for (std::size_t i = 0; i < want.extracts.size(); ++i) {
    CHECK(got.extracts[i].eclass == want.extracts[i].eclass);
    CHECK(engine.find(want.extracts[i].eclass) == cpu.find(want.extracts[i].eclass));
  }
  check_auto(prog, options, want, 0);
  check_auto(prog, options, want, never);
}

TEST_CASE("auto engine: the node limit on either side of the handoff", "[eqsat][gpu][auto]") {
  eq::program prog;
  if (!read_math(prog)) return;
  eq::execute_options free_run;
  free_run.extra_iterations = 9;
  eq::cpu_engine reference(prog, 2);
  const eq::execution unlimited = eq::execute(prog, reference, free_run);
  REQUIRE(unlimited.iterations.size() == 9);
  std::vector<std::uint32_t> every_rule;
  for (std::uint32_t r = 0; r < prog.rules.size(); ++r) every_rule.push_back(r);
  struct limit_case {
    std::size_t handoff;  // the first iteration on the GPU (1-based)
    std::size_t kept;     // iterations committed under the limit
  };
  // After the handoff (iteration 8 rolled back on the GPU engine), and before it (iteration 5
  // rolled back on the CPU engine; the iterations run after it cross over).
  for (const limit_case lc : {limit_case{4, 7}, limit_case{7, 4}}) {
    INFO("handoff before iteration " << lc.handoff << ", " << lc.kept << " iterations kept");
    eq::execute_options limited = free_run;
    limited.limits.node_limit = unlimited.iterations[lc.kept - 1].enodes + 1;
    REQUIRE(limited.limits.node_limit < unlimited.iterations[lc.kept].enodes);
    const std::uint64_t crossover = unlimited.iterations[lc.handoff - 2].enodes;
    eq::cpu_engine cpu(prog, 2);
    const eq::execution want = eq::execute(prog, cpu, limited);
    auto_engine engine(prog, device_zero(), crossover, 2);
    const eq::execution got = eq::execute(prog, engine, limited);
    REQUIRE_FALSE(engine.failure());
    CHECK(got.stopped == eq::stop_reason::node_limit);
    REQUIRE(got.iterations.size() == lc.kept);
    check_same(want, got);
    check_devices(got, crossover);
    CHECK(engine.on_gpu() == (lc.handoff <= lc.kept + 1));
    // The committed state is the last kept iteration's; running on from it (past the handoff)
    // matches the CPU.
    check_same_stats(cpu.counts(), engine.counts());
    const std::uint64_t on = lc.handoff > lc.kept ? lc.handoff - lc.kept + 1 : 2;
    const eq::run_result more_cpu = cpu.run(on, every_rule);
    const eq::run_result more = engine.run(on, every_rule);
    REQUIRE_FALSE(engine.failure());
    CHECK(engine.on_gpu());
    REQUIRE(more.iterations.size() == more_cpu.iterations.size());
    for (std::size_t i = 0; i < more_cpu.iterations.size(); ++i) {
      check_same_stats(more_cpu.iterations[i], more.iterations[i]);
      CHECK(more.iterations[i].device == (more.iterations[i].iteration >= lc.handoff
                                              ? eq::device_kind::gpu
                                              : eq::device_kind::cpu));
    }
  }
}

TEST_CASE("auto engine: without a backend it stays on the cpu and says why", "[eqsat][gpu][auto]") {
  const eq::program prog = read_test_program(programs[2]);
  eq::execute_options options;
  options.extra_iterations = 6;
  options.extract_roots = true;
  eq::cpu_engine cpu(prog, 2);
  const eq::execution want = eq::execute(prog, cpu, options);
  const auto no_device = []() -> gpu_backend {
    throw vyre::error_exception(vyre::error(vyre::errc::unsupported, "test: no device"));
  };
  for (const auto& factory :
       {auto_engine::backend_factory(no_device), auto_engine::backend_factory()}) {
    auto_engine engine(prog, factory, 0, 2);
    const eq::execution got = eq::execute(prog, engine, options);
    CHECK_FALSE(engine.failure());
    REQUIRE(engine.handoff_failure());
    CHECK_FALSE(engine.on_gpu());
    check_same(want, got);
    CHECK(got.roots == want.roots);
    check_devices(got, 0, false);
  }
}
