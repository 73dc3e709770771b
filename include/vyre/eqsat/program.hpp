// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::read_program`: the reader of egglog programs (the subset vyre runs).
//!
//! Supported forms (anything else is an error naming the form, its `line:col` and what is
//! supported; nothing is silently ignored):
//!
//!     ; a comment up to the end of the line
//!     (datatype Math (Add Math Math) (Const i64) (Var String))   sorts: datatypes, i64, String
//!     (rewrite LHS RHS)         one rule: LHS matched, RHS added and unioned with the match
//!     (birewrite LHS RHS)       both directions
//!     (let NAME TERM)           adds TERM and names its e-class (NAME with or without `$`)
//!     (Add (Const 1) (Var "x")) a top-level term: added to the e-graph
//!     (run N)                   N iterations of every rule declared so far
//!     (extract TERM)            the cheapest term of TERM's e-class (TERM is added first)
//!
//! Patterns hold variables (a repeated variable means the same e-class or literal), nested
//! constructors and literals (`-3`, `"x"`). Literals are interned into `program::literals`:
//! every value a run can produce appears in the program text, so a literal is a small dense id
//! shared by every engine.
//!
//! Errors are `errc::parse` with the offending name as subject and `line`/`col` values;
//! `diagnostic(file, err)` renders the one line `file:line:col: what (name). Fix: ...`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"

namespace vyre::eqsat {

//! A 1-based line and column in the program text.
struct source_pos {
  std::uint32_t line = 1;
  std::uint32_t col = 1;
};

//! What a constructor argument or a term is.
enum class sort_kind : std::uint8_t { datatype, i64, string };

struct sort_ref {
  sort_kind kind = sort_kind::datatype;
  std::uint32_t datatype = 0;  //!< index into `program::datatypes` when kind is datatype
  friend bool operator==(const sort_ref&, const sort_ref&) = default;
};

struct datatype_decl {
  std::string name;
  std::vector<std::uint32_t> constructors;  //!< indices into `program::constructors`
  source_pos pos;
};

struct constructor_decl {
  std::string name;
  std::uint32_t datatype = 0;  //!< the sort of the constructor's result
  std::vector<sort_ref> args;  //!< one sort per column; datatype columns hold e-class ids
  source_pos pos;
  std::uint32_t arity() const noexcept { return static_cast<std::uint32_t>(args.size()); }
};

//! An interned literal value. Ids index `program::literals`.
struct literal_value {
  sort_kind kind = sort_kind::i64;  //!< i64 or string
  std::int64_t integer = 0;
  std::string text;  //!< the string's contents (unescaped)
};

enum class term_kind : std::uint8_t {
  call,      //!< `id` is a constructor; `args` its arguments
  variable,  //!< `id` is a rule variable (rules only)
  literal,   //!< `id` is a literal
  global,    //!< `id` is a `let` name (top-level terms only)
};

struct term {
  term_kind kind = term_kind::call;
  std::uint32_t id = 0;
  std::vector<term> args;
  source_pos pos;
  VYRE_HOST_SPECIAL_MEMBERS(term);  // host-only, also inside expected (see the macro)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(term);

//! `(rewrite lhs rhs)`: the lhs is always a constructor pattern.
struct rule {
  term lhs;
  term rhs;
  std::vector<std::string> variable_names;  //!< variable ids index these
  std::vector<sort_ref> variable_sorts;
  std::uint32_t sort = 0;  //!< the datatype both sides have
  source_pos pos;
  std::string text;  //!< the rule as written, for reports
};

enum class command_kind : std::uint8_t {
  add_rule,  //!< `index` is a rule; it takes part in every later run
  add_term,  //!< `value` is added
  let,       //!< `value` is added and named `index` (a global)
  run,       //!< `iterations`
  extract,   //!< `value` is added and its cheapest term reported
};

struct command {
  command_kind kind = command_kind::add_term;
  source_pos pos;
  std::uint32_t index = 0;
  std::uint64_t iterations = 0;
  term value;
};

struct program {
  std::string file;
  std::vector<datatype_decl> datatypes;
  std::vector<constructor_decl> constructors;
  std::vector<literal_value> literals;
  std::vector<rule> rules;
  std::vector<std::string> globals;         //!< `let` names, as written
  std::vector<std::uint32_t> global_sorts;  //!< datatype of each global
  std::vector<command> commands;
  VYRE_HOST_SPECIAL_MEMBERS(program);  // host-only, also inside expected (see the macro)

  //! Constructor index of `name`, or -1.
  std::int64_t find_constructor(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < constructors.size(); ++i)
      if (constructors[i].name == name) return static_cast<std::int64_t>(i);
    return -1;
  }
  //! The literal's egglog spelling: `-3` or `"x"` (with `"` and `\` escaped).
  std::string literal_text(std::uint32_t id) const {
    const literal_value& lit = literals[id];
    if (lit.kind == sort_kind::i64) return std::to_string(lit.integer);
    std::string out = "\"";
    for (char c : lit.text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + '"';
  }
  //! A term printed in egglog syntax (rule variables by name, globals by name).
  std::string term_text(const term& t, const rule* owner = nullptr) const {
    switch (t.kind) {
      case term_kind::literal:
        return literal_text(t.id);
      case term_kind::variable:
        return owner != nullptr ? owner->variable_names[t.id] : "?";
      case term_kind::global:
        return globals[t.id];
      case term_kind::call:
        break;
    }
    std::string out = "(" + constructors[t.id].name;
    for (const term& arg : t.args) {
      out += ' ';
      out += term_text(arg, owner);
    }
    return out + ")";
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(program);

//! One line for a reader error: `file:line:col: what (name) [values]. Fix: ...`.
inline std::string diagnostic(std::string_view file, const error& err) {
  std::string out(file);
  const std::uint64_t line = err.value_or("line", 0);
  const std::uint64_t col = err.value_or("col", 0);
  if (line != 0) {
    out += ':';
    out += std::to_string(line);
    out += ':';
    out += std::to_string(col);
  }
  out += ": ";
  out += err.context() != nullptr ? err.context() : errc_name(err.code());
  if (!err.subject().empty()) {
    out += " (";
    out += err.subject();
    out += ')';
  }
  std::string values;
  for (int i = 0; i < err.value_count(); ++i) {
    const error_value v = err.value_at(i);
    if (std::string_view(v.name) == "line" || std::string_view(v.name) == "col") continue;
    if (!values.empty()) values += ", ";
    values += v.name;
    values += '=';
    values += std::to_string(v.value);
  }
  if (!values.empty()) {
    out += " [";
    out += values;
    out += ']';
  }
  out += '.';
  if (err.fix_hint() != nullptr) {
    out += " Fix: ";
    out += err.fix_hint();
  }
  for (char& c : out)
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

namespace detail {

//! One s-expression of the program text.
struct sexpr {
  enum class kind : std::uint8_t { list, symbol, integer, string };
  kind type = kind::list;
  std::string text;  //!< symbol name, string contents, or integer spelling
  std::int64_t integer = 0;
  std::vector<sexpr> items;
  source_pos pos;
  VYRE_HOST_SPECIAL_MEMBERS(sexpr);  // host-only, also inside expected (see the macro)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(sexpr);

inline error parse_error(const char* what, source_pos pos, std::string_view subject,
                         const char* fix) {
  error err(errc::parse, what);
  err.with("line", pos.line).with("col", pos.col).fix(fix);
  if (!subject.empty()) err.about(subject);
  return err;
}

class sexpr_reader {
 public:
  explicit sexpr_reader(std::string_view text) : text_(text) {}

  //! Every top-level s-expression of the text.
  expected<std::vector<sexpr>> read_all() {
    std::vector<sexpr> out;
    for (;;) {
      skip_space();
      if (at_ >= text_.size()) return out;
      VYRE_TRY_ASSIGN(sexpr item, read_one());
      out.push_back(std::move(item));
    }
  }

 private:
  void advance() {
    if (text_[at_] == '\n') {
      ++pos_.line;
      pos_.col = 1;
    } else {
      ++pos_.col;
    }
    ++at_;
  }
  void skip_space() {
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == ';') {
        while (at_ < text_.size() && text_[at_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else {
        return;
      }
    }
  }
  static bool delimiter(char c) {
    return c == '(' || c == ')' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';' ||
           c == '"';
  }
  expected<sexpr> read_one() {
    sexpr out;
    out.pos = pos_;
    const char c = text_[at_];
    if (c == ')')
      return fail(parse_error("unbalanced parentheses: a ')' closes nothing", pos_, ")",
                              "remove the extra ')' or add the '(' it closes"));
    if (c == '(') {
      advance();
      out.type = sexpr::kind::list;
      for (;;) {
        skip_space();
        if (at_ >= text_.size())
          return fail(parse_error("unbalanced parentheses: this '(' is never closed", out.pos, "(",
                                  "add the missing ')'"));
        if (text_[at_] == ')') {
          advance();
          return out;
        }
        VYRE_TRY_ASSIGN(sexpr item, read_one());
        out.items.push_back(std::move(item));
      }
    }
    if (c == '"') {
      advance();
      out.type = sexpr::kind::string;
      for (;;) {
        if (at_ >= text_.size() || text_[at_] == '\n')
          return fail(parse_error("unterminated string literal", out.pos, "\"",
                                  "close the string with '\"' on the same line"));
        char d = text_[at_];
        if (d == '"') {
          advance();
          return out;
        }
        if (d == '\\') {
          advance();
          if (at_ >= text_.size()) continue;
          d = text_[at_];
          if (d == 'n')
            d = '\n';
          else if (d == 't')
            d = '\t';
          else if (d != '"' && d != '\\')
            return fail(parse_error("unknown escape in a string literal", pos_,
                                    std::string_view(&text_[at_], 1), "use \\\" \\\\ \\n or \\t"));
        }
        out.text += d;
        advance();
      }
    }
    const std::size_t start = at_;
    while (at_ < text_.size() && !delimiter(text_[at_])) advance();
    out.text = std::string(text_.substr(start, at_ - start));
    out.type = sexpr::kind::symbol;
    std::size_t digits = out.text[0] == '-' || out.text[0] == '+' ? 1 : 0;
    bool numeric = out.text.size() > digits;
    for (std::size_t i = digits; i < out.text.size() && numeric; ++i)
      numeric = out.text[i] >= '0' && out.text[i] <= '9';
    if (numeric) {
      out.type = sexpr::kind::integer;
      const bool negative = out.text[0] == '-';
      // Accumulate negatively so that INT64_MIN is representable.
      std::int64_t value = 0;
      constexpr std::int64_t lowest = (std::numeric_limits<std::int64_t>::min)();
      for (std::size_t i = digits; i < out.text.size(); ++i) {
        const int digit = out.text[i] - '0';
        if (value < (lowest + digit) / 10)
          return fail(parse_error("integer literal does not fit i64", out.pos, out.text,
                                  "i64 literals lie in [-9223372036854775808, "
                                  "9223372036854775807]"));
        value = value * 10 - digit;
      }
      if (!negative) {
        if (value == lowest)
          return fail(parse_error("integer literal does not fit i64", out.pos, out.text,
                                  "i64 literals lie in [-9223372036854775808, "
                                  "9223372036854775807]"));
        value = -value;
      }
      out.integer = value;
    }
    return out;
  }

  std::string_view text_;
  std::size_t at_ = 0;
  source_pos pos_;
};

constexpr const char* supported_commands =
    "vyre::eqsat supports (datatype ...), (rewrite lhs rhs), (birewrite lhs rhs), "
    "(let name term), (run N), (extract term) and top-level constructor terms";

//! Builds a `program` from s-expressions: declarations, typed terms and rules.
class program_builder {
 public:
  explicit program_builder(program& out) : out_(out) {}

  expected<void> add(const sexpr& form) {
    if (form.type != sexpr::kind::list || form.items.empty() ||
        form.items[0].type != sexpr::kind::symbol)
      return fail(parse_error("a top-level form must be a command or a constructor term", form.pos,
                              form.text, supported_commands));
    const std::string& head = form.items[0].text;
    if (head == "datatype") return add_datatype(form);
    if (head == "rewrite" || head == "birewrite") return add_rewrite(form, head == "birewrite");
    if (head == "let") return add_let(form);
    if (head == "run") return add_run(form);
    if (head == "extract") {
      if (form.items.size() != 2)
        return fail(parse_error("(extract term) takes exactly one term", form.pos, "extract",
                                "write (extract term); variants with a count are not supported"));
      command cmd;
      cmd.kind = command_kind::extract;
      cmd.pos = form.pos;
      VYRE_TRY_ASSIGN(cmd.value, global_term(form.items[1]));
      out_.commands.push_back(std::move(cmd));
      return {};
    }
    if (out_.find_constructor(head) >= 0) {
      command cmd;
      cmd.kind = command_kind::add_term;
      cmd.pos = form.pos;
      VYRE_TRY_ASSIGN(cmd.value, global_term(form));
      out_.commands.push_back(std::move(cmd));
      return {};
    }
    return fail(
        parse_error("unknown command or constructor", form.items[0].pos, head, supported_commands));
  }

 private:
  static bool is_symbol(const sexpr& e) { return e.type == sexpr::kind::symbol; }

  bool name_taken(const std::string& name) const {
    if (name == "i64" || name == "String") return true;
    for (const auto& d : out_.datatypes)
      if (d.name == name) return true;
    for (const auto& g : out_.globals)
      if (g == name) return true;
    return out_.find_constructor(name) >= 0;
  }

  expected<sort_ref> sort_of(const sexpr& e) const {
    if (!is_symbol(e))
      return fail(parse_error("a constructor argument must be a sort name", e.pos, e.text,
                              "use a datatype declared before (or the one being declared), "
                              "i64 or String"));
    if (e.text == "i64") return sort_ref{sort_kind::i64, 0};
    if (e.text == "String") return sort_ref{sort_kind::string, 0};
    for (std::size_t i = 0; i < out_.datatypes.size(); ++i)
      if (out_.datatypes[i].name == e.text)
        return sort_ref{sort_kind::datatype, static_cast<std::uint32_t>(i)};
    return fail(parse_error("unknown sort", e.pos, e.text,
                            "use a datatype declared before (or the one being declared), i64 "
                            "or String"));
  }

  expected<void> add_datatype(const sexpr& form) {
    if (form.items.size() < 2 || !is_symbol(form.items[1]))
      return fail(parse_error("(datatype Name (Ctor Sort ...) ...) needs a name", form.pos,
                              "datatype", "write (datatype Name (Ctor Sort ...) ...)"));
    const sexpr& name = form.items[1];
    if (name_taken(name.text))
      return fail(parse_error("the datatype's name is already used", name.pos, name.text,
                              "give the datatype a fresh name"));
    const auto index = static_cast<std::uint32_t>(out_.datatypes.size());
    out_.datatypes.push_back(datatype_decl{name.text, {}, name.pos});
    for (std::size_t i = 2; i < form.items.size(); ++i) {
      const sexpr& ctor = form.items[i];
      if (ctor.type != sexpr::kind::list || ctor.items.empty() || !is_symbol(ctor.items[0]))
        return fail(parse_error("a datatype variant must be (Ctor Sort ...)", ctor.pos, ctor.text,
                                "write each variant as (Ctor Sort ...)"));
      const sexpr& ctor_name = ctor.items[0];
      if (name_taken(ctor_name.text))
        return fail(parse_error("the constructor's name is already used", ctor_name.pos,
                                ctor_name.text, "give the constructor a fresh name"));
      constructor_decl decl{ctor_name.text, index, {}, ctor_name.pos};
      for (std::size_t a = 1; a < ctor.items.size(); ++a) {
        if (is_symbol(ctor.items[a]) && !ctor.items[a].text.empty() && ctor.items[a].text[0] == ':')
          return fail(parse_error("constructor options are not supported", ctor.items[a].pos,
                                  ctor.items[a].text,
                                  "remove the option; every constructor costs 1"));
        VYRE_TRY_ASSIGN(sort_ref s, sort_of(ctor.items[a]));
        decl.args.push_back(s);
      }
      out_.datatypes[index].constructors.push_back(
          static_cast<std::uint32_t>(out_.constructors.size()));
      out_.constructors.push_back(std::move(decl));
    }
    return {};
  }

  std::uint32_t intern(sort_kind kind, std::int64_t integer, const std::string& text) {
    for (std::size_t i = 0; i < out_.literals.size(); ++i) {
      const literal_value& lit = out_.literals[i];
      if (lit.kind == kind && lit.integer == integer && lit.text == text)
        return static_cast<std::uint32_t>(i);
    }
    out_.literals.push_back(literal_value{kind, integer, text});
    return static_cast<std::uint32_t>(out_.literals.size() - 1);
  }

  //! Checks `e` against `expected_sort` (null: the term decides its own sort, which must then
  //! be a datatype). In a rule (`owner` set), symbols are variables; otherwise globals.
  expected<term> typed_term(const sexpr& e, const sort_ref* expected_sort, rule* owner,
                            bool binding, sort_ref& sort) {
    term t;
    t.pos = e.pos;
    if (e.type == sexpr::kind::integer || e.type == sexpr::kind::string) {
      const bool integer = e.type == sexpr::kind::integer;
      sort = sort_ref{integer ? sort_kind::i64 : sort_kind::string, 0};
      if (expected_sort == nullptr)
        return fail(parse_error("a literal cannot stand where a constructor term is expected",
                                e.pos, e.text, "wrap the literal in a constructor"));
      if (!(*expected_sort == sort))
        return fail(parse_error(integer ? "sort error: an i64 literal where the constructor "
                                          "expects another sort"
                                        : "sort error: a String literal where the constructor "
                                          "expects another sort",
                                e.pos, e.text,
                                "give the argument the sort the constructor "
                                "declares"));
      t.kind = term_kind::literal;
      t.id = intern(sort.kind, integer ? e.integer : 0, integer ? std::string() : e.text);
      return t;
    }
    if (e.type == sexpr::kind::symbol) {
      if (owner != nullptr) {
        if (out_.find_constructor(e.text) >= 0)
          return fail(parse_error("a constructor must be applied in parentheses", e.pos, e.text,
                                  "write (Ctor) for a constructor without arguments"));
        for (const auto& g : out_.globals)
          if (g == e.text)
            return fail(parse_error("let names cannot be used in rules", e.pos, e.text,
                                    "rename the pattern variable"));
        std::uint32_t var = 0;
        for (; var < owner->variable_names.size(); ++var)
          if (owner->variable_names[var] == e.text) break;
        if (var == owner->variable_names.size()) {
          if (!binding)
            return fail(
                parse_error("the right-hand side uses a variable the left-hand side "
                            "does not bind",
                            e.pos, e.text, "bind the variable in the left-hand side"));
          if (expected_sort == nullptr)
            return fail(
                parse_error("the left-hand side of a rewrite must be a constructor "
                            "pattern, not a variable",
                            e.pos, e.text, "write the left-hand side as (Ctor ...)"));
          owner->variable_names.push_back(e.text);
          owner->variable_sorts.push_back(*expected_sort);
        } else if (expected_sort != nullptr && !(owner->variable_sorts[var] == *expected_sort)) {
          return fail(parse_error("sort error: the variable is used at two different sorts", e.pos,
                                  e.text, "use one variable per sort"));
        }
        sort = owner->variable_sorts[var];
        t.kind = term_kind::variable;
        t.id = var;
        return t;
      }
      for (std::size_t g = 0; g < out_.globals.size(); ++g) {
        if (out_.globals[g] != e.text) continue;
        sort = sort_ref{sort_kind::datatype, out_.global_sorts[g]};
        if (expected_sort != nullptr && !(*expected_sort == sort))
          return fail(parse_error("sort error: the let name has another sort than expected", e.pos,
                                  e.text,
                                  "use a term of the sort the constructor "
                                  "declares"));
        t.kind = term_kind::global;
        t.id = static_cast<std::uint32_t>(g);
        return t;
      }
      if (out_.find_constructor(e.text) >= 0)
        return fail(parse_error("a constructor must be applied in parentheses", e.pos, e.text,
                                "write (Ctor) for a constructor without arguments"));
      return fail(parse_error("unknown name", e.pos, e.text, "declare it with (let name term)"));
    }
    if (e.items.empty() || !is_symbol(e.items[0]))
      return fail(parse_error("a term must be (Ctor arg ...)", e.pos, "()",
                              "start the term with a constructor name"));
    const sexpr& head = e.items[0];
    const std::int64_t ctor = out_.find_constructor(head.text);
    if (ctor < 0)
      return fail(parse_error("unknown constructor", head.pos, head.text,
                              "declare it in a (datatype ...) before its first use"));
    const constructor_decl& decl = out_.constructors[static_cast<std::size_t>(ctor)];
    if (e.items.size() - 1 != decl.args.size())
      return fail(parse_error("arity error: wrong number of arguments", head.pos, head.text,
                              "give the constructor as many arguments as its declaration")
                      .with("expected", decl.args.size())
                      .with("got", e.items.size() - 1));
    sort = sort_ref{sort_kind::datatype, decl.datatype};
    if (expected_sort != nullptr && !(*expected_sort == sort))
      return fail(parse_error("sort error: the constructor's sort is not the one expected",
                              head.pos, head.text,
                              "use a constructor of the sort the enclosing constructor declares"));
    t.kind = term_kind::call;
    t.id = static_cast<std::uint32_t>(ctor);
    for (std::size_t a = 1; a < e.items.size(); ++a) {
      const sort_ref want = out_.constructors[static_cast<std::size_t>(ctor)].args[a - 1];
      sort_ref got;
      VYRE_TRY_ASSIGN(term arg, typed_term(e.items[a], &want, owner, binding, got));
      t.args.push_back(std::move(arg));
    }
    return t;
  }

  expected<term> global_term(const sexpr& e) {
    sort_ref sort;
    if (e.type == sexpr::kind::integer || e.type == sexpr::kind::string)
      return fail(parse_error("only constructor terms can be added or extracted", e.pos, e.text,
                              "wrap the literal in a constructor"));
    return typed_term(e, nullptr, nullptr, false, sort);
  }

  expected<void> add_rewrite(const sexpr& form, bool both) {
    const char* name = both ? "birewrite" : "rewrite";
    if (form.items.size() > 3)
      return fail(parse_error(
          "rewrite options (:ruleset, :when, :subsume, ...) are not "
          "supported",
          form.items[3].pos, form.items[3].text, "write (rewrite lhs rhs) without options"));
    if (form.items.size() != 3)
      return fail(parse_error("a rewrite needs a left-hand and a right-hand side", form.pos, name,
                              "write (rewrite lhs rhs)"));
    for (int direction = 0; direction < (both ? 2 : 1); ++direction) {
      const sexpr& lhs = form.items[direction == 0 ? 1 : 2];
      const sexpr& rhs = form.items[direction == 0 ? 2 : 1];
      rule r;
      r.pos = form.pos;
      if (lhs.type != sexpr::kind::list)
        return fail(parse_error("the left-hand side of a rewrite must be a constructor pattern",
                                lhs.pos, lhs.text, "write the left-hand side as (Ctor ...)"));
      sort_ref lhs_sort;
      VYRE_TRY_ASSIGN(r.lhs, typed_term(lhs, nullptr, &r, true, lhs_sort));
      r.sort = lhs_sort.datatype;
      sort_ref rhs_sort;
      VYRE_TRY_ASSIGN(r.rhs, typed_term(rhs, &lhs_sort, &r, false, rhs_sort));
      r.text = "(rewrite " + out_.term_text(r.lhs, &r) + " " + out_.term_text(r.rhs, &r) + ")";
      command cmd;
      cmd.kind = command_kind::add_rule;
      cmd.pos = form.pos;
      cmd.index = static_cast<std::uint32_t>(out_.rules.size());
      out_.rules.push_back(std::move(r));
      out_.commands.push_back(std::move(cmd));
    }
    return {};
  }

  expected<void> add_let(const sexpr& form) {
    if (form.items.size() != 3 || !is_symbol(form.items[1]))
      return fail(parse_error("(let name term) takes a name and a term", form.pos, "let",
                              "write (let name term)"));
    const sexpr& name = form.items[1];
    if (name_taken(name.text))
      return fail(parse_error("the let name is already used", name.pos, name.text,
                              "give the let a fresh name"));
    command cmd;
    cmd.kind = command_kind::let;
    cmd.pos = form.pos;
    VYRE_TRY_ASSIGN(cmd.value, global_term(form.items[2]));
    cmd.index = static_cast<std::uint32_t>(out_.globals.size());
    std::uint32_t sort = 0;
    if (cmd.value.kind == term_kind::call)
      sort = out_.constructors[cmd.value.id].datatype;
    else
      sort = out_.global_sorts[cmd.value.id];
    out_.globals.push_back(name.text);
    out_.global_sorts.push_back(sort);
    out_.commands.push_back(std::move(cmd));
    return {};
  }

  expected<void> add_run(const sexpr& form) {
    if (form.items.size() != 2 || form.items[1].type != sexpr::kind::integer ||
        form.items[1].integer < 0)
      return fail(parse_error("(run N) takes one non-negative iteration count", form.pos, "run",
                              "write (run N); rulesets and :until are not supported"));
    command cmd;
    cmd.kind = command_kind::run;
    cmd.pos = form.pos;
    cmd.iterations = static_cast<std::uint64_t>(form.items[1].integer);
    out_.commands.push_back(std::move(cmd));
    return {};
  }

  program& out_;
};

}  // namespace detail

//! Reads an egglog program. `file` names it in errors.
inline expected<program> read_program(std::string_view text, std::string_view file = "<input>") {
  program out;
  out.file = std::string(file);
  detail::sexpr_reader reader(text);
  VYRE_TRY_ASSIGN(auto forms, reader.read_all());
  detail::program_builder builder(out);
  for (const auto& form : forms) VYRE_TRY(builder.add(form));
  return out;
}

}  // namespace vyre::eqsat
