// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::write_egraph_json`: a database's e-graph as egraph-serialize JSON (the format
//! `vyre::egraph_json` and vyre-egraph read).
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
#include <string>
#include <unordered_map>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/primitives_base.hpp"
#include "vyre/io/json_text.hpp"

namespace vyre::eqsat {

//! The e-graph of `db` as egraph-serialize JSON text; `roots` are e-class ids.
inline std::string egraph_json(const declarations& decl, const database& db,
                               const std::vector<value>& roots) {
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
      first.try_emplace(db.ids.find_const(t.value_of(r)),
                        "n" + std::to_string(f) + "." + std::to_string(r));
    }
  }
  std::string out = "{\"nodes\": {";
  bool comma = false;
  std::vector<std::pair<std::uint32_t, value>> leaves;  // primitive values used
  std::vector<value> containers;
  auto child = [&](std::uint32_t sort, value v, std::string& text) {
    const sort_info& s = decl.sorts[sort];
    if (s.kind == sort_kind::eq) {
      auto it = first.find(db.ids.find_const(v));
      text += it != first.end() ? '"' + it->second + '"'
                                : "\"c" + std::to_string(db.ids.find_const(v)) + "\"";
    } else if (s.is_id) {
      const value c = db.ids.find_const(v);
      containers.push_back(c);
      text += "\"k" + std::to_string(c) + "\"";
    } else {
      leaves.emplace_back(sort, v);
      text += "\"v" + std::to_string(sort) + "." + std::to_string(v) + "\"";
    }
  };
  for (std::uint32_t f = 0; f < decl.functions.size(); ++f) {
    if (!extractable(f)) continue;
    const function_decl& fn = decl.functions[f];
    const table& t = db.tables[f];
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (t.state(r) != row_state::live) continue;
      out += comma ? ",\n" : "\n";
      comma = true;
      out += "\"n" + std::to_string(f) + "." + std::to_string(r) + "\": {\"op\": ";
      io::append_json_string(out, fn.name);
      out += ", \"cost\": " + std::to_string(fn.cost) + ", \"eclass\": \"c" +
             std::to_string(db.ids.find_const(t.value_of(r))) + "\", \"children\": [";
      for (std::uint32_t a = 0; a < t.arity(); ++a) {
        if (a != 0) out += ", ";
        child(fn.inputs[a], t.row(r)[a], out);
      }
      out += "]}";
    }
  }
  // Containers (and the containers inside them), then the primitive leaves.
  std::vector<std::uint8_t> done;
  std::unordered_map<value, bool> emitted;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const value id = containers[i];
    if (emitted.count(id) != 0 || !db.containers.contains(id)) continue;
    emitted.emplace(id, true);
    const container_store::entry& e = db.containers.at(id);
    const sort_info& s = decl.sorts[e.sort];
    const value* x = db.containers.contents(e);
    out += comma ? ",\n" : "\n";
    comma = true;
    out += "\"k" + std::to_string(id) + "\": {\"op\": ";
    const char* op = s.kind == sort_kind::vec        ? "vec-of"
                     : s.kind == sort_kind::set      ? "set-of"
                     : s.kind == sort_kind::multiset ? "multiset-of"
                     : s.kind == sort_kind::map      ? "map-of"
                     : s.kind == sort_kind::pair     ? "pair"
                                                     : "unstable-fn";
    io::append_json_string(out, op);
    out += ", \"cost\": 0, \"eclass\": \"k" + std::to_string(id) + "\", \"children\": [";
    bool c2 = false;
    auto elem = [&](std::uint32_t sort, value v) {
      if (c2) out += ", ";
      c2 = true;
      child(sort, v, out);
    };
    switch (s.kind) {
      case sort_kind::vec:
      case sort_kind::set:
        for (std::uint32_t k = 0; k < e.length; ++k) elem(s.params[0], x[k]);
        break;
      case sort_kind::multiset:
        for (std::uint32_t k = 0; k + 3 <= e.length; k += 3) elem(s.params[0], x[k]);
        break;
      case sort_kind::map:
        for (std::uint32_t k = 0; k + 1 < e.length; k += 2) {
          elem(s.params[0], x[k]);
          elem(s.params[1], x[k + 1]);
        }
        break;
      case sort_kind::pair:
        elem(s.params[0], x[0]);
        elem(s.params[1], x[1]);
        break;
      default:
        break;
    }
    out += "]}";
  }
  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  for (const auto& [sort, v] : leaves) {
    out += comma ? ",\n" : "\n";
    comma = true;
    const std::string id = "v" + std::to_string(sort) + "." + std::to_string(v);
    out += "\"" + id + "\": {\"op\": ";
    io::append_json_string(out, format_base_value(db.base, decl.sorts[sort].kind, v));
    out += ", \"cost\": 1, \"eclass\": \"" + id + "\", \"children\": []}";
  }
  out += "},\n\"root_eclasses\": [";
  for (std::size_t i = 0; i < roots.size(); ++i)
    out += (i != 0 ? ", \"c" : "\"c") + std::to_string(db.ids.find_const(roots[i])) + "\"";
  out += "]}\n";
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
