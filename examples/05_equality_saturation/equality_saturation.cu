// SPDX-License-Identifier: Apache-2.0
// Equality saturation from C++: a small algebra's rewrite rules and a term, six iterations
// on the GPU engine, checked against the CPU engine, then the cheapest equivalent term.
//
//   1. Write the program in egglog's syntax (a datatype, rewrites, terms) and read it: errors
//      come back as `file:line:col: ...` with what is supported.
//   2. Make an engine: `gpu_engine` on a backend's device memory, or `cpu_engine` on all
//      cores. Both take the same calls, so `execute` runs the program on either.
//   3. Read the per-iteration counts and the `(extract ...)` results.
//
// The term is (a * 2) / 2 + 0 * b: the rules find that it equals a.
#include <cstdio>
#include <string>

#include <vyre/eqsat.hpp>
#include <vyre/eqsat/gpu_engine.cuh>
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

(let start (Add (Div (Mul (Sym "a") (Num 2)) (Num 2)) (Mul (Num 0) (Sym "b"))))
(run 6)
(extract start)
)egg";

void print(const char* engine, const vyre::eqsat::execution& ex) {
  std::printf("%s: %zu iterations, stopped: %s\n", engine, ex.iterations.size(),
              vyre::eqsat::stop_reason_name(ex.stopped));
  for (const auto& it : ex.iterations)
    std::printf(
        "  iteration %llu: %llu e-nodes, %llu e-classes, %llu matches\n",
        static_cast<unsigned long long>(it.iteration), static_cast<unsigned long long>(it.enodes),
        static_cast<unsigned long long>(it.eclasses), static_cast<unsigned long long>(it.matches));
  for (const auto& e : ex.extracts)
    std::printf("  extract %s -> %s (cost %llu)\n", e.source.c_str(), e.best.term.c_str(),
                static_cast<unsigned long long>(e.best.cost));
}

bool same_counts(const vyre::eqsat::execution& a, const vyre::eqsat::execution& b) {
  if (a.iterations.size() != b.iterations.size() || a.extracts.size() != b.extracts.size())
    return false;
  for (std::size_t i = 0; i < a.iterations.size(); ++i)
    if (a.iterations[i].per_constructor != b.iterations[i].per_constructor) return false;
  for (std::size_t i = 0; i < a.extracts.size(); ++i)
    if (a.extracts[i].best.cost != b.extracts[i].best.cost) return false;
  return true;
}

}  // namespace

int main() {
  // 1. The program (a bad one would print e.g. "example.egg:9:2: unknown command ...").
  auto prog = vyre::eqsat::read_program(program_text, "example.egg");
  if (!prog) {
    std::fprintf(stderr, "%s\n", vyre::eqsat::diagnostic("example.egg", prog.error()).c_str());
    return 2;
  }

  // 2a. The CPU engine, all cores: the reference, and the engine to use without a GPU.
  vyre::eqsat::cpu_engine cpu(*prog);
  const vyre::eqsat::execution on_cpu = vyre::eqsat::execute(*prog, cpu);
  print("cpu", on_cpu);

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "equality_saturation: no CUDA device here; the GPU engine was not run.\n");
    return 0;
  }

  // 2b. The GPU engine on a backend (exceptions on error: the default policy).
  auto gpu = vyre::backend<vyre::policies<>>::acquire(0);
  auto engine = vyre::eqsat::gpu_engine<vyre::backend<vyre::policies<>>>::create(gpu, *prog);
  const vyre::eqsat::execution on_gpu = vyre::eqsat::execute(*prog, engine);
  if (engine.failure()) {  // out of device memory or a CUDA error mid-run: the last
                           // committed iteration is kept, the run stops as `failed`
    std::fprintf(stderr, "equality_saturation: %s\n", engine.failure()->message().c_str());
    return 1;
  }
  print("gpu", on_gpu);

  // 3. Same semantics, same counts: the GPU engine matches the CPU engine exactly.
  if (!same_counts(on_cpu, on_gpu)) {
    std::fprintf(stderr, "equality_saturation: the GPU and CPU engines disagree\n");
    return 1;
  }
  if (on_gpu.extracts.empty() || on_gpu.extracts[0].best.term != "(Sym \"a\")") {
    std::fprintf(stderr, "equality_saturation: expected (Sym \"a\") as the cheapest term\n");
    return 1;
  }
  std::printf("GPU and CPU agree; (a * 2) / 2 + 0 * b = a\n");
  return 0;
}
