// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's e-graph algorithms on the device: `build` (raw rows -> packed image), `congruence`
//! (the GPU rebuild) and `extract` (bottom-up tree cost), plus everything in
//! `vyre/algorithms.hpp` (row tables, CPU references, the synthetic generator).
#pragma once

#include "vyre/algorithms.hpp"
#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/congruence.cuh"
#include "vyre/algorithms/extract.cuh"
