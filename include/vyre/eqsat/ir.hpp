// SPDX-License-Identifier: Apache-2.0
//! @file
//! The IR of the relational core: what the front end (`lang/`) compiles egglog's language into
//! and what every engine runs.
//!
//! - A **function** is a table: key columns (`inputs`) and one value column (`output`), at most
//!   one row per key. A constructor's value is a fresh e-class on first insert, and two values
//!   for one key are united (the smaller id stays); a `function`'s values merge by its `:merge`
//!   expression, or must be equal (`:no-merge`). A relation is a constructor whose output sort
//!   is a fresh sort that cannot be united (egglog's model).
//! - A **query** is a conjunction: table atoms `f(args...) = out` over variables and constants,
//!   and primitive atoms `p(args...) = out` that compute (or check) `out` once their arguments
//!   are bound.
//! - A **rule** is a query plus **actions** over registers (the query's variables first, then
//!   temporaries): look up or insert a constructor row, look a function up, call a primitive,
//!   `set`, `union`, `delete`, `subsume`, `panic`.
//! - A **schedule** is a tree of `run` (one iteration of a ruleset, optionally until a query
//!   holds), `repeat`, `saturate` and `seq`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/lang/sexpr.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

using lang::source_span;

enum class function_kind : std::uint8_t { constructor, function };

enum class merge_kind : std::uint8_t {
  unite,       //!< constructors (and relations): unite the two ids
  expression,  //!< `:merge expr`, over `old` (register 0) and `new` (register 1)
  none,        //!< `:no-merge`: two different values are an error
};

//! An operand: a register, a constant value, or a constant id (of an e-class or container: a
//! `let` global's), which engines canonicalize before they use it.
struct operand {
  enum class kind : std::uint8_t { reg, constant, id } type = kind::reg;
  value v = 0;
  static operand reg(value r) noexcept { return {kind::reg, r}; }
  static operand constant(value c) noexcept { return {kind::constant, c}; }
  static operand id(value c) noexcept { return {kind::id, c}; }
  bool is_reg() const noexcept { return type == kind::reg; }
  friend bool operator==(const operand&, const operand&) = default;
};

enum class action_op : std::uint8_t {
  make,     //!< dst = the row of constructor `target` at `args`, inserted with a fresh id if new
  lookup,   //!< dst = the value of function `target` at `args`; missing: an error
  call,     //!< dst = primitive overload `target` applied to `args`; failing: an error
  set,      //!< function `target` at `args[0..n-1]` := args[n-1] (merged with what is there)
  unite,    //!< unite args[0] and args[1]
  remove,   //!< delete the row of `target` at `args`
  subsume,  //!< mark the row of `target` at `args` subsumed
  panic,    //!< stop with message `target` (an index into `action_block::messages`)
};

struct action {
  action_op op = action_op::make;
  std::uint32_t target = 0;
  std::vector<operand> args;
  std::uint32_t dst = 0;  //!< a register (make, lookup, call)
  source_span span;
  VYRE_HOST_SPECIAL_MEMBERS(action);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(action);

//! A sequence of actions over `register_count` registers.
struct action_block {
  std::vector<action> actions;
  std::vector<std::uint32_t> register_sorts;  //!< sort of every register
  std::vector<std::string> messages;          //!< panic messages
  VYRE_HOST_SPECIAL_MEMBERS(action_block);
  std::uint32_t register_count() const noexcept {
    return static_cast<std::uint32_t>(register_sorts.size());
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(action_block);

//! A table atom `function(args...) = out` (`terms` holds the keys, then the value).
struct table_atom {
  std::uint32_t function = 0;
  std::vector<operand> terms;
  VYRE_HOST_SPECIAL_MEMBERS(table_atom);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(table_atom);

//! A primitive atom `prim(args...) = out`: computes `out` (an unbound register) or checks it.
struct prim_atom {
  std::uint32_t prim = 0;  //!< a primitive overload
  std::vector<operand> args;
  operand out;
  VYRE_HOST_SPECIAL_MEMBERS(prim_atom);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(prim_atom);

//! A conjunctive query. Registers `0 .. variable_count()` are its variables; a rule's actions
//! continue the numbering. Constants of id sorts are canonicalized when the query runs.
struct query {
  std::vector<std::uint32_t> variable_sorts;
  std::vector<std::string> variable_names;
  std::vector<table_atom> atoms;
  std::vector<prim_atom> prims;
  //! Constant equalities the front end could decide only at run time (`(= $a $b)` of two
  //! globals): each pair must hold.
  std::vector<std::pair<operand, operand>> equalities;
  bool never = false;  //!< decided false at compile time (`(= 1 2)`)
  VYRE_HOST_SPECIAL_MEMBERS(query);
  std::uint32_t variable_count() const noexcept {
    return static_cast<std::uint32_t>(variable_sorts.size());
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(query);

struct function_decl {
  std::string name;
  function_kind kind = function_kind::constructor;
  std::vector<std::uint32_t> inputs;
  std::uint32_t output = 0;
  merge_kind merge = merge_kind::unite;
  //! `merge == expression`: registers 0 (`old`) and 1 (`new`), the result in `merge_result`.
  action_block merge_actions;
  operand merge_result;
  //! The merge's result is a table call (`:merge (Add old new)`): egglog skips it when the two
  //! values are equal; a primitive merge (`(+ old new)`) runs every time.
  bool merge_skips_equal = false;
  std::uint64_t cost = 1;
  bool unextractable = false;
  bool hidden = false;  //!< not listed by print-size (a global `let`'s table)
  bool relation = false;
  source_span span;
  VYRE_HOST_SPECIAL_MEMBERS(function_decl);
  std::uint32_t arity() const noexcept { return static_cast<std::uint32_t>(inputs.size()); }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(function_decl);

struct rule_decl {
  std::string name;
  std::uint32_t ruleset = 0;
  query body;
  action_block head;   //!< registers continue the body's variables
  bool naive = false;  //!< match the whole database every iteration (`:naive`)
  source_span span;
  VYRE_HOST_SPECIAL_MEMBERS(rule_decl);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(rule_decl);

struct ruleset_decl {
  std::string name;
  std::vector<std::uint32_t> rules;     //!< in declaration order
  std::vector<std::uint32_t> combined;  //!< `unstable-combined-ruleset`: the member rulesets
  bool is_combined = false;
  VYRE_HOST_SPECIAL_MEMBERS(ruleset_decl);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(ruleset_decl);

//! A schedule node; `children` index `schedule::nodes`, the root is the last node.
struct schedule_node {
  enum class kind : std::uint8_t { run, repeat, saturate, seq } type = kind::run;
  std::uint32_t ruleset = 0;
  bool has_until = false;
  query until;
  std::uint64_t times = 1;
  std::vector<std::uint32_t> children;
  source_span span;
  VYRE_HOST_SPECIAL_MEMBERS(schedule_node);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(schedule_node);

struct schedule {
  std::vector<schedule_node> nodes;
  VYRE_HOST_SPECIAL_MEMBERS(schedule);
  std::uint32_t root() const noexcept { return static_cast<std::uint32_t>(nodes.size() - 1); }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(schedule);

}  // namespace vyre::eqsat
