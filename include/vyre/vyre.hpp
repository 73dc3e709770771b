// SPDX-License-Identifier: Apache-2.0
//! @file
//! Everything in vyre that compiles without nvcc (any C++20 compiler with the CUDA and CCCL
//! include paths): the core and the host planning layer.
#pragma once

#include "vyre/algorithms.hpp"
#include "vyre/core.hpp"
#include "vyre/egraph.hpp"
#include "vyre/eqsat.hpp"
#include "vyre/fusion.hpp"
#include "vyre/graph.hpp"
#include "vyre/runtime/launch_plan.hpp"
#include "vyre/runtime/module_disk_cache.hpp"
#include "vyre/runtime/telemetry.hpp"
