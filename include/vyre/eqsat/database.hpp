// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::declarations` (what a program declared: sorts, functions, rules, rulesets,
//! primitives) and `vyre::eqsat::database` (what it holds: one `table` per function, the
//! values, the id space and the timestamps), the state every engine reads and writes.
//!
//! A table's rows are u32 cells `(keys..., value)`, each with a timestamp and a state, kept in
//! the order they were written: a row whose value (or subsumed flag, or a key, on rebuild)
//! changes is written again at the end and its old copy goes stale, as egglog stores them.
//! Timestamps only grow, so a table's rows are sorted by timestamp and the rows new to a rule
//! (written at or after the rule last ran) are a suffix: seminaive evaluation finds them with
//! one binary search. A hash index on the keys finds the one live row of a key.
//!
//! Because rows are only appended or retired, an iteration run under a limit is undone without
//! a copy of the tables (`database::begin_undo`): each table keeps its row count and the rows it
//! retired below it, the id space and the containers are copied (a word per id, and containers
//! are few), and the value pools keep their sizes.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/parallel.hpp"
#include "vyre/detail/zero_pages.hpp"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/ir.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

namespace detail {
//! A fresh table version (`table::version`): one counter for every table of the process.
inline std::uint64_t next_table_version() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace detail

//! What a program has declared so far. The front end adds to it; engines read it.
struct declarations {
  std::vector<sort_info> sorts;
  std::unordered_map<std::string, std::uint32_t> sort_ids;
  std::vector<function_decl> functions;
  std::unordered_map<std::string, std::uint32_t> function_ids;
  std::vector<rule_decl> rules;
  std::vector<ruleset_decl> rulesets;  //!< ruleset 0 is the default one, named ""
  std::unordered_map<std::string, std::uint32_t> ruleset_ids;
  prim_catalog prims;
  VYRE_HOST_SPECIAL_MEMBERS(declarations);

  const sort_info& sort_of(std::uint32_t s) const noexcept { return sorts[s]; }
  std::int64_t find_function(std::string_view name) const {
    auto it = function_ids.find(std::string(name));
    return it == function_ids.end() ? -1 : static_cast<std::int64_t>(it->second);
  }
  std::int64_t find_sort(std::string_view name) const {
    auto it = sort_ids.find(std::string(name));
    return it == sort_ids.end() ? -1 : static_cast<std::int64_t>(it->second);
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(declarations);

enum class row_state : std::uint8_t { live = 0, subsumed = 1, stale = 2 };

//! The rows of one function (see the file comment).
class table {
 public:
  static constexpr std::uint32_t no_row = 0xffffffffu;
  //! Rows a table may hold, stale ones included (row ids and index slots are u32).
  static constexpr std::size_t max_rows = 0xfffffff0u;
  VYRE_HOST_SPECIAL_MEMBERS(table);

  void configure(std::uint32_t arity, std::vector<std::uint8_t> id_columns) {
    changed_ = true;
    arity_ = arity;
    width_ = arity + 1;
    id_columns_ = std::move(id_columns);
    has_ids_ = std::find(id_columns_.begin(), id_columns_.end(), 1) != id_columns_.end();
    reset_index(16);
  }

  //! A number that changes whenever the rows change (their cells, states or places) and is
  //! the same for two tables only when one is a copy of the other, unchanged since: what a
  //! search index built over the rows depends on (every write goes through the table's own
  //! members). Assigned when first asked after a change: one caller at a time.
  std::uint64_t version() const noexcept {
    if (changed_) {
      version_ = detail::next_table_version();
      changed_ = false;
    }
    return version_;
  }

  std::uint32_t arity() const noexcept { return arity_; }
  std::uint32_t width() const noexcept { return width_; }
  //! Rows stored, stale ones included (row ids run below it).
  std::size_t rows() const noexcept { return states_.size(); }
  //! Live and subsumed rows: egglog's size of the function.
  std::size_t size() const noexcept { return present_; }
  std::size_t stale() const noexcept { return rows() - present_; }
  bool holds_ids() const noexcept { return has_ids_; }
  bool id_column(std::uint32_t c) const noexcept { return id_columns_[c] != 0; }

  const value* row(std::size_t r) const noexcept { return cells_.data() + r * width_; }
  value* row(std::size_t r) noexcept { return cells_.data() + r * width_; }
  value value_of(std::size_t r) const noexcept { return cells_[r * width_ + arity_]; }
  std::uint32_t stamp(std::size_t r) const noexcept { return stamps_[r]; }
  row_state state(std::size_t r) const noexcept { return static_cast<row_state>(states_[r]); }
  const std::vector<value>& cells() const noexcept { return cells_; }

  //! The first row written at or after timestamp `ts` (rows are sorted by timestamp).
  std::size_t first_row_at(std::uint32_t ts) const noexcept {
    return static_cast<std::size_t>(std::lower_bound(stamps_.begin(), stamps_.end(), ts) -
                                    stamps_.begin());
  }

  //! The live or subsumed row of `keys`, or `no_row`.
  std::uint32_t find(const value* keys) const noexcept {
    return find(keys, detail::row_hash(keys, arity_));
  }
  //! `find` of `keys` whose `detail::row_hash` is `h`.
  std::uint32_t find(const value* keys, std::uint64_t h) const noexcept {
    const std::uint64_t tag = h >> 32;
    for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      const std::uint64_t slot = slots_[i];
      if (slot == 0) return no_row;
      const auto low = static_cast<std::uint32_t>(slot);
      if (low == tombstone || (slot >> 32) != tag) continue;
      const std::uint32_t r = low - 1;
      if (detail::same_row(row(r), keys, arity_)) return r;
    }
  }

  //! Appends a row with `keys` (no live row may have them), value `v`, stamp `ts`.
  expected<std::uint32_t> append(const value* keys, value v, std::uint32_t ts, row_state st) {
    if (rows() >= max_rows)
      return fail(error(errc::abi_limit, "a table would hold more rows than vyre indexes")
                      .with("rows", rows())
                      .fix("stop earlier with --node-limit"));
    const auto r = static_cast<std::uint32_t>(rows());
    cells_.insert(cells_.end(), keys, keys + arity_);
    changed_ = true;
    cells_.push_back(v);
    stamps_.push_back(ts);
    states_.push_back(static_cast<std::uint8_t>(st));
    ++present_;
    if ((used_slots_ + 1) * 2 > slots_.size())
      reindex();
    else
      insert_slot(detail::row_hash(keys, arity_), r);
    return r;
  }

  //! Appends `n` rows `cells` (`width()` words each) stamped `ts`, whose keys are distinct and
  //! held by no live row (the fresh rows of an apply, the canonical rows of a rebuild), and
  //! indexes them on up to `threads` threads. `states`: row i's state (null: all live).
  //! @returns `errc::abi_limit`, with nothing appended, past `max_rows`.
  expected<void> append_distinct(const value* cells, std::size_t n, std::uint32_t ts,
                                 unsigned threads, const row_state* states = nullptr) {
    if (n == 0) return {};
    if (n > max_rows - rows())
      return fail(error(errc::abi_limit, "a table would hold more rows than vyre indexes")
                      .with("rows", rows())
                      .with("appended", n)
                      .fix("stop earlier with --node-limit"));
    const std::size_t first = rows();
    vyre::detail::reserve_on_huge_pages(cells_, cells_.size() + n * width_);
    vyre::detail::reserve_on_huge_pages(stamps_, first + n);
    vyre::detail::reserve_on_huge_pages(states_, first + n);
    cells_.insert(cells_.end(), cells, cells + n * width_);
    stamps_.resize(first + n, ts);
    states_.resize(first + n, static_cast<std::uint8_t>(row_state::live));
    if (states != nullptr)
      for (std::size_t i = 0; i < n; ++i) states_[first + i] = static_cast<std::uint8_t>(states[i]);
    changed_ = true;
    present_ += n;
    if ((used_slots_ + n) * 2 > slots_.size()) {
      // Room for half as many rows again: the batches of an apply regrow it every 1.5x to 3x
      // of growth, and it takes as many slots as room for twice the rows would, or half as
      // many (its fresh pages are most of what a growth costs).
      index_rows(present_ + present_ / 2, threads);
    } else {
      index_range(first, rows(), threads);
    }
    return {};
  }

  //! Starts fetching the first key index slot of a key whose hash is `h` (a `find` of it soon
  //! after, among many random ones, then does not wait for memory alone).
  void prefetch(std::uint64_t h) const noexcept { __builtin_prefetch(&slots_[h & mask_]); }

  //! Room in the key index for `more` appends without growing it again: a batch of appends
  //! (an iteration's merge) rehashes the rows once, on up to `threads` threads, instead of at
  //! every doubling.
  void reserve(std::size_t more, unsigned threads = 1) {
    if ((used_slots_ + more) * 2 <= slots_.size()) return;
    vyre::detail::reserve_on_huge_pages(cells_, cells_.size() + more * width_);
    vyre::detail::reserve_on_huge_pages(stamps_, stamps_.size() + more);
    vyre::detail::reserve_on_huge_pages(states_, states_.size() + more);
    index_rows(present_ + more, threads);
  }

  //! Marks row `r` stale and drops it from the key index (remembered for `roll_back` while an
  //! undo record is kept).
  void retire(std::uint32_t r) {
    if (state(r) == row_state::stale) return;
    changed_ = true;
    if (undoing_ && r < undo_rows_) undo_.emplace_back(r, states_[r]);
    drop_slot(r);
    states_[r] = static_cast<std::uint8_t>(row_state::stale);
    --present_;
  }

  //! `retire` of every row of `rows` (distinct, none stale), their key index entries dropped on
  //! up to `threads` threads (each row's own slot: no two threads write one).
  void retire_distinct(const std::vector<std::uint32_t>& rows, unsigned threads) {
    if (rows.empty()) return;
    changed_ = true;
    if (undoing_)
      for (const std::uint32_t r : rows)
        if (r < undo_rows_) undo_.emplace_back(r, states_[r]);
    const unsigned chunks = vyre::detail::chunk_count(threads, rows.size(), std::size_t{1} << 14);
    vyre::detail::parallel_chunks((std::max)(1u, chunks), rows.size(),
                                  [&](unsigned, std::size_t from, std::size_t to) {
                                    // Each row's first slot is fetched `ahead` rows early, as
                                    // `index_range` does: the drops are random reads of an index
                                    // far larger than the caches.
                                    constexpr std::size_t ahead = 16;
                                    std::uint64_t hashes[ahead];
                                    const auto fetch = [&](std::size_t i) {
                                      hashes[i % ahead] = detail::row_hash(row(rows[i]), arity_);
                                      __builtin_prefetch(&slots_[hashes[i % ahead] & mask_], 1);
                                    };
                                    for (std::size_t i = from; i < to && i < from + ahead; ++i)
                                      fetch(i);
                                    for (std::size_t i = from; i < to; ++i) {
                                      const std::uint64_t h = hashes[i % ahead];
                                      if (i + ahead < to) fetch(i + ahead);
                                      const std::uint32_t r = rows[i];
                                      drop_slot(r, h);
                                      states_[r] = static_cast<std::uint8_t>(row_state::stale);
                                    }
                                  });
    present_ -= rows.size();
  }

  //! Marks live row `r` subsumed: kept for lookups, not matched (a state coming back from the
  //! GPU engine, which keeps a table's subsumed keys beside it).
  void mark_subsumed(std::uint32_t r) noexcept {
    if (state(r) != row_state::live) return;
    states_[r] = static_cast<std::uint8_t>(row_state::subsumed);
    changed_ = true;
  }

  //! Starts an undo record: `roll_back` puts the rows back as they are now.
  void begin_undo() {
    undo_rows_ = rows();
    undo_.clear();
    undoing_ = true;
  }
  //! Ends the undo record, keeping every write since `begin_undo`.
  void end_undo() noexcept {
    undoing_ = false;
    undo_ = {};
  }
  //! Puts the rows back as they were at `begin_undo`: the rows retired below its row count
  //! come back in their old state, the rows appended since are dropped. Ends the record; the
  //! key index is rebuilt on up to `threads` threads.
  void roll_back(unsigned threads = 1) {
    for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) states_[it->first] = it->second;
    changed_ = true;
    cells_.resize(undo_rows_ * width_);
    stamps_.resize(undo_rows_);
    states_.resize(undo_rows_);
    present_ =
        static_cast<std::size_t>(std::count_if(states_.begin(), states_.end(), [](std::uint8_t st) {
          return st != static_cast<std::uint8_t>(row_state::stale);
        }));
    end_undo();
    reindex(threads);
  }

  //! Compacts the table once more than half its live rows (and 1024) are stale; not while an
  //! undo record is kept (it names rows by their place).
  void compact_if_sparse(unsigned threads = 1) {
    if (!undoing_ && stale() > size() / 2 + 1024) compact(threads);
  }

  //! Drops the stale rows (keeping the others' order) and rebuilds the key index on up to
  //! `threads` threads.
  void compact(unsigned threads = 1) {
    if (stale() == 0) return;
    changed_ = true;
    std::size_t out = 0;
    for (std::size_t r = 0; r < rows(); ++r) {
      if (state(r) == row_state::stale) continue;
      if (out != r) {
        std::copy_n(row(r), width_, row(out));
        stamps_[out] = stamps_[r];
        states_[out] = states_[r];
      }
      ++out;
    }
    cells_.resize(out * width_);
    stamps_.resize(out);
    states_.resize(out);
    reindex(threads);
  }

  //! Replaces every row with `cells` (`width()` words per row, distinct keys), all live and
  //! stamped `ts`, and indexes them once on up to `threads` threads.
  expected<void> assign(std::vector<value> cells, std::uint32_t ts, unsigned threads = 1) {
    std::vector<std::uint32_t> stamps(cells.size() / width_, ts);
    return assign(std::move(cells), std::move(stamps), threads);
  }
  //! Replaces every row with `cells` (`width()` words per row, distinct keys), all live, row r
  //! stamped `stamps[r]` (ascending), and indexes them once on up to `threads` threads (a
  //! whole table coming back from the device).
  expected<void> assign(std::vector<value> cells, std::vector<std::uint32_t> stamps,
                        unsigned threads = 1) {
    const std::size_t n = cells.size() / width_;
    if (n > max_rows)
      return fail(error(errc::abi_limit, "a table would hold more rows than vyre indexes")
                      .with("rows", n)
                      .fix("stop earlier with --node-limit"));
    if (stamps.size() != n || !std::is_sorted(stamps.begin(), stamps.end()))
      return fail(error(errc::invalid_argument,
                        "a table's rows must come with one ascending timestamp each")
                      .with("rows", n)
                      .with("timestamps", stamps.size())
                      .fix("order the rows by their timestamps"));
    cells_ = std::move(cells);
    cells_.resize(n * width_);
    changed_ = true;
    stamps_ = std::move(stamps);
    states_.assign(n, static_cast<std::uint8_t>(row_state::live));
    present_ = n;
    reindex(threads);
    return {};
  }

  //! Empties the table (its configuration stays).
  void clear() {
    changed_ = true;
    cells_.clear();
    stamps_.clear();
    states_.clear();
    present_ = 0;
    reset_index(16);
  }

 private:
  static constexpr std::uint32_t tombstone = 0xffffffffu;

  void reset_index(std::size_t capacity) {
    std::size_t size = 16;
    while (size < capacity * 2) size <<= 1;
    // Fresh zero pages, not a fill: an index of a gigabyte would otherwise be written once on
    // one thread before the threads that fill it touch it again.
    slots_ = slot_vector(size);
    mask_ = size - 1;
    used_slots_ = 0;
  }
  void insert_slot(std::uint64_t h, std::uint32_t r) noexcept {
    for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      if (slots_[i] == 0) {
        slots_[i] = ((h >> 32) << 32) | (std::uint64_t{r} + 1);
        ++used_slots_;
        return;
      }
    }
  }
  //! Puts rows [begin, end) that are not stale into the key index (which has room for them)
  //! on up to `threads` threads: a slot is claimed by a compare-and-swap from empty, so the
  //! slots a key lands in vary between runs, never what `find` answers.
  void index_range(std::size_t begin, std::size_t end, unsigned threads) {
    const unsigned chunks = vyre::detail::chunk_count(threads, end - begin, std::size_t{1} << 16);
    if (chunks < 2) {
      for (std::size_t r = begin; r < end; ++r)
        if (state(r) != row_state::stale)
          insert_slot(detail::row_hash(row(r), arity_), static_cast<std::uint32_t>(r));
      return;
    }
    std::vector<std::size_t> inserted(chunks, 0);
    vyre::detail::parallel_chunks(
        chunks, end - begin, [&](unsigned c, std::size_t from, std::size_t to) {
          // Each row's first slot is fetched `ahead` rows early: the inserts are random reads
          // of an array far larger than the caches, and one at a time they would wait in turn.
          constexpr std::size_t ahead = 16;
          std::uint64_t hashes[ahead];
          const std::size_t lo = begin + from, hi = begin + to;
          const auto fetch = [&](std::size_t r) {
            hashes[r % ahead] = detail::row_hash(row(r), arity_);
            __builtin_prefetch(&slots_[hashes[r % ahead] & mask_], 1);
          };
          for (std::size_t r = lo; r < hi && r < lo + ahead; ++r) fetch(r);
          std::size_t count = 0;
          for (std::size_t r = lo; r < hi; ++r) {
            const std::uint64_t h = hashes[r % ahead];
            if (r + ahead < hi) fetch(r + ahead);
            if (state(r) == row_state::stale) continue;
            const std::uint64_t entry = ((h >> 32) << 32) | (std::uint64_t{r} + 1);
            for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
              std::atomic_ref<std::uint64_t> slot(slots_[i]);
              std::uint64_t empty = 0;
              if (slot.load(std::memory_order_relaxed) == 0 &&
                  slot.compare_exchange_strong(empty, entry, std::memory_order_relaxed))
                break;
            }
            ++count;
          }
          inserted[c] = count;
        });
    for (const std::size_t count : inserted) used_slots_ += count;
  }
  //! Marks row `r`'s key index slot a tombstone; atomic, for `retire_distinct`'s threads, which
  //! read slots other threads write.
  void drop_slot(std::uint32_t r) noexcept { drop_slot(r, detail::row_hash(row(r), arity_)); }
  //! `drop_slot` of row `r`, whose key's `detail::row_hash` is `h`.
  void drop_slot(std::uint32_t r, std::uint64_t h) noexcept {
    for (std::uint64_t i = h & mask_;; i = (i + 1) & mask_) {
      std::atomic_ref<std::uint64_t> slot(slots_[i]);
      const std::uint64_t held = slot.load(std::memory_order_relaxed);
      if (held == 0) return;
      if (static_cast<std::uint32_t>(held) == r + 1) {
        slot.store((held & ~std::uint64_t{0xffffffffu}) | tombstone, std::memory_order_relaxed);
        return;
      }
    }
  }
  void reindex(unsigned threads = 1) {
    index_rows((std::max)(present_ + 1, std::size_t{8}), threads);
  }
  //! A key index for `capacity` rows holding every row that is not stale, filled on up to
  //! `threads` threads.
  void index_rows(std::size_t capacity, unsigned threads) {
    reset_index(capacity);
    index_range(0, rows(), threads);
  }

  // `version`: assigned when asked after a change (a store per write, not a counter's atomic).
  mutable bool changed_ = true;
  mutable std::uint64_t version_ = 0;
  std::uint32_t arity_ = 0;
  std::uint32_t width_ = 1;
  std::vector<std::uint8_t> id_columns_;
  bool has_ids_ = false;
  std::vector<value> cells_;
  std::vector<std::uint32_t> stamps_;
  std::vector<std::uint8_t> states_;
  std::size_t present_ = 0;
  using slot_vector = std::vector<std::uint64_t, vyre::detail::zero_page_allocator<std::uint64_t>>;
  slot_vector slots_;  // 0 empty; else (hash tag << 32) | (row + 1 or tombstone)
  std::uint64_t mask_ = 0;
  std::size_t used_slots_ = 0;  // occupied slots, tombstones included
  // The undo record: rows at `begin_undo`, and (row, state before) of rows retired below it.
  bool undoing_ = false;
  std::size_t undo_rows_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint8_t>> undo_;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(table);

namespace detail {
//! What `database::roll_back` restores besides the tables' own records.
struct database_undo {
  bool active = false;
  id_space ids;
  container_store containers;
  base_values::pool_sizes base;
  std::uint32_t now = 0;
  std::vector<std::uint32_t> last_run;
  std::size_t tables = 0;
  VYRE_HOST_SPECIAL_MEMBERS(database_undo);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(database_undo);
}  // namespace detail

//! Everything a program's run holds: values, ids, tables and the clock of its timestamps.
struct database {
  base_values base;
  id_space ids;
  container_store containers;
  std::vector<table> tables;  //!< indexed like `declarations::functions`
  //! The timestamp the next write gets (egglog's starts at 1; 0 means "before anything").
  std::uint32_t now = 1;
  //! Per rule (indexed like `declarations::rules`): the timestamp of its last run, 0 before.
  std::vector<std::uint32_t> last_run;
  VYRE_HOST_SPECIAL_MEMBERS(database);

  //! Adds the table of function `f` of `decl` (call in declaration order).
  void add_table(const declarations& decl, std::uint32_t f) {
    const function_decl& fn = decl.functions[f];
    std::vector<std::uint8_t> id_columns(fn.arity() + 1);
    for (std::uint32_t c = 0; c < fn.arity(); ++c) id_columns[c] = decl.sorts[fn.inputs[c]].is_id;
    id_columns[fn.arity()] = decl.sorts[fn.output].is_id;
    if (tables.size() <= f) tables.resize(f + 1);
    tables[f].configure(fn.arity(), std::move(id_columns));
  }
  //! Live and subsumed rows over every table.
  std::uint64_t total_rows() const noexcept {
    std::uint64_t n = 0;
    for (const table& t : tables) n += t.size();
    return n;
  }

  //! Starts an undo record (see the file comment): `roll_back` restores the database as it is
  //! now, `keep` keeps what was written since. Tables added meanwhile are emptied on roll back.
  void begin_undo() {
    drop_undo();
    undo_.ids = ids;
    undo_.containers = containers;
    undo_.base = base.sizes();
    undo_.now = now;
    undo_.last_run = last_run;
    undo_.tables = tables.size();
    for (table& t : tables) t.begin_undo();
    undo_.active = true;
  }
  //! Ends the undo record, keeping the writes, and compacts the tables it kept sparse (their
  //! key indexes rebuilt on up to `threads` threads).
  void keep(unsigned threads = 1) {
    if (!undo_.active) return;
    drop_undo();
    for (table& t : tables) t.compact_if_sparse(threads);
  }
  //! Ends the undo record, keeping the writes as they are (after an error).
  void drop_undo() noexcept {
    undo_ = detail::database_undo{};
    for (table& t : tables) t.end_undo();
  }
  //! Restores the database as it was at `begin_undo` (key indexes rebuilt on up to `threads`
  //! threads).
  void roll_back(unsigned threads = 1) {
    if (!undo_.active) return;
    for (std::size_t f = 0; f < tables.size(); ++f) {
      if (f < undo_.tables)
        tables[f].roll_back(threads);
      else
        tables[f].clear();
    }
    ids = std::move(undo_.ids);
    containers = std::move(undo_.containers);
    base.truncate(undo_.base);
    now = undo_.now;
    last_run = std::move(undo_.last_run);
    undo_ = detail::database_undo{};
  }

 private:
  detail::database_undo undo_;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(database);

}  // namespace vyre::eqsat
