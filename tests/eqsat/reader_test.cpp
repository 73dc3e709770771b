// SPDX-License-Identifier: Apache-2.0
// The egglog reader: good programs become the expected AST, bad ones give one-line errors
// with file:line:col, the offending name and a fix.
#include <string>

#include <catch2/catch.hpp>

#include <vyre/eqsat/program.hpp>

namespace eq = vyre::eqsat;

namespace {

std::string error_of(const std::string& text) {
  auto prog = eq::read_program(text, "t.egg");
  REQUIRE_FALSE(prog.has_value());
  CHECK(prog.error().code() == vyre::errc::parse);
  return eq::diagnostic("t.egg", prog.error());
}

}  // namespace

TEST_CASE("reader: datatypes, rules, lets, terms, runs and extracts", "[eqsat][reader]") {
  const std::string text = R"(; comment
(datatype Math (Add Math Math) (Const i64) (Var String))
(datatype Box (Wrap Math))
(rewrite (Add a b) (Add b a))
(birewrite (Add a (Const 0)) (Add (Const 0) a)) ; trailing comment
(let $e (Add (Const -7) (Var "x\"y")))
(let plain (Wrap $e))
(Add $e (Const 9223372036854775807))
(run 3)
(extract $e)
)";
  auto prog = eq::read_program(text, "t.egg");
  REQUIRE(prog.has_value());
  REQUIRE(prog->datatypes.size() == 2);
  REQUIRE(prog->constructors.size() == 4);
  CHECK(prog->constructors[3].name == "Wrap");
  CHECK(prog->constructors[3].datatype == 1);
  CHECK(prog->constructors[1].args[0].kind == eq::sort_kind::i64);
  REQUIRE(prog->rules.size() == 3);  // birewrite is two rules
  CHECK(prog->rules[0].text == "(rewrite (Add a b) (Add b a))");
  CHECK(prog->rules[2].text == "(rewrite (Add (Const 0) a) (Add a (Const 0)))");
  CHECK(prog->rules[1].lhs.pos.line == 5);
  CHECK(prog->rules[1].lhs.pos.col == 12);
  CHECK(prog->globals == std::vector<std::string>{"$e", "plain"});
  REQUIRE(prog->literals.size() == 4);
  CHECK(prog->literal_text(1) == "-7");
  CHECK(prog->literal_text(2) == "\"x\\\"y\"");
  CHECK(prog->literals[3].integer == 9223372036854775807);
  REQUIRE(prog->commands.size() == 8);
  CHECK(prog->commands[5].kind == eq::command_kind::add_term);
  CHECK(prog->commands[6].kind == eq::command_kind::run);
  CHECK(prog->commands[6].iterations == 3);
  CHECK(prog->commands[7].kind == eq::command_kind::extract);
  CHECK(prog->commands[7].value.kind == eq::term_kind::global);
}

TEST_CASE("reader: bad programs give one-line errors", "[eqsat][reader]") {
  const std::string dt = "(datatype M (A M M) (C i64) (S String))\n";
  CHECK(error_of("(datatype M (A M)\n") ==
        "t.egg:1:1: unbalanced parentheses: this '(' is never closed ((). Fix: add the "
        "missing ')'");
  CHECK(error_of("(run 1))") ==
        "t.egg:1:8: unbalanced parentheses: a ')' closes nothing ()). Fix: remove the extra "
        "')' or add the '(' it closes");
  CHECK(error_of(dt + "(set-option foo)")
            .rfind(
                "t.egg:2:2: unknown command or constructor (set-option). Fix: vyre::eqsat supports",
                0) == 0);

  // Each program follows the datatype line `dt`; the error names its line 2 (or 3).
  struct bad_case {
    const char* program;
    const char* error;
  };
  const bad_case cases[] = {
      {"(A (C 1) (B 2))",
       "t.egg:2:11: unknown constructor (B). Fix: declare it in a (datatype ...) before its "
       "first use"},
      {"(rewrite (A x) x)",
       "t.egg:2:11: arity error: wrong number of arguments (A) [expected=2, got=1]. Fix: give "
       "the constructor as many arguments as its declaration"},
      {"(C \"one\")",
       "t.egg:2:4: sort error: a String literal where the constructor expects another sort "
       "(one). Fix: give the argument the sort the constructor declares"},
      {"(rewrite (A x (C x)) x)",
       "t.egg:2:18: sort error: the variable is used at two different sorts (x). Fix: use "
       "one variable per sort"},
      {"(C 9223372036854775808)",
       "t.egg:2:4: integer literal does not fit i64 (9223372036854775808). Fix: i64 literals "
       "lie in [-9223372036854775808, 9223372036854775807]"},
      {"(rewrite (A x y) (A x z))",
       "t.egg:2:23: the right-hand side uses a variable the left-hand side does not bind (z). "
       "Fix: bind the variable in the left-hand side"},
      {"(rewrite (A x y) x :ruleset r)",
       "t.egg:2:20: rewrite options (:ruleset, :when, :subsume, ...) are not supported "
       "(:ruleset). Fix: write (rewrite lhs rhs) without options"},
      {"(run 2 :until (A x x))",
       "t.egg:2:1: (run N) takes one non-negative iteration count (run). Fix: write (run N); "
       "rulesets and :until are not supported"},
      {"(datatype N (X Q))",
       "t.egg:2:16: unknown sort (Q). Fix: use a datatype declared before (or the one being "
       "declared), i64 or String"},
      {"(extract (S \"x))",
       "t.egg:2:13: unterminated string literal (\"). Fix: close the string with '\"' on the "
       "same line"},
      {"(let $x (C 1))\n(let $x (C 2))",
       "t.egg:3:6: the let name is already used ($x). Fix: give the let a fresh name"},
      {"(extract $nope)", "t.egg:2:10: unknown name ($nope). Fix: declare it with (let name term)"},
  };
  for (const auto& c : cases) {
    INFO(c.program);
    CHECK(error_of(dt + c.program) == c.error);
  }
}
