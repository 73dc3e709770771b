// SPDX-License-Identifier: Apache-2.0
//! @file
//! The fast path of the egraph-serialize JSON loader (`vyre/io/egraph_json.hpp`): a scanner
//! that reads one slice document (`{"nodes":{` slice `}}`, or a whole file) straight into the
//! slice's records, ids as views into the text, with no tree, no tape and no copy of a string
//! that has no escape. It checks the JSON grammar as it goes and takes only documents that a
//! full JSON parser takes; anything else (malformed text, a missing or mistyped field, a `\u`
//! escape, a long or out-of-range number, deep nesting) makes it decline, and the loader then
//! parses that slice with simdjson's DOM parser, which gives the result or the error. Its result
//! is therefore the DOM reading's or none. The caller checks that the text is valid UTF-8.
//! Host only; no simdjson.
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>
#include <system_error>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "vyre/core/error.hpp"

namespace vyre::io::detail {

//! Loads `n` bytes (1 to 8) of `p` into a word without reading past them (`n` >= 4: two
//! overlapping 4-byte loads; shorter: the first, middle and last byte).
inline std::uint64_t load_tail(const char* p, std::size_t n) noexcept {
  if (n >= 4) {
    std::uint32_t low, high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + n - 4, 4);
    return low | (std::uint64_t{high} << 32);
  }
  const auto byte = [](char c) { return std::uint64_t{static_cast<unsigned char>(c)}; };
  return byte(p[0]) | (byte(p[n >> 1]) << 8) | (byte(p[n - 1]) << 16);
}

//! A fast 64-bit hash of short ids (multiply-xorshift over 8-byte words; the length is mixed in
//! first, so the overlapping loads of the tail cannot make two lengths collide systematically).
inline std::uint64_t hash_text(std::string_view text) noexcept {
  const char* p = text.data();
  std::size_t n = text.size();
  std::uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n > 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);
    h = (h ^ word) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    p += 8;
    n -= 8;
  }
  if (n != 0) {
    h = (h ^ load_tail(p, n)) * 0x94d049bb133111ebull;
    h ^= h >> 29;
  }
  h *= 0xd6e8feb86659fd93ull;
  return h ^ (h >> 32);
}

//! Whether the `n` bytes at `a` and `b` are equal (short ids: word compares, no call).
inline bool same_text(const char* a, const char* b, std::size_t n) noexcept {
  while (n > 8) {
    std::uint64_t x, y;
    std::memcpy(&x, a, 8);
    std::memcpy(&y, b, 8);
    if (x != y) return false;
    a += 8;
    b += 8;
    n -= 8;
  }
  return n == 0 || load_tail(a, n) == load_tail(b, n);
}

//! One node of a slice: its id, op and e-class (views), their hashes, cost and child count.
struct node_record {
  std::string_view key, op, eclass;
  std::uint64_t key_hash, eclass_hash;  //!< `hash_text` of `key` and `eclass`
  double cost;
  std::uint32_t child_count;
};

//! A child id of a slice and its `hash_text`.
struct id_record {
  std::string_view text;
  std::uint64_t hash;
};

//! What one slice held, as views into its text or its own storage (valid until the slice is
//! reused): nodes in file order, their children in order, the roots.
struct slice_records {
  std::vector<node_record> nodes;
  std::vector<id_record> children;
  std::vector<std::string_view> roots;
  //! Decimal text of integer ids, in blocks that never move (views point into them).
  std::vector<std::unique_ptr<std::array<char, 24>[]>> number_blocks;
  std::size_t numbers_in_last_block = 0;
  static constexpr std::size_t numbers_per_block = 4096;
  //! Unescaped strings, in blocks that never move (views point into them).
  std::vector<std::unique_ptr<char[]>> text_blocks;
  std::size_t text_used = 0;
  std::size_t text_capacity = 0;
  static constexpr std::size_t text_block_bytes = std::size_t{64} << 10;

  std::array<char, 24>* next_number() {
    if (number_blocks.empty() || numbers_in_last_block == numbers_per_block) {
      number_blocks.emplace_back(new std::array<char, 24>[numbers_per_block]);
      numbers_in_last_block = 0;
    }
    return &number_blocks.back()[numbers_in_last_block++];
  }
  //! Room for `bytes` characters that stay put until `clear`.
  //! @throws std::bad_alloc
  char* text_room(std::size_t bytes) {
    if (text_blocks.empty() || text_capacity - text_used < bytes) {
      const std::size_t size = bytes > text_block_bytes ? bytes : text_block_bytes;
      text_blocks.reserve(text_blocks.size() + 1);
      text_blocks.emplace_back(new char[size]);
      text_used = 0;
      text_capacity = size;
    }
    char* at = text_blocks.back().get() + text_used;
    text_used += bytes;
    return at;
  }
  void clear() noexcept {
    nodes.clear();
    children.clear();
    roots.clear();
    number_blocks.clear();
    numbers_in_last_block = 0;
    text_blocks.clear();
    text_used = 0;
    text_capacity = 0;
  }
};

//! Scans a slice document into `slice_records` (see the file comment).
class json_scanner {
 public:
  //! Bytes past the document that `scan` reads; the first of them it also writes (and restores).
  static constexpr std::size_t padding = 16;

  //! Scans the `length` bytes at `text` (valid UTF-8; `padding` more bytes readable and the first
  //! writable) into `out` (cleared first) and sets `others` when the top level had fields besides
  //! "nodes".
  //! @return true when the scanner took the document (then `out` is what the DOM reading gives),
  //!         false when it declined (`out` is then unspecified); `errc::out_of_memory` when a
  //!         table cannot grow.
  static expected<bool> scan(char* text, std::size_t length, slice_records& out, bool& others) {
    out.clear();
    others = false;
    if (length > max_document_bytes) return false;
    const char saved = text[length];
    text[length] = '\0';  // the sentinel: never valid JSON, so every loop stops on it
    json_scanner scanner(text, out);
    bool taken = false;
    try {
      taken = scanner.document(others) && scanner.p_ == text + length;  // nothing after it
    } catch (const std::bad_alloc&) {
      text[length] = saved;
      out.clear();
      return fail(error(errc::out_of_memory, "egraph JSON: cannot grow the slice records")
                      .with("bytes", length)
                      .fix("free host memory"));
    }
    text[length] = saved;
    return taken;
  }

 private:
  //! simdjson's largest document (its `SIMDJSON_MAXSIZE_BYTES`): longer ones go to its parser.
  static constexpr std::size_t max_document_bytes = 0xFFFFFFFFu;
  //! Nesting the scanner follows (the DOM parser goes to 1024; deeper documents go to it).
  static constexpr unsigned max_depth = 64;
  //! Digits of a number the scanner reads (longer numbers go to the DOM parser).
  static constexpr std::size_t max_digits = 17;

  json_scanner(const char* text, slice_records& out) : p_(text), out_(out) {}

  static bool space(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool digit(char c) noexcept { return c >= '0' && c <= '9'; }
  void skip_space() noexcept {
    while (space(*p_)) ++p_;
  }

  //! The first '"', '\\' or control character at or after `p` (the sentinel stops it).
  static const char* find_special(const char* p) noexcept {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1f);
    for (;; p += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i hit =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                       _mm_cmpeq_epi8(_mm_max_epu8(v, control), control));
      const auto bits = static_cast<unsigned>(_mm_movemask_epi8(hit));
      if (bits != 0) return p + __builtin_ctz(bits);
    }
#else
    for (;; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20) return p;
    }
#endif
  }

  //! The character a simple escape `\c` stands for, or 0 (`\u` and invalid escapes).
  static char unescape(char c) noexcept {
    switch (c) {
      case '"':
        return '"';
      case '\\':
        return '\\';
      case '/':
        return '/';
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      default:
        return 0;
    }
  }

  //! A string whose opening quote was just read: `text` is its unescaped text (a view into the
  //! document when it has no escape). False: declined.
  bool string(std::string_view& text) {
    const char* start = p_;
    const char* at = find_special(start);
    if (*at == '"') {
      text = std::string_view(start, static_cast<std::size_t>(at - start));
      p_ = at + 1;
      return true;
    }
    if (*at != '\\') return false;  // a control character (or the sentinel)
    // Escapes: find the closing quote, then copy the text unescaped.
    const char* end = at;
    for (;;) {
      end = find_special(end);
      if (*end == '"') break;
      if (*end != '\\' || unescape(end[1]) == 0) return false;
      end += 2;
    }
    char* const room = out_.text_room(static_cast<std::size_t>(end - start));
    char* write = room;
    for (const char* read = start; read != end;) {
      if (*read == '\\') {
        *write++ = unescape(read[1]);
        read += 2;
      } else {
        *write++ = *read++;
      }
    }
    text = std::string_view(room, static_cast<std::size_t>(write - room));
    p_ = end + 1;
    return true;
  }

  //! Skips a string whose opening quote was just read. False: declined.
  bool skip_string() noexcept {
    for (const char* at = p_;;) {
      at = find_special(at);
      if (*at == '"') {
        p_ = at + 1;
        return true;
      }
      if (*at != '\\' || unescape(at[1]) == 0) return false;
      at += 2;
    }
  }

  //! A JSON number at `p_` (short: at most `max_digits` digits and a two-digit exponent).
  struct number {
    const char* begin = nullptr;
    const char* end = nullptr;
    std::uint64_t mantissa = 0;  //!< the digits as an integer (without the point)
    unsigned fraction_digits = 0;
    bool negative = false;
    bool integer = true;  //!< no fraction, no exponent
    bool exponent = false;
  };
  bool read_number(number& n) noexcept {
    const char* q = p_;
    n.begin = q;
    n.negative = *q == '-';
    if (n.negative) ++q;
    std::size_t digits = 0;
    std::uint64_t mantissa = 0;
    if (*q == '0') {
      ++q;
      digits = 1;
    } else if (digit(*q)) {
      for (; digit(*q); ++q, ++digits)
        mantissa = 10 * mantissa + static_cast<std::uint64_t>(*q - '0');
    } else {
      return false;
    }
    if (*q == '.') {
      n.integer = false;
      const char* first = ++q;
      for (; digit(*q); ++q, ++digits)
        mantissa = 10 * mantissa + static_cast<std::uint64_t>(*q - '0');
      if (q == first) return false;
      n.fraction_digits = static_cast<unsigned>(q - first);
    }
    if (digits > max_digits) return false;  // (the mantissa did not overflow: 17 digits)
    if (*q == 'e' || *q == 'E') {
      n.integer = false;
      n.exponent = true;
      ++q;
      if (*q == '+' || *q == '-') ++q;
      const char* first = q;
      while (digit(*q)) ++q;
      if (q == first || q - first > 2) return false;
    }
    n.mantissa = mantissa;
    n.end = q;
    p_ = q;
    return true;
  }

  //! The value of a short number as simdjson's `get_double` gives it (correctly rounded).
  //! False: declined (`-0` written as an integer).
  static bool number_value(const number& n, double& value) noexcept {
    static constexpr double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (n.integer && n.negative && n.mantissa == 0) return false;
    if (!n.exponent && n.mantissa <= (std::uint64_t{1} << 53)) {
      // Both exact doubles, so one IEEE division rounds the decimal value correctly.
      value = static_cast<double>(n.mantissa) / powers[n.fraction_digits];
      if (n.negative) value = -value;
      return true;
    }
    const auto parsed = std::from_chars(n.begin, n.end, value);
    return parsed.ec == std::errc() && parsed.ptr == n.end;
  }

  //! An id at `p_`: a string, or a non-negative integer as its decimal text. False: declined.
  bool id(std::string_view& text) {
    if (*p_ == '"') {
      ++p_;
      return string(text);
    }
    number n;
    if (!read_number(n) || !n.integer || n.negative) return false;
    // A JSON integer has no leading zero: its text is its decimal spelling.
    text = std::string_view(n.begin, static_cast<std::size_t>(n.end - n.begin));
    return true;
  }

  //! Skips any value at `p_`. False: declined.
  bool skip_value(unsigned depth) noexcept {
    switch (*p_) {
      case '"':
        ++p_;
        return skip_string();
      case '{':
      case '[': {
        if (depth >= max_depth) return false;
        const char close = *p_ == '{' ? '}' : ']';
        const bool object = close == '}';
        ++p_;
        skip_space();
        if (*p_ == close) {
          ++p_;
          return true;
        }
        for (;;) {
          if (object) {
            if (*p_ != '"') return false;
            ++p_;
            if (!skip_string()) return false;
            skip_space();
            if (*p_ != ':') return false;
            ++p_;
            skip_space();
          }
          if (!skip_value(depth + 1)) return false;
          skip_space();
          if (*p_ == ',') {
            ++p_;
            skip_space();
            continue;
          }
          if (*p_ != close) return false;
          ++p_;
          return true;
        }
      }
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default: {
        number n;
        return read_number(n);
      }
    }
  }
  bool literal(std::string_view word) noexcept {
    // The sentinel ends the document, so the comparison stops at it.
    for (const char c : word)
      if (*p_++ != c) return false;
    return true;
  }

  //! After a member's value: `,` then the next key's quote (true, `more`) or `close` (true).
  bool next_member(char close, bool& more) noexcept {
    skip_space();
    if (*p_ == ',') {
      ++p_;
      skip_space();
      if (*p_ != '"') return false;
      ++p_;
      more = true;
      return true;
    }
    if (*p_ != close) return false;
    ++p_;
    more = false;
    return true;
  }
  //! After an object's `{`: its first key's quote (true, `more`) or `}` (true).
  bool first_member(bool& more) noexcept {
    skip_space();
    if (*p_ == '}') {
      ++p_;
      more = false;
      return true;
    }
    if (*p_ != '"') return false;
    ++p_;
    more = true;
    return true;
  }
  //! After a key: `:` and the value's first character.
  bool colon() noexcept {
    skip_space();
    if (*p_ != ':') return false;
    ++p_;
    skip_space();
    return true;
  }

  //! A key whose opening quote was just read, when it is `word` written plainly (then the key
  //! is read); false leaves it to `string`. `word` ends with the closing quote.
  bool plain_key(std::string_view word) noexcept {
    // At most `word.size()` bytes are compared, stopping at the first difference (the sentinel
    // ends the document, and `padding` bytes follow it).
    if (std::memcmp(p_, word.data(), word.size()) != 0) return false;
    p_ += word.size();
    return true;
  }

  //! The whole document: an object with one "nodes" field, the nodes object, and at most one
  //! "root_eclasses".
  bool document(bool& others) {
    skip_space();
    if (*p_ != '{') return false;
    ++p_;
    bool more = false;
    if (!first_member(more)) return false;
    bool seen_nodes = false;
    bool seen_roots = false;
    while (more) {
      std::string_view key;
      if (!string(key) || !colon()) return false;
      // A field read twice: declined, the DOM parser names it.
      if (key == "nodes") {
        if (seen_nodes) return false;
        seen_nodes = true;
        if (!nodes()) return false;
      } else {
        others = true;
        if (key == "root_eclasses") {
          if (seen_roots) return false;
          seen_roots = true;
          if (!roots()) return false;
        } else if (!skip_value(1)) {
          return false;
        }
      }
      if (!next_member('}', more)) return false;
    }
    skip_space();
    return seen_nodes;  // no "nodes": the DOM parser gives the error
  }

  bool nodes() {
    if (*p_ != '{') return false;
    ++p_;
    bool more = false;
    if (!first_member(more)) return false;
    while (more) {
      std::string_view node_id;
      if (!string(node_id) || !colon() || *p_ != '{') return false;
      ++p_;
      if (!node(node_id) || !next_member('}', more)) return false;
    }
    return true;
  }

  //! The fields of a node the scanner reads; `other` is any other key.
  enum class field { op, eclass, cost, children, other };

  //! A node key the scanner knows, with its closing quote (as `plain_key` matches it).
  struct known_key {
    std::string_view quoted;
    field which;
  };
  static constexpr known_key node_keys[] = {{"op\"", field::op},
                                            {"eclass\"", field::eclass},
                                            {"subsumed\"", field::other},  // egglog's, ignored
                                            {"cost\"", field::cost},
                                            {"children\"", field::children}};

  //! A node field's key, its opening quote read (known keys without a `string` call).
  bool node_key(field& which) {
    for (const known_key& k : node_keys)
      if (*p_ == k.quoted.front() && plain_key(k.quoted)) {
        which = k.which;
        return true;
      }
    std::string_view key;
    if (!string(key)) return false;
    which = field::other;
    for (const known_key& k : node_keys)
      if (key == k.quoted.substr(0, k.quoted.size() - 1)) which = k.which;
    return true;
  }

  //! One node object, its `{` read.
  bool node(std::string_view node_id) {
    node_record record{node_id, {}, {}, 0, 0, 1.0, 0};  // cost: egraph-serialize's default
    bool seen_op = false, seen_eclass = false, seen_cost = false, seen_children = false;
    bool more = false;
    if (!first_member(more)) return false;
    while (more) {
      field which = field::other;
      if (!node_key(which) || !colon()) return false;
      // A field read twice: declined, the DOM parser names it.
      if ((which == field::op && seen_op) || (which == field::eclass && seen_eclass) ||
          (which == field::cost && seen_cost) || (which == field::children && seen_children))
        return false;
      if (which == field::op) {
        seen_op = true;
        if (*p_ != '"') return false;
        ++p_;
        if (!string(record.op)) return false;
      } else if (which == field::eclass) {
        seen_eclass = true;
        if (!id(record.eclass)) return false;
      } else if (which == field::cost) {
        seen_cost = true;
        number n;
        if (!read_number(n)) return false;
        // Costs repeat (most files write 1.0 everywhere): the last cost's text first.
        const std::string_view text(n.begin, static_cast<std::size_t>(n.end - n.begin));
        if (text.size() == last_cost_text_.size() &&
            same_text(text.data(), last_cost_text_.data(), text.size()) &&
            !last_cost_text_.empty()) {
          record.cost = last_cost_;
        } else {
          if (!number_value(n, record.cost)) return false;
          last_cost_text_ = text;
          last_cost_ = record.cost;
        }
      } else if (which == field::children) {
        seen_children = true;
        if (!children(record.child_count)) return false;
      } else if (!skip_value(3)) {
        return false;
      }
      if (!next_member('}', more)) return false;
    }
    if (!seen_op || !seen_eclass) return false;  // the DOM parser names what is missing
    record.key_hash = hash_text(record.key);
    record.eclass_hash = hash_text(record.eclass);
    out_.nodes.push_back(record);
    return true;
  }

  //! A node's `children` array of ids.
  bool children(std::uint32_t& count) {
    return id_array([&](std::string_view child) {
      out_.children.push_back(id_record{child, hash_text(child)});
      ++count;
    });
  }

  bool roots() {
    return id_array([&](std::string_view root) { out_.roots.push_back(root); });
  }

  //! An array of ids, `each(id)` for each in order.
  template <class Each>
  bool id_array(Each&& each) {
    if (*p_ != '[') return false;
    ++p_;
    skip_space();
    if (*p_ == ']') {
      ++p_;
      return true;
    }
    for (;;) {
      std::string_view item;
      if (!id(item)) return false;
      each(item);
      skip_space();
      if (*p_ == ',') {
        ++p_;
        skip_space();
        continue;
      }
      if (*p_ != ']') return false;
      ++p_;
      return true;
    }
  }

  const char* p_;
  slice_records& out_;
  std::string_view last_cost_text_;  //!< the text of the last cost read (in the document)
  double last_cost_ = 0;
};

}  // namespace vyre::io::detail
