// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre::eqsat with the GPU engine (nvcc): everything of `vyre/eqsat.hpp` plus
//! - eqsat/gpu_engine.cuh: `gpu_engine<Backend>`, the same calls as `cpu_engine` on the device
//! - eqsat/detail/gpu_kernels.cuh: its kernels and parameter blocks (join interpreter, apply,
//!   lock-free union-find, rebuild passes), usable in an engine author's own pipeline
#pragma once

#include "vyre/eqsat.hpp"
#include "vyre/eqsat/gpu_engine.cuh"
