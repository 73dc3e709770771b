// SPDX-License-Identifier: Apache-2.0
//! @file
//! Loader for the egraph-serialize JSON format (egg, egglog, extraction-gym) into a
//! `vyre::egraph::snapshot`. Optional: needs simdjson (link `vyre::egraph_json`, which links
//! simdjson when CMake found it). Host translation units only: nvcc cannot compile simdjson.h.
//!
//! Format: `nodes` maps a node id to `{op, cost, eclass, children}`, each child a node id whose
//! `eclass` is the child e-class; `root_eclasses` lists the roots. As in egraph-serialize,
//! `children` defaults to `[]`, `cost` to 1 and `root_eclasses` to `[]`; other fields
//! (`subsumed`, `class_data`, `comment`, ...) are accepted and ignored. Ids may be strings or
//! non-negative integers (an integer id is its decimal spelling).
//!
//! Row `i` of the snapshot is the `i`-th node of `nodes` in file order; e-class and op ids are
//! dense u32 in first-seen order.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph.hpp"

namespace vyre::io {

//! An e-graph loaded from egraph-serialize JSON.
struct loaded_egraph {
  egraph::snapshot graph;                   //!< row i = node i (file order); always valid
  std::vector<double> node_costs;           //!< cost of node (row) i, finite
  std::vector<std::string> node_ids;        //!< JSON node id of row i
  std::vector<std::string> eclass_ids;      //!< JSON e-class id of dense e-class id k
  std::vector<std::uint32_t> root_eclasses; //!< dense e-class ids of `root_eclasses`, in order
};

namespace detail {

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const noexcept {
    return std::hash<std::string_view>{}(text);
  }
};
using id_map = std::unordered_map<std::string, std::uint32_t, string_hash, std::equal_to<>>;

//! "file: what 'id'" as the error subject (the tail is kept when it is long, so the id shows).
inline error json_error(errc code, const char* context, std::string_view source,
                        std::string_view what = {}, std::string_view id = {}) {
  std::string subject(source);
  if (!what.empty()) {
    subject += ": ";
    subject += what;
    subject += " \"";
    subject += id;
    subject += '"';
  }
  return error(code, context).about(subject);
}

//! An id that is a string or a non-negative integer, as text.
inline bool id_text(simdjson::dom::element value, std::string& out) {
  std::string_view text;
  if (value.get_string().get(text) == simdjson::SUCCESS) {
    out.assign(text);
    return true;
  }
  std::uint64_t number = 0;
  if (value.get_uint64().get(number) == simdjson::SUCCESS) {
    out = std::to_string(number);
    return true;
  }
  return false;
}

inline expected<std::uint32_t> intern_id(id_map& ids, std::vector<std::string>& names,
                                         const std::string& text, const char* what) {
  if (const auto found = ids.find(text); found != ids.end()) return found->second;
  if (names.size() >= egraph::snapshot_limits::u32_max)
    return fail(error(errc::abi_limit, what).with("ids", names.size()).fix(egraph::detail::shard_hint));
  try {
    const auto id = static_cast<std::uint32_t>(names.size());
    names.push_back(text);
    ids.emplace(text, id);
    return id;
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, what).with("ids", names.size()).fix("free host memory"));
  }
}

//! Static text for a simdjson parse failure.
inline const char* malformed_context(simdjson::error_code code) noexcept {
  switch (code) {
    case simdjson::TAPE_ERROR:
      return "egraph JSON: malformed JSON (structure: commas, braces, colons or keys)";
    case simdjson::NUMBER_ERROR:
      return "egraph JSON: malformed JSON (a number is badly written or out of range)";
    case simdjson::STRING_ERROR:
    case simdjson::UNCLOSED_STRING:
    case simdjson::UNESCAPED_CHARS:
      return "egraph JSON: malformed JSON (a string is badly escaped or unterminated)";
    case simdjson::UTF8_ERROR: return "egraph JSON: malformed JSON (invalid UTF-8)";
    case simdjson::EMPTY: return "egraph JSON: malformed JSON (empty document)";
    case simdjson::DEPTH_ERROR: return "egraph JSON: malformed JSON (nested too deeply)";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "egraph JSON: malformed JSON (a bad true/false/null literal)";
    case simdjson::CAPACITY: return "egraph JSON: malformed JSON (document too large)";
    default: return "egraph JSON: malformed JSON";
  }
}

inline expected<loaded_egraph> parse_egraph_json(const simdjson::padded_string& json,
                                                 std::string_view source) {
  simdjson::dom::parser parser;
  simdjson::dom::element document;
  if (const auto code = parser.parse(json).get(document); code != simdjson::SUCCESS)
    return fail(json_error(errc::parse, malformed_context(code), source)
                    .with("simdjson_error", static_cast<std::uint64_t>(code))
                    .fix("pass a well-formed egraph-serialize JSON file"));
  simdjson::dom::object top;
  if (document.get_object().get(top) != simdjson::SUCCESS)
    return fail(json_error(errc::parse, "egraph JSON: the document is not an object", source)
                    .fix("the top level must be {\"nodes\": {...}, \"root_eclasses\": [...]}"));
  simdjson::dom::object nodes;
  {
    simdjson::dom::element field;
    if (top["nodes"].get(field) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: missing field", source, "field", "nodes")
                      .fix("the top level must have a \"nodes\" object"));
    if (field.get_object().get(nodes) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: \"nodes\" is not an object", source)
                      .fix("\"nodes\" maps node ids to {op, cost, eclass, children}"));
  }

  loaded_egraph result;
  id_map node_index;
  id_map eclass_index;
  std::vector<std::uint32_t> node_eclass;
  std::vector<std::uint32_t> node_op;
  // A node without "children" has none; a default dom::array must not be iterated.
  std::vector<simdjson::dom::array> node_children;
  std::vector<bool> node_has_children;
  const std::size_t node_count = nodes.size();
  VYRE_TRY(try_reserve(result.node_costs, node_count, "egraph JSON: node costs"));
  VYRE_TRY(try_reserve(result.node_ids, node_count, "egraph JSON: node ids"));
  VYRE_TRY(try_reserve(node_eclass, node_count, "egraph JSON: node e-classes"));
  VYRE_TRY(try_reserve(node_op, node_count, "egraph JSON: node ops"));
  VYRE_TRY(try_reserve(node_children, node_count, "egraph JSON: node children"));
  VYRE_TRY(try_reserve(node_has_children, node_count, "egraph JSON: node children"));

  // Pass 1: node ids, e-classes, ops, costs (children may name nodes that come later).
  std::string text;
  for (const auto field : nodes) {
    const std::string_view node_id = field.key;
    if (node_index.find(node_id) != node_index.end())
      return fail(json_error(errc::duplicate, "egraph JSON: duplicate node id", source, "node",
                             node_id)
                      .fix("give every node a unique id"));
    VYRE_TRY(intern_id(node_index, result.node_ids, std::string(node_id),
                       "egraph JSON: too many nodes for u32 row ids"));
    simdjson::dom::object node;
    if (field.value.get_object().get(node) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: node is not an object", source, "node",
                             node_id)
                      .fix("each node is {op, cost, eclass, children}"));
    simdjson::dom::element value;
    std::string_view op;
    if (node["op"].get(value) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: node has no \"op\" (missing field)",
                             source, "node", node_id)
                      .fix("give every node an \"op\" string"));
    if (value.get_string().get(op) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: node \"op\" is not a string", source,
                             "node", node_id)
                      .fix("give every node an \"op\" string"));
    if (node["eclass"].get(value) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: node has no \"eclass\" (missing field)",
                             source, "node", node_id)
                      .fix("give every node the id of its e-class"));
    if (!id_text(value, text))
      return fail(json_error(errc::parse,
                             "egraph JSON: node \"eclass\" is not a string or unsigned integer",
                             source, "node", node_id)
                      .fix("give every node the id of its e-class"));
    VYRE_TRY_ASSIGN(const std::uint32_t eclass,
                    intern_id(eclass_index, result.eclass_ids, text,
                              "egraph JSON: too many e-classes for u32 ids"));
    double cost = 1.0;  // egraph-serialize's default
    if (node["cost"].get(value) == simdjson::SUCCESS) {
      if (!value.is_number() || value.get_double().get(cost) != simdjson::SUCCESS ||
          !std::isfinite(cost))
        return fail(json_error(errc::parse, "egraph JSON: node cost is not a finite number",
                               source, "node", node_id)
                        .fix("give every node a finite numeric cost"));
    }
    simdjson::dom::array children;
    const bool has_children = node["children"].get(value) == simdjson::SUCCESS;
    if (has_children && value.get_array().get(children) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: node \"children\" is not an array",
                             source, "node", node_id)
                      .fix("\"children\" lists child node ids"));
    VYRE_TRY_ASSIGN(const std::uint32_t op_id,
                    result.graph.intern_op<on_error::return_expected>(op));
    result.node_costs.push_back(cost);
    node_eclass.push_back(eclass);
    node_op.push_back(op_id);
    node_children.push_back(children);
    node_has_children.push_back(has_children);
  }

  // Pass 2: rows, children resolved to the e-class of the child node.
  VYRE_TRY(result.graph.reserve<on_error::return_expected>(node_count, 2 * node_count));
  std::vector<std::uint32_t> child_eclasses;
  for (std::size_t n = 0; n < node_eclass.size(); ++n) {
    child_eclasses.clear();
    if (node_has_children[n]) {
      for (const auto child : node_children[n]) {
        if (!id_text(child, text))
          return fail(json_error(errc::parse,
                                 "egraph JSON: a child is not a node id (string or unsigned "
                                 "integer)",
                                 source, "node", result.node_ids[n])
                          .fix("\"children\" lists child node ids"));
        const auto found = node_index.find(text);
        if (found == node_index.end())
          return fail(json_error(errc::not_found, "egraph JSON: a child names an unknown node",
                                 source, "child", text)
                          .with("row", n)
                          .fix("every child must be a key of \"nodes\""));
        if (child_eclasses.size() == child_eclasses.capacity())
          VYRE_TRY(try_reserve(child_eclasses, 2 * child_eclasses.size() + 4,
                               "egraph JSON: children"));
        child_eclasses.push_back(node_eclass[found->second]);
      }
    }
    VYRE_TRY(result.graph.add_row<on_error::return_expected>(
        node_eclass[n], node_op[n], {child_eclasses.data(), child_eclasses.size()}));
  }

  // Roots.
  simdjson::dom::element roots_field;
  if (top["root_eclasses"].get(roots_field) == simdjson::SUCCESS) {
    simdjson::dom::array roots;
    if (roots_field.get_array().get(roots) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: \"root_eclasses\" is not an array",
                             source)
                      .fix("\"root_eclasses\" lists e-class ids"));
    for (const auto root : roots) {
      if (!id_text(root, text))
        return fail(json_error(errc::parse,
                               "egraph JSON: a root is not an e-class id (string or unsigned "
                               "integer)",
                               source)
                        .fix("\"root_eclasses\" lists e-class ids"));
      const auto found = eclass_index.find(text);
      if (found == eclass_index.end())
        return fail(json_error(errc::not_found,
                               "egraph JSON: a root names an e-class that has no node", source,
                               "root", text)
                        .fix("every root must be the \"eclass\" of some node"));
      if (result.root_eclasses.size() == result.root_eclasses.capacity())
        VYRE_TRY(try_reserve(result.root_eclasses, 2 * result.root_eclasses.size() + 4,
                             "egraph JSON: roots"));
      result.root_eclasses.push_back(found->second);
    }
  }
  return result;
}

}  // namespace detail

//! Parses egraph-serialize JSON text; `source` names it in errors (a file name).
//! @throws vyre::error_exception naming the source and the offending id: `errc::parse`
//!         (malformed JSON, a missing or mistyped field, a cost that is not a finite number),
//!         `errc::duplicate` (a node id twice), `errc::not_found` (a child naming an unknown
//!         node, a root naming an e-class with no node), `errc::abi_limit`, `errc::out_of_memory`.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> parse_egraph_json(std::string_view json,
                                                   std::string_view source = "JSON text") {
  auto run = [&]() -> expected<loaded_egraph> {
    try {
      const simdjson::padded_string padded(json);
      return detail::parse_egraph_json(padded, source);
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "egraph JSON: cannot copy the text")
                      .with("bytes", json.size())
                      .fix("free host memory")
                      .about(source));
    }
  };
  return apply_error_policy<OnError>(run());
}

//! Loads an egraph-serialize JSON file.
//! @throws vyre::error_exception `errc::io` naming the path, or the errors of
//!         `parse_egraph_json`, each naming the path.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> load_egraph_json(const std::filesystem::path& path) {
  auto run = [&]() -> expected<loaded_egraph> {
    const std::string name = path.string();
    simdjson::padded_string text;
    if (const auto code = simdjson::padded_string::load(name).get(text); code != simdjson::SUCCESS)
      return fail(detail::json_error(errc::io, "egraph JSON: cannot read the file", name)
                      .with("simdjson_error", static_cast<std::uint64_t>(code))
                      .fix("check the path and permissions"));
    return detail::parse_egraph_json(text, name);
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::io
