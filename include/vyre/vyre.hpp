// SPDX-License-Identifier: Apache-2.0
//! @file
//! Everything in vyre that compiles without nvcc (any C++20 compiler with the CUDA and CCCL
//! include paths): the core and the host planning layer.
#pragma once

#include "vyre/core.hpp"
#include "vyre/egraph.hpp"
#include "vyre/algorithms.hpp"
