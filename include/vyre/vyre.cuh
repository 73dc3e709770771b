// SPDX-License-Identifier: Apache-2.0
//! @file
//! Everything in vyre, for CUDA translation units.
#pragma once

#include "vyre/algorithms.cuh"
#include "vyre/egraph.cuh"
#include "vyre/eqsat.cuh"
#include "vyre/fusion.cuh"
#include "vyre/graph.cuh"
#include "vyre/runtime.cuh"
#include "vyre/vyre.hpp"
