// SPDX-License-Identifier: Apache-2.0
//! @file
//! vyre's CUDA graph component: `captured_graph` (RAII capture, node inventory, kernel and
//! memset parameter updates, whole-graph updates), `build_loop_graph` (prefix -> conditional
//! WHILE -> suffix) with its WHILE and fixpoint shorthands, and `graph_cache`. Includes the
//! host-only part, `vyre/graph.hpp`.
#pragma once

#include "vyre/graph.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/conditional.cuh"
#include "vyre/graph/loop_graph.cuh"
