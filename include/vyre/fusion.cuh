// SPDX-License-Identifier: Apache-2.0
//! @file
//! Launch fusion, device side: everything in `vyre/fusion.hpp` plus `fused_pipeline`, which
//! turns a compile-time plan into one kernel per group.
#pragma once

#include "vyre/fusion.hpp"
#include "vyre/fusion/fused_pipeline.cuh"
