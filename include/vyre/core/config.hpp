// SPDX-License-Identifier: Apache-2.0
//! @file
//! Configuration macros. Every macro degrades to nothing (or to a host-only spelling) outside
//! nvcc, so the planning layer (`.hpp`) compiles with any C++20 compiler.
#pragma once

#define VYRE_VERSION_MAJOR 0
#define VYRE_VERSION_MINOR 1
#define VYRE_VERSION_PATCH 0
//! Single comparable number: major * 10000 + minor * 100 + patch.
#define VYRE_VERSION (VYRE_VERSION_MAJOR * 10000 + VYRE_VERSION_MINOR * 100 + VYRE_VERSION_PATCH)

//! The oldest CUDA runtime vyre supports, as `CUDART_VERSION` spells it (CUDA 12.4: conditional
//! WHILE graph nodes added with `cudaGraphAddNode`). The build refuses older toolkits (CMake and
//! `vyre/core/cuda_compat.hpp`, which every CUDA-facing header includes).
#define VYRE_MIN_CUDART_VERSION 12040

// Checked here too when the CUDA headers came first (the common case in CUDA translation units).
#if defined(CUDART_VERSION) && CUDART_VERSION < VYRE_MIN_CUDART_VERSION
#define VYRE_DETAIL_OLD_CUDART_REPORTED 1
#error \
    "vyre needs the CUDA runtime headers of CUDA 12.4 or newer (CUDART_VERSION >= 12040), but an older toolkit's headers were found. Fix: install CUDA >= 12.4 and put its include directory first (or point CMake at it: -DCMAKE_CUDA_COMPILER=/path/to/cuda-12.4+/bin/nvcc)."
#endif

#if defined(__CUDACC__)
#define VYRE_HOST __host__
#define VYRE_DEVICE __device__
#define VYRE_HOST_DEVICE __host__ __device__
// Kernels get hidden visibility so two shared objects that both instantiate a vyre kernel
// template never bind to each other's copy (the CCCL convention).
#define VYRE_KERNEL __global__ __attribute__((visibility("hidden")))
#else
#define VYRE_HOST
#define VYRE_DEVICE
#define VYRE_HOST_DEVICE
#define VYRE_KERNEL
#endif

//! True while compiling device code (the nvcc device pass).
#if defined(__CUDA_ARCH__)
#define VYRE_IS_DEVICE_PASS 1
#else
#define VYRE_IS_DEVICE_PASS 0
#endif
