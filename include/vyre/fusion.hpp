// SPDX-License-Identifier: Apache-2.0
//! @file
//! Launch fusion, host side: `vyre::fusion::stage`, `plan_launch_fusion` (constexpr and run
//! time, greedy and optimal), `static_plan` (compile-time plans with readable errors) and the
//! plan types. Compiles with any C++20 compiler; `vyre/fusion.cuh` adds fused kernels.
#pragma once

#include "vyre/fusion/plan.hpp"
#include "vyre/fusion/stage.hpp"
