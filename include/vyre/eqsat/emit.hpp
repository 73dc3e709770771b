// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::write_egraph_json`: an engine's e-graph as egraph-serialize JSON (the format
//! `vyre::egraph_json` and vyre-egraph read). Any engine with `prog()`, `class_id_count()`,
//! `rows(c)`, `width(c)` and `find_const(x)` (the CPU engine, the GPU engine).
//!
//! Each row of constructor `C` is node `"C.<row>"` (op `C`, cost 1, e-class `"<id>"`); its
//! datatype children name the first node of the child e-class. As in egglog's serializer, each
//! literal is a node of its own (`"lit.<id>"`, op its egglog spelling, cost 1, e-class
//! `"lit.<id>"`). `root_eclasses` lists the given roots.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/cpu_engine.hpp"

namespace vyre::eqsat {

namespace detail {
inline void json_string(std::string& out, const std::string& text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}
}  // namespace detail

//! The e-graph as egraph-serialize JSON text.
template <class Engine>
std::string egraph_json(const Engine& engine, const std::vector<std::uint32_t>& roots) {
  constexpr std::uint32_t none = 0xffffffffu;
  const program& prog = engine.prog();
  const auto ctor_count = static_cast<std::uint32_t>(prog.constructors.size());
  // First node of every e-class: the child every parent names.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> first(engine.class_id_count(), {none, 0});
  for (std::uint32_t c = 0; c < ctor_count; ++c) {
    const auto& cells = engine.rows(c);
    const std::uint32_t w = engine.width(c);
    for (std::size_t r = 0; r * w < cells.size(); ++r) {
      auto& slot = first[cells[r * w + w - 1]];
      if (slot.first == none) slot = {c, static_cast<std::uint32_t>(r)};
    }
  }
  std::vector<bool> literal_used(prog.literals.size(), false);
  std::string out = "{\"nodes\": {";
  bool comma = false;
  for (std::uint32_t c = 0; c < ctor_count; ++c) {
    const auto& cells = engine.rows(c);
    const std::uint32_t w = engine.width(c);
    const auto& decl = prog.constructors[c];
    for (std::size_t r = 0; r * w < cells.size(); ++r) {
      if (comma) out += ",\n";
      comma = true;
      out += "\"" + decl.name + "." + std::to_string(r) + "\": {\"op\": ";
      detail::json_string(out, decl.name);
      out += ", \"cost\": 1, \"eclass\": \"" + std::to_string(cells[r * w + w - 1]) +
             "\", \"children\": [";
      for (std::uint32_t a = 0; a + 1 < w; ++a) {
        if (a != 0) out += ", ";
        const std::uint32_t v = cells[r * w + a];
        if (decl.args[a].kind == sort_kind::datatype) {
          const auto [fc, fr] = first[v];
          out += "\"" + prog.constructors[fc].name + "." + std::to_string(fr) + "\"";
        } else {
          literal_used[v] = true;
          out += "\"lit." + std::to_string(v) + "\"";
        }
      }
      out += "]}";
    }
  }
  for (std::size_t l = 0; l < prog.literals.size(); ++l) {
    if (!literal_used[l]) continue;
    if (comma) out += ",\n";
    comma = true;
    out += "\"lit." + std::to_string(l) + "\": {\"op\": ";
    detail::json_string(out, prog.literal_text(static_cast<std::uint32_t>(l)));
    out += ", \"cost\": 1, \"eclass\": \"lit." + std::to_string(l) + "\", \"children\": []}";
  }
  out += "},\n\"root_eclasses\": [";
  for (std::size_t i = 0; i < roots.size(); ++i)
    out += (i != 0 ? ", \"" : "\"") + std::to_string(engine.find_const(roots[i])) + "\"";
  out += "]}\n";
  return out;
}

//! Writes `egraph_json(engine, roots)` to `path`.
template <class Engine>
expected<void> write_egraph_json(const Engine& engine, const std::vector<std::uint32_t>& roots,
                                 const std::string& path) {
  const std::string text = egraph_json(engine, roots);
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
