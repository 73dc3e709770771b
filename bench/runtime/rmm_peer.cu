// SPDX-License-Identifier: Apache-2.0
// The RMM peer: rmm::mr::pool_memory_resource over rmm::mr::cuda_memory_resource, on the same
// allocate + free hit loop as vyre's caching pool. Built only when VYRE_BENCH_RMM_DIR names an
// unpacked librmm wheel (see bench/runtime/CMakeLists.txt); RMM's pool itself lives in
// librmm.so, which this executable links.
#include "rmm_peer.hpp"

#include <exception>
#include <memory>

#include <cuda/stream_ref>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/version_config.hpp>

namespace runtime_bench {
namespace {
struct rmm_pool {
  // 256 MiB to start: every thread's block comes from the first growth.
  static constexpr std::size_t initial_bytes = std::size_t{256} << 20;
  rmm::mr::cuda_memory_resource upstream;
  rmm::mr::pool_memory_resource pool{upstream, initial_bytes};
};
}  // namespace

std::function<void(int)> make_rmm_pool_hit(std::size_t bytes,
                                           const std::vector<cudaStream_t>& streams,
                                           std::string& why) {
  try {
    auto state = std::make_shared<rmm_pool>();
    return [state, bytes, streams](int t) {
      const cuda::stream_ref stream{streams[static_cast<std::size_t>(t)]};
      void* p = state->pool.allocate(stream, bytes, 256);
      state->pool.deallocate(stream, p, bytes, 256);
    };
  } catch (const std::exception& e) {
    why = std::string("RMM pool creation failed: ") + e.what();
    return {};
  }
}

std::string rmm_version() {
  return RMM_VERSION;
}

}  // namespace runtime_bench
