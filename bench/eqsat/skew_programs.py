#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Skewed egglog programs for bench_eqsat (stdout): workloads where a few e-classes or keys carry
most of the matches, so a join that gives each first-atom row one thread waits on the heaviest.

    python3 bench/eqsat/skew_programs.py adder 8 > /tmp/adder8.egg     # boolean algebra
    python3 bench/eqsat/skew_programs.py acsum 10 > /tmp/acsum10.egg   # AC over a long sum
    python3 bench/eqsat/skew_programs.py fold 10 > /tmp/fold10.egg     # AC + constant folding
    python3 bench/eqsat/skew_programs.py closure 3000 > /tmp/tc.egg    # Datalog, power-law
    python3 bench/eqsat/skew_programs.py interval 9 > /tmp/iv9.egg     # AC + an analysis
    python3 bench/eqsat/skew_programs.py sssp 20000 > /tmp/sssp.egg    # shortest paths
    bench_eqsat --program /tmp/adder8.egg --iterations 6

adder N: an N-bit ripple-carry adder's sum and carry bits as And/Or/Not terms over variables,
  under commutativity, distributivity, De Morgan, absorption and double negation. Distributivity
  and De Morgan make classes with thousands of members, and (And a (Or b c)) then joins a heavy
  class with each of its members' children.
acsum N: the sum x0 + ... + x(N-1) under commutativity and associativity: the class of the whole
  sum collects every bracketing of every order, the classic exponential AC blow-up.
fold N: the sum of the products i * (i + 1), i = 1 .. N, under commutativity, associativity and
  constant folding of + and * (i64 primitives in the rules' actions): every subset's partial sum
  becomes a number, so the folded classes grow with the AC blow-up.
closure N: transitive closure over a deterministic power-law graph of N nodes (preferential
  attachment, 2 out-edges a node, one in 20 of them also reversed, which makes cycles through
  the hubs): a few hubs hold most of the edges, so the join of (path a b) with (edge b c) is
  dominated by the hubs' keys.
interval N: acsum's sum with an interval analysis: functions lo and hi merged by max and min,
  read by a five-atom query per Add row (the row and its children's bounds) and set by its
  actions, so every class of the AC blow-up gets its bounds.
sssp N: shortest distances from node 0 over N nodes with three pseudo-random edges each, both
  ways, weights 1-9 (a function of i64 merged by min over a relation of weighted edges, the
  graph made by the program's own rulesets first): an iteration relaxes every edge, and late
  iterations only lower distances.
"""
import random
import sys


def adder(bits):
    out = ["(datatype B (Var String) (And B B) (Or B B) (Not B))",
           "(rewrite (And a b) (And b a))",
           "(rewrite (Or a b) (Or b a))",
           "(rewrite (And a (Or b c)) (Or (And a b) (And a c)))",
           "(rewrite (Or a (And b c)) (And (Or a b) (Or a c)))",
           "(rewrite (Not (And a b)) (Or (Not a) (Not b)))",
           "(rewrite (Not (Or a b)) (And (Not a) (Not b)))",
           "(rewrite (And a (Or a b)) a)",
           "(rewrite (Or a (And a b)) a)",
           "(rewrite (Not (Not a)) a)"]

    def xor(x, y):
        return f"(Or (And {x} (Not {y})) (And (Not {x}) {y}))"

    carry = '(Var "c0")'
    for i in range(bits):
        a, b = f'(Var "a{i}")', f'(Var "b{i}")'
        out.append(f"(let $p{i} {xor(a, b)})")
        out.append(f"(let $s{i} {xor(f'$p{i}', carry)})")
        out.append(f"(let $c{i + 1} (Or (And {a} {b}) (And {carry} $p{i})))")
        carry = f"$c{i + 1}"
    return out


def acsum(n):
    """The rules, then `$sum`: interval(n) adds its analysis in between."""
    term = "(X 0)"
    for i in range(1, n):
        term = f"(Add {term} (X {i}))"
    return ["(datatype E (X i64) (Add E E))",
            "(rewrite (Add a b) (Add b a))",
            "(rewrite (Add a (Add b c)) (Add (Add a b) c))",
            f"(let $sum {term})"]


def fold(n):
    out = ["(datatype E (Num i64) (Add E E) (Mul E E))",
           "(rewrite (Add a b) (Add b a))",
           "(rewrite (Add a (Add b c)) (Add (Add a b) c))",
           "(rewrite (Add (Num a) (Num b)) (Num (+ a b)))",
           "(rewrite (Mul (Num a) (Num b)) (Num (* a b)))"]
    term = "(Mul (Num 1) (Num 2))"
    for i in range(2, n + 1):
        term = f"(Add {term} (Mul (Num {i}) (Num {i + 1})))"
    out.append(f"(let $sum {term})")
    return out


def closure(n):
    out = ["(relation edge (i64 i64))",
           "(relation path (i64 i64))",
           "(rule ((edge a b)) ((path a b)))",
           "(rule ((path a b) (edge b c)) ((path a c)))"]
    out += [f"(edge {u} {v})" for u, v in graph(n)]
    return out


def interval(n):
    program = acsum(n)
    return program[:1] + [
        "(function lo (E) i64 :merge (max old new))",
        "(function hi (E) i64 :merge (min old new))",
        "(rule ((= e (X i))) ((set (lo e) i) (set (hi e) (+ i 10))))",
        "(rule ((= e (Add a b)) (= la (lo a)) (= lb (lo b)) (= ha (hi a)) (= hb (hi b)))"
        " ((set (lo e) (+ la lb)) (set (hi e) (+ ha hb))))"] + program[1:]


def graph(n):
    """closure's power-law graph: (u, v) pairs."""
    rng = random.Random(20261127)
    edges = [(1, 0)]
    targets = [0, 1]  # every edge's endpoint once: picking from it is preferential attachment
    for v in range(2, n):
        for _ in range(2):
            u = rng.choice(targets)
            if u != v:
                edges.append((v, u))
                if rng.random() < 0.05:
                    edges.append((u, v))
                targets.append(u)
        targets.append(v)
    return edges


def sssp(n):
    # The graph is made by rules, not written as facts: egglog 13.2.0 takes a command per fact
    # in time and memory that grow with the database (0.6 s and 525 MB for 2,000 edges).
    out = ["(relation node (i64))",
           "(relation edge (i64 i64 i64))",
           "(function dist (i64) i64 :merge (min old new))",
           "(ruleset grow)",
           "(node 0)"]
    k = 1
    while k < n:  # nodes 0 .. n-1, doubling: log2(n) iterations
        out.append(f"(rule ((node i) (< (+ i {k}) {n})) ((node (+ i {k}))) :ruleset grow)")
        k *= 2
    # Three pseudo-random out-edges per node and their reverses, weights 1-9; node i / 2 makes
    # the low nodes hubs.
    out.append("(ruleset wire)")
    targets = [f"(/ i 2)", f"(% (+ (* i 7919) 13) {n})", f"(% (+ (* i 104729) 7) {n})"]
    for j, t in enumerate(targets):
        w = f"(+ (% (+ i {j * 3}) 9) 1)"
        out.append(f"(rule ((node i) (= t {t}) (= w {w})) ((edge i t w) (edge t i w)) "
                   f":ruleset wire)")
    out += ["(run grow %d)" % max(1, (n - 1).bit_length()), "(run wire 1)",
            "(rule ((= d (dist a)) (edge a b w)) ((set (dist b) (+ d w))))",
            "(set (dist 0) 0)"]
    return out


def main():
    kinds = {"adder": adder, "acsum": acsum, "fold": fold, "closure": closure,
             "interval": interval, "sssp": sssp}
    if len(sys.argv) != 3 or sys.argv[1] not in kinds:
        sys.exit("usage: skew_programs.py adder|acsum|fold|closure|interval|sssp SIZE")
    print("\n".join(kinds[sys.argv[1]](int(sys.argv[2]))))


if __name__ == "__main__":
    main()
