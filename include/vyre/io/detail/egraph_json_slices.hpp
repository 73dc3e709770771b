// SPDX-License-Identifier: Apache-2.0
//! @file
//! The producer side of the egraph-serialize JSON loader (`vyre/io/egraph_json.hpp`): the
//! input read slice by slice, each slice parsed into flat records by the scanner
//! (`egraph_json_scan.hpp`) or, where it declines, by simdjson's DOM parser, and the errors
//! named for the file and the id. Host only.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/io/detail/egraph_json_scan.hpp"
#include "vyre/io/loaded_egraph.hpp"

namespace vyre::io::detail {

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

//! Static text for a simdjson parse failure.
inline const char* malformed_context(simdjson::error_code code) noexcept {
  //! What a group of simdjson codes means, in the message's parentheses.
  struct meaning {
    std::initializer_list<simdjson::error_code> codes;
    const char* context;
  };
  static const meaning table[] = {
      {{simdjson::TAPE_ERROR},
       "egraph JSON: malformed JSON (structure: commas, braces, colons or keys)"},
      {{simdjson::NUMBER_ERROR},
       "egraph JSON: malformed JSON (a number is badly written or out of range)"},
      {{simdjson::STRING_ERROR, simdjson::UNCLOSED_STRING, simdjson::UNESCAPED_CHARS},
       "egraph JSON: malformed JSON (a string is badly escaped or unterminated)"},
      {{simdjson::UTF8_ERROR}, "egraph JSON: malformed JSON (invalid UTF-8)"},
      {{simdjson::EMPTY}, "egraph JSON: malformed JSON (empty document)"},
      {{simdjson::DEPTH_ERROR}, "egraph JSON: malformed JSON (nested too deeply)"},
      {{simdjson::T_ATOM_ERROR, simdjson::F_ATOM_ERROR, simdjson::N_ATOM_ERROR},
       "egraph JSON: malformed JSON (a bad true/false/null literal)"},
      {{simdjson::CAPACITY}, "egraph JSON: malformed JSON (document too large)"},
  };
  for (const meaning& m : table)
    for (simdjson::error_code c : m.codes)
      if (c == code) return m.context;
  return "egraph JSON: malformed JSON";
}

//! The text of the input: a file read slice by slice, or text in memory.
class json_source {
 public:
  explicit json_source(std::string_view text) : text_(text), size_(text.size()) {}
  json_source(std::FILE* file, std::uint64_t size) : file_(file), size_(size) {}
  std::uint64_t size() const noexcept { return size_; }
  //! Copies bytes [offset, offset + count) to `out`; false on a read error.
  bool read(std::uint64_t offset, char* out, std::size_t count) const {
    if (file_ == nullptr) {
      std::memcpy(out, text_.data() + offset, count);
      return true;
    }
    if (::fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0) return false;
    return std::fread(out, 1, count, file_) == count;
  }

 private:
  std::string_view text_;
  std::FILE* file_ = nullptr;
  std::uint64_t size_ = 0;
};

//! One slice in flight: its text, its parser and what it held.
struct json_slice {
  simdjson::dom::parser parser;
  std::unique_ptr<char[]> buffer;
  std::size_t capacity = 0;
  slice_records records;
  std::uint64_t file_offset = 0;  //!< where the slice's text starts in the file
  std::size_t prefix = 0;         //!< bytes of buffer before that text
  bool last = false;              //!< runs to the end of the file
  bool done = false;              //!< nothing more to read
};

constexpr std::string_view nodes_prefix = "{\"nodes\":{";

inline bool json_space(char c) noexcept {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

//! Parses one slice's document into its records. The slice document is the whole file
//! (`prefix` 0) or `{"nodes":{` + slice + `}}` (the last slice: no suffix). The scanner
//! (`detail/egraph_json_scan.hpp`) reads it when it can; otherwise simdjson's DOM API
//! (runtime-dispatched SIMD kernels), which also gives every error. simdjson's On-Demand API is
//! no alternative here: it uses the kernel the compiler targets, the portable scalar one without
//! `-march` flags (measured on this file: slower than the DOM parse plus its walk).
class slice_parser {
 public:
  slice_parser(json_slice& slice, std::string_view source, bool scanner)
      : slice_(slice), source_(source), scanner_(scanner) {}

  expected<void> parse(std::size_t length) {
    // The scanner first; the DOM parser where it declines (and for every error).
    char* const text = slice_.buffer.get();
    if (scanner_ && simdjson::validate_utf8(text, length)) {
      VYRE_TRY_ASSIGN(const bool taken, json_scanner::scan(text, length, slice_.records, others_));
      if (taken) return {};
    }
    slice_.records.clear();
    others_ = false;
    simdjson::dom::element doc;
    if (const auto code =
            slice_.parser.parse(slice_.buffer.get(), length, /*realloc_if_needed=*/false).get(doc))
      return fail(json_error(errc::parse, malformed_context(code), source_)
                      .with("simdjson_error", static_cast<std::uint64_t>(code))
                      .fix("pass a well-formed egraph-serialize JSON file"));
    simdjson::dom::object top;
    if (doc.get_object().get(top) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: the document is not an object", source_)
                      .fix("the top level must be {\"nodes\": {...}, \"root_eclasses\": [...]}"));
    bool seen_nodes = false;
    bool seen_roots = false;
    for (const auto field : top) {
      if (field.key == "nodes") {
        // Refused, not skipped: which duplicate counts differs between JSON readers, and a sliced
        // read would take nodes from both.
        if (seen_nodes)
          return fail(duplicate_field("egraph JSON: the top-level field \"nodes\" appears twice"));
        seen_nodes = true;
        simdjson::dom::object nodes;
        if (field.value.get_object().get(nodes) != simdjson::SUCCESS)
          return fail(json_error(errc::parse, "egraph JSON: \"nodes\" is not an object", source_)
                          .fix("\"nodes\" maps node ids to {op, cost, eclass, children}"));
        VYRE_TRY(parse_nodes(nodes));
      } else {
        others_ = true;
        if (field.key == "root_eclasses") {
          if (seen_roots)
            return fail(duplicate_field(
                "egraph JSON: the top-level field \"root_eclasses\" appears twice"));
          seen_roots = true;
          VYRE_TRY(parse_roots(field.value));
        }
      }
    }
    if (!seen_nodes)
      return fail(json_error(errc::parse, "egraph JSON: missing field", source_, "field", "nodes")
                      .fix("the top level must have a \"nodes\" object"));
    return {};
  }

  //! Whether the document had top-level fields other than "nodes" (a slice that is not the
  //! last must not: its cut was then past the end of "nodes").
  bool saw_other_fields() const noexcept { return others_; }

 private:
  //! A top-level field the loader reads, given twice (`context` names it).
  error duplicate_field(const char* context) const {
    return json_error(errc::duplicate, context, source_)
        .fix("write each top-level field once (JSON readers differ on which duplicate counts)");
  }

  //! An id that is a string or a non-negative integer, as text (integers in `numbers`).
  bool id_text(simdjson::dom::element value, std::string_view& out) {
    if (value.get_string().get(out) == simdjson::SUCCESS) return true;
    std::uint64_t number = 0;
    if (value.get_uint64().get(number) != simdjson::SUCCESS) return false;
    std::array<char, 24>& text = *slice_.records.next_number();
    const auto written = std::to_chars(text.data(), text.data() + text.size(), number);
    out = std::string_view(text.data(), static_cast<std::size_t>(written.ptr - text.data()));
    return true;
  }

  expected<void> parse_nodes(simdjson::dom::object nodes) {
    slice_records& out = slice_.records;
    for (const auto field : nodes) {
      const std::string_view node_id = field.key;
      // A parse error about this node: what is wrong (`context`) and how to fix it.
      const auto node_error = [&](const char* context, const char* hint) {
        return fail(json_error(errc::parse, context, source_, "node", node_id).fix(hint));
      };
      simdjson::dom::object node;
      if (field.value.get_object().get(node) != simdjson::SUCCESS)
        return node_error("egraph JSON: node is not an object",
                          "each node is {op, cost, eclass, children}");
      std::optional<std::string_view> op;
      std::optional<std::string_view> eclass;
      double cost = 1.0;  // egraph-serialize's default
      bool seen_cost = false;
      bool seen_children = false;
      std::uint32_t child_count = 0;
      // A field the loader reads, given twice in one node (refused, as at the top level).
      const auto twice = [&](const char* context) {
        return fail(json_error(errc::duplicate, context, source_, "node", node_id)
                        .fix("write each field of a node once"));
      };
      for (const auto node_field : node) {
        const std::string_view key = node_field.key;
        const simdjson::dom::element value = node_field.value;
        if (key == "op") {
          if (op) return twice("egraph JSON: node field \"op\" appears twice");
          std::string_view text;
          if (value.get_string().get(text) != simdjson::SUCCESS)
            return node_error("egraph JSON: node \"op\" is not a string",
                              "give every node an \"op\" string");
          op = text;
        } else if (key == "eclass") {
          if (eclass) return twice("egraph JSON: node field \"eclass\" appears twice");
          std::string_view text;
          if (!id_text(value, text))
            return node_error("egraph JSON: node \"eclass\" is not a string or unsigned integer",
                              "give every node the id of its e-class");
          eclass = text;
        } else if (key == "cost") {
          if (seen_cost) return twice("egraph JSON: node field \"cost\" appears twice");
          seen_cost = true;
          if (!value.is_number() || value.get_double().get(cost) != simdjson::SUCCESS ||
              !std::isfinite(cost))
            return node_error("egraph JSON: node cost is not a finite number",
                              "give every node a finite numeric cost");
        } else if (key == "children") {
          if (seen_children) return twice("egraph JSON: node field \"children\" appears twice");
          seen_children = true;
          simdjson::dom::array children;
          if (value.get_array().get(children) != simdjson::SUCCESS)
            return node_error("egraph JSON: node \"children\" is not an array",
                              "\"children\" lists child node ids");
          for (const auto child : children) {
            std::string_view text;
            if (!id_text(child, text))
              return node_error(
                  "egraph JSON: a child is not a node id (string or unsigned integer)",
                  "\"children\" lists child node ids");
            VYRE_TRY(push(out.children, id_record{text, hash_text(text)}));
            ++child_count;
          }
        }
      }
      if (!op)
        return node_error("egraph JSON: node has no \"op\" (missing field)",
                          "give every node an \"op\" string");
      if (!eclass)
        return node_error("egraph JSON: node has no \"eclass\" (missing field)",
                          "give every node the id of its e-class");
      VYRE_TRY(push(out.nodes, node_record{node_id, *op, *eclass, hash_text(node_id),
                                           hash_text(*eclass), cost, child_count}));
    }
    return {};
  }

  expected<void> parse_roots(simdjson::dom::element value) {
    simdjson::dom::array roots;
    if (value.get_array().get(roots) != simdjson::SUCCESS)
      return fail(json_error(errc::parse, "egraph JSON: \"root_eclasses\" is not an array", source_)
                      .fix("\"root_eclasses\" lists e-class ids"));
    for (const auto root : roots) {
      std::string_view text;
      if (!id_text(root, text))
        return fail(json_error(errc::parse,
                               "egraph JSON: a root is not an e-class id (string or unsigned "
                               "integer)",
                               source_)
                        .fix("\"root_eclasses\" lists e-class ids"));
      VYRE_TRY(push(slice_.records.roots, text));
    }
    return {};
  }

  template <class T>
  static expected<void> push(std::vector<T>& out, T value) {
    if (out.size() == out.capacity())
      VYRE_TRY(try_reserve(out, 2 * out.size() + 64, "egraph JSON: slice records"));
    out.push_back(value);
    return {};
  }

  json_slice& slice_;
  std::string_view source_;
  bool scanner_;
  bool others_ = false;
};

//! Reads slices from a source and parses each (the producer side of the pipeline).
class slice_reader {
 public:
  slice_reader(const json_source& input, std::string_view source, const json_load_options& options)
      : input_(input),
        source_(source),
        slice_bytes_((std::max<std::size_t>)(options.slice_bytes, 64)),
        scanner_(options.scanner) {}

  //! Finds where "nodes" starts; without the usual `{"nodes":{` head the whole file is one slice.
  expected<void> start() {
    char head[64];
    const std::size_t n =
        static_cast<std::size_t>((std::min<std::uint64_t>)(sizeof head, input_.size()));
    if (!input_.read(0, head, n)) return read_failure(0);
    std::size_t at = 0;
    const auto skip = [&] {
      while (at < n && json_space(head[at])) ++at;
    };
    const auto expect_text = [&](std::string_view text) {
      skip();
      if (n - at < text.size() || std::string_view(head + at, text.size()) != text) return false;
      at += text.size();
      return true;
    };
    if (expect_text("{") && expect_text("\"nodes\"") && expect_text(":") && expect_text("{")) {
      position_ = at;
      chunked_ = true;
    }
    return {};
  }

  //! Reads and parses the next slice into `slice` (`slice.done` when the file is finished).
  expected<void> next(json_slice& slice) {
    if (finished_) {
      slice.done = true;
      return {};
    }
    slice.done = false;
    if (!chunked_) {
      finished_ = true;
      VYRE_TRY(fill(slice, 0, input_.size(), false));
      slice.last = true;
      slice_parser parser(slice, source_, scanner_);
      return parser.parse(input_.size());
    }
    const std::uint64_t remaining = input_.size() - position_;
    if (remaining > slice_bytes_) {
      // A window of slice_bytes: cut at its last `}` , `"` (between two nodes, unless proven
      // otherwise by the parse).
      VYRE_TRY(fill(slice, position_, slice_bytes_, true));
      const char* text = slice.buffer.get() + slice.prefix;
      const std::optional<cut> at = find_cut(text, slice_bytes_);
      if (at) {
        char* end = slice.buffer.get() + slice.prefix + at->end;
        end[0] = '}';
        end[1] = '}';
        const std::size_t length = slice.prefix + at->end + 2;
        slice_parser parser(slice, source_, scanner_);
        if (parser.parse(length) && !parser.saw_other_fields()) {
          slice.last = false;
          position_ += at->comma + 1;  // past the comma
          return {};
        }
      }
    }
    // The rest of the file in one slice: its parse is the authoritative one (errors are real).
    finished_ = true;
    VYRE_TRY(fill(slice, position_, remaining, true));
    slice.last = true;
    slice_parser parser(slice, source_, scanner_);
    return parser.parse(nodes_prefix.size() + static_cast<std::size_t>(remaining));
  }

 private:
  //! Where a slice ends: right after a node's `}` (`end`), and the comma after it (`comma`; there
  //! may be whitespace between them).
  struct cut {
    std::size_t end;
    std::size_t comma;
  };

  //! The last `}` ws `,` ws `"` in `text`, not at its very start.
  static std::optional<cut> find_cut(const char* text, std::size_t length) {
    for (std::size_t i = length; i-- > 1;) {
      if (text[i] != ',') continue;
      std::size_t before = i;
      while (before > 0 && json_space(text[before - 1])) --before;
      if (before == 0 || text[before - 1] != '}') continue;
      std::size_t after = i + 1;
      while (after < length && json_space(text[after])) ++after;
      if (after < length && text[after] == '"') return cut{before, i};
    }
    return std::nullopt;
  }

  static_assert(simdjson::SIMDJSON_PADDING >= json_scanner::padding);

  expected<void> fill(json_slice& slice, std::uint64_t offset, std::uint64_t count, bool prefix) {
    const std::size_t head = prefix ? nodes_prefix.size() : 0;
    const std::size_t need =
        head + static_cast<std::size_t>(count) + 2 + simdjson::SIMDJSON_PADDING;
    if (slice.capacity < need) {
      try {
        slice.buffer.reset();
        slice.buffer.reset(new char[need]);
        advise_huge_pages(slice.buffer.get(), need);
        slice.capacity = need;
      } catch (const std::bad_alloc&) {
        slice.capacity = 0;
        return fail(error(errc::out_of_memory, "egraph JSON: cannot allocate a slice")
                        .with("bytes", need)
                        .fix("free host memory")
                        .about(source_));
      }
    }
    std::memcpy(slice.buffer.get(), nodes_prefix.data(), head);
    if (!input_.read(offset, slice.buffer.get() + head, static_cast<std::size_t>(count)))
      return read_failure(offset);
    std::memset(slice.buffer.get() + head + count, ' ', 2 + simdjson::SIMDJSON_PADDING);
    slice.file_offset = offset;
    slice.prefix = head;
    return {};
  }

  expected<void> read_failure(std::uint64_t offset) const {
    return fail(json_error(errc::io, "egraph JSON: cannot read the file", source_)
                    .with("byte", offset)
                    .fix("check the file and the disk"));
  }

  const json_source& input_;
  std::string_view source_;
  std::size_t slice_bytes_;
  bool scanner_;
  std::uint64_t position_ = 0;
  bool chunked_ = false;
  bool finished_ = false;
};

}  // namespace vyre::io::detail
