# SPDX-License-Identifier: Apache-2.0
# CUDA settings shared by vyre's build and its package config (installed beside it):
#
# 1. The oldest CUDA toolkit vyre supports, and a check that names what was found and the fix.
#    Keep VYRE_MIN_CUDA_VERSION in step with VYRE_MIN_CUDART_VERSION in vyre/core/config.hpp.
# 2. CMake < 3.26 does not know that nvcc >= 12 accepts -std=c++20, so any CUDA target that
#    carries cxx_std_20 (as vyre::vyre does) fails with 'requires the language dialect
#    "CUDA20"'. Teach the current directory scope the dialect. Does nothing where CMake already
#    knows it, or before the CUDA language is enabled.

# CUDA 12.4: conditional WHILE graph nodes added with cudaGraphAddNode (the handle API and
# cudaStreamBeginCaptureToGraph came in 12.3).
set(VYRE_MIN_CUDA_VERSION 12.4)

# Sets `out_var` to an error message when the CUDA toolkit or the CUDA compiler found is older
# than VYRE_MIN_CUDA_VERSION, to "" otherwise. Checks what is known: CUDAToolkit_VERSION after
# find_package(CUDAToolkit), CMAKE_CUDA_COMPILER_VERSION after enable_language(CUDA).
function(vyre_cuda_version_problem out_var)
  set(problem "")
  set(fix "Fix: install CUDA >= ${VYRE_MIN_CUDA_VERSION} and point CMake at it, e.g. "
          "-DCUDAToolkit_ROOT=/usr/local/cuda-12.x "
          "-DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.x/bin/nvcc (or put its bin/ first on PATH).")
  string(JOIN "" fix ${fix})
  if(DEFINED CUDAToolkit_VERSION AND CUDAToolkit_VERSION VERSION_LESS VYRE_MIN_CUDA_VERSION)
    set(problem "vyre needs CUDA >= ${VYRE_MIN_CUDA_VERSION} (conditional WHILE graph nodes), "
                "but the CUDA toolkit found is ${CUDAToolkit_VERSION} (${CUDAToolkit_BIN_DIR}). "
                "${fix}")
  elseif(CMAKE_CUDA_COMPILER_LOADED AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
         AND CMAKE_CUDA_COMPILER_VERSION VERSION_LESS VYRE_MIN_CUDA_VERSION)
    set(problem "vyre needs CUDA >= ${VYRE_MIN_CUDA_VERSION} (conditional WHILE graph nodes), "
                "but the CUDA compiler is nvcc ${CMAKE_CUDA_COMPILER_VERSION} "
                "(${CMAKE_CUDA_COMPILER}). ${fix}")
  endif()
  string(JOIN "" problem ${problem})
  set(${out_var} "${problem}" PARENT_SCOPE)
endfunction()

if(CMAKE_CUDA_COMPILER_LOADED AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
   AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0
   AND NOT CMAKE_CUDA20_COMPILE_FEATURES)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
