// SPDX-License-Identifier: Apache-2.0
// Equality saturation from C++: a small algebra's rewrite rules, a constant-folding analysis
// (a function with a :merge) and two terms in egglog's language, run by a
// `vyre::eqsat::session` with its iterations on the GPU engine where the device runs them,
// checked against the same session on the CPU engine, then the cheapest equivalent terms.
//
//   1. Write the program in egglog's syntax (a datatype, rewrites, a term, `run`, `extract`)
//      and run it on a session: errors come back as `file:line:col: ...` with a fix.
//   2. Give the session a `gpu_offload` (the GPU engine, on a backend it acquires at the first
//      iteration): every iteration the device can run goes there; the session syncs the state
//      back before anything reads it (checks, extraction, `finish`).
//   3. Read the per-iteration records (rows, e-classes, where each ran) and the outputs.
//
// The first six iterations (rewrites over constructors) run on the GPU engine. Then the
// analysis is declared: `value`, a function merged by min, read by rules' queries and set by
// their actions with i64 arithmetic. The GPU engine holds such functions beside the
// constructors and folds two values of one class by the merge, so its iterations run there too;
// the records say where each ran. The terms are (a * 2) / 2 + 0 * b, which the rules find equal
// to a, and (3 + 4) * c, which the analysis folds to 7 * c.
#include <cstdio>
#include <memory>

#include <vyre/eqsat.hpp>
#include <vyre/eqsat/gpu_offload.cuh>
#include <vyre/runtime.cuh>

namespace {

constexpr const char* program_text = R"egg(
(datatype Expr
  (Num i64)
  (Sym String)
  (Add Expr Expr)
  (Mul Expr Expr)
  (Div Expr Expr))

(rewrite (Add a b) (Add b a))
(rewrite (Mul a b) (Mul b a))
(rewrite (Mul a (Mul b c)) (Mul (Mul a b) c))
(rewrite (Div (Mul a b) c) (Mul a (Div b c)))
(rewrite (Div a a) (Num 1))
(rewrite (Mul a (Num 1)) a)
(rewrite (Mul a (Num 0)) (Num 0))
(rewrite (Add a (Num 0)) a)

(let $start (Add (Div (Mul (Sym "a") (Num 2)) (Num 2)) (Mul (Num 0) (Sym "b"))))
(run 6)
(extract $start)

(ruleset fold)
(function value (Expr) i64 :merge (min old new))
(rule ((= e (Num n))) ((set (value e) n)) :ruleset fold)
(rule ((= e (Add a b)) (= x (value a)) (= y (value b))) ((set (value e) (+ x y))) :ruleset fold)
(rule ((= e (Mul a b)) (= x (value a)) (= y (value b))) ((set (value e) (* x y))) :ruleset fold)
(rule ((= v (value e))) ((union e (Num v))) :ruleset fold)

(let $folded (Mul (Add (Num 3) (Num 4)) (Sym "c")))
(run-schedule (repeat 2 (saturate (run fold)) (run)))
(extract $folded)
)egg";

using gpu_backend = vyre::backend<vyre::policies<>>;  // errors thrown

//! Runs the program on a session (`offload`: where iterations may run besides the CPU).
//! @returns false, having said why, when the program fails.
bool run(const char* engine, vyre::eqsat::session& s) {
  auto ran = s.run_text(program_text, "example.egg");
  if (ran) ran = s.finish();  // the state back on the host (the GPU engine held it)
  if (!ran) {
    std::fprintf(stderr, "%s: %s\n", engine, s.describe(ran.error()).c_str());
    return false;
  }
  std::printf("%s: %zu iterations, stopped: %s\n", engine, s.iterations().size(),
              vyre::eqsat::run_stop_name(s.stopped()));
  for (const auto& it : s.iterations())
    std::printf("  iteration %llu (%s): %llu e-nodes, %llu e-classes, %llu matches\n",
                static_cast<unsigned long long>(it.iteration), it.device.c_str(),
                static_cast<unsigned long long>(it.rows),
                static_cast<unsigned long long>(it.eclasses),
                static_cast<unsigned long long>(it.matches));
  for (const auto& out : s.outputs()) std::printf("  %s", out.text.c_str());
  return true;
}

//! The same iterations (rows of every function, e-classes) and outputs on both sessions.
bool same_results(const vyre::eqsat::session& a, const vyre::eqsat::session& b) {
  if (a.iterations().size() != b.iterations().size() || a.outputs().size() != b.outputs().size())
    return false;
  for (std::size_t i = 0; i < a.iterations().size(); ++i)
    if (a.iterations()[i].sizes != b.iterations()[i].sizes ||
        a.iterations()[i].eclasses != b.iterations()[i].eclasses)
      return false;
  for (std::size_t i = 0; i < a.outputs().size(); ++i)
    if (a.outputs()[i].text != b.outputs()[i].text) return false;
  return true;
}

}  // namespace

int main() {
  // 1. The CPU engine, all cores: the reference, and the engine to use without a GPU.
  vyre::eqsat::session on_cpu;
  if (!run("cpu", on_cpu)) return 2;

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "equality_saturation: no CUDA device here; the GPU engine was not run.\n");
    return 0;
  }

  // 2. The GPU engine under the session: `device_choice::gpu` sends it every iteration it
  // can run (`automatic` only those past a crossover, and none without a device).
  auto offload = std::make_shared<vyre::eqsat::gpu_offload<gpu_backend>>(
      [] { return gpu_backend::acquire(0); }, vyre::device_choice::gpu);
  vyre::eqsat::session_options options;
  options.offload = offload;
  vyre::eqsat::session on_gpu(options);
  if (!run("gpu", on_gpu)) return 1;  // out of device memory, a CUDA error

  // 3. Same semantics, same counts: the GPU engine's iterations give the CPU engine's e-graph.
  if (!same_results(on_cpu, on_gpu)) {
    std::fprintf(stderr, "equality_saturation: the GPU and CPU engines disagree\n");
    return 1;
  }
  // Every iteration ran on the device: the rewrites' and the analysis'.
  for (const auto& it : on_gpu.iterations())
    if (it.device != "gpu") {
      std::fprintf(stderr, "equality_saturation: iteration %llu ran on the CPU engine: %s\n",
                   static_cast<unsigned long long>(it.iteration), it.cpu_reason.c_str());
      return 1;
    }
  const auto& outs = on_gpu.outputs();
  if (outs.size() != 2 || outs[0].text != "(Sym \"a\")\n" ||
      outs[1].text != "(Mul (Num 7) (Sym \"c\"))\n") {
    std::fprintf(stderr,
                 "equality_saturation: expected (Sym \"a\") and (Mul (Num 7) (Sym \"c\"))\n");
    return 1;
  }
  std::printf("GPU and CPU agree; (a * 2) / 2 + 0 * b = a, (3 + 4) * c = 7 * c\n");
  return 0;
}
