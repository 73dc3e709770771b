// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::cpu_engine`: equality saturation on the CPU with egglog's semantics.
//!
//! State. One `table` per constructor: flat rows of u32 `(columns..., eclass)` (see plan.hpp),
//! a flat open-addressing hash (linear probing, 64-bit slots holding a 32-bit hash tag and the
//! row index) from a row's columns to the row (hash-consing), and a union-find over e-class ids
//! (union keeps the smaller id, so the fresh class of a new node joins the older class).
//!
//! Iteration (as egglog 13): (1) search every rule against the e-graph left by the last
//! rebuild, saving the matches (in parallel over the rows of each plan's first atom); (2) apply
//! every match: look up or insert the right-hand side's nodes and union with the match's root;
//! (3) rebuild to congruence closure: canonicalize the columns of every row, re-hash the rows
//! whose columns changed, union the e-classes of rows that now collide and drop the duplicate,
//! until a pass makes no union; then compact the tables. The e-node count of a constructor is
//! its table's row count: canonical, deduplicated rows, as egglog's `(print-size)`.
//!
//! A run stops when an iteration changes nothing (saturated), after its iteration count, or
//! when the next iteration would exceed the node limit or the time limit: that iteration is
//! rolled back to the last committed state.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "vyre/detail/enum_name.hpp"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/detail/tree_cost.hpp"
#include "vyre/eqsat/plan.hpp"
#include "vyre/eqsat/program.hpp"

namespace vyre::eqsat {

//! Why a run stopped. `failed`: the engine failed (the GPU engine: out of device memory or a
//! CUDA error; its `failure()` says why); the last committed iteration is kept.
enum class stop_reason : std::uint8_t { saturated, iterations, node_limit, time_limit, failed };

inline const char* stop_reason_name(stop_reason r) noexcept {
  constexpr const char* names[] = {"saturated", "iterations", "node_limit", "time_limit", "failed"};
  return vyre::detail::enum_name<stop_reason::saturated, stop_reason::failed>(r, names, "unknown");
}

//! Where an engine ran an iteration: `cpu_engine` or `gpu_engine` (`auto_engine` runs both).
enum class device_kind : std::uint8_t { cpu, gpu };

inline const char* device_name(device_kind d) noexcept {
  constexpr const char* names[] = {"cpu", "gpu"};
  return vyre::detail::enum_name<device_kind::cpu, device_kind::gpu>(d, names, "unknown");
}

//! E-nodes at the start of an iteration from which `auto_engine` (auto_engine.cuh) runs it on
//! the GPU engine. Measured on an H100 and 16 Xeon cores (math.egg, per iteration): 3,160
//! e-nodes take 4.0 ms on the GPU and 1.6 ms on the CPU engine, 8,113 take 4.6 ms and 5.5 ms,
//! 28,303 take 7.5 ms and 35 ms; below it the GPU's fixed cost per iteration (launches, host
//! round trips: 1.6-3 ms) is more than the CPU engine's whole iteration.
inline constexpr std::uint64_t default_gpu_crossover_enodes = 8192;

//! What one committed iteration did and left behind.
struct iteration_stats {
  std::uint64_t iteration = 0;  //!< 1-based, counted over every run of the program
  std::uint64_t enodes = 0;
  std::uint64_t eclasses = 0;
  std::vector<std::uint64_t> per_constructor;  //!< e-nodes, indexed like program::constructors
  std::uint64_t matches = 0;
  //! E-classes that existed before the iteration and were merged away during it (apply and
  //! rebuild together): old roots before minus old roots after. Union keeps the smaller id,
  //! so a class made during the iteration never counts and every engine reports the same
  //! number.
  std::uint64_t unions = 0;
  double search_seconds = 0;
  double apply_seconds = 0;
  double rebuild_seconds = 0;
  device_kind device = device_kind::cpu;  //!< the engine that ran it
};

struct run_limits {
  std::uint64_t node_limit = 0;  //!< 0: none; committed e-nodes never exceed it
  double time_limit = 0;         //!< seconds for the run; 0: none
};

struct run_result {
  stop_reason stopped = stop_reason::iterations;
  std::vector<iteration_stats> iterations;  //!< committed iterations only
};

//! The cheapest term of an e-class (tree cost: 1 per constructor, 1 per literal).
struct extraction {
  std::uint64_t cost = 0;
  std::string term;
};

class cpu_engine {
 public:
  static constexpr std::uint32_t dead = 0xffffffffu;

  //! `threads`: 0 = every hardware thread.
  explicit cpu_engine(const program& prog, unsigned threads = 0) : prog_(&prog) {
    threads_ = threads != 0 ? threads : (std::max)(1u, std::thread::hardware_concurrency());
    tables_.resize(prog.constructors.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      tables_[c].arity = prog.constructors[c].arity();
      tables_[c].width = tables_[c].arity + 1;
      tables_[c].datatype_column.resize(tables_[c].arity);
      for (std::uint32_t a = 0; a < tables_[c].arity; ++a)
        tables_[c].datatype_column[a] = prog.constructors[c].args[a].kind == sort_kind::datatype;
      tables_[c].reset_slots(16);
    }
    plans_ = compile_rules(prog);
    global_class_.assign(prog.globals.size(), dead);
  }

  const program& prog() const noexcept { return *prog_; }
  unsigned threads() const noexcept { return threads_; }
  const std::vector<query_plan>& plans() const noexcept { return plans_; }

  //! Adds a ground term (constructors, literals, let names); returns its canonical e-class.
  std::uint32_t add_term(const term& t) {
    if (t.kind == term_kind::global) return find(global_class_[t.id]);
    std::uint32_t key[max_arity];
    for (std::size_t i = 0; i < t.args.size(); ++i)
      key[i] = t.args[i].kind == term_kind::literal ? t.args[i].id : add_term(t.args[i]);
    const std::uint32_t cls = lookup_or_insert(t.id, key);
    rebuild();
    return find(cls);
  }
  void set_global(std::uint32_t global, std::uint32_t eclass) { global_class_[global] = eclass; }

  //! Runs up to `iterations` iterations of the rules `active` (rule indices).
  run_result run(std::uint64_t iterations, const std::vector<std::uint32_t>& active,
                 const run_limits& limits = {}) {
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
    run_result result;
    result.stopped = stop_reason::iterations;
    const bool snapshots = limits.node_limit != 0 || limits.time_limit > 0;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      if (limits.time_limit > 0 && elapsed() >= limits.time_limit) {
        result.stopped = stop_reason::time_limit;
        break;
      }
      snapshot saved;
      if (snapshots) saved = take_snapshot();
      iteration_stats stats;
      stats.iteration = ++iteration_;
      auto t0 = clock::now();
      std::vector<std::vector<std::uint32_t>> matches(active.size());
      for (std::size_t r = 0; r < active.size(); ++r) {
        matches[r] = search(plans_[active[r]]);
        stats.matches += matches[r].size() / plans_[active[r]].saved.size();
      }
      auto t1 = clock::now();
      stats.search_seconds = std::chrono::duration<double>(t1 - t0).count();
      const std::uint64_t rows_before = total_rows();
      const std::size_t old_ids = parent_.size();
      const std::uint64_t old_roots = roots_below(old_ids);
      for (std::size_t r = 0; r < active.size(); ++r) apply(plans_[active[r]], matches[r]);
      matches.clear();
      auto t2 = clock::now();
      stats.apply_seconds = std::chrono::duration<double>(t2 - t1).count();
      rebuild();
      auto t3 = clock::now();
      stats.rebuild_seconds = std::chrono::duration<double>(t3 - t2).count();
      stats.unions = old_roots - roots_below(old_ids);
      fill_counts(stats);
      // Without a merge of two old classes the old rows stay canonical and distinct, so the
      // e-graph changed exactly when a row was added.
      const bool changed = stats.unions != 0 || stats.enodes != rows_before;
      if (limits.node_limit != 0 && stats.enodes > limits.node_limit) {
        restore(std::move(saved));
        --iteration_;
        result.stopped = stop_reason::node_limit;
        break;
      }
      if (limits.time_limit > 0 && elapsed() > limits.time_limit) {
        restore(std::move(saved));
        --iteration_;
        result.stopped = stop_reason::time_limit;
        break;
      }
      result.iterations.push_back(std::move(stats));
      if (!changed) {
        result.stopped = stop_reason::saturated;
        break;
      }
    }
    return result;
  }

  //! Counts of the current (rebuilt) e-graph; iteration 0 before any run.
  iteration_stats counts() const {
    iteration_stats stats;
    stats.iteration = iteration_;
    fill_counts(stats);
    return stats;
  }

  //! The cheapest term of `eclass` (egglog's tree cost).
  extraction extract(std::uint32_t eclass) const {
    compute_costs();
    extraction out;
    out.cost = costs_.class_cost[find_const(eclass)];
    out.term = costs_.term(*prog_, flat_tables(), find_const(eclass));
    return out;
  }

  //! Canonical e-class id of `x`.
  std::uint32_t find(std::uint32_t x) noexcept {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  std::uint32_t find_const(std::uint32_t x) const noexcept {
    while (parent_[x] != x) x = parent_[x];
    return x;
  }
  std::uint64_t class_id_count() const noexcept { return parent_.size(); }
  //! E-nodes of the committed e-graph (every table's rows).
  std::uint64_t enode_count() const noexcept { return total_rows(); }
  //! Iterations committed so far, over every run (the last one's `iteration_stats::iteration`).
  std::uint64_t iteration() const noexcept { return iteration_; }
  //! The e-class of every `let` global, indexed like `program::globals` (`dead` while unset).
  const std::vector<std::uint32_t>& globals() const noexcept { return global_class_; }

  //! Rows of constructor `c`: `rows(c).size() / width(c)` rows of `(columns..., eclass)`.
  const std::vector<std::uint32_t>& rows(std::uint32_t c) const noexcept {
    return tables_[c].cells;
  }
  std::uint32_t width(std::uint32_t c) const noexcept { return tables_[c].width; }

 private:
  static constexpr std::size_t max_arity = 64;

  struct table {
    std::uint32_t arity = 0;
    std::uint32_t width = 1;
    std::vector<bool> datatype_column;
    std::vector<std::uint32_t> cells;
    std::vector<std::uint64_t> slots;  // 0 empty; else (tag << 32) | (row + 1)
    std::uint64_t mask = 0;
    std::size_t live_slots = 0;  // occupied slots (stale ones included until the next rehash)
    // Search indexes, rebuilt after every rebuild: per column, CSR offsets and rows.
    std::vector<std::vector<std::uint32_t>> index_offsets;
    std::vector<std::vector<std::uint32_t>> index_rows;
    std::vector<std::uint64_t> index_epoch;

    std::size_t row_count() const noexcept { return cells.size() / width; }
    void reset_slots(std::size_t capacity) {
      std::size_t size = 16;
      while (size < capacity * 2) size <<= 1;
      slots.assign(size, 0);
      mask = size - 1;
    }
  };

  struct snapshot {
    std::vector<std::vector<std::uint32_t>> cells;
    std::vector<std::uint32_t> parent;
  };

  // Finds the live row with columns `key`, skipping `self`; dead when none.
  static std::uint32_t probe(const table& t, const std::uint32_t* key, std::uint64_t h,
                             std::uint32_t self = dead) noexcept {
    const std::uint64_t tag = h >> 32;
    for (std::uint64_t i = h & t.mask;; i = (i + 1) & t.mask) {
      const std::uint64_t slot = t.slots[i];
      if (slot == 0) return dead;
      if ((slot >> 32) != tag) continue;
      const auto row = static_cast<std::uint32_t>(slot) - 1;
      if (row == self) continue;
      const std::uint32_t* cells = &t.cells[std::size_t{row} * t.width];
      if (cells[t.arity] != dead && detail::same_row(cells, key, t.arity)) return row;
    }
  }

  static void insert_slot(table& t, std::uint64_t h, std::uint32_t row) {
    for (std::uint64_t i = h & t.mask;; i = (i + 1) & t.mask) {
      if (t.slots[i] == 0) {
        t.slots[i] = ((h >> 32) << 32) | (std::uint64_t{row} + 1);
        return;
      }
    }
  }

  void rehash(table& t) {
    t.reset_slots(std::max<std::size_t>(t.row_count(), 8));
    t.live_slots = 0;
    for (std::size_t r = 0; r < t.row_count(); ++r) {
      const std::uint32_t* cells = &t.cells[r * t.width];
      if (cells[t.arity] == dead) continue;
      insert_slot(t, detail::row_hash(cells, t.arity), static_cast<std::uint32_t>(r));
      ++t.live_slots;
    }
  }

  std::uint32_t make_class() {
    const auto id = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(id);
    return id;
  }

  bool unite(std::uint32_t a, std::uint32_t b) noexcept {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    if (a < b)
      parent_[b] = a;
    else
      parent_[a] = b;
    return true;
  }

  // Looks up `ctor(key...)` (datatype columns canonicalized first) or inserts it with a fresh
  // e-class; returns the node's e-class.
  std::uint32_t lookup_or_insert(std::uint32_t ctor, std::uint32_t* key) {
    table& t = tables_[ctor];
    for (std::uint32_t i = 0; i < t.arity; ++i)
      if (t.datatype_column[i]) key[i] = find(key[i]);
    const std::uint64_t h = detail::row_hash(key, t.arity);
    const std::uint32_t row = probe(t, key, h);
    if (row != dead) return t.cells[std::size_t{row} * t.width + t.arity];
    const std::uint32_t cls = make_class();
    const auto new_row = static_cast<std::uint32_t>(t.row_count());
    t.cells.insert(t.cells.end(), key, key + t.arity);
    t.cells.push_back(cls);
    ++t.live_slots;
    if (t.live_slots * 2 > t.slots.size())
      rehash(t);
    else
      insert_slot(t, h, new_row);
    return cls;
  }

  // Roots among the class ids below `ids`.
  std::uint64_t roots_below(std::size_t ids) const noexcept {
    std::uint64_t n = 0;
    for (std::size_t i = 0; i < ids; ++i) n += parent_[i] == i ? 1 : 0;
    return n;
  }

  std::uint64_t total_rows() const noexcept {
    std::uint64_t n = 0;
    for (const table& t : tables_) n += t.row_count();
    return n;
  }

  void fill_counts(iteration_stats& stats) const {
    stats.per_constructor.resize(tables_.size());
    stats.enodes = 0;
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      stats.per_constructor[c] = tables_[c].row_count();
      stats.enodes += tables_[c].row_count();
    }
    std::uint64_t classes = 0;
    for (std::size_t i = 0; i < parent_.size(); ++i) classes += parent_[i] == i ? 1 : 0;
    stats.eclasses = classes;
  }

  // --- rebuild ------------------------------------------------------------------------------

  void rebuild() {
    std::vector<std::uint32_t> dirty;
    std::vector<bool> touched(tables_.size(), false);
    for (;;) {
      bool merged = false;
      for (std::size_t c = 0; c < tables_.size(); ++c) {
        table& t = tables_[c];
        dirty.clear();
        const std::size_t n = t.row_count();
        for (std::size_t r = 0; r < n; ++r) {
          std::uint32_t* cells = &t.cells[r * t.width];
          if (cells[t.arity] == dead) continue;
          bool changed = false;
          for (std::uint32_t i = 0; i < t.arity; ++i) {
            if (!t.datatype_column[i]) continue;
            const std::uint32_t canon = find(cells[i]);
            if (canon != cells[i]) {
              cells[i] = canon;
              changed = true;
            }
          }
          cells[t.arity] = find(cells[t.arity]);
          if (changed) dirty.push_back(static_cast<std::uint32_t>(r));
        }
        if (dirty.empty()) continue;
        touched[c] = true;
        for (const std::uint32_t r : dirty) {
          std::uint32_t* cells = &t.cells[std::size_t{r} * t.width];
          const std::uint64_t h = detail::row_hash(cells, t.arity);
          const std::uint32_t other = probe(t, cells, h, r);
          if (other != dead) {
            if (unite(cells[t.arity], t.cells[std::size_t{other} * t.width + t.arity]))
              merged = true;
            cells[t.arity] = dead;
          } else {
            ++t.live_slots;
            if (t.live_slots * 2 > t.slots.size())
              rehash(t);
            else
              insert_slot(t, h, r);
          }
        }
      }
      if (!merged) break;
    }
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      if (!touched[c]) continue;
      table& t = tables_[c];
      std::size_t out = 0;
      for (std::size_t r = 0; r < t.row_count(); ++r) {
        if (t.cells[r * t.width + t.arity] == dead) continue;
        if (out != r) std::copy_n(&t.cells[r * t.width], t.width, &t.cells[out * t.width]);
        ++out;
      }
      t.cells.resize(out * t.width);
      rehash(t);
    }
    ++epoch_;
  }

  // --- search -------------------------------------------------------------------------------

  // Builds (once per rebuilt state) the index of table `c` by column `col`.
  void ensure_index(std::uint32_t c, std::uint32_t col) {
    table& t = tables_[c];
    if (t.index_offsets.size() < t.width) {
      t.index_offsets.resize(t.width);
      t.index_rows.resize(t.width);
      t.index_epoch.resize(t.width, ~std::uint64_t{0});
    }
    if (t.index_epoch[col] == epoch_) return;
    t.index_epoch[col] = epoch_;
    const bool literal_column = col < t.arity && !t.datatype_column[col];
    const std::size_t domain = literal_column ? prog_->literals.size() : parent_.size();
    auto& offsets = t.index_offsets[col];
    auto& rows = t.index_rows[col];
    offsets.assign(domain + 1, 0);
    const std::size_t n = t.row_count();
    for (std::size_t r = 0; r < n; ++r) ++offsets[t.cells[r * t.width + col] + 1];
    for (std::size_t i = 0; i < domain; ++i) offsets[i + 1] += offsets[i];
    rows.resize(n);
    std::vector<std::uint32_t> cursor(offsets.begin(), offsets.end() - 1);
    for (std::size_t r = 0; r < n; ++r)
      rows[cursor[t.cells[r * t.width + col]]++] = static_cast<std::uint32_t>(r);
  }

  struct search_context {
    const query_plan* plan;
    std::uint32_t regs[max_arity * 4];
    std::vector<std::uint32_t>* out;
  };

  // Tries row `r` of atom `k`: checks and binds its columns, then continues with atom k + 1.
  void match_row(search_context& ctx, std::size_t k, std::uint32_t r) const {
    const plan_atom& atom = ctx.plan->atoms[k];
    const table& t = tables_[atom.ctor];
    const std::uint32_t* cells = &t.cells[std::size_t{r} * t.width];
    for (std::uint32_t c = 0; c < t.width; ++c) {
      const plan_column& col = atom.columns[c];
      switch (col.op) {
        case column_op::bind:
          ctx.regs[col.value] = cells[c];
          break;
        case column_op::check:
          if (ctx.regs[col.value] != cells[c]) return;
          break;
        case column_op::literal:
          if (col.value != cells[c]) return;
          break;
      }
    }
    if (k + 1 == ctx.plan->atoms.size()) {
      for (const std::uint32_t reg : ctx.plan->saved) ctx.out->push_back(ctx.regs[reg]);
      return;
    }
    const plan_atom& next = ctx.plan->atoms[k + 1];
    const table& nt = tables_[next.ctor];
    const plan_column& key = next.columns[next.key_column];
    const std::uint32_t value = key.op == column_op::literal ? key.value : ctx.regs[key.value];
    const auto& offsets = nt.index_offsets[next.key_column];
    if (value + 1 >= offsets.size()) return;
    const auto& rows = nt.index_rows[next.key_column];
    for (std::uint32_t i = offsets[value]; i < offsets[value + 1]; ++i)
      match_row(ctx, k + 1, rows[i]);
  }

  std::vector<std::uint32_t> search(const query_plan& plan) {
    for (const auto& [c, col] : plan.index_keys()) ensure_index(c, col);
    const plan_atom& first = plan.atoms[0];
    const table& t = tables_[first.ctor];
    // Candidate rows of the first atom: all, or those holding its literal.
    const std::uint32_t* candidates = nullptr;
    std::size_t count = t.row_count();
    if (first.key_column != no_column) {
      const auto& offsets = t.index_offsets[first.key_column];
      const std::uint32_t lit = first.columns[first.key_column].value;
      if (lit + 1 >= offsets.size()) return {};
      candidates = &t.index_rows[first.key_column][offsets[lit]];
      count = offsets[lit + 1] - offsets[lit];
    }
    const unsigned workers =
        count < 4096 ? 1u : static_cast<unsigned>(std::min<std::size_t>(threads_, count / 2048));
    std::vector<std::vector<std::uint32_t>> parts(workers);
    auto work = [&](unsigned w) {
      search_context ctx{&plan, {}, &parts[w]};
      const std::size_t begin = count * w / workers;
      const std::size_t end = count * (w + 1) / workers;
      for (std::size_t i = begin; i < end; ++i)
        match_row(ctx, 0, candidates != nullptr ? candidates[i] : static_cast<std::uint32_t>(i));
    };
    if (workers == 1) {
      work(0);
      return std::move(parts[0]);
    }
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& th : pool) th.join();
    std::size_t total = 0;
    for (const auto& p : parts) total += p.size();
    std::vector<std::uint32_t> out;
    out.reserve(total);
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  }

  // --- apply --------------------------------------------------------------------------------

  void apply(const query_plan& plan, const std::vector<std::uint32_t>& matches) {
    const std::size_t width = plan.saved.size();
    std::vector<std::uint32_t> temps(plan.actions.size());
    std::uint32_t key[max_arity];
    for (std::size_t m = 0; m < matches.size(); m += width) {
      const std::uint32_t* saved = &matches[m];
      auto value = [&](const operand& o) {
        switch (o.kind) {
          case operand_kind::saved:
            return saved[o.value];
          case operand_kind::literal:
            return o.value;
          case operand_kind::temp:
            return temps[o.value];
        }
        return o.value;
      };
      for (std::size_t s = 0; s < plan.actions.size(); ++s) {
        const make_node& step = plan.actions[s];
        for (std::size_t a = 0; a < step.args.size(); ++a) key[a] = value(step.args[a]);
        temps[s] = lookup_or_insert(step.ctor, key);
      }
      unite(saved[0], value(plan.result));
    }
  }

  // --- limits -------------------------------------------------------------------------------

  snapshot take_snapshot() const {
    snapshot s;
    for (const table& t : tables_) s.cells.push_back(t.cells);
    s.parent = parent_;
    return s;
  }
  void restore(snapshot s) {
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      tables_[c].cells = std::move(s.cells[c]);
      rehash(tables_[c]);
    }
    parent_ = std::move(s.parent);
    ++epoch_;
  }

  // --- extraction ---------------------------------------------------------------------------

  std::vector<detail::flat_table> flat_tables() const {
    std::vector<detail::flat_table> out;
    for (const table& t : tables_) out.push_back({t.cells.data(), t.row_count(), t.width});
    return out;
  }

  void compute_costs() const {
    if (cost_epoch_ == epoch_ + 1) return;
    costs_.compute(*prog_, flat_tables(), parent_.size());
    cost_epoch_ = epoch_ + 1;
  }

  const program* prog_;
  unsigned threads_ = 1;
  std::vector<table> tables_;
  std::vector<std::uint32_t> parent_;
  std::vector<query_plan> plans_;
  std::vector<std::uint32_t> global_class_;
  std::uint64_t iteration_ = 0;
  std::uint64_t epoch_ = 0;
  mutable std::uint64_t cost_epoch_ = 0;
  mutable detail::tree_costs costs_;
};

}  // namespace vyre::eqsat
