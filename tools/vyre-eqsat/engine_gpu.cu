// SPDX-License-Identifier: Apache-2.0
// The GPU path of vyre-eqsat, the tool's one nvcc translation unit: vyre::eqsat::gpu_offload
// on device 0 through vyre::backend, acquired (and warmed up) at the first iteration it takes.
#include <cstdint>
#include <memory>
#include <string>

#include <vyre/eqsat/gpu_offload.cuh>
#include <vyre/runtime.cuh>

#include "engine.hpp"

namespace vyre_tool {

namespace {
using tool_policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::native,
                                     vyre::on_error::return_expected>;
using tool_backend = vyre::backend<tool_policies>;
using tool_offload = vyre::eqsat::gpu_offload<tool_backend>;
}  // namespace

std::shared_ptr<vyre::eqsat::iteration_offload> make_gpu_offload(vyre::device_choice where,
                                                                 std::uint64_t crossover) {
  auto acquire = []() -> vyre::expected<tool_backend> {
    VYRE_TRY_ASSIGN(tool_backend gpu, tool_backend::acquire(0));
    VYRE_TRY(gpu.warmup());
    return gpu;
  };
  return std::make_shared<tool_offload>(acquire, where, crossover);
}

std::string gpu_unavailable(const vyre::eqsat::iteration_offload& offload) {
  const auto* gpu = dynamic_cast<const tool_offload*>(&offload);
  return gpu != nullptr ? gpu->unavailable() : std::string();
}

}  // namespace vyre_tool
