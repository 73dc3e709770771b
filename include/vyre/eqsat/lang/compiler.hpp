// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::lang::compiler`: egglog's declarations, rules, queries, actions and schedules,
//! type checked and lowered to the IR (`ir.hpp`) against what the program declared so far.
//!
//! Type checking follows egglog: every literal, global and function argument or result gives
//! a sort; variables take the sort of where they are used; a primitive name may have several
//! overloads, and one is chosen once the known sorts leave exactly one (repeated until nothing
//! changes); whatever is still unknown or ambiguous then is an error naming it. A query is
//! flattened into table atoms and primitive atoms (`(= x (Add a b))` is the atom
//! `Add(a, b) = x`); a variable must be **grounded**: it appears in a table atom, or is the
//! result of a primitive whose arguments are grounded. A seminaive rule's actions may not read
//! a `function`'s value (egglog forbids it: seminaive evaluation would miss later changes);
//! `:naive` rules, top-level actions and `:merge` may.
//!
//! Every error is one `vyre::error` (`errc::parse`) with the span's `file`, `line` and `col`,
//! the offending name as subject and a fix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/lang/sexpr.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/primitives_base.hpp"
#include "vyre/eqsat/primitives_containers.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat::lang {

//! A global `let`: its sort and value (ids are canonicalized where used).
struct global_binding {
  std::uint32_t sort = 0;
  value v = 0;
  source_span span;
};

//! Front-end state beside the declarations (a `push` copies it with them).
struct scope {
  std::unordered_map<std::string, global_binding> globals;
  //! Every name a declaration took (sorts, functions, globals with and without `$`, rulesets):
  //! egglog allows no shadowing of them.
  std::unordered_map<std::string, source_span> taken;
  VYRE_HOST_SPECIAL_MEMBERS(scope);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(scope);

//! A compiled expression to evaluate once (a `let`, an `extract`): its actions and result.
struct compiled_expr {
  action_block block;
  operand result;
  std::uint32_t sort = 0;
  VYRE_HOST_SPECIAL_MEMBERS(compiled_expr);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(compiled_expr);

namespace detail {

inline bool starts_with(std::string_view s, std::string_view p) noexcept {
  return s.size() >= p.size() && s.substr(0, p.size()) == p;
}

inline std::string strip_dollar(std::string_view s) {
  return std::string(starts_with(s, "$") ? s.substr(1) : s);
}

//! A typed expression node of one rule, query or action block.
struct tnode {
  enum class kind : std::uint8_t { variable, literal, global, call } type = kind::variable;
  enum class callee : std::uint8_t {
    none,
    function,
    primitive,
    fn_value
  } target_kind = callee::none;
  std::uint32_t src = 0;  // sexpr node, for spans
  std::string name;
  std::vector<std::uint32_t> args;
  std::uint32_t tv = 0;
  std::uint32_t sort = 0;  // literal and global
  value v = 0;             // literal and global
  std::uint32_t target = 0;
  std::vector<std::uint32_t> candidates;
  bool resolved = false;
  bool in_query = false;
};

}  // namespace detail

class compiler {
 public:
  //! Compiles forms of `tree` (one source file) into `decl` and `env`.
  compiler(declarations& decl, scope& env, const sexpr_tree& tree)
      : decl_(decl), env_(env), tree_(tree) {}

  // ------------------------------------------------------------------ declarations --------

  //! `(sort Name)` or `(sort Name (Container Sort ...))`.
  expected<void> declare_sort(std::uint32_t form) {
    const std::uint32_t n = tree_.size(form);
    if (n < 2 || n > 3 || !tree_.is_symbol(tree_.child(form, 1)))
      return fail(at(form, "(sort Name) or (sort Name (Container Sort ...)) expected", "sort",
                     "write (sort Name) for a datatype, (sort Name (Vec i64)) for a container"));
    const std::uint32_t name_node = tree_.child(form, 1);
    const std::string name(tree_.name(name_node));
    VYRE_TRY(take_name(name, name_node));
    if (n == 2) {
      add_sort(name, sort_kind::eq, {});
      return {};
    }
    const std::uint32_t spec = tree_.child(form, 2);
    const std::string_view container = tree_.head(spec);
    struct presort {
      const char* name;
      sort_kind kind;
      std::uint32_t params;
    };
    constexpr presort presorts[] = {
        {"Vec", sort_kind::vec, 1},           {"Set", sort_kind::set, 1},
        {"MultiSet", sort_kind::multiset, 1}, {"Map", sort_kind::map, 2},
        {"Pair", sort_kind::pair, 2},         {"UnstableFn", sort_kind::fn, 2}};
    const presort* found = nullptr;
    for (const presort& p : presorts)
      if (container == p.name) found = &p;
    if (found == nullptr)
      return fail(at(spec, "unknown container sort", container.empty() ? "?" : container,
                     "use Vec, Set, MultiSet, Map, Pair or UnstableFn"));
    if (tree_.size(spec) != found->params + 1)
      return fail(at(spec, "wrong number of sorts for the container", container,
                     "Vec, Set and MultiSet take one sort; Map and Pair two; UnstableFn "
                     "((inputs ...) output)"));
    std::vector<std::uint32_t> params;
    if (found->kind == sort_kind::fn) {
      const std::uint32_t inputs = tree_.child(spec, 1);
      if (!tree_.is_list(inputs))
        return fail(at(inputs, "UnstableFn's inputs must be a list of sorts", "UnstableFn",
                       "write (UnstableFn (i64 Math) Math), or () for no inputs"));
      for (std::uint32_t i = 0; i < tree_.size(inputs); ++i) {
        VYRE_TRY_ASSIGN(const std::uint32_t s, sort_named(tree_.child(inputs, i)));
        params.push_back(s);
      }
      VYRE_TRY_ASSIGN(const std::uint32_t out, sort_named(tree_.child(spec, 2)));
      params.push_back(out);
    } else {
      for (std::uint32_t i = 1; i <= found->params; ++i) {
        VYRE_TRY_ASSIGN(const std::uint32_t s, sort_named(tree_.child(spec, i)));
        params.push_back(s);
      }
    }
    add_sort(name, found->kind, std::move(params));
    return {};
  }

  //! `(datatype Name (Ctor Sort ... [:cost k] [:unextractable]) ...)`.
  expected<void> declare_datatype(std::uint32_t form) {
    const std::uint32_t n = tree_.size(form);
    if (n < 2 || !tree_.is_symbol(tree_.child(form, 1)))
      return fail(at(form, "(datatype Name variant ...) expected", "datatype",
                     "write (datatype Name (Ctor Sort ...) ...)"));
    const std::uint32_t name_node = tree_.child(form, 1);
    const std::string name(tree_.name(name_node));
    VYRE_TRY(take_name(name, name_node));
    const std::uint32_t sort = add_sort(name, sort_kind::eq, {});
    for (std::uint32_t i = 2; i < n; ++i)
      VYRE_TRY(declare_variant(tree_.child(form, i), sort, true));
    return {};
  }

  //! `(datatype* (Name variant ...) (sort Name (Container ...)) ...)`: every datatype sort
  //! first, then the container sorts, then the constructors (mutual recursion).
  expected<void> declare_datatypes(std::uint32_t form) {
    const std::uint32_t n = tree_.size(form);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> datatypes;  // (item, sort)
    for (std::uint32_t i = 1; i < n; ++i) {
      const std::uint32_t item = tree_.child(form, i);
      if (tree_.head(item) == "sort") continue;
      if (!tree_.is_list(item) || tree_.size(item) == 0 || !tree_.is_symbol(tree_.child(item, 0)))
        return fail(at(item, "a datatype* item must be (Name variant ...) or (sort ...)",
                       "datatype*", "write (datatype* (Name (Ctor Sort ...) ...) ...)"));
      const std::uint32_t name_node = tree_.child(item, 0);
      const std::string name(tree_.name(name_node));
      VYRE_TRY(take_name(name, name_node));
      datatypes.emplace_back(item, add_sort(name, sort_kind::eq, {}));
    }
    for (std::uint32_t i = 1; i < n; ++i) {
      const std::uint32_t item = tree_.child(form, i);
      if (tree_.head(item) == "sort") VYRE_TRY(declare_sort(item));
    }
    for (const auto& [item, sort] : datatypes)
      for (std::uint32_t v = 1; v < tree_.size(item); ++v)
        VYRE_TRY(declare_variant(tree_.child(item, v), sort, false));
    return {};
  }

  //! `(constructor Name (Sort ...) Output [:cost k] [:unextractable])`.
  expected<void> declare_constructor(std::uint32_t form) {
    function_decl fn;
    fn.merge = merge_kind::unite;
    VYRE_TRY(
        signature(form, function_kind::constructor, "(constructor Name (Sort ...) Output) expected",
                  "write (constructor Name (Sort ...) Output [:cost k] [:unextractable])", fn));
    if (decl_.sorts[fn.output].kind != sort_kind::eq)
      return fail(at(tree_.child(form, 3), "a constructor's output must be a datatype sort",
                     fn.name,
                     "declare the output with (sort Name) or (datatype ...); use `function` "
                     "for a primitive output"));
    for (std::uint32_t i = 4; i < tree_.size(form); ++i) {
      const std::uint32_t opt = tree_.child(form, i);
      VYRE_TRY_ASSIGN(const bool taken, extraction_option(form, i, fn));
      if (!taken)
        return fail(at(opt, "unknown constructor option", tree_.name(opt),
                       "a constructor takes :cost k and :unextractable"));
    }
    VYRE_TRY(take_name(fn.name, tree_.child(form, 1)));
    add_function(std::move(fn));
    return {};
  }

  //! `(function Name (Sort ...) Output :merge expr | :no-merge [:unextractable])`.
  expected<void> declare_function(std::uint32_t form) {
    function_decl fn;
    fn.unextractable = true;
    VYRE_TRY(signature(form, function_kind::function,
                       "(function Name (Sort ...) Output :merge expr) expected",
                       "write (function Name (Sort ...) Output :merge expr) or :no-merge", fn));
    std::optional<std::uint32_t> merge_expr;
    bool no_merge = false;
    const std::uint32_t n = tree_.size(form);
    for (std::uint32_t i = 4; i < n; ++i) {
      const std::uint32_t opt = tree_.child(form, i);
      if (tree_.is_symbol(opt, ":no-merge")) {
        no_merge = true;
      } else if (tree_.is_symbol(opt, ":merge") && i + 1 < n) {
        merge_expr = tree_.child(form, ++i);
      } else {
        VYRE_TRY_ASSIGN(const bool taken, extraction_option(form, i, fn));
        if (!taken)
          return fail(at(opt, "unknown function option", tree_.name(opt),
                         "a function takes :merge expr or :no-merge, and :unextractable"));
      }
    }
    if (merge_expr && no_merge)
      return fail(
          at(form, "a function has both :merge and :no-merge", fn.name, "keep one of them"));
    if (!merge_expr && !no_merge)
      return fail(at(form, "a function must say how two values for one key merge", fn.name,
                     "add :merge expr (over old and new, e.g. (min old new)) or :no-merge"));
    VYRE_TRY(take_name(fn.name, tree_.child(form, 1)));
    if (no_merge) {
      fn.merge = merge_kind::none;
    } else {
      fn.merge = merge_kind::expression;
      VYRE_TRY(compile_merge(*merge_expr, fn));
    }
    add_function(std::move(fn));
    return {};
  }

  //! `(relation Name (Sort ...))`: a constructor whose output sort cannot be united.
  expected<void> declare_relation(std::uint32_t form) {
    if (tree_.size(form) != 3 || !tree_.is_symbol(tree_.child(form, 1)) ||
        !tree_.is_list(tree_.child(form, 2)))
      return fail(at(form, "(relation Name (Sort ...)) expected", "relation",
                     "write (relation Name (Sort ...))"));
    const std::string name(tree_.name(tree_.child(form, 1)));
    VYRE_TRY(take_name(name, tree_.child(form, 1)));
    function_decl fn;
    fn.name = name;
    fn.kind = function_kind::constructor;
    fn.relation = true;
    fn.merge = merge_kind::unite;
    fn.span = span(form);
    const std::uint32_t inputs = tree_.child(form, 2);
    for (std::uint32_t i = 0; i < tree_.size(inputs); ++i) {
      VYRE_TRY_ASSIGN(const std::uint32_t s, sort_named(tree_.child(inputs, i)));
      fn.inputs.push_back(s);
    }
    const std::uint32_t sort = add_sort("@" + name + "Sort", sort_kind::eq, {});
    decl_.sorts[sort].unionable = false;
    fn.output = sort;
    add_function(std::move(fn));
    return {};
  }

  //! `(ruleset Name)`.
  expected<void> declare_ruleset(std::uint32_t form) {
    if (tree_.size(form) != 2 || !tree_.is_symbol(tree_.child(form, 1)))
      return fail(at(form, "(ruleset Name) expected", "ruleset", "write (ruleset Name)"));
    const std::string name(tree_.name(tree_.child(form, 1)));
    VYRE_TRY(take_name(name, tree_.child(form, 1)));
    add_ruleset(name);
    return {};
  }

  //! `(unstable-combined-ruleset Name Member ...)`.
  expected<void> declare_combined_ruleset(std::uint32_t form) {
    if (tree_.size(form) < 2 || !tree_.is_symbol(tree_.child(form, 1)))
      return fail(at(form, "(unstable-combined-ruleset Name Ruleset ...) expected",
                     "unstable-combined-ruleset", "name the combined ruleset and its members"));
    const std::string name(tree_.name(tree_.child(form, 1)));
    std::vector<std::uint32_t> members;
    for (std::uint32_t i = 2; i < tree_.size(form); ++i) {
      VYRE_TRY_ASSIGN(const std::uint32_t rs, ruleset_named(tree_.child(form, i)));
      members.push_back(rs);
    }
    VYRE_TRY(take_name(name, tree_.child(form, 1)));
    const std::uint32_t id = add_ruleset(name);
    decl_.rulesets[id].is_combined = true;
    decl_.rulesets[id].combined = std::move(members);
    return {};
  }

  // ------------------------------------------------------------------ rules ---------------

  //! `(rule (fact ...) (action ...) [:ruleset R] [:name "n"] [:naive] [:unsafe-seminaive])`.
  expected<void> add_rule(std::uint32_t form) {
    const std::uint32_t n = tree_.size(form);
    if (n < 3 || !tree_.is_list(tree_.child(form, 1)) || !tree_.is_list(tree_.child(form, 2)))
      return fail(at(form, "(rule (fact ...) (action ...)) expected", "rule",
                     "write (rule (fact ...) (action ...) [:ruleset R])"));
    rule_options opts;
    VYRE_TRY(parse_rule_options(form, 3, opts, false));
    std::vector<std::uint32_t> facts;
    std::vector<std::uint32_t> acts;
    const std::uint32_t body = tree_.child(form, 1);
    const std::uint32_t head = tree_.child(form, 2);
    for (std::uint32_t i = 0; i < tree_.size(body); ++i) facts.push_back(tree_.child(body, i));
    for (std::uint32_t i = 0; i < tree_.size(head); ++i) acts.push_back(tree_.child(head, i));
    rule_source src;
    src.facts = facts;
    src.actions = acts;
    return finish_rule(form, src, opts, opts.name.empty() ? std::string(text_of(form)) : opts.name);
  }

  //! `(rewrite lhs rhs [:when (fact ...)] [:ruleset R] [:subsume] [:name "n"])`, and
  //! `birewrite` (both directions, no :subsume).
  expected<void> add_rewrite(std::uint32_t form, bool both) {
    const std::uint32_t n = tree_.size(form);
    const char* what = both ? "birewrite" : "rewrite";
    if (n < 3)
      return fail(at(form, "a rewrite needs a left-hand and a right-hand side", what,
                     "write (rewrite lhs rhs [:when (fact ...)] [:ruleset R])"));
    rule_options opts;
    VYRE_TRY(parse_rule_options(form, 3, opts, true));
    if (both && opts.subsume)
      return fail(at(form, "birewrite takes no :subsume", what, "use two rewrites"));
    const std::string base = opts.name.empty() ? std::string(text_of(form)) : opts.name;
    for (int dir = 0; dir < (both ? 2 : 1); ++dir) {
      rule_source src;
      src.lhs = tree_.child(form, dir == 0 ? 1 : 2);
      src.rhs = tree_.child(form, dir == 0 ? 2 : 1);
      src.rewrite = true;
      src.subsume = opts.subsume;
      src.facts = opts.when;
      if (opts.subsume && tree_.head(src.lhs).empty())
        return fail(at(src.lhs, "a :subsume rewrite's left-hand side must be a call", what,
                       "write the left-hand side as (Ctor ...)"));
      VYRE_TRY(finish_rule(form, src, opts, both ? base + (dir == 0 ? "=>" : "<=") : base));
    }
    return {};
  }

  // ------------------------------------------------------------------ queries, actions ----

  //! The facts `items` as a query (`check`, `:until`; subsumed rows count there).
  expected<query> compile_facts(const std::vector<std::uint32_t>& items) {
    rule_source src;
    src.facts = items;
    query q;
    VYRE_TRY(compile_top_level(src, q, nullptr));
    return q;
  }

  //! Top-level actions (`union`, `set`, `delete`, a term ...), run once.
  expected<action_block> compile_actions(const std::vector<std::uint32_t>& items) {
    rule_source src;
    src.actions = items;
    query q;
    action_block block;
    VYRE_TRY(compile_top_level(src, q, &block));
    return block;
  }

  //! One expression to evaluate (a `let` or `extract` operand). `expected_sort` (~0u: any).
  expected<compiled_expr> compile_expr(std::uint32_t item, std::uint32_t expected_sort = ~0u) {
    rule_source src;
    src.value = item;
    typing t(*this, prim_context::read, prim_context::full);
    VYRE_TRY(t.read(src));
    if (expected_sort != ~0u) VYRE_TRY(t.require_sort(t.value_node, expected_sort));
    VYRE_TRY(t.solve());
    query q;
    VYRE_TRY(t.lower_query(q, nullptr));
    compiled_expr out;
    VYRE_TRY(t.lower_actions(q, out.block, false));
    VYRE_TRY_ASSIGN(out.result, t.lower_value(out.block));
    out.sort = t.sort_of_node(t.value_node);
    return out;
  }

  // ------------------------------------------------------------------ schedules -----------

  //! `(run [R] N [:until fact ...])`.
  expected<schedule> compile_run(std::uint32_t form) {
    const std::uint32_t n = tree_.size(form);
    schedule s;
    std::uint32_t i = 1;
    std::uint32_t ruleset = 0;
    if (n >= 3 && tree_.is_symbol(tree_.child(form, 1)) &&
        tree_[tree_.child(form, 2)].kind == sexpr_kind::integer) {
      VYRE_TRY_ASSIGN(ruleset, ruleset_named(tree_.child(form, 1)));
      i = 2;
    }
    if (i >= n || tree_[tree_.child(form, i)].kind != sexpr_kind::integer ||
        tree_[tree_.child(form, i)].integer < 0)
      return fail(at(form, "(run [ruleset] N) needs a non-negative iteration count", "run",
                     "write (run 10) or (run my-rules 10)"));
    const auto times = static_cast<std::uint64_t>(tree_[tree_.child(form, i)].integer);
    schedule_node run;
    run.type = schedule_node::kind::run;
    run.ruleset = ruleset;
    run.span = span(form);
    VYRE_TRY(until_clause(form, i + 1, run));
    s.nodes.push_back(std::move(run));
    schedule_node rep;
    rep.type = schedule_node::kind::repeat;
    rep.times = times;
    rep.children.push_back(0);
    rep.span = span(form);
    s.nodes.push_back(std::move(rep));
    return s;
  }

  //! `(run-schedule s ...)`: the schedules in sequence.
  expected<schedule> compile_run_schedule(std::uint32_t form) {
    schedule s;
    schedule_node seq;
    seq.type = schedule_node::kind::seq;
    seq.span = span(form);
    for (std::uint32_t i = 1; i < tree_.size(form); ++i) {
      VYRE_TRY_ASSIGN(const std::uint32_t child, schedule_item(tree_.child(form, i), s));
      seq.children.push_back(child);
    }
    s.nodes.push_back(std::move(seq));
    return s;
  }

  // ------------------------------------------------------------------ helpers -------------

  //! A front-end error at `node`.
  error at(std::uint32_t node, const char* what, std::string_view subject, const char* fix) const {
    return syntax_error(what, tree_[node].span, subject, fix);
  }
  source_span span(std::uint32_t node) const { return tree_[node].span; }
  const sexpr_tree& tree() const noexcept { return tree_; }
  declarations& decl() noexcept { return decl_; }
  scope& env() noexcept { return env_; }

  //! The sort named by symbol `node`.
  expected<std::uint32_t> sort_named(std::uint32_t node) const {
    if (!tree_.is_symbol(node))
      return fail(at(node, "a sort name expected", "", "name a declared sort, e.g. i64 or Math"));
    const std::int64_t s = decl_.find_sort(tree_.name(node));
    if (s < 0)
      return fail(at(node, "unknown sort", tree_.name(node),
                     "declare it first with (sort Name) or (datatype Name ...)"));
    return static_cast<std::uint32_t>(s);
  }

  //! The ruleset named by symbol `node`.
  expected<std::uint32_t> ruleset_named(std::uint32_t node) const {
    if (!tree_.is_symbol(node))
      return fail(
          at(node, "a ruleset name expected", "", "name a ruleset declared with (ruleset Name)"));
    auto it = decl_.ruleset_ids.find(std::string(tree_.name(node)));
    if (it == decl_.ruleset_ids.end())
      return fail(
          at(node, "unknown ruleset", tree_.name(node), "declare it first with (ruleset Name)"));
    return it->second;
  }

  //! Source text of `node`, whitespace runs folded (rule names, messages).
  std::string text_of(std::uint32_t node) const { return render(node); }

  //! Claims `name` for a declaration (egglog allows no shadowing).
  expected<void> take_name(const std::string& name, std::uint32_t node) {
    if (starts_with_at(name))
      return fail(at(node, "names starting with '@' are reserved for vyre's internal names", name,
                     "rename it"));
    if (env_.taken.count(name) != 0 || decl_.find_sort(name) >= 0)
      return fail(at(node, "the name is already declared (egglog allows no shadowing)", name,
                     "give it a fresh name"));
    env_.taken.emplace(name, span(node));
    return {};
  }

 private:
  struct rule_options {
    std::uint32_t ruleset = 0;
    std::string name;
    bool naive = false;
    bool unsafe_seminaive = false;
    bool subsume = false;
    std::vector<std::uint32_t> when;
  };

  //! What a rule is made of: facts and actions, or a rewrite's two sides; or one expression.
  struct rule_source {
    std::vector<std::uint32_t> facts;
    std::vector<std::uint32_t> actions;
    bool rewrite = false;
    bool subsume = false;
    std::uint32_t lhs = 0;
    std::uint32_t rhs = 0;
    std::optional<std::uint32_t> value;
  };

  static bool starts_with_at(std::string_view s) { return !s.empty() && s[0] == '@'; }

  //! `err` as an error of the running program (`errc::invalid_argument`), the same text.
  static error runtime_error(const error& err) {
    error out(errc::invalid_argument, err.context());
    for (int i = 0; i < err.value_count(); ++i)
      out.with(err.value_at(i).name, err.value_at(i).value);
    if (!err.subject().empty()) out.about(err.subject());
    if (err.fix_hint() != nullptr) out.fix(err.fix_hint());
    return out;
  }

  std::string render(std::uint32_t node) const {
    // Iterative rendering of the node's s-expression (names, rule texts).
    std::string out;
    struct frame {
      std::uint32_t node;
      std::uint32_t next;
    };
    std::vector<frame> stack{{node, 0}};
    while (!stack.empty()) {
      frame& f = stack.back();
      const sexpr_node& sn = tree_[f.node];
      if (sn.kind != sexpr_kind::list) {
        if (sn.kind == sexpr_kind::string) {
          out += '"';
          out += tree_.name(f.node);
          out += '"';
        } else if (sn.kind == sexpr_kind::integer) {
          out += std::to_string(sn.integer);
        } else if (sn.kind == sexpr_kind::real) {
          out += real_text(sn.real);
        } else {
          out += tree_.name(f.node);
        }
        stack.pop_back();
        if (!stack.empty() && stack.back().next < tree_.size(stack.back().node)) out += ' ';
        continue;
      }
      if (f.next == 0) out += '(';
      if (f.next < sn.count) {
        const std::uint32_t child = tree_.child(f.node, f.next++);
        stack.push_back({child, 0});
        continue;
      }
      out += ')';
      stack.pop_back();
      if (!stack.empty() && stack.back().next < tree_.size(stack.back().node)) out += ' ';
    }
    return out;
  }
  static std::string real_text(double d) {
    base_values b;
    auto v = b.from_f64(d);
    return v ? format_base_value(b, sort_kind::f64, *v) : std::string("?");
  }

  std::uint32_t add_sort(const std::string& name, sort_kind kind,
                         std::vector<std::uint32_t> params) {
    sort_info s;
    s.name = name;
    s.kind = kind;
    s.params = std::move(params);
    s.is_id = kind == sort_kind::eq || is_container(kind);
    s.holds_ids = kind == sort_kind::eq;
    for (const std::uint32_t p : s.params) s.holds_ids = s.holds_ids || decl_.sorts[p].holds_ids;
    if (kind == sort_kind::fn) s.holds_ids = true;  // captured arguments may be ids
    const auto id = static_cast<std::uint32_t>(decl_.sorts.size());
    decl_.sorts.push_back(std::move(s));
    decl_.sort_ids.emplace(name, id);
    register_sort_primitives(decl_.prims, decl_.sorts, id);
    return id;
  }

  void add_function(function_decl fn) {
    const auto id = static_cast<std::uint32_t>(decl_.functions.size());
    decl_.function_ids.emplace(fn.name, id);
    decl_.functions.push_back(std::move(fn));
  }

  std::uint32_t add_ruleset(const std::string& name) {
    const auto id = static_cast<std::uint32_t>(decl_.rulesets.size());
    ruleset_decl rs;
    rs.name = name;
    decl_.rulesets.push_back(std::move(rs));
    decl_.ruleset_ids.emplace(name, id);
    return id;
  }

  expected<std::uint64_t> cost_value(std::uint32_t node) const {
    if (tree_[node].kind != sexpr_kind::integer || tree_[node].integer < 0)
      return fail(at(node, ":cost takes a non-negative integer", "", "write :cost 5"));
    return static_cast<std::uint64_t>(tree_[node].integer);
  }

  //! Top-level `src` (read context, primitives of any context) lowered: its facts to `q`, its
  //! actions to `block` when there is one.
  expected<void> compile_top_level(rule_source& src, query& q, action_block* block) {
    typing t(*this, prim_context::read, prim_context::full);
    VYRE_TRY(t.read(src));
    VYRE_TRY(t.solve());
    VYRE_TRY(t.lower_query(q, nullptr));
    if (block != nullptr) VYRE_TRY(t.lower_actions(q, *block, false));
    return {};
  }

  //! Kind, span, name, inputs and output of `(constructor|function Name (Sort ...) Output ...)`
  //! (which one `kind` says); a form of another shape fails with `usage` and `fix`.
  expected<void> signature(std::uint32_t form, function_kind kind, const char* usage,
                           const char* fix, function_decl& fn) {
    if (tree_.size(form) < 4 || !tree_.is_symbol(tree_.child(form, 1)) ||
        !tree_.is_list(tree_.child(form, 2)))
      return fail(
          at(form, usage, kind == function_kind::constructor ? "constructor" : "function", fix));
    fn.kind = kind;
    fn.span = span(form);
    fn.name = std::string(tree_.name(tree_.child(form, 1)));
    if (decl_.find_function(fn.name) >= 0)
      return fail(at(tree_.child(form, 1), "the function is already declared", fn.name,
                     "give it a fresh name"));
    if (decl_.prims.has(fn.name))
      return fail(at(tree_.child(form, 1), "the name is a primitive's", fn.name,
                     "give the function another name"));
    const std::uint32_t inputs = tree_.child(form, 2);
    for (std::uint32_t i = 0; i < tree_.size(inputs); ++i) {
      VYRE_TRY_ASSIGN(const std::uint32_t s, sort_named(tree_.child(inputs, i)));
      fn.inputs.push_back(s);
    }
    VYRE_TRY_ASSIGN(fn.output, sort_named(tree_.child(form, 3)));
    return {};
  }

  //! Reads option `i` of a constructor or function `form` when it is `:unextractable` or
  //! `:cost k` (then `i` moves to k). @returns whether it was one of them.
  expected<bool> extraction_option(std::uint32_t form, std::uint32_t& i, function_decl& fn) {
    const std::uint32_t opt = tree_.child(form, i);
    if (tree_.is_symbol(opt, ":unextractable")) {
      fn.unextractable = true;
      return true;
    }
    if (!tree_.is_symbol(opt, ":cost") || i + 1 >= tree_.size(form)) return false;
    VYRE_TRY_ASSIGN(fn.cost, cost_value(tree_.child(form, ++i)));
    return true;
  }

  expected<void> declare_variant(std::uint32_t item, std::uint32_t sort, bool options) {
    if (!tree_.is_list(item) || tree_.size(item) == 0 || !tree_.is_symbol(tree_.child(item, 0)))
      return fail(at(item, "a datatype variant must be (Ctor Sort ...)", "",
                     "write each variant as (Ctor Sort ... [:cost k])"));
    function_decl fn;
    fn.name = std::string(tree_.name(tree_.child(item, 0)));
    fn.kind = function_kind::constructor;
    fn.merge = merge_kind::unite;
    fn.output = sort;
    fn.span = span(item);
    if (decl_.find_function(fn.name) >= 0)
      return fail(at(tree_.child(item, 0), "the constructor is already declared", fn.name,
                     "give it a fresh name"));
    const std::uint32_t n = tree_.size(item);
    for (std::uint32_t i = 1; i < n; ++i) {
      const std::uint32_t a = tree_.child(item, i);
      if (tree_.is_symbol(a) && detail::starts_with(tree_.name(a), ":")) {
        if (tree_.name(a) == ":cost" && i + 1 < n) {
          VYRE_TRY_ASSIGN(fn.cost, cost_value(tree_.child(item, ++i)));
        } else if (tree_.name(a) == ":unextractable") {
          fn.unextractable = options;  // egglog's datatype* drops it
        } else {
          return fail(at(a, "unknown constructor option", tree_.name(a),
                         "a variant takes :cost k or :unextractable"));
        }
        continue;
      }
      VYRE_TRY_ASSIGN(const std::uint32_t s, sort_named(a));
      fn.inputs.push_back(s);
    }
    VYRE_TRY(take_name(fn.name, tree_.child(item, 0)));
    add_function(std::move(fn));
    return {};
  }

  expected<void> parse_rule_options(std::uint32_t form, std::uint32_t from, rule_options& opts,
                                    bool rewrite) {
    bool unsafe = false;
    for (std::uint32_t i = from; i < tree_.size(form); ++i) {
      const std::uint32_t opt = tree_.child(form, i);
      const std::string_view key = tree_.is_symbol(opt) ? tree_.name(opt) : std::string_view();
      const bool has_value = i + 1 < tree_.size(form);
      if (key == ":ruleset" && has_value) {
        // Both are run-time errors in egglog (what `(fail ...)` catches).
        auto named = ruleset_named(tree_.child(form, ++i));
        if (!named) {
          error err = named.error();
          return fail(runtime_error(err));
        }
        opts.ruleset = *named;
        if (decl_.rulesets[opts.ruleset].is_combined)
          return fail(runtime_error(
              at(tree_.child(form, i), "rules cannot be added to a combined ruleset",
                 decl_.rulesets[opts.ruleset].name, "add the rule to one of its members")));
      } else if (key == ":name" && has_value &&
                 tree_[tree_.child(form, i + 1)].kind == sexpr_kind::string) {
        opts.name = std::string(tree_.name(tree_.child(form, ++i)));
      } else if (key == ":naive" && !rewrite) {
        opts.naive = true;
      } else if (key == ":unsafe-seminaive" && !rewrite) {
        unsafe = true;
      } else if (key == ":no-decomp") {
      } else if (key == ":subsume" && rewrite) {
        opts.subsume = true;
      } else if (key == ":when" && rewrite && has_value &&
                 tree_.is_list(tree_.child(form, i + 1))) {
        const std::uint32_t list = tree_.child(form, ++i);
        for (std::uint32_t k = 0; k < tree_.size(list); ++k)
          opts.when.push_back(tree_.child(list, k));
      } else {
        return fail(at(opt, "unknown rule option", key.empty() ? "?" : key,
                       rewrite
                           ? "a rewrite takes :when (fact ...), :ruleset R, :subsume, :name \"n\""
                           : "a rule takes :ruleset R, :name \"n\", :naive or :unsafe-seminaive"));
      }
    }
    if (opts.naive && unsafe)
      return fail(
          at(form, ":naive and :unsafe-seminaive exclude each other", "rule", "keep one of them"));
    opts.unsafe_seminaive = unsafe;
    return {};
  }

  expected<void> finish_rule(std::uint32_t form, rule_source& src, const rule_options& opts,
                             std::string name) {
    const bool wide = opts.naive || opts.unsafe_seminaive;
    typing t(*this, wide ? prim_context::read : prim_context::pure,
             wide ? prim_context::full : prim_context::write);
    t.rule_form = form;
    VYRE_TRY(t.read(src));
    VYRE_TRY(t.solve());
    rule_decl rule;
    rule.name = std::move(name);
    rule.ruleset = opts.ruleset;
    rule.naive = opts.naive;
    rule.span = span(form);
    VYRE_TRY(t.lower_query(rule.body, &form));
    VYRE_TRY(t.lower_actions(rule.body, rule.head, !wide));
    for (const std::uint32_t other : decl_.rulesets[opts.ruleset].rules)
      if (decl_.rules[other].name == rule.name)
        return fail(at(form, "the ruleset already has a rule of this name",
                       rule.name.substr(0, 100), "give the rule a distinct :name \"...\""));
    const auto id = static_cast<std::uint32_t>(decl_.rules.size());
    decl_.rules.push_back(std::move(rule));
    decl_.rulesets[opts.ruleset].rules.push_back(id);
    return {};
  }

  expected<void> compile_merge(std::uint32_t expr, function_decl& fn) {
    rule_source src;
    src.value = expr;
    typing t(*this, prim_context::read, prim_context::write);
    t.merge_sort = fn.output;
    VYRE_TRY(t.read(src));
    VYRE_TRY(t.require_sort(t.value_node, fn.output));
    VYRE_TRY(t.solve());
    query q;
    VYRE_TRY(t.lower_query(q, nullptr));
    VYRE_TRY(t.lower_actions(q, fn.merge_actions, false));
    VYRE_TRY_ASSIGN(fn.merge_result, t.lower_value(fn.merge_actions));
    fn.merge_skips_equal = true;
    for (const action& a : fn.merge_actions.actions)
      if (fn.merge_result.is_reg() && a.dst == fn.merge_result.v && (a.op == action_op::call))
        fn.merge_skips_equal = false;
    if (!fn.merge_result.is_reg()) fn.merge_skips_equal = false;
    return {};
  }

  expected<void> until_clause(std::uint32_t form, std::uint32_t from, schedule_node& run) {
    const std::uint32_t n = tree_.size(form);
    if (from >= n) return {};
    if (!tree_.is_symbol(tree_.child(form, from), ":until"))
      return fail(at(tree_.child(form, from), "unexpected item in run", "",
                     "write (run [ruleset] [N] [:until fact ...])"));
    std::vector<std::uint32_t> facts;
    for (std::uint32_t i = from + 1; i < n; ++i) facts.push_back(tree_.child(form, i));
    VYRE_TRY_ASSIGN(run.until, compile_facts(facts));
    run.has_until = true;
    return {};
  }

  expected<std::uint32_t> schedule_item(std::uint32_t item, schedule& s) {
    schedule_node node;
    node.span = span(item);
    if (tree_.is_symbol(item)) {
      VYRE_TRY_ASSIGN(node.ruleset, ruleset_named(item));
      s.nodes.push_back(std::move(node));
      return static_cast<std::uint32_t>(s.nodes.size() - 1);
    }
    const std::string_view head = tree_.head(item);
    const std::uint32_t n = tree_.size(item);
    if (head == "run") {
      std::uint32_t i = 1;
      if (i < n && tree_.is_symbol(tree_.child(item, i)) &&
          !detail::starts_with(tree_.name(tree_.child(item, i)), ":")) {
        VYRE_TRY_ASSIGN(node.ruleset, ruleset_named(tree_.child(item, i)));
        ++i;
      }
      if (i < n && tree_[tree_.child(item, i)].kind == sexpr_kind::integer) {
        // (run [R] N ...) inside a schedule: N iterations.
        const std::int64_t times = tree_[tree_.child(item, i)].integer;
        if (times < 0)
          return fail(at(item, "a negative iteration count", "run", "write a count >= 0"));
        VYRE_TRY(until_clause(item, i + 1, node));
        s.nodes.push_back(std::move(node));
        schedule_node rep;
        rep.type = schedule_node::kind::repeat;
        rep.times = static_cast<std::uint64_t>(times);
        rep.children.push_back(static_cast<std::uint32_t>(s.nodes.size() - 1));
        rep.span = span(item);
        s.nodes.push_back(std::move(rep));
        return static_cast<std::uint32_t>(s.nodes.size() - 1);
      }
      VYRE_TRY(until_clause(item, i, node));
      s.nodes.push_back(std::move(node));
      return static_cast<std::uint32_t>(s.nodes.size() - 1);
    }
    std::uint32_t first = 1;
    if (head == "saturate") {
      node.type = schedule_node::kind::saturate;
    } else if (head == "seq") {
      node.type = schedule_node::kind::seq;
    } else if (head == "repeat") {
      if (n < 2 || tree_[tree_.child(item, 1)].kind != sexpr_kind::integer ||
          tree_[tree_.child(item, 1)].integer < 0)
        return fail(at(item, "(repeat N schedule ...) needs a count >= 0", "repeat",
                       "write (repeat 10 (run my-rules))"));
      node.type = schedule_node::kind::repeat;
      node.times = static_cast<std::uint64_t>(tree_[tree_.child(item, 1)].integer);
      first = 2;
    } else {
      return fail(at(item, "unknown schedule", head.empty() ? "?" : head,
                     "a schedule is a ruleset name, (run ...), (saturate ...), (seq ...) or "
                     "(repeat N ...)"));
    }
    std::vector<std::uint32_t> children;
    for (std::uint32_t i = first; i < n; ++i) {
      VYRE_TRY_ASSIGN(const std::uint32_t c, schedule_item(tree_.child(item, i), s));
      children.push_back(c);
    }
    if (node.type == schedule_node::kind::repeat || node.type == schedule_node::kind::saturate) {
      // (repeat N s ...) and (saturate s ...) run their schedules in sequence.
      schedule_node seq;
      seq.type = schedule_node::kind::seq;
      seq.children = std::move(children);
      seq.span = span(item);
      s.nodes.push_back(std::move(seq));
      node.children.push_back(static_cast<std::uint32_t>(s.nodes.size() - 1));
    } else {
      node.children = std::move(children);
    }
    s.nodes.push_back(std::move(node));
    return static_cast<std::uint32_t>(s.nodes.size() - 1);
  }

  // ------------------------------------------------------------------ typing --------------

  //! The type checker and lowering of one rule (or query, or action block, or expression).
  class typing {
   public:
    typing(compiler& c, prim_context query_ctx, prim_context action_ctx)
        : c_(c), query_ctx_(query_ctx), action_ctx_(action_ctx) {}

    std::uint32_t value_node = 0;
    std::optional<std::uint32_t> rule_form;
    std::uint32_t merge_sort = ~0u;

    //! Reads the facts, actions (or the one expression) of `src` into typed nodes.
    expected<void> read(rule_source& src) {
      if (merge_sort != ~0u) {
        // `old` and `new` are the merge's two values.
        for (const char* name : {"old", "new"}) {
          detail::tnode n;
          n.type = detail::tnode::kind::variable;
          n.name = name;
          n.tv = fresh_tv();
          VYRE_TRY(assign(n.tv, merge_sort, 0));
          const auto id = add(std::move(n));
          action_scope_.emplace(name, id);
          merge_vars_.push_back(id);
        }
      }
      if (src.rewrite) {
        detail::tnode root;
        root.type = detail::tnode::kind::variable;
        root.name = "@rewrite_var";
        root.tv = var_tv(root.name);
        root.in_query = true;
        root.src = src.lhs;
        const std::uint32_t root_id = add(std::move(root));
        VYRE_TRY_ASSIGN(const std::uint32_t l, expr(src.lhs, true));
        VYRE_TRY(unify(nodes_[root_id].tv, nodes_[l].tv, src.lhs));
        equalities_.emplace_back(root_id, l);
        for (const std::uint32_t f : src.facts) VYRE_TRY(fact(f));
        VYRE_TRY_ASSIGN(const std::uint32_t r, expr(src.rhs, false));
        VYRE_TRY(unify(nodes_[root_id].tv, nodes_[r].tv, src.rhs));
        actions_.push_back(act{act::kind::unite, src.rhs, {}, root_id, r, {}});
        if (src.subsume) actions_.push_back(act{act::kind::subsume, src.lhs, {}, l, 0, {}});
        return {};
      }
      for (const std::uint32_t f : src.facts) VYRE_TRY(fact(f));
      for (const std::uint32_t a : src.actions) VYRE_TRY(action_item(a));
      if (src.value) {
        VYRE_TRY_ASSIGN(value_node, expr(*src.value, false));
      }
      return {};
    }

    expected<void> require_sort(std::uint32_t node, std::uint32_t sort) {
      return assign(nodes_[node].tv, sort, nodes_[node].src);
    }

    std::uint32_t sort_of_node(std::uint32_t node) { return tv_sort_[find_tv(nodes_[node].tv)]; }

    //! Resolves every call and infers every sort (see the file comment).
    expected<void> solve() {
      for (bool progress = true; progress;) {
        progress = false;
        for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
          detail::tnode& n = nodes_[i];
          if (n.type != detail::tnode::kind::call || n.resolved) continue;
          bool p = false;
          VYRE_TRY(resolve(i, p));
          progress = progress || p;
        }
      }
      // Whatever is left: ambiguous overloads, then sorts nothing determined.
      for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        detail::tnode& n = nodes_[i];
        if (n.type != detail::tnode::kind::call || n.resolved) continue;
        if (n.target_kind == detail::tnode::callee::fn_value)
          return fail(c_.at(n.src, "cannot tell which function sort this unstable-fn has", n.name,
                            "use it where an UnstableFn sort is expected, e.g. as an "
                            "argument of a declared function"));
        // Equal candidates (same signature) are one choice; else the call is ambiguous.
        const prim_overload& first = c_.decl_.prims[n.candidates[0]];
        bool same = true;
        for (const std::uint32_t o : n.candidates) {
          const prim_overload& p = c_.decl_.prims[o];
          same = same && p.fixed == first.fixed && p.repeated == first.repeated &&
                 p.result == first.result;
        }
        if (!same)
          return fail(c_.at(n.src,
                            "cannot tell which overload of the primitive is meant: the "
                            "sorts of its arguments are not known",
                            n.name,
                            "give an argument a known sort (a typed variable or a literal)"));
        VYRE_TRY(commit(i, n.candidates[0]));
      }
      for (const detail::tnode& n : nodes_) {
        if (tv_sort_[find_tv(n.tv)] != ~0u) continue;
        return fail(c_.at(n.src, "cannot infer the sort of this", n.name.empty() ? "?" : n.name,
                          "use the variable as an argument of a function or constructor"));
      }
      return {};
    }

    //! Flattens the facts into `q` (table and primitive atoms over registers) and checks that
    //! every variable is grounded (`rule_form`: where to report it).
    expected<void> lower_query(query& q, const std::uint32_t* rule_form_node) {
      // Slots: one per variable name and per call; equalities unite them.
      for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        const detail::tnode& n = nodes_[i];
        if (!n.in_query) continue;
        slot_of_.emplace(i, slot_for(i));
      }
      for (const auto& [a, b] : equalities_)
        VYRE_TRY(unite_slots(slot_of_.at(a), slot_of_.at(b), q));
      // Registers for the slots that are not constants, in order of first appearance.
      for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        if (!nodes_[i].in_query) continue;
        const std::uint32_t s = find_slot(slot_of_.at(i));
        if (slot_const_[s] || slot_reg_[s] != ~0u) continue;
        slot_reg_[s] = q.variable_count();
        q.variable_sorts.push_back(sort_of_node(i));
        q.variable_names.push_back(nodes_[i].type == detail::tnode::kind::variable
                                       ? nodes_[i].name
                                       : "@" + nodes_[i].name);
      }
      // Atoms, children before parents.
      for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        const detail::tnode& n = nodes_[i];
        if (!n.in_query || n.type != detail::tnode::kind::call) continue;
        std::vector<operand> terms;
        terms.reserve(n.args.size() + 1);
        for (const std::uint32_t a : n.args) terms.push_back(query_operand(a));
        if (n.target_kind == detail::tnode::callee::function) {
          terms.push_back(query_operand(i));
          table_atom atom;
          atom.function = n.target;
          atom.terms = std::move(terms);
          q.atoms.push_back(std::move(atom));
        } else {
          prim_atom atom;
          atom.prim = n.target;
          atom.args = std::move(terms);
          atom.out = query_operand(i);
          q.prims.push_back(std::move(atom));
        }
      }
      // Groundedness.
      std::vector<std::uint8_t> grounded(q.variable_count(), 0);
      for (const table_atom& a : q.atoms)
        for (const operand& o : a.terms)
          if (o.is_reg()) grounded[o.v] = 1;
      for (bool progress = true; progress;) {
        progress = false;
        for (const prim_atom& p : q.prims) {
          if (!p.out.is_reg() || grounded[p.out.v]) continue;
          bool ready = true;
          for (const operand& o : p.args) ready = ready && (!o.is_reg() || grounded[o.v]);
          if (ready) {
            grounded[p.out.v] = 1;
            progress = true;
          }
        }
      }
      for (std::uint32_t r = 0; r < q.variable_count(); ++r) {
        if (grounded[r]) continue;
        const std::uint32_t where = rule_form_node != nullptr ? *rule_form_node : first_src_;
        return fail(c_.at(where,
                          "a variable is not grounded: it appears only under primitives or "
                          "equalities, never as an argument of a function or constructor",
                          q.variable_names[r],
                          "match the variable in a function or constructor call of the query"));
      }
      // Shadowing: query variables may not take declared names.
      for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
        const detail::tnode& n = nodes_[i];
        if (!n.in_query || n.type != detail::tnode::kind::variable || n.name.empty() ||
            n.name[0] == '@')
          continue;
        VYRE_TRY(check_local_name(n.name, n.src));
      }
      return {};
    }

    //! Lowers the actions into `block` (registers continue `q`'s variables). `seminaive`:
    //! a seminaive rule's head, where reading a function's value is refused.
    expected<void> lower_actions(const query& q, action_block& block, bool seminaive) {
      block.register_sorts = q.variable_sorts;
      seminaive_ = seminaive;
      for (const std::uint32_t m : merge_vars_) {
        const auto r = static_cast<value>(block.register_sorts.size());
        block.register_sorts.push_back(sort_of_node(m));
        bound_.emplace(m, operand::reg(r));
      }
      for (const act& a : actions_) VYRE_TRY(lower_action(a, block));
      return {};
    }

    //! The operand of the one expression (`let`, `extract`, `:merge`), lowered into `block`.
    expected<operand> lower_value(action_block& block) { return lower_expr(value_node, block); }

   private:
    struct act {
      enum class kind : std::uint8_t { let, set, unite, remove, subsume, panic, expr } type;
      std::uint32_t src = 0;
      std::string name;     // let
      std::uint32_t a = 0;  // node: let value, set/remove/subsume call, unite lhs, expr
      std::uint32_t b = 0;  // node: set value, unite rhs
      std::string message;  // panic
    };

    std::uint32_t add(detail::tnode n) {
      nodes_.push_back(std::move(n));
      return static_cast<std::uint32_t>(nodes_.size() - 1);
    }
    std::uint32_t fresh_tv() {
      tv_parent_.push_back(static_cast<std::uint32_t>(tv_parent_.size()));
      tv_sort_.push_back(~0u);
      return static_cast<std::uint32_t>(tv_parent_.size() - 1);
    }
    std::uint32_t find_tv(std::uint32_t t) {
      while (tv_parent_[t] != t) t = tv_parent_[t] = tv_parent_[tv_parent_[t]];
      return t;
    }
    std::uint32_t var_tv(const std::string& name) {
      auto it = var_tvs_.find(name);
      if (it != var_tvs_.end()) return it->second;
      const std::uint32_t t = fresh_tv();
      var_tvs_.emplace(name, t);
      return t;
    }

    expected<void> mismatch(std::uint32_t src, std::uint32_t want, std::uint32_t got) {
      std::string subject =
          "expected " + c_.decl_.sorts[want].name + ", got " + c_.decl_.sorts[got].name;
      return fail(c_.at(src, "sort mismatch", subject,
                        "give the expression the sort its position declares"));
    }
    expected<void> assign(std::uint32_t tv, std::uint32_t sort, std::uint32_t src) {
      const std::uint32_t r = find_tv(tv);
      if (tv_sort_[r] == ~0u) {
        tv_sort_[r] = sort;
        return {};
      }
      if (tv_sort_[r] != sort) return mismatch(src, sort, tv_sort_[r]);
      return {};
    }
    expected<void> unify(std::uint32_t a, std::uint32_t b, std::uint32_t src) {
      a = find_tv(a);
      b = find_tv(b);
      if (a == b) return {};
      if (tv_sort_[a] != ~0u && tv_sort_[b] != ~0u && tv_sort_[a] != tv_sort_[b])
        return mismatch(src, tv_sort_[a], tv_sort_[b]);
      if (tv_sort_[a] == ~0u) tv_sort_[a] = tv_sort_[b];
      tv_parent_[b] = a;
      return {};
    }

    //! Adds `n`, whose sort is known, with a fresh type variable bound to that sort.
    expected<std::uint32_t> add_of_sort(detail::tnode n) {
      n.tv = fresh_tv();
      VYRE_TRY(assign(n.tv, n.sort, n.src));
      return add(std::move(n));
    }

    //! Adds `n` as a literal of `sort` with value `v` (or fails with `v`'s error).
    expected<std::uint32_t> add_literal(detail::tnode n, std::uint32_t sort,
                                        const expected<value>& v) {
      if (!v) return fail(v.error());
      n.type = detail::tnode::kind::literal;
      n.sort = sort;
      n.v = *v;
      return add_of_sort(std::move(n));
    }

    //! Reads expression `node` (in the query when `query`).
    expected<std::uint32_t> expr(std::uint32_t node, bool in_query) {
      const sexpr_tree& t = c_.tree_;
      const sexpr_node& sn = t[node];
      if (first_src_ == 0) first_src_ = node;
      detail::tnode n;
      n.src = node;
      n.in_query = in_query;
      switch (sn.kind) {
        case sexpr_kind::integer:
          return add_literal(std::move(n), sorts::i64, c_.db_base().from_i64(sn.integer));
        case sexpr_kind::real:
          return add_literal(std::move(n), sorts::f64, c_.db_base().from_f64(sn.real));
        case sexpr_kind::string:
          return add_literal(std::move(n), sorts::string, c_.db_base().from_string(t.name(node)));
        case sexpr_kind::symbol: {
          const std::string_view name = t.name(node);
          if (name == "true" || name == "false")
            return add_literal(std::move(n), sorts::boolean, value{name == "true" ? 1u : 0u});
          auto g = c_.env_.globals.find(std::string(name));
          if (g != c_.env_.globals.end()) {
            n.type = detail::tnode::kind::global;
            n.name = std::string(name);
            n.sort = g->second.sort;
            n.v = g->second.v;
            return add_of_sort(std::move(n));
          }
          n.type = detail::tnode::kind::variable;
          if (name == "_") {
            if (!in_query)
              return fail(c_.at(node, "the wildcard _ stands only in a query", "_",
                                "name the value with a variable"));
            n.name = "@_" + std::to_string(wildcards_++);
          } else {
            n.name = std::string(name);
          }
          if (!in_query) {
            auto it = action_scope_.find(n.name);
            if (it != action_scope_.end()) {
              n.tv = nodes_[it->second].tv;
              return add(std::move(n));
            }
            if (var_tvs_.count(n.name) == 0)
              return fail(c_.at(node,
                                "unbound variable: the query does not bind it and no "
                                "let names it",
                                n.name, "bind it in the query, or with (let name expr) first"));
          }
          if (name.size() > 1 && name[0] == '@')
            return fail(c_.at(node,
                              "names starting with '@' are reserved for vyre's internal names",
                              name, "rename the variable"));
          n.tv = var_tv(n.name);
          return add(std::move(n));
        }
        case sexpr_kind::list:
          break;
      }
      if (sn.count == 0) {
        n.type = detail::tnode::kind::literal;
        n.sort = sorts::unit;
        n.v = 0;
        n.tv = fresh_tv();
        VYRE_TRY(assign(n.tv, n.sort, node));
        return add(std::move(n));
      }
      if (!t.is_symbol(t.child(node, 0)))
        return fail(c_.at(node, "a call must start with a function name", "", "write (f arg ...)"));
      n.type = detail::tnode::kind::call;
      n.name = std::string(t.name(t.child(node, 0)));
      for (std::uint32_t i = 1; i < sn.count; ++i) {
        VYRE_TRY_ASSIGN(const std::uint32_t a, expr(t.child(node, i), in_query));
        n.args.push_back(a);
      }
      n.tv = fresh_tv();
      const std::int64_t f = c_.decl_.find_function(n.name);
      if (f >= 0) {
        n.target_kind = detail::tnode::callee::function;
        n.target = static_cast<std::uint32_t>(f);
        const function_decl& fn = c_.decl_.functions[n.target];
        if (n.args.size() != fn.arity())
          return fail(c_.at(node, "wrong number of arguments", n.name,
                            "give the function as many arguments as its declaration")
                          .with("expected", fn.arity())
                          .with("got", n.args.size()));
        for (std::size_t i = 0; i < n.args.size(); ++i)
          VYRE_TRY(assign(nodes_[n.args[i]].tv, fn.inputs[i], nodes_[n.args[i]].src));
        VYRE_TRY(assign(n.tv, fn.output, node));
        n.resolved = true;
        return add(std::move(n));
      }
      if (n.name == "unstable-fn") {
        if (n.args.empty() || nodes_[n.args[0]].type != detail::tnode::kind::literal ||
            nodes_[n.args[0]].sort != sorts::string)
          return fail(c_.at(node,
                            "unstable-fn takes the name of a function or primitive as a "
                            "string literal",
                            n.name, "write (unstable-fn \"name\" captured-arg ...)"));
        n.target_kind = detail::tnode::callee::fn_value;
        return add(std::move(n));
      }
      const prim_context ctx = in_query ? query_ctx_ : action_ctx_;
      for (const std::uint32_t o : c_.decl_.prims.named(n.name)) {
        const prim_overload& p = c_.decl_.prims[o];
        if (visible_in(p.context, ctx) && p.accepts_count(n.args.size())) n.candidates.push_back(o);
      }
      if (n.candidates.empty()) {
        if (c_.decl_.prims.has(n.name))
          return fail(
              c_.at(node, "no overload of the primitive takes this many arguments here", n.name,
                    "check the primitive's arity; table-changing primitives run only in actions"));
        if (n.name == "extract" || n.name == "check" || n.name == "run")
          return fail(c_.at(node, "a command cannot stand inside a rule or expression", n.name,
                            "use it as a top-level command"));
        return fail(c_.at(node, "unknown function", n.name,
                          "declare it with constructor, function, relation or datatype, or use "
                          "a primitive egglog defines"));
      }
      n.target_kind = detail::tnode::callee::primitive;
      return add(std::move(n));
    }

    expected<void> fact(std::uint32_t node) {
      const sexpr_tree& t = c_.tree_;
      if (!t.is_list(node) || t.size(node) == 0)
        return fail(
            c_.at(node, "a fact must be (= a b) or a call", "", "write (= x (f a)) or (f a)"));
      if (t.head(node) == "=") {
        if (t.size(node) != 3)
          return fail(c_.at(node, "(= a b) takes exactly two expressions", "=",
                            "write (= a b); chain equalities as separate facts"));
        VYRE_TRY_ASSIGN(const std::uint32_t a, expr(t.child(node, 1), true));
        VYRE_TRY_ASSIGN(const std::uint32_t b, expr(t.child(node, 2), true));
        VYRE_TRY(unify(nodes_[a].tv, nodes_[b].tv, node));
        equalities_.emplace_back(a, b);
        return {};
      }
      VYRE_TRY_ASSIGN(const std::uint32_t call, expr(node, true));
      if (nodes_[call].type != detail::tnode::kind::call)
        return fail(c_.at(node, "a fact must be (= a b) or a call", "", "write (f a)"));
      return {};
    }

    //! Reads argument 1 of action `node`, which must call a table (a function, constructor or
    //! relation); fails with `what` and `fix` when it does not.
    expected<std::uint32_t> table_call(std::uint32_t node, const char* what, const char* fix) {
      VYRE_TRY_ASSIGN(const std::uint32_t call, expr(c_.tree_.child(node, 1), false));
      const detail::tnode& target = nodes_[call];
      if (target.type != detail::tnode::kind::call ||
          target.target_kind != detail::tnode::callee::function)
        return fail(c_.at(node, what, target.name, fix));
      return call;
    }

    expected<void> action_item(std::uint32_t node) {
      const sexpr_tree& t = c_.tree_;
      if (!t.is_list(node) || t.size(node) == 0 || !t.is_symbol(t.child(node, 0)))
        return fail(
            c_.at(node, "an action must be a call such as (union a b) or (f x)", "",
                  "write (let x e), (set (f x) v), (union a b), (delete (f x)), or a term"));
      const std::string_view head = t.head(node);
      const std::uint32_t n = t.size(node);
      act a{};
      a.src = node;
      if (head == "let") {
        if (n != 3 || !t.is_symbol(t.child(node, 1)))
          return fail(c_.at(node, "(let name expr) expected", "let", "write (let name expr)"));
        a.type = act::kind::let;
        a.name = std::string(t.name(t.child(node, 1)));
        if (a.name.size() > 1 && a.name[0] == '@')
          return fail(c_.at(node, "names starting with '@' are reserved for vyre's internal names",
                            a.name, "rename the variable"));
        VYRE_TRY_ASSIGN(a.a, expr(t.child(node, 2), false));
        if (var_tvs_.count(a.name) != 0 || action_scope_.count(a.name) != 0 ||
            c_.env_.globals.count(a.name) != 0)
          return fail(
              c_.at(node, "the variable is already defined", a.name, "give the let a fresh name"));
        VYRE_TRY(check_local_name(a.name, node));
        action_scope_.emplace(a.name, a.a);
        actions_.push_back(std::move(a));
        return {};
      }
      if (head == "set") {
        if (n != 3 || !t.is_list(t.child(node, 1)))
          return fail(
              c_.at(node, "(set (f args ...) value) expected", "set", "write (set (f a) v)"));
        VYRE_TRY_ASSIGN(a.a, table_call(node, "set needs a function call",
                                        "declare the function with (function ...)"));
        const detail::tnode& target = nodes_[a.a];
        if (c_.decl_.functions[target.target].kind == function_kind::constructor)
          return fail(c_.at(node, "cannot set a constructor", target.name,
                            "use (union (Ctor ...) v), or declare it as a function"));
        VYRE_TRY_ASSIGN(a.b, expr(t.child(node, 2), false));
        VYRE_TRY(unify(target.tv, nodes_[a.b].tv, node));
        a.type = act::kind::set;
        actions_.push_back(std::move(a));
        return {};
      }
      if (head == "union") {
        if (n != 3)
          return fail(
              c_.at(node, "(union a b) takes two expressions", "union", "write (union a b)"));
        VYRE_TRY_ASSIGN(a.a, expr(t.child(node, 1), false));
        VYRE_TRY_ASSIGN(a.b, expr(t.child(node, 2), false));
        VYRE_TRY(unify(nodes_[a.a].tv, nodes_[a.b].tv, node));
        a.type = act::kind::unite;
        actions_.push_back(std::move(a));
        return {};
      }
      if (head == "delete" || head == "subsume") {
        if (n != 2 || !t.is_list(t.child(node, 1)))
          return fail(c_.at(node, "(delete (f args ...)) expected", head,
                            "write (delete (f a)) or (subsume (Ctor a))"));
        VYRE_TRY_ASSIGN(a.a, table_call(node, "delete and subsume need a function call",
                                        "name a declared function, constructor or relation"));
        const detail::tnode& target = nodes_[a.a];
        if (head == "subsume" &&
            c_.decl_.functions[target.target].kind != function_kind::constructor)
          return fail(c_.at(node,
                            "cannot subsume a function's row (only constructors and "
                            "relations can be subsumed)",
                            target.name, "use delete, or declare a constructor"));
        a.type = head == "delete" ? act::kind::remove : act::kind::subsume;
        actions_.push_back(std::move(a));
        return {};
      }
      if (head == "panic") {
        if (n != 2 || t[t.child(node, 1)].kind != sexpr_kind::string)
          return fail(c_.at(node, "(panic \"message\") expected", "panic",
                            "write (panic \"what went wrong\")"));
        a.type = act::kind::panic;
        a.message = std::string(t.name(t.child(node, 1)));
        actions_.push_back(std::move(a));
        return {};
      }
      VYRE_TRY_ASSIGN(a.a, expr(node, false));
      a.type = act::kind::expr;
      actions_.push_back(std::move(a));
      return {};
    }

    //! A local name (query variable or let) may not be a declared name or a global's.
    expected<void> check_local_name(const std::string& name, std::uint32_t src) {
      if (c_.env_.taken.count(name) != 0 || c_.decl_.find_function(name) >= 0 ||
          c_.decl_.ruleset_ids.count(name) != 0)
        return fail(c_.at(src,
                          "a local variable takes a declared name (egglog allows no "
                          "shadowing)",
                          name, "rename the variable"));
      const std::string bare = detail::strip_dollar(name);
      for (const auto& [g, binding] : c_.env_.globals)
        if (detail::strip_dollar(g) == bare)
          return fail(c_.at(src,
                            "a local variable takes a global's name (egglog allows no "
                            "shadowing)",
                            name, "rename the variable"));
      return {};
    }

    expected<void> resolve(std::uint32_t i, bool& progress) {
      detail::tnode& n = nodes_[i];
      if (n.target_kind == detail::tnode::callee::fn_value) return resolve_fn_value(i, progress);
      // Keep the overloads that fit every known sort.
      std::vector<std::uint32_t> fit;
      for (const std::uint32_t o : n.candidates) {
        const prim_overload& p = c_.decl_.prims[o];
        bool ok = true;
        for (std::size_t a = 0; a < n.args.size() && ok; ++a) {
          const std::uint32_t s = tv_sort_[find_tv(nodes_[n.args[a]].tv)];
          ok = s == ~0u || s == p.arg_sort(a);
        }
        const std::uint32_t r = tv_sort_[find_tv(n.tv)];
        ok = ok && (r == ~0u || r == p.result);
        if (ok) fit.push_back(o);
      }
      if (fit.empty()) {
        std::string sorts_text = n.name + " (";
        for (std::size_t a = 0; a < n.args.size(); ++a) {
          const std::uint32_t s = tv_sort_[find_tv(nodes_[n.args[a]].tv)];
          if (a != 0) sorts_text += ' ';
          sorts_text += s == ~0u ? "?" : c_.decl_.sorts[s].name;
        }
        sorts_text += ')';
        return fail(c_.at(n.src, "no overload of the primitive takes arguments of these sorts",
                          sorts_text,
                          "convert the arguments (to-f64, to-i64, bigint ...) or use "
                          "another primitive"));
      }
      if (fit.size() != n.candidates.size()) {
        n.candidates = fit;
        progress = true;
      }
      if (fit.size() == 1) {
        VYRE_TRY(commit(i, fit[0]));
        progress = true;
      }
      return {};
    }

    expected<void> commit(std::uint32_t i, std::uint32_t o) {
      detail::tnode& n = nodes_[i];
      const prim_overload& p = c_.decl_.prims[o];
      for (std::size_t a = 0; a < n.args.size(); ++a)
        VYRE_TRY(assign(nodes_[n.args[a]].tv, p.arg_sort(a), nodes_[n.args[a]].src));
      VYRE_TRY(assign(n.tv, p.result, n.src));
      n.target = o;
      n.resolved = true;
      return {};
    }

    //! Whether `(unstable-fn "target" captured ...)` (node `n`) can be a value of fn sort
    //! `fsort`: its captured arguments' sorts and the target's code when it can.
    bool fn_value_fits(const detail::tnode& n, std::uint32_t fsort, const std::string& target,
                       std::vector<std::uint32_t>& captured_sorts, value& target_code,
                       bool& ambiguous) {
      const sort_info& fs = c_.decl_.sorts[fsort];
      captured_sorts.clear();
      ambiguous = false;
      if (fs.kind != sort_kind::fn) return false;
      const std::vector<std::uint32_t> inputs(fs.params.begin(), fs.params.end() - 1);
      const std::uint32_t output = fs.params.back();
      const std::size_t captured = n.args.size() - 1;
      const std::int64_t f = c_.decl_.find_function(target);
      if (f >= 0) {
        const function_decl& fn = c_.decl_.functions[static_cast<std::size_t>(f)];
        if (captured + inputs.size() != fn.arity() || fn.output != output) return false;
        for (std::size_t k = 0; k < inputs.size(); ++k)
          if (fn.inputs[captured + k] != inputs[k]) return false;
        for (std::size_t k = 0; k < captured; ++k) {
          const std::uint32_t s = tv_sort_[find_tv(nodes_[n.args[k + 1]].tv)];
          if (s != ~0u && s != fn.inputs[k]) return false;
          captured_sorts.push_back(fn.inputs[k]);
        }
        target_code = static_cast<value>(f);
        return true;
      }
      // A primitive: the overload that takes (captured..., inputs...) to the output.
      std::vector<std::uint32_t> fits;
      for (const std::uint32_t o : c_.decl_.prims.named(target)) {
        const prim_overload& p = c_.decl_.prims[o];
        if (!p.accepts_count(captured + inputs.size()) || p.result != output) continue;
        bool ok = true;
        for (std::size_t k = 0; k < inputs.size() && ok; ++k)
          ok = p.arg_sort(captured + k) == inputs[k];
        for (std::size_t k = 0; k < captured && ok; ++k) {
          const std::uint32_t s = tv_sort_[find_tv(nodes_[n.args[k + 1]].tv)];
          ok = s == ~0u || s == p.arg_sort(k);
        }
        if (ok) fits.push_back(o);
      }
      if (fits.empty()) return false;
      if (fits.size() > 1) {
        ambiguous = true;  // the captured arguments' sorts may tell later
        return true;
      }
      const prim_overload& p = c_.decl_.prims[fits[0]];
      for (std::size_t k = 0; k < captured; ++k) captured_sorts.push_back(p.arg_sort(k));
      target_code = fn_target_primitive_bit | fits[0];
      return true;
    }

    //! `(unstable-fn "name" captured ...)`: its fn sort (from where it is used, or the only
    //! declared one its target fits), then its target.
    expected<void> resolve_fn_value(std::uint32_t i, bool& progress) {
      detail::tnode& n = nodes_[i];
      const std::string target(c_.db_base().to_string(nodes_[n.args[0]].v));
      std::vector<std::uint32_t> captured_sorts;
      value target_code = 0;
      bool ambiguous = false;
      std::uint32_t fsort = tv_sort_[find_tv(n.tv)];
      if (fsort == ~0u) {
        std::uint32_t only = ~0u;
        std::uint32_t count = 0;
        for (std::uint32_t s = 0; s < c_.decl_.sorts.size(); ++s) {
          if (c_.decl_.sorts[s].kind != sort_kind::fn) continue;
          if (!fn_value_fits(n, s, target, captured_sorts, target_code, ambiguous)) continue;
          only = s;
          ++count;
        }
        if (count != 1) return {};
        VYRE_TRY(assign(n.tv, only, n.src));
        fsort = only;
        progress = true;
      }
      if (c_.decl_.sorts[fsort].kind != sort_kind::fn)
        return fail(c_.at(n.src, "unstable-fn makes an UnstableFn value, not this sort",
                          c_.decl_.sorts[fsort].name,
                          "use it where an UnstableFn sort is expected"));
      if (!fn_value_fits(n, fsort, target, captured_sorts, target_code, ambiguous))
        return fail(c_.at(n.src,
                          "unstable-fn: no function or primitive of that name fits the "
                          "UnstableFn sort (its remaining inputs and output)",
                          target,
                          "name a declared function, or a primitive whose signature "
                          "fits"));
      if (ambiguous) return {};
      for (std::size_t k = 0; k < captured_sorts.size(); ++k)
        VYRE_TRY(assign(nodes_[n.args[k + 1]].tv, captured_sorts[k], nodes_[n.args[k + 1]].src));
      n.target = c_.decl_.prims.add(make_fn_overload(fsort, target_code, captured_sorts));
      n.target_kind = detail::tnode::callee::primitive;
      n.resolved = true;
      progress = true;
      return {};
    }

    // ---- query lowering

    std::uint32_t slot_for(std::uint32_t node) {
      const detail::tnode& n = nodes_[node];
      std::uint32_t s = 0;
      if (n.type == detail::tnode::kind::variable) {
        auto it = var_slot_.find(n.name);
        if (it != var_slot_.end()) return it->second;
        s = new_slot();
        var_slot_.emplace(n.name, s);
        return s;
      }
      s = new_slot();
      if (n.type == detail::tnode::kind::literal) {
        slot_const_[s] = true;
        slot_value_[s] = operand::constant(n.v);
      } else if (n.type == detail::tnode::kind::global) {
        slot_const_[s] = true;
        slot_value_[s] = c_.decl_.sorts[n.sort].is_id ? operand::id(n.v) : operand::constant(n.v);
      }
      return s;
    }
    std::uint32_t new_slot() {
      slot_parent_.push_back(static_cast<std::uint32_t>(slot_parent_.size()));
      slot_const_.push_back(false);
      slot_value_.push_back(operand{});
      slot_reg_.push_back(~0u);
      return static_cast<std::uint32_t>(slot_parent_.size() - 1);
    }
    std::uint32_t find_slot(std::uint32_t s) {
      while (slot_parent_[s] != s) s = slot_parent_[s] = slot_parent_[slot_parent_[s]];
      return s;
    }
    expected<void> unite_slots(std::uint32_t a, std::uint32_t b, query& q) {
      a = find_slot(a);
      b = find_slot(b);
      if (a == b) return {};
      if (slot_const_[a] && slot_const_[b]) {
        const operand& x = slot_value_[a];
        const operand& y = slot_value_[b];
        if (x.type == operand::kind::id || y.type == operand::kind::id)
          q.equalities.emplace_back(x, y);
        else if (x.v != y.v)
          q.never = true;
      } else if (slot_const_[b]) {
        slot_const_[a] = true;
        slot_value_[a] = slot_value_[b];
      }
      slot_parent_[b] = a;
      return {};
    }
    operand query_operand(std::uint32_t node) {
      const std::uint32_t s = find_slot(slot_of_.at(node));
      if (slot_const_[s]) return slot_value_[s];
      return operand::reg(slot_reg_[s]);
    }

    // ---- action lowering

    std::uint32_t temp(action_block& block, std::uint32_t sort) {
      block.register_sorts.push_back(sort);
      return static_cast<std::uint32_t>(block.register_sorts.size() - 1);
    }

    expected<operand> lower_expr(std::uint32_t node, action_block& block) {
      auto memo = bound_.find(node);
      if (memo != bound_.end()) return memo->second;
      const detail::tnode& n = nodes_[node];
      switch (n.type) {
        case detail::tnode::kind::literal:
          return operand::constant(n.v);
        case detail::tnode::kind::global:
          return c_.decl_.sorts[n.sort].is_id ? operand::id(n.v) : operand::constant(n.v);
        case detail::tnode::kind::variable: {
          auto let = action_scope_.find(n.name);
          if (let != action_scope_.end() && let->second != node)
            return lower_expr(let->second, block);
          auto slot = var_slot_.find(n.name);
          if (slot != var_slot_.end()) {
            const std::uint32_t s = find_slot(slot->second);
            return slot_const_[s] ? slot_value_[s] : operand::reg(slot_reg_[s]);
          }
          return fail(c_.at(n.src, "unbound variable", n.name, "bind it in the query first"));
        }
        case detail::tnode::kind::call:
          break;
      }
      if (n.in_query) return query_operand(node);
      action a;
      a.span = c_.span(n.src);
      for (const std::uint32_t arg : n.args) {
        VYRE_TRY_ASSIGN(const operand o, lower_expr(arg, block));
        a.args.push_back(o);
      }
      a.target = n.target;
      if (n.target_kind == detail::tnode::callee::function) {
        const function_decl& fn = c_.decl_.functions[n.target];
        if (fn.kind == function_kind::constructor) {
          a.op = action_op::make;
        } else {
          if (seminaive_)
            return fail(c_.at(n.src,
                              "a seminaive rule's actions cannot read a function's "
                              "value (its later changes would be missed)",
                              fn.name,
                              "match the value in the query, e.g. (= v (f x)), or "
                              "mark the rule :naive"));
          a.op = action_op::lookup;
        }
        a.dst = temp(block, fn.output);
      } else {
        a.op = action_op::call;
        a.dst = temp(block, c_.decl_.prims[n.target].result);
      }
      const operand out = operand::reg(a.dst);
      block.actions.push_back(std::move(a));
      bound_.emplace(node, out);
      return out;
    }

    expected<void> lower_action(const act& a, action_block& block) {
      switch (a.type) {
        case act::kind::let: {
          VYRE_TRY_ASSIGN(const operand o, lower_expr(a.a, block));
          (void)o;
          return {};
        }
        case act::kind::expr: {
          VYRE_TRY_ASSIGN(const operand o, lower_expr(a.a, block));
          (void)o;
          return {};
        }
        case act::kind::set:
        case act::kind::remove:
        case act::kind::subsume: {
          const detail::tnode& call = nodes_[a.a];
          action out;
          out.op = a.type == act::kind::set      ? action_op::set
                   : a.type == act::kind::remove ? action_op::remove
                                                 : action_op::subsume;
          out.target = call.target;
          out.span = c_.span(a.src);
          for (const std::uint32_t arg : call.args) {
            VYRE_TRY_ASSIGN(const operand o, lower_expr(arg, block));
            out.args.push_back(o);
          }
          if (a.type == act::kind::set) {
            VYRE_TRY_ASSIGN(const operand v, lower_expr(a.b, block));
            out.args.push_back(v);
          }
          block.actions.push_back(std::move(out));
          return {};
        }
        case act::kind::unite: {
          const std::uint32_t sort = sort_of_node(a.a);
          const sort_info& s = c_.decl_.sorts[sort];
          if (s.kind != sort_kind::eq)
            return fail(c_.at(a.src, "union needs values of a datatype sort", s.name,
                              "unite e-classes (terms of a datatype), not primitive values"));
          if (!s.unionable)
            return fail(c_.at(a.src, "union of a relation's values", s.name,
                              "relations hold facts; their values cannot be united"));
          // egglog's union-to-set: (union v (Ctor args)) sets the row's value to v.
          const detail::tnode& rhs = nodes_[a.b];
          const detail::tnode& lhs = nodes_[a.a];
          auto is_fresh_ctor = [&](const detail::tnode& n, std::uint32_t id) {
            return n.type == detail::tnode::kind::call && !n.in_query && bound_.count(id) == 0 &&
                   n.target_kind == detail::tnode::callee::function &&
                   c_.decl_.functions[n.target].kind == function_kind::constructor;
          };
          std::uint32_t ctor = ~0u;
          std::uint32_t other = ~0u;
          if (is_fresh_ctor(rhs, a.b)) {
            ctor = a.b;
            other = a.a;
          } else if (is_fresh_ctor(lhs, a.a)) {
            ctor = a.a;
            other = a.b;
          }
          if (ctor != ~0u) {
            VYRE_TRY_ASSIGN(const operand v, lower_expr(other, block));
            const detail::tnode& call = nodes_[ctor];
            action out;
            out.op = action_op::set;
            out.target = call.target;
            out.span = c_.span(a.src);
            for (const std::uint32_t arg : call.args) {
              VYRE_TRY_ASSIGN(const operand o, lower_expr(arg, block));
              out.args.push_back(o);
            }
            out.args.push_back(v);
            block.actions.push_back(std::move(out));
            bound_.emplace(ctor, v);
            return {};
          }
          VYRE_TRY_ASSIGN(const operand x, lower_expr(a.a, block));
          VYRE_TRY_ASSIGN(const operand y, lower_expr(a.b, block));
          action out;
          out.op = action_op::unite;
          out.args = {x, y};
          out.span = c_.span(a.src);
          block.actions.push_back(std::move(out));
          return {};
        }
        case act::kind::panic: {
          action out;
          out.op = action_op::panic;
          out.target = static_cast<std::uint32_t>(block.messages.size());
          out.span = c_.span(a.src);
          block.messages.push_back(a.message);
          block.actions.push_back(std::move(out));
          return {};
        }
      }
      return {};
    }

    compiler& c_;
    prim_context query_ctx_;
    prim_context action_ctx_;
    // A deque: a node reference stays valid while later nodes are added (typing a child adds).
    std::deque<detail::tnode> nodes_;
    std::vector<std::uint32_t> tv_parent_;
    std::vector<std::uint32_t> tv_sort_;
    std::unordered_map<std::string, std::uint32_t> var_tvs_;
    std::unordered_map<std::string, std::uint32_t> action_scope_;  // let name -> node
    std::vector<std::pair<std::uint32_t, std::uint32_t>> equalities_;
    std::vector<act> actions_;
    std::vector<std::uint32_t> merge_vars_;
    std::uint32_t wildcards_ = 0;
    std::uint32_t first_src_ = 0;
    // query lowering
    std::unordered_map<std::uint32_t, std::uint32_t> slot_of_;
    std::unordered_map<std::string, std::uint32_t> var_slot_;
    std::vector<std::uint32_t> slot_parent_;
    std::vector<bool> slot_const_;
    std::vector<operand> slot_value_;
    std::vector<std::uint32_t> slot_reg_;
    // action lowering
    std::unordered_map<std::uint32_t, operand> bound_;
    bool seminaive_ = false;
  };

  base_values& db_base() { return *base_; }

 public:
  //! The value pools literals are interned in (the database's): set before compiling.
  void set_values(base_values& base) noexcept { base_ = &base; }

 private:
  declarations& decl_;
  scope& env_;
  const sexpr_tree& tree_;
  base_values* base_ = nullptr;
};

}  // namespace vyre::eqsat::lang
