// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::extractor`: the cheapest term of a value (egglog's tree cost) and its text.
//!
//! Cost model (egglog's default): a constructor row costs its `:cost` (1 unless declared)
//! plus its arguments' costs; a primitive value costs 1; a container costs the sum of its
//! elements' (a multiset's repeats counted, a map's keys and values, an UnstableFn's captured
//! arguments); sums saturate at 2^64 - 1, which prints as "infinite". Only constructor rows
//! that are extractable and not subsumed are candidates. Costs come from one Knuth-Dijkstra
//! pass: classes are settled in order of cost, a row's cost is known once its arguments are
//! settled, so the pass takes O(rows log rows) whatever the e-graph's depth.
//!
//! Terms are built as a DAG (a class's term is shared by all its uses) and printed without
//! recursion. A term whose tree would exceed `max_tree_nodes` nodes is printed with sharing:
//! one `(let tN ...)` line per shared subterm, then the root.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/primitives_base.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

inline constexpr std::uint64_t infinite_cost = ~std::uint64_t{0};

inline std::uint64_t add_cost(std::uint64_t a, std::uint64_t b) noexcept {
  return a > infinite_cost - b ? infinite_cost : a + b;
}
inline std::uint64_t mul_cost(std::uint64_t a, std::uint64_t n) noexcept {
  return n != 0 && a > infinite_cost / n ? infinite_cost : a * n;
}

//! One node of an extracted term DAG.
struct term_node {
  enum class kind : std::uint8_t { integer, real, string, boolean, unit, app } type = kind::app;
  std::int64_t integer = 0;
  double real = 0;
  std::string text;  //!< the app's head, or the string's contents
  std::vector<std::uint32_t> children;
};

struct term_dag {
  std::vector<term_node> nodes;
  //! Which DAG this is (an extractor's memo of built classes is valid for one DAG only).
  std::uint64_t serial = next_serial();
  static std::uint64_t next_serial() noexcept {
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  std::uint32_t add(term_node n) {
    nodes.push_back(std::move(n));
    return static_cast<std::uint32_t>(nodes.size() - 1);
  }
};

namespace detail {

//! Literal kinds in egglog's term order (Int < Float < String < Bool < Unit < App).
inline int term_rank(term_node::kind k) noexcept {
  return static_cast<int>(k);
}

//! egglog's term order (`TermDag::ast_cmp`): kinds, then literals by value, apps by head,
//! arity, then children left to right. Iterative over the two pre-orders.
inline int compare_terms(const term_dag& dag, std::uint32_t a, std::uint32_t b) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> todo{{a, b}};
  while (!todo.empty()) {
    const auto [x, y] = todo.back();
    todo.pop_back();
    if (x == y) continue;
    const term_node& p = dag.nodes[x];
    const term_node& q = dag.nodes[y];
    if (p.type != q.type) return term_rank(p.type) < term_rank(q.type) ? -1 : 1;
    switch (p.type) {
      case term_node::kind::integer:
        if (p.integer != q.integer) return p.integer < q.integer ? -1 : 1;
        continue;
      case term_node::kind::real: {
        const bool pn = p.real != p.real;
        const bool qn = q.real != q.real;
        if (pn || qn) {
          if (pn && qn) continue;
          return pn ? 1 : -1;
        }
        if (p.real != q.real) return p.real < q.real ? -1 : 1;
        continue;
      }
      case term_node::kind::string:
      case term_node::kind::app: {
        const int c = p.text.compare(q.text);
        if (c != 0) return c < 0 ? -1 : 1;
        if (p.children.size() != q.children.size())
          return p.children.size() < q.children.size() ? -1 : 1;
        for (std::size_t i = p.children.size(); i-- > 0;)
          todo.emplace_back(p.children[i], q.children[i]);
        continue;
      }
      case term_node::kind::boolean:
        if (p.integer != q.integer) return p.integer < q.integer ? -1 : 1;
        continue;
      case term_node::kind::unit:
        continue;
    }
  }
  return 0;
}

//! The nodes reachable from `root`, each once, children before parents and in child order
//! (an explicit stack: a term's depth does not reach the call stack).
inline std::vector<std::uint32_t> postorder(const term_dag& dag, std::uint32_t root) {
  std::vector<std::uint32_t> order;
  std::vector<std::uint8_t> seen(dag.nodes.size(), 0);
  std::vector<std::pair<std::uint32_t, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [n, done] = stack.back();
    stack.pop_back();
    if (done) {
      order.push_back(n);
      continue;
    }
    if (seen[n]) continue;
    seen[n] = 1;
    stack.emplace_back(n, true);
    for (auto it = dag.nodes[n].children.rbegin(); it != dag.nodes[n].children.rend(); ++it)
      stack.emplace_back(*it, false);
  }
  return order;
}

}  // namespace detail

//! Prints node `root` of `dag`: the whole tree when it has at most `max_tree_nodes` nodes,
//! else with `(let tN ...)` lines for the shared subterms.
inline std::string print_term(const term_dag& dag, std::uint32_t root,
                              std::uint64_t max_tree_nodes = 1u << 22) {
  // Tree sizes (saturating), children before parents: ids grow from children to parents.
  std::vector<std::uint64_t> size(dag.nodes.size(), 0);
  std::vector<std::uint32_t> uses(dag.nodes.size(), 0);
  {
    const std::vector<std::uint32_t> order = detail::postorder(dag, root);
    for (const std::uint32_t n : order) {
      std::uint64_t s = 1;
      for (const std::uint32_t c : dag.nodes[n].children) {
        s = add_cost(s, size[c]);
        ++uses[c];
      }
      size[n] = s;
    }
  }
  const bool shared = size[root] > max_tree_nodes;
  std::vector<std::int64_t> let_name(dag.nodes.size(), -1);
  std::string out;
  auto literal = [&](const term_node& n, std::string& s) {
    switch (n.type) {
      case term_node::kind::integer:
        s += std::to_string(n.integer);
        return true;
      case term_node::kind::real: {
        base_values b;
        auto v = b.from_f64(n.real);
        s += v ? format_base_value(b, sort_kind::f64, *v) : "NaN";
        return true;
      }
      case term_node::kind::string:
        s += '"';
        s += n.text;
        s += '"';
        return true;
      case term_node::kind::boolean:
        s += n.integer != 0 ? "true" : "false";
        return true;
      case term_node::kind::unit:
        s += "()";
        return true;
      case term_node::kind::app:
        return false;
    }
    return false;
  };
  // Writes node `n` into `s`, naming shared nodes by their let.
  auto write = [&](std::uint32_t top, std::string& s, bool name_top) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> stack{{top, 0}};
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      const term_node& node = dag.nodes[n];
      if (next == 0) {
        if (shared && let_name[n] >= 0 && !(name_top && n == top)) {
          s += 't';
          s += std::to_string(let_name[n]);
          stack.pop_back();
          if (!stack.empty())
            s += stack.back().second < dag.nodes[stack.back().first].children.size() ? " " : "";
          continue;
        }
        if (literal(node, s)) {
          stack.pop_back();
          if (!stack.empty())
            s += stack.back().second < dag.nodes[stack.back().first].children.size() ? " " : "";
          continue;
        }
        s += '(';
        s += node.text;
        if (!node.children.empty()) s += ' ';
      }
      if (next < node.children.size()) {
        const std::uint32_t c = node.children[next++];
        stack.emplace_back(c, 0);
        continue;
      }
      s += ')';
      stack.pop_back();
      if (!stack.empty())
        s += stack.back().second < dag.nodes[stack.back().first].children.size() ? " " : "";
    }
  };
  if (shared) {
    // Shared app nodes below the root get lets, children first.
    const std::vector<std::uint32_t> order = detail::postorder(dag, root);
    std::int64_t next_name = 0;
    for (const std::uint32_t n : order) {
      if (n == root || uses[n] < 2 || dag.nodes[n].type != term_node::kind::app) continue;
      let_name[n] = next_name++;
      out += "(let t" + std::to_string(let_name[n]) + ' ';
      write(n, out, true);
      out += ")\n";
    }
  }
  write(root, out, false);
  return out;
}

//! Costs and terms of one database state (it must not change while the extractor lives).
class extractor {
 public:
  extractor(const declarations& decl, const database& db) : decl_(decl), db_(db) { compute(); }

  //! Whether value `v` of sort `s` has a term (false when every term was subsumed or deleted).
  bool extractable(value v, std::uint32_t s) const {
    return !decl_.sorts[s].is_id || cost_.contains(db_.ids.find_const(v));
  }

  //! The cost of value `v` of sort `s`: `infinite_cost` when nothing is extractable or the
  //! cheapest term's cost reaches 2^64 - 1 (costs saturate; `extractable` tells them apart).
  std::uint64_t cost(value v, std::uint32_t s) const {
    if (!decl_.sorts[s].is_id) return 1;
    const value c = db_.ids.find_const(v);
    auto it = cost_.find(c);
    return it == cost_.end() ? infinite_cost : it->second;
  }

  //! The cheapest term of `v` into `dag`; false when it has none (subsumed or deleted away).
  bool build(term_dag& dag, value v, std::uint32_t s, std::uint32_t& out) {
    struct frame {
      value v;
      std::uint32_t sort;
      bool expanded;
    };
    std::vector<frame> stack{{v, s, false}};
    std::vector<std::uint32_t> results;
    while (!stack.empty()) {
      frame f = stack.back();
      stack.pop_back();
      const sort_info& si = decl_.sorts[f.sort];
      if (!si.is_id) {
        results.push_back(dag.add(base_term(f.v, si.kind)));
        continue;
      }
      const value c = db_.ids.find_const(f.v);
      auto memo = built_.find(c);
      if (memo != built_.end() && memo->second.first == dag.serial) {
        results.push_back(memo->second.second);
        continue;
      }
      if (!f.expanded) {
        std::vector<std::pair<value, std::uint32_t>> kids;
        if (!children(c, f.sort, kids)) return false;
        stack.push_back({f.v, f.sort, true});
        for (auto it = kids.rbegin(); it != kids.rend(); ++it)
          stack.push_back({it->first, it->second, false});
        pending_.push_back(static_cast<std::uint32_t>(kids.size()));
        continue;
      }
      const std::uint32_t k = pending_.back();
      pending_.pop_back();
      std::vector<std::uint32_t> args(results.end() - k, results.end());
      results.resize(results.size() - k);
      const std::uint32_t node = dag.add(assemble(dag, c, f.sort, std::move(args)));
      built_[c] = {dag.serial, node};
      results.push_back(node);
    }
    out = results.back();
    return true;
  }

  //! The text of the cheapest term of `v` (empty when it has none).
  std::string text(value v, std::uint32_t s) {
    term_dag dag;
    std::uint32_t root = 0;
    if (!build(dag, v, s, root)) return {};
    return print_term(dag, root);
  }

  //! Up to `n` terms of `v`'s class, one per candidate row, cheapest first (egglog's
  //! `(extract e n)`: each row with its arguments' best terms).
  std::vector<std::string> variants(value v, std::uint32_t s, std::uint64_t n) {
    std::vector<std::string> out;
    if (!decl_.sorts[s].is_id || decl_.sorts[s].kind != sort_kind::eq) {
      std::string t = text(v, s);
      if (!t.empty() && n > 0) out.push_back(std::move(t));
      return out;
    }
    const value c = db_.ids.find_const(v);
    struct cand {
      std::uint64_t cost;
      std::uint32_t f;
      std::uint32_t row;
    };
    std::vector<cand> cands;
    for (std::uint32_t f = 0; f < decl_.functions.size(); ++f) {
      if (!candidate(f)) continue;
      const table& t = db_.tables[f];
      for (std::size_t r = 0; r < t.rows(); ++r) {
        if (t.state(r) != row_state::live || db_.ids.find_const(t.value_of(r)) != c) continue;
        cands.push_back(
            {row_cost(f, static_cast<std::uint32_t>(r)), f, static_cast<std::uint32_t>(r)});
      }
    }
    std::stable_sort(cands.begin(), cands.end(), [&](const cand& a, const cand& b) {
      if (a.cost != b.cost) return a.cost < b.cost;
      const std::string& na = decl_.functions[a.f].name;
      const std::string& nb = decl_.functions[b.f].name;
      if (na != nb) return na < nb;
      const table& ta = db_.tables[a.f];
      return std::lexicographical_compare(ta.row(a.row), ta.row(a.row) + ta.width(), ta.row(b.row),
                                          ta.row(b.row) + ta.width());
    });
    for (const cand& k : cands) {
      if (out.size() >= n) break;
      if (k.cost == infinite_cost) break;
      term_dag dag;
      term_node root;
      root.text = decl_.functions[k.f].name;
      bool ok = true;
      const table& t = db_.tables[k.f];
      for (std::uint32_t a = 0; a < t.arity() && ok; ++a) {
        std::uint32_t child = 0;
        ok = build(dag, t.row(k.row)[a], decl_.functions[k.f].inputs[a], child);
        root.children.push_back(child);
      }
      if (!ok) continue;
      out.push_back(print_term(dag, dag.add(std::move(root))));
    }
    return out;
  }

 private:
  bool candidate(std::uint32_t f) const {
    const function_decl& fn = decl_.functions[f];
    return fn.kind == function_kind::constructor && !fn.unextractable && !fn.hidden;
  }

  std::uint64_t row_cost(std::uint32_t f, std::uint32_t r) const {
    const function_decl& fn = decl_.functions[f];
    const table& t = db_.tables[f];
    std::uint64_t c = fn.cost;
    for (std::uint32_t a = 0; a < t.arity(); ++a) c = add_cost(c, cost(t.row(r)[a], fn.inputs[a]));
    return c;
  }

  //! The (value, sort) arguments of container `id`: every element, a multiset's repeats
  //! listed, or (with `repeats`) each distinct element once and its count there.
  void container_children(value id, std::vector<std::pair<value, std::uint32_t>>& out,
                          std::vector<std::uint64_t>* repeats = nullptr) const {
    const container_store::entry& e = db_.containers.at(id);
    const value* x = db_.containers.contents(e);
    const sort_info& s = decl_.sorts[e.sort];
    switch (s.kind) {
      case sort_kind::vec:
      case sort_kind::set:
        for (std::uint32_t i = 0; i < e.length; ++i) out.emplace_back(x[i], s.params[0]);
        break;
      case sort_kind::multiset:
        for (std::uint32_t i = 0; i + 3 <= e.length; i += 3) {
          const std::uint64_t count = std::uint64_t{x[i + 1]} | (std::uint64_t{x[i + 2]} << 32);
          if (repeats != nullptr) {
            out.emplace_back(x[i], s.params[0]);
            repeats->resize(out.size(), 1);
            repeats->back() = count;
            continue;
          }
          // A printed multiset lists its repeats (capped: a term of 2^20 copies is already
          // more than anyone reads).
          for (std::uint64_t k = 0; k < count && k < (1u << 20); ++k)
            out.emplace_back(x[i], s.params[0]);
        }
        break;
      case sort_kind::map:
        for (std::uint32_t i = 0; i + 1 < e.length; i += 2) {
          out.emplace_back(x[i], s.params[0]);
          out.emplace_back(x[i + 1], s.params[1]);
        }
        break;
      case sort_kind::pair:
        out.emplace_back(x[0], s.params[0]);
        out.emplace_back(x[1], s.params[1]);
        break;
      case sort_kind::fn: {
        const std::vector<std::uint32_t> sorts = fn_captured_sorts(x[0], e.length - 1);
        for (std::uint32_t i = 1; i < e.length; ++i) out.emplace_back(x[i], sorts[i - 1]);
        break;
      }
      default:
        break;
    }
  }

  std::vector<std::uint32_t> fn_captured_sorts(value target, std::uint32_t n) const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i = 0; i < n; ++i) {
      if ((target & fn_target_primitive_bit) != 0)
        out.push_back(decl_.prims[target & ~fn_target_primitive_bit].arg_sort(i));
      else
        out.push_back(decl_.functions[target].inputs[i]);
    }
    return out;
  }

  bool children(value c, std::uint32_t sort,
                std::vector<std::pair<value, std::uint32_t>>& kids) const {
    if (decl_.sorts[sort].kind != sort_kind::eq) {
      if (!db_.containers.contains(c)) return false;
      container_children(c, kids);
      for (const auto& [v, s] : kids)
        if (cost(v, s) == infinite_cost) return false;
      return true;
    }
    auto it = best_.find(c);
    if (it == best_.end()) return false;
    const auto [f, r] = it->second;
    const table& t = db_.tables[f];
    for (std::uint32_t a = 0; a < t.arity(); ++a)
      kids.emplace_back(t.row(r)[a], decl_.functions[f].inputs[a]);
    return true;
  }

  term_node base_term(value v, sort_kind k) const {
    term_node n;
    switch (k) {
      case sort_kind::unit:
        n.type = term_node::kind::unit;
        break;
      case sort_kind::boolean:
        n.type = term_node::kind::boolean;
        n.integer = v != 0 ? 1 : 0;
        break;
      case sort_kind::i64:
        n.type = term_node::kind::integer;
        n.integer = db_.base.to_i64(v);
        break;
      case sort_kind::f64:
        n.type = term_node::kind::real;
        n.real = db_.base.to_f64(v);
        break;
      case sort_kind::string:
        n.type = term_node::kind::string;
        n.text = std::string(db_.base.to_string(v));
        break;
      default:
        // BigInt, BigRat: their printed form is a term of their own.
        n.type = term_node::kind::app;
        n.text = format_base_value(db_.base, k, v);
        break;
    }
    return n;
  }

  term_node assemble(term_dag& dag, value c, std::uint32_t sort,
                     std::vector<std::uint32_t> args) const {
    term_node n;
    n.type = term_node::kind::app;
    const sort_info& si = decl_.sorts[sort];
    if (si.kind == sort_kind::eq) {
      n.text = decl_.functions[best_.at(c).first].name;
      n.children = std::move(args);
      return n;
    }
    const container_store::entry& e = db_.containers.at(c);
    switch (si.kind) {
      case sort_kind::vec:
        n.text = args.empty() ? "vec-empty" : "vec-of";
        n.children = std::move(args);
        break;
      case sort_kind::set: {
        n.text = "set-of";
        std::sort(args.begin(), args.end(), [&](std::uint32_t a, std::uint32_t b) {
          return detail::compare_terms(dag, a, b) < 0;
        });
        args.erase(std::unique(args.begin(), args.end(),
                               [&](std::uint32_t a, std::uint32_t b) {
                                 return detail::compare_terms(dag, a, b) == 0;
                               }),
                   args.end());
        n.children = std::move(args);
        break;
      }
      case sort_kind::multiset:
        n.text = "multiset-of";
        std::stable_sort(args.begin(), args.end(), [&](std::uint32_t a, std::uint32_t b) {
          return detail::compare_terms(dag, a, b) < 0;
        });
        n.children = std::move(args);
        break;
      case sort_kind::map: {
        n.text = "map-of";
        std::vector<std::pair<std::uint32_t, std::uint32_t>> kv;
        for (std::size_t i = 0; i + 1 < args.size(); i += 2) kv.emplace_back(args[i], args[i + 1]);
        std::stable_sort(kv.begin(), kv.end(), [&](const auto& a, const auto& b) {
          return detail::compare_terms(dag, a.first, b.first) < 0;
        });
        for (const auto& [k, v] : kv) {
          n.children.push_back(k);
          n.children.push_back(v);
        }
        break;
      }
      case sort_kind::pair:
        n.text = "pair";
        n.children = std::move(args);
        break;
      case sort_kind::fn: {
        n.text = "unstable-fn";
        const value target = db_.containers.contents(e)[0];
        term_node name;
        name.type = term_node::kind::string;
        name.text = (target & fn_target_primitive_bit) != 0
                        ? decl_.prims[target & ~fn_target_primitive_bit].name
                        : decl_.functions[target].name;
        n.children.push_back(dag.add(std::move(name)));
        n.children.insert(n.children.end(), args.begin(), args.end());
        break;
      }
      default:
        break;
    }
    return n;
  }

  //! Knuth-Dijkstra over candidate rows and containers (see the file comment).
  void compute() {
    struct node_ref {
      std::uint32_t f;  // function, or ~0u for a container
      std::uint32_t r;  // row, or the container id
    };
    std::vector<node_ref> nodes;
    std::vector<std::uint32_t> waiting;    // unsettled id arguments per node
    std::vector<std::uint64_t> base_cost;  // the node's own cost plus its primitive arguments
    // class -> (node using it, how many times)
    std::unordered_map<value, std::vector<std::pair<std::uint32_t, std::uint64_t>>> parents;
    std::vector<std::pair<value, std::uint32_t>> kids;
    std::vector<std::uint64_t> repeats;  // per kid: how many times it counts
    auto add_node = [&](node_ref ref, std::uint64_t own) {
      const auto id = static_cast<std::uint32_t>(nodes.size());
      nodes.push_back(ref);
      std::uint64_t c = own;
      std::uint32_t w = 0;
      repeats.resize(kids.size(), 1);
      for (std::size_t k = 0; k < kids.size(); ++k) {
        const auto& [v, s] = kids[k];
        if (!decl_.sorts[s].is_id) {
          c = add_cost(c, mul_cost(1, repeats[k]));
          continue;
        }
        parents[db_.ids.find_const(v)].emplace_back(id, repeats[k]);
        ++w;
      }
      waiting.push_back(w);
      base_cost.push_back(c);
    };
    for (std::uint32_t f = 0; f < decl_.functions.size(); ++f) {
      if (!candidate(f)) continue;
      const table& t = db_.tables[f];
      for (std::size_t r = 0; r < t.rows(); ++r) {
        if (t.state(r) != row_state::live) continue;
        kids.clear();
        repeats.clear();
        for (std::uint32_t a = 0; a < t.arity(); ++a)
          kids.emplace_back(t.row(r)[a], decl_.functions[f].inputs[a]);
        add_node({f, static_cast<std::uint32_t>(r)}, decl_.functions[f].cost);
      }
    }
    std::vector<value> containers;
    db_.containers.for_each(
        [&](value id, const container_store::entry&) { containers.push_back(id); });
    std::sort(containers.begin(), containers.end());
    for (const value id : containers) {
      if (!db_.ids.is_root(id)) continue;
      kids.clear();
      repeats.clear();
      container_children(id, kids, &repeats);
      add_node({~0u, id}, 0);
    }
    // Each node's cost so far (its settled arguments added), and the queue of ready ones.
    std::vector<std::uint64_t> acc = base_cost;
    using entry = std::pair<std::uint64_t, std::uint32_t>;  // (cost, node): ties by node order
    std::priority_queue<entry, std::vector<entry>, std::greater<entry>> ready;
    for (std::uint32_t n = 0; n < nodes.size(); ++n)
      if (waiting[n] == 0) ready.emplace(acc[n], n);
    while (!ready.empty()) {
      const auto [c, n] = ready.top();
      ready.pop();
      const node_ref ref = nodes[n];
      const value out =
          ref.f == ~0u ? ref.r : db_.ids.find_const(db_.tables[ref.f].value_of(ref.r));
      if (cost_.count(out) != 0) continue;
      cost_.emplace(out, c);
      if (ref.f != ~0u) best_.emplace(out, std::make_pair(ref.f, ref.r));
      auto p = parents.find(out);
      if (p == parents.end()) continue;
      for (const auto& [m, count] : p->second) {
        acc[m] = add_cost(acc[m], mul_cost(c, count));
        if (--waiting[m] == 0) ready.emplace(acc[m], m);
      }
    }
  }

  const declarations& decl_;
  const database& db_;
  std::unordered_map<value, std::uint64_t> cost_;
  std::unordered_map<value, std::pair<std::uint32_t, std::uint32_t>> best_;
  std::unordered_map<value, std::pair<std::uint64_t, std::uint32_t>> built_;
  std::vector<std::uint32_t> pending_;
};

}  // namespace vyre::eqsat
