// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::lang::read_sexprs`: egglog's s-expression syntax, read into one flat tree.
//!
//! The reader keeps an explicit stack of open lists instead of recursing, so a file of ten
//! thousand `(` costs a clear error, not the process's stack; it runs in time linear in the
//! text. Every node records its source span (file, first and last line and column), which the
//! front end's errors quote as `file:line:col`.
//!
//! Lexical syntax (egglog's):
//!
//!     ; a comment up to the end of the line
//!     (head item ...)          a list
//!     -3  42                   an i64 literal (beyond i64: the nearest f64, as egglog)
//!     1.5  -0.0  2e10  .5  inf  -inf  NaN
//!                              an f64 literal (finite, or one of the three names)
//!     "a \"quoted\" \\ text"   a String literal (escapes \" \\ \n \t \r; may span lines)
//!     Add  $x  :cost  +  !=    a symbol (anything else up to a delimiter)
//!
//! `true`, `false` stay symbols here; the type checker reads them as bool literals.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"

namespace vyre::eqsat::lang {

//! Lists nested deeper than this are refused (egglog's own programs nest at most about 70
//! deep; the passes after the reader walk terms recursively, and this bounds their depth).
inline constexpr std::uint32_t max_nesting = 1000;

//! Where a node stands: a file of the session (`source_file`) and 1-based line and column of
//! its first and last character.
struct source_span {
  std::uint32_t file = 0;
  std::uint32_t line = 0;
  std::uint32_t col = 0;
  std::uint32_t end_line = 0;
  std::uint32_t end_col = 0;
};

enum class sexpr_kind : std::uint8_t { list, symbol, integer, real, string };

//! One node. A list's children are `sexpr_tree::children[first, first + count)`; a symbol's
//! or string's text is `sexpr_tree::text[first, first + count)` (strings unescaped).
struct sexpr_node {
  sexpr_kind kind = sexpr_kind::list;
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  std::int64_t integer = 0;
  double real = 0;
  source_span span;
};

//! The s-expressions of one text.
struct sexpr_tree {
  std::vector<sexpr_node> nodes;
  std::vector<std::uint32_t> children;
  std::string text;
  std::vector<std::uint32_t> top;  //!< the top-level nodes, in order
  VYRE_HOST_SPECIAL_MEMBERS(sexpr_tree);

  const sexpr_node& operator[](std::uint32_t id) const noexcept { return nodes[id]; }
  std::uint32_t size(std::uint32_t id) const noexcept {
    return nodes[id].kind == sexpr_kind::list ? nodes[id].count : 0;
  }
  std::uint32_t child(std::uint32_t id, std::uint32_t i) const noexcept {
    return children[nodes[id].first + i];
  }
  std::string_view name(std::uint32_t id) const noexcept {
    const sexpr_node& n = nodes[id];
    if (n.kind != sexpr_kind::symbol && n.kind != sexpr_kind::string) return {};
    return std::string_view(text).substr(n.first, n.count);
  }
  bool is_symbol(std::uint32_t id) const noexcept { return nodes[id].kind == sexpr_kind::symbol; }
  bool is_symbol(std::uint32_t id, std::string_view s) const noexcept {
    return is_symbol(id) && name(id) == s;
  }
  bool is_list(std::uint32_t id) const noexcept { return nodes[id].kind == sexpr_kind::list; }
  //! The head symbol of a non-empty list whose first item is a symbol, else empty.
  std::string_view head(std::uint32_t id) const noexcept {
    if (!is_list(id) || nodes[id].count == 0 || !is_symbol(child(id, 0))) return {};
    return name(child(id, 0));
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(sexpr_tree);

//! A front-end error at `span`: `errc::parse`, the static `what`, the subject (a name, or a
//! short dynamic text: the tail is kept when longer than `error::subject_capacity`), the
//! position as values `file`, `line` and `col`, and the static `fix`.
inline error syntax_error(const char* what, const source_span& span, std::string_view subject,
                          const char* fix) {
  error err(errc::parse, what);
  err.with("file", span.file).with("line", span.line).with("col", span.col).fix(fix);
  if (!subject.empty()) err.about(subject);
  return err;
}

namespace detail {

//! What ends an atom: white space, `;`, `(` or `)` (a `"` inside an atom is part of it, as in
//! egglog).
inline bool is_delimiter(char c) noexcept {
  return c == '(' || c == ')' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
         c == '\v' || c == ';';
}

//! `[+-]?digits`: fills `out` and returns true when it fits i64; `overflow` when it does not.
inline bool parse_i64(std::string_view s, std::int64_t& out, bool& overflow) noexcept {
  overflow = false;
  std::size_t i = s.size() > 1 && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size()) return false;
  for (std::size_t k = i; k < s.size(); ++k)
    if (s[k] < '0' || s[k] > '9') return false;
  const bool negative = s[0] == '-';
  // Accumulated negatively so that INT64_MIN is representable.
  constexpr std::int64_t lowest = (std::numeric_limits<std::int64_t>::min)();
  std::int64_t value = 0;
  for (; i < s.size(); ++i) {
    const int digit = s[i] - '0';
    if (value < (lowest + digit) / 10) {
      overflow = true;
      return false;
    }
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == lowest) {
      overflow = true;
      return false;
    }
    value = -value;
  }
  out = value;
  return true;
}

//! egglog's f64 spellings: `NaN`, `inf`, `-inf`, and Rust's decimal floats with a finite value:
//! `[+-]?(digits[.digits?] | .digits)([eE][+-]?digits)?` (`1.`, `.5`, `2e10`; `1e400` is not
//! one: it would be infinite).
inline bool parse_f64(std::string_view s, double& out) {
  if (s == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (s == "inf" || s == "-inf") {
    out = s[0] == '-' ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
    return true;
  }
  std::size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  const std::size_t int_begin = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  std::size_t digits = i - int_begin;
  if (i < s.size() && s[i] == '.') {
    const std::size_t frac_begin = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    digits += i - frac_begin;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const std::size_t exp_begin = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp_begin) return false;
  }
  if (i != s.size()) return false;
  // strtod on a copy: the text is short and already validated.
  const std::string copy(s);
  out = std::strtod(copy.c_str(), nullptr);
  return std::isfinite(out);
}

class sexpr_reader {
 public:
  sexpr_reader(std::string_view text, std::uint32_t file) : text_(text), file_(file) {}

  expected<sexpr_tree> read() {
    sexpr_tree tree;
    if (text_.size() >= (std::numeric_limits<std::uint32_t>::max)())
      return fail(syntax_error("the program is larger than 4 GiB", here(), {},
                               "split it into files joined with (include \"file\")"));
    struct open_list {
      std::uint32_t node;
      std::size_t pending_begin;  // its children so far: pending[pending_begin, ...)
    };
    std::vector<open_list> open;
    std::vector<std::uint32_t> pending;
    for (;;) {
      skip_space();
      if (at_ >= text_.size()) break;
      const char c = text_[at_];
      if (c == '(') {
        if (open.size() >= max_nesting)
          return fail(
              syntax_error("lists nest deeper than vyre reads (1000 levels)", here(), "(",
                           "egglog programs nest a few dozen levels; split the term with let"));
        const auto id = static_cast<std::uint32_t>(tree.nodes.size());
        sexpr_node node;
        node.kind = sexpr_kind::list;
        node.span = here();
        tree.nodes.push_back(node);
        open.push_back(open_list{id, pending.size()});
        advance();
        continue;
      }
      if (c == ')') {
        if (open.empty())
          return fail(syntax_error("unbalanced parentheses: a ')' closes nothing", here(), ")",
                                   "remove the extra ')' or add the '(' it closes"));
        const open_list list = open.back();
        open.pop_back();
        sexpr_node& node = tree.nodes[list.node];
        node.first = static_cast<std::uint32_t>(tree.children.size());
        node.count = static_cast<std::uint32_t>(pending.size() - list.pending_begin);
        tree.children.insert(tree.children.end(), pending.begin() + list.pending_begin,
                             pending.end());
        pending.resize(list.pending_begin);
        node.span.end_line = line_;
        node.span.end_col = col_;
        advance();
        place(list.node, open, pending, tree);
        continue;
      }
      VYRE_TRY_ASSIGN(const std::uint32_t id, c == '"' ? read_string(tree) : read_atom(tree));
      place(id, open, pending, tree);
    }
    if (!open.empty())
      return fail(syntax_error("unbalanced parentheses: this '(' is never closed",
                               tree.nodes[open.back().node].span, "(", "add the missing ')'"));
    return tree;
  }

 private:
  template <class Open>
  static void place(std::uint32_t id, const std::vector<Open>& open,
                    std::vector<std::uint32_t>& pending, sexpr_tree& tree) {
    if (open.empty())
      tree.top.push_back(id);
    else
      pending.push_back(id);
  }

  source_span here() const noexcept { return source_span{file_, line_, col_, line_, col_}; }

  void advance() noexcept {
    if (text_[at_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++at_;
  }

  void skip_space() noexcept {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == ';') {
        while (at_ < text_.size() && text_[at_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance();
      } else {
        return;
      }
    }
  }

  expected<std::uint32_t> read_string(sexpr_tree& tree) {
    sexpr_node node;
    node.kind = sexpr_kind::string;
    node.span = here();
    node.first = static_cast<std::uint32_t>(tree.text.size());
    advance();
    for (;;) {
      if (at_ >= text_.size())
        return fail(syntax_error("unterminated string literal", node.span, "\"",
                                 "close the string with '\"'"));
      char d = text_[at_];
      if (d == '"') break;
      if (d == '\\') {
        const source_span escape = here();
        advance();
        if (at_ >= text_.size())
          return fail(syntax_error("unterminated string literal", node.span, "\"",
                                   "close the string with '\"'"));
        d = text_[at_];
        switch (d) {
          case 'n':
            d = '\n';
            break;
          case 't':
            d = '\t';
            break;
          case 'r':
            d = '\r';
            break;
          case '"':
          case '\\':
            break;
          default:
            return fail(syntax_error("unknown escape in a string literal", escape,
                                     std::string_view(&text_[at_], 1),
                                     "use \\\" \\\\ \\n \\t or \\r"));
        }
      }
      tree.text += d;
      advance();
    }
    node.span.end_line = line_;
    node.span.end_col = col_;
    advance();
    node.count = static_cast<std::uint32_t>(tree.text.size() - node.first);
    tree.nodes.push_back(node);
    return static_cast<std::uint32_t>(tree.nodes.size() - 1);
  }

  expected<std::uint32_t> read_atom(sexpr_tree& tree) {
    sexpr_node node;
    node.span = here();
    const std::size_t start = at_;
    while (at_ < text_.size() && !detail::is_delimiter(text_[at_])) {
      node.span.end_line = line_;
      node.span.end_col = col_;
      advance();
    }
    const std::string_view s = text_.substr(start, at_ - start);
    bool overflow = false;
    if (detail::parse_i64(s, node.integer, overflow)) {
      node.kind = sexpr_kind::integer;
    } else if (overflow) {
      // egglog reads an integer beyond i64 as the f64 nearest to it.
      const std::string copy(s);
      node.real = std::strtod(copy.c_str(), nullptr);
      node.kind = sexpr_kind::real;
    } else if (detail::parse_f64(s, node.real)) {
      node.kind = sexpr_kind::real;
    } else {
      node.kind = sexpr_kind::symbol;
    }
    node.first = static_cast<std::uint32_t>(tree.text.size());
    node.count = static_cast<std::uint32_t>(s.size());
    tree.text.append(s);
    tree.nodes.push_back(node);
    return static_cast<std::uint32_t>(tree.nodes.size() - 1);
  }

  std::string_view text_;
  std::uint32_t file_ = 0;
  std::size_t at_ = 0;
  std::uint32_t line_ = 1;
  std::uint32_t col_ = 1;
};

}  // namespace detail

//! Reads every s-expression of `text` (file index `file` goes into every span).
//! @returns the tree, or `errc::parse` with `file`, `line` and `col` values: unbalanced
//!          parentheses, nesting deeper than `max_nesting`, an unterminated string, an unknown
//!          escape, a text of 4 GiB or more.
inline expected<sexpr_tree> read_sexprs(std::string_view text, std::uint32_t file = 0) {
  return detail::sexpr_reader(text, file).read();
}

}  // namespace vyre::eqsat::lang
