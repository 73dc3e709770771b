// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the bytes drive a generator of small well-typed programs (a datatype, an
// i64 analysis with a :merge, random rewrites, rules, deletions and subsumptions over it, random
// terms, runs, checks and extractions), run on the CPU engine under a node limit. Every
// generated program type checks; it may fail a check or panic (an error of the program), but
// the engine must never crash, and it must stay within the node limit.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include <vyre/eqsat/session.hpp>

namespace {

struct bytes {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  unsigned next(unsigned n) { return at < size ? data[at++] % n : 0; }
};

// Operands of one `+` are evaluated in an unspecified order: each draw is its own statement,
// so every compiler generates the same program from the same bytes.
std::string term(bytes& b, int depth);

std::string pair(const char* op, bytes& b, int depth) {
  const std::string left = term(b, depth - 1);
  const std::string right = term(b, depth - 1);
  return std::string("(") + op + " " + left + " " + right + ")";
}

std::string term(bytes& b, int depth) {
  const unsigned pick = depth <= 0 ? b.next(2) : b.next(6);
  switch (pick) {
    case 0:
      return "(Num " + std::to_string(static_cast<int>(b.next(7)) - 3) + ")";
    case 1:
      return "(V \"" + std::string(1, static_cast<char>('a' + b.next(3))) + "\")";
    case 2:
      return "(Neg " + term(b, depth - 1) + ")";
    case 3:
      return pair("Add", b, depth);
    default:
      return pair("Mul", b, depth);
  }
}

// Patterns over variables a, b, c (left) and terms over the variables they bind (right).
const char* const lhs_patterns[] = {"(Add a b)",         "(Mul a b)",
                                    "(Neg a)",           "(Add a (Add b c))",
                                    "(Mul a (Add b c))", "(Add (Num a) (Num b))",
                                    "(Neg (Neg a))",     "(Add a (Neg b))"};
const char* const rhs_for[][3] = {
    {"(Add b a)", "(Neg (Neg a))", "(Mul (Num 1) a)"},
    {"(Mul b a)", "(Add a (Num 0))", "(Neg (Mul (Neg a) b))"},
    {"(Mul (Num -1) a)", "(Neg a)", "a"},
    {"(Add (Add a b) c)", "(Add c (Add a b))", "(Add b (Add a c))"},
    {"(Add (Mul a b) (Mul a c))", "(Mul (Add c b) a)", "(Mul a (Add c b))"},
    {"(Num (+ a b))", "(Num (* a b))", "(Num (- a b))"},
    {"a", "(Neg (Neg (Neg (Neg a))))", "(Mul a (Num 1))"},
    {"(Add (Neg b) a)", "(Neg (Add (Neg a) b))", "(Add a (Neg b))"},
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eq = vyre::eqsat;
  bytes b{data, size};
  std::string p =
      "(datatype M (Num i64) (V String) (Neg M) (Add M M) (Mul M M))\n"
      "(function lo (M) i64 :merge (min old new))\n"
      "(relation seen (M))\n"
      "(ruleset other)\n";
  const unsigned rules = 1 + b.next(6);
  // A ruleset refuses a second rule of the same text (its name), as egglog does: each once.
  std::set<std::string> written;
  for (unsigned i = 0; i < rules; ++i) {
    std::string r;
    const unsigned l = b.next(8);
    const std::string rs = b.next(3) == 0 ? " :ruleset other" : "";
    switch (b.next(6)) {
      case 0: {
        // Both sides bind the same variables, so each direction is grounded.
        const unsigned both[] = {0, 3, 4, 7};
        const unsigned k = both[b.next(4)];
        r = std::string("(birewrite ") + lhs_patterns[k] + " " +
            rhs_for[k][k == 0 ? 0 : b.next(3)] + rs + ")\n";
        break;
      }
      case 1:
        r = std::string("(rule ((= e ") + lhs_patterns[l] + ")) ((seen e))" + rs + ")\n";
        break;
      case 2:
        r = std::string("(rule ((= e ") + lhs_patterns[l] + ") (seen e)) ((delete (seen e)))" + rs +
            ")\n";
        break;
      case 3:
        r = "(rule ((= e (Num n))) ((set (lo e) n))" + rs + ")\n";
        r +=
            "(rule ((= e (Add x y)) (= u (lo x)) (= v (lo y))) ((set (lo e) (+ u v)))" + rs + ")\n";
        break;
      default: {
        const unsigned rhs = b.next(3);
        const bool subsume = b.next(4) == 0;
        r = std::string("(rewrite ") + lhs_patterns[l] + " " + rhs_for[l][rhs] +
            (subsume ? " :subsume" : "") + rs + ")\n";
      }
    }
    if (written.insert(r).second) p += r;
  }
  const unsigned roots = 1 + b.next(3);
  for (unsigned i = 0; i < roots; ++i)
    p += "(let $t" + std::to_string(i) + " " + term(b, static_cast<int>(b.next(5))) + ")\n";
  const unsigned commands = 1 + b.next(8);
  for (unsigned i = 0; i < commands; ++i) {
    const std::string root = "$t" + std::to_string(b.next(roots));
    switch (b.next(7)) {
      case 0:
        p += "(run-schedule (saturate (run other)))\n";
        break;
      case 1:
        p += "(check (= " + root + " " + term(b, 2) + "))\n";
        break;
      case 2:
        p += "(extract " + root + ")\n";
        break;
      case 3:
        p += "(push)\n(run " + std::to_string(b.next(4)) + ")\n(pop)\n";
        break;
      case 4:
        p += "(union " + root + " " + term(b, 2) + ")\n";
        break;
      default:
        p += "(run " + std::to_string(1 + b.next(6)) + ")\n";
    }
  }
  p += "(print-size)\n";
  eq::session_options options;
  options.node_limit = 3000;
  // A :merge can change a value every iteration with no new row (min over a falling sum):
  // saturate never ends there, as in egglog, so the runs get a time limit too.
  options.time_limit = 1.0;
  options.threads = 1 + b.next(2);
  eq::session s(options);
  // VYRE_FUZZ_PRINT=1: the generated program on stderr, to triage a kept input.
  if (const char* print = std::getenv("VYRE_FUZZ_PRINT"); print != nullptr && *print == '1')
    std::fprintf(stderr, "%s", p.c_str());
  auto r = s.run_text(p, "generated.egg");
  if (!r && r.error().code() != vyre::errc::invalid_argument) {
    // The generator writes only well-typed programs: a compile error is a bug of one or the other.
    std::fprintf(stderr, "%s\n%s\n", p.c_str(), s.describe(r.error()).c_str());
    std::abort();
  }
  if (const char* print = std::getenv("VYRE_FUZZ_PRINT"); print != nullptr && *print == '1') {
    for (const auto& out : s.outputs()) std::fprintf(stderr, "%s", out.text.c_str());
    for (const auto& it : s.iterations())
      std::fprintf(stderr, "iteration %llu: %llu rows\n",
                   static_cast<unsigned long long>(it.iteration),
                   static_cast<unsigned long long>(it.rows));
    std::fprintf(stderr, "rows %llu, stopped %d\n",
                 static_cast<unsigned long long>(s.db().total_rows()),
                 static_cast<int>(s.stopped()));
  }
  // No iteration commits past the node limit (top-level actions after a stopped run may add).
  for (const auto& it : s.iterations())
    if (it.rows > options.node_limit) std::abort();
  return 0;
}
