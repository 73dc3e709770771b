// SPDX-License-Identifier: Apache-2.0
// The egglog front end: the s-expression reader (spans, literals, limits, hostile text) and the
// compiler's errors (each one line with file, line and column, run through a session).
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include <vyre/eqsat/lang/sexpr.hpp>
#include <vyre/eqsat/session.hpp>

namespace eq = vyre::eqsat;
namespace lang = vyre::eqsat::lang;

namespace {

//! The error of running `text`, which must fail.
vyre::error failure_of(const std::string& text) {
  eq::session s;
  auto r = s.run_text(text, "t.egg");
  REQUIRE_FALSE(r);
  INFO(s.describe(r.error()));
  return r.error();
}

std::string context_of(const vyre::error& e) {
  return e.context() != nullptr ? e.context() : "";
}

}  // namespace

TEST_CASE("reader: literals, symbols and spans", "[eqsat][lang]") {
  auto tree = lang::read_sexprs(
      "; comment\n(Add -3 1.5 \"a\\\"b\\n\" x :cost true .5 9223372036854775808)\n", 7);
  REQUIRE(tree);
  REQUIRE(tree->top.size() == 1);
  const std::uint32_t form = tree->top[0];
  CHECK((*tree)[form].span.file == 7);
  CHECK((*tree)[form].span.line == 2);
  CHECK((*tree)[form].span.col == 1);
  REQUIRE(tree->size(form) == 9);
  CHECK(tree->head(form) == "Add");
  CHECK((*tree)[tree->child(form, 1)].kind == lang::sexpr_kind::integer);
  CHECK((*tree)[tree->child(form, 1)].integer == -3);
  CHECK((*tree)[tree->child(form, 2)].kind == lang::sexpr_kind::real);
  CHECK((*tree)[tree->child(form, 2)].real == 1.5);
  CHECK((*tree)[tree->child(form, 3)].kind == lang::sexpr_kind::string);
  CHECK(tree->name(tree->child(form, 3)) == "a\"b\n");
  CHECK(tree->is_symbol(tree->child(form, 4), "x"));
  CHECK(tree->is_symbol(tree->child(form, 5), ":cost"));
  CHECK(tree->is_symbol(tree->child(form, 6), "true"));  // the type checker reads bool literals
  CHECK((*tree)[tree->child(form, 7)].real == 0.5);
  // An integer beyond i64 is the nearest f64, as egglog reads it.
  CHECK((*tree)[tree->child(form, 8)].kind == lang::sexpr_kind::real);
  CHECK((*tree)[tree->child(form, 8)].real == 9223372036854775808.0);
  CHECK((*tree)[tree->child(form, 2)].span.col == 9);
}

TEST_CASE("reader: malformed text is one error with its position", "[eqsat][lang]") {
  struct bad {
    const char* text;
    const char* what;
    std::uint64_t line, col;
  };
  const bad cases[] = {
      {"(a b))", "unbalanced parentheses: a ')' closes nothing", 1, 6},
      {"(a\n (b c)", "unbalanced parentheses: this '(' is never closed", 1, 1},
      {"(a \"open", "unterminated string literal", 1, 4},
      {"(a \"x\\q\")", "unknown escape in a string literal", 1, 6},
  };
  for (const bad& b : cases) {
    auto tree = lang::read_sexprs(b.text);
    INFO(b.text);
    REQUIRE_FALSE(tree);
    CHECK(tree.error().code() == vyre::errc::parse);
    CHECK(context_of(tree.error()) == b.what);
    CHECK(tree.error().value_or("line", 0) == b.line);
    CHECK(tree.error().value_or("col", 0) == b.col);
  }
}

TEST_CASE("reader: hostile nesting and size are errors or linear, never a crash", "[eqsat][lang]") {
  // Far deeper than the stack could recurse: refused at the limit, without recursion.
  const std::string deep(200000, '(');
  auto tree = lang::read_sexprs(deep);
  REQUIRE_FALSE(tree);
  CHECK(context_of(tree.error()) == "lists nest deeper than vyre reads (1000 levels)");
  // Exactly at the limit it reads.
  std::string ok(lang::max_nesting, '(');
  ok += std::string(lang::max_nesting, ')');
  CHECK(lang::read_sexprs(ok));
  // 100k string literals and 100k lets read in time linear in the text.
  std::string many;
  for (int i = 0; i < 100000; ++i)
    many += "(let $s" + std::to_string(i) + " \"s" + std::to_string(i) + "\")\n";
  const auto start = std::chrono::steady_clock::now();
  auto big = lang::read_sexprs(many);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(big);
  CHECK(big->top.size() == 100000);
  CHECK(seconds < 5.0);
}

TEST_CASE("compiler: type errors name the position, the name and a fix", "[eqsat][lang]") {
  struct bad {
    std::string text;
    const char* what;
    const char* subject;
    std::uint64_t line;
  };
  const std::string math = "(datatype M (Num i64) (Add M M))\n";
  const bad cases[] = {
      {math + "(rule ((= x y)) ((Num x)))",
       "a variable is not grounded: it appears only under primitives or equalities, never as an "
       "argument of a function or constructor",
       "x", 2},
      {math + "(Nope 1)", "unknown function", "Nope", 2},
      {math + "(Num 1 2)", "wrong number of arguments", "Num", 2},
      {math + "(Num \"one\")", "sort mismatch", "expected i64, got String", 2},
      {"(function f (i64) i64)", "a function must say how two values for one key merge", "f", 1},
      {math + "(set (Num 1) (Num 2))", "cannot set a constructor", "Num", 2},
      {math + "(constructor k () i64)", "a constructor's output must be a datatype sort", "k", 2},
      {math + "(rule ((Num x)) ((let Num 2)))",
       "a local variable takes a declared name (egglog allows no shadowing)", "Num", 2},
      {math + "(rule ((Num x)) ((Add x y)))",
       "unbound variable: the query does not bind it and no let names it", "y", 2},
      {math + "(function f (M) i64 :no-merge)\n(rule ((Num x)) ((let z (f (Num x)))))",
       "a seminaive rule's actions cannot read a function's value (its later changes would be "
       "missed)",
       "f", 3},
      {math + "(rule ((Num x)) ((Num x)) :naive :unsafe-seminaive)",
       ":naive and :unsafe-seminaive exclude each other", "rule", 2},
      {math + "(rewrite (Num x) (Num (+ x \"a\")))",
       "no overload of the primitive takes arguments of these sorts", "+ (i64 String)", 2},
      {math + "(let $a (Num 1))\n(let $a (Num 2))",
       "the global is already defined (egglog allows no shadowing)", "$a", 3},
      {math + "(run nope 1)", "unknown ruleset", "nope", 2},
      {math + "(prove (Num 1))", "proof mode is not supported by vyre", "prove", 2},
      {"(sort S (Vec Nope))", "unknown sort", "Nope", 1},
  };
  for (const bad& b : cases) {
    const vyre::error e = failure_of(b.text);
    INFO(b.text);
    CHECK(e.code() == vyre::errc::parse);
    CHECK(context_of(e) == b.what);
    CHECK(e.subject() == b.subject);
    CHECK(e.value_or("line", 0) == b.line);
    CHECK(e.fix_hint() != nullptr);
  }
}

TEST_CASE("compiler: describe renders one line with the file, line and column", "[eqsat][lang]") {
  eq::session s;
  auto r = s.run_text("(datatype M (Num i64))\n  (Num \"x\")", "prog.egg");
  REQUIRE_FALSE(r);
  const std::string line = s.describe(r.error());
  CHECK(line.rfind("prog.egg:2:8: sort mismatch (expected i64, got String). Fix: ", 0) == 0);
  CHECK(line.find('\n') == std::string::npos);
}
