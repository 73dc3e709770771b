// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's e-graph algorithms, host part: the row tables they run on, the CPU references
//! (packing, congruence closure, bottom-up extraction) and the synthetic e-graph generator.
//! The device versions are in `vyre/algorithms.cuh`.
#pragma once

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/algorithms/synthetic.hpp"
