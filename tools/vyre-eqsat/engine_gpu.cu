// SPDX-License-Identifier: Apache-2.0
// The GPU path of vyre-eqsat, the tool's one nvcc translation unit: acquire device 0 through
// vyre::backend and run the program on vyre::eqsat::gpu_engine.
#include <string>
#include <utility>

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

}  // namespace vyre_tool
