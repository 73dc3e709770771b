// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat`: equality saturation on egglog programs. Host only.
//!
//! - eqsat/session.hpp: runs an egglog program command by command (`session`), with egglog's
//!   outputs; the place to start
//! - eqsat/lang/sexpr.hpp, eqsat/lang/compiler.hpp: the reader (s-expressions with source
//!   positions) and the compiler of egglog's language into the IR (one-line errors)
//! - eqsat/ir.hpp: the relational core's IR: functions, queries, actions, rules, schedules
//! - eqsat/values.hpp: the value encoding, the id space (union-find) and the container store
//! - eqsat/primitives.hpp, primitives_base.hpp, primitives_containers.hpp: egglog's primitives
//! - eqsat/database.hpp: the declarations and the database (one table per function)
//! - eqsat/cpu_engine.hpp: the CPU engine (seminaive search, staged apply, merge, rebuild)
//! - eqsat/extract.hpp: the cheapest term of a value (egglog's tree cost)
//! - eqsat/emit.hpp: the e-graph as egraph-serialize JSON
//!
//! The GPU engine (`gpu_engine.cuh`, nvcc) and its session offload (`gpu_offload.cuh`) come
//! with `vyre/eqsat.cuh`.
#pragma once

#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/emit.hpp"
#include "vyre/eqsat/extract.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/lang/compiler.hpp"
#include "vyre/eqsat/lang/sexpr.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/primitives_base.hpp"
#include "vyre/eqsat/primitives_containers.hpp"
#include "vyre/eqsat/session.hpp"
#include "vyre/eqsat/values.hpp"
