// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::cpu_engine`: the relational core run on the host, with egglog's semantics.
//!
//! One iteration of a ruleset (egglog's `run_rules`):
//! 1. **Search.** Every rule of the ruleset searches the database as the iteration found it.
//!    Seminaive: a rule last run at timestamp `mid` runs one variant per table atom k of its
//!    query, atoms before k reading only rows older than `mid`, atom k only rows at or after
//!    it, later atoms any row; a rule that never ran (`mid` 0) runs once over everything, and a
//!    query without table atoms matches only on its first run. `:naive` rules match everything
//!    every time. A variant that cannot match (no new rows in its new atom's table, or no old
//!    ones in an earlier atom's) is skipped. Each variant is a plan: at each step the atom
//!    expected to yield the fewest rows (the new atom by its new rows, an earlier atom by its
//!    old ones; in a query of up to `few_atoms` atoms the new atom right after those a
//!    constant pins), primitive atoms as soon as their arguments are bound; kept for later
//!    iterations while its tables keep their sizes within 2x (`plan_for`). An atom is read
//!    through its key index when all keys are bound, through a hash index on its bound columns
//!    (built once per iteration, or kept from the search before for a large table nothing wrote
//!    since: `keep_unchanged_indexes`) when some are, by a scan otherwise. The first scan's
//!    candidates (after the lookups constants pin) are split over the threads; matches keep the
//!    serial order.
//! 2. **Apply.** Every match runs the rule's actions in order, rule by rule. Writes are staged:
//!    a constructor row that is not in the database yet gets its fresh id when first asked for
//!    (later asks in the iteration get the same id), `set`, `delete`, `subsume` and unions wait.
//!    A rule of many matches whose head only makes rows (constructor rows, relation facts) and
//!    unites, or ends in a set of a constructor row (a rewrite), runs an action at a time over
//!    all its matches instead, on every thread: each match looks its row up in the table and
//!    the staged rows; the keys found in neither are grouped by key (in fixed hash buckets),
//!    each gets one fresh id in the order of its first match, and their rows are appended to
//!    the table at once, where later actions and rules find them. A set of a row that exists only
//!    unites (dropped when its classes are one already; the rebuild writes the row with its class's
//!    id); a set of a staged row is staged as above. Which ids are made does not depend on the
//!    threads. A key that holds an id the apply made is in no table the apply did not append to: it
//!    is not looked up there, and a set of it that nothing staged before is staged as a new row.
//! 3. **Merge.** Per table, staged deletions first, then staged rows in order: a new key is
//!    appended, an existing key's value is merged (constructors: the ids are united and the
//!    smaller kept; `:merge`: its expression over `old` and `new`; `:no-merge`: must be equal).
//!    A merge that changes nothing leaves the row (and its timestamp) alone. Repeated until a
//!    merge stages nothing more (a `:merge` may build rows).
//! 4. **Rebuild** (when ids were united): containers holding ids are canonicalized (two that
//!    become equal are united), then every row with a non-canonical id is written again
//!    canonical through the merge, which unites colliding constructor rows (congruence); rounds
//!    until one changes nothing. In a program with a `:merge` expression a round's unions are
//!    made when it ends, as egglog's are, so the expression sees the classes as the round found
//!    them (without one, nothing can tell, and uniting at once takes fewer rounds). A
//!    constructor table with many such rows writes them at once on every thread instead
//!    (`rebuild_rows`): their canonical keys grouped as the apply groups new keys, one row per
//!    key.
//! The iteration changed the database when a row was added or changed or ids were united
//! (deletions alone do not count, as in egglog).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/parallel.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/primitives_containers.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

//! Limits checked inside an iteration (a bounded overshoot, then the caller rolls back).
//! Under a node limit the matches an iteration's search keeps are bounded too, by
//! `match_bytes_per_node` bytes per row of the limit (at least `min_match_bytes`): a search
//! past that stops as the node limit does, so memory stays near the e-graph the limit allows.
struct iteration_limits {
  static constexpr std::uint64_t match_bytes_per_node = 32;
  static constexpr std::uint64_t min_match_bytes = std::uint64_t{4} << 20;
  std::uint64_t node_limit = 0;  //!< rows over every table; 0: none
  std::chrono::steady_clock::time_point deadline = (std::chrono::steady_clock::time_point::max)();

  //! The bytes of matches a search may keep under the node limit (saturating; no limit: all).
  std::uint64_t match_budget_bytes() const noexcept {
    if (node_limit == 0 || node_limit > ~std::uint64_t{0} / match_bytes_per_node)
      return ~std::uint64_t{0};
    return (std::max)(node_limit * match_bytes_per_node, min_match_bytes);
  }
};

//! Why an iteration was rolled back. `handed_to_cpu`: the GPU engine's search found enough
//! matches (or join candidates) that the iteration could reach the node limit, so it stopped
//! before its apply; the session runs the iteration on the CPU engine instead, whose checks
//! inside an iteration bound its memory. The CPU engine never reports it.
enum class iteration_stop : std::uint8_t { none, node_limit, time_limit, handed_to_cpu };

//! What one iteration did: the engine's `iteration_report` and the session's `iteration_record`
//! both carry it.
struct iteration_counts {
  bool changed = false;
  std::uint64_t matches = 0;
  std::uint64_t unions = 0;  //!< unions made (apply and rebuild)
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;
  //! Rounds of the rebuild (canonicalize, find congruent rows, unite) until one merged nothing;
  //! 0 when nothing was united. The depth to which congruence had to propagate.
  std::uint32_t rebuild_rounds = 0;
};

//! What one iteration of an engine did, and whether it must be rolled back.
struct iteration_report : iteration_counts {
  iteration_stop stopped = iteration_stop::none;  //!< a limit was crossed: roll back
};

namespace detail {

//! Scratch for one row's values or one call's operands: 64 on the stack, more (a function or
//! primitive of that many) on the heap.
struct row_buffer {
  value small[64];
  std::vector<value> large;
  value* get(std::size_t n) {
    if (n <= 64) return small;
    large.resize(n);
    return large.data();
  }
};

//! An error of a running program (a failed lookup or primitive in an action, a panic, a
//! merge conflict): `errc::invalid_argument` with the action's span, as `lang::syntax_error`
//! gives compile errors (`errc::parse`), so `(fail ...)` can tell the two apart.
inline error action_error(const char* what, const source_span& span, std::string_view subject) {
  error err(errc::invalid_argument, what);
  err.with("file", span.file).with("line", span.line).with("col", span.col);
  if (!subject.empty()) err.about(subject);
  return err;
}

enum class row_range : std::uint8_t { any, older, newer };

struct plan_step {
  bool is_prim = false;
  std::uint32_t index = 0;  // atom or prim index in the query
  std::uint32_t function = 0;
  std::vector<operand> terms;        // atom: keys then value; prim: args then out
  std::vector<std::uint8_t> bound;   // per term: bound before this step (check, not bind)
  std::vector<std::uint32_t> probe;  // atom: bound columns used to find candidates
  bool by_key = false;               // every key column is bound: the key index
  row_range range = row_range::any;
};

struct query_plan {
  std::vector<plan_step> steps;
};

//! A hash index of one table by some of its columns: rows bucketed by the hash of those
//! columns (CSR), built over every non-stale row of the table at `version` (`table::version`).
struct column_index {
  std::uint32_t function = 0;
  std::uint64_t version = 0;
  std::vector<std::uint32_t> columns;
  std::vector<std::uint32_t> offsets;  // bucket b: rows[offsets[b], offsets[b + 1])
  std::vector<std::uint32_t> rows;
  std::uint64_t mask = 0;
};

inline std::uint64_t hash_columns(const value* row, const std::vector<std::uint32_t>& cols) {
  value key[8];
  std::uint64_t h = 0x51ed27u;
  std::size_t n = 0;
  for (const std::uint32_t c : cols) {
    key[n++] = row[c];
    if (n == 8) {
      h ^= row_hash(key, 8) + (h << 6);
      n = 0;
    }
  }
  return h ^ row_hash(key, static_cast<std::uint32_t>(n));
}

//! Groups items by key on up to `chunks` threads, for the apply and the rebuild that write
//! rows in batches: for every item i that `take(i)` selects, `first[i]` becomes the first
//! selected item (in item order) whose key (`arity` values at `keys + i * stride`, with hash
//! `hashes[i]`) equals item i's. Items are spread over a fixed number of hash buckets, each
//! grouped by one thread, so the answer does not depend on the threads.
class key_groups {
 public:
  static constexpr std::size_t buckets = 256;

  //! @returns how many items `take` selected.
  template <class Take>
  std::size_t group(const value* keys, std::size_t stride, std::uint32_t arity,
                    const std::uint64_t* hashes, std::size_t n, unsigned chunks, Take&& take,
                    std::vector<std::uint32_t>& first) {
    counts_.assign(std::size_t{chunks} * buckets, 0);
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
      std::size_t* count = &counts_[std::size_t{c} * buckets];
      for (std::size_t i = from; i < to; ++i)
        if (take(i)) ++count[bucket_of(hashes[i])];
    });
    // Each bucket's items in item order: chunk by chunk, as the chunks found them.
    std::size_t total = 0;
    for (std::size_t b = 0; b < buckets; ++b)
      for (unsigned c = 0; c < chunks; ++c) {
        const std::size_t count = counts_[std::size_t{c} * buckets + b];
        counts_[std::size_t{c} * buckets + b] = total;
        total += count;
      }
    if (total == 0) return 0;
    std::vector<std::size_t> bucket_begin(buckets + 1, total);
    for (std::size_t b = 0; b < buckets; ++b) bucket_begin[b] = counts_[b];  // chunk 0's place
    order_.resize(total);
    first.resize(n);
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
      std::size_t* at = &counts_[std::size_t{c} * buckets];
      for (std::size_t i = from; i < to; ++i)
        if (take(i)) order_[at[bucket_of(hashes[i])]++] = static_cast<std::uint32_t>(i);
    });
    const unsigned bucket_chunks = (std::max)(1u, (std::min)(chunks, unsigned{buckets}));
    vyre::detail::parallel_chunks(
        bucket_chunks, buckets, [&](unsigned, std::size_t from, std::size_t to) {
          std::vector<std::uint32_t> slots;  // an open-addressing set: 0 empty, else an item + 1
          for (std::size_t b = from; b < to; ++b) {
            const std::size_t lo = bucket_begin[b], hi = bucket_begin[b + 1];
            if (lo == hi) continue;
            std::size_t size = 16;
            while (size < 2 * (hi - lo)) size <<= 1;
            slots.assign(size, 0);
            for (std::size_t k = lo; k < hi; ++k) {
              const std::uint32_t i = order_[k];
              const value* key = keys + std::size_t{i} * stride;
              for (std::size_t at = hashes[i] & (size - 1);; at = (at + 1) & (size - 1)) {
                if (slots[at] == 0) {
                  slots[at] = i + 1;
                  first[i] = i;
                  break;
                }
                const std::uint32_t f = slots[at] - 1;
                if (hashes[f] == hashes[i] &&
                    same_row(keys + std::size_t{f} * stride, key, arity)) {
                  first[i] = f;
                  break;
                }
              }
            }
          }
        });
    return total;
  }

 private:
  static std::size_t bucket_of(std::uint64_t h) noexcept { return (h >> 24) & (buckets - 1); }
  std::vector<std::size_t> counts_;   // per chunk and bucket: items, then their places
  std::vector<std::uint32_t> order_;  // the items by bucket, in item order
};

}  // namespace detail

class cpu_engine {
 public:
  //! An engine over `decl` and `db` (both kept by reference). `threads` 0: every core.
  cpu_engine(const declarations& decl, database& db, unsigned threads = 0)
      : decl_(&decl), db_(&db), threads_(vyre::detail::resolve_threads(threads)) {
    sync();
  }
  cpu_engine(const cpu_engine&) = delete;
  cpu_engine& operator=(const cpu_engine&) = delete;

  unsigned threads() const noexcept { return threads_; }
  const declarations& decl() const noexcept { return *decl_; }
  database& db() noexcept { return *db_; }
  const database& db() const noexcept { return *db_; }

  //! Makes room for what was declared since the last call (tables, rules).
  void sync() {
    for (std::size_t f = db_->tables.size(); f < decl_->functions.size(); ++f)
      db_->add_table(*decl_, static_cast<std::uint32_t>(f));
    if (db_->last_run.size() < decl_->rules.size()) db_->last_run.resize(decl_->rules.size(), 0);
  }

  //! After the declarations and the database were replaced as a whole (`pop`): what the engine
  //! kept about the rules goes, and tables of new functions are added.
  void state_replaced() {
    plans_.clear();
    sync();
  }

  //! The canonical form of value `v` of sort `sort`.
  value canonical(value v, std::uint32_t sort) const noexcept {
    return decl_->sorts[sort].is_id ? db_->ids.find_const(v) : v;
  }

  //! Runs a block of actions once (a top-level action; `let`), then merges and rebuilds.
  //! @returns the registers (canonical), or the actions' error.
  expected<std::vector<value>> run_actions(const action_block& block,
                                           prim_context context = prim_context::full) {
    sync();
    apply_state state(*this, context);
    std::vector<value> regs(block.register_count(), 0);
    VYRE_TRY(state.run(block, regs.data()));
    bool changed = false;
    VYRE_TRY(state.merge(db_->now, changed));
    VYRE_TRY(state.failure());
    if (state.united) VYRE_TRY(rebuild_loop());
    ++db_->now;
    for (std::size_t r = 0; r < regs.size(); ++r)
      regs[r] = canonical(regs[r], block.register_sorts[r]);
    return regs;
  }

  //! Whether `q` has a match (subsumed rows included: `check`, `:until`).
  expected<bool> holds(const query& q) {
    sync();
    const detail::query_plan plan = plan_query(q, ~0u, 0);
    match_buffer found;
    bool any = false;
    fanout_.clear();  // built for this state only
    auto ran = execute(q, plan, true, 0, true, found, any);
    keep_unchanged_indexes();
    fanout_.clear();
    VYRE_TRY(ran);
    return any;
  }

  //! One iteration of ruleset `ruleset` (its rules, a combined ruleset's members').
  expected<iteration_report> run_iteration(std::uint32_t ruleset,
                                           const iteration_limits& limits = {}) {
    using clock = std::chrono::steady_clock;
    sync();
    iteration_report report;
    limits_ = limits;
    stop_.store(false, std::memory_order_relaxed);
    stop_reason_.store(iteration_stop::none, std::memory_order_relaxed);
    match_words_.store(0, std::memory_order_relaxed);
    const std::uint32_t ts = db_->now;
    const std::uint64_t unions_before = db_->ids.unions();
    const auto t0 = clock::now();
    std::vector<std::uint32_t> rules;
    collect_rules(ruleset, rules);
    fanout_.clear();
    std::vector<match_buffer> matches(rules.size());
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const rule_decl& rule = decl_->rules[rules[i]];
      const std::uint32_t mid = db_->last_run[rules[i]];
      db_->last_run[rules[i]] = ts;
      const std::uint32_t atoms = static_cast<std::uint32_t>(rule.body.atoms.size());
      if (rule.naive) {
        VYRE_TRY(search(rules[i], ~0u, 0, matches[i]));
      } else if (atoms == 0) {
        if (mid == 0) VYRE_TRY(search(rules[i], ~0u, 0, matches[i]));
      } else if (mid == 0) {
        VYRE_TRY(search(rules[i], ~0u, 0, matches[i]));
      } else {
        for (std::uint32_t k = 0; k < atoms; ++k)
          if (variant_may_match(rule.body, k, mid)) VYRE_TRY(search(rules[i], k, mid, matches[i]));
      }
      report.matches += matches[i].count;
      if (stopped()) break;
    }
    keep_unchanged_indexes();
    fanout_.clear();
    const auto t1 = clock::now();
    report.search_seconds = std::chrono::duration<double>(t1 - t0).count();
    if (stopped()) {
      report.stopped = stop_reason_.load(std::memory_order_relaxed);
      return report;
    }
    apply_state state(*this, prim_context::write);
    state.trust_fresh = true;
    const bool sets_by_level = !can_delete(rules);
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const rule_decl& rule = decl_->rules[rules[i]];
      state.context = rule.naive ? prim_context::full : prim_context::write;
      const std::uint32_t width = rule.body.variable_count();
      const std::uint64_t count = matches[i].count;
      if (count >= level_apply_matches && runs_by_level(rule.head, sets_by_level)) {
        for (std::uint64_t begin = 0; begin < count; begin += apply_state::level_piece) {
          const std::uint64_t end = (std::min)(count, begin + apply_state::level_piece);
          VYRE_TRY(state.run_levels(rule.head, matches[i], width, begin, end, threads_));
          if (over_node_limit(state.staged_rows())) {
            report.stopped = iteration_stop::node_limit;
            return report;
          }
        }
        matches[i] = match_buffer{};
        continue;
      }
      std::vector<value> regs(rule.head.register_count(), 0);
      for (std::uint64_t k = 0; k < count; ++k) {
        if (width != 0) std::copy_n(matches[i].at(k, width), width, regs.data());
        VYRE_TRY(state.run(rule.head, regs.data()));
        if (state.panicked) break;
        if ((k & 0xfff) == 0xfff && over_node_limit(state.staged_rows())) {
          report.stopped = iteration_stop::node_limit;
          return report;
        }
      }
      matches[i] = match_buffer{};
      if (state.panicked) break;
    }
    // A kept index of a table the merge or the rebuild writes would only hold memory through
    // them: it goes now.
    drop_indexes_if([&](std::uint32_t f) {
      return state.writes(f) || (state.united && db_->tables[f].holds_ids());
    });
    bool changed = false;
    VYRE_TRY(state.merge(ts, changed));
    VYRE_TRY(state.failure());
    const auto t2 = clock::now();
    report.apply_seconds = std::chrono::duration<double>(t2 - t1).count();
    if (over_node_limit(0)) {
      report.stopped = iteration_stop::node_limit;
      return report;
    }
    if (state.united) VYRE_TRY(rebuild_loop(&report.rebuild_rounds));
    ++db_->now;
    report.rebuild_seconds = std::chrono::duration<double>(clock::now() - t2).count();
    report.unions = db_->ids.unions() - unions_before;
    report.changed = changed || report.unions != 0;
    if (over_node_limit(0)) report.stopped = iteration_stop::node_limit;
    return report;
  }

  //! Canonicalizes every table to a fixpoint (after unions made outside an iteration).
  expected<void> rebuild() {
    sync();
    VYRE_TRY(rebuild_loop());
    ++db_->now;
    return {};
  }

  //! A primitive-evaluation context over this engine's values (tables read-only).
  value_context values(prim_context context = prim_context::read) {
    value_context ctx;
    ctx.base = &db_->base;
    ctx.containers = &db_->containers;
    ctx.ids = &db_->ids;
    ctx.sorts = &decl_->sorts;
    ctx.catalog = &decl_->prims;
    ctx.context = context;
    return ctx;
  }

  //! Indexes built so far (a search that finds its table unchanged builds none).
  std::uint64_t index_builds() const noexcept { return index_builds_; }

 private:
  //! Matches of one rule: `count` of them, `variable_count()` registers each, kept in the parts
  //! the search's threads wrote them to (moved in, never copied together: a search under a node
  //! limit holds its match budget once).
  struct match_buffer {
    std::vector<std::vector<value>> parts;
    std::vector<std::uint64_t> ends;  // matches in the parts up to and including each
    std::uint64_t count = 0;

    void append(std::vector<value>&& part, std::uint64_t matches) {
      if (matches == 0) return;
      parts.push_back(std::move(part));
      count += matches;
      ends.push_back(count);
    }
    //! The `width` registers of match `m` (width > 0).
    const value* at(std::uint64_t m, std::uint32_t width) const noexcept {
      const auto p =
          static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), m) - ends.begin());
      const std::uint64_t first = p == 0 ? 0 : ends[p - 1];
      return parts[p].data() + (m - first) * width;
    }
  };

  // ---------------------------------------------------------------- apply and merge --------

  //! The staged writes of one iteration (or one top-level action block) and the primitive
  //! context that actions and merges run in.
  class apply_state final : public table_access {
   public:
    apply_state(cpu_engine& engine, prim_context ctx)
        : context(ctx), engine_(engine), first_made_(static_cast<value>(engine.db_->ids.size())) {
      staged_.resize(engine.db_->tables.size());
      appended_to_.resize(engine.db_->tables.size(), 0);
    }

    prim_context context;
    bool united = false;
    bool panicked = false;
    //! Whether the merge may append a `fresh_row` without looking its key up: only where
    //! nothing but the merge writes the tables between a `make` and the merge (an iteration's
    //! apply; not the rebuild, which writes rows while its merges make some).
    bool trust_fresh = false;

    //! Records a `:no-merge` conflict, reported once the merge is done.
    void conflict(const std::string& function) {
      if (panicked) return;
      panicked = true;
      panic_error_ = error(errc::invalid_argument,
                           "two different values for one key of a function declared :no-merge")
                         .about(function)
                         .fix("declare the function with :merge, or set one value per key");
    }

    //! Whether the merge writes function `f`'s table (rows staged, or deletions).
    bool writes(std::uint32_t f) const noexcept {
      return f < staged_.size() &&
             (!staged_[f].cells.empty() || staged_[f].removed_count != 0 || appended_to_[f] != 0);
    }

    //! Rows staged so far (for the node limit inside an iteration).
    std::uint64_t staged_rows() const noexcept { return staged_count_; }

    expected<void> failure() const {
      if (panicked) return fail(panic_error_);
      return {};
    }

    //! Runs `block` on `regs`; errors (a failed lookup or primitive, a panic) stop the
    //! iteration with the action's span.
    expected<void> run(const action_block& block, value* regs) {
      detail::row_buffer args;
      for (const action& a : block.actions) {
        const std::size_t n = a.args.size();
        value* in = args.get(n);
        for (std::size_t i = 0; i < n; ++i) {
          const operand& o = a.args[i];
          in[i] = o.is_reg() ? regs[o.v]
                             : (o.type == operand::kind::id ? engine_.db_->ids.find(o.v) : o.v);
        }
        switch (a.op) {
          case action_op::make: {
            VYRE_TRY_ASSIGN(regs[a.dst], make(a.target, in));
            break;
          }
          case action_op::lookup: {
            value out = 0;
            if (!lookup(a.target, in, out))
              return fail(detail::action_error("lookup of a function at a key it has no value for",
                                               a.span, engine_.decl_->functions[a.target].name)
                              .fix("set the function's value first, or match it in the query"));
            regs[a.dst] = out;
            break;
          }
          case action_op::call: {
            value_context ctx = engine_.values(context);
            ctx.tables = this;
            value out = 0;
            error err(errc::invalid_state, "primitive failed");
            const prim_status s = call_primitive(engine_.decl_->prims, a.target, ctx, in,
                                                 static_cast<std::uint32_t>(n), out, err);
            if (s == prim_status::error) return fail(err);
            if (s == prim_status::fail)
              return fail(detail::action_error("a primitive call in an action failed", a.span,
                                               engine_.decl_->prims[a.target].name)
                              .fix("guard the call with a query condition that excludes the "
                                   "failing arguments"));
            regs[a.dst] = out;
            break;
          }
          case action_op::set:
            VYRE_TRY(stage(a.target, in, in[n - 1], merged_row));
            break;
          case action_op::unite:
            VYRE_TRY(unite(in[0], in[1]));
            break;
          case action_op::remove:
            VYRE_TRY(remove(a.target, in));
            break;
          case action_op::subsume: {
            // egglog adds a missing row (a fresh id) and subsumes it.
            VYRE_TRY_ASSIGN(const value out, make(a.target, in));
            VYRE_TRY(stage(a.target, in, out, subsumed_row));
            break;
          }
          case action_op::panic:
            panicked = true;
            panic_error_ = detail::action_error("panic", a.span, block.messages[a.target]);
            return {};
        }
      }
      return {};
    }

    //! Matches a level-at-a-time apply takes in one piece: its buffers are a few words per
    //! match and register, and the pieces run in match order.
    static constexpr std::uint64_t level_piece = std::uint64_t{1} << 20;

    //! Runs a rewrite's `head` (`cpu_engine::runs_by_level`) on matches [begin, end) of
    //! `found` an action at a time, each action for every match on up to `threads` threads
    //! (the file comment, step 2): a row that exists or is staged gives its value; the rows
    //! that do not are grouped by key, each key gets one fresh id (in the order of its first
    //! match) and is appended to its table at once, so later actions and rules find it there.
    //! A set of a row that exists only unites the classes (the rebuild then writes the row
    //! with its class's id); a set of a staged row is staged as a serial apply stages it.
    expected<void> run_levels(const action_block& head, const match_buffer& found,
                              std::uint32_t width, std::uint64_t begin, std::uint64_t end,
                              unsigned threads) {
      database& db = *engine_.db_;
      const auto n = static_cast<std::size_t>(end - begin);
      const std::uint32_t regs_per = head.register_count();
      const unsigned chunks = (std::max)(1u, vyre::detail::chunk_count(threads, n, 4096));
      level_scratch& w = level_;
      std::vector<value>& regs = w.regs;
      regs.assign(n * regs_per, 0);
      if (width != 0)
        vyre::detail::parallel_chunks(chunks, n, [&](unsigned, std::size_t from, std::size_t to) {
          for (std::size_t m = from; m < to; ++m)
            std::copy_n(found.at(begin + m, width), width, &regs[m * regs_per]);
        });
      const auto operands = [&](const action& a, const value* r, value* in) {
        for (std::size_t k = 0; k < a.args.size(); ++k) {
          const operand& o = a.args[k];
          in[k] =
              o.is_reg() ? r[o.v] : (o.type == operand::kind::id ? db.ids.find_const(o.v) : o.v);
        }
      };
      std::vector<std::vector<std::pair<value, value>>> unions(chunks);
      const auto hand_over_unions = [&] {
        for (auto& list : unions) {
          unions_.insert(unions_.end(), list.begin(), list.end());
          list.clear();
        }
      };
      for (const action& a : head.actions) {
        if (a.op == action_op::unite) {
          vyre::detail::parallel_chunks(
              chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
                value in[2];
                for (std::size_t m = from; m < to; ++m) {
                  operands(a, &regs[m * regs_per], in);
                  if (db.ids.find_const(in[0]) != db.ids.find_const(in[1]))
                    unions[c].emplace_back(in[0], in[1]);
                }
              });
          hand_over_unions();
          continue;
        }
        // A make (keys; the row's value is the result) or the final set (keys, then the value).
        const bool is_set = a.op == action_op::set;
        const table& t = db.tables[a.target];
        const std::uint32_t arity = t.arity();
        w.keys.resize(n * arity);
        w.values.resize(n);
        w.hashes.resize(n);
        w.kinds.resize(n);
        vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
          detail::row_buffer buffer;
          value* in = buffer.get(a.args.size());
          // Each match's keys (and a set's value) are read `ahead` matches early and their
          // slot fetched: the lookups are random reads of indexes far larger than the caches.
          constexpr std::size_t ahead = 16;
          const auto fetch = [&](std::size_t m) {
            operands(a, &regs[m * regs_per], in);
            std::copy_n(in, arity, &w.keys[m * arity]);
            if (is_set) w.values[m] = in[arity];
            w.hashes[m] = vyre::eqsat::detail::row_hash(in, arity);
            t.prefetch(w.hashes[m]);
          };
          for (std::size_t m = from; m < to && m < from + ahead; ++m) fetch(m);
          for (std::size_t m = from; m < to; ++m) {
            if (m + ahead < to) fetch(m + ahead);
            value* keys = &w.keys[m * arity];
            w.kinds[m] = level_done;
            const std::uint32_t r = t.find(keys, w.hashes[m]);
            if (is_set) {
              const value v = w.values[m];
              if (r != table::no_row) {
                // Only the union: the rebuild writes the row again with its class's id.
                const value cur = t.value_of(r);
                if (db.ids.find_const(cur) != db.ids.find_const(v)) unions[c].emplace_back(cur, v);
                continue;
              }
              if (pending_key(a.target, keys)) {
                w.kinds[m] = level_staged;
                continue;
              }
            } else {
              value& out = regs[m * regs_per + a.dst];
              if (r != table::no_row) {
                out = t.value_of(r);
                continue;
              }
              if (pending(a.target, keys, out)) continue;
            }
            w.kinds[m] = level_new;
          }
        });
        VYRE_TRY(make_level_rows(a, is_set, n, chunks, threads, regs, regs_per, unions));
        hand_over_unions();
        if (is_set)
          for (std::size_t m = 0; m < n; ++m)
            if (w.kinds[m] == level_staged)
              VYRE_TRY(stage(a.target, &w.keys[m * arity], w.values[m], merged_row));
      }
      return {};
    }

    // table_access: what primitives (`unstable-app`, `vec-union`, ...) may do.
    bool is_constructor(std::uint32_t function) override {
      return engine_.decl_->functions[function].kind == function_kind::constructor;
    }
    bool lookup(std::uint32_t function, const value* keys, value& out) override {
      const table& t = engine_.db_->tables[function];
      const std::uint32_t r = made_here(function, keys) ? table::no_row : t.find(keys);
      if (r != table::no_row) {
        out = t.value_of(r);
        return true;
      }
      return pending(function, keys, out);
    }
    expected<value> make(std::uint32_t function, const value* keys) override {
      value out = 0;
      if (lookup(function, keys, out)) return out;
      const function_decl& fn = engine_.decl_->functions[function];
      VYRE_TRY_ASSIGN(const value id, engine_.db_->ids.make());
      (void)fn;
      VYRE_TRY(stage(function, keys, id, fresh_row));
      return id;
    }
    expected<void> set(std::uint32_t function, const value* keys, value v) override {
      return stage(function, keys, v, merged_row);
    }
    expected<void> unite(value a, value b) override {
      unions_.emplace_back(a, b);
      return {};
    }
    expected<void> remove(std::uint32_t function, const value* keys) override {
      staged& s = staged_[function];
      const std::uint32_t arity = engine_.db_->tables[function].arity();
      s.removed.insert(s.removed.end(), keys, keys + arity);
      ++s.removed_count;
      any_staged_ = true;
      return {};
    }

    //! Applies every staged write at timestamp `ts` (see the file comment), to a fixpoint.
    expected<void> merge(std::uint32_t ts, bool& changed) {
      database& db = *engine_.db_;
      const declarations& decl = *engine_.decl_;
      merging_ = true;  // the tables take rows with the ids made so far
      if (std::find(appended_to_.begin(), appended_to_.end(), 1) != appended_to_.end())
        changed = true;
      while (any_staged_ || !unions_.empty()) {
        any_staged_ = false;
        for (const auto& [a, b] : unions_) {
          if (db.ids.unite(a, b)) {
            united = true;
            changed = true;
          }
        }
        unions_.clear();
        for (std::size_t f = 0; f < staged_.size(); ++f) {
          staged s = std::move(staged_[f]);
          staged_[f] = staged{};
          table& t = db.tables[f];
          const std::uint32_t arity = t.arity();
          for (std::size_t i = 0; i < s.removed_count; ++i) {
            const std::uint32_t r = t.find(s.removed.data() + i * arity);
            if (r != table::no_row) t.retire(r);
          }
          const std::uint32_t width = t.width();
          t.reserve(s.flags.size(), engine_.threads_);
          for (std::size_t row = 0; row < s.flags.size(); ++row) {
            const value* cells = &s.cells[row * width];
            if (trust_fresh && s.flags[row] == fresh_row) {
              VYRE_TRY(t.append(cells, cells[arity], ts, row_state::live));
              changed = true;
              continue;
            }
            bool row_changed = false;
            VYRE_TRY(engine_.merge_row(*this, decl.functions[f], t, cells, cells[arity],
                                       s.flags[row] == subsumed_row, ts, row_changed));
            changed = changed || row_changed;
          }
        }
      }
      return {};
    }

   private:
    //! A staged row's flag: merged with what the table holds at its key (subsumed or not), or
    //! made by `make` for a key the table did not hold and nothing staged before. Under
    //! `trust_fresh` such a key is still absent when the merge appends it (a staged row of the
    //! same key can only come after it, and a `:merge` that makes rows makes them in another
    //! table, merged later in the same round or in the next).
    static constexpr std::uint8_t merged_row = 0, subsumed_row = 1, fresh_row = 2;

    //! The writes staged for one table, with an open-addressing index from a key to its first
    //! staged row (so a constructor row asked for twice gets one id).
    struct staged {
      std::vector<value> cells;         // staged rows (keys, value)
      std::vector<std::uint8_t> flags;  // merged_row, subsumed_row or fresh_row
      std::vector<value> removed;       // staged deletions (keys)
      std::size_t removed_count = 0;
      std::vector<std::uint64_t> slots;  // 0 empty; else (hash tag << 32) | (row + 1)
      std::size_t used = 0;
    };

    //! The slot of `keys` in `s` (empty or holding a row with those keys).
    static std::size_t probe_slot(const staged& s, const value* keys, std::uint32_t arity,
                                  std::uint32_t width, std::uint64_t h) {
      const std::uint64_t mask = s.slots.size() - 1;
      for (std::uint64_t i = h & mask;; i = (i + 1) & mask) {
        const std::uint64_t slot = s.slots[i];
        if (slot == 0) return i;
        if ((slot >> 32) != (h >> 32)) continue;
        const value* cells = &s.cells[(static_cast<std::size_t>(slot & 0xffffffffu) - 1) * width];
        if (vyre::eqsat::detail::same_row(cells, keys, arity)) return i;
      }
    }

    bool pending_key(std::uint32_t function, const value* keys) const {
      value ignored = 0;
      return pending(function, keys, ignored);
    }

    bool pending(std::uint32_t function, const value* keys, value& out) const {
      const staged& s = staged_[function];
      if (s.used == 0) return false;
      const table& t = engine_.db_->tables[function];
      const std::uint64_t h = vyre::eqsat::detail::row_hash(keys, t.arity());
      const std::uint64_t slot = s.slots[probe_slot(s, keys, t.arity(), t.width(), h)];
      if (slot == 0) return false;
      out = s.cells[(static_cast<std::size_t>(slot & 0xffffffffu) - 1) * t.width() + t.arity()];
      return true;
    }

    //! Whether `keys` (of a row of `function`'s table) hold an id this apply made, which no
    //! table holds yet: only while nothing but the merge writes the tables and it has not
    //! begun (`trust_fresh`), and not in a table `run_levels` appended to.
    bool made_here(std::uint32_t function, const value* keys) const noexcept {
      if (!trust_fresh || merging_ || appended_to_[function] != 0) return false;
      const table& t = engine_.db_->tables[function];
      for (std::uint32_t c = 0; c < t.arity(); ++c)
        if (t.id_column(c) && keys[c] >= first_made_) return true;
      return false;
    }

    expected<void> stage(std::uint32_t function, const value* keys, value v, std::uint8_t flag) {
      staged& s = staged_[function];
      const table& t = engine_.db_->tables[function];
      // A set of a key that holds an id this apply made and that nothing staged before: the
      // merge appends it as a fresh row, with no lookup (no table holds the key).
      if (flag == merged_row && made_here(function, keys) && !pending_key(function, keys))
        flag = fresh_row;
      const auto row = static_cast<std::uint32_t>(s.flags.size());
      if (row >= 0xfffffff0u)
        return fail(error(errc::abi_limit, "more staged rows in one iteration than vyre counts")
                        .about(engine_.decl_->functions[function].name)
                        .fix("stop earlier with --node-limit"));
      s.cells.insert(s.cells.end(), keys, keys + t.arity());
      s.cells.push_back(v);
      s.flags.push_back(flag);
      ++staged_count_;
      any_staged_ = true;
      if ((s.used + 1) * 2 > s.slots.size()) {
        // Grow the index and put every staged row's first key back.
        s.slots.assign((std::max)(std::size_t{16}, s.slots.size() * 2), 0);
        s.used = 0;
        for (std::uint32_t r = 0; r <= row; ++r) {
          const value* k = &s.cells[std::size_t{r} * t.width()];
          const std::uint64_t h = vyre::eqsat::detail::row_hash(k, t.arity());
          const std::size_t i = probe_slot(s, k, t.arity(), t.width(), h);
          if (s.slots[i] != 0) continue;
          s.slots[i] = ((h >> 32) << 32) | (std::uint64_t{r} + 1);
          ++s.used;
        }
        return {};
      }
      const std::uint64_t h = vyre::eqsat::detail::row_hash(keys, t.arity());
      const std::size_t i = probe_slot(s, keys, t.arity(), t.width(), h);
      if (s.slots[i] == 0) {
        s.slots[i] = ((h >> 32) << 32) | (std::uint64_t{row} + 1);
        ++s.used;
      }
      return {};
    }

    //! `run_levels`' buffers, a word or a few per match of a piece (kept for the next action).
    static constexpr std::uint8_t level_done = 0, level_staged = 1, level_new = 2;
    struct level_scratch {
      std::vector<value> regs;            // per match: the head's registers
      std::vector<value> keys;            // per match: the action's keys
      std::vector<value> values;          // per match: a set's value
      std::vector<std::uint64_t> hashes;  // per match: its keys' hash
      std::vector<std::uint8_t> kinds;    // per match: level_done, level_staged or level_new
      detail::key_groups groups;          // the new keys by key
      std::vector<std::uint32_t> first;   // per new key: the first match with its key
      std::vector<std::uint32_t> made;    // per first match: its row's place among the new rows
      std::vector<value> least;           // per first match of a set: the least value set
      std::vector<value> rows;            // the new rows (keys, value)
    };

    //! The rows of the keys `run_levels` found new for action `a`: grouped by key (the first
    //! match of a key stands for it), one row per key appended to the table, and each match's
    //! result (a make's fresh id) or union (a set's value with the key's first) handed out.
    expected<void> make_level_rows(const action& a, bool is_set, std::size_t n, unsigned chunks,
                                   unsigned threads, std::vector<value>& regs,
                                   std::uint32_t regs_per,
                                   std::vector<std::vector<std::pair<value, value>>>& unions) {
      database& db = *engine_.db_;
      table& t = db.tables[a.target];
      const std::uint32_t arity = t.arity(), row_width = t.width();
      level_scratch& w = level_;
      const std::size_t total = w.groups.group(
          w.keys.data(), arity, arity, w.hashes.data(), n, chunks,
          [&](std::size_t m) { return w.kinds[m] == level_new; }, w.first);
      if (total == 0) return {};
      if (is_set) {  // the least value set of each key (a key's first match comes first)
        w.least.resize(n);
        for (std::size_t m = 0; m < n; ++m) {
          if (w.kinds[m] != level_new) continue;
          const std::uint32_t f = w.first[m];
          w.least[f] = f == m ? w.values[m] : (std::min)(w.least[f], w.values[m]);
        }
      }
      // The keys' places among the new rows, in the order of their first matches.
      w.made.resize(n);
      std::size_t rows = 0;
      for (std::size_t m = 0; m < n; ++m)
        if (w.kinds[m] == level_new && w.first[m] == m)
          w.made[m] = static_cast<std::uint32_t>(rows++);
      value base = 0;
      if (!is_set) {
        VYRE_TRY_ASSIGN(base, db.ids.make_many(rows));
      }
      w.rows.resize(rows * row_width);
      vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
        for (std::size_t m = from; m < to; ++m) {
          if (w.kinds[m] != level_new) continue;
          const std::uint32_t f = w.first[m];
          if (f == m) {
            value* row = &w.rows[std::size_t{w.made[m]} * row_width];
            std::copy_n(&w.keys[m * arity], arity, row);
            row[arity] = is_set ? w.least[m] : base + w.made[m];
          }
          if (!is_set)
            regs[m * regs_per + a.dst] = base + w.made[f];
          else if (db.ids.find_const(w.values[m]) != db.ids.find_const(w.values[f]))
            unions[c].emplace_back(w.values[f], w.values[m]);
        }
      });
      VYRE_TRY(t.append_distinct(w.rows.data(), rows, db.now, threads));
      appended_to_[a.target] = 1;
      return {};
    }

    level_scratch level_;
    cpu_engine& engine_;
    value first_made_;      // the first id this apply made (ids.size() when it began)
    bool merging_ = false;  // the merge has begun
    std::vector<staged> staged_;
    std::vector<std::uint8_t> appended_to_;  // per table: `run_levels` appended rows to it
    std::vector<std::pair<value, value>> unions_;
    bool any_staged_ = false;
    std::uint64_t staged_count_ = 0;
    error panic_error_{errc::invalid_state, "panic"};
  };

  //! Whether the apply of `rules` may stage a deletion: a `delete` in a head, or a call of a
  //! primitive that may write tables (`unstable-multiset-clear-index` deletes) or apply one
  //! (`unstable-app`), in a head or in a `:merge`. The merge applies deletions first, so a set
  //! of a row the table holds may write back a row deleted in the same apply: a set then runs
  //! match by match.
  bool can_delete(const std::vector<std::uint32_t>& rules) const {
    const auto deletes = [&](const action_block& block) {
      for (const action& a : block.actions) {
        if (a.op == action_op::remove) return true;
        if (a.op != action_op::call) continue;
        const prim_overload& p = decl_->prims[a.target];
        if (p.context >= prim_context::write || p.name == "unstable-app") return true;
      }
      return false;
    };
    for (const std::uint32_t r : rules)
      if (deletes(decl_->rules[r].head)) return true;
    for (const function_decl& fn : decl_->functions)
      if (fn.merge == merge_kind::expression && deletes(fn.merge_actions)) return true;
    return false;
  }

  //! Matches of one rule from which a rewrite's head runs an action at a time
  //! (`apply_state::run_levels`); fewer run match by match. A count, not a share of the
  //! threads: which ids the apply makes must not depend on them.
  static constexpr std::uint64_t level_apply_matches = 4096;

  //! Whether `head` can run an action at a time: it only makes constructor rows and unites,
  //! or ends in a set of a constructor row (a rewrite's head: the row of the right side set to
  //! the matched class; `sets`: only where no deletion can be staged, `can_delete`).
  bool runs_by_level(const action_block& head, bool sets) const {
    for (std::size_t k = 0; k < head.actions.size(); ++k) {
      const action& a = head.actions[k];
      if (a.op == action_op::unite) continue;
      if (a.op != action_op::make &&
          (!sets || a.op != action_op::set || k + 1 != head.actions.size()))
        return false;
      // (`target` names a function only for a make or a set: checked first.) A relation's
      // facts are made like a constructor's rows (a fresh id each), never set.
      const function_decl& fn = decl_->functions[a.target];
      if (fn.kind != function_kind::constructor || fn.merge != merge_kind::unite ||
          (fn.relation && a.op != action_op::make))
        return false;
    }
    return true;
  }

  //! Unites `a` and `b` (`united`: set when that joined two classes): at once, or during a
  //! rebuild round of a program with a `:merge` expression at the round's end
  //! (`round_unions_`), as egglog's rebuild does, so that a merge expression later in the round
  //! still sees the two classes apart.
  void unite(value a, value b, bool& united) {
    if (!in_rebuild_round_) {
      if (db_->ids.unite(a, b)) united = true;
      return;
    }
    if (db_->ids.find(a) != db_->ids.find(b)) round_unions_.emplace_back(a, b);
  }

  //! Writes (keys, v) into `t` at timestamp `ts`: appended when the key is new, else merged
  //! with the present value (see the file comment). `changed`: a row was added or changed.
  expected<void> merge_row(apply_state& state, const function_decl& fn, table& t, const value* keys,
                           value v, bool subsumed, std::uint32_t ts, bool& changed) {
    const std::uint32_t r = t.find(keys);
    if (r == table::no_row) {
      VYRE_TRY(t.append(keys, v, ts, subsumed ? row_state::subsumed : row_state::live));
      changed = true;
      return {};
    }
    const value cur = t.value_of(r);
    const bool cur_subsumed = t.state(r) == row_state::subsumed;
    value merged = cur;
    if (cur != v || (fn.merge == merge_kind::expression && !fn.merge_skips_equal)) {
      switch (fn.merge) {
        case merge_kind::unite:
          unite(cur, v, state.united);
          merged = (std::min)(cur, v);
          break;
        case merge_kind::none:
          // egglog finishes the merge and reports the conflict after it, as a panic.
          state.conflict(fn.name);
          return {};
        case merge_kind::expression: {
          std::vector<value> regs(fn.merge_actions.register_count(), 0);
          regs[0] = cur;
          regs[1] = v;
          const prim_context saved = state.context;
          state.context = prim_context::write;
          auto ran = state.run(fn.merge_actions, regs.data());
          state.context = saved;
          VYRE_TRY(ran);
          const operand& res = fn.merge_result;
          merged = res.is_reg() ? regs[res.v]
                                : (res.type == operand::kind::id ? db_->ids.find(res.v) : res.v);
          break;
        }
      }
    }
    const bool now_subsumed = cur_subsumed || subsumed;
    if (merged == cur && now_subsumed == cur_subsumed) return {};
    scratch_.assign(t.row(r), t.row(r) + t.arity());
    t.retire(r);
    VYRE_TRY(t.append(scratch_.data(), merged, ts,
                      now_subsumed ? row_state::subsumed : row_state::live));
    changed = true;
    return {};
  }

  // ---------------------------------------------------------------- rebuild ----------------

  //! Containers first (their contents canonical; equal ones united), then every row with a
  //! non-canonical id written again through the merge; rounds until one changes nothing.
  //! `rounds` (optional): the rounds it took.
  expected<void> rebuild_loop(std::uint32_t* rounds = nullptr) {
    database& db = *db_;
    apply_state state(*this, prim_context::write);
    // Only a `:merge` expression can tell when a round's unions are made: without one the
    // rounds unite at once, which reaches the same classes in fewer rounds.
    bool staged = false;
    for (const function_decl& fn : decl_->functions)
      staged = staged || fn.merge == merge_kind::expression;
    struct round_scope {  // `unite` stages the unions until the round ends, on every exit
      cpu_engine& e;
      round_scope(cpu_engine& engine, bool on) : e(engine) { e.in_rebuild_round_ = on; }
      ~round_scope() {
        e.in_rebuild_round_ = false;
        e.round_unions_.clear();
      }
      round_scope(const round_scope&) = delete;
      round_scope& operator=(const round_scope&) = delete;
    } scope(*this, staged);
    for (;;) {
      if (rounds != nullptr) ++*rounds;
      bool round_changed = false;
      VYRE_TRY(rebuild_containers(round_changed));
      const std::uint32_t ts = db.now;
      std::vector<value> scratch;
      for (std::size_t f = 0; f < db.tables.size(); ++f) {
        table& t = db.tables[f];
        if (!t.holds_ids() || t.size() == 0) continue;
        const std::uint32_t width = t.width();
        // The rows holding a non-root id, in row order, found on every thread (in chunks of at
        // least 2^18 rows: a scan of fewer costs less than starting a thread).
        const auto scan = [&](std::size_t begin, std::size_t end, std::vector<std::uint32_t>& out) {
          for (std::size_t r = begin; r < end; ++r) {
            if (t.state(r) == row_state::stale) continue;
            const value* cells = t.row(r);
            for (std::uint32_t c = 0; c < width; ++c) {
              if (t.id_column(c) && !db.ids.is_root(cells[c])) {
                out.push_back(static_cast<std::uint32_t>(r));
                break;
              }
            }
          }
        };
        const unsigned chunks =
            (std::max)(1u, vyre::detail::chunk_count(threads_, t.rows(), std::size_t{1} << 18));
        std::vector<std::vector<std::uint32_t>> found(chunks);
        vyre::detail::parallel_chunks(
            chunks, t.rows(),
            [&](unsigned c, std::size_t begin, std::size_t end) { scan(begin, end, found[c]); });
        std::vector<std::uint32_t> dirty = std::move(found[0]);
        for (unsigned c = 1; c < chunks; ++c)
          dirty.insert(dirty.end(), found[c].begin(), found[c].end());
        if (dirty.empty()) continue;
        round_changed = true;
        const function_decl& fn = decl_->functions[f];
        if (dirty.size() >= level_apply_matches && fn.kind == function_kind::constructor &&
            !fn.relation && fn.merge == merge_kind::unite) {
          VYRE_TRY(rebuild_rows(t, dirty, ts, state.united));
          continue;
        }
        scratch.resize(width);
        for (const std::uint32_t r : dirty) {
          if (t.state(r) == row_state::stale) continue;
          const value* cells = t.row(r);
          for (std::uint32_t c = 0; c < width; ++c)
            scratch[c] = t.id_column(c) ? db.ids.find(cells[c]) : cells[c];
          const bool subsumed = t.state(r) == row_state::subsumed;
          t.retire(r);
          bool changed = false;
          VYRE_TRY(merge_row(state, decl_->functions[f], t, scratch.data(), scratch[t.arity()],
                             subsumed, ts, changed));
        }
      }
      bool merged_changed = false;
      VYRE_TRY(state.merge(ts, merged_changed));
      VYRE_TRY(state.failure());
      // The round's unions, after every merge of the round saw the classes as they were.
      for (const auto& [a, b] : round_unions_)
        if (db.ids.unite(a, b)) state.united = true;
      round_unions_.clear();
      ++db.now;
      if (!round_changed && !state.united) break;
      state.united = false;
    }
    for (table& t : db.tables) t.compact_if_sparse(threads_);
    return {};
  }

  //! `rebuild_rows`' buffers, per dirty row (kept for the next table and round).
  struct rebuild_scratch {
    std::vector<value> cells;            // the row, canonical
    std::vector<std::uint64_t> hashes;   // its key's hash
    std::vector<row_state> states;       // its state (live or subsumed)
    std::vector<std::uint32_t> kept;     // the kept row holding its key, or table::no_row
    std::vector<std::uint32_t> first;    // the first dirty row of its key
    std::vector<std::uint32_t> made;     // a key's first: its row's place among the new rows
    std::vector<value> least;            // a key's first: the least class of the key's rows
    std::vector<std::uint8_t> subsumed;  // a key's first: whether one of the key's rows was
    std::vector<value> rows;             // the new rows
    std::vector<row_state> row_states;   // their states
    detail::key_groups groups;
  };

  //! Writes `dirty` (rows of constructor table `t` holding a non-root id, in row order, at
  //! least `level_apply_matches` of them) again with canonical ids at once, on every thread,
  //! where one by one each would go through the merge: a canonical key that a row the rebuild
  //! keeps holds unites their classes (and subsumes that row where a dirty one was); dirty
  //! rows that become one key become one row, of the least of their classes, the others united
  //! with it, through `unite` as the row-by-row merge's (`united`: set when one joined two).
  expected<void> rebuild_rows(table& t, const std::vector<std::uint32_t>& dirty, std::uint32_t ts,
                              bool& united) {
    database& db = *db_;
    const std::uint32_t arity = t.arity(), width = t.width();
    const std::size_t n = dirty.size();
    const unsigned chunks = (std::max)(1u, vyre::detail::chunk_count(threads_, n, 4096));
    rebuild_scratch& w = rebuild_;
    w.cells.resize(n * width);
    w.hashes.resize(n);
    w.states.resize(n);
    w.kept.resize(n);
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned, std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) {
        const value* src = t.row(dirty[i]);
        value* dst = &w.cells[i * width];
        for (std::uint32_t c = 0; c < width; ++c)
          dst[c] = t.id_column(c) ? db.ids.find_const(src[c]) : src[c];
        w.states[i] = t.state(dirty[i]);
        w.hashes[i] = detail::row_hash(dst, arity);
      }
    });
    t.retire_distinct(dirty, threads_);
    std::vector<std::vector<std::pair<value, value>>> unions(chunks);
    std::vector<std::vector<std::uint32_t>> subsume(chunks);
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
      constexpr std::size_t ahead = 16;  // as `run_levels` fetches its lookups' slots
      for (std::size_t i = from; i < to && i < from + ahead; ++i) t.prefetch(w.hashes[i]);
      for (std::size_t i = from; i < to; ++i) {
        if (i + ahead < to) t.prefetch(w.hashes[i + ahead]);
        const value* cells = &w.cells[i * width];
        const std::uint32_t r = t.find(cells, w.hashes[i]);
        w.kept[i] = r;
        if (r == table::no_row) continue;
        const value cur = t.value_of(r);
        if (db.ids.find_const(cur) != db.ids.find_const(cells[arity]))
          unions[c].emplace_back(cur, cells[arity]);
        if (w.states[i] == row_state::subsumed && t.state(r) == row_state::live)
          subsume[c].push_back(r);
      }
    });
    const std::size_t grouped = w.groups.group(
        w.cells.data(), width, arity, w.hashes.data(), n, chunks,
        [&](std::size_t i) { return w.kept[i] == table::no_row; }, w.first);
    // Per key, in the order of its first row: its place, least class and state.
    w.made.resize(n);
    w.least.resize(n);
    w.subsumed.resize(n);
    std::size_t rows = 0;
    for (std::size_t i = 0; grouped != 0 && i < n; ++i) {
      if (w.kept[i] != table::no_row) continue;
      const std::uint32_t f = w.first[i];
      const value v = w.cells[i * width + arity];
      const bool was_subsumed = w.states[i] == row_state::subsumed;
      if (f == i) {
        w.made[i] = static_cast<std::uint32_t>(rows++);
        w.least[i] = v;
        w.subsumed[i] = was_subsumed ? 1 : 0;
      } else {
        w.least[f] = (std::min)(w.least[f], v);
        w.subsumed[f] = (w.subsumed[f] != 0 || was_subsumed) ? 1 : 0;
      }
    }
    w.rows.resize(rows * width);
    w.row_states.resize(rows);
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) {
        if (w.kept[i] != table::no_row) continue;
        const std::uint32_t f = w.first[i];
        const value v = w.cells[i * width + arity];
        if (f == i) {
          value* row = &w.rows[std::size_t{w.made[i]} * width];
          std::copy_n(&w.cells[i * width], arity, row);
          row[arity] = w.least[i];
          w.row_states[w.made[i]] = w.subsumed[i] != 0 ? row_state::subsumed : row_state::live;
          continue;
        }
        const value first_v = w.cells[std::size_t{f} * width + arity];
        if (db.ids.find_const(v) != db.ids.find_const(first_v)) unions[c].emplace_back(first_v, v);
      }
    });
    VYRE_TRY(t.append_distinct(w.rows.data(), rows, ts, threads_, w.row_states.data()));
    for (const auto& list : subsume)
      for (const std::uint32_t r : list) t.mark_subsumed(r);
    for (const auto& list : unions)
      for (const auto& [a, b] : list) unite(a, b, united);
    return {};
  }

  expected<void> rebuild_containers(bool& changed) {
    database& db = *db_;
    if (db.containers.size() == 0) return {};
    std::vector<value> ids;
    db.containers.for_each([&](value id, const container_store::entry& e) {
      if (decl_->sorts[e.sort].holds_ids) ids.push_back(id);
    });
    // Inner containers were made before the ones holding them: ascending ids settle them first.
    std::sort(ids.begin(), ids.end());
    for (const value id : ids) {
      if (!db.containers.contains(id)) continue;
      const container_store::entry e = db.containers.at(id);
      const sort_info& s = decl_->sorts[e.sort];
      const value* old = db.containers.contents(e);
      const value target = s.kind == sort_kind::fn && e.length != 0 ? old[0] : 0;
      const std::vector<value> now =
          canonical_contents(s.kind, old, e.length, [&](std::uint32_t slot, value v) {
            return decl_->sorts[slot_sort(s, target, slot)].is_id ? db.ids.find(v) : v;
          });
      if (now.size() == e.length && std::equal(now.begin(), now.end(), old)) continue;
      const value holder =
          db.containers.replace(id, now.data(), static_cast<std::uint32_t>(now.size()));
      changed = true;
      if (holder != id) {
        db.ids.unite(holder, id);
        db.containers.drop((std::max)(holder, id));
      }
    }
    return {};
  }

  //! The sort of a container's element slot (see `canonical_contents`).
  std::uint32_t slot_sort(const sort_info& s, value target, std::uint32_t slot) const {
    switch (s.kind) {
      case sort_kind::map:
      case sort_kind::pair:
        return s.params[slot];
      case sort_kind::fn:
        if ((target & fn_target_primitive_bit) != 0)
          return decl_->prims[target & ~fn_target_primitive_bit].arg_sort(slot);
        return decl_->functions[target].inputs[slot];
      default:
        return s.params[0];
    }
  }

  // ---------------------------------------------------------------- search -----------------

  void collect_rules(std::uint32_t ruleset, std::vector<std::uint32_t>& out) const {
    std::vector<std::uint32_t> todo{ruleset};
    std::vector<std::uint8_t> seen(decl_->rulesets.size(), 0);
    while (!todo.empty()) {
      const std::uint32_t rs = todo.back();
      todo.pop_back();
      if (seen[rs]) continue;
      seen[rs] = 1;
      const ruleset_decl& d = decl_->rulesets[rs];
      out.insert(out.end(), d.rules.begin(), d.rules.end());
      for (auto it = d.combined.rbegin(); it != d.combined.rend(); ++it) todo.push_back(*it);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }

  bool stopped() const noexcept { return stop_.load(std::memory_order_relaxed); }
  void check_deadline() {
    if (std::chrono::steady_clock::now() >= limits_.deadline) {
      stop_reason_.store(iteration_stop::time_limit, std::memory_order_relaxed);
      stop_.store(true, std::memory_order_relaxed);
    }
  }
  //! Counts `words` more kept match registers; past the node limit's match budget
  //! (`iteration_limits`) the search stops as the node limit does.
  void count_match_words(std::uint64_t words) {
    const std::uint64_t total = match_words_.fetch_add(words, std::memory_order_relaxed) + words;
    if (limits_.node_limit == 0) return;
    if (total * sizeof(value) > limits_.match_budget_bytes() && !stopped()) {
      stop_reason_.store(iteration_stop::node_limit, std::memory_order_relaxed);
      stop_.store(true, std::memory_order_relaxed);
    }
  }
  //! Past the node limit with `pending` more rows to come.
  bool over_node_limit(std::uint64_t pending) const noexcept {
    return limits_.node_limit != 0 && db_->total_rows() + pending > limits_.node_limit;
  }

  //! The plan of `q`'s variant whose new atom is `fresh` (~0u: no stamp constraints).
  detail::query_plan plan_query(const query& q, std::uint32_t fresh, std::uint32_t mid) const {
    detail::query_plan plan;
    const std::uint32_t atoms = static_cast<std::uint32_t>(q.atoms.size());
    std::vector<std::uint8_t> bound(q.variable_count(), 0);
    std::vector<std::uint8_t> atom_done(atoms, 0);
    std::vector<std::uint8_t> prim_done(q.prims.size(), 0);
    auto is_bound = [&](const operand& o) { return !o.is_reg() || bound[o.v] != 0; };
    std::vector<std::uint8_t> ground(q.variable_count(), 0);  // see below
    auto is_ground = [&](const operand& o) { return !o.is_reg() || ground[o.v] != 0; };
    auto place_prims = [&] {
      for (bool progress = true; progress;) {
        progress = false;
        for (std::size_t p = 0; p < q.prims.size(); ++p) {
          if (prim_done[p]) continue;
          const prim_atom& pa = q.prims[p];
          bool ready = true;
          for (const operand& o : pa.args) ready = ready && is_bound(o);
          if (!ready) continue;
          detail::plan_step s;
          s.is_prim = true;
          s.index = static_cast<std::uint32_t>(p);
          s.terms = pa.args;
          s.terms.push_back(pa.out);
          s.bound.assign(s.terms.size(), 1);
          s.bound.back() = is_bound(pa.out) ? 1 : 0;
          bool args_ground = true;
          for (const operand& o : pa.args) args_ground = args_ground && is_ground(o);
          if (pa.out.is_reg() && !bound[pa.out.v] && args_ground) ground[pa.out.v] = 1;
          if (pa.out.is_reg()) bound[pa.out.v] = 1;
          plan.steps.push_back(std::move(s));
          prim_done[p] = 1;
          progress = true;
        }
      }
    };
    auto add_atom = [&](std::uint32_t a) {
      const table_atom& ta = q.atoms[a];
      detail::plan_step s;
      s.index = a;
      s.function = ta.function;
      s.terms = ta.terms;
      s.bound.resize(ta.terms.size());
      const std::uint32_t arity = decl_->functions[ta.function].arity();
      bool keys_bound = true;
      for (std::size_t c = 0; c < ta.terms.size(); ++c) {
        s.bound[c] = is_bound(ta.terms[c]) ? 1 : 0;
        if (s.bound[c]) s.probe.push_back(static_cast<std::uint32_t>(c));
        if (c < arity && !s.bound[c]) keys_bound = false;
      }
      s.by_key = keys_bound;
      if (fresh != ~0u && mid != 0) {
        if (a < fresh) s.range = detail::row_range::older;
        if (a == fresh) s.range = detail::row_range::newer;
      }
      for (const operand& o : ta.terms)
        if (o.is_reg()) bound[o.v] = 1;
      atom_done[a] = 1;
      plan.steps.push_back(std::move(s));
    };
    // A register is ground when a ground term binds it (`(INil)`, `(MNum 0)`: an atom whose
    // keys are all constants or ground, a primitive of ground arguments): it is one known
    // value, like a constant. An atom is connected when a bound column holds a register that
    // is not ground. The next atom is, first, one with every key bound (at most one row);
    // then the connected atom expected to yield the fewest rows per match so far (the fan-out
    // of its most selective bound column, from the tables' statistics); only when none is
    // left, an unconnected one (its rows, or its fan-out through constants): joining an
    // unconnected atom multiplies the matches, whatever its size.
    struct choice {
      int rank = 3;  // 0 keys bound, 1 connected, 2 unconnected
      double rows = 0;
    };
    // The part of an atom's table its stamp range reads (the new atom's new rows, an earlier
    // atom's old ones), which scales its expected rows.
    auto share = [&](std::uint32_t a) {
      if (fresh == ~0u || mid == 0 || a > fresh) return 1.0;
      const table& t = db_->tables[q.atoms[a].function];
      if (t.rows() == 0) return 0.0;
      const auto split = static_cast<double>(t.first_row_at(mid));
      const auto all = static_cast<double>(t.rows());
      return (a == fresh ? all - split : split) / all;
    };
    auto assess = [&](std::uint32_t a) {
      const table_atom& ta = q.atoms[a];
      const std::uint32_t arity = decl_->functions[ta.function].arity();
      const double part = share(a);
      const double rows = static_cast<double>(db_->tables[ta.function].size()) * part;
      bool keys = true;
      bool connected = false;
      double best = rows;
      for (std::uint32_t c = 0; c < ta.terms.size(); ++c) {
        const operand& o = ta.terms[c];
        if (!is_bound(o)) {
          keys = keys && c >= arity;
          continue;
        }
        connected = connected || !is_ground(o);
        best = (std::min)(best, fanout(ta.function, c) * part);
      }
      if (keys) return choice{0, (std::min)(rows, 1.0)};
      return choice{connected ? 1 : 2, best};
    };
    // Marks what atom `a` binds ground when its keys are (before add_atom binds them).
    auto mark_ground = [&](std::uint32_t a) {
      const table_atom& ta = q.atoms[a];
      const std::uint32_t arity = decl_->functions[ta.function].arity();
      bool keys_ground = true;
      for (std::uint32_t c = 0; c < arity; ++c)
        keys_ground = keys_ground && is_bound(ta.terms[c]) && is_ground(ta.terms[c]);
      const operand& out = ta.terms[arity];
      if (keys_ground && out.is_reg() && !bound[out.v]) ground[out.v] = 1;
    };
    // Atoms a constant pins to one row come first (an absent one ends the variant at once).
    place_prims();
    for (std::uint32_t step = 0; step < atoms; ++step) {
      place_prims();
      std::uint32_t best = atoms;
      choice best_choice;
      std::size_t best_bound = 0;
      for (std::uint32_t a = 0; a < atoms; ++a) {
        if (atom_done[a]) continue;
        std::size_t nb = 0;
        for (const operand& o : q.atoms[a].terms) nb += is_bound(o) ? 1 : 0;
        choice c = assess(a);
        // In a query of a few atoms the new atom leads, after only the atoms constants pin to
        // one row: the matches (and the rows they make) then come in the order the new rows
        // were made in, which the apply's lookups find in cache (the boolean-algebra
        // benchmark's apply took 23% longer in another order). In a larger query the join's
        // order matters more.
        if (a == fresh && atoms <= few_atoms && c.rank > 0) c = choice{0, (std::max)(c.rows, 1.0)};
        const bool tie = c.rank == best_choice.rank && c.rows == best_choice.rows;
        if (best == atoms || c.rank < best_choice.rank ||
            (c.rank == best_choice.rank && c.rows < best_choice.rows) ||
            (tie && (nb > best_bound || (nb == best_bound && a == fresh)))) {
          best = a;
          best_choice = c;
          best_bound = nb;
        }
      }
      if (best == atoms) break;
      mark_ground(best);
      add_atom(best);
    }
    place_prims();
    return plan;
  }

  //! Table atoms up to which a seminaive variant's new atom leads its plan (`plan_query`).
  static constexpr std::uint32_t few_atoms = 4;

  //! The rows a probe of `function` by column `c` meets, expected over the values it is
  //! probed with (counted once per state, on an evenly spread sample of at most 2^16 rows).
  //! A bound value usually comes from another row, so frequent values are probed more often:
  //! the estimate weighs each value by its rows (sum of squared counts over rows), which sees
  //! a skewed column (many list cells with one tail) where a plain average would not.
  double fanout(std::uint32_t function, std::uint32_t c) const {
    const std::uint64_t key = (std::uint64_t{function} << 32) | c;
    auto it = fanout_.find(key);
    if (it != fanout_.end()) return it->second;
    const table& t = db_->tables[function];
    constexpr std::size_t sample = std::size_t{1} << 16;
    const std::size_t step = (std::max)(std::size_t{1}, t.rows() / sample);
    std::vector<value> values;
    for (std::size_t r = 0; r < t.rows(); r += step)
      if (t.state(r) != row_state::stale) values.push_back(t.row(r)[c]);
    std::sort(values.begin(), values.end());
    double squares = 0;
    for (std::size_t i = 0; i < values.size();) {
      std::size_t j = i;
      while (j < values.size() && values[j] == values[i]) ++j;
      squares += static_cast<double>(j - i) * static_cast<double>(j - i);
      i = j;
    }
    // Scaled back from the sample: a value seen k times there stands for k * step rows.
    const double f = values.empty()
                         ? 1.0
                         : squares / static_cast<double>(values.size()) * static_cast<double>(step);
    fanout_.emplace(key, f);
    return f;
  }

  //! Drops the kept indexes of the functions `f` for which `drop(f)` holds.
  template <class Drop>
  void drop_indexes_if(Drop&& drop) {
    for (auto it = indexes_.begin(); it != indexes_.end();)
      it = drop(it->second.function) ? indexes_.erase(it) : std::next(it);
  }

  //! Rows from which an index is kept between searches: a smaller one costs less to build again
  //! than to hold (its blocks, kept across an iteration's allocations, would also fragment the
  //! heap: keeping math.egg's four small ones raised its peak by 3%).
  static constexpr std::size_t keep_index_rows = std::size_t{1} << 18;

  //! After a search: keeps the large indexes of the tables that did not change since the
  //! search before (tables the program no longer writes, such as a Datalog program's input
  //! relations), which the next search takes as they are; drops the others, which the writes
  //! between two searches would outdate, so they cost no memory through the apply.
  void keep_unchanged_indexes() {
    const std::size_t n = db_->tables.size();
    for (auto it = indexes_.begin(); it != indexes_.end();) {
      const std::uint32_t f = it->second.function;
      const bool keep = f < n && f < searched_versions_.size() &&
                        it->second.rows.size() >= keep_index_rows &&
                        db_->tables[f].version() == it->second.version &&
                        searched_versions_[f] == it->second.version;
      it = keep ? std::next(it) : indexes_.erase(it);
    }
    searched_versions_.resize(n);
    for (std::size_t f = 0; f < n; ++f) searched_versions_[f] = db_->tables[f].version();
  }

  //! The index of `function` on `columns`, built on first use, or kept from an earlier search
  //! while its table is unchanged (`keep_unchanged_indexes`).
  const detail::column_index& index_for(std::uint32_t function,
                                        const std::vector<std::uint32_t>& columns) {
    std::uint64_t key = function;
    for (const std::uint32_t c : columns) key = key * 1000003u + c + 1;
    const table& t = db_->tables[function];
    auto range = indexes_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it) {
      if (it->second.function != function || it->second.columns != columns) continue;
      if (it->second.version == t.version()) return it->second;
      indexes_.erase(it);  // its table changed
      break;
    }
    ++index_builds_;
    detail::column_index idx;
    idx.function = function;
    idx.version = t.version();
    idx.columns = columns;
    std::size_t buckets = 16;
    while (buckets < t.size() * 2) buckets <<= 1;
    idx.mask = buckets - 1;
    idx.offsets.assign(buckets + 1, 0);
    std::vector<std::uint32_t> bucket_of(t.rows(), 0);
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (t.state(r) == row_state::stale) continue;
      const auto b = static_cast<std::uint32_t>(detail::hash_columns(t.row(r), columns) & idx.mask);
      bucket_of[r] = b;
      ++idx.offsets[b + 1];
    }
    for (std::size_t b = 0; b < buckets; ++b) idx.offsets[b + 1] += idx.offsets[b];
    idx.rows.resize(idx.offsets[buckets]);
    std::vector<std::uint32_t> cursor(idx.offsets.begin(), idx.offsets.end() - 1);
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (t.state(r) == row_state::stale) continue;
      idx.rows[cursor[bucket_of[r]]++] = static_cast<std::uint32_t>(r);
    }
    return indexes_.emplace(key, std::move(idx))->second;
  }

  //! Whether variant `fresh` of `q` (see `plan_query`) can match: its new atom's table has a
  //! row stamped at or after `mid` and every atom before it one stamped before. Most variants
  //! of a program's many small iterations cannot, and are neither planned nor run.
  bool variant_may_match(const query& q, std::uint32_t fresh, std::uint32_t mid) const {
    for (std::uint32_t a = 0; a <= fresh; ++a) {
      const table& t = db_->tables[q.atoms[a].function];
      const std::size_t split = t.first_row_at(mid);
      if (a == fresh ? split == t.rows() : split == 0) return false;
    }
    return true;
  }

  //! Searches variant `fresh` of rule `rule`'s query (see `plan_query`), appending every
  //! match's registers (`variable_count()` of them) to `out`.
  expected<void> search(std::uint32_t rule, std::uint32_t fresh, std::uint32_t mid,
                        match_buffer& out) {
    const query& q = decl_->rules[rule].body;
    bool any = false;
    return execute(q, plan_for(rule, fresh, mid), false, mid, false, out, any);
  }

  //! A variant's plan kept between iterations, with the sizes of its atoms' tables it was
  //! chosen for.
  struct kept_plan {
    detail::query_plan plan;
    std::vector<std::size_t> sizes;
    bool chosen = false;
  };
  //! How far a table may grow or shrink before the plans over it are chosen again.
  static constexpr std::size_t replan_factor = 2;

  //! The plan of variant `fresh` of rule `rule`: kept from an earlier iteration while no table
  //! of its atoms has grown or shrunk by more than `replan_factor` since (the statistics it
  //! was chosen by; the plan only orders the join, the matches are the same). A program's
  //! many small iterations would otherwise spend most of their time choosing the plans of
  //! rules with many atoms again.
  const detail::query_plan& plan_for(std::uint32_t rule, std::uint32_t fresh, std::uint32_t mid) {
    const query& q = decl_->rules[rule].body;
    const std::uint64_t key = (std::uint64_t{rule} << 32) | fresh;
    const auto fits = [&](const kept_plan& kept) {
      if (!kept.chosen) return false;
      for (std::size_t a = 0; a < q.atoms.size(); ++a) {
        const std::size_t now = db_->tables[q.atoms[a].function].size(), then = kept.sizes[a];
        if (now > then * replan_factor || then > now * replan_factor) return false;
      }
      return true;
    };
    kept_plan& kept = plans_[key];
    if (fits(kept)) return kept.plan;
    kept.plan = plan_query(q, fresh, mid);
    kept.sizes.clear();
    for (const table_atom& ta : q.atoms) kept.sizes.push_back(db_->tables[ta.function].size());
    kept.chosen = true;
    return kept.plan;
  }

  //! Runs `plan`; `first_only`: stop at the first match (`any`), storing nothing.
  expected<void> execute(const query& q, const detail::query_plan& plan, bool include_subsumed,
                         std::uint32_t mid, bool first_only, match_buffer& out, bool& any) {
    if (q.never) return {};
    // Constants of id sorts and the constant equalities, canonical now.
    for (const auto& [a, b] : q.equalities) {
      const value va = a.type == operand::kind::id ? db_->ids.find_const(a.v) : a.v;
      const value vb = b.type == operand::kind::id ? db_->ids.find_const(b.v) : b.v;
      if (va != vb) return {};
    }
    // Id constants are read canonical: in a copy of the plan, only where it has any.
    bool has_ids = false;
    for (const detail::plan_step& s : plan.steps)
      for (const operand& o : s.terms) has_ids = has_ids || o.type == operand::kind::id;
    std::vector<detail::plan_step> canonical_steps;
    if (has_ids) {
      canonical_steps = plan.steps;
      for (detail::plan_step& s : canonical_steps)
        for (operand& o : s.terms)
          if (o.type == operand::kind::id) o = operand::constant(db_->ids.find_const(o.v));
    }
    const std::vector<detail::plan_step>& steps = has_ids ? canonical_steps : plan.steps;
    // Probe indexes are built before the threads start.
    std::vector<const detail::column_index*> probes(steps.size(), nullptr);
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (!steps[i].is_prim && !steps[i].by_key && !steps[i].probe.empty())
        probes[i] = &index_for(steps[i].function, steps[i].probe);
    const std::uint32_t nregs = q.variable_count();
    // Primitives may intern new values, which the pools do on one thread only.
    bool has_prims = false;
    for (const detail::plan_step& s : steps) has_prims = has_prims || s.is_prim;

    // The candidates of the first scan, split over the threads, when only lookups of keys
    // that constants pin (at most one row each, looked up again by every thread) come before.
    std::size_t split_step = 0;
    std::vector<std::uint8_t> pinned;  // registers those lookups bind
    if (!steps.empty() && steps[0].by_key) pinned.assign(nregs, 0);
    for (; split_step < steps.size(); ++split_step) {
      const detail::plan_step& s = steps[split_step];
      if (s.is_prim || !s.by_key) break;
      bool keys_pinned = true;
      for (std::uint32_t c = 0; c < db_->tables[s.function].arity(); ++c)
        keys_pinned = keys_pinned && (!s.terms[c].is_reg() || pinned[s.terms[c].v] != 0);
      if (!keys_pinned) break;
      for (const operand& o : s.terms)
        if (o.is_reg()) pinned[o.v] = 1;
    }
    std::size_t first_begin = 0;
    std::size_t first_end = 1;
    bool split = false;
    if (split_step < steps.size() && !steps[split_step].is_prim && !steps[split_step].by_key &&
        probes[split_step] == nullptr) {
      const detail::plan_step& s = steps[split_step];
      const table& t = db_->tables[s.function];
      first_begin = s.range == detail::row_range::newer ? t.first_row_at(mid) : 0;
      first_end = s.range == detail::row_range::older ? t.first_row_at(mid) : t.rows();
      split = true;
    }
    const std::size_t n = first_end > first_begin ? first_end - first_begin : 0;
    const unsigned chunks =
        (split && !first_only && !has_prims) ? vyre::detail::chunk_count(threads_, n, 4096) : 1u;
    std::vector<std::vector<value>> parts(chunks);
    std::vector<std::uint64_t> part_counts(chunks, 0);
    std::vector<error> errors(chunks, error(errc::invalid_state, "search"));
    std::vector<std::uint8_t> failed(chunks, 0);
    std::atomic<bool> found{false};
    vyre::detail::parallel_chunks(chunks, n, [&](unsigned c, std::size_t b, std::size_t e) {
      join_state js{this, &q, &steps, &probes, include_subsumed, mid, first_only, &found, {}};
      js.regs.assign(nregs, 0);
      js.out = nregs == 0 ? nullptr : &parts[c];
      js.first_begin = first_begin + b;
      js.first_end = first_begin + e;
      js.split = split;
      js.split_step = split_step;
      auto r = js.run();
      if (!r) {
        errors[c] = r.error();
        failed[c] = 1;
      }
      part_counts[c] = js.count;
    });
    for (unsigned c = 0; c < chunks; ++c)
      if (failed[c]) return fail(errors[c]);
    any = found.load();
    if (first_only) return {};
    for (unsigned c = 0; c < chunks; ++c) out.append(std::move(parts[c]), part_counts[c]);
    return {};
  }

  //! One thread's nested-loop join over the plan's steps, with an explicit stack (no
  //! recursion: a rule's atom count does not reach the call stack).
  struct join_state {
    cpu_engine* engine;
    const query* q;
    const std::vector<detail::plan_step>* steps;
    const std::vector<const detail::column_index*>* probes;
    bool include_subsumed;
    std::uint32_t mid;
    bool first_only;
    std::atomic<bool>* found;
    std::vector<value> regs;
    std::vector<value>* out = nullptr;
    std::uint64_t count = 0;
    std::size_t counted_words = 0;  // of `out`, told to `count_match_words`
    std::size_t first_begin = 0;
    std::size_t first_end = 0;
    bool split = false;
    std::size_t split_step = 0;  // the scan whose candidates [first_begin, first_end) are ours

    struct level {
      const std::uint32_t* list = nullptr;  // candidate rows, or null: rows [pos, end)
      std::size_t pos = 0;
      std::size_t end = 0;
      std::size_t lo = 0;  // the step's stamp range, as rows
      std::size_t hi = 0;
      // registers this level bound (reset when it moves to its next candidate)
    };

    expected<void> run() {
      const std::size_t depth = steps->size();
      if (depth == 0) {
        emit();
        return {};
      }
      std::vector<level> levels(depth);
      std::size_t at = 0;
      open(0, levels[0]);
      std::uint64_t ticks = 0;
      for (;;) {
        if (first_only && found->load(std::memory_order_relaxed)) return {};
        if ((++ticks & 0xffff) == 0) {
          engine->check_deadline();
          if (out != nullptr) {
            engine->count_match_words(out->size() - counted_words);
            counted_words = out->size();
          }
          if (engine->stopped()) return {};
        }
        bool advanced = false;
        VYRE_TRY(next(at, levels[at], advanced));
        if (!advanced) {
          if (at == 0) return {};
          --at;
          continue;
        }
        if (at + 1 == depth) {
          emit();
          if (first_only) return {};
          continue;
        }
        ++at;
        open(at, levels[at]);
      }
    }

    void emit() {
      ++count;
      if (first_only) found->store(true, std::memory_order_relaxed);
      if (out != nullptr && !first_only) out->insert(out->end(), regs.begin(), regs.end());
    }

    value term_value(const operand& o) const { return o.is_reg() ? regs[o.v] : o.v; }

    void open(std::size_t i, level& lv) {
      const detail::plan_step& s = (*steps)[i];
      lv = level{};
      if (s.is_prim) {
        lv.pos = 0;
        lv.end = 1;
        return;
      }
      const table& t = engine->db_->tables[s.function];
      lv.lo = s.range == detail::row_range::newer ? t.first_row_at(mid) : 0;
      lv.hi = s.range == detail::row_range::older ? t.first_row_at(mid) : t.rows();
      if (s.by_key) {
        detail::row_buffer key;
        value* k = key.get(t.arity());
        for (std::uint32_t c = 0; c < t.arity(); ++c) k[c] = term_value(s.terms[c]);
        const std::uint32_t r = t.find(k);
        lv.pos = r == table::no_row ? 0 : r;
        lv.end = r == table::no_row ? 0 : std::size_t{r} + 1;
        return;
      }
      const detail::column_index* idx = (*probes)[i];
      if (idx != nullptr) {
        detail::row_buffer row_image;
        value* img = row_image.get(t.width());
        for (const std::uint32_t c : s.probe) img[c] = term_value(s.terms[c]);
        const std::uint64_t b = detail::hash_columns(img, idx->columns) & idx->mask;
        lv.list = idx->rows.data();
        lv.pos = idx->offsets[b];
        lv.end = idx->offsets[b + 1];
        return;
      }
      if (i == split_step && split) {
        lv.pos = first_begin;
        lv.end = first_end;
      } else {
        lv.pos = lv.lo;
        lv.end = lv.hi;
      }
    }

    //! Moves level `i` to its next candidate that fits, binding its registers.
    expected<void> next(std::size_t i, level& lv, bool& advanced) {
      const detail::plan_step& s = (*steps)[i];
      advanced = false;
      if (s.is_prim) {
        if (lv.pos >= lv.end) return {};
        lv.pos = lv.end;
        const prim_atom& pa = q->prims[s.index];
        const std::size_t n = pa.args.size();
        detail::row_buffer args;
        value* in = args.get(n);
        for (std::size_t a = 0; a < n; ++a) in[a] = term_value(s.terms[a]);
        value_context ctx = engine->values(prim_context::read);
        ctx.tables = &engine->reader_;
        value result = 0;
        error err(errc::invalid_state, "primitive");
        const prim_status st = call_primitive(engine->decl_->prims, pa.prim, ctx, in,
                                              static_cast<std::uint32_t>(n), result, err);
        if (st == prim_status::error) return fail(err);
        if (st == prim_status::fail) return {};
        const operand& o = s.terms.back();
        if (s.bound.back()) {
          if (term_value(o) != result) return {};
        } else {
          regs[o.v] = result;
        }
        advanced = true;
        return {};
      }
      const table& t = engine->db_->tables[s.function];
      const std::size_t width = t.width();
      while (lv.pos < lv.end) {
        const std::size_t r = lv.list != nullptr ? lv.list[lv.pos] : lv.pos;
        ++lv.pos;
        if (r < lv.lo || r >= lv.hi) continue;
        const row_state st = t.state(r);
        if (st == row_state::stale || (st == row_state::subsumed && !include_subsumed)) continue;
        const value* cells = t.row(r);
        bool ok = true;
        for (std::size_t c = 0; c < width && ok; ++c) {
          const operand& o = s.terms[c];
          if (!o.is_reg() || s.bound[c]) {
            ok = term_value(o) == cells[c];
          } else {
            regs[o.v] = cells[c];
          }
        }
        // A variable repeated inside the atom: its later columns must agree.
        for (std::size_t c = 0; c < width && ok; ++c) {
          const operand& o = s.terms[c];
          if (o.is_reg() && !s.bound[c]) ok = regs[o.v] == cells[c];
        }
        if (!ok) continue;
        advanced = true;
        return {};
      }
      return {};
    }
  };

  //! What primitives in a query may do with tables: read them (`unstable-app` of a function).
  class read_access final : public table_access {
   public:
    explicit read_access(const cpu_engine& engine) : engine_(engine) {}
    bool is_constructor(std::uint32_t function) override {
      return engine_.decl_->functions[function].kind == function_kind::constructor;
    }
    bool lookup(std::uint32_t function, const value* keys, value& out) override {
      const table& t = engine_.db_->tables[function];
      const std::uint32_t r = t.find(keys);
      if (r == table::no_row) return false;
      out = t.value_of(r);
      return true;
    }
    expected<value> make(std::uint32_t function, const value*) override {
      return fail(refused(function));
    }
    expected<void> set(std::uint32_t function, const value*, value) override {
      return fail(refused(function));
    }
    expected<void> unite(value, value) override { return fail(refused(0)); }
    expected<void> remove(std::uint32_t function, const value*) override {
      return fail(refused(function));
    }

   private:
    error refused(std::uint32_t function) const {
      return error(errc::invalid_argument, "a query cannot add to or change a table")
          .about(engine_.decl_->functions.empty() ? std::string()
                                                  : engine_.decl_->functions[function].name)
          .fix("build the term in the rule's actions instead");
    }
    const cpu_engine& engine_;
  };

  const declarations* decl_;
  database* db_;
  unsigned threads_ = 1;
  rebuild_scratch rebuild_;
  read_access reader_{*this};
  std::unordered_multimap<std::uint64_t, detail::column_index> indexes_;
  //! Per (rule << 32 | variant), its kept plan (`plan_for`); dropped when the declarations
  //! are replaced (`state_replaced`).
  std::unordered_map<std::uint64_t, kept_plan> plans_;
  //! Per table, its version when the last search ended (`keep_unchanged_indexes`).
  std::vector<std::uint64_t> searched_versions_;
  std::uint64_t index_builds_ = 0;
  mutable std::unordered_map<std::uint64_t, double> fanout_;  // per (function, column)
  std::vector<value> scratch_;                                // a row's keys while it is rewritten
  //! Unions a rebuild round found (`unite`), applied when the round ends.
  std::vector<std::pair<value, value>> round_unions_;
  bool in_rebuild_round_ = false;  //!< inside `rebuild_loop`, staging its unions (`unite`)
  iteration_limits limits_;
  std::atomic<bool> stop_{false};
  std::atomic<iteration_stop> stop_reason_{iteration_stop::none};  //!< set before `stop_`
  std::atomic<std::uint64_t> match_words_{0};  //!< match registers the search keeps
};

}  // namespace vyre::eqsat
