// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::device::rule_plan`: a rule of the relational core (`ir.hpp`) lowered to what
//! the device pieces run, a join over the device's tables plus the rows a match appends, and
//! `plan_rule`, which lowers an eligible rule or says why it cannot. Host code: the GPU engine
//! flattens a plan against its tables (`ematch.cuh`'s `flatten`, `gpu_kernels.cuh`'s apply).
//!
//! Tables. Function `f`'s table on the device is rows of `width = arity + 1` u32, the keys then
//! the value, as in the host `database`: an id column (an eq sort) holds a canonical e-class id,
//! a base-sort column the value's encoding (`values.hpp`). The device holds constructors (the
//! value is the row's e-class; two rows of one key unite their classes) and functions whose
//! `:merge` it evaluates (`device_merge`: `min`/`max` of i64, `and`/`or` of bool, which keep
//! the smaller or larger value whatever order the rows come in; `new`, the value written last,
//! which the device's seminaive search writes as the CPU engine's does; `:no-merge`, whose two
//! values for one key the CPU engine reports), with at most `max_width` columns (`table_fits`).
//!
//! Query. Every table atom of the body is one `plan_atom`; registers are the query's variables.
//! A column binds a register (its first appearance), checks one (bound by an earlier atom or an
//! earlier column), or checks a literal (a constant; an id constant is canonicalized when the
//! plan is made, and again by the engine before each iteration: `id_literals` lists them).
//! Atoms run in plan order as nested loops: atom 0 scans its whole table, every later atom looks
//! its candidate rows up by the value of its `key_column` in an index of its table by that column
//! (or scans its table when it shares nothing with the atoms before it: `no_column`).
//!
//! Join order: start at the atom with the most literal columns (a constant such as `(Const 0)`
//! holds few rows), else at the pattern's root (an atom whose value no other atom takes as a
//! key: its table's every row is a thread of the search, and the children it finds are few per
//! class, where starting at a child finds its parents, many per class); then repeatedly take an
//! atom sharing a bound register, preferring one whose own value column (e-class) is bound (a child
//! of a node already found: the index by e-class yields that class's nodes only) over one bound
//! through a key column (a parent, found through the index by that child).
//!
//! Primitives (`device_prim`): i64 arithmetic and comparisons and `!=`, on i64 values the
//! encoding holds inline ([0, 2^31): `values.hpp`). A primitive atom of the query runs right
//! after the atom that binds the last of its arguments (`plan_prim::atom`), binding its result
//! or checking it; a `call` of the head is a `compute_step` whose result the steps after it read
//! (`operand_kind::computed`). A primitive that fails drops the match in a query, as on the CPU
//! engine. One that meets or would make an i64 outside the inline range (a negative number, an
//! interned one, an error in the head) cannot be decided on the device: the engine hands the
//! iteration back to the CPU engine, which runs it exactly (`device_prim_eval`).
//!
//! Head. `call`s of device primitives and `lookup`s of a function's value (by binary search
//! over its rows as the iteration found them, sorted by their keys; in `:naive` rules only,
//! whose matches the CPU engine finds again every iteration too) are `compute_step`s, run
//! first; a lookup of a key the table does not hold hands the iteration to the CPU engine,
//! which decides it (an error there, unless an earlier match of the iteration set it). `make`
//! actions become `make_node` steps: each appends the row `table(args...)` with a fresh e-class
//! (temp i is step i's class); a fresh row equal to an existing one is merged by the rebuild's
//! congruence, which yields what egglog's lookup-or-insert yields. A `set` appends its row with
//! its value (`set_node`), which the rebuild merges with the row of that key: constructors unite
//! the two classes (egglog's union-to-set), functions fold the values by their merge. Then the
//! match's `unite`s run. A `subsume` makes its row and appends its key to the table's subsumed
//! keys (a table of the keys alone the engine keeps beside a table that is subsumed), which
//! the search's atoms over the table skip: a subsumed row stays for lookups and makes, as on
//! the CPU engine, and is matched no more. A `delete` appends its key to the table's deleted
//! keys (beside it, as the subsumed ones), which the engine takes out of the table after the
//! apply and before the rebuild, as the CPU engine's merge deletes before it writes; a
//! `panic` makes any match hand the iteration to the CPU engine, which stops with its message.
//! Registers saved per match (`saved`): those the head reads.
//!
//! Limits (the flat query's and the apply's fixed arrays): those of `wide_limits` (atoms,
//! query variables, saved registers, appended rows per match, columns per table, primitive
//! atoms, head calls and lookups, unions per match). A rule within `narrow_limits`
//! (`rule_plan::query_fits`, `actions_fit`: every rewrite of math.egg's kind) runs kernels
//! whose query and head are kernel parameters and whose threads keep small arrays, a wider one
//! (luminal's fusion rules) the same kernels, which then read them from device memory.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/i64_ops.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat::device {

//! A size class of the device's per-rule arrays: what a flat query (`ematch.cuh`) and a
//! rule's flattened head (the apply) hold, and the arrays a thread keeps for them: columns of
//! a row (arity + 1), table atoms of a rule's body, query variables, saved registers per match,
//! rows a match appends, primitive atoms of the body, calls and lookups of the head, unions of
//! the head.
template <std::uint32_t Width, std::uint32_t Atoms, std::uint32_t Registers, std::uint32_t Saved,
          std::uint32_t Steps, std::uint32_t Prims, std::uint32_t Computes, std::uint32_t Unites>
struct size_class {
  static constexpr std::uint32_t width = Width, atoms = Atoms, registers = Registers, saved = Saved,
                                 steps = Steps, prims = Prims, computes = Computes, unites = Unites;
};

//! The narrow class: the query and head fit in kernel parameters (about 1.3 KB).
using narrow_limits = size_class<8, 8, 32, 16, 16, 8, 8, 4>;
//! The wide class: rules of up to 128 atoms over rows of up to 32 columns (a thread keeps
//! about 1.3 KB of registers and row ids in local memory).
using wide_limits = size_class<32, 128, 192, 64, 64, 16, 16, 8>;

//! Columns of a row the device holds at the most: the wide class's.
inline constexpr std::uint32_t max_width = wide_limits::width;

enum class column_op : std::uint8_t {
  bind,     //!< store the row's value in register `value`
  check,    //!< the row's value must equal register `value`
  literal,  //!< the row's value must equal `value`
};

struct plan_column {
  column_op op = column_op::bind;
  std::uint32_t value = 0;
};

inline constexpr std::uint32_t no_column = 0xffffffffu;

//! The primitives the device evaluates: codes below `i64_op_count` are the `i64_op`s (i64 ->
//! i64; `device_i64`), then the filters in `compare_op` order (Unit), then `not_equal`, which
//! compares two values of any sort the device holds (canonical ids, base values) as the CPU
//! engine's `!=` does.
enum class device_prim : std::uint8_t {
  less = i64_op_count,
  greater,
  less_equal,
  greater_equal,
  not_equal,
};

//! The device primitive of `op`.
VYRE_HOST_DEVICE constexpr device_prim device_i64(i64_op op) noexcept {
  return static_cast<device_prim>(op);
}

//! Whether `op` yields an i64 (else it is a filter whose result is Unit).
VYRE_HOST_DEVICE constexpr bool yields_i64(device_prim op) noexcept {
  return static_cast<std::uint32_t>(op) < i64_op_count;
}

//! What a device primitive did: a value, egglog's failure (a query drops the match), or a
//! value it cannot decide on the device (an i64 outside [0, 2^31) as argument or result).
enum class prim_outcome : std::uint8_t { ok, fail, outside };

//! The i64 values the encoding holds inline: [0, 2^31) is the number itself.
inline constexpr std::uint32_t inline_i64_end = 0x80000000u;

//! `op` applied to the encoded values `a` and `b` (every device primitive is binary), the
//! result's encoding in `out` (Unit: 0), by the same `i64_apply` and `compare_holds` as the
//! CPU engine's catalog; an i64 outside the inline range is `outside`.
VYRE_HOST_DEVICE constexpr prim_outcome device_prim_eval(device_prim op, std::uint32_t a,
                                                         std::uint32_t b,
                                                         std::uint32_t& out) noexcept {
  if (op == device_prim::not_equal) {
    out = 0;
    return a != b ? prim_outcome::ok : prim_outcome::fail;
  }
  if (a >= inline_i64_end || b >= inline_i64_end) return prim_outcome::outside;
  const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
  const auto code = static_cast<std::uint32_t>(op);
  if (!yields_i64(op)) {
    out = 0;
    const int cmp = x < y ? -1 : (x > y ? 1 : 0);
    return compare_holds(static_cast<compare_op>(code - i64_op_count), cmp) ? prim_outcome::ok
                                                                            : prim_outcome::fail;
  }
  std::int64_t r = 0;
  if (!i64_apply(static_cast<i64_op>(code), x, y, r)) return prim_outcome::fail;
  if (r < 0 || r >= static_cast<std::int64_t>(inline_i64_end)) return prim_outcome::outside;
  out = static_cast<std::uint32_t>(r);
  return prim_outcome::ok;
}

//! egglog's name of `op`.
constexpr const char* device_prim_name(device_prim op) noexcept {
  const auto code = static_cast<std::uint32_t>(op);
  if (code < i64_op_count) return i64_op_names[code];
  return op == device_prim::not_equal ? "!=" : compare_names[code - i64_op_count];
}

//! The device primitive that overload `o` of the catalog is, if the device evaluates it:
//! the `i64_op`s and the filters on i64, and `!=` on a sort the device holds (not a container
//! or function sort).
inline bool device_prim_of(const std::vector<sort_info>& sorts, const prim_overload& o,
                           device_prim& out) {
  if (!o.repeated.empty() || o.fixed.size() != 2) return false;
  if (o.name == "!=") {
    const std::uint32_t s = o.fixed[0];
    if (s >= sorts.size() || o.fixed[1] != s || is_container(sorts[s].kind)) return false;
    out = device_prim::not_equal;
    return true;
  }
  if (o.fixed[0] != sorts::i64 || o.fixed[1] != sorts::i64) return false;
  for (std::uint32_t k = 0; k < i64_op_count; ++k)
    if (o.name == i64_op_names[k] && o.result == sorts::i64) {
      out = device_i64(static_cast<i64_op>(k));
      return true;
    }
  for (std::uint32_t k = 0; k < filter_count; ++k)
    if (o.name == compare_names[k] && o.result == sorts::unit) {
      out = static_cast<device_prim>(i64_op_count + k);
      return true;
    }
  return false;
}

//! A primitive atom of the query: `op(args) = out`, run right after atom `atom` binds its row.
//! An argument is a register (`column_op::check`) or a constant (`literal`); `out` binds a
//! register, checks one, or checks a constant.
struct plan_prim {
  device_prim op = device_prim::not_equal;
  std::uint32_t atom = 0;
  plan_column args[2];
  plan_column out;
};

struct plan_atom {
  std::uint32_t table = 0;  //!< a function of the declarations
  //! `arity + 1` columns; the last is the row's value (its e-class).
  std::vector<plan_column> columns;
  //! The column whose value is known before this atom runs (a check or literal column), used
  //! to look the candidate rows up in an index; `no_column`: every row is a candidate.
  std::uint32_t key_column = no_column;
  //! A second known column, looked up with the first in an index by the pair, so the
  //! candidates are the rows that agree on both (`(And a (Or a b))` finds the `Or` rows of a
  //! class whose first argument is `a`, not every `Or` row of the class); `no_column`: none.
  std::uint32_t key_column2 = no_column;
  VYRE_HOST_SPECIAL_MEMBERS(plan_atom);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(plan_atom);

enum class operand_kind : std::uint8_t {
  saved,     //!< slot `value` of the saved match (`rule_plan::saved`)
  constant,  //!< the value `value` itself
  temp,      //!< the fresh e-class of make step `value`
  computed,  //!< the result of compute step `value`
};

struct plan_operand {
  operand_kind kind = operand_kind::saved;
  std::uint32_t value = 0;
  friend bool operator==(const plan_operand&, const plan_operand&) = default;
};

//! Appends the row `table(args...)` with a fresh e-class (the step's temp).
struct make_node {
  std::uint32_t table = 0;
  std::vector<plan_operand> args;
  VYRE_HOST_SPECIAL_MEMBERS(make_node);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(make_node);

//! Appends the row `table(args...)` with the value `value`: the rebuild merges it with the row
//! of that key already there, if any, by the table's merge (`device_merge`).
struct set_node {
  std::uint32_t table = 0;
  std::vector<plan_operand> args;
  plan_operand value;
  VYRE_HOST_SPECIAL_MEMBERS(set_node);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(set_node);

enum class compute_kind : std::uint8_t {
  call,    //!< `op(args[0], args[1])`, an i64
  lookup,  //!< the value of function `table` at the keys `args[0, arg_count)`
};

//! A value the head computes per match before its rows, its operands saved registers,
//! constants or earlier steps' results: a primitive call, or a lookup of a function's value
//! in the table as the iteration found it (a key it does not hold hands the iteration to the
//! CPU engine, where it is an error unless an earlier match of the iteration set it).
struct compute_step {
  compute_kind kind = compute_kind::call;
  device_prim op = device_i64(i64_op::add);  //!< `call`: the primitive
  std::uint32_t table = 0;                   //!< `lookup`: the function
  std::uint32_t arg_count = 2;
  plan_operand args[max_width - 1];
};

struct rule_plan {
  std::uint32_t rule = 0;            //!< the rule's index in the declarations
  std::uint32_t register_count = 0;  //!< the query's variables
  std::vector<plan_atom> atoms;
  //! The query's primitive atoms, by the atom after which each runs (ascending).
  std::vector<plan_prim> prims;
  //! Query registers saved per match, in slot order: those the head reads, in the order read.
  std::vector<std::uint32_t> saved;
  //! The head's primitive calls and lookups, run per match before its rows are written.
  std::vector<compute_step> computes;
  std::vector<make_node> actions;  //!< the makes in order; step i's fresh class is temp i
  std::vector<set_node> sets;      //!< the sets in order (steps after the makes)
  //! The rows the match subsumes, `table(args...)` (each also made, as egglog adds a missing
  //! row before it subsumes it): steps after the sets, each appending the key to the table's
  //! subsumed keys, which the engine keeps beside it.
  std::vector<make_node> subsumed;
  //! The rows the match deletes, `table(args...)` (a make_node without its make): steps after
  //! the subsumed rows, each appending the key to the table's deleted keys, which the engine
  //! keeps beside it and applies before the rebuild.
  std::vector<make_node> deleted;
  //! Whether the head panics: a match hands the iteration to the CPU engine, which stops with
  //! the rule's message.
  bool panics = false;
  //! The unions, `(left, right)` each, run after the match's rows are written.
  std::vector<std::array<plan_operand, 2>> unites;
  //! (atom, column) of every literal that is an id constant (a global's e-class): the engine
  //! canonicalizes them before each iteration, as unions move their classes.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> id_literals;
  VYRE_HOST_SPECIAL_MEMBERS(rule_plan);

  //! Rows a match appends: one per make, set, subsumed and deleted row.
  std::uint32_t step_count() const noexcept {
    return static_cast<std::uint32_t>(actions.size() + sets.size() + subsumed.size() +
                                      deleted.size());
  }
  //! The function of step `s` (the makes, the sets, then the subsumed rows, whose step appends
  //! to that function's subsumed keys, then the deleted rows, whose step appends to its
  //! deleted keys).
  std::uint32_t step_table(std::size_t s) const noexcept {
    if (s < actions.size()) return actions[s].table;
    s -= actions.size();
    if (s < sets.size()) return sets[s].table;
    s -= sets.size();
    return s < subsumed.size() ? subsumed[s].table : deleted[s - subsumed.size()].table;
  }
  //! Whether step `s` appends a subsumed key.
  bool subsumes(std::size_t s) const noexcept {
    const std::size_t first = actions.size() + sets.size();
    return s >= first && s < first + subsumed.size();
  }
  //! Whether step `s` appends a deleted key.
  bool deletes(std::size_t s) const noexcept {
    return s >= actions.size() + sets.size() + subsumed.size();
  }
  //! Whether the query fits the arrays of `Limits` (`narrow_limits`: its kernels take it as a
  //! parameter); every plan fits `wide_limits`.
  template <class Limits>
  bool query_fits() const noexcept {
    std::size_t widest = 0;
    for (const plan_atom& a : atoms) widest = (std::max)(widest, a.columns.size());
    return atoms.size() <= Limits::atoms && register_count <= Limits::registers &&
           saved.size() <= Limits::saved && widest <= Limits::width &&
           prims.size() <= Limits::prims;
  }
  //! Whether the head fits the arrays of `Limits`: its steps, rows of at most `Limits::width`
  //! columns (a step's row is its key and one value), computes and unions.
  template <class Limits>
  bool actions_fit() const noexcept {
    std::size_t widest = 0;
    for (const make_node& m : actions) widest = (std::max)(widest, m.args.size() + 1);
    for (const set_node& st : sets) widest = (std::max)(widest, st.args.size() + 1);
    for (const make_node& m : subsumed) widest = (std::max)(widest, m.args.size() + 1);
    for (const make_node& m : deleted) widest = (std::max)(widest, m.args.size() + 1);
    for (const compute_step& c : computes)
      widest = (std::max)(widest, c.arg_count + std::size_t{1});
    return step_count() <= Limits::steps && widest <= Limits::width &&
           saved.size() <= Limits::saved && computes.size() <= Limits::computes &&
           unites.size() <= Limits::unites;
  }
  //! The indexes the plan looks rows up in: (table, key column, second key column or
  //! `no_column`).
  std::vector<std::array<std::uint32_t, 3>> index_keys() const {
    std::vector<std::array<std::uint32_t, 3>> keys;
    for (std::size_t k = 1; k < atoms.size(); ++k)
      if (atoms[k].key_column != no_column)
        keys.push_back({atoms[k].table, atoms[k].key_column, atoms[k].key_column2});
    return keys;
  }
  //! A readable listing (one atom or step per line), for docs and debugging.
  std::string describe(const declarations& decl) const {
    std::string out;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
      const plan_atom& a = atoms[i];
      out += i == 0 ? "scan " : (a.key_column == no_column ? "scan " : "lookup ");
      out += decl.functions[a.table].name + "(";
      for (std::size_t c = 0; c < a.columns.size(); ++c) {
        if (c + 1 == a.columns.size())
          out += ") -> ";
        else if (c != 0)
          out += ", ";
        const plan_column& col = a.columns[c];
        if (i != 0 && (c == a.key_column || c == a.key_column2)) out += "*";
        if (col.op == column_op::literal) {
          out += "#" + std::to_string(col.value);
        } else {
          out += col.op == column_op::bind ? "r" : "=r";
          out += std::to_string(col.value);
        }
      }
      out += "\n";
      for (const plan_prim& p : prims) {
        if (p.atom != i) continue;
        const auto term = [](const plan_column& col) {
          return (col.op == column_op::literal ? "#"
                  : col.op == column_op::bind  ? "r"
                                               : "=r") +
                 std::to_string(col.value);
        };
        out += "  prim " + std::string(device_prim_name(p.op)) + "(" + term(p.args[0]) + ", " +
               term(p.args[1]) + ") -> " + term(p.out) + "\n";
      }
    }
    auto text = [](const plan_operand& o) {
      if (o.kind == operand_kind::constant) return "#" + std::to_string(o.value);
      constexpr char kinds[] = {'s', '#', 't', 'c'};
      return std::string(1, kinds[static_cast<int>(o.kind)]) + std::to_string(o.value);
    };
    const auto row = [&](std::uint32_t table, const plan_operand* args, std::size_t n) {
      std::string s = decl.functions[table].name + "(";
      for (std::size_t c = 0; c < n; ++c) s += (c != 0 ? ", " : "") + text(args[c]);
      return s + ")";
    };
    for (std::size_t i = 0; i < computes.size(); ++i) {
      const compute_step& c = computes[i];
      out += "c" + std::to_string(i) + " = ";
      if (c.kind == compute_kind::lookup)
        out += "lookup " + row(c.table, c.args, c.arg_count) + "\n";
      else
        out += std::string(device_prim_name(c.op)) + "(" + text(c.args[0]) + ", " +
               text(c.args[1]) + ")\n";
    }
    for (std::size_t i = 0; i < actions.size(); ++i)
      out += "t" + std::to_string(i) + " = " +
             row(actions[i].table, actions[i].args.data(), actions[i].args.size()) + "\n";
    for (const set_node& st : sets)
      out +=
          "set " + row(st.table, st.args.data(), st.args.size()) + " -> " + text(st.value) + "\n";
    for (const make_node& m : subsumed)
      out += "subsume " + row(m.table, m.args.data(), m.args.size()) + "\n";
    for (const auto& u : unites) out += "unite " + text(u[0]) + " " + text(u[1]) + "\n";
    return out;
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(rule_plan);

//! The rules of ruleset `ruleset`, a combined ruleset's members' too, ascending and distinct
//! (as `cpu_engine` collects them).
inline std::vector<std::uint32_t> ruleset_rules(const declarations& decl, std::uint32_t ruleset) {
  std::vector<std::uint32_t> out;
  std::vector<std::uint32_t> todo{ruleset};
  std::vector<std::uint8_t> seen(decl.rulesets.size(), 0);
  while (!todo.empty()) {
    const std::uint32_t rs = todo.back();
    todo.pop_back();
    if (rs >= seen.size() || seen[rs]) continue;
    seen[rs] = 1;
    const ruleset_decl& d = decl.rulesets[rs];
    out.insert(out.end(), d.rules.begin(), d.rules.end());
    for (auto it = d.combined.rbegin(); it != d.combined.rend(); ++it) todo.push_back(*it);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

//! How the device merges two values of one key of a table (see the file comment).
enum class device_merge : std::uint8_t {
  unite,  //!< a constructor's: the two e-classes are united (the rebuild's congruence)
  min,    //!< `:merge (min old new)` of i64, `(and old new)` of bool: the smaller value
  max,    //!< `:merge (max old new)` of i64, `(or old new)` of bool: the larger value
  //! `:merge new`: the value written last. The device's seminaive search finds each match
  //! once, as the CPU engine's does, and its rows keep the order they were written in.
  replace,
  none,  //!< `:no-merge`: two different values are an error (the CPU engine reports it)
};

//! The merge of function `f` as the device runs it: constructors unite; a function whose
//! output is i64 or bool and whose `:merge` is one call of `min`/`max` (i64) or `and`/`or`
//! (bool) over `old` and `new` keeps the smaller or larger value (on the i64s the device holds,
//! [0, 2^31), the encoding's order is the numbers'); `:merge new` replaces; `:no-merge` keeps
//! the one value. @returns false for any other merge.
inline bool device_merge_of(const declarations& decl, std::uint32_t f, device_merge& out) {
  const function_decl& fn = decl.functions[f];
  if (fn.kind == function_kind::constructor) {
    out = device_merge::unite;
    return true;
  }
  if (fn.merge == merge_kind::none) {
    out = device_merge::none;
    return true;
  }
  if (fn.merge == merge_kind::expression && fn.merge_actions.actions.empty() &&
      fn.merge_result == operand::reg(1)) {
    out = device_merge::replace;
    return true;
  }
  if (fn.merge != merge_kind::expression || fn.merge_actions.actions.size() != 1 ||
      (fn.output != sorts::i64 && fn.output != sorts::boolean))
    return false;
  const action& a = fn.merge_actions.actions[0];
  if (a.op != action_op::call || a.target >= decl.prims.size() || a.args.size() != 2 ||
      !fn.merge_result.is_reg() || fn.merge_result.v != a.dst)
    return false;
  const bool old_new = a.args[0] == operand::reg(0) && a.args[1] == operand::reg(1);
  const bool new_old = a.args[0] == operand::reg(1) && a.args[1] == operand::reg(0);
  if (!old_new && !new_old) return false;
  const prim_overload& o = decl.prims[a.target];
  if (o.result != fn.output || o.arg_sort(0) != fn.output || o.arg_sort(1) != fn.output)
    return false;
  const bool on_i64 = fn.output == sorts::i64;
  if (o.name == (on_i64 ? "min" : "and")) {
    out = device_merge::min;
    return true;
  }
  if (o.name == (on_i64 ? "max" : "or")) {
    out = device_merge::max;
    return true;
  }
  return false;
}

//! Whether function `f` is merged by `min` or `max` over i64: the device compares its values,
//! so they must be those the encoding holds inline, [0, 2^31).
inline bool orders_i64(const declarations& decl, std::uint32_t f) {
  device_merge merge = device_merge::unite;
  return device_merge_of(decl, f, merge) &&
         (merge == device_merge::min || merge == device_merge::max) &&
         decl.functions[f].output == sorts::i64;
}

//! Whether function `f` can live on the device: a constructor (relations are constructors)
//! or a function the device merges (`device_merge_of`), whose columns are eq sorts or base
//! sorts, at most `max_width` of them. The error (`errc::unsupported`) names the function and
//! says why.
inline expected<void> table_fits(const declarations& decl, std::uint32_t f) {
  const function_decl& fn = decl.functions[f];
  device_merge merge = device_merge::unite;
  if (!device_merge_of(decl, f, merge))
    return fail(error(errc::unsupported,
                      "the GPU engine holds constructors, functions merged by new or with "
                      ":no-merge, and functions of i64 or bool merged by min, max, and or or")
                    .about(fn.name)
                    .fix("the iterations that read or write this function run on the CPU "
                         "engine (--device cpu runs them all there)"));
  if (fn.arity() + 1 > max_width)
    return fail(error(errc::unsupported, "a function has more arguments than the GPU engine takes")
                    .about(fn.name)
                    .with("arity", fn.arity())
                    .with("max", max_width - 1)
                    .fix("run this program on the CPU engine (--device cpu)"));
  for (std::uint32_t c = 0; c <= fn.arity(); ++c) {
    const sort_info& s = decl.sorts[c < fn.arity() ? fn.inputs[c] : fn.output];
    if (s.kind != sort_kind::eq && !is_base(s.kind))
      return fail(error(errc::unsupported,
                        "the GPU engine holds eq and base sorts only: a function has a "
                        "container or function column")
                      .about(fn.name)
                      .fix("run this program on the CPU engine (--device cpu)"));
  }
  return {};
}

//! Whether the table of function `f` moves to the device with the state: every table that
//! holds ids (the device's unions must reach its rows; `gpu_resident_check` refuses a state
//! whose such tables do not fit), and every other table that fits (`table_fits`: a function
//! of base sorts the device merges), so rules over it can run there.
inline bool device_resident(const declarations& decl, std::uint32_t f) {
  const function_decl& fn = decl.functions[f];
  bool ids = decl.sorts[fn.output].is_id;
  for (const std::uint32_t s : fn.inputs) ids = ids || decl.sorts[s].is_id;
  return ids || static_cast<bool>(table_fits(decl, f));
}

//! Per function, whether the GPU engine keeps its subsumed keys beside its table: a
//! constructor the device holds that a rule of `decl` subsumes or that holds a subsumed row in
//! `db`.
inline std::vector<std::uint8_t> subsumed_tables(const declarations& decl, const database& db) {
  std::vector<std::uint8_t> out(decl.functions.size(), 0);
  for (const rule_decl& rule : decl.rules)
    for (const action& a : rule.head.actions)
      if (a.op == action_op::subsume && a.target < out.size()) out[a.target] = 1;
  for (std::size_t f = 0; f < out.size() && f < db.tables.size(); ++f) {
    const table& t = db.tables[f];
    for (std::size_t r = 0; r < t.rows() && out[f] == 0; ++r)
      out[f] = t.state(r) == row_state::subsumed ? 1 : 0;
  }
  for (std::size_t f = 0; f < out.size(); ++f)
    if (decl.functions[f].kind != function_kind::constructor ||
        !table_fits(decl, static_cast<std::uint32_t>(f)))
      out[f] = 0;
  return out;
}

//! Per function, whether a rule of `decl` deletes its rows: the GPU engine then keeps its
//! deleted keys beside its table (a function it holds), and every rule that writes it matches
//! seminaively (a match found again would write a deleted row again).
inline std::vector<std::uint8_t> deleted_tables(const declarations& decl) {
  std::vector<std::uint8_t> out(decl.functions.size(), 0);
  for (const rule_decl& rule : decl.rules)
    for (const action& a : rule.head.actions)
      if (a.op == action_op::remove && a.target < out.size()) out[a.target] = 1;
  for (std::size_t f = 0; f < out.size(); ++f)
    if (!table_fits(decl, static_cast<std::uint32_t>(f))) out[f] = 0;
  return out;
}

//! Whether the GPU engine keeps a timestamp per row for `decl`'s program, and so searches
//! seminaively: where a function or a relation is declared (Datalog-style rules, whose matches
//! are mostly old ones, and the functions merged by `new` or with `:no-merge`, whose rules must
//! match once) or a rule deletes. A program of constructors and rewrites alone, whose e-graph
//! grows fastest and whose matches are mostly new, matches naively (its writes are idempotent:
//! the same e-graph) and keeps the 4 bytes a row.
inline bool keeps_timestamps(const declarations& decl) {
  for (const function_decl& fn : decl.functions)
    if (fn.kind != function_kind::constructor || fn.relation) return true;
  for (const std::uint8_t d : deleted_tables(decl))
    if (d != 0) return true;
  return false;
}

namespace detail {

inline error rule_refused(const rule_decl& rule, const char* why) {
  return error(errc::unsupported, why)
      .about(rule.name)
      .fix("the iterations of a ruleset with this rule run on the CPU engine");
}

//! The subject of a refusal that names primitive `prim`: the primitive, then the rule (an
//! error keeps a long subject's tail).
inline std::string naming_primitive(const declarations& decl, const rule_decl& rule,
                                    std::uint32_t prim) {
  return "`" + (prim < decl.prims.size() ? decl.prims[prim].name : std::string("?")) + "` in " +
         rule.name;
}

//! A refusal of `rule` for what it does with function `f` (`why`), naming the function, then
//! the rule.
inline error function_refused(const declarations& decl, const rule_decl& rule, const char* why,
                              std::uint32_t f) {
  return rule_refused(rule, why).about(
      "`" + (f < decl.functions.size() ? decl.functions[f].name : std::string("?")) + "` in " +
      rule.name);
}

//! A refusal of `rule`, which reads or sets function `f`, a table the device does not hold
//! (`table_fits`).
inline error unheld_function(const declarations& decl, const rule_decl& rule, std::uint32_t f) {
  return function_refused(decl, rule,
                          "a rule reads or sets a function the GPU engine does not hold "
                          "(constructors, functions merged by new or with :no-merge, and "
                          "functions of i64 or bool merged by min, max, and or or, in at most "
                          "32 columns)",
                          f);
}

}  // namespace detail

//! Rule `rule` of `decl` lowered to a device plan (see the file comment); its id constants
//! canonical in `db`. @returns `errc::unsupported` naming the rule and why when it is not one
//! the device runs: its body must be table atoms over device tables (`table_fits`) and device
//! primitives, with no run-time equalities and not decided false; its head device primitive
//! calls, lookups, `make`s, `set`s, `subsume`s and `unite`s over device tables; and it must fit
//! the limits.
inline expected<rule_plan> plan_rule(const declarations& decl, const database& db,
                                     const rule_decl& rule) {
  const query& q = rule.body;
  const std::uint32_t variables = q.variable_count();
  if (q.never) return fail(detail::rule_refused(rule, "a rule whose query never holds"));
  if (q.prims.size() > wide_limits::prims)
    return fail(detail::rule_refused(rule, "more primitive atoms than the GPU engine evaluates")
                    .with("primitives", q.prims.size())
                    .with("max", wide_limits::prims));
  if (!q.equalities.empty())
    return fail(detail::rule_refused(rule, "the GPU engine matches no equality of globals"));
  if (q.atoms.empty())
    return fail(detail::rule_refused(rule, "the GPU engine matches no query without tables"));
  if (q.atoms.size() > wide_limits::atoms)
    return fail(detail::rule_refused(rule, "more table atoms than the GPU engine joins")
                    .with("atoms", q.atoms.size())
                    .with("max", wide_limits::atoms));
  if (variables > wide_limits::registers)
    return fail(detail::rule_refused(rule, "more query variables than the GPU engine keeps")
                    .with("variables", variables)
                    .with("max", wide_limits::registers));
  const auto canonical = [&](value v) { return v < db.ids.size() ? db.ids.find_const(v) : v; };

  rule_plan plan;
  if (!decl.rules.empty() && &rule >= decl.rules.data() &&
      &rule < decl.rules.data() + decl.rules.size())
    plan.rule = static_cast<std::uint32_t>(&rule - decl.rules.data());
  plan.register_count = variables;
  // The atoms as the body has them, with their literal counts.
  const std::size_t n = q.atoms.size();
  std::vector<plan_atom> pattern(n);
  std::vector<std::uint32_t> literals(n, 0);
  std::vector<std::vector<std::uint8_t>> id_literal(n);
  for (std::size_t i = 0; i < n; ++i) {
    const table_atom& ta = q.atoms[i];
    if (ta.function >= decl.functions.size())
      return fail(detail::rule_refused(rule, "an atom names no function"));
    if (!table_fits(decl, ta.function))
      return fail(detail::unheld_function(decl, rule, ta.function));
    if (ta.terms.size() != decl.functions[ta.function].arity() + 1u)
      return fail(detail::rule_refused(rule, "an atom's columns do not fit its table"));
    pattern[i].table = ta.function;
    id_literal[i].assign(ta.terms.size(), 0);
    for (std::size_t c = 0; c < ta.terms.size(); ++c) {
      const operand& o = ta.terms[c];
      if (o.is_reg()) {
        if (o.v >= variables)
          return fail(detail::rule_refused(rule, "an atom reads a register past the query's"));
        pattern[i].columns.push_back(plan_column{column_op::bind, o.v});
        continue;
      }
      const bool is_id = o.type == operand::kind::id;
      pattern[i].columns.push_back(plan_column{column_op::literal, is_id ? canonical(o.v) : o.v});
      id_literal[i][c] = is_id ? 1 : 0;
      ++literals[i];
    }
  }

  // Primitive atoms: device primitives over registers and constants the device decides.
  std::vector<plan_prim> prims(q.prims.size());
  for (std::size_t p = 0; p < q.prims.size(); ++p) {
    const prim_atom& pa = q.prims[p];
    if (pa.prim >= decl.prims.size() ||
        !device_prim_of(decl.sorts, decl.prims[pa.prim], prims[p].op) || pa.args.size() != 2)
      return fail(detail::rule_refused(rule,
                                       "a primitive in the query that the GPU engine does "
                                       "not evaluate")
                      .about(detail::naming_primitive(decl, rule, pa.prim)));
    const bool on_i64 = prims[p].op != device_prim::not_equal;
    const auto term = [&](const operand& o, plan_column& col) {
      if (o.type == operand::kind::id) return false;  // a global: its class moves
      if (o.is_reg()) {
        col = plan_column{column_op::check, o.v};
        return o.v < variables;
      }
      col = plan_column{column_op::literal, o.v};
      return !on_i64 || o.v < inline_i64_end || &o == &pa.out;
    };
    if (!term(pa.args[0], prims[p].args[0]) || !term(pa.args[1], prims[p].args[1]) ||
        !term(pa.out, prims[p].out))
      return fail(detail::rule_refused(rule,
                                       "a primitive in the query reads a global or an i64 "
                                       "outside [0, 2^31), which the GPU engine does not "
                                       "evaluate"));
  }
  std::vector<std::uint8_t> prim_placed(prims.size(), 0);

  // Join order (see the file comment).
  // The root: an atom whose value no other atom takes as a key (the body lists children first).
  // A function's row is found through its keys (an analysis of a class already found), so a
  // function atom counts as a child.
  std::vector<std::uint8_t> is_child(n, 0), is_function(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    is_function[i] = decl.functions[pattern[i].table].kind != function_kind::constructor;
    is_child[i] = is_function[i];
    const plan_column& own = pattern[i].columns.back();
    if (own.op != column_op::bind) continue;
    for (std::size_t j = 0; j < n && is_child[i] == 0; ++j)
      for (std::size_t c = 0; j != i && c + 1 < pattern[j].columns.size(); ++c)
        if (pattern[j].columns[c].op == column_op::bind && pattern[j].columns[c].value == own.value)
          is_child[i] = 1;
  }
  std::vector<std::uint8_t> taken(n, 0), bound(variables, 0);
  std::size_t start = 0;
  for (std::size_t i = 1; i < n; ++i)
    if (literals[i] > literals[start] ||
        (literals[i] == literals[start] && is_child[start] != 0 && is_child[i] == 0))
      start = i;
  const auto emit = [&](std::size_t i, bool first) {
    plan_atom atom = pattern[i];
    const auto width = static_cast<std::uint32_t>(atom.columns.size());
    const auto known = [&](const plan_column& col) {
      return col.op == column_op::literal || (!first && bound[col.value] != 0);
    };
    // Key column: a constructor's own e-class when known, else the first known column.
    if (!first && is_function[i] == 0 && known(atom.columns[width - 1]))
      atom.key_column = width - 1;
    for (std::uint32_t c = 0; c < width && atom.key_column == no_column; ++c)
      if (known(atom.columns[c])) atom.key_column = c;
    for (std::uint32_t c = 0; !first && atom.key_column != no_column && c < width; ++c)
      if (c != atom.key_column && atom.key_column2 == no_column && known(atom.columns[c]))
        atom.key_column2 = c;
    for (std::uint32_t c = 0; c < width; ++c) {
      plan_column& col = atom.columns[c];
      if (col.op == column_op::literal) {
        if (id_literal[i][c] != 0)
          plan.id_literals.emplace_back(static_cast<std::uint32_t>(plan.atoms.size()), c);
        continue;
      }
      if (bound[col.value] != 0) {
        col.op = column_op::check;
      } else {
        col.op = column_op::bind;
        bound[col.value] = 1;
      }
    }
    taken[i] = 1;
    plan.atoms.push_back(std::move(atom));
    // The primitives whose arguments are bound now run after this atom; a result binds its
    // register, so later atoms check it (or look it up).
    for (bool placed = true; placed;) {
      placed = false;
      for (std::size_t p = 0; p < prims.size(); ++p) {
        plan_prim& pp = prims[p];
        const auto ready = [&](const plan_column& col) {
          return col.op == column_op::literal || bound[col.value] != 0;
        };
        if (prim_placed[p] != 0 || !ready(pp.args[0]) || !ready(pp.args[1])) continue;
        pp.atom = static_cast<std::uint32_t>(plan.atoms.size() - 1);
        if (pp.out.op != column_op::literal && bound[pp.out.value] == 0) {
          pp.out.op = column_op::bind;
          bound[pp.out.value] = 1;
        }
        plan.prims.push_back(pp);
        prim_placed[p] = 1;
        placed = true;
      }
    }
  };
  emit(start, true);
  for (std::size_t step = 1; step < n; ++step) {
    std::size_t pick = n;
    int pick_rank = -1;  // 3: by its e-class, 2: through a bound column, 1: a literal, 0: none
    for (std::size_t i = 0; i < n; ++i) {
      if (taken[i] != 0) continue;
      const plan_atom& a = pattern[i];
      int rank = 0;
      const plan_column& own = a.columns.back();
      if (is_function[i] == 0 && (own.op == column_op::literal || bound[own.value] != 0)) {
        rank = 3;
      } else {
        for (const plan_column& col : a.columns) {
          if (col.op == column_op::literal)
            rank = (std::max)(rank, 1);
          else if (bound[col.value] != 0)
            rank = 2;
        }
      }
      if (rank > pick_rank) {
        pick = i;
        pick_rank = rank;
      }
    }
    emit(pick, false);
  }
  for (const std::uint8_t placed : prim_placed)
    if (placed == 0)
      return fail(detail::rule_refused(rule,
                                       "a primitive of the query whose arguments no atom "
                                       "binds"));

  // Head: calls and lookups, makes, sets and unions, each reading what was written before it.
  const action_block& head = rule.head;
  std::vector<std::uint32_t> temp_of(head.register_count(), ~0u);      // register -> make step
  std::vector<std::uint32_t> computed_of(head.register_count(), ~0u);  // register -> compute
  const auto written = [&](std::uint32_t r) {
    return r < variables || temp_of[r] != ~0u || computed_of[r] != ~0u;
  };
  std::vector<std::uint32_t> slot_of(variables, ~0u);
  // An operand as the apply reads it; a query register read for the first time is saved.
  const auto lower = [&](const operand& o) -> plan_operand {
    if (o.type == operand::kind::constant) return {operand_kind::constant, o.v};
    if (o.type == operand::kind::id) return {operand_kind::constant, canonical(o.v)};
    if (o.v < variables) {
      if (slot_of[o.v] == ~0u) {
        slot_of[o.v] = static_cast<std::uint32_t>(plan.saved.size());
        plan.saved.push_back(o.v);
      }
      return {operand_kind::saved, slot_of[o.v]};
    }
    if (computed_of[o.v] != ~0u) return {operand_kind::computed, computed_of[o.v]};
    return {operand_kind::temp, temp_of[o.v]};
  };
  const auto fresh_dst = [&](const action& a) {
    return a.dst >= variables && a.dst < head.register_count() && !written(a.dst);
  };
  for (const action& a : head.actions) {
    for (const operand& o : a.args)
      if (o.is_reg() && (o.v >= head.register_count() || !written(o.v)))
        return fail(detail::rule_refused(rule, "an action reads a register nothing wrote"));
    // Calls and lookups read no fresh class: it is in no table yet, and no primitive takes one.
    const auto reads_temp = [&] {
      for (const operand& o : a.args)
        if (o.is_reg() && temp_of[o.v] != ~0u) return true;
      return false;
    };
    // Keys the device looks up before the rebuild: a global's class or one the match made is
    // not yet the class the table holds.
    const auto keyed_by_made = [&] {
      for (const operand& o : a.args)
        if (o.type == operand::kind::id) return true;
      return reads_temp();
    };
    // The row a subsume or a delete names, `target(args...)`, where the device holds it.
    const auto row_named = [&](bool held, const char* not_held) -> expected<make_node> {
      if (!held || !table_fits(decl, a.target))
        return fail(detail::function_refused(decl, rule, not_held, a.target));
      if (a.args.size() != decl.functions[a.target].arity())
        return fail(detail::rule_refused(rule, "an action's arguments do not fit its table"));
      make_node m;
      m.table = a.target;
      for (const operand& o : a.args) m.args.push_back(lower(o));
      return m;
    };
    switch (a.op) {
      case action_op::make: {
        if (!fresh_dst(a))
          return fail(detail::rule_refused(rule,
                                           "a make writes a register the GPU engine does "
                                           "not expect"));
        if (decl.functions[a.target].kind != function_kind::constructor ||
            !table_fits(decl, a.target))
          return fail(detail::function_refused(decl, rule, "a make's table cannot live on the GPU",
                                               a.target));
        if (a.args.size() != decl.functions[a.target].arity())
          return fail(detail::rule_refused(rule, "an action's arguments do not fit its table"));
        make_node m;
        m.table = a.target;
        for (const operand& o : a.args) m.args.push_back(lower(o));
        temp_of[a.dst] = static_cast<std::uint32_t>(plan.actions.size());
        plan.actions.push_back(std::move(m));
        break;
      }
      case action_op::set: {
        if (!table_fits(decl, a.target)) return fail(detail::unheld_function(decl, rule, a.target));
        if (a.args.size() != decl.functions[a.target].arity() + 1u)
          return fail(detail::rule_refused(rule, "an action's arguments do not fit its table"));
        // The device orders the i64 values it holds inline; a constant it does not is refused
        // for a min- or max-merged function (a value read from a row is checked by the apply,
        // which hands such a match back).
        const operand& v = a.args.back();
        if (orders_i64(decl, a.target) && v.type == operand::kind::constant &&
            v.v >= inline_i64_end)
          return fail(detail::rule_refused(rule,
                                           "a set of an i64 outside [0, 2^31), which the GPU "
                                           "engine does not merge"));
        set_node st;
        st.table = a.target;
        for (std::size_t i = 0; i + 1 < a.args.size(); ++i) st.args.push_back(lower(a.args[i]));
        st.value = lower(v);
        plan.sets.push_back(std::move(st));
        break;
      }
      case action_op::unite: {
        if (a.args.size() != 2) return fail(detail::rule_refused(rule, "a union of two values"));
        if (plan.unites.size() == wide_limits::unites)
          return fail(detail::rule_refused(rule, "more unions per match than the GPU engine runs")
                          .with("max", wide_limits::unites));
        plan.unites.push_back({lower(a.args[0]), lower(a.args[1])});
        break;
      }
      case action_op::call:
      case action_op::lookup: {
        if (!fresh_dst(a))
          return fail(detail::rule_refused(rule,
                                           "a call or lookup writes a register the GPU engine "
                                           "does not expect"));
        if (plan.computes.size() == wide_limits::computes)
          return fail(detail::rule_refused(rule,
                                           "more primitive calls and lookups per match than "
                                           "the GPU engine evaluates")
                          .with("max", wide_limits::computes));
        compute_step c;
        if (a.op == action_op::call) {
          if (a.target >= decl.prims.size() ||
              !device_prim_of(decl.sorts, decl.prims[a.target], c.op) || !yields_i64(c.op) ||
              a.args.size() != 2)
            return fail(detail::rule_refused(rule,
                                             "a primitive in the actions that the GPU engine "
                                             "does not evaluate")
                            .about(detail::naming_primitive(decl, rule, a.target)));
          for (const operand& o : a.args)
            if (o.type == operand::kind::id ||
                (o.type == operand::kind::constant && o.v >= inline_i64_end) || reads_temp())
              return fail(detail::rule_refused(rule,
                                               "a primitive in the actions reads a value the "
                                               "GPU engine does not evaluate (a global, a "
                                               "fresh class or an i64 outside [0, 2^31))"));
        } else {
          // egglog takes a lookup in a rule's actions in `:naive` rules only, and so does the
          // front end; an IR rule with one elsewhere is refused the same way.
          if (!rule.naive)
            return fail(detail::rule_refused(rule,
                                             "a lookup in the actions of a rule without :naive "
                                             "(egglog looks values up in the actions of :naive "
                                             "rules only)"));
          if (a.target >= decl.functions.size() || !table_fits(decl, a.target) ||
              a.args.size() != decl.functions[a.target].arity())
            return fail(detail::function_refused(decl, rule,
                                                 "a lookup of a function the GPU engine does not "
                                                 "hold",
                                                 a.target));
          if (keyed_by_made())
            return fail(detail::rule_refused(rule,
                                             "a lookup keyed by a global or by a class the "
                                             "same match made, which the GPU engine does not "
                                             "look up"));
          c.kind = compute_kind::lookup;
          c.table = a.target;
        }
        c.arg_count = static_cast<std::uint32_t>(a.args.size());
        for (std::size_t i = 0; i < a.args.size(); ++i) c.args[i] = lower(a.args[i]);
        computed_of[a.dst] = static_cast<std::uint32_t>(plan.computes.size());
        plan.computes.push_back(c);
        break;
      }
      case action_op::subsume: {
        const bool held = decl.functions[a.target].kind == function_kind::constructor;
        VYRE_TRY_ASSIGN(make_node m, row_named(held,
                                               "a subsume of a row the GPU engine does "
                                               "not hold"));
        plan.actions.push_back(m);  // a fresh class nothing reads: merged with the row there
        plan.subsumed.push_back(std::move(m));
        break;
      }
      case action_op::remove: {
        // The rows go before the rebuild, whose congruence would first give a class the match
        // made the class of the row it equals.
        if (keyed_by_made())
          return fail(detail::rule_refused(rule,
                                           "a delete keyed by a global or by a class the same "
                                           "match made, which the GPU engine does not look up"));
        VYRE_TRY_ASSIGN(make_node m,
                        row_named(true, "a delete of a row the GPU engine does not hold"));
        plan.deleted.push_back(std::move(m));
        break;
      }
      case action_op::panic:
        plan.panics = true;
        break;
      default:
        return fail(detail::rule_refused(rule, "an action the GPU engine does not run"));
    }
  }
  if (plan.step_count() > wide_limits::steps)
    return fail(detail::rule_refused(rule, "more rows per match than the GPU engine appends")
                    .with("steps", plan.step_count())
                    .with("max", wide_limits::steps));
  if (plan.saved.size() > wide_limits::saved)
    return fail(detail::rule_refused(rule,
                                     "more saved registers per match than the GPU engine "
                                     "keeps")
                    .with("saved", plan.saved.size())
                    .with("max", wide_limits::saved));
  return plan;
}

}  // namespace vyre::eqsat::device

namespace vyre::eqsat {

//! Whether `db` (over `decl`) can move to the GPU engine: its tables match the declarations,
//! every table that moves (`device::device_resident`) fits the device (`device::table_fits`)
//! and has fewer than 2^31 rows, a function merged by `min` or `max` holds only
//! the i64s the device orders ([0, 2^31)), and no container holds ids (their contents would not
//! follow the device's unions). @returns `errc::unsupported` (or `errc::abi_limit`) naming what
//! does not.
inline expected<void> gpu_resident_check(const declarations& decl, const database& db) {
  if (db.tables.size() != decl.functions.size())
    return fail(error(errc::invalid_state,
                      "eqsat gpu_engine: the database has a table per "
                      "function declared before the last command only")
                    .with("tables", db.tables.size())
                    .with("functions", decl.functions.size())
                    .fix("make the tables of every declared function first (cpu_engine::sync)"));
  for (std::uint32_t f = 0; f < decl.functions.size(); ++f) {
    if (!device::device_resident(decl, f)) continue;
    VYRE_TRY(device::table_fits(decl, f));
    const table& t = db.tables[f];
    if (t.size() > 0x7fffffffull)
      return fail(error(errc::abi_limit,
                        "eqsat gpu_engine: a table holds more rows than the "
                        "device sorts (2^31)")
                      .about(decl.functions[f].name)
                      .with("rows", t.size())
                      .fix("stop earlier with --node-limit"));
    const bool ordered_i64 = device::orders_i64(decl, f);
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (ordered_i64 && t.state(r) == row_state::live && t.value_of(r) >= device::inline_i64_end)
        return fail(error(errc::unsupported,
                          "a function merged by min or max holds an i64 outside [0, 2^31), "
                          "which the GPU engine does not order")
                        .about(decl.functions[f].name)
                        .fix("its iterations run on the CPU engine"));
    }
  }
  bool ids_held = false;
  db.containers.for_each([&](value, const container_store::entry& e) {
    ids_held = ids_held || decl.sorts[e.sort].holds_ids;
  });
  if (ids_held)
    return fail(error(errc::unsupported, "the GPU engine holds no container of e-class ids")
                    .fix("the iterations of this program run on the CPU engine"));
  return {};
}

}  // namespace vyre::eqsat
