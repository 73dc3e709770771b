// SPDX-License-Identifier: Apache-2.0
//! @file
//! The host-only part of vyre's CUDA graph component (any C++20 compiler with the CUDA include
//! path): capacity classes, scan topologies, graph keys, node kinds, memset update rules, the
//! event hook and the cache's LRU bookkeeping. The CUDA side (`captured_graph`, conditional
//! WHILE graphs, `graph_cache`) is in `vyre/graph.cuh`.
#pragma once

#include "vyre/graph/events.hpp"
#include "vyre/graph/key.hpp"
#include "vyre/graph/lru_map.hpp"
#include "vyre/graph/memset_params.hpp"
#include "vyre/graph/node_kind.hpp"
