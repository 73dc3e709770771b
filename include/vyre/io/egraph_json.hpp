// SPDX-License-Identifier: Apache-2.0
//! @file
//! Loader for the egraph-serialize JSON format (egg, egglog, extraction-gym) into a
//! `vyre::egraph::snapshot`. Optional: needs simdjson (link `vyre::egraph_json`, which links
//! simdjson when CMake found it). Host translation units only: nvcc cannot compile simdjson.h.
//!
//! Format: `nodes` maps a node id to `{op, cost, eclass, children}`, each child a node id whose
//! `eclass` is the child e-class; `root_eclasses` lists the roots. As in egraph-serialize,
//! `children` defaults to `[]`, `cost` to 1 and `root_eclasses` to `[]` (egglog writes `[]`
//! when it was given no roots); other fields are accepted and ignored: egglog >= 13's
//! `subsumed` and `class_data`, `comment`, ... A field the loader reads (`nodes`,
//! `root_eclasses`, a node's `op`, `eclass`, `cost`, `children`) given twice in one object is
//! refused: JSON readers disagree on which duplicate counts. Primitive values (egglog's `i64`,
//! `String`, ...) are ordinary nodes whose op is the value's text. Ids may be strings or
//! non-negative integers (an integer id is its decimal spelling).
//!
//! Row `i` of the snapshot is the `i`-th node of `nodes` in file order; e-class and op ids are
//! dense u32 in first-seen order.
//!
//! How it reads: slices of a few MiB (the file is read slice by slice, never whole), each its
//! own small document `{"nodes":{` slice `}}`; a slice ends at a `},"` between two nodes, and the
//! parse itself proves the cut was not inside a string (else the slice is parsed again together
//! with the rest of the file). A slice that is valid UTF-8 goes to a scanner that reads the
//! nodes straight into flat records (ids as views into the slice, no tree; see
//! `detail/egraph_json_scan.hpp`); one it declines (an error, a `\u` escape, a long number...)
//! goes to simdjson's DOM parser, which gives the result or the error, so the two agree by
//! construction. One thread reads the next slice while the caller's thread interns the previous
//! one (ids through flat open-addressing tables with short names inline in the slot, no
//! `std::string` per node). Peak memory is the result, the id tables and about 4 slices, not the
//! file.
#pragma once

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <simdjson.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph.hpp"
#include "vyre/io/detail/egraph_json_scan.hpp"
#include "vyre/io/loaded_egraph.hpp"
#include "vyre/io/name_table.hpp"

namespace vyre::io {

//! How `load_egraph_json` reads (tests and benchmarks change it; the defaults suit real files).
struct json_load_options {
  std::size_t slice_bytes = std::size_t{4} << 20;  //!< bytes of one slice (at least 64)
  bool threads = true;  //!< parse the next slice on a second thread (when there is more than one)
  //! Read with the scanner where it can (false: simdjson's DOM parser only; tests compare them).
  bool scanner = true;
};

namespace detail {

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

//! A zero-filled array of trivially copyable `T` for large random-access tables: on Linux its
//! own anonymous mapping, marked for transparent huge pages, so that random look-ups into it
//! miss the TLB less and its pages fault in 2 MiB at a time; elsewhere 64-byte aligned `operator
//! new`, zeroed.
template <class T>
class zeroed_array {
 public:
  zeroed_array() = default;
  zeroed_array(const zeroed_array&) = delete;
  zeroed_array& operator=(const zeroed_array&) = delete;
  zeroed_array(zeroed_array&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  zeroed_array& operator=(zeroed_array&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~zeroed_array() { release(); }

  //! An array of `count` zero bytes' `T`s; `errc::out_of_memory` when it cannot be had.
  static expected<zeroed_array> make(std::size_t count, const char* what) {
    zeroed_array out;
    const std::size_t bytes = count * sizeof(T);
#if defined(__linux__)
    void* memory =
        ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) memory = nullptr;
    if (memory != nullptr) advise_huge_pages(memory, bytes);
#else
    void* memory = ::operator new (bytes, std::align_val_t{64}, std::nothrow);
    if (memory != nullptr) std::memset(memory, 0, bytes);
#endif
    if (memory == nullptr && count != 0)
      return fail(error(errc::out_of_memory, what).with("bytes", bytes).fix("free host memory"));
    out.data_ = static_cast<T*>(memory);
    out.size_ = count;
    return out;
  }

  std::size_t size() const noexcept {
    return size_;
  }
  bool empty() const noexcept {
    return size_ == 0;
  }
  T& operator[](std::size_t i) noexcept {
    return data_[i];
  }
  const T& operator[](std::size_t i) const noexcept {
    return data_[i];
  }
  T* begin() noexcept {
    return data_;
  }
  T* end() noexcept {
    return data_ + size_;
  }
  const T* begin() const noexcept {
    return data_;
  }
  const T* end() const noexcept {
    return data_ + size_;
  }

 private:
  void release() noexcept {
    if (data_ == nullptr) return;
#if defined(__linux__)
    ::munmap(data_, size_ * sizeof(T));
#else
    ::operator delete (data_, std::align_val_t{64});
#endif
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

//! Names to dense u32 ids in first-seen order: a flat open-addressing table over a
//! `name_table`. A slot is half a cache line: a tag (hash bits, and the length when it is below
//! 255), the id, and the name itself when it is short (`inline_bytes`, as most ids are), else a
//! pointer to its characters in the table (which never move). So a look-up of a short name
//! touches one line, which `first_tag` can load early; no per-name allocation.
class interner {
 public:
  name_table names;

  //! The tag of a name with hash `hash` (look-ups take the hash precomputed); never 0
  //! (the tag of an empty slot).
  static std::uint32_t tag_of(std::uint64_t hash, std::size_t length) noexcept {
    const std::uint32_t tag = (static_cast<std::uint32_t>(hash >> 32) & ~0xffu) |
                              static_cast<std::uint32_t>(length < 255 ? length : 255);
    return tag != 0 ? tag : 0x100u;
  }

  //! The id of `text` (whose `hash_text` is `hash`), and whether it was new.
  expected<std::pair<std::uint32_t, bool>> intern(std::string_view text, std::uint64_t hash,
                                                  const char* what) {
    if (4 * (names.size() + 1) > 3 * slots_.size()) VYRE_TRY(grow(what));  // load <= 3/4
    const std::uint32_t tag = tag_of(hash, text.size());
    for (std::size_t at = home(hash, mask_);; at = (at + 1) & mask_) {
      slot& here = slots_[at];
      if (here.tag == 0) {
        if (names.size() >= egraph::snapshot_limits::u32_max)
          return fail(
              error(errc::abi_limit, what).with("ids", names.size()).fix(egraph::shard_hint));
        const auto id = static_cast<std::uint32_t>(names.size());
        VYRE_TRY(names.push_back(text));
        here.tag = tag;
        here.id = id;
        if (text.size() <= inline_bytes) {
          if (!text.empty()) std::memcpy(here.text, text.data(), text.size());
        } else {
          const char* stored = names[id].data();
          std::memcpy(here.text, &stored, sizeof stored);
        }
        return std::pair<std::uint32_t, bool>{id, true};
      }
      if (here.tag == tag && matches(here, text))
        return std::pair<std::uint32_t, bool>{here.id, false};
    }
  }
  expected<std::pair<std::uint32_t, bool>> intern(std::string_view text, const char* what) {
    return intern(text, hash_text(text), what);
  }

  std::optional<std::uint32_t> find(std::string_view text) const noexcept {
    if (slots_.empty()) return std::nullopt;
    const std::uint64_t hash = hash_text(text);
    const std::uint32_t tag = tag_of(hash, text.size());
    for (std::size_t at = home(hash, mask_);; at = (at + 1) & mask_) {
      const slot& here = slots_[at];
      if (here.tag == 0) return std::nullopt;
      if (here.tag == tag && matches(here, text)) return here.id;
    }
  }

  //! The tag of the slot a look-up of `hash` reads first (a load, for `egraph_builder::touch`).
  std::uint32_t first_tag(std::uint64_t hash) const noexcept {
    return slots_.empty() ? 0 : slots_[home(hash, mask_)].tag;
  }

  //! Room for `count` names without rehashing.
  expected<void> reserve(std::size_t count, const char* what) {
    VYRE_TRY(names.reserve(count));
    while (3 * slots_.size() < 4 * count) VYRE_TRY(grow(what));
    return {};
  }

  //! Drops the hash index (the names stay).
  void drop_index() noexcept {
    slots_ = {};
    mask_ = 0;
  }

 private:
  //! Names up to this long live in their slot.
  static constexpr std::size_t inline_bytes = 24;

  struct alignas(32) slot {
    std::uint32_t tag;  //!< 0: empty
    std::uint32_t id;
    char text[inline_bytes];  //!< the name, or (longer names) a pointer to its characters
  };
  static_assert(sizeof(slot) == 32);

  //! Where a look-up of `hash` starts: an even slot, so that it and the next one share a cache
  //! line (the table is page-aligned) and most look-ups touch one line.
  static std::size_t home(std::uint64_t hash, std::size_t mask) noexcept {
    return static_cast<std::size_t>(hash) & mask & ~std::size_t{1};
  }

  bool matches(const slot& here, std::string_view text) const noexcept {
    // Equal tags: equal lengths unless the length is 255 or more.
    if (text.size() <= inline_bytes) return same_text(here.text, text.data(), text.size());
    if ((here.tag & 0xffu) == 255 && names[here.id].size() != text.size()) return false;
    const char* stored;
    std::memcpy(&stored, here.text, sizeof stored);
    return same_text(stored, text.data(), text.size());
  }

  expected<void> grow(const char* what) {
    const std::size_t capacity = slots_.empty() ? 1024 : 2 * slots_.size();
    VYRE_TRY_ASSIGN(zeroed_array<slot> grown, zeroed_array<slot>::make(capacity, what));
    const std::size_t mask = capacity - 1;
    for (const slot& old : slots_) {
      if (old.tag == 0) continue;
      std::size_t at = home(hash_text(names[old.id]), mask);
      while (grown[at].tag != 0) at = (at + 1) & mask;
      grown[at] = old;
    }
    slots_ = std::move(grown);
    mask_ = mask;
    return {};
  }

  zeroed_array<slot> slots_;
  std::size_t mask_ = 0;
};

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

//! Interns slices in file order and builds the result (the consumer side of the pipeline).
class egraph_builder {
 public:
  explicit egraph_builder(std::string_view source) : source_(source) {}

  expected<void> add(const slice_records& in, std::uint64_t file_bytes, std::uint64_t slice_bytes) {
    const std::size_t count = in.nodes.size();
    if (!estimated_ && count > 0 && slice_bytes > 0) {
      // Reserve once, from the density of the first slice (+10 %).
      estimated_ = true;
      const double per_byte = static_cast<double>(count) / static_cast<double>(slice_bytes);
      const auto nodes =
          static_cast<std::size_t>(1.1 * per_byte * static_cast<double>(file_bytes)) + 16;
      const double children_per_node =
          static_cast<double>(in.children.size()) / static_cast<double>(count);
      const auto children =
          static_cast<std::size_t>(1.1 * children_per_node * static_cast<double>(nodes)) + 16;
      VYRE_TRY(nodes_.reserve(nodes, "egraph JSON: node ids"));
      {
        interner distinct;  // e-classes per node in this slice, for the e-class table
        for (const node_record& node : in.nodes)
          VYRE_TRY(distinct.intern(node.eclass, "egraph JSON: e-classes"));
        // The first slice overstates it where a file starts with one node per e-class (egglog's
        // math-11: 1.0 there, 0.42 overall, which made the table twice too large): at most half
        // a class per node up front, the table grows past that.
        const double ratio = (std::min)(
            0.5, static_cast<double>(distinct.names.size()) / static_cast<double>(count));
        VYRE_TRY(
            eclasses_.reserve(static_cast<std::size_t>(ratio * static_cast<double>(nodes)) + 16,
                              "egraph JSON: e-class ids"));
      }
      VYRE_TRY(try_reserve(defined_, nodes / 64 + 1, "egraph JSON: node rows"));
      VYRE_TRY(try_reserve(symbol_of_row_, nodes, "egraph JSON: node rows"));
      VYRE_TRY(try_reserve(result_.node_costs, nodes, "egraph JSON: node costs"));
      VYRE_TRY(try_reserve(child_symbols_, children, "egraph JSON: children"));
      VYRE_TRY(result_.graph.reserve<on_error::return_expected>(nodes, children));
      // Fresh 4 KiB pages cost more than the parse here: ask for huge pages before the first touch.
      advise_huge_pages(symbol_of_row_);
      advise_huge_pages(result_.node_costs);
      advise_huge_pages(child_symbols_);
      advise_huge_pages(result_.graph.rows().data(), nodes * sizeof(egraph::row));
      advise_huge_pages(result_.graph.children().data(), children * sizeof(std::uint32_t));
    }
    std::size_t child = 0;
    for (std::size_t first = 0; first < count; first += batch) {
      const std::size_t last = (std::min)(count, first + batch);
      touch(in, first, last, child);
      VYRE_TRY(add_nodes(in, first, last, child));
    }
    for (const std::string_view root : in.roots) VYRE_TRY(push(root_texts_, std::string(root)));
    return {};
  }

 private:
  //! Makes room in `defined_` for a new node symbol.
  expected<void> add_symbol(std::uint32_t symbol) {
    if (symbol % 64 == 0) VYRE_TRY(push(defined_, std::uint64_t{0}));
    return {};
  }

  //! Nodes whose look-ups `touch` loads together.
  static constexpr std::size_t batch = 64;

  //! Loads the first slot of every look-up of nodes [first, last) (children from `child` on).
  //! The look-ups are random accesses into tables larger than the caches; loads in a tight loop
  //! overlap their misses, where a software prefetch per look-up ahead of the work did not help
  //! (measured: the look-ups stalled on the slot all the same).
  void touch(const slice_records& in, std::size_t first, std::size_t last, std::size_t child) {
    std::uint32_t sink = 0;
    std::size_t child_end = child;
    for (std::size_t n = first; n < last; ++n) {
      sink += nodes_.first_tag(in.nodes[n].key_hash) + eclasses_.first_tag(in.nodes[n].eclass_hash);
      child_end += in.nodes[n].child_count;
    }
    for (std::size_t c = child; c < child_end; ++c) sink += nodes_.first_tag(in.children[c].hash);
    touched_ += sink;  // keeps the loads
  }

  //! Interns nodes [first, last) of `in` (children from `child` on, which it advances).
  expected<void> add_nodes(const slice_records& in, std::size_t first, std::size_t last,
                           std::size_t& child) {
    for (std::size_t n = first; n < last; ++n) {
      const node_record& record = in.nodes[n];
      VYRE_TRY_ASSIGN(const auto node,
                      nodes_.intern(record.key, record.key_hash,
                                    "egraph JSON: too many nodes for u32 row ids"));
      if (node.second) VYRE_TRY(add_symbol(node.first));
      std::uint64_t& word = defined_[node.first / 64];
      const std::uint64_t bit = std::uint64_t{1} << (node.first % 64);
      if ((word & bit) != 0)
        return fail(json_error(errc::duplicate, "egraph JSON: duplicate node id", source_, "node",
                               record.key)
                        .fix("give every node a unique id"));
      word |= bit;
      VYRE_TRY(push(symbol_of_row_, node.first));
      VYRE_TRY_ASSIGN(const auto eclass,
                      eclasses_.intern(record.eclass, record.eclass_hash,
                                       "egraph JSON: too many e-classes for u32 ids"));
      // Nodes come in runs of one op (egglog writes them by function): the last op first.
      if (record.op.size() != last_op_.size() ||
          !same_text(record.op.data(), last_op_.data(), record.op.size()) || ops_.names.empty()) {
        VYRE_TRY_ASSIGN(const auto op,
                        ops_.intern(record.op, "egraph JSON: too many ops for u32 ids"));
        if (op.second) VYRE_TRY(result_.graph.intern_op<on_error::return_expected>(record.op));
        last_op_ = ops_.names[op.first];
        last_op_id_ = op.first;
      }
      const std::uint32_t children = record.child_count;
      const auto offset = child_symbols_.size();
      if (offset + children > egraph::snapshot_limits::u32_max)
        return fail(error(errc::abi_limit, "egraph JSON: children column too long for u32 offsets")
                        .with("child_entries", offset)
                        .fix(egraph::shard_hint)
                        .about(source_));
      for (std::uint32_t c = 0; c < children; ++c, ++child) {
        VYRE_TRY_ASSIGN(const auto target,
                        nodes_.intern(in.children[child].text, in.children[child].hash,
                                      "egraph JSON: too many nodes for u32 row ids"));
        if (target.second) VYRE_TRY(add_symbol(target.first));
        VYRE_TRY(push(child_symbols_, target.first));
      }
      VYRE_TRY(push(result_.node_costs, record.cost));
      VYRE_TRY(result_.graph.add_raw_row<on_error::return_expected>(
          egraph::row{eclass.first, last_op_id_, static_cast<std::uint32_t>(offset), children}));
    }
    return {};
  }

 public:
  expected<loaded_egraph> finish() && {
    // Children: node symbol -> row -> that row's e-class.
    nodes_.drop_index();
    defined_ = {};
    std::vector<std::uint32_t> row_of_symbol;  // row of node symbol s, or no_row
    VYRE_TRY(try_reserve(row_of_symbol, nodes_.names.size(), "egraph JSON: node rows"));
    advise_huge_pages(row_of_symbol);
    row_of_symbol.resize(nodes_.names.size());
    std::fill(row_of_symbol.begin(), row_of_symbol.end(), no_row);
    for (std::size_t r = 0; r < symbol_of_row_.size(); ++r)
      row_of_symbol[symbol_of_row_[r]] = static_cast<std::uint32_t>(r);
    const auto rows = result_.graph.rows();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::uint32_t c = 0; c < rows[r].children_length; ++c) {
        std::uint32_t& entry = child_symbols_[rows[r].children_offset + c];
        const std::uint32_t row = row_of_symbol[entry];
        if (row == no_row)
          return fail(json_error(errc::not_found, "egraph JSON: a child names an unknown node",
                                 source_, "child", nodes_.names[entry])
                          .with("row", r)
                          .fix("every child must be a key of \"nodes\""));
        entry = rows[row].eclass;
      }
    }
    VYRE_TRY(result_.graph.append_children<on_error::return_expected>(
        {child_symbols_.data(), child_symbols_.size()}));
    child_symbols_ = {};
    row_of_symbol = {};
    for (const std::string& root : root_texts_) {
      const auto found = eclasses_.find(root);
      if (!found)
        return fail(json_error(errc::not_found,
                               "egraph JSON: a root names an e-class that has no node", source_,
                               "root", root)
                        .fix("every root must be the \"eclass\" of some node"));
      VYRE_TRY(push(result_.root_eclasses, *found));
    }
    VYRE_TRY_ASSIGN(result_.node_ids, std::move(nodes_.names).take_reordered(symbol_of_row_));
    eclasses_.drop_index();
    result_.eclass_ids = std::move(eclasses_.names);
    return std::move(result_);
  }

 private:
  static constexpr std::uint32_t no_row = 0xffffffffu;

  template <class T>
  static expected<void> push(std::vector<T>& out, T value) {
    if (out.size() == out.capacity())
      VYRE_TRY(try_reserve(out, 2 * out.size() + 64, "egraph JSON: loader tables"));
    out.push_back(std::move(value));
    return {};
  }

  std::string_view source_;
  loaded_egraph result_;
  interner nodes_;  //!< node ids, defined (keys) or referenced (children) first
  interner eclasses_;
  interner ops_;
  std::string_view last_op_;  //!< the op of the last node (in `ops_.names`)
  std::uint32_t last_op_id_ = 0;
  std::vector<std::uint64_t> defined_;  //!< bit s: node symbol s is a key seen so far
  std::vector<std::uint32_t> symbol_of_row_;
  std::vector<std::uint32_t> child_symbols_;  //!< children as node symbols, then e-classes
  std::vector<std::string> root_texts_;
  std::uint32_t touched_ = 0;
  bool estimated_ = false;
};

//! Reads, parses and interns every slice: a second thread parses slice k + 1 while this one
//! interns slice k (two slices in flight).
inline expected<loaded_egraph> load_slices(const json_source& input, std::string_view source,
                                           const json_load_options& options) {
  slice_reader reader(input, source, options);
  VYRE_TRY(reader.start());
  egraph_builder builder(source);
  std::array<json_slice, 2> slices;
  const bool threaded = options.threads && input.size() > 2 * options.slice_bytes &&
                        std::thread::hardware_concurrency() > 1;
  if (!threaded) {
    for (;;) {
      json_slice& slice = slices[0];
      VYRE_TRY(reader.next(slice));
      if (slice.done) break;
      VYRE_TRY(builder.add(slice.records, input.size(),
                           slice.last ? input.size() - slice.file_offset : options.slice_bytes));
    }
    return std::move(builder).finish();
  }
  // Producer: fills slices[k % 2] when it is free. Consumer (here): interns them in order.
  std::mutex mutex;
  std::condition_variable changed;
  std::array<bool, 2> ready{false, false};
  std::array<std::optional<error>, 2> failure;
  bool stop = false;
  std::thread producer([&] {
    for (std::size_t k = 0;; ++k) {
      const std::size_t s = k % 2;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !ready[s] || stop; });
        if (stop) return;
      }
      auto parsed = reader.next(slices[s]);
      const bool done = !parsed || slices[s].done;
      {
        std::lock_guard lock(mutex);
        if (!parsed) failure[s] = parsed.error();
        ready[s] = true;
      }
      changed.notify_all();
      if (done) return;
    }
  });
  expected<void> outcome;
  for (std::size_t k = 0;; ++k) {
    const std::size_t s = k % 2;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return ready[s]; });
    }
    if (failure[s]) {
      outcome = fail(*failure[s]);
      break;
    }
    if (slices[s].done) break;
    outcome =
        builder.add(slices[s].records, input.size(),
                    slices[s].last ? input.size() - slices[s].file_offset : options.slice_bytes);
    if (!outcome) break;
    {
      std::lock_guard lock(mutex);
      ready[s] = false;
    }
    changed.notify_all();
  }
  {
    std::lock_guard lock(mutex);
    stop = true;
  }
  changed.notify_all();
  producer.join();
  if (!outcome) return fail(outcome.error());
  return std::move(builder).finish();
}

}  // namespace detail

//! Parses egraph-serialize JSON text; `source` names it in errors (a file name).
//! @throws vyre::error_exception naming the source and the offending id: `errc::parse`
//!         (malformed JSON, a missing or mistyped field, a cost that is not a finite number),
//!         `errc::duplicate` (a node id twice, a field the loader reads twice in one object:
//!         `nodes`, `root_eclasses`, a node's `op`, `eclass`, `cost`, `children`),
//!         `errc::not_found` (a child naming an unknown node, a root naming an e-class with no
//!         node), `errc::abi_limit`, `errc::out_of_memory`.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> parse_egraph_json(std::string_view json,
                                                   std::string_view source = "JSON text",
                                                   const json_load_options& options = {}) {
  const detail::json_source input(json);
  return apply_error_policy<OnError>(detail::load_slices(input, source, options));
}

//! Loads an egraph-serialize JSON file, slice by slice (the file is never held whole).
//! @throws vyre::error_exception `errc::io` naming the path, or the errors of
//!         `parse_egraph_json`, each naming the path.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> load_egraph_json(const std::filesystem::path& path,
                                                  const json_load_options& options = {}) {
  auto run = [&]() -> expected<loaded_egraph> {
    const std::string name = path.string();
    std::error_code failed;
    const bool regular = std::filesystem::is_regular_file(path, failed);
    const std::uintmax_t size = regular ? std::filesystem::file_size(path, failed) : 0;
    std::FILE* file = regular && !failed ? std::fopen(name.c_str(), "rb") : nullptr;
    if (file == nullptr)
      return fail(detail::json_error(errc::io, "egraph JSON: cannot read the file", name)
                      .fix("check the path and permissions"));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);
    const detail::json_source input(file, size);
    return detail::load_slices(input, name, options);
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::io
