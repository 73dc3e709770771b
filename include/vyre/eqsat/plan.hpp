// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::compile_rule`: a rewrite as a join over per-constructor tables plus the
//! actions that apply one match. Engine independent: the CPU engine interprets it and a GPU
//! engine can run the same plan.
//!
//! Tables. Constructor `C` with arity `k` is a table of rows `(col_0, ..., col_{k-1}, eclass)`:
//! a datatype column holds a canonical e-class id, an i64/String column a literal id
//! (`program::literals`), and the last column the row's own e-class.
//!
//! Query. Every constructor node of the left-hand side is one `plan_atom`. Registers hold the
//! values found so far: register 0 is the root's e-class, then one register per variable and
//! one per inner node's e-class. Each column of an atom either binds a register (first time the
//! value is seen), checks one (a repeated variable, or the e-class of a node already found), or
//! checks a literal. Atoms run in plan order as nested loops: atom 0 scans its whole table
//! (or only the rows holding its literal, when it has one: `key_column`), every later atom
//! looks up the rows whose `key_column` equals a value already known (an index of the table by
//! that column).
//!
//! Join order: start at the atom with the most literal columns (a constant such as `(Const 0)`
//! holds few rows), else at the root; then repeatedly take an atom sharing a bound register,
//! preferring one whose own e-class is bound (a child of a node already found: the index by
//! e-class yields only that class's nodes) over one bound through a child column (a parent,
//! found through the index by that child). Every register is bound before it is checked, and
//! every later atom has a key column.
//!
//! Actions. The right-hand side becomes `make_node` steps in post order (children first); each
//! step looks up or inserts a node and yields its e-class as a temporary. `result` is the
//! right-hand side's e-class, unioned with the match's root (`saved` slot 0).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vyre/eqsat/program.hpp"

namespace vyre::eqsat {

enum class column_op : std::uint8_t {
  bind,     //!< store the row's value in register `value`
  check,    //!< the row's value must equal register `value`
  literal,  //!< the row's value must equal literal id `value`
};

struct plan_column {
  column_op op = column_op::bind;
  std::uint32_t value = 0;
};

constexpr std::uint32_t no_column = 0xffffffffu;

struct plan_atom {
  std::uint32_t ctor = 0;
  //! `arity + 1` columns; the last is the node's e-class.
  std::vector<plan_column> columns;
  //! The column whose value is known before this atom runs (a check or literal column), used
  //! to look the candidate rows up in an index; `no_column` for a scan of every row.
  std::uint32_t key_column = no_column;
};

enum class operand_kind : std::uint8_t {
  saved,    //!< slot `value` of the saved match (`query_plan::saved`)
  literal,  //!< literal id `value`
  temp,     //!< the e-class made by action step `value`
};

struct operand {
  operand_kind kind = operand_kind::saved;
  std::uint32_t value = 0;
};

//! Look up or insert the node `ctor(args...)`; its e-class becomes temp (the step's index).
struct make_node {
  std::uint32_t ctor = 0;
  std::vector<operand> args;
};

struct query_plan {
  std::uint32_t rule = 0;
  std::uint32_t register_count = 0;
  std::vector<plan_atom> atoms;
  //! Registers saved per match, in this order: the root (register 0) first, then the
  //! variables the actions read.
  std::vector<std::uint32_t> saved;
  std::vector<make_node> actions;
  operand result;

  //! The (constructor, column) indexes the plan looks rows up in.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> index_keys() const {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> keys;
    for (const plan_atom& a : atoms)
      if (a.key_column != no_column) keys.emplace_back(a.ctor, a.key_column);
    return keys;
  }
  //! A readable listing of the plan (one atom or action per line), for docs and debugging.
  std::string describe(const program& prog) const {
    std::string out;
    for (std::size_t i = 0; i < atoms.size(); ++i) {
      const plan_atom& a = atoms[i];
      out += a.key_column == no_column ? "scan " : "lookup ";
      out += prog.constructors[a.ctor].name + "(";
      for (std::size_t c = 0; c < a.columns.size(); ++c) {
        if (c + 1 == a.columns.size())
          out += ") -> ";
        else if (c != 0)
          out += ", ";
        const plan_column& col = a.columns[c];
        if (c == a.key_column) out += "*";
        if (col.op == column_op::literal)
          out += prog.literal_text(col.value);
        else {
          out += col.op == column_op::bind ? "r" : "=r";
          out += std::to_string(col.value);
        }
      }
      out += "\n";
    }
    auto text = [&](const operand& o) {
      if (o.kind == operand_kind::literal) return prog.literal_text(o.value);
      std::string name(1, o.kind == operand_kind::saved ? 's' : 't');
      name += std::to_string(o.value);
      return name;
    };
    for (std::size_t i = 0; i < actions.size(); ++i) {
      out += 't';
      out += std::to_string(i);
      out += " = ";
      out += prog.constructors[actions[i].ctor].name;
      out += '(';
      for (std::size_t c = 0; c < actions[i].args.size(); ++c) {
        if (c != 0) out += ", ";
        out += text(actions[i].args[c]);
      }
      out += ")\n";
    }
    out += "union s0 " + text(result) + "\n";
    return out;
  }
};

namespace detail {

struct plan_builder {
  const rule& r;
  query_plan plan;
  std::vector<std::uint32_t> var_register;  // variable id -> register
  std::vector<plan_atom> pattern_atoms;     // in pre-order, root first
  std::vector<std::uint32_t> literal_count;

  std::uint32_t fresh() { return plan.register_count++; }

  // Adds the atom of call node `t` whose e-class lands in register `self`.
  void add_atom(const term& t, std::uint32_t self) {
    const std::size_t index = pattern_atoms.size();
    pattern_atoms.push_back(plan_atom{t.id, {}, no_column});
    literal_count.push_back(0);
    std::vector<plan_column> cols;
    for (const term& arg : t.args) {
      if (arg.kind == term_kind::literal) {
        cols.push_back(plan_column{column_op::literal, arg.id});
        ++literal_count[index];
      } else if (arg.kind == term_kind::variable) {
        cols.push_back(plan_column{column_op::bind, var_register[arg.id]});
      } else {
        const std::uint32_t child = fresh();
        cols.push_back(plan_column{column_op::bind, child});
        add_atom(arg, child);
      }
    }
    cols.push_back(plan_column{column_op::bind, self});
    pattern_atoms[index].columns = std::move(cols);
  }

  operand action(const term& t, std::vector<std::uint32_t>& saved_slot) {
    if (t.kind == term_kind::literal) return operand{operand_kind::literal, t.id};
    if (t.kind == term_kind::variable) {
      const std::uint32_t reg = var_register[t.id];
      if (saved_slot[reg] == no_column) {
        saved_slot[reg] = static_cast<std::uint32_t>(plan.saved.size());
        plan.saved.push_back(reg);
      }
      return operand{operand_kind::saved, saved_slot[reg]};
    }
    make_node step{t.id, {}};
    for (const term& arg : t.args) step.args.push_back(action(arg, saved_slot));
    plan.actions.push_back(std::move(step));
    return operand{operand_kind::temp, static_cast<std::uint32_t>(plan.actions.size() - 1)};
  }

  void order() {
    const std::size_t n = pattern_atoms.size();
    std::vector<bool> taken(n, false);
    std::vector<bool> bound(plan.register_count, false);
    std::size_t start = 0;
    for (std::size_t i = 1; i < n; ++i)
      if (literal_count[i] > literal_count[start]) start = i;
    auto emit = [&](std::size_t i, bool first) {
      plan_atom atom = pattern_atoms[i];
      const auto width = static_cast<std::uint32_t>(atom.columns.size());
      // Key column: the own e-class when known, else the first known child column.
      if (!first && bound[atom.columns[width - 1].value]) atom.key_column = width - 1;
      for (std::uint32_t c = 0; c + 1 < width && atom.key_column == no_column; ++c) {
        const plan_column& col = atom.columns[c];
        if (col.op == column_op::literal || (!first && bound[col.value])) atom.key_column = c;
      }
      for (plan_column& col : atom.columns) {
        if (col.op == column_op::literal) continue;
        if (bound[col.value]) {
          col.op = column_op::check;
        } else {
          col.op = column_op::bind;
          bound[col.value] = true;
        }
      }
      taken[i] = true;
      plan.atoms.push_back(std::move(atom));
    };
    emit(start, true);
    for (std::size_t step = 1; step < n; ++step) {
      std::size_t pick = n;
      bool pick_by_eclass = false;
      for (std::size_t i = 0; i < n; ++i) {
        if (taken[i]) continue;
        const plan_atom& a = pattern_atoms[i];
        const bool by_eclass = bound[a.columns.back().value];
        bool connected = by_eclass;
        for (std::size_t c = 0; c + 1 < a.columns.size() && !connected; ++c)
          connected = a.columns[c].op != column_op::literal && bound[a.columns[c].value];
        if (!connected) continue;
        if (pick == n || (by_eclass && !pick_by_eclass)) {
          pick = i;
          pick_by_eclass = by_eclass;
        }
      }
      emit(pick, false);
    }
  }
};

}  // namespace detail

//! Compiles rule `index` of `prog` into a query plan (see the file comment).
inline query_plan compile_rule(const program& prog, std::uint32_t index) {
  const rule& r = prog.rules[index];
  detail::plan_builder b{r, {}, {}, {}, {}};
  b.plan.rule = index;
  const std::uint32_t root = b.fresh();
  for (std::size_t v = 0; v < r.variable_names.size(); ++v) b.var_register.push_back(b.fresh());
  b.add_atom(r.lhs, root);
  b.order();
  std::vector<std::uint32_t> saved_slot(b.plan.register_count, no_column);
  saved_slot[root] = 0;
  b.plan.saved.push_back(root);
  b.plan.result = b.action(r.rhs, saved_slot);
  return std::move(b.plan);
}

//! Every rule of `prog`, compiled.
inline std::vector<query_plan> compile_rules(const program& prog) {
  std::vector<query_plan> plans;
  for (std::size_t i = 0; i < prog.rules.size(); ++i)
    plans.push_back(compile_rule(prog, static_cast<std::uint32_t>(i)));
  return plans;
}

}  // namespace vyre::eqsat
