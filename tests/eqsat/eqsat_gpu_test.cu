// SPDX-License-Identifier: Apache-2.0
// vyre::eqsat::gpu_offload (the GPU engine under a session) against the plain CPU session:
// per iteration the ruleset, the rows of every function and the e-classes equal, the same
// stop, the same outputs (sizes as text; extracts by cost and variants by count, since the
// engines order rows differently and a tie between equal-cost terms may fall either way), the
// same final database sizes. Programs: egglog's small ones, a chain (its rebuilds replay a
// captured graph), programs mixing rulesets the device runs with ones it does not (the state
// moves to the device and back, across globals, push/pop, checks and :until), math.egg
// (VYRE_EGGLOG_DATA_DIR; the run reports SKIPPED, exit 77, when it is missing and nothing
// failed), the node limit rolled back on the device, the automatic mode's crossover and its
// missing device, and every device allocation of a run failing in turn. The gpu_engine's own
// calls (create, run_iteration, download) against cpu_engine on one database.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener that reports a skipped math.egg
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/core/fault_injection.hpp>
#include <vyre/eqsat.cuh>
#include <vyre/runtime.cuh>

#include "loop_drivers.hpp"

#ifndef VYRE_TEST_SKIP_CODE
#define VYRE_TEST_SKIP_CODE 77
#endif

namespace eq = vyre::eqsat;
using gpu_backend = vyre::backend<>;  // errors thrown
using gpu_offload = eq::gpu_offload<gpu_backend>;

namespace {

//! A gpu_offload on device 0 as the tests use it.
std::shared_ptr<gpu_offload> make_offload(
    gpu_offload::backend_factory acquire, vyre::device_choice mode,
    std::uint64_t crossover = eq::default_gpu_crossover_enodes) {
  auto made = std::make_shared<gpu_offload>(std::move(acquire), mode, crossover);
  made->capture_rebuilds(vyre_test::capture_loops());
  return made;
}

//! Set when a test could not run for want of its data: the run then exits SKIPPED (unless
//! something failed), never passed.
bool data_missing = false;

struct skip_reporter : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunEnded(const Catch::TestRunStats& stats) override {
    if (!data_missing || stats.totals.assertions.failed != 0) return;
    std::printf(
        "SKIPPED: math.egg is missing (set VYRE_EGGLOG_DATA_DIR); its tests did not run.\n");
    std::fflush(stdout);
    std::_Exit(VYRE_TEST_SKIP_CODE);
  }
};
CATCH_REGISTER_LISTENER(skip_reporter)

//! What a session did with a program.
struct run_result {
  bool ok = false;
  std::string error;
  vyre::errc code = vyre::errc::invalid_state;
  std::vector<eq::iteration_record> iterations;
  std::vector<eq::program_output> outputs;
  eq::run_stop stopped = eq::run_stop::none;
  std::vector<std::uint64_t> sizes;  //!< rows per function at the end (the host's database)
  std::uint64_t eclasses = 0;
};

//! Runs `text` on a session with `offload` (null: the CPU alone) and brings the state back.
run_result run_program(const std::string& text, std::shared_ptr<eq::iteration_offload> offload,
                       std::uint64_t node_limit = 0) {
  eq::session_options options;
  options.threads = 2;
  options.node_limit = node_limit;
  options.offload = std::move(offload);
  options.on_warning = [](const std::string&) {};
  eq::session s(std::move(options));
  run_result out;
  auto ran = s.run_text(text, "t.egg");
  if (ran) ran = s.finish();
  out.ok = static_cast<bool>(ran);
  if (!ran) {
    out.error = s.describe(ran.error());
    out.code = ran.error().code();
    (void)s.finish();  // the last committed state, back on the host
  }
  out.iterations = s.iterations();
  out.outputs = s.outputs();
  out.stopped = s.stopped();
  out.sizes = s.sizes();
  out.eclasses = s.eclasses();
  return out;
}

std::shared_ptr<gpu_offload> on_gpu() {
  return make_offload([] { return gpu_backend::acquire(0); }, vyre::device_choice::gpu);
}

std::size_t lines(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += c == '\n' ? 1 : 0;
  return n;
}

void check_same_iteration(const eq::iteration_record& cpu, const eq::iteration_record& gpu) {
  INFO("iteration " << cpu.iteration << " (ruleset \"" << cpu.ruleset << "\", " << gpu.device
                    << ")");
  CHECK(gpu.iteration == cpu.iteration);
  CHECK(gpu.ruleset == cpu.ruleset);
  CHECK(gpu.sizes == cpu.sizes);
  CHECK(gpu.rows == cpu.rows);
  CHECK(gpu.eclasses == cpu.eclasses);
  CHECK(gpu.changed == cpu.changed);
}

//! Everything but the seconds, the unions (the device counts the classes merged away) and the
//! matches equal; the outputs as the file comment says. Both engines search seminaively, but
//! they number new classes in their own orders, so a union may keep a different
//! representative, and the rows it stamps new (those of the class not kept) differ.
void check_same(const run_result& cpu, const run_result& gpu) {
  INFO("cpu error: " << cpu.error << "; gpu error: " << gpu.error);
  REQUIRE(cpu.ok);
  REQUIRE(gpu.ok);
  REQUIRE(gpu.iterations.size() == cpu.iterations.size());
  for (std::size_t i = 0; i < cpu.iterations.size(); ++i)
    check_same_iteration(cpu.iterations[i], gpu.iterations[i]);
  CHECK(gpu.stopped == cpu.stopped);
  CHECK(gpu.sizes == cpu.sizes);
  CHECK(gpu.eclasses == cpu.eclasses);
  REQUIRE(gpu.outputs.size() == cpu.outputs.size());
  for (std::size_t i = 0; i < cpu.outputs.size(); ++i) {
    const eq::program_output& a = cpu.outputs[i];
    const eq::program_output& b = gpu.outputs[i];
    INFO("output " << i << ": cpu " << a.text << "gpu " << b.text);
    REQUIRE(a.type == b.type);
    switch (a.type) {
      case eq::program_output::kind::extract:
        CHECK(a.cost == b.cost);
        break;
      case eq::program_output::kind::variants:
      case eq::program_output::kind::print_function:
        CHECK(lines(a.text) == lines(b.text));
        break;
      default:
        CHECK(a.text == b.text);
    }
  }
}

//! Runs `text` on the CPU engine alone and with the GPU offload, both failing: the same error,
//! from the same state. @returns the offload's run.
run_result check_same_error(const char* text) {
  const run_result want = run_program(text, nullptr);
  run_result got = run_program(text, on_gpu());
  REQUIRE_FALSE(want.ok);
  REQUIRE_FALSE(got.ok);
  CHECK(got.code == want.code);
  CHECK(got.error == want.error);
  CHECK(got.sizes == want.sizes);
  return got;
}

//! Iterations that ran on the device (all of them, for an always-mode run of GPU rules).
std::size_t on_device_iterations(const std::vector<eq::iteration_record>& iterations) {
  std::size_t n = 0;
  for (const eq::iteration_record& it : iterations) n += it.device == "gpu" ? 1 : 0;
  return n;
}
std::size_t on_device(const run_result& r) {
  return on_device_iterations(r.iterations);
}

//! The text of the file at `path`; nothing when it cannot be opened.
std::optional<std::string> file_text(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::nullopt;
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

//! math.egg from VYRE_EGGLOG_DATA_DIR; empty (and the run marked SKIPPED) when it is missing.
std::string math_program() {
  const std::string path = std::string(VYRE_EGGLOG_DATA_DIR) + "/math.egg";
  std::optional<std::string> text = file_text(path);
  if (!text) {
    WARN("no " << path << " (set VYRE_EGGLOG_DATA_DIR): this math.egg test is SKIPPED");
    data_missing = true;
    return {};
  }
  return *std::move(text);
}

//! The program `name` of tests/eqsat/programs (which the Python tests run too, through
//! rewrite_programs.py), then `runs`: what to run and print after it.
std::string shared_program(const char* name, const char* runs) {
  const std::string path = std::string(VYRE_EQSAT_PROGRAMS_DIR) + "/" + name + ".egg";
  std::optional<std::string> text = file_text(path);
  if (!text) FAIL("no " << path);
  return *text + runs;
}

//! Built on first use (a shared program is read from its file).
const std::vector<std::string>& small_programs() {
  static const std::vector<std::string> programs = {
      // repeated variables, literals, a nullary constructor, commutativity
      R"((datatype M (Add M M) (Mul M M) (Num i64) (V String) (Zero))
(rewrite (Add x x) (Mul (Num 2) x))
(rewrite (Mul a b) (Mul b a))
(rewrite (Add a (Num 0)) a)
(rewrite (Num 0) (Zero))
(Add (V "a") (V "a"))
(Add (Add (V "a") (V "b")) (Add (V "a") (V "b")))
(Add (V "c") (Num 0))
(run 6)
(extract (Add (V "a") (V "a")))
(print-size))",
      // literals in patterns, a rule that only adds a row
      shared_program("literals_in_patterns", R"((run 6)
(extract (Add (V "y") (V "zero")))
(print-size Add))"),
      // birewrite, depth 3, a rule that never matches
      R"((datatype M (Add M M) (Mul M M) (Neg M) (V String) (G M))
(birewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rewrite (Neg (Add (Mul a b) c)) (Add (Neg (Mul a b)) (Neg c)))
(rewrite (Neg (Neg (Neg a))) (Neg a))
(rewrite (G (G (G x))) x)
(Mul (V "x") (Add (V "y") (V "z")))
(Neg (Add (Mul (V "a") (V "b")) (V "c")))
(Neg (Neg (Neg (V "q"))))
(run 6)
(extract (Neg (Neg (Neg (V "q")))))
(extract (Add (Mul (V "x") (V "y")) (Mul (V "x") (V "z"))) 3))",
      // globals (id literals in a rule's query and actions), two datatypes, growth
      R"((datatype E (Lit i64) (Plus E E) (Times E E) (Neg E))
(datatype S (Assign String E) (Seq S S))
(let $x (Plus (Lit 0) (Plus (Lit 5) (Lit 7))))
(let $two (Lit 2))
(rewrite (Plus a b) (Plus b a))
(rewrite (Plus a (Plus b c)) (Plus (Plus a b) c))
(rewrite (Times a (Plus b c)) (Plus (Times a b) (Times a c)))
(rewrite (Times $two a) (Plus a a))
(rewrite (Neg (Neg a)) $x)
(rewrite (Seq (Assign v e) (Assign v e)) (Assign v e))
(Seq (Assign "x" (Times $two $x)) (Assign "x" (Lit 1)))
(Neg (Neg (Lit 9)))
(run 6)
(check (= (Neg (Neg (Lit 9))) $x))
(extract (Times $two $x))
(print-size))",
      // relations: a rule whose head only adds a relation's row, a rule matching it
      R"((datatype N (Z) (S N) (P N N))
(relation le (N N))
(rule ((S x)) ((le x (S x))))
(rule ((le a b) (le b c)) ((le a c)))
(rewrite (P a b) (P b a))
(P (S (S (S (Z)))) (S (Z)))
(run 8)
(print-size le))",
      // atoms that share no column (the second scans its table), a literal key
      R"((datatype M (V String) (N i64) (P M M))
(rule ((= a (V s)) (= b (V t))) ((P a b)))
(rule ((P a (V "y")) (N 3)) ((union a (N 3))))
(V "x")
(V "y")
(V "z")
(N 3)
(run 4)
(print-size))",
      // primitives on the device: constant folding (two calls, the second reading the first), a
      // filter and a binding primitive whose result a later atom looks up, `!=` of two classes,
      // a division by zero and a remainder by zero that drop their matches
      R"((datatype M (Num i64) (Add M M) (Mul M M) (Half M) (V String))
(rewrite (Add (Num a) (Num b)) (Num (+ a b)))
(rewrite (Mul (Num a) (Num b)) (Num (* (+ a 0) b)))
(rewrite (Add a b) (Add b a))
(rule ((Num a) (< a 40) (= b (* a 2)) (Num b)) ((union (Half (Num b)) (Num a))))
(rule ((= x (Add p q)) (!= p q) (= p (Num n)) (<= n 3)) ((union x (Add q p))))
(rule ((Num a) (Num b) (= c (/ a b)) (> c 4) (< c 8)) ((Num (- c 1))))
(rule ((Num a) (= r (% a 0))) ((V "never")))
(let $e (Add (Mul (Num 3) (Num 4)) (Add (Num 5) (Num 0))))
(Num 24)
(Num 10)
(Num 20)
(Num 6)
(Num 30)
(run 6)
(check (= (Half (Num 20)) (Num 10)))
(extract $e)
(print-size))",
      // analyses on the device: functions merged by min, max and or, read by the query and by a
      // lookup in the actions of a :naive rule, two sets in one head, a set and a union in one
      // head
      R"((datatype E (Num i64) (Var String) (Add E E) (Mul E E))
(function cval (E) i64 :merge (min old new))
(function depth (E) i64 :merge (max old new))
(function known (E) bool :merge (or old new))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rule ((= e (Num n))) ((set (cval e) n) (set (known e) true)))
(rule ((= e (Add a b)) (= x (cval a)) (= t (known b)))
      ((set (cval e) (+ x (cval b))) (set (known e) t)) :naive)
(rule ((= e (Mul a b)) (= x (cval a)) (= y (cval b)) (< x 1000) (< y 1000))
      ((set (cval e) (* x y)) (union e (Num (* x y)))))
(rule ((= e (Add a b)) (= x (depth a)) (= y (depth b))) ((set (depth e) (+ 1 (max x y)))))
(rule ((= e (Mul a b)) (= x (depth a)) (= y (depth b))) ((set (depth e) (+ 1 (max x y)))))
(rule ((= e (Var s))) ((set (depth e) 0)))
(rule ((= e (Num n))) ((set (depth e) 0)))
(let $e (Add (Mul (Num 2) (Add (Num 3) (Var "x"))) (Mul (Num 4) (Num 5))))
(Add (Num 1) (Mul (Num 2) (Num 3)))
(run 5)
(check (= (cval (Mul (Num 4) (Num 5))) 20))
(check (= (cval (Add (Num 1) (Mul (Num 2) (Num 3)))) 7))
(print-function cval 40)
(print-size))",
      // shortest paths to a fixpoint: the last iterations only lower values (no row is added),
      // which must count as a change, or saturate would stop early
      R"((datatype N (V i64))
(function w (N N) i64 :merge (min old new))
(function dist (N) i64 :merge (min old new))
(relation reached (N))
(rule ((= d (dist a)) (= c (w a b))) ((set (dist b) (+ d c)) (reached b)))
(set (w (V 0) (V 1)) 1)
(set (w (V 1) (V 2)) 1)
(set (w (V 2) (V 3)) 1)
(set (w (V 0) (V 3)) 10)
(set (w (V 3) (V 4)) 1)
(set (w (V 4) (V 1)) 1)
(set (w (V 0) (V 4)) 30)
(set (dist (V 0)) 0)
(run-schedule (saturate (run)))
(check (= (dist (V 4)) 4))
(check (= (dist (V 3)) 3))
(print-function dist 10)
(print-size))",
      // subsumption on the device: folded sums and products subsumed (a rule's subsume and a
      // :subsume rewrite), so commutativity no longer matches them; a row subsumed before the
      // device takes the state
      R"((datatype M (Num i64) (Add M M) (Mul M M) (V String))
(rule ((= e (Add (Num a) (Num b))) (= s (+ a b)))
      ((union e (Num s)) (subsume (Add (Num a) (Num b)))))
(rewrite (Mul (Num a) (Num b)) (Num (* a b)) :subsume)
(rewrite (Add a b) (Add b a))
(rewrite (Mul a b) (Mul b a))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(let $e (Mul (Num 2) (Add (Num 3) (Add (Num 4) (V "x")))))
(Add (Num 1) (Num 2))
(Add (V "y") (V "z"))
(subsume (Add (V "y") (V "z")))
(run 5)
(check (= (Add (Num 1) (Num 2)) (Num 3)))
(extract $e)
(print-size))",
  };
  return programs;
}

//! One term and a rule that adds a G row and an F row per match, one match per F row: the
//! tables grow by one row each per iteration, so they keep their capacity classes (the rebuild's
//! shape) for many iterations. `print_size`: a print-size after the run (which brings the state
//! back to the host).
std::string chain_program(int iterations, bool print_size = true) {
  return "(datatype T (F T) (G T) (A))\n(rewrite (F x) (F (G x)))\n(F (A))\n(run " +
         std::to_string(iterations) + ")\n" + (print_size ? "(print-size)\n" : "");
}

//! Rulesets the device runs (`algebra`, the default one) and one it does not (`fold`: a String
//! primitive in its queries), so iterations move the state to the device and back; globals,
//! push/pop, a check, :until and a combined ruleset of both kinds between them.
const char* const mixed_program = R"((datatype M (Num i64) (Add M M) (Mul M M) (V String))
(ruleset algebra)
(ruleset fold)
(ruleset more)
(let $one (Num 1))
(rewrite (Add a b) (Add b a) :ruleset algebra)
(rewrite (Mul a $one) a :ruleset algebra)
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)) :ruleset algebra)
(rule ((= e (Add (Num a) (Num b))) (= s (to-string a))) ((union e (Num (+ a b)))) :ruleset fold)
(rule ((= e (Mul (Num a) (Num b))) (= s (to-string b))) ((union e (Num (* a b)))) :ruleset fold)
(rewrite (Mul a b) (Mul b a) :ruleset more)
(unstable-combined-ruleset both algebra fold)
(unstable-combined-ruleset device algebra more)
(Mul (Add (Num 2) (Num 3)) (Add (V "x") (Mul (Num 4) $one)))
(run-schedule (repeat 2 (seq (run algebra) (run fold))))
(print-size)
(push)
(run device 2)
(print-size)
(pop)
(run algebra 1)
(check (= (Num 5) (Add (Num 3) (Num 2))))
(run-schedule (repeat 3 (run both)))
(run device 3 :until (= (Num 20) (Mul (Num 4) (Num 5))))
(Add (V "y") (Num 0))
(run-schedule (saturate (run fold)) (repeat 2 (run algebra)))
(extract (Mul (Add (Num 2) (Num 3)) (Add (V "x") (Mul (Num 4) $one))))
(print-size))";

}  // namespace

TEST_CASE("gpu offload: equal to the cpu session on small programs", "[eqsat][gpu]") {
  for (const std::string& text : small_programs()) {
    INFO(text);
    const run_result want = run_program(text, nullptr);
    const run_result got = run_program(text, on_gpu());
    check_same(want, got);
    CHECK(on_device(got) == got.iterations.size());
    CHECK_FALSE(got.iterations.empty());
  }
}

// [captured_rebuild]: left out under racecheck and synccheck (scripts/reliability.sh), which
// cannot follow CUB's sorts inside the captured graph's conditional loop.
TEST_CASE("gpu offload: a chain's rebuilds replay one captured graph",
          "[eqsat][gpu][captured_rebuild]") {
  // The tables grow by one row each per iteration: they keep their capacity classes, so a
  // rebuild shape comes back and is replayed.
  const std::string text = chain_program(45, false);  // the run last: the device holds it
  const run_result want = run_program(text, nullptr);
  REQUIRE(want.iterations.size() == 45);
  auto offload = on_gpu();
  offload->capture_rebuilds(true);  // what this test is about, whatever the environment says
  eq::session_options options;
  options.threads = 2;
  options.offload = offload;
  eq::session s(options);
  REQUIRE(s.run_text(text, "chain.egg"));
  REQUIRE(offload->holds_state());
  REQUIRE(offload->engine() != nullptr);
  const vyre::graph::cache_stats graphs = offload->engine()->rebuild_graph_stats();
  INFO("hits " << graphs.hits << ", captures " << graphs.captures);
  CHECK(graphs.captures >= 1);
  CHECK(graphs.hits >= 30);
  REQUIRE(s.finish());
  CHECK_FALSE(offload->holds_state());
  run_result got;
  got.ok = true;
  got.iterations = s.iterations();
  got.outputs = s.outputs();
  got.stopped = s.stopped();
  got.sizes = s.sizes();
  got.eclasses = s.eclasses();
  check_same(want, got);
  CHECK(on_device(got) == 45);
  CHECK(offload->iterations() == 45);
}

TEST_CASE("gpu offload: rulesets it runs and rulesets it does not, in turn", "[eqsat][gpu]") {
  const run_result want = run_program(mixed_program, nullptr);
  const run_result got = run_program(mixed_program, on_gpu());
  check_same(want, got);
  std::size_t gpu = 0, cpu = 0;
  for (const eq::iteration_record& it : got.iterations) {
    INFO("iteration " << it.iteration << " of " << it.ruleset << " on the " << it.device);
    const bool device_rules = it.ruleset == "algebra" || it.ruleset == "device";
    CHECK(it.device == (device_rules ? "gpu" : "cpu"));
    (device_rules ? gpu : cpu) += 1;
  }
  CHECK(gpu >= 6);
  CHECK(cpu >= 4);
}

TEST_CASE("gpu offload: a primitive that meets a negative i64 hands its ruleset to the cpu",
          "[eqsat][gpu]") {
  // `fold` makes -3 in its first iteration (2 - 5), which the device cannot intern: that
  // iteration is rolled back and runs on the CPU engine, as do fold's later ones. `filter` then
  // meets -3 in its query. `grow` keeps running on the device.
  const char* const text = R"((datatype M (Num i64) (Sub M M) (Pair M M))
(relation Small (M))
(ruleset fold)
(ruleset grow)
(ruleset filter)
(rewrite (Sub (Num a) (Num b)) (Num (- a b)) :ruleset fold)
(rewrite (Sub a b) (Pair b a) :ruleset grow)
(rewrite (Pair a b) (Pair b a) :ruleset grow)
(rule ((Num a) (< a 1)) ((Small (Num a))) :ruleset filter)
(Sub (Num 2) (Num 5))
(Sub (Num 7) (Num 1))
(run-schedule (repeat 3 (seq (run grow) (run fold) (run filter))))
(check (Small (Num -3)))
(print-size))";
  const run_result want = run_program(text, nullptr);
  const run_result got = run_program(text, on_gpu());
  check_same(want, got);
  REQUIRE(got.iterations.size() == 9);
  for (const eq::iteration_record& it : got.iterations) {
    INFO("iteration " << it.iteration << " of " << it.ruleset << " on the " << it.device);
    CHECK(it.device == (it.ruleset == "grow" ? "gpu" : "cpu"));
  }
}

TEST_CASE("gpu offload: a database the device cannot hold stays on the cpu", "[eqsat][gpu]") {
  // A function over an eq sort holds ids and is merged by `+`, which the device does not fold:
  // unions on the device would leave its rows behind, so every iteration runs on the CPU engine.
  const char* text = R"((datatype M (Add M M) (V String))
(function size (M) i64 :merge (+ old new))
(rewrite (Add a b) (Add b a))
(Add (V "a") (V "b"))
(set (size (V "a")) 1)
(run 3)
(print-size))";
  const run_result want = run_program(text, nullptr);
  auto offload = on_gpu();
  const run_result got = run_program(text, offload);
  check_same(want, got);
  CHECK_FALSE(got.iterations.empty());
  CHECK(on_device(got) == 0);
  CHECK(offload->backend() == nullptr);  // never needed: no CUDA call was made for it
}

//! Runs `text` on the CPU engine alone and with the GPU offload: `check_same`, and every
//! iteration of the offload's run on the device. @returns both runs (the CPU engine's first).
std::pair<run_result, run_result> check_on_device(const char* text) {
  run_result want = run_program(text, nullptr);
  run_result got = run_program(text, on_gpu());
  check_same(want, got);
  REQUIRE_FALSE(got.iterations.empty());
  CHECK(on_device(got) == got.iterations.size());
  return {std::move(want), std::move(got)};
}

TEST_CASE("gpu offload: functions merged by new or with :no-merge run on the device, seminaive",
          "[eqsat][gpu]") {
  SECTION("a set that a naive search would apply again is applied once") {
    // `one` comes after `step`: matched again every iteration (naively), it would reset every
    // tag to 1. Seminaive, it fires once per new S row, and `step` carries the tags up.
    const char* text = R"((datatype N (Z) (S N))
(function tag (N) i64 :merge new)
(rule ((= e (Z))) ((set (tag e) 0)) :name "zero")
(rule ((= e (S x)) (= d (tag x))) ((set (tag e) (+ d 10))) :name "step")
(rule ((= e (S x))) ((set (tag e) 1)) :name "one")
(let $top (S (S (S (Z)))))
(run 6)
(check (= (tag $top) 30))
(print-function tag)
(print-size))";
    const auto [want, got] = check_on_device(text);
    // The same matches (no union: every row is new to both engines at the same iteration),
    // each found once, by the iteration whose rows made it.
    for (std::size_t i = 0; i < got.iterations.size(); ++i) {
      INFO("iteration " << i);
      CHECK(got.iterations[i].matches == want.iterations[i].matches);
    }
  }
  SECTION("an e-class-valued :merge new function folds the rows that congruence merges") {
    // (Neg (Neg a)) becomes a: the keys of `dtype` at both classes become one key, whose rows
    // the rebuild folds by `new` on both engines.
    const char* text = R"((datatype T (F32) (I32))
(datatype E (Leaf T) (Neg E) (Cast E T))
(function dtype (E) T :merge new)
(rule ((= e (Leaf t))) ((set (dtype e) t)))
(rule ((= e (Neg x)) (= t (dtype x))) ((set (dtype e) t)))
(rule ((= e (Cast x t))) ((set (dtype e) t)))
(rewrite (Neg (Neg x)) x)
(let $a (Neg (Neg (Leaf (F32)))))
(let $c (Cast $a (I32)))
(run 4)
(check (= (dtype $a) (F32)))
(check (= (dtype $c) (I32)))
(print-function dtype)
(print-size))";
    (void)check_on_device(text);
  }
  SECTION("a :no-merge function runs there until two values meet, which the CPU reports") {
    const char* agree = R"((datatype N (Z) (S N))
(function g (N) i64 :no-merge)
(rule ((= e (S x))) ((set (g e) 7)))
(rule ((= e (S x)) (= v (g x))) ((set (g e) 7)))
(S (S (Z)))
(run 3)
(print-function g)
(print-size))";
    (void)check_on_device(agree);
    const char* conflict = R"((datatype N (Z) (S N))
(function g (N) i64 :no-merge)
(rule ((= e (S x))) ((set (g e) 1)))
(rule ((= e (S x))) ((set (g e) 2)))
(S (Z))
(run 1))";
    (void)check_same_error(conflict);
  }
}

TEST_CASE("gpu offload: rules and rows past the narrow kernels' arrays run on the device",
          "[eqsat][gpu]") {
  // `chain` joins 11 atoms (the narrow class holds 8) and makes a row of 11 columns (8);
  // `swap` reads and writes those rows; `tower`, a query of 3 atoms, appends 18 rows per
  // match (16). The wide class's kernels read their query and head from device memory, the
  // rebuild keeps 32 columns a row for the wide table, and every iteration stays on the device.
  const char* text = R"((datatype N (Z) (S N))
(constructor Wide (N N N N N N N N N N) N)
(rule ((= a (S b)) (= b (S c)) (= c (S d)) (= d (S e)) (= e (S f)) (= f (S g)) (= g (S h))
       (= h (S i)) (= i (S j)) (= j (S k)) (= k (Z)))
      ((let w (Wide a b c d e f g h i j)) (union w a)) :name "chain")
(rewrite (Wide a b c d e f g h i j) (Wide b a c d e f g h i j) :name "swap")
(rule ((= t (S (S (Z)))))
      ((S (S (S (S (S (S (S (S (S (S (S (S (S (S (S (S (S (S t))))))))))))))))))) :name "tower")
(let $top (S (S (S (S (S (S (S (S (S (S (S (S (Z))))))))))))))
(run 4)
(check (= (Wide (S (S (S (S (S (S (S (S (S (S (Z)))))))))))
                (S (S (S (S (S (S (S (S (S (Z))))))))))
                (S (S (S (S (S (S (S (S (Z))))))))) (S (S (S (S (S (S (S (Z))))))))
                (S (S (S (S (S (S (Z))))))) (S (S (S (S (S (Z)))))) (S (S (S (S (Z)))))
                (S (S (S (Z)))) (S (S (Z))) (S (Z)))
          (S (S (S (S (S (S (S (S (S (S (Z)))))))))))))
(print-function Wide)
(print-size))";
  const auto [want, got] = check_on_device(text);
  REQUIRE_FALSE(got.outputs.empty());
  CHECK(got.outputs.back().text.find("(Wide 2)") != std::string::npos);
  // Automatic mode leaves them on the CPU engine, saying why, even past the crossover.
  auto automatic =
      make_offload([] { return gpu_backend::acquire(0); }, vyre::device_choice::automatic, 0);
  const run_result kept = run_program(text, automatic);
  check_same(want, kept);
  CHECK(on_device(kept) == 0);
  REQUIRE_FALSE(kept.iterations.empty());
  CHECK(kept.iterations[0].cpu_reason.find("narrow kernels") != std::string::npos);
}

TEST_CASE("gpu offload: deletes and panics run on the device as on the cpu", "[eqsat][gpu]") {
  SECTION("a deleted row goes before the rebuild, and no match found again makes it again") {
    // `mark` matches every S row; `unmark` deletes the mark of (S (Z)) and the cost of the
    // same class. Naively, `mark` and `price` would write both again every iteration.
    const char* text = R"((datatype N (Z) (S N) (Mark N))
(function cost (N) i64 :merge (min old new))
(rule ((= e (S x))) ((Mark e)) :name "mark")
(rule ((= e (S x))) ((set (cost e) 5)) :name "price")
(rule ((= s (S (Z))) (= m (Mark s)) (= c (cost s))) ((delete (Mark s)) (delete (cost s))) :name "unmark")
(let $top (S (S (S (Z)))))
(run 6)
(print-function Mark)
(print-function cost)
(print-size))";
    const auto [want, got] = check_on_device(text);
    for (std::size_t i = 0; i < got.iterations.size(); ++i) {
      INFO("iteration " << i);
      CHECK(got.iterations[i].matches == want.iterations[i].matches);  // no unions
    }
  }
  SECTION("a match of a rule that panics stops the run with its message, from the CPU engine") {
    const char* text = R"((datatype N (Z) (S N))
(rule ((= e (S (S x)))) ((panic "too deep")))
(S (Z))
(run 2)
(S (S (Z)))
(run 1))";
    const run_result got = check_same_error(text);
    CHECK(got.error.find("too deep") != std::string::npos);
    REQUIRE_FALSE(got.iterations.empty());
    CHECK(got.iterations[0].device == "gpu");  // no match yet: the device ran it
  }
}

TEST_CASE("gpu offload: an analysis the device cannot decide goes to the cpu, exactly",
          "[eqsat][gpu]") {
  SECTION("a function holding a negative i64 keeps the run on the CPU engine") {
    const char* text = R"((datatype M (Mul M M) (V String))
(function lo (M) i64 :merge (max old new))
(rule ((= e (Mul a b)) (= x (lo a)) (= y (lo b))) ((set (lo e) (* x y))))
(let $x (V "x"))
(Mul $x $x)
(set (lo $x) -10)
(run 2)
(check (= (lo (Mul $x $x)) 100))
(print-size))";
    const run_result want = run_program(text, nullptr);
    const run_result got = run_program(text, on_gpu());
    check_same(want, got);
    REQUIRE_FALSE(got.iterations.empty());
    CHECK(on_device(got) == 0);
    CHECK(got.iterations[0].cpu_reason.find("outside [0, 2^31)") != std::string::npos);
  }
  SECTION("a set of a negative i64 read from a row hands the iteration to the CPU engine") {
    // `grow` runs on the device until `analyse`, handed back, writes -4 into `cval`: the state
    // then stays on the host.
    const char* text = R"((datatype M (Num i64) (Add M M))
(function cval (M) i64 :merge (min old new))
(ruleset analyse)
(ruleset grow)
(rule ((= e (Num n))) ((set (cval e) n)) :ruleset analyse)
(rewrite (Add a b) (Add b a) :ruleset grow)
(Add (Num 3) (Num -4))
(run-schedule (repeat 2 (seq (run grow) (run analyse))))
(check (= (cval (Num -4)) -4))
(print-size))";
    const run_result want = run_program(text, nullptr);
    const run_result got = run_program(text, on_gpu());
    check_same(want, got);
    REQUIRE(got.iterations.size() == 4);
    for (std::size_t i = 0; i < got.iterations.size(); ++i) {
      const eq::iteration_record& it = got.iterations[i];
      INFO("iteration " << it.iteration << " of " << it.ruleset << " on the " << it.device);
      CHECK(it.device == (i == 0 ? "gpu" : "cpu"));
    }
    CHECK(got.iterations[1].cpu_reason.find("does not decide") != std::string::npos);
    CHECK(got.iterations[2].cpu_reason.find("outside [0, 2^31)") != std::string::npos);
  }
  SECTION("a lookup of a key the function lacks is the CPU engine's error") {
    const char* text = R"((datatype M (Num i64) (Add M M))
(function cval (M) i64 :merge (min old new))
(rule ((= e (Add a b)) (= x (cval a))) ((set (cval e) (+ x (cval b)))) :naive)
(set (cval (Num 1)) 1)
(Add (Num 1) (Num 2))
(run 1))";
    (void)check_same_error(text);
  }
}

TEST_CASE("gpu offload: subsumed rows come back subsumed", "[eqsat][gpu]") {
  // `fold` (on the device) subsumes (Add (Num 5) (V "y")); `probe` (a String primitive keeps it
  // on the CPU engine) would match that row if the state lost its subsumption.
  const char* const text = R"((datatype M (Num i64) (Add M M) (V String))
(ruleset fold)
(ruleset probe)
(rule ((= e (Add (Num a) b))) ((subsume (Add (Num a) b))) :ruleset fold)
(rewrite (Add a b) (Add b a) :ruleset fold)
(rule ((= e (Add (Num 5) (V y))) (= s (to-string 5))) ((V "seen")) :ruleset probe)
(Add (Num 5) (V "y"))
(Add (V "p") (V "q"))
(run fold 3)
(run probe 1)
(print-size))";
  const run_result want = run_program(text, nullptr);
  const run_result got = run_program(text, on_gpu());
  check_same(want, got);
  // fold saturates after its second iteration; probe's one runs on the CPU engine.
  REQUIRE(got.iterations.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(got.iterations[i].device == (i < 2 ? "gpu" : "cpu"));
  REQUIRE_FALSE(got.outputs.empty());
  CHECK(got.outputs.back().text.find("(V 3)") != std::string::npos);  // y, p, q: no "seen"
}

//! An extraction oracle that shares no code with `eq::extractor`: every e-class's cheapest
//! tree cost by a plain fixpoint over every row (egglog's model: a live row of an extractable
//! constructor costs its `:cost` plus its arguments', a primitive value 1), and a printed
//! term's class and cost read back through the tables. The programs use no containers.
class extraction_oracle {
 public:
  static constexpr std::uint64_t none = ~std::uint64_t{0};

  extraction_oracle(const eq::declarations& decl, const eq::database& db)
      : decl_(decl), db_(db), best_(db.ids.size(), none) {
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t f = 0; f < decl.functions.size(); ++f) {
        const eq::function_decl& fn = decl.functions[f];
        if (fn.kind != eq::function_kind::constructor || fn.unextractable) continue;
        const eq::table& t = db_.tables[f];
        for (std::size_t r = 0; r < t.rows(); ++r) {
          if (t.state(r) != eq::row_state::live) continue;
          std::uint64_t cost = fn.cost;
          for (std::uint32_t a = 0; a < t.arity() && cost != none; ++a) {
            const std::uint64_t arg = t.id_column(a) ? best_[db_.ids.find_const(t.row(r)[a])] : 1;
            cost = arg == none ? none : cost + arg;
          }
          std::uint64_t& have = best_[db_.ids.find_const(t.value_of(r))];
          if (cost < have) {
            have = cost;
            changed = true;
          }
        }
      }
    }
  }

  //! The cheapest cost of the class of `id`.
  std::uint64_t best(eq::value id) const { return best_[db_.ids.find_const(id)]; }

  //! A printed term (`(F (G 1) "s")`): its class and its tree cost, or nothing when one of
  //! its rows is not in the tables.
  std::optional<std::pair<eq::value, std::uint64_t>> read(const std::string& text) {
    auto tree = eq::lang::read_sexprs(text);
    if (!tree || tree->top.size() != 1) return std::nullopt;
    return read(*tree, tree->top[0]);
  }

 private:
  std::optional<std::pair<eq::value, std::uint64_t>> read(const eq::lang::sexpr_tree& tree,
                                                          std::uint32_t n) {
    const eq::lang::sexpr_node& node = tree.nodes[n];
    const std::string_view text(tree.text.data() + node.first, node.count);
    switch (node.kind) {
      case eq::lang::sexpr_kind::integer: {
        auto v = db_.base.from_i64(node.integer);
        if (!v) return std::nullopt;
        return std::pair{*v, std::uint64_t{1}};
      }
      case eq::lang::sexpr_kind::string: {
        auto v = db_.base.from_string(text);
        if (!v) return std::nullopt;
        return std::pair{*v, std::uint64_t{1}};
      }
      case eq::lang::sexpr_kind::list:
        break;
      default:
        return std::nullopt;
    }
    if (node.count == 0) return std::nullopt;
    const eq::lang::sexpr_node& head = tree.nodes[tree.children[node.first]];
    if (head.kind != eq::lang::sexpr_kind::symbol) return std::nullopt;
    const std::int64_t f =
        decl_.find_function(std::string_view(tree.text.data() + head.first, head.count));
    if (f < 0) return std::nullopt;
    const eq::table& t = db_.tables[static_cast<std::size_t>(f)];
    if (node.count - 1 != t.arity()) return std::nullopt;
    std::vector<eq::value> keys;
    std::uint64_t cost = decl_.functions[static_cast<std::size_t>(f)].cost;
    for (std::uint32_t a = 0; a < t.arity(); ++a) {
      auto arg = read(tree, tree.children[node.first + 1 + a]);
      if (!arg) return std::nullopt;
      keys.push_back(t.id_column(a) ? db_.ids.find_const(arg->first) : arg->first);
      cost += arg->second;
    }
    const std::uint32_t r = t.find(keys.data());
    if (r == eq::table::no_row) return std::nullopt;
    return std::pair{t.value_of(r), cost};
  }

  const eq::declarations& decl_;
  eq::database db_;  // a copy: reading a term's strings back interns them
  std::vector<std::uint64_t> best_;
};

TEST_CASE("gpu offload: every extracted term is in the e-graph and costs its class's minimum",
          "[eqsat][gpu]") {
  // The oracle checks each engine's extracts on that engine's own e-graph, so a term that a
  // shared extractor got wrong on both is caught too. The extracts come after the last run.
  const std::string programs[] = {
      R"((datatype M (Add M M) (Mul M M :cost 3) (Shl M i64) (Num i64) (V String))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Num 2)) (Shl a 1))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)))
(Mul (V "x") (Add (Num 2) (V "y")))
(Add (Mul (V "x") (Num 2)) (Mul (V "x") (V "z")))
(run 6)
(extract (Mul (V "x") (Add (Num 2) (V "y"))))
(extract (Add (Mul (V "x") (Num 2)) (Mul (V "x") (V "z"))))
(extract (Mul (V "x") (Num 2))))",
      R"((datatype T (Leaf) (F T) (G T T :cost 5))
(rewrite (F (F x)) x)
(rewrite (G x y) (G y x))
(rewrite (G x x) (F x))
(G (F (F (Leaf))) (F (F (F (F (Leaf))))))
(run 5)
(extract (G (F (F (Leaf))) (F (F (F (F (Leaf)))))))
(extract (F (F (F (Leaf))))))"};
  for (const std::string& program : programs) {
    for (const bool gpu : {false, true}) {
      INFO((gpu ? "gpu" : "cpu") << " engine:\n" << program);
      eq::session_options options;
      options.threads = 2;
      if (gpu) options.offload = on_gpu();
      options.on_warning = [](const std::string&) {};
      eq::session s(std::move(options));
      auto ran = s.run_text(program, "t.egg");
      if (ran) ran = s.finish();
      REQUIRE(ran);
      if (gpu) CHECK(on_device_iterations(s.iterations()) > 0);
      extraction_oracle oracle(s.decl(), s.db());
      std::size_t extracts = 0;
      for (const eq::program_output& out : s.outputs()) {
        if (out.type != eq::program_output::kind::extract) continue;
        INFO("extracted: " << out.text);
        const auto term = oracle.read(out.text);
        REQUIRE(term.has_value());
        CHECK(term->second == out.cost);
        CHECK(oracle.best(term->first) == out.cost);
        ++extracts;
      }
      CHECK(extracts >= 2);
    }
  }
}

TEST_CASE("gpu offload: math.egg, 10 iterations", "[eqsat][gpu]") {
  const std::string math = math_program();
  if (math.empty()) return;
  const std::string text = math + "\n(run 10)\n(print-size)\n";
  const run_result want = run_program(text, nullptr);
  REQUIRE(want.iterations.size() == 10);
  CHECK(want.iterations.back().rows == 136446);  // egglog's count
  const run_result got = run_program(text, on_gpu());
  check_same(want, got);
  CHECK(on_device(got) == 10);
}

TEST_CASE("gpu offload: an iteration that could cross the node limit runs on the CPU engine",
          "[eqsat][gpu]") {
  const std::string text = small_programs()[3];
  const run_result unlimited = run_program(text, nullptr);
  REQUIRE(unlimited.ok);
  REQUIRE(unlimited.iterations.size() >= 5);
  // A limit just below the rows after iteration 4: the device's search of iteration 4 finds
  // enough to cross it, so the CPU engine runs that iteration and rolls it back.
  const std::uint64_t limit = unlimited.iterations[3].rows - 1;
  REQUIRE(limit >= unlimited.iterations[2].rows);
  const run_result want = run_program(text, nullptr, limit);
  REQUIRE(want.ok);
  REQUIRE(want.stopped == eq::run_stop::node_limit);
  REQUIRE(want.iterations.size() == 3);
  const run_result got = run_program(text, on_gpu(), limit);
  check_same(want, got);
  // The device bounds the rows a search can add by a row per match and step, so iteration 3's
  // search may already reach the limit and run on the CPU engine too; the first two stay on
  // the device.
  REQUIRE(got.iterations.size() == 3);
  CHECK(got.iterations[0].device == "gpu");
  CHECK(got.iterations[1].device == "gpu");
  // The committed state is iteration 3's; the runs stopped, the outputs after them were made.
  CHECK(got.sizes == unlimited.iterations[2].sizes);
  CHECK(got.outputs.size() == unlimited.outputs.size());

  // Limits from the first iteration's rows to past the last: the device stops where the CPU
  // engine stops, with the same state; under the largest, the device runs iterations itself.
  for (const std::uint64_t at : {unlimited.iterations[0].rows, unlimited.iterations[1].rows + 1,
                                 unlimited.iterations[2].rows * 2, unlimited.iterations[3].rows,
                                 unlimited.iterations.back().rows * 4}) {
    CAPTURE(at);
    const run_result cpu = run_program(text, nullptr, at);
    const run_result gpu = run_program(text, on_gpu(), at);
    check_same(cpu, gpu);
    CHECK(gpu.sizes == cpu.sizes);
    CHECK(gpu.stopped == cpu.stopped);
  }
  const run_result roomy = run_program(text, on_gpu(), unlimited.iterations.back().rows * 4);
  CHECK(on_device(roomy) >= 1);
}

//! Pairs of leaves, then pairs of pairs: the rows square every iteration.
std::string quadratic(int leaves, int iterations) {
  std::string text =
      "(datatype E (Leaf i64) (Pair E E))\n"
      "(rule ((= a (Leaf x)) (= b (Leaf y))) ((Pair a b)))\n"
      "(rule ((= p (Pair a b)) (= q (Pair c d))) ((Pair p q)))\n";
  for (int i = 0; i < leaves; ++i) text += "(Leaf " + std::to_string(i) + ")\n";
  return text + "(run " + std::to_string(iterations) + ")\n(print-size)\n";
}

TEST_CASE("gpu offload: device memory under a node limit stays near the e-graph kept",
          "[eqsat][gpu]") {
  // 1,000 leaves make 1,001,000 rows in iteration 1; iteration 2's join has 10^12 candidates.
  // Under a limit of 1,500,000 the device's search stops at its budget and hands iteration 2
  // to the CPU engine, which stops it: the device's peak stays within twice that of the run
  // that makes only iteration 1.
  const auto peak_of = [](const std::string& text, std::uint64_t limit) {
    auto offload = on_gpu();
    const run_result r = run_program(text, offload, limit);
    REQUIRE(offload->backend() != nullptr);
    return std::pair{r, offload->backend()->telemetry().snapshot().peak_device_bytes};
  };
  const auto [kept, kept_peak] = peak_of(quadratic(1000, 1), 0);
  REQUIRE(kept.ok);
  REQUIRE(kept.iterations.size() == 1);
  CHECK(kept.iterations[0].rows == 1001000);
  const auto [limited, limited_peak] = peak_of(quadratic(1000, 10), 1500000);
  REQUIRE(limited.ok);
  CHECK(limited.stopped == eq::run_stop::node_limit);
  REQUIRE(limited.iterations.size() == 1);
  CHECK(limited.iterations[0].device == "gpu");
  CHECK(limited.sizes == kept.sizes);
  std::printf("eqsat gpu node limit: device peak %llu bytes, kept run's %llu\n",
              static_cast<unsigned long long>(limited_peak),
              static_cast<unsigned long long>(kept_peak));
  CHECK(kept_peak > 0);
  CHECK(limited_peak <= 2 * kept_peak);
}

TEST_CASE("gpu offload: automatic mode moves at the crossover, or stays without a device",
          "[eqsat][gpu]") {
  const std::string text = small_programs()[3];
  const run_result want = run_program(text, nullptr);
  REQUIRE(want.iterations.size() >= 4);
  // Mid-run: the first iteration that starts on at least the rows after iteration 2.
  const std::uint64_t crossover = want.iterations[1].rows;
  auto offload = make_offload([] { return gpu_backend::acquire(0); },
                              vyre::device_choice::automatic, crossover);
  const run_result got = run_program(text, offload);
  check_same(want, got);
  for (std::size_t i = 0; i < got.iterations.size(); ++i) {
    INFO("iteration " << i + 1);
    CHECK(got.iterations[i].device == (i >= 2 ? "gpu" : "cpu"));
  }
  CHECK(offload->unavailable().empty());
  // A factory that finds no device: the run stays on the CPU and says why.
  auto no_device = make_offload(
      []() -> gpu_backend {
        throw vyre::error_exception(vyre::error(vyre::errc::unsupported, "test: no device"));
      },
      vyre::device_choice::automatic, 0);
  const run_result cpu_only = run_program(text, no_device);
  check_same(want, cpu_only);
  CHECK(on_device(cpu_only) == 0);
  CHECK(no_device->unavailable().find("test: no device") != std::string::npos);
}

// [fault_sweep]: hundreds of runs, left out under racecheck (scripts/reliability.sh), where
// they take past half an hour; memcheck and initcheck run it.
TEST_CASE("gpu offload: a failed device allocation keeps the last committed iteration",
          "[eqsat][gpu][fault_sweep]") {
  using vyre::testing::allocation_kind;
  using vyre::testing::scoped_allocation_fault;
  // A copy: from an lvalue first, GENERATE would hold references (one to a dead temporary).
  const std::string text = GENERATE(std::string(small_programs()[3]), chain_program(6));
  CAPTURE(text);
  const run_result want = run_program(text, nullptr);
  REQUIRE(want.ok);
  {  // warm-up: kernel modules load once and stay
    const run_result warm = run_program(text, on_gpu());
    check_same(want, warm);
  }
  // The Nth device allocation of a whole run (the engine made, its iterations) fails, N = 1,
  // 2, ... until the run no longer reaches an Nth allocation. The backend is made before.
  std::uint64_t injected = 0, mid_run = 0;
  for (std::uint64_t n = 1;; ++n) {
    INFO("device allocation " << n << " fails");
    REQUIRE(n < 5000);
    std::optional<gpu_backend> ready(gpu_backend::acquire(0));
    auto offload = make_offload([&] { return std::move(*ready); }, vyre::device_choice::gpu);
    run_result got;
    bool fired = false;
    {
      scoped_allocation_fault fault(allocation_kind::device, n);
      got = run_program(text, offload);
      fired = fault.fired();
    }
    if (!fired) {
      check_same(want, got);
      break;
    }
    ++injected;
    // The failure is the program's error, every iteration it committed is the CPU's, and the
    // state brought back is the last of them.
    REQUIRE_FALSE(got.ok);
    CHECK(got.code == vyre::errc::out_of_memory);
    REQUIRE(got.iterations.size() < want.iterations.size());
    for (std::size_t i = 0; i < got.iterations.size(); ++i)
      check_same_iteration(want.iterations[i], got.iterations[i]);
    if (!got.iterations.empty()) {
      ++mid_run;
      CHECK(got.sizes == got.iterations.back().sizes);
      CHECK(got.eclasses == got.iterations.back().eclasses);
    }
  }
  std::printf("eqsat gpu fault sweep: %llu injected device failures, %llu after an iteration\n",
              static_cast<unsigned long long>(injected), static_cast<unsigned long long>(mid_run));
  CHECK(injected >= 1);
  CHECK(mid_run >= 1);  // some failure hit a later iteration, after others were committed
}

TEST_CASE("gpu engine: create, run_iteration and download against cpu_engine", "[eqsat][gpu]") {
  // A database made by a session (the program's terms, no run), then two iterations on each
  // engine from copies of it. The relation makes the engine keep the rows' timestamps.
  eq::session s;
  REQUIRE(s.run_text(R"((datatype M (Add M M) (Mul M M) (Num i64) (V String))
(relation seen (M))
(rewrite (Add a b) (Add b a))
(rewrite (Mul a (Add b c)) (Add (Mul a b) (Mul a c)))
(Mul (V "k") (Add (V "a") (Add (V "b") (Num 3)))))",
                     "t.egg"));
  const eq::declarations& decl = s.decl();
  eq::database cpu_db = s.db();
  eq::database gpu_db = s.db();
  eq::cpu_engine cpu(decl, cpu_db, 2);
  auto gpu = gpu_backend::acquire(0);
  auto engine = eq::gpu_engine<gpu_backend>::create(gpu, decl, gpu_db);  // throws on failure
  engine.capture_rebuilds(vyre_test::capture_loops());
  CHECK(engine.class_id_count() == gpu_db.ids.size());
  for (int i = 0; i < 2; ++i) {
    auto want = cpu.run_iteration(0);
    REQUIRE(want);
    const eq::iteration_report got = engine.run_iteration(0);
    CHECK(got.changed == want->changed);
    CHECK(got.stopped == eq::iteration_stop::none);
    std::vector<std::uint64_t> sizes;
    for (const eq::table& t : cpu_db.tables) sizes.push_back(t.size());
    CHECK(engine.sizes() == sizes);
  }
  const std::uint32_t start = s.db().now;
  CHECK(engine.now() == start + 2);  // one timestamp per committed iteration
  engine.download(gpu_db);
  CHECK(gpu_db.now == start + 2);
  CHECK(gpu_db.ids.size() == engine.class_id_count());
  CHECK(gpu_db.ids.size() >= cpu_db.ids.size());
  std::size_t untouched = 0;
  for (std::size_t f = 0; f < gpu_db.tables.size(); ++f) {
    const eq::table& t = gpu_db.tables[f];
    CHECK(t.size() == cpu_db.tables[f].size());
    for (std::size_t r = 0; r < t.rows(); ++r) {  // canonical: every id a root
      // Each row keeps the timestamp of its last change, ascending as the host keeps them.
      CHECK(t.stamp(r) < gpu_db.now);
      if (r > 0) CHECK(t.stamp(r - 1) <= t.stamp(r));
      untouched += t.stamp(r) < start ? 1 : 0;
      for (std::uint32_t c = 0; c < t.width(); ++c)
        if (t.id_column(c)) CHECK(gpu_db.ids.is_root(t.row(r)[c]));
    }
  }
  CHECK(untouched > 0);  // the program's leaves (V, Num) no iteration changed
  // The device's union-find and the downloaded one agree.
  CHECK(engine.find(gpu_db.ids.size() - 1) == gpu_db.ids.find_const(gpu_db.ids.size() - 1));
  // A limit below the rows now: the search finds enough to reach it, so the iteration is
  // rolled back before its apply and handed to the CPU engine.
  eq::iteration_limits tight;
  tight.node_limit = 1;
  const std::vector<std::uint64_t> before = engine.sizes();
  const std::uint64_t ids_before = engine.class_id_count();
  const eq::iteration_report stopped = engine.run_iteration(0, tight);
  CHECK(stopped.stopped == eq::iteration_stop::handed_to_cpu);
  CHECK(engine.sizes() == before);
  CHECK(engine.class_id_count() == ids_before);
  // A deadline already past: the iteration runs, then is rolled back as a time limit.
  eq::iteration_limits late;
  late.deadline = std::chrono::steady_clock::now();
  CHECK(engine.run_iteration(0, late).stopped == eq::iteration_stop::time_limit);
  CHECK(engine.sizes() == before);
}
