# SPDX-License-Identifier: Apache-2.0
# CMake < 3.26 does not know that nvcc >= 12 accepts -std=c++20, so any CUDA target that carries
# cxx_std_20 (as vyre::vyre does) fails with 'requires the language dialect "CUDA20"'. Teach
# the current directory scope the dialect. Does nothing where CMake already knows it, or before
# the CUDA language is enabled.
if(CMAKE_CUDA_COMPILER_LOADED AND CMAKE_CUDA_COMPILER_ID STREQUAL "NVIDIA"
   AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0
   AND NOT CMAKE_CUDA20_COMPILE_FEATURES)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()
