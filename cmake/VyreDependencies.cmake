# SPDX-License-Identifier: Apache-2.0
# The dependencies of the vyre::vyre target itself, shared by the build tree and the package
# config (vyre-config.cmake repeats the same two finds through find_dependency).
include_guard(GLOBAL)

# No version in the find: an old toolkit gets vyre's own message (what was found, the fix).
find_package(CUDAToolkit REQUIRED)
include("${CMAKE_CURRENT_LIST_DIR}/VyreCudaDialect.cmake")
vyre_cuda_version_problem(vyre_cuda_problem)
if(vyre_cuda_problem)
  message(FATAL_ERROR "${vyre_cuda_problem}")
endif()
# CUDA 13 moved CCCL under include/cccl; its package config tells a host compiler where.
find_package(CCCL CONFIG REQUIRED COMPONENTS libcudacxx CUB
  HINTS "${CUDAToolkit_LIBRARY_DIR}/cmake" "${CUDAToolkit_LIBRARY_ROOT}/lib64/cmake")

# Optional: simdjson for the egraph-serialize JSON loader (vyre::egraph_json).
find_package(simdjson CONFIG QUIET)
