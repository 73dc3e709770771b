// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre::eqsat with the GPU engine (nvcc): everything of `vyre/eqsat.hpp` plus
//! - eqsat/gpu_engine.cuh: `gpu_engine<Backend>`, the same calls as `cpu_engine` on the device
//! - eqsat/auto_engine.cuh: `auto_engine<Backend>`, the CPU engine below the measured crossover
//!   and the GPU engine from there (no CUDA context below it)
//! - eqsat/detail/gpu_kernels.cuh: its kernels and parameter blocks (join interpreter, apply,
//!   lock-free union-find, rebuild passes), usable in an engine author's own pipeline
#pragma once

#include "vyre/eqsat.hpp"
#include "vyre/eqsat/auto_engine.cuh"
#include "vyre/eqsat/gpu_engine.cuh"
