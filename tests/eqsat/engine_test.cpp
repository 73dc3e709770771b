// SPDX-License-Identifier: Apache-2.0
// The rule compiler and the CPU engine on small programs, and on math.egg against egglog's own
// per-iteration counts (math.egglog-counts.tsv, iterations 0-10).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/eqsat.hpp>

namespace eq = vyre::eqsat;

namespace {

eq::program read(const std::string& text) {
  auto prog = eq::read_program(text, "t.egg");
  if (!prog) FAIL(eq::diagnostic("t.egg", prog.error()));
  return std::move(*prog);
}

std::uint64_t count_of(const eq::program& prog, const eq::iteration_stats& s,
                       const std::string& ctor) {
  return s.per_constructor[static_cast<std::size_t>(prog.find_constructor(ctor))];
}

}  // namespace

TEST_CASE("rule compiler: join order and actions", "[eqsat][plan]") {
  const eq::program prog = read(R"((datatype M (Add M M) (Mul M M) (Const i64) (Sin M))
(rewrite (Add a (Const 0)) a)
(rewrite (Add a (Mul b c)) (Mul (Add a b) (Add a c)))
(rewrite (Add (Sin x) x) (Sin x))
)");
  const auto plans = eq::compile_rules(prog);
  REQUIRE(plans.size() == 3);
  // A literal atom starts the join; the parent is found through its child column.
  CHECK(plans[0].describe(prog) ==
        "lookup Const(*0) -> r2\nlookup Add(r1, *=r2) -> r0\nunion s0 s1\n");
  // Without literals the root scans, the child is looked up by its e-class.
  CHECK(plans[1].describe(prog) ==
        "scan Add(r1, r4) -> r0\nlookup Mul(r2, r3) -> *=r4\n"
        "t0 = Add(s1, s2)\nt1 = Add(s1, s3)\nt2 = Mul(t0, t1)\nunion s0 t2\n");
  CHECK(plans[1].saved == std::vector<std::uint32_t>{0, 1, 2, 3});
  // A repeated variable is bound once, then checked.
  CHECK(plans[2].describe(prog) ==
        "scan Add(r2, r1) -> r0\nlookup Sin(=r1) -> *=r2\nt0 = Sin(s1)\nunion s0 t0\n");
}

TEST_CASE("rule compiler: a literal under a nested constructor and a repeated variable",
          "[eqsat][plan]") {
  const eq::program prog = read(R"((datatype M (Add M M) (Mul M M) (Num i64))
(rewrite (Add x (Mul x (Num 2))) (Mul x (Num 3)))
)");
  const eq::query_plan plan = eq::compile_rule(prog, 0);
  // The literal atom starts; Mul is found through its child column, Add through x (column 0).
  CHECK(plan.describe(prog) ==
        "lookup Num(*2) -> r3\nlookup Mul(r1, *=r3) -> r2\nlookup Add(*=r1, =r2) -> r0\n"
        "t0 = Num(3)\nt1 = Mul(s1, t0)\nunion s0 t1\n");
  using key = std::pair<std::uint32_t, std::uint32_t>;
  CHECK(plan.index_keys() == std::vector<key>{{2, 0}, {1, 1}, {0, 0}});
  CHECK(plan.saved == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("rule compiler: every plan binds a register before it checks or keys on it",
          "[eqsat][plan]") {
  const eq::program prog = read(R"((datatype M (Add M M) (Mul M M) (Neg M) (Num i64) (V String))
(rewrite (Add a b) (Add b a))
(rewrite (Add (Mul a b) (Mul a c)) (Mul a (Add b c)))
(rewrite (Neg (Neg (Neg x))) (Neg x))
(rewrite (Add (V "x") (Num 0)) (V "x"))
(rewrite (Mul (Add a a) (Neg (Add a b))) (Num 1))
(rewrite (Num 7) (Add (Num 3) (Num 4)))
)");
  for (const eq::query_plan& plan : eq::compile_rules(prog)) {
    INFO(plan.describe(prog));
    std::vector<bool> bound(plan.register_count, false);
    for (std::size_t k = 0; k < plan.atoms.size(); ++k) {
      const eq::plan_atom& a = plan.atoms[k];
      REQUIRE(a.columns.size() == prog.constructors[a.ctor].arity() + 1);
      // After the first atom every atom is looked up by a value already known.
      if (k != 0) {
        REQUIRE(a.key_column != eq::no_column);
        CHECK(a.columns[a.key_column].op != eq::column_op::bind);
      }
      for (const eq::plan_column& c : a.columns) {
        if (c.op == eq::column_op::literal) continue;
        REQUIRE(c.value < plan.register_count);
        CHECK((c.op == eq::column_op::check) == bound[c.value]);
        bound[c.value] = true;
      }
    }
    REQUIRE_FALSE(plan.saved.empty());
    CHECK(plan.saved[0] == 0);  // the root
    for (std::uint32_t r : plan.saved) CHECK(bound[r]);
    // Actions in post order: a step reads saved slots, literals and earlier steps only.
    for (std::size_t s = 0; s < plan.actions.size(); ++s)
      for (const eq::operand& o : plan.actions[s].args) {
        if (o.kind == eq::operand_kind::saved) CHECK(o.value < plan.saved.size());
        if (o.kind == eq::operand_kind::temp) CHECK(o.value < s);
      }
    if (plan.result.kind == eq::operand_kind::temp) CHECK(plan.result.value < plan.actions.size());
  }
}

TEST_CASE("cpu engine: congruence, repeated variables, literals, saturation", "[eqsat][cpu]") {
  const eq::program prog = read(R"((datatype M (F M) (G M M) (Num i64) (V String))
(let $a (V "a"))
(let $b (V "b"))
(F $a)
(F $b)
(G $a $a)
(G $a $b)
(rewrite (G x x) (Num 1))
(rewrite (V "a") (V "b"))
(run 10)
(extract (G $a $b))
)");
  eq::cpu_engine engine(prog, 1);
  const eq::execution ex = eq::execute(prog, engine);
  CHECK(ex.initial.enodes == 6);
  REQUIRE(ex.iterations.size() == 2);
  // Iteration 1: (G a a) = 1 and a = b; congruence merges F a / F b and G a a / G a b.
  CHECK(ex.iterations[0].enodes == 5);
  CHECK(count_of(prog, ex.iterations[0], "F") == 1);
  CHECK(count_of(prog, ex.iterations[0], "G") == 1);
  CHECK(count_of(prog, ex.iterations[0], "V") == 2);
  CHECK(ex.iterations[0].matches == 2);
  CHECK(ex.stopped == eq::stop_reason::saturated);
  REQUIRE(ex.extracts.size() == 1);
  CHECK(ex.extracts[0].best.cost == 2);
  CHECK(ex.extracts[0].best.term == "(Num 1)");
}

TEST_CASE("cpu engine: node limit rolls the crossing iteration back", "[eqsat][cpu]") {
  // Each iteration adds one P and one Q: (P x) = (P (Q x)) never saturates.
  const eq::program prog = read(R"((datatype M (P M) (Q M) (Z))
(P (Z))
(rewrite (P x) (P (Q x)))
)");
  eq::cpu_engine engine(prog, 1);
  for (const auto& cmd : prog.commands)
    if (cmd.kind == eq::command_kind::add_term) engine.add_term(cmd.value);
  const eq::run_result r = engine.run(100, {0}, eq::run_limits{8, 0});
  CHECK(r.stopped == eq::stop_reason::node_limit);
  REQUIRE_FALSE(r.iterations.empty());
  REQUIRE(r.iterations.size() == 3);
  CHECK(r.iterations.back().enodes == 8);
  CHECK(engine.counts().enodes == r.iterations.back().enodes);
  CHECK(engine.counts().iteration == r.iterations.back().iteration);
  // A rule that never matches saturates at once.
  const eq::program never = read("(datatype M (A M) (B))\n(B)\n(rewrite (A (A x)) x)\n(run 5)\n");
  eq::cpu_engine idle(never, 2);
  const eq::execution ex = eq::execute(never, idle);
  CHECK(ex.stopped == eq::stop_reason::saturated);
  REQUIRE(ex.iterations.size() == 1);
  CHECK(ex.iterations[0].matches == 0);
}

TEST_CASE("cpu engine: math.egg matches egglog's counts through iteration 10", "[eqsat][cpu]") {
  const std::string dir = VYRE_EGGLOG_DATA_DIR;
  std::ifstream program_file(dir + "/math.egg");
  std::ifstream counts_file(dir + "/math.egglog-counts.tsv");
  if (!program_file || !counts_file) {
    WARN("no egglog data under " << dir << ": SKIPPED");
    std::exit(VYRE_TEST_SKIP_CODE);
  }
  std::stringstream text;
  text << program_file.rdbuf();
  const eq::program prog = read(text.str() + "\n(run 10)\n");
  for (const unsigned threads : {1u, 2u}) {
    eq::cpu_engine engine(prog, threads);
    const eq::execution ex = eq::execute(prog, engine);
    REQUIRE(ex.iterations.size() == 10);
    std::string line;
    std::size_t checked = 0;
    while (std::getline(counts_file, line)) {
      std::istringstream row(line);
      std::size_t iteration = 0;
      std::uint64_t total = 0;
      row >> iteration >> total;
      if (iteration > 10) continue;
      const eq::iteration_stats& s = iteration == 0 ? ex.initial : ex.iterations[iteration - 1];
      INFO("iteration " << iteration << ", threads " << threads);
      CHECK(s.enodes == total);
      for (std::size_t c = 0; c < prog.constructors.size(); ++c) {
        const std::string key = "\"" + prog.constructors[c].name + "\": ";
        const std::size_t at = line.find(key);
        REQUIRE(at != std::string::npos);
        CHECK(s.per_constructor[c] == std::stoull(line.substr(at + key.size())));
      }
      ++checked;
    }
    CHECK(checked == 11);
    counts_file.clear();
    counts_file.seekg(0);
  }
}
