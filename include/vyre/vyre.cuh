// SPDX-License-Identifier: Apache-2.0
//! @file
//! Everything in vyre, for CUDA translation units.
#pragma once

#include "vyre/vyre.hpp"
#include "vyre/algorithms.cuh"
