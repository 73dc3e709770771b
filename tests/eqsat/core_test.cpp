// SPDX-License-Identifier: Apache-2.0
// The relational core run by the CPU engine, through sessions: egglog's semantics of merges,
// rebuilds, seminaive evaluation, deletion and subsumption, push/pop, outputs and limits; and
// math.egg against egglog's own per-iteration counts (math.egglog-counts.tsv).
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/eqsat/device/plan.hpp>
#include <vyre/eqsat/session.hpp>

#include "require_error.hpp"

namespace eq = vyre::eqsat;

namespace {

//! Every output's text of `text` run on a fresh session (`threads` CPU threads).
std::string run(const std::string& text, unsigned threads = 1) {
  eq::session_options o;
  o.threads = threads;
  eq::session s(o);
  auto r = s.run_text(text, "t.egg");
  if (!r) FAIL(s.describe(r.error()));
  std::string out;
  for (const auto& x : s.outputs()) out += x.text;
  return out;
}

vyre::error failure_of(const std::string& text) {
  eq::session s;
  auto r = s.run_text(text, "t.egg");
  REQUIRE_FALSE(r);
  return r.error();
}

std::string context_of(const vyre::error& e) {
  return e.context() != nullptr ? e.context() : "";
}

//! A session that ran `text`, and the device plans of its rules (made with no table ids, as
//! before a first upload).
struct planned_program {
  explicit planned_program(const std::string& text) { REQUIRE(s.run_text(text, "t.egg")); }

  const eq::declarations& decl() const { return s.decl(); }
  //! The id of the function (or constructor) `name`.
  std::uint32_t fn(const char* name) const {
    return static_cast<std::uint32_t>(decl().find_function(name));
  }
  vyre::expected<eq::device::rule_plan> plan(const eq::rule_decl& rule) const {
    return eq::device::plan_rule(decl(), no_ids, rule);
  }
  //! The plan of the `r`-th rule.
  vyre::expected<eq::device::rule_plan> plan(std::size_t r) const { return plan(decl().rules[r]); }

  eq::session s;
  eq::database no_ids;
};

}  // namespace

TEST_CASE("core: print-size lists every visible function by name, as egglog prints it",
          "[eqsat][core]") {
  CHECK(run("(datatype M (B) (A))\n(relation r (M))\n(let $x (A))\n(r (B))\n(print-size)\n"
            "(print-size r)") == "((A 1)\n (B 1)\n (r 1))\n1\n");
  CHECK(run("(print-size)") == "()\n");
}

TEST_CASE("core: congruence on rebuild merges rows and unites their classes", "[eqsat][core]") {
  // f(a) and f(b) become one row once a = b; its two values unite.
  CHECK(run("(datatype M (A) (B) (F M))\n(let $fa (F (A)))\n(let $fb (F (B)))\n"
            "(union (A) (B))\n(check (= $fa $fb))\n(print-size)") == "((A 1)\n (B 1)\n (F 1))\n");
}

TEST_CASE("core: a function's values merge by its :merge on set and on rebuild", "[eqsat][core]") {
  const std::string text =
      "(datatype M (A) (B))\n(function hi (M) i64 :merge (max old new))\n"
      "(set (hi (A)) 3)\n(set (hi (A)) 2)\n(set (hi (B)) 7)\n"
      "(check (= (hi (A)) 3))\n(union (A) (B))\n(check (= (hi (A)) 7))\n(print-size hi)";
  CHECK(run(text) == "1\n");
  // :no-merge: a second value is an error of the running program, which fail catches.
  const vyre::error e =
      failure_of("(function f (i64) i64 :no-merge)\n(set (f 1) 1)\n(set (f 1) 2)");
  CHECK(e.code() == vyre::errc::invalid_argument);
  CHECK(context_of(e) == "two different values for one key of a function declared :no-merge");
  CHECK(run("(function f (i64) i64 :no-merge)\n(set (f 1) 1)\n(fail (set (f 1) 2))\n"
            "(check (= (f 1) 1))") == "");
}

TEST_CASE("core: a rebuild round's unions land when the round ends, as egglog's do",
          "[eqsat][core]") {
  // One iteration unites W with (IntI 0 0) and X with Y. In the rebuild's first round f(X)
  // and f(Y) collide while their values, U(1 1, 0 0) and U(1 1, W), are still two classes
  // (their congruence is found in that same round), so the merge makes an M of them; egglog
  // 13.2.0 prints the same.
  const std::string rule_unites =
      "(datatype I (IntI i64 i64) (U I I) (M I I) (W))\n(datatype O (X) (Y))\n"
      "(function f (O) I :merge (M old new))\n(set (f (X)) (U (IntI 1 1) (IntI 0 0)))\n"
      "(set (f (Y)) (U (IntI 1 1) (W)))\n(relation go ())\n(go)\n";
  CHECK(run(rule_unites + "(rule ((go)) ((union (W) (IntI 0 0)) (union (X) (Y))))\n(run 1)\n"
                          "(print-size M)") == "1\n");
  // United by commands, each with its rebuild: the values are one class when f's rows
  // collide, so nothing is merged.
  CHECK(run(rule_unites + "(union (W) (IntI 0 0))\n(union (X) (Y))\n(run 1)\n(print-size M)") ==
        "0\n");
}

TEST_CASE("core: seminaive rules see each match once and an empty query fires once",
          "[eqsat][core]") {
  // A rule whose query is empty runs on its first run only: deleted, it is not made again.
  CHECK(run("(relation R (i64))\n(rule () ((R 1)))\n(run 1)\n(delete (R 1))\n(run 3)\n"
            "(print-size R)") == "0\n");
  // A counter with a summing merge counts each derivation once (seminaive), and every
  // iteration again with :naive.
  const std::string counter =
      "(relation E (i64 i64))\n(function n () i64 :merge (+ old new))\n(set (n) 0)\n"
      "(E 1 2)\n(E 2 3)\n";
  CHECK(run(counter + "(rule ((E a b)) ((set (n) 1)))\n(run 3)\n(extract (n))") == "2\n");
  CHECK(run(counter + "(rule ((E a b)) ((set (n) 1)) :naive)\n(run 3)\n(extract (n))") == "6\n");
  // Deletion is not a change: saturation stops.
  eq::session s;
  REQUIRE(
      s.run_text("(relation R (i64))\n(R 1)\n(rule ((R x)) ((delete (R x))))\n(run 10)", "t.egg"));
  CHECK(s.iterations().size() == 1);
  CHECK(s.stopped() == eq::run_stop::saturated);
}

TEST_CASE("core: subsumed rows are not matched or extracted, but checked and counted",
          "[eqsat][core]") {
  const std::string text =
      "(datatype M (Num i64) (Add M M))\n(relation seen (M))\n"
      "(let $a (Add (Num 1) (Num 2)))\n(union $a (Num 3))\n(subsume (Add (Num 1) (Num 2)))\n"
      "(rule ((= e (Add x y))) ((seen e)))\n(run 2)\n"
      "(check (= $a (Add (Num 1) (Num 2))))\n(print-size)\n(extract $a)";
  CHECK(run(text) == "((Add 1)\n (Num 3)\n (seen 0))\n(Num 3)\n");
}

TEST_CASE("core: a key holding an id the apply made is staged once and merged", "[eqsat][core]") {
  // Both matches make (G (C)), new in the iteration, and set (F (G (C))) to their own class:
  // the first set is appended without a lookup, the second merged into it (a union).
  CHECK(run("(datatype M (A i64) (C) (G M) (F M))\n(C)\n(A 1)\n(A 2)\n"
            "(rewrite (A i) (F (G (C))))\n(run 1)\n(check (= (A 1) (A 2)))\n(print-size)") ==
        "((A 2)\n (C 1)\n (F 1)\n (G 1))\n");
}

TEST_CASE("core: the id space's representatives agree with its parents", "[eqsat][core]") {
  eq::id_space ids;
  for (int i = 0; i < 200; ++i) REQUIRE(ids.make());
  const auto agree = [&] {
    for (eq::value x = 0; x < 200; ++x)
      if (ids.is_root(x) != (ids.find_const(x) == x)) return false;
    return true;
  };
  for (eq::value x = 3; x < 200; x += 7) ids.unite(x, (x * 13) % 200);  // across 64-id words
  CHECK(agree());
  CHECK(ids.roots_below(200) < 200);
  std::vector<eq::value> parent(200);
  for (eq::value x = 0; x < 200; ++x) parent[x] = x % 3 == 0 ? x : x - x % 3;
  ids.assign(parent, 5);
  CHECK(agree());
  CHECK(ids.roots_below(200) == 67);
}

TEST_CASE("core: push and pop restore declarations, rows and ids", "[eqsat][core]") {
  CHECK(run("(datatype M (A) (B))\n(A)\n(push)\n(datatype N (C))\n(C)\n(union (A) (B))\n"
            "(print-size)\n(pop)\n(print-size)\n(fail (check (= (A) (B))))") ==
        "((A 1)\n (B 1)\n (C 1))\n((A 1)\n (B 0))\n");
  const vyre::error e = failure_of("(pop)");
  CHECK(context_of(e) == "pop without a matching push");
}

TEST_CASE("core: a rule declared after a pop is planned for its own query", "[eqsat][core]") {
  // The engine keeps each rule's plans between iterations. After the pop, the new rule has the
  // index the popped one had, over another table of the same size: it must not get its plan.
  const std::string base = "(datatype M (A) (B) (F M) (G M))\n(A)\n";
  const std::string after =
      "(rule ((= y (F z))) ((G y)))\n(F (A))\n(run 2)\n(print-size)\n(print-function G 10)\n";
  const std::string popped = base + "(push)\n(rule ((= x (A))) ((F x)))\n(run 2)\n(pop)\n" + after;
  const std::string expected = run(base + after);
  CHECK(expected == "((A 1)\n (B 0)\n (F 1)\n (G 1))\n(\n   (G (F (A))) -> (G (F (A)))\n)\n");
  CHECK(run(popped) == expected);
}

TEST_CASE("core: extraction costs and variants as egglog computes them", "[eqsat][core]") {
  const std::string text =
      "(datatype M (Num i64 :cost 4) (Add M M) (Big M :cost 100))\n(sort V (Vec i64))\n"
      "(let $e (Add (Num 1) (Num 2)))\n(union $e (Big (Num 3)))\n(extract $e)\n"
      "(extract (vec-of 1 2 3))\n(extract $e 2)";
  eq::session s;
  REQUIRE(s.run_text(text, "t.egg"));
  REQUIRE(s.outputs().size() == 3);
  CHECK(s.outputs()[0].text == "(Add (Num 1) (Num 2))\n");
  CHECK(s.outputs()[0].cost == 1 + 5 + 5);
  CHECK(s.outputs()[1].text == "(vec-of 1 2 3)\n");
  CHECK(s.outputs()[1].cost == 3);
  CHECK(s.outputs()[2].text == "(\n   (Add (Num 1) (Num 2))\n   (Big (Num 3))\n)\n");
}

TEST_CASE("core: consecutive extracts share costs only while the database is unchanged",
          "[eqsat][core]") {
  // The second extract's expression adds a row (the costs must be recomputed: (Num 3) is new);
  // the union between the third and fourth extracts makes (Num 3) the cheapest term of $e.
  const std::string text =
      "(datatype M (Num i64) (Add M M))\n(let $e (Add (Num 1) (Num 2)))\n(extract $e)\n"
      "(extract (Num 3))\n(extract $e)\n(union $e (Num 3))\n(extract $e)\n(extract $e)";
  CHECK(run(text) == "(Add (Num 1) (Num 2))\n(Num 3)\n(Add (Num 1) (Num 2))\n(Num 3)\n(Num 3)\n");
}

TEST_CASE("core: an iteration reports the rounds its rebuild took", "[eqsat][core]") {
  // Uniting (A) with (B) makes F(A) congruent to F(B) (a second round) and then F(F(A)) to
  // F(F(B)) (a third look); the second run unites nothing and rebuilds nothing.
  const std::string text =
      "(datatype M (A) (B) (F M))\n(let $x (F (F (A))))\n(let $y (F (F (B))))\n"
      "(rewrite (A) (B))\n(run 1)\n(check (= $x $y))\n(run 1)";
  eq::session s;
  auto r = s.run_text(text, "t.egg");
  if (!r) FAIL(s.describe(r.error()));
  REQUIRE(s.iterations().size() == 2);
  CHECK(s.iterations()[0].unions >= 3);
  CHECK(s.iterations()[0].rebuild_rounds >= 2);
  CHECK(s.iterations()[1].rebuild_rounds == 0);
}

TEST_CASE("core: an extraction whose cost overflows 64 bits is an error, not a wrapped cost",
          "[eqsat][core]") {
  // Three nodes of cost 2^63 - 1 sum past 2^64 - 1: reported as an overflow, not as "nothing
  // to extract" and not as a cost of 2^64 - 1.
  const vyre::error e = failure_of(
      "(datatype T (A :cost 9223372036854775807) (B T T :cost 9223372036854775807))\n"
      "(extract (B (A) (A)))");
  CHECK(std::string(e.message()).find("overflows 2^64 - 1") != std::string::npos);
  CHECK(std::string(e.message()).find("(B (A) (A))") != std::string::npos);
  // Two of them fit: 2^64 - 2.
  eq::session s;
  REQUIRE(
      s.run_text("(datatype T (A :cost 9223372036854775807) (C T))\n(extract (C (A)))", "t.egg"));
  REQUIRE(s.outputs().size() == 1);
  CHECK(s.outputs()[0].cost == 9223372036854775808ull);
  // Nothing left to extract is said as such.
  const vyre::error gone = failure_of("(datatype T (A))\n(let $a (A))\n(delete (A))\n(extract $a)");
  CHECK(std::string(gone.message()).find("nothing to extract") != std::string::npos);
}

TEST_CASE("core: the node limit rolls the crossing iteration back", "[eqsat][core]") {
  const std::string text =
      "(datatype N (Z) (S N))\n(rule ((S x)) ((S (S x))))\n(S (Z))\n(run 100)\n(print-size)";
  eq::session_options o;
  o.node_limit = 40;
  eq::session s(o);
  REQUIRE(s.run_text(text, "t.egg"));
  CHECK(s.stopped() == eq::run_stop::node_limit);
  REQUIRE_FALSE(s.iterations().empty());
  CHECK(s.iterations().back().rows <= 40);
  CHECK(s.db().total_rows() <= 40);
  CHECK(s.db().total_rows() == s.iterations().back().rows);
}

TEST_CASE("core: under a node limit a search's kept matches are bounded too", "[eqsat][core]") {
  // 200^3 = 8M matches of a rule that adds nothing (96 MB of registers): under a node limit of
  // 1000 the search stops at its match budget (4 MiB) as the node limit does, and the iteration
  // is rolled back; without a limit it runs and changes nothing.
  std::string text = "(relation R (i64))\n";
  for (int i = 0; i < 200; ++i) text += "(R " + std::to_string(i) + ")\n";
  text += "(rule ((R a) (R b) (R c)) ((R a)))\n(run 1)\n";
  for (const unsigned threads : {1u, 2u}) {
    INFO(threads << " threads");
    eq::session_options o;
    o.node_limit = 1000;
    o.threads = threads;
    eq::session s(o);
    REQUIRE(s.run_text(text, "t.egg"));
    CHECK(s.stopped() == eq::run_stop::node_limit);
    CHECK(s.iterations().empty());
    CHECK(s.db().total_rows() == 200);
  }
  eq::session free_run;
  REQUIRE(free_run.run_text(text, "t.egg"));
  REQUIRE(free_run.iterations().size() == 1);
  CHECK(free_run.iterations()[0].matches == 8000000);
  CHECK(free_run.db().total_rows() == 200);
}

TEST_CASE("core: include and input read regular files only and file access can be turned off",
          "[eqsat][core]") {
  // A device could be endless (/dev/zero) and a directory has no text: both refused.
  for (const char* path : {"/dev/null", "/"}) {
    INFO(path);
    const vyre::error e = failure_of(std::string("(include \"") + path + "\")");
    CHECK(std::string(e.message()).find("not a regular file") != std::string::npos);
  }
  eq::session_options o;
  o.file_access = false;
  for (const char* program : {"(include \"t.egg\")", "(relation R (i64))\n(input R \"r.tsv\")",
                              "(datatype T (A))\n(output \"out.txt\" (A))",
                              "(relation R (i64))\n(print-function R :file \"r.txt\")"}) {
    INFO(program);
    eq::session s(o);
    auto r = s.run_text(program, "t.egg");
    REQUIRE_FALSE(r);
    CHECK(std::string(r.error().message()).find("file access is off") != std::string::npos);
  }
}

TEST_CASE("core: the time limit stops the runs and keeps the last committed iteration",
          "[eqsat][core]") {
  eq::session_options o;
  o.time_limit = 1e-9;
  eq::session s(o);
  REQUIRE(s.run_text("(datatype N (Z) (S N))\n(rule ((S x)) ((S (S x))))\n(S (Z))\n(run 100)",
                     "t.egg"));
  CHECK(s.stopped() == eq::run_stop::time_limit);
  CHECK(s.db().total_rows() == 2);
}

//! Every row of every table (its state, cells and stamp) and every id's representative, in
//! order: two databases that dump equal hold the same ids for the same rows.
std::vector<std::uint64_t> dump(const eq::database& db) {
  std::vector<std::uint64_t> out;
  for (const eq::table& t : db.tables) {
    out.push_back(t.rows());
    for (std::size_t r = 0; r < t.rows(); ++r) {
      out.push_back(static_cast<std::uint64_t>(t.state(r)));
      out.insert(out.end(), t.row(r), t.row(r) + t.width());
    }
  }
  for (std::size_t x = 0; x < db.ids.size(); ++x)
    out.push_back(db.ids.find_const(static_cast<eq::value>(x)));
  return out;
}

//! Runs `program` on 1, 2 and 3 threads under `node_limit`; `check(session)` after each run;
//! every run's database must be the 1-thread run's, id for id.
template <class Check>
void check_threads_agree(const std::string& program, const char* file, Check&& check,
                         std::uint64_t node_limit = 0) {
  std::vector<std::uint64_t> serial;
  for (const unsigned threads : {1u, 2u, 3u}) {
    INFO(threads << " threads, node limit " << node_limit);
    eq::session_options o;
    o.threads = threads;
    o.node_limit = node_limit;
    eq::session s(o);
    REQUIRE(s.run_text(program, file));
    check(s);
    if (threads == 1)
      serial = dump(s.db());
    else
      CHECK(dump(s.db()) == serial);
  }
}

TEST_CASE("core: an iteration rolled back at the node limit leaves what the iterations before left",
          "[eqsat][core]") {
  // Rows retired by merges and rebuilds, interned i64s and strings, containers, unions: under
  // each limit the database (every row, state and stamp, every id's class, the value pools, the
  // clock) and the outputs equal those of a run of just the iterations that were kept.
  const auto program = [](int iterations) {
    return "(datatype E (Num i64) (Add E E) (Name String))\n(sort EV (Vec E))\n"
           "(function total (E) i64 :merge (min old new))\n(relation seen (EV))\n"
           "(rule ((Add a b)) ((union (Add a b) (Add b a))))\n"
           "(rule ((Add (Add a b) c)) ((union (Add (Add a b) c) (Add a (Add b c)))))\n"
           "(rule ((Num n)) ((set (total (Num n)) n) (Name (+ \"n\" (to-string n)))))\n"
           "(rule ((Num n) (< n 100)) ((Num (+ n 1000000000000))))\n"
           "(rule ((Add a b) (= (total a) x) (= (total b) y))\n"
           "      ((set (total (Add a b)) (+ x y)) (seen (vec-of a b))))\n"
           "(let $e (Add (Add (Add (Add (Num 1) (Num 2)) (Num 3)) (Num 4)) (Num 5)))\n"
           "(run " +
           std::to_string(iterations) +
           ")\n(print-size)\n(extract $e)\n(print-function total 5)\n"
           "(Name \"after\")\n(check (Name \"n1\"))\n(print-size Name)\n";
  };
  const auto outputs = [](const eq::session& s) {
    std::string out;
    for (const auto& x : s.outputs()) out += x.text;
    return out;
  };
  std::size_t rolled_back = 0;
  for (const std::uint64_t limit : {40u, 80u, 120u, 200u, 300u, 400u}) {
    INFO("node limit " << limit);
    eq::session_options o;
    o.node_limit = limit;
    eq::session limited(o);
    const auto ran = limited.run_text(program(30), "t.egg");
    if (!ran) FAIL(limited.describe(ran.error()));
    REQUIRE(limited.stopped() == eq::run_stop::node_limit);
    const auto kept = static_cast<int>(limited.iterations().size());
    eq::session plain;
    REQUIRE(plain.run_text(program(kept), "t.egg"));
    REQUIRE(plain.iterations().size() == limited.iterations().size());
    const eq::database& a = limited.db();
    const eq::database& b = plain.db();
    CHECK(a.total_rows() <= limit + 1);  // `(Name "after")` runs after the runs stopped
    CHECK(dump(a) == dump(b));
    CHECK(a.now == b.now);
    CHECK(a.last_run == b.last_run);
    CHECK(a.containers.size() == b.containers.size());
    const auto pa = a.base.sizes(), pb = b.base.sizes();
    CHECK(pa.i64s == pb.i64s);
    CHECK(pa.strings == pb.strings);
    CHECK(outputs(limited) == outputs(plain));
    rolled_back += kept < 8 ? 1 : 0;
  }
  CHECK(rolled_back >= 5);  // the limits stop the runs at different iterations
}

TEST_CASE("core: math.egg matches egglog's counts through iteration 10 on 1 and 2 threads",
          "[eqsat][core]") {
  const std::string dir = VYRE_EGGLOG_DATA_DIR;
  std::ifstream program_file(dir + "/math.egg");
  std::ifstream counts_file(dir + "/math.egglog-counts.tsv");
  if (!program_file || !counts_file) {
    WARN("no egglog data under " << dir << ": SKIPPED");
    std::exit(VYRE_TEST_SKIP_CODE);
  }
  std::stringstream text;
  text << program_file.rdbuf();
  std::vector<std::string> rows;
  for (std::string line; std::getline(counts_file, line);) rows.push_back(line);
  // The last iterations run their rewrites of 4,096 matches or more an action at a time on
  // every thread: the database must be the same on 1 and 2 threads, id for id, not only its
  // counts.
  std::vector<std::vector<std::uint64_t>> dumps;
  for (const unsigned threads : {1u, 2u}) {
    eq::session_options o;
    o.threads = threads;
    eq::session s(o);
    REQUIRE(s.run_text(text.str() + "\n(run 10)\n", "math.egg"));
    REQUIRE(s.iterations().size() == 10);
    dumps.push_back(dump(s.db()));
    std::size_t checked = 0;
    for (const std::string& line : rows) {
      std::istringstream row(line);
      std::size_t iteration = 0;
      std::uint64_t total = 0;
      row >> iteration >> total;
      if (iteration == 0 || iteration > 10) continue;
      const eq::iteration_record& r = s.iterations()[iteration - 1];
      INFO("iteration " << iteration << ", threads " << threads);
      CHECK(r.rows == total);
      for (std::size_t f = 0; f < r.names->size(); ++f) {
        const std::string key = "\"" + (*r.names)[f] + "\": ";
        const std::size_t at = line.find(key);
        REQUIRE(at != std::string::npos);
        CHECK(r.sizes[f] == std::stoull(line.substr(at + key.size())));
      }
      ++checked;
    }
    CHECK(checked == 10);
  }
  CHECK(dumps[0] == dumps[1]);
}

TEST_CASE("core: a skewed program gives the 1-thread database id for id on 2 and 3 threads",
          "[eqsat][core]") {
  // A boolean-algebra program over a 2-bit adder (bench/eqsat/skew_programs.py adder 2): its
  // distributivity rewrites build three rows per match, which other matches build too. The last
  // iteration has 116,410 matches, split over the threads in the search, with and without a
  // node limit (which bounds the matches a search keeps). Every row, state and stamp and every
  // id's class must be the 1-thread run's.
  const std::string program =
      "(datatype B (Var String) (And B B) (Or B B) (Not B))\n"
      "(rewrite (And a b) (And b a))\n(rewrite (Or a b) (Or b a))\n"
      "(rewrite (And a (Or b c)) (Or (And a b) (And a c)))\n"
      "(rewrite (Or a (And b c)) (And (Or a b) (Or a c)))\n"
      "(rewrite (Not (And a b)) (Or (Not a) (Not b)))\n"
      "(rewrite (Not (Or a b)) (And (Not a) (Not b)))\n"
      "(rewrite (And a (Or a b)) a)\n(rewrite (Or a (And a b)) a)\n(rewrite (Not (Not a)) a)\n"
      "(let $p0 (Or (And (Var \"a0\") (Not (Var \"b0\"))) (And (Not (Var \"a0\")) (Var \"b0\"))))\n"
      "(let $s0 (Or (And $p0 (Not (Var \"c0\"))) (And (Not $p0) (Var \"c0\"))))\n"
      "(let $c1 (Or (And (Var \"a0\") (Var \"b0\")) (And (Var \"c0\") $p0)))\n"
      "(let $p1 (Or (And (Var \"a1\") (Not (Var \"b1\"))) (And (Not (Var \"a1\")) (Var \"b1\"))))\n"
      "(let $s1 (Or (And $p1 (Not $c1)) (And (Not $p1) $c1)))\n"
      "(let $c2 (Or (And (Var \"a1\") (Var \"b1\")) (And $c1 $p1)))\n"
      "(run 6)\n(print-size)\n";
  for (const std::uint64_t node_limit : {std::uint64_t{0}, std::uint64_t{300000}}) {
    check_threads_agree(
        program, "adder2.egg",
        [](const eq::session& s) {
          REQUIRE(s.iterations().size() == 6);
          CHECK(s.iterations().back().matches == 116410);
          CHECK(s.outputs().back().text == "((And 84292)\n (Not 849)\n (Or 85881)\n (Var 5))\n");
        },
        node_limit);
  }
}

TEST_CASE(
    "core: constant folding under AC gives the 1-thread database id for id on 2 and 3 threads",
    "[eqsat][core]") {
  // bench/eqsat/skew_programs.py fold 8: its AC rewrites end in a set of the matched class,
  // which the apply runs an action at a time on every thread when a rule has enough matches
  // (268,074 in iteration 8, most of them rows that exist); the folding rules compute i64s in
  // their actions, which run match by match.
  std::string program =
      "(datatype E (Num i64) (Add E E) (Mul E E))\n"
      "(rewrite (Add a b) (Add b a))\n(rewrite (Add a (Add b c)) (Add (Add a b) c))\n"
      "(rewrite (Add (Num a) (Num b)) (Num (+ a b)))\n"
      "(rewrite (Mul (Num a) (Num b)) (Num (* a b)))\n";
  std::string term = "(Mul (Num 1) (Num 2))";
  for (int i = 2; i <= 8; ++i)
    term = "(Add " + term + " (Mul (Num " + std::to_string(i) + ") (Num " + std::to_string(i + 1) +
           ")))";
  program += "(let $sum " + term + ")\n(run 12)\n(print-size)\n";
  check_threads_agree(program, "fold8.egg", [](const eq::session& s) {
    REQUIRE(s.iterations().size() == 10);  // saturated
    CHECK(s.iterations()[7].matches == 268074);
    CHECK(s.outputs().back().text == "((Add 7140)\n (Mul 8)\n (Num 125))\n");
  });
}

TEST_CASE(
    "core: Datalog facts of many matches give the 1-thread database id for id on 2 and 3 "
    "threads",
    "[eqsat][core]") {
  // Transitive closure over 300 nodes (edges i -> i + 1 and i -> 7i + 3, mod 300: strongly
  // connected, so every pair ends up in `path`). Its rules insert relation facts; an
  // iteration's thousands of matches make them an action at a time on every thread, each new
  // fact a fresh id in the order of its first match, as one thread makes them.
  std::string program = "(relation edge (i64 i64))\n(relation path (i64 i64))\n";
  for (int i = 0; i < 300; ++i)
    program += "(edge " + std::to_string(i) + " " + std::to_string((i + 1) % 300) + ")\n(edge " +
               std::to_string(i) + " " + std::to_string((7 * i + 3) % 300) + ")\n";
  program +=
      "(rule ((edge a b)) ((path a b)))\n(rule ((path a b) (edge b c)) ((path a c)))\n"
      "(run 100)\n(print-size path)\n";
  check_threads_agree(program, "closure300.egg", [](const eq::session& s) {
    std::uint64_t most = 0;
    for (const auto& it : s.iterations()) most = (std::max)(most, it.matches);
    CHECK(most >= 4096);  // enough matches for the action-at-a-time apply
    CHECK(s.outputs().back().text == "90000\n");
  });
}

TEST_CASE("core: a rewrite whose right side the same apply deletes runs as on one thread",
          "[eqsat][core]") {
  // Both sides of 12,000 commuted sums exist in one class, so the rewrite's 24,000 matches all
  // set rows the table holds, while the other rule deletes half of those rows in the same
  // apply, so the sets run match by match, not an action at a time. The merge deletes first
  // and the sets write the rows back, on every thread count.
  std::string program =
      "(datatype E (Num i64) (Add E E))\n(rewrite (Add a b) (Add b a))\n"
      "(rule ((= e (Add (Num 0) b))) ((delete (Add (Num 0) b))))\n";
  for (int i = 1; i <= 12000; ++i)
    program += "(union (Add (Num 0) (Num " + std::to_string(i) + ")) (Add (Num " +
               std::to_string(i) + ") (Num 0)))\n";
  program += "(run 1)\n(print-size Add)\n";
  check_threads_agree(program, "deleted.egg", [](const eq::session& s) {
    REQUIRE(s.iterations().size() == 1);
    CHECK(s.iterations()[0].matches == 36000);
    CHECK(s.outputs().back().text == "24000\n");
  });
}

TEST_CASE("iteration_limits: the match budget follows the node limit and saturates",
          "[eqsat][limits]") {
  vyre::eqsat::iteration_limits limits;
  CHECK(limits.match_budget_bytes() == ~std::uint64_t{0});  // no limit, no budget
  limits.node_limit = 1;
  CHECK(limits.match_budget_bytes() == vyre::eqsat::iteration_limits::min_match_bytes);
  limits.node_limit = 1500000;
  CHECK(limits.match_budget_bytes() ==
        1500000 * vyre::eqsat::iteration_limits::match_bytes_per_node);
  limits.node_limit = std::uint64_t{1} << 62;  // 32 bytes a row would wrap
  CHECK(limits.match_budget_bytes() == ~std::uint64_t{0});
}

TEST_CASE("core: output kinds and run stops have the names --json prints", "[eqsat][core]") {
  using kind = vyre::eqsat::program_output::kind;
  using vyre::eqsat::run_stop;
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::print_size)) == "print-size");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::function_size)) == "function-size");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::extract)) == "extract");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::variants)) == "variants");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::print_function)) ==
        "print-function");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(kind::print_stats)) == "print-stats");
  CHECK(std::string(vyre::eqsat::program_output_kind_name(static_cast<kind>(200))) == "unknown");
  CHECK(std::string(vyre::eqsat::run_stop_name(run_stop::none)) == "none");
  CHECK(std::string(vyre::eqsat::run_stop_name(run_stop::saturated)) == "saturated");
  CHECK(std::string(vyre::eqsat::run_stop_name(run_stop::iterations)) == "iterations");
  CHECK(std::string(vyre::eqsat::run_stop_name(run_stop::node_limit)) == "node_limit");
  CHECK(std::string(vyre::eqsat::run_stop_name(run_stop::time_limit)) == "time_limit");
}

TEST_CASE("device plan: primitives run after the atom that binds their arguments",
          "[eqsat][core][device_plan]") {
  namespace dev = eq::device;
  const planned_program p(R"((datatype M (Const i64) (Add M M) (Not M) (F f64))
(rewrite (Add (Const a) (Const b)) (Const (+ (* a 2) b)))
(rule ((Const a) (< a 10) (= b (* a 2)) (Const b)) ((Add (Const a) (Const b))))
(rule ((= x (Add p q)) (!= p q)) ((union x (Add q p))))
(rewrite (Not (Const a)) (Const (not-i64 a)))
(rule ((Const a) (< a -1)) ((Not (Const a))))
(rewrite (Add (F a) (F b)) (F (+ a b)))
)");
  const eq::declarations& decl = p.decl();
  REQUIRE(decl.rules.size() == 6);

  // Constant folding: two calls, the second reading the first; the set's key is the result.
  auto fold = p.plan(0);
  REQUIRE(fold);
  REQUIRE(fold->computes.size() == 2);
  CHECK(fold->computes[0].op == dev::device_i64(eq::i64_op::mul));
  CHECK(fold->computes[0].args[1] == dev::plan_operand{dev::operand_kind::constant, 2});
  CHECK(fold->computes[1].op == dev::device_i64(eq::i64_op::add));
  CHECK(fold->computes[1].args[0] == dev::plan_operand{dev::operand_kind::computed, 0});
  REQUIRE(fold->sets.size() == 1);
  REQUIRE(fold->sets[0].args.size() == 1);
  CHECK(fold->sets[0].args[0] == dev::plan_operand{dev::operand_kind::computed, 1});

  // A filter and a binding primitive run after the first atom; the bound result is the key
  // the second atom is looked up by (a check, not a second binding).
  auto bind = p.plan(1);
  REQUIRE(bind);
  INFO(bind->describe(decl));
  REQUIRE(bind->atoms.size() == 2);
  REQUIRE(bind->prims.size() == 2);
  for (const dev::plan_prim& prim : bind->prims) CHECK(prim.atom == 0);
  const dev::plan_prim& twice =
      bind->prims[0].op == dev::device_i64(eq::i64_op::mul) ? bind->prims[0] : bind->prims[1];
  CHECK(twice.out.op == dev::column_op::bind);
  const dev::plan_atom& second = bind->atoms[1];
  CHECK(second.key_column == 0);
  CHECK(second.columns[0].op == dev::column_op::check);
  CHECK(second.columns[0].value == twice.out.value);

  // `!=` of two e-classes, once both are bound.
  auto distinct = p.plan(2);
  REQUIRE(distinct);
  REQUIRE(distinct->prims.size() == 1);
  CHECK(distinct->prims[0].op == dev::device_prim::not_equal);
  CHECK(distinct->prims[0].atom == 0);

  // Refused, naming why: a primitive the device does not evaluate, an i64 constant it cannot
  // hold inline (-1), f64 arithmetic.
  REQUIRE_ERROR_WITH(p.plan(3), vyre::errc::unsupported, "not-i64");
  REQUIRE_ERROR_WITH(p.plan(4), vyre::errc::unsupported, "outside [0, 2^31)");
  REQUIRE_ERROR_WITH(p.plan(5), vyre::errc::unsupported, "`+`");
}

TEST_CASE("device plan: functions the device merges, read by queries and lookups, set by heads",
          "[eqsat][core][device_plan]") {
  namespace dev = eq::device;
  const planned_program p(R"((datatype M (Num i64) (Add M M) (Mul M M))
(function lo (M) i64 :merge (max old new))
(function hi (M) i64 :merge (min old new))
(function known (M) bool :merge (or old new))
(function sum (M) i64 :merge (+ old new))
(function last (M) i64 :merge new)
(function best (i64) i64 :merge (min new old))
(function later (i64) i64 :merge new)
(function once (M) i64 :no-merge)
(function sum_i64 (i64) i64 :merge (+ old new))
(rule ((= e (Mul a b)) (= x (lo a)) (= y (hi b))) ((set (lo e) (* x y)) (set (hi e) (+ x y))))
(rule ((= e (Add a b)) (known a)) ((set (known e) true) (set (lo e) (lo a))) :naive)
(rule ((= e (Add a b))) ((set (sum e) 1)))
(rule ((= e (Num n))) ((set (lo e) -1)))
(rule ((= e (Add a b))) ((set (lo (Mul a b)) (lo (Mul b a)))) :naive)
(rule ((= e (Add a b)) (= c (Mul a b))) ((union e c) (union a b) (delete (Num 0))))
(rule ((= e (Add a b))) ((delete (Add (Num 0) a))))
)");
  const eq::declarations& decl = p.decl();
  dev::device_merge merge = dev::device_merge::unite;
  REQUIRE(dev::device_merge_of(decl, p.fn("Add"), merge));
  CHECK(merge == dev::device_merge::unite);
  REQUIRE(dev::device_merge_of(decl, p.fn("lo"), merge));
  CHECK(merge == dev::device_merge::max);
  REQUIRE(dev::device_merge_of(decl, p.fn("hi"), merge));
  CHECK(merge == dev::device_merge::min);
  REQUIRE(dev::device_merge_of(decl, p.fn("known"), merge));
  CHECK(merge == dev::device_merge::max);
  REQUIRE(dev::device_merge_of(decl, p.fn("best"), merge));  // (min new old): either order
  CHECK(merge == dev::device_merge::min);
  CHECK_FALSE(dev::device_merge_of(decl, p.fn("sum"), merge));  // `+` is not idempotent
  // `new` keeps the value written last: the device's seminaive search writes what the CPU's does.
  REQUIRE(dev::device_merge_of(decl, p.fn("last"), merge));
  CHECK(merge == dev::device_merge::replace);
  REQUIRE(dev::device_merge_of(decl, p.fn("once"), merge));
  CHECK(merge == dev::device_merge::none);
  CHECK_FALSE(dev::orders_i64(decl, p.fn("last")));  // its values are only compared for equality
  CHECK(dev::orders_i64(decl, p.fn("best")));
  CHECK(dev::table_fits(decl, p.fn("lo")));
  REQUIRE_ERROR_WITH(dev::table_fits(decl, p.fn("sum")), vyre::errc::unsupported, "sum");
  // Tables that move to the device: those holding ids, and functions of base sorts it merges.
  CHECK(dev::device_resident(decl, p.fn("sum")));  // holds ids (and keeps the state on the host)
  CHECK(dev::device_resident(decl, p.fn("best")));
  CHECK(dev::device_resident(decl, p.fn("later")));
  CHECK_FALSE(dev::device_resident(decl, p.fn("sum_i64")));

  // Function atoms are found through the class the constructor atom binds, and two sets.
  auto interval = p.plan(0);
  REQUIRE(interval);
  INFO(interval->describe(decl));
  REQUIRE(interval->atoms.size() == 3);
  CHECK(interval->atoms[0].table == p.fn("Mul"));
  for (std::size_t a = 1; a < 3; ++a) {
    CHECK(interval->atoms[a].key_column == 0);
    CHECK(interval->atoms[a].columns[0].op == dev::column_op::check);
    CHECK(interval->atoms[a].columns[1].op == dev::column_op::bind);
  }
  REQUIRE(interval->sets.size() == 2);
  CHECK(interval->sets[0].table == p.fn("lo"));
  CHECK(interval->sets[1].table == p.fn("hi"));
  CHECK(interval->sets[0].value == dev::plan_operand{dev::operand_kind::computed, 0});
  // A lookup in the actions of a :naive rule is a compute step the set reads.
  auto lookup = p.plan(1);
  REQUIRE(lookup);
  REQUIRE(lookup->computes.size() == 1);
  CHECK(lookup->computes[0].kind == dev::compute_kind::lookup);
  CHECK(lookup->computes[0].table == p.fn("lo"));
  CHECK(lookup->computes[0].arg_count == 1);
  REQUIRE(lookup->sets.size() == 2);
  CHECK(lookup->sets[1].value == dev::plan_operand{dev::operand_kind::computed, 0});
  // Refused, naming why: a function merged by `+`, a negative constant into a max-merged
  // function, a lookup keyed by a class the match made.
  REQUIRE_ERROR_WITH(p.plan(2), vyre::errc::unsupported, "`sum`");
  REQUIRE_ERROR_WITH(p.plan(3), vyre::errc::unsupported, "outside [0, 2^31)");
  REQUIRE_ERROR_WITH(p.plan(4), vyre::errc::unsupported, "lookup keyed");
  // A delete appends its key to the table's deleted keys: a step after the rows.
  auto deleting = p.plan(5);
  REQUIRE(deleting);
  REQUIRE(deleting->deleted.size() == 1);
  CHECK(deleting->deleted[0].table == p.fn("Num"));
  CHECK(deleting->deletes(deleting->step_count() - 1));
  CHECK_FALSE(deleting->subsumes(deleting->step_count() - 1));
  CHECK(dev::deleted_tables(decl)[p.fn("Num")] == 1);
  CHECK(dev::deleted_tables(decl)[p.fn("Add")] == 1);
  // A delete keyed by a class the match made: the row goes before the rebuild would find it.
  REQUIRE_ERROR_WITH(p.plan(6), vyre::errc::unsupported, "delete keyed");
  // A lookup in the actions of a seminaive rule, which egglog and the front end refuse too.
  eq::rule_decl seminaive_rule = decl.rules[1];
  seminaive_rule.naive = false;
  REQUIRE_ERROR_WITH(p.plan(seminaive_rule), vyre::errc::unsupported, ":naive");
}

TEST_CASE("device plan: a subsume makes its row and appends its key, and marks its table",
          "[eqsat][core][device_plan]") {
  namespace dev = eq::device;
  const planned_program p(R"((datatype M (Num i64) (Add M M) (Mul M M))
(rewrite (Mul (Num a) (Num b)) (Num (* a b)) :subsume)
(rule ((= e (Add a b))) ((subsume (Add b a))))
(Add (Num 1) (Num 2))
(Mul (Num 3) (Num 4))
(subsume (Mul (Num 3) (Num 4)))
)");
  const eq::declarations& decl = p.decl();
  auto folded = p.plan(0);
  REQUIRE(folded);
  INFO(folded->describe(decl));
  REQUIRE(folded->subsumed.size() == 1);
  CHECK(folded->subsumed[0].table == p.fn("Mul"));
  REQUIRE(folded->subsumed[0].args.size() == 2);
  // The subsumed row is also made (egglog adds it when missing), so a step appends to Mul and
  // the last step to Mul's subsumed keys.
  const std::uint32_t steps = folded->step_count();
  REQUIRE(steps >= 2);
  CHECK(folded->subsumes(steps - 1));
  CHECK_FALSE(folded->subsumes(0));
  CHECK(folded->step_table(steps - 1) == p.fn("Mul"));
  auto swapped = p.plan(1);
  REQUIRE(swapped);
  REQUIRE(swapped->subsumed.size() == 1);
  CHECK(swapped->subsumed[0].args[0] == swapped->actions.back().args[0]);
  // Mul is subsumed by a rule and holds a subsumed row; Add by a rule; Num by neither.
  const std::vector<std::uint8_t> marked = dev::subsumed_tables(decl, p.s.db());
  CHECK(marked[p.fn("Mul")] == 1);
  CHECK(marked[p.fn("Add")] == 1);
  CHECK(marked[p.fn("Num")] == 0);
  eq::session plain;
  REQUIRE(plain.run_text("(datatype M (Num i64) (Neg M))\n(subsume (Neg (Num 1)))\n", "u.egg"));
  const std::vector<std::uint8_t> held = dev::subsumed_tables(plain.decl(), plain.db());
  CHECK(held[static_cast<std::size_t>(plain.decl().find_function("Neg"))] == 1);
  CHECK(eq::gpu_resident_check(plain.decl(), plain.db()));  // subsumed rows move too
}

TEST_CASE("table version: changes with the rows, kept by a copy", "[eqsat][core]") {
  eq::table t;
  t.configure(1, {0, 0});
  const std::uint64_t empty = t.version();
  CHECK(t.version() == empty);  // asking again changes nothing
  const eq::value k1 = 1, k2 = 2;
  REQUIRE(t.append(&k1, 10, 1, eq::row_state::live));
  const std::uint64_t one = t.version();
  CHECK(one != empty);
  eq::table copy = t;
  CHECK(copy.version() == one);  // same rows, same version
  (void)t.find(&k1);
  CHECK(t.version() == one);  // reads change nothing
  const auto changes = [&](auto&& write) {
    const std::uint64_t before = t.version();
    write();
    return t.version() != before;
  };
  CHECK(changes([&] { REQUIRE(t.append(&k2, 20, 2, eq::row_state::live)); }));
  CHECK(changes([&] { t.mark_subsumed(1); }));
  CHECK(changes([&] { t.retire(0); }));
  CHECK(changes([&] { t.compact(); }));
  CHECK(changes([&] {
    t.begin_undo();
    REQUIRE(t.append(&k1, 30, 3, eq::row_state::live));
    t.roll_back();
  }));
  CHECK(changes([&] { REQUIRE(t.assign({5, 50}, 4)); }));
  CHECK(changes([&] { t.clear(); }));
  CHECK(copy.version() == one);  // the copy's rows did not change
}

TEST_CASE("table: rows assigned with their timestamps keep them, ascending only", "[eqsat][core]") {
  eq::table t;
  t.configure(1, {0, 0});
  // Rows from the device: each its own timestamp, in the order of the timestamps.
  REQUIRE(t.assign({7, 70, 3, 30, 9, 90}, std::vector<std::uint32_t>{2, 5, 5}));
  REQUIRE(t.rows() == 3);
  CHECK(t.stamp(0) == 2);
  CHECK(t.stamp(2) == 5);
  CHECK(t.first_row_at(3) == 1);  // the rows new to a rule last run at 3
  const eq::value three = 3;
  CHECK(t.value_of(t.find(&three)) == 30);
  // Out of order, or one short: refused, the rows kept.
  auto unordered = t.assign({1, 10, 2, 20}, std::vector<std::uint32_t>{4, 3});
  REQUIRE_FALSE(unordered);
  CHECK(unordered.error().message().find("ascending") != std::string::npos);
  CHECK_FALSE(t.assign({1, 10, 2, 20}, std::vector<std::uint32_t>{4}));
  CHECK(t.rows() == 3);
}

TEST_CASE("core: a table appends and retires batches of distinct rows on several threads",
          "[eqsat][core]") {
  eq::table t;
  t.configure(2, {1, 1, 1});
  const auto row_of = [](eq::value i, eq::value v) {
    return std::vector<eq::value>{i, i * 7 + 1, v};
  };
  const auto batch = [&](eq::value from, eq::value to, eq::value plus, bool evens_only) {
    std::vector<eq::value> cells;
    for (eq::value i = from; i < to; ++i)
      if (!evens_only || i % 2 == 0) {
        const auto r = row_of(i, i + plus);
        cells.insert(cells.end(), r.begin(), r.end());
      }
    return cells;
  };
  // A small batch, then one that outgrows the key index: indexed again on 3 threads.
  const std::vector<eq::value> small = batch(0, 1000, 0, false),
                               large = batch(1000, 200000, 0, false);
  REQUIRE(t.append_distinct(small.data(), 1000, 1, 3));
  REQUIRE(t.append_distinct(large.data(), 199000, 1, 3));
  REQUIRE(t.size() == 200000);
  const auto value_at = [&](eq::value i) {
    const auto keys = row_of(i, 0);
    const std::uint32_t r = t.find(keys.data());
    return r == eq::table::no_row ? eq::no_value : t.value_of(r);
  };
  std::size_t wrong = 0;
  for (eq::value i = 0; i < 200000; ++i) wrong += value_at(i) == i ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(value_at(200000) == eq::no_value);
  CHECK(t.stamp(199999) == 1);
  // Retire the even rows together, write them again with other values, then roll it all back.
  t.begin_undo();
  std::vector<std::uint32_t> evens;
  for (std::uint32_t r = 0; r < 200000; r += 2) evens.push_back(r);
  t.retire_distinct(evens, 3);
  CHECK(t.size() == 100000);
  CHECK(value_at(4) == eq::no_value);
  CHECK(value_at(5) == 5);
  const std::vector<eq::value> again = batch(0, 200000, 1, true);
  const std::vector<eq::row_state> states(100000, eq::row_state::subsumed);
  REQUIRE(t.append_distinct(again.data(), 100000, 2, 3, states.data()));
  CHECK(t.size() == 200000);
  CHECK(value_at(4) == 5);
  CHECK(t.state(t.find(row_of(4, 0).data())) == eq::row_state::subsumed);
  t.roll_back(3);  // the key index rebuilt on 3 threads
  wrong = 0;
  for (eq::value i = 0; i < 200000; ++i) wrong += value_at(i) == i ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(t.rows() == 200000);
  CHECK(t.state(4) == eq::row_state::live);
  // Retired for good and compacted on 3 threads: the odd rows keep their order and keys.
  t.retire_distinct(evens, 3);
  t.compact(3);
  REQUIRE(t.rows() == 100000);
  wrong = 0;
  for (eq::value i = 0; i < 200000; ++i)
    wrong += value_at(i) == (i % 2 == 1 ? i : eq::no_value) ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(t.row(0)[0] == 1);
  CHECK(t.row(99999)[0] == 199999);
  // Past the rows a table indexes: refused, nothing appended.
  CHECK_FALSE(t.append_distinct(large.data(), eq::table::max_rows, 3, 1));
  CHECK(t.rows() == 100000);
}

TEST_CASE("core: a batch of fresh ids is consecutive and each id its own class", "[eqsat][core]") {
  eq::id_space ids;
  for (int i = 0; i < 3; ++i) REQUIRE(ids.make());
  auto first = ids.make_many(100);
  REQUIRE(first);
  CHECK(*first == 3);
  REQUIRE(ids.size() == 103);
  CHECK(*ids.make() == 103);
  std::size_t wrong = 0;
  for (eq::value x = 0; x < 104; ++x) wrong += ids.find_const(x) == x && ids.is_root(x) ? 0 : 1;
  CHECK(wrong == 0);
  CHECK(ids.unite(70, 5));
  CHECK(ids.find_const(70) == 5);
  CHECK_FALSE(ids.is_root(70));
  CHECK_FALSE(ids.make_many(std::size_t{eq::no_value}));  // past 2^32 - 1 ids: refused
  CHECK(ids.size() == 104);
}

TEST_CASE("core: key groups give each key its first item whatever the threads", "[eqsat][core]") {
  // 50,000 two-column keys drawn from 6,000 (so most repeat), a third of the items left out.
  std::vector<eq::value> keys;
  std::vector<std::uint64_t> hashes;
  std::uint64_t x = 12345;
  for (int i = 0; i < 50000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const auto k = static_cast<eq::value>((x >> 33) % 6000);
    keys.push_back(k % 100);
    keys.push_back(k / 100);
    hashes.push_back(eq::detail::row_hash(&keys[keys.size() - 2], 2));
  }
  const auto taken = [](std::size_t i) { return i % 3 != 1; };
  std::vector<std::uint32_t> expected(50000, 0);
  std::map<std::pair<eq::value, eq::value>, std::uint32_t> seen;
  std::size_t count = 0;
  for (std::uint32_t i = 0; i < 50000; ++i) {
    if (!taken(i)) continue;
    ++count;
    expected[i] = seen.try_emplace({keys[2 * i], keys[2 * i + 1]}, i).first->second;
  }
  for (const unsigned chunks : {1u, 2u, 5u}) {
    INFO(chunks << " chunks");
    eq::detail::key_groups groups;
    std::vector<std::uint32_t> first;
    CHECK(groups.group(keys.data(), 2, 2, hashes.data(), 50000, chunks, taken, first) == count);
    std::size_t wrong = 0;
    for (std::uint32_t i = 0; i < 50000; ++i)
      if (taken(i)) wrong += first[i] == expected[i] ? 0 : 1;
    CHECK(wrong == 0);
  }
}

TEST_CASE("cpu engine: a table no rule writes keeps its search index between iterations",
          "[eqsat][core]") {
  // 300,000 weighted edges made by rules once, then shortest paths: every iteration searches
  // the edges by their source, and the index is built once rather than per iteration.
  const std::string program =
      R"((relation node (i64))
(relation edge (i64 i64 i64))
(function dist (i64) i64 :merge (min old new))
(ruleset grow)
(ruleset wire)
(node 0)
)" +
      [] {
        std::string rules;
        for (int k = 1; k < 100000; k *= 2)
          rules += "(rule ((node i) (< (+ i " + std::to_string(k) + ") 100000)) ((node (+ i " +
                   std::to_string(k) + "))) :ruleset grow)\n";
        return rules;
      }() +
      R"((rule ((node i) (= t (% (+ (* i 7919) 13) 100000))) ((edge i t 1) (edge t i 2)) :ruleset wire)
(rule ((node i) (= t (/ i 2))) ((edge i t 3) (edge t i 1)) :ruleset wire)
(run grow 17)
(run wire 1)
(rule ((= d (dist a)) (edge a b w)) ((set (dist b) (+ d w))))
(set (dist 0) 0)
)";
  eq::session s;
  REQUIRE(s.run_text(program, "paths.egg"));
  REQUIRE(s.db().tables[static_cast<std::size_t>(s.decl().find_function("edge"))].size() > 300000);
  const std::uint64_t before = s.engine().index_builds();
  REQUIRE(s.run_text("(run 8)", "paths.egg"));
  const std::uint64_t built = s.engine().index_builds() - before;
  // Per iteration the search led by `dist`'s new rows looks `edge` up by its source. Its index
  // is built in the first iteration (the edges were written since the search before) and the
  // second, then kept: 2 builds, where building it every iteration makes 8.
  INFO("indexes built over 8 iterations: " << built);
  CHECK(built <= 3);
  // The distances are those of a search that rebuilds its indexes every time (a fresh engine).
  eq::session fresh;
  REQUIRE(fresh.run_text(program + "(run 8)\n", "paths.egg"));
  const auto dist = static_cast<std::size_t>(s.decl().find_function("dist"));
  CHECK(s.db().tables[dist].size() == fresh.db().tables[dist].size());
  CHECK(s.sizes() == fresh.sizes());
}

TEST_CASE("find_sorted_row: the row of a key in rows sorted by their keys", "[eqsat][core]") {
  // Rows (a, b) -> v sorted by (a, b), as the GPU engine's rebuild leaves a table.
  const std::vector<std::uint32_t> cells = {0, 5, 10, 1, 2, 11, 1, 3, 12, 1, 9, 13, 4, 0, 14};
  const auto rows = static_cast<std::uint32_t>(cells.size() / 3);
  const auto find = [&](std::uint32_t a, std::uint32_t b) {
    const std::uint32_t key[2] = {a, b};
    return eq::detail::find_sorted_row(cells.data(), rows, 3, key);
  };
  CHECK(find(0, 5) == 0);
  CHECK(find(1, 2) == 1);
  CHECK(find(1, 3) == 2);
  CHECK(find(1, 9) == 3);
  CHECK(find(4, 0) == 4);
  CHECK(find(1, 4) == rows);  // between two rows of one first key
  CHECK(find(0, 0) == rows);  // before every row
  CHECK(find(5, 0) == rows);  // after every row
  CHECK(eq::detail::find_sorted_row(cells.data(), 0, 3, cells.data()) == 0);  // no rows
}

TEST_CASE("gpu_resident_check: the state moves when the device holds every value",
          "[eqsat][core][device_plan]") {
  const auto check = [](const std::string& program) {
    eq::session s;
    REQUIRE(s.run_text(program, "t.egg"));
    return eq::gpu_resident_check(s.decl(), s.db());
  };
  const std::string base =
      "(datatype M (Num i64) (Mul M M))\n(function lo (M) i64 :merge (max old new))\n"
      "(Mul (Num 2) (Num -3))\n";
  CHECK(check(base + "(set (lo (Num 2)) 2)\n"));
  const auto negative = check(base + "(set (lo (Num 2)) -2)\n");
  REQUIRE_FALSE(negative);
  CHECK(negative.error().code() == vyre::errc::unsupported);
  CHECK(negative.error().message().find("lo") != std::string::npos);
  const auto summed = check(
      "(datatype M (Num i64))\n(function n (M) i64 :merge (+ old new))\n(set (n (Num 1)) 1)\n");
  REQUIRE_FALSE(summed);
  CHECK(summed.error().code() == vyre::errc::unsupported);
  CHECK(summed.error().message().find("merged by min, max") != std::string::npos);
}

TEST_CASE("device plan: the size class of a rule (narrow or wide) and the wide class's limit",
          "[eqsat][core][device_plan]") {
  namespace dev = eq::device;
  // A rewrite; a chain of `n` atoms; a make of a 10-argument row from a narrow query; a rule
  // appending 18 rows per match.
  const auto chain = [](int n) {
    std::string atoms, top = "(Z)";
    for (int i = 0; i + 1 < n; ++i)
      atoms += "(= x" + std::to_string(i) + " (S x" + std::to_string(i + 1) + ")) ";
    return "(rule (" + atoms + "(= x" + std::to_string(n - 1) + " (Z))) ((S x0)))\n";
  };
  std::string tower = "t";
  for (int i = 0; i < 18; ++i) tower = "(S " + tower + ")";
  const std::string text =
      "(datatype N (Z) (S N))\n(constructor W (N N N N N N N N N N) N)\n"
      "(rewrite (S (S x)) (S x))\n" +
      chain(11) + "(rule ((= t (S (Z)))) ((W t t t t t t t t t t)))\n" + "(rule ((= t (S (Z)))) (" +
      tower + "))\n" + chain(129);
  const planned_program p(text);
  REQUIRE(p.decl().rules.size() == 5);
  const auto rewrite = p.plan(0), joined = p.plan(1), made = p.plan(2), appended = p.plan(3);
  REQUIRE(rewrite);
  CHECK(rewrite->query_fits<dev::narrow_limits>());
  CHECK(rewrite->actions_fit<dev::narrow_limits>());
  REQUIRE(joined);  // 11 atoms: the wide query, a narrow head
  CHECK(joined->atoms.size() == 11);
  CHECK_FALSE(joined->query_fits<dev::narrow_limits>());
  CHECK(joined->query_fits<dev::wide_limits>());
  CHECK(joined->actions_fit<dev::narrow_limits>());
  REQUIRE(made);  // a row of 11 columns: a narrow query, the wide head
  CHECK(made->query_fits<dev::narrow_limits>());
  CHECK_FALSE(made->actions_fit<dev::narrow_limits>());
  CHECK(made->actions_fit<dev::wide_limits>());
  REQUIRE(appended);  // 18 rows per match
  CHECK(appended->step_count() == 18);
  CHECK_FALSE(appended->actions_fit<dev::narrow_limits>());
  CHECK(appended->actions_fit<dev::wide_limits>());
  // 129 atoms: refused, naming the count and the limit.
  const auto refused = p.plan(4);
  REQUIRE_ERROR_WITH(refused, vyre::errc::unsupported, "atoms=129");
  CHECK(refused.error().message().find("max=128") != std::string::npos);
}

TEST_CASE("gpu engine: which programs keep timestamps on the device, and move with :merge new",
          "[eqsat][core][device_plan]") {
  const auto decl_of = [](const std::string& program, eq::session& s) -> const eq::declarations& {
    REQUIRE(s.run_text(program, "t.egg"));
    return s.decl();
  };
  namespace dev = eq::device;
  // Constructors and rewrites alone match naively (no timestamps); a function, a relation or
  // a delete makes the device keep them and search seminaively.
  eq::session rewrites, relation, function, deleting;
  CHECK_FALSE(dev::keeps_timestamps(
      decl_of("(datatype M (Num i64) (Add M M))\n(rewrite (Add a b) (Add b a))\n", rewrites)));
  CHECK(dev::keeps_timestamps(decl_of("(relation edge (i64 i64))\n", relation)));
  CHECK(dev::keeps_timestamps(decl_of("(function f (i64) i64 :merge new)\n", function)));
  CHECK(dev::keeps_timestamps(
      decl_of("(datatype M (Num i64))\n(rule ((= e (Num 0))) ((delete (Num 0))))\n", deleting)));
  // A function merged by `new` holds any value (the device compares its values for equality
  // only): the state moves with a negative i64 in it, where a max-merged function's stays.
  eq::session replaced;
  const eq::declarations& decl = decl_of(
      "(datatype M (Num i64))\n(function last (M) i64 :merge new)\n(set (last (Num 1)) -5)\n",
      replaced);
  CHECK(eq::gpu_resident_check(decl, replaced.db()));
  CHECK_FALSE(dev::orders_i64(decl, static_cast<std::uint32_t>(decl.find_function("last"))));
}

namespace {

//! An offload that refuses ruleset "held" (saying why) and takes every other ruleset only to
//! hand each iteration back.
class refusing_offload final : public eq::iteration_offload {
 public:
  bool accepts(const eq::declarations& decl, const eq::database&, std::uint32_t ruleset,
               std::string& why) override {
    if (decl.rulesets[ruleset].name != "held") return true;
    why = "held here on purpose";
    return false;
  }
  vyre::expected<eq::iteration_report> run_iteration(const eq::declarations&, eq::database&,
                                                     std::uint32_t,
                                                     const eq::iteration_limits&) override {
    eq::iteration_report r;
    r.stopped = eq::iteration_stop::handed_to_cpu;
    return r;
  }
  bool holds_state() const override { return false; }
  vyre::expected<void> sync(const eq::declarations&, eq::database&, unsigned) override {
    return {};
  }
  std::vector<std::uint64_t> sizes() const override { return {}; }
  std::uint64_t eclasses() const override { return 0; }
  const char* name() const override { return "fake"; }
  std::string handback_reason() const override { return "handed back on purpose"; }
};

}  // namespace

TEST_CASE("session: an iteration the offload refuses or hands back records why", "[eqsat][core]") {
  const std::string program =
      "(datatype M (F M) (A))\n(ruleset held)\n"
      "(rewrite (F x) (F (F x)) :ruleset held)\n(rewrite (F x) x)\n"
      "(F (A))\n(run held 1)\n(run 1)\n";
  eq::session_options with;
  with.offload = std::make_shared<refusing_offload>();
  eq::session s(with);
  REQUIRE(s.run_text(program, "t.egg"));
  REQUIRE(s.iterations().size() == 2);
  CHECK(s.iterations()[0].device == "cpu");
  CHECK(s.iterations()[0].cpu_reason == "held here on purpose");
  CHECK(s.iterations()[1].device == "cpu");
  CHECK(s.iterations()[1].cpu_reason == "handed back on purpose");
  eq::session plain;  // no offload: nothing to explain
  REQUIRE(plain.run_text(program, "t.egg"));
  REQUIRE(plain.iterations().size() == 2);
  for (const eq::iteration_record& r : plain.iterations()) CHECK(r.cpu_reason.empty());
}
