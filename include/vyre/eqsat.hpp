// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat`: equality saturation on egglog programs. Host only.
//!
//! - program.hpp: the reader (egglog subset, AST with source positions, one-line errors)
//! - plan.hpp: rules compiled to joins over per-constructor tables plus actions
//! - cpu_engine.hpp: the CPU engine (hash-consed tables, union-find, rebuild, limits)
//! - execute.hpp: runs a program's commands on an engine
//! - emit.hpp: the e-graph as egraph-serialize JSON (any engine)
//!
//! The GPU engine (`gpu_engine.cuh`, nvcc) comes with `vyre/eqsat.cuh`.
#pragma once

#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/emit.hpp"
#include "vyre/eqsat/execute.hpp"
#include "vyre/eqsat/plan.hpp"
#include "vyre/eqsat/program.hpp"
