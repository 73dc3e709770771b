// SPDX-License-Identifier: Apache-2.0
// The GPU paths of vyre-eqsat, the tool's one nvcc translation unit: acquire device 0 through
// vyre::backend and run the program on vyre::eqsat::gpu_engine (--device gpu), or on
// vyre::eqsat::auto_engine, which acquires it only at the crossover (--device auto).
#include <cstdint>
#include <string>
#include <utility>

#include <vyre/eqsat/auto_engine.cuh>
#include <vyre/eqsat/emit.hpp>
#include <vyre/eqsat/execute.hpp>
#include <vyre/eqsat/gpu_engine.cuh>
#include <vyre/runtime.cuh>

#include "engine.hpp"

namespace vyre_tool {

namespace {
using tool_policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::native,
                                     vyre::on_error::return_expected>;
using tool_backend = vyre::backend<tool_policies>;
}  // namespace

vyre::expected<void> execute_on_gpu(const vyre::eqsat::program& prog,
                                    const vyre::eqsat::execute_options& options,
                                    const std::string& emit, vyre::eqsat::execution& out) {
  VYRE_TRY_ASSIGN(tool_backend gpu, tool_backend::acquire(0));
  VYRE_TRY(gpu.warmup());
  VYRE_TRY_ASSIGN(auto engine, vyre::eqsat::gpu_engine<tool_backend>::create(gpu, prog));
  out = vyre::eqsat::execute(prog, engine, options);
  if (engine.failure()) return vyre::fail(*engine.failure());
  if (!emit.empty()) VYRE_TRY(vyre::eqsat::write_egraph_json(engine, out.roots, emit));
  if (engine.failure()) return vyre::fail(*engine.failure());
  return {};
}

vyre::expected<void> execute_auto(const vyre::eqsat::program& prog,
                                  const vyre::eqsat::execute_options& options,
                                  std::uint64_t crossover, unsigned threads,
                                  const std::string& emit, vyre::eqsat::execution& out,
                                  auto_report& report) {
  auto acquire = []() -> vyre::expected<tool_backend> {
    VYRE_TRY_ASSIGN(tool_backend gpu, tool_backend::acquire(0));
    VYRE_TRY(gpu.warmup());
    return gpu;
  };
  vyre::eqsat::auto_engine<tool_backend> engine(prog, acquire, crossover, threads);
  report.threads = engine.threads();
  out = vyre::eqsat::execute(prog, engine, options);
  report.handoff_seconds = engine.handoff_seconds();
  if (engine.handoff_failure()) report.gpu_unavailable = engine.handoff_failure()->message();
  if (engine.failure()) return vyre::fail(*engine.failure());
  if (!emit.empty()) VYRE_TRY(vyre::eqsat::write_egraph_json(engine, out.roots, emit));
  if (engine.failure()) return vyre::fail(*engine.failure());
  return {};
}

}  // namespace vyre_tool
