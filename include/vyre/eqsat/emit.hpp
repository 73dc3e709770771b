// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::write_egraph_json`: a database's e-graph as egraph-serialize JSON (the format
//! `vyre::egraph_json` and vyre-egraph read), and `to_loaded_egraph`: the same e-graph in
//! memory, for `vyre::algorithms` and the image tools without the text.
//!
//! Every live row of an extractable constructor is a node `"n<function>.<row>"` (op the
//! constructor's name, cost its `:cost`, e-class `"c<id>"`); a child of a datatype sort names
//! the first node of the child's e-class. As in egglog's serializer, every primitive value is a
//! node of its own, `"v<sort>.<value>"` (op its printed form, cost 1, in an e-class of the same
//! name), and so is every container, `"k<id>"` (op `vec-of`, `set-of`, ...). Ids are built
//! from numbers only, so no name can make two nodes collide; every string is JSON-escaped.
//! `root_eclasses` lists the e-classes of the program's `let` globals of datatype sorts.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/primitives_base.hpp"
#include "vyre/io/json_text.hpp"
#include "vyre/io/loaded_egraph.hpp"

namespace vyre::eqsat {

namespace detail {

//! A node or e-class name: `prefix`, `a`, and `.b` when `b` is given (`n3.17`, `c42`).
inline std::string egraph_name(char prefix, std::uint64_t a, const std::uint64_t* b = nullptr) {
  // Appended piece by piece: `"c" + std::to_string(x)` trips GCC 12's -Wrestrict at -O3.
  std::string out(1, prefix);
  out += std::to_string(a);
  if (b != nullptr) {
    out += '.';
    out += std::to_string(*b);
  }
  return out;
}

//! One node as `visit_egraph_nodes` names it; the views live until the visitor returns.
struct egraph_node_names {
  std::string_view id;
  std::string_view op;
  std::uint64_t cost = 1;
  std::string_view eclass;
  const std::vector<std::string>* child_ids = nullptr;       //!< the nodes its children name
  const std::vector<std::string>* child_eclasses = nullptr;  //!< those nodes' e-classes
};

//! Every node of `db`'s e-graph as the file comment names it, in order: the rows of the
//! extractable constructors, the containers they reach, then the primitive values.
template <class Visit>
void visit_egraph_nodes(const declarations& decl, const database& db, Visit&& visit) {
  // First node of every e-class: the child every parent names.
  std::unordered_map<value, std::string> first;
  auto extractable = [&](std::uint32_t f) {
    const function_decl& fn = decl.functions[f];
    return fn.kind == function_kind::constructor && !fn.unextractable && !fn.hidden;
  };
  for (std::uint32_t f = 0; f < decl.functions.size(); ++f) {
    if (!extractable(f)) continue;
    const table& t = db.tables[f];
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (t.state(r) != row_state::live) continue;
      const std::uint64_t row_id = r;
      first.try_emplace(db.ids.find_const(t.value_of(r)), egraph_name('n', f, &row_id));
    }
  }
  std::vector<std::pair<std::uint32_t, value>> leaves;  // primitive values used
  std::vector<value> containers;
  std::vector<std::string> child_ids, child_eclasses;
  auto child = [&](std::uint32_t sort, value v) {
    const sort_info& s = decl.sorts[sort];
    if (s.kind == sort_kind::eq) {
      const value c = db.ids.find_const(v);
      child_eclasses.push_back(egraph_name('c', c));
      auto it = first.find(c);
      child_ids.push_back(it != first.end() ? it->second : child_eclasses.back());
    } else if (s.is_id) {
      const value c = db.ids.find_const(v);
      containers.push_back(c);
      child_ids.push_back(egraph_name('k', c));
      child_eclasses.push_back(child_ids.back());
    } else {
      leaves.emplace_back(sort, v);
      const std::uint64_t leaf = v;
      child_ids.push_back(egraph_name('v', sort, &leaf));
      child_eclasses.push_back(child_ids.back());
    }
  };
  auto emit = [&](const std::string& id, std::string_view op, std::uint64_t cost,
                  const std::string& eclass) {
    visit(egraph_node_names{id, op, cost, eclass, &child_ids, &child_eclasses});
    child_ids.clear();
    child_eclasses.clear();
  };
  for (std::uint32_t f = 0; f < decl.functions.size(); ++f) {
    if (!extractable(f)) continue;
    const function_decl& fn = decl.functions[f];
    const table& t = db.tables[f];
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (t.state(r) != row_state::live) continue;
      for (std::uint32_t a = 0; a < t.arity(); ++a) child(fn.inputs[a], t.row(r)[a]);
      const std::uint64_t row_id = r;
      emit(egraph_name('n', f, &row_id), fn.name, fn.cost,
           egraph_name('c', db.ids.find_const(t.value_of(r))));
    }
  }
  // Containers (and the containers inside them), then the primitive leaves.
  std::unordered_map<value, bool> emitted;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const value id = containers[i];
    if (emitted.count(id) != 0 || !db.containers.contains(id)) continue;
    emitted.emplace(id, true);
    const container_store::entry& e = db.containers.at(id);
    const sort_info& s = decl.sorts[e.sort];
    const value* x = db.containers.contents(e);
    const char* op = s.kind == sort_kind::vec        ? "vec-of"
                     : s.kind == sort_kind::set      ? "set-of"
                     : s.kind == sort_kind::multiset ? "multiset-of"
                     : s.kind == sort_kind::map      ? "map-of"
                     : s.kind == sort_kind::pair     ? "pair"
                                                     : "unstable-fn";
    switch (s.kind) {
      case sort_kind::vec:
      case sort_kind::set:
        for (std::uint32_t k = 0; k < e.length; ++k) child(s.params[0], x[k]);
        break;
      case sort_kind::multiset:
        for (std::uint32_t k = 0; k + 3 <= e.length; k += 3) child(s.params[0], x[k]);
        break;
      case sort_kind::map:
        for (std::uint32_t k = 0; k + 1 < e.length; k += 2) {
          child(s.params[0], x[k]);
          child(s.params[1], x[k + 1]);
        }
        break;
      case sort_kind::pair:
        child(s.params[0], x[0]);
        child(s.params[1], x[1]);
        break;
      default:
        break;
    }
    const std::string name = egraph_name('k', id);
    emit(name, op, 0, name);
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  for (const auto& [sort, v] : leaves) {
    const std::uint64_t leaf = v;
    const std::string name = egraph_name('v', sort, &leaf);
    emit(name, format_base_value(db.base, decl.sorts[sort].kind, v), 1, name);
  }
}

}  // namespace detail

//! The e-graph of `db` as egraph-serialize JSON text; `roots` are e-class ids.
inline std::string egraph_json(const declarations& decl, const database& db,
                               const std::vector<value>& roots) {
  std::string out = "{\"nodes\": {";
  bool comma = false;
  detail::visit_egraph_nodes(decl, db, [&](const detail::egraph_node_names& node) {
    out += comma ? ",\n" : "\n";
    comma = true;
    io::append_json_string(out, node.id);
    out += ": {\"op\": ";
    io::append_json_string(out, node.op);
    out += ", \"cost\": " + std::to_string(node.cost) + ", \"eclass\": ";
    io::append_json_string(out, node.eclass);
    out += ", \"children\": [";
    for (std::size_t i = 0; i < node.child_ids->size(); ++i) {
      if (i != 0) out += ", ";
      io::append_json_string(out, (*node.child_ids)[i]);
    }
    out += "]}";
  });
  out += "},\n\"root_eclasses\": [";
  for (std::size_t i = 0; i < roots.size(); ++i)
    out += (i != 0 ? ", \"c" : "\"c") + std::to_string(db.ids.find_const(roots[i])) + "\"";
  out += "]}\n";
  return out;
}

//! The e-graph of `db` in memory, as `vyre::io::load_egraph_json` reads
//! `egraph_json(decl, db, roots)`: the same nodes in the same order with their costs and names,
//! e-classes dense in the order they are first named, without the text. So `vyre::algorithms`
//! (congruence, tree and DAG extraction) and the image tools run on a saturated e-graph
//! directly (`vyre::egraph::pack(result.graph)`).
//! @returns the e-graph, or the snapshot's errors: `errc::abi_limit` past u32 rows or
//!          children, `errc::out_of_memory`, and `snapshot::validate`'s for a child e-class no
//!          node is in (an id column that names only unextractable rows).
inline expected<io::loaded_egraph> to_loaded_egraph(const declarations& decl, const database& db,
                                                    const std::vector<value>& roots = {}) {
  io::loaded_egraph out;
  // E-class name -> dense id, looked up by view (a string is made only for a new name).
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, std::uint32_t, name_hash, std::equal_to<>> eclass_of;
  std::vector<std::uint32_t> kids;
  const auto dense = [&](std::string_view name) -> expected<std::uint32_t> {
    if (auto it = eclass_of.find(name); it != eclass_of.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(eclass_of.size());
    eclass_of.emplace(std::string(name), id);
    VYRE_TRY(out.eclass_ids.push_back(name));
    return id;
  };
  const auto add = [&](const detail::egraph_node_names& node) -> expected<void> {
    VYRE_TRY_ASSIGN(const std::uint32_t eclass, dense(node.eclass));
    kids.clear();
    for (const std::string& c : *node.child_eclasses) {
      VYRE_TRY_ASSIGN(const std::uint32_t k, dense(c));
      kids.push_back(k);
    }
    VYRE_TRY_ASSIGN(const std::uint32_t op,
                    out.graph.intern_op<on_error::return_expected>(node.op));
    VYRE_TRY(out.graph.add_row<on_error::return_expected>(
        eclass, op, cuda::std::span<const std::uint32_t>(kids.data(), kids.size())));
    VYRE_TRY(out.node_ids.push_back(node.id));
    out.node_costs.push_back(static_cast<double>(node.cost));
    return {};
  };
  expected<void> status;
  try {
    detail::visit_egraph_nodes(decl, db, [&](const detail::egraph_node_names& node) {
      if (status) status = add(node);
    });
    VYRE_TRY(status);
    for (const value r : roots) {
      VYRE_TRY_ASSIGN(const std::uint32_t k, dense(detail::egraph_name('c', db.ids.find_const(r))));
      out.root_eclasses.push_back(k);
    }
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "eqsat::to_loaded_egraph: host memory")
                    .with("nodes", out.node_costs.size())
                    .fix("free host memory, or write the e-graph with --emit instead"));
  }
  // A child e-class without a node (an id column naming only unextractable rows) fails here.
  VYRE_TRY(out.graph.validate<on_error::return_expected>());
  return out;
}

//! Writes `egraph_json(decl, db, roots)` to `path` (a new file, or one replaced).
inline expected<void> write_egraph_json(const declarations& decl, const database& db,
                                        const std::string& path,
                                        const std::vector<value>& roots = {}) {
  const std::string text = egraph_json(decl, db, roots);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr)
    return fail(error(errc::io, "eqsat: cannot open the --emit file for writing")
                    .about(path)
                    .fix("check that the folder exists and is writable"));
  const std::size_t written = std::fwrite(text.data(), 1, text.size(), f);
  const bool closed = std::fclose(f) == 0;
  if (written != text.size() || !closed)
    return fail(error(errc::io, "eqsat: writing the --emit file failed")
                    .about(path)
                    .with("bytes", text.size())
                    .fix("check the free disk space"));
  return {};
}

}  // namespace vyre::eqsat
