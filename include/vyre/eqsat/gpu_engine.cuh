// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::gpu_engine`: iterations of the relational core (`ir.hpp`, `database.hpp`) on
//! the GPU, with the rows per table and the e-classes `cpu_engine` gives.
//!
//!     // the engine, or its error as the backend's error policy says (here: thrown)
//!     auto engine = vyre::eqsat::gpu_engine<vyre::backend<>>::create(gpu, decl, db);
//!     vyre::eqsat::iteration_report r = engine.run_iteration(ruleset);  // db is stale now
//!     engine.download(db);                                              // db holds it again
//!
//! Most programs reach the engine through `gpu_offload` (`gpu_offload.cuh`), which a
//! `session` asks before every iteration. What the engine runs (`gpu_resident_check`,
//! `device::plan_rule`): every table that holds ids (the "resident" tables, with the functions
//! of base sorts the device merges) must be a constructor's, or a function's merged by `new`,
//! with `:no-merge`, or by `min`, `max`, `and` or `or` (`device::device_merge`), over eq and base
//! sorts, and no container may hold ids; every rule matches table atoms and device primitives (i64
//! arithmetic and comparisons, `!=`) and runs primitive calls, lookups, makes, sets, subsumes,
//! deletes, panics and unions. A table that is subsumed keeps its subsumed keys in a table of their
//! own beside it, which the search's atoms skip and `download` turns back into row states; a table
//! rules delete from keeps the keys an iteration deletes beside it, taken out before the rebuild
//! (`delete_rows`).
//! The other tables stay on the host untouched: no rule the engine runs reads or writes them.
//! A primitive that meets an i64 outside [0, 2^31), a lookup that misses, a set of an i64 the
//! device does not order and two values of a `:no-merge` function for one key set a device
//! flag; the iteration is then rolled back and handed to the CPU engine (`met_outside_values`),
//! which decides it (the last one is its error).
//!
//! State on the device, one block (`layout`): per resident table its rows of u32
//! `(keys..., value)` (see `device/plan.hpp`) and a timestamp per row (egglog's: the row's last
//! change, `database`'s), then a union-find `parent` over the id space
//! (`values.hpp`'s `id_space`: e-class and container ids, the representative always the
//! smallest id of its class); the class-id count on the host. `create` uploads the live rows
//! (canonical after a host rebuild) and every id's representative; ids made on the device
//! continue the id space, and `download` hands rows and ids back. Tables and union-find grow by
//! capacity class (`detail::gpu_capacity_class`: powers of two up to 1M rows or ids, where they
//! only grow, so a slowly growing e-graph keeps its shape and its captured rebuild; exact above,
//! where the apply knows its final sizes from the match totals, and a rebuild that leaves a fifth
//! of the block unused moves it to the sizes of what is left).
//!
//! Iteration (seminaive, as the CPU engine: a rule last run at timestamp `mid` keeps the matches
//! with a row stamped at or after `mid`, the union of egglog's variants, where it sets a
//! `:merge new` or `:no-merge` function or that drops half its matches or more, `filters_new`;
//! a `:naive` rule, one that never ran, and one whose matches are mostly new keep every match,
//! which for their idempotent writes gives the same e-graph):
//! 1. Search: every rule's `device::rule_plan`, flattened into `device::flat_query`, joins
//!    level by level in one `device::join_search` (ematch.cuh): a thread per partial match
//!    counts its candidates in the next atom's index (rows sorted by the key column or a pair
//!    of columns, found by binary search; a table is sorted by its arguments after every
//!    rebuild and needs no index for its first one or two), a scan places them, a thread per
//!    candidate extends its match. Every rule advances a level together: one host round trip
//!    per level reads every rule's candidate total; the last level writes the saved
//!    registers, of the matches that pass the seminaive check at the last level.
//! 2. Apply without hashing: a match's primitive calls and lookups first (a lookup is a binary
//!    search over the table's rows as the search found them, sorted by their keys), then every
//!    make of every match appends a row with a fresh class (`base + match * makes + step`), a
//!    set appends its row with its value, at positions known from the totals; then the match's
//!    unions run (lock-free: a CAS links the larger root under the smaller). A fresh row equal
//!    to an existing row is merged by the rebuild's congruence, which yields the e-graph
//!    `cpu_engine`'s lookup-or-insert yields; a function's rows of one key are folded by its
//!    merge in the rebuild's dedupe.
//! 3. Rebuild, one launch of a captured graph per shape (the tables' and union-find's
//!    capacities and the buffers they live in; `graph::graph_cache`, counters in
//!    `rebuild_graph_stats`; a shape met for the first time runs the same passes launched,
//!    with a flag read back per round, and is captured when it comes back): a device loop
//!    (`graph::build_fixpoint_graph`) of rounds
//!    {compress the union-find; canonicalize every id column (a row that changes takes the
//!    iteration's timestamp); insert the rows whose keys moved (every row in the first round)
//!    into each constructor table's congruence index in the arena, uniting the values of rows
//!    with equal keys} until a round unites nothing, decided on the device;
//!    then sort each table's rows by their keys once (LSD: stable radix sorts of a row
//!    permutation, last key first, in the arena's double buffers, rows beyond those in use
//!    sorted last; then the rows permuted in place a column at a time) and drop duplicate rows
//!    (compacted in place; a function's rows of one key keep the fold of their values, and a
//!    fold that changed a value the table held counts as a change of the iteration, since the
//!    rows stay as many; a kept row keeps the oldest timestamp of the rows that held it exactly,
//!    as the CPU engine's merge leaves a row it did not change). The rows in use are uploaded
//!    before the launch
//!    (`device::table_ref::live`), so a slowly growing e-graph replays one graph; CUB's
//!    scratch is one block the graphs keep (`scratch_block_resource`). The counts come back in
//!    one copy.
//! 4. Counts: rows per table; e-classes = roots of the id space that are not containers;
//!    `unions` = classes that existed before the iteration and were merged away; the iteration
//!    changed the e-graph when that is not zero or the rows changed.
//!
//! Every iteration starts with a device copy of the committed state (tables and union-find;
//! about a tenth of the iteration's peak on growing programs): an iteration that ends past the
//! deadline, or fails (out of device memory, a CUDA error), is rolled back to it; the report
//! says which limit (`iteration_report::stopped`), an error comes back as the error. Under a
//! node limit (rows over every table, the host's too) the search checks itself: when a join
//! level's candidates, or its matches, outgrow the CPU engine's match budget, or its matches
//! could add rows past the limit, the iteration is rolled back before its apply as
//! `iteration_stop::handed_to_cpu`, and the session runs it on the CPU engine. So the device
//! never holds more than the limit allows, and both engines stop at the same iteration.
//!
//! Host round trips per iteration: the match totals; the rebuild's report (kept rows of every
//! table, the roots for the counts, the loop's convergence), and on a rebuild shape's first
//! meeting one flag per round; the canonical class of each id literal of the rules.
//!
//! Device memory at the peak (math.egg iteration 12 of the earlier front end, the same rows:
//! 1,047,896 e-nodes before, 15,081,413 matches adding 35,342,286 rows and as many fresh
//! classes, 36,390,182 rows before the dedupe, 15,987,528 after; 37,830,467 class ids):
//!   state block: rows before the dedupe, 12 B per binary row        436,623,872
//!                union-find, 4 B per class id ever made              151,322,112
//!   arena: max(matches 59,323,701 u32, 4 u32 per row of Add)        347,969,520
//!   snapshot of the committed state (rows, union-find; pool class)   33,554,432
//!   CUB scratch of the DoubleBuffer sorts and scans                  a few MB
//!   pool cache: released (`release_cache`) around the state's move    ~0
//! about 970 MB, 61 B per final e-node by this account (a set step appends its row with the
//! match's class and makes no fresh class, so the union-find grows less than this). Limits: a
//! table's rows below 2^31 (CUB's item counts), one rule's matches and the class ids below 2^32
//! (checked before the apply, errors name the value); `device::max_*` per rule
//! (`device::plan_rule`).
//!
//! The search, union-find and rebuild passes are the public pieces of `eqsat/device/`
//! (`ematch.cuh`, `union_find.cuh`, `rebuild.cuh`); the apply is `detail/gpu_kernels.cuh`. The
//! engine is three layers: the device state and its growth (`detail/gpu_state.cuh`), the
//! rebuild and when it is captured (`detail/gpu_rebuild.cuh`), and here the search, the apply,
//! the limits and the bridge to the host database.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/detail/gpu_kernels.cuh"
#include "vyre/eqsat/detail/gpu_rebuild.cuh"
#include "vyre/eqsat/detail/gpu_state.cuh"
#include "vyre/eqsat/device/ematch.cuh"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/eqsat/ir.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/graph/conditional.cuh"
#include "vyre/runtime/device_array.hpp"
#include "vyre/runtime/streams.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat {

namespace detail {

//! A search index built for one iteration: one block of the sort's two key and two row
//! buffers (u64 keys for an index by a pair of columns); `view` points at the sorted keys.
struct gpu_built_index {
  std::uint32_t table = 0, column = 0, column2 = device::no_column;
  device_array<std::uint32_t> block;
  device::column_index view{};
};

}  // namespace detail

//! The GPU engine on a `vyre::backend<P>` (`Backend`), which must outlive it.
template <class Backend>
class gpu_engine : private detail::gpu_rebuild {
  using clock = std::chrono::steady_clock;

 public:
  template <class T>
  using result = typename Backend::template result<T>;

  //! An engine on `gpu` holding `db`'s state (`decl` kept by reference; `db` is read now
  //! only): the live rows of every table that holds ids and every id's representative,
  //! uploaded and sorted (a rebuild that must unite and drop nothing: the rows are canonical
  //! and distinct after a host rebuild, which it checks). While the engine runs iterations,
  //! `db` is stale; `download` brings the state back.
  //! @returns / throws (the backend's error policy): `gpu_resident_check`'s error;
  //!          `errc::invalid_state` when `db`'s rows were not canonical and distinct; the
  //!          runtime's error (no stream, no memory).
  static result<gpu_engine> create(Backend& gpu, const declarations& decl, const database& db) {
    return apply_error_policy<typename Backend::error_policy>(make(gpu, decl, db));
  }

  // User-provided (not defaulted): nvcc would otherwise infer __host__ __device__ special
  // members for a type held in cuda::std::expected and reject the host-only members'.
  gpu_engine(gpu_engine&& o) noexcept
      : detail::gpu_rebuild(std::move(o)),
        decl_(o.decl_),
        backend_(o.backend_),
        container_roots_(o.container_roots_),
        unions_(o.unions_),
        outside_(std::move(o.outside_)),
        met_outside_(o.met_outside_),
        rows_at_(std::move(o.rows_at_)) {}
  gpu_engine& operator=(gpu_engine&&) = delete;
  gpu_engine(const gpu_engine&) = delete;
  gpu_engine& operator=(const gpu_engine&) = delete;
  ~gpu_engine() {}  // NOLINT(modernize-use-equals-default): see the move constructor

  const declarations& decl() const noexcept { return *decl_; }
  using detail::gpu_rebuild::capture_rebuilds;
  using detail::gpu_rebuild::rebuild_graph_stats;

  //! One iteration of ruleset `ruleset` (its rules, a combined ruleset's members'), planned
  //! now (`device::plan_rule`). A limit crossed rolls it back (`iteration_report::stopped`).
  //! @returns / throws: `errc::unsupported` naming a rule the device does not run; the
  //!          device's error (out of memory, a CUDA error), the last committed state kept.
  result<iteration_report> run_iteration(std::uint32_t ruleset,
                                         const iteration_limits& limits = {}) {
    return apply_error_policy<typename Backend::error_policy>([&]() -> expected<iteration_report> {
      VYRE_TRY_ASSIGN(const std::vector<device::rule_plan> plans, plan_ruleset(ruleset));
      return try_run(plans, limits, {});
    }());
  }
  //! One iteration of the rules `plans` (made by `device::plan_rule` over these
  //! declarations), as `run_iteration(ruleset)`. `last_run`: empty (every rule matches the
  //! whole e-graph), or per plan the timestamp of its rule's last run (`database::last_run`),
  //! so a rule that is not `:naive` finds only the matches with a row stamped since
  //! (seminaive, as the CPU engine). The iteration runs at timestamp `now()`, which moves on
  //! when it commits.
  result<iteration_report> run_iteration(std::span<const device::rule_plan> plans,
                                         const iteration_limits& limits = {},
                                         std::span<const std::uint32_t> last_run = {}) {
    return apply_error_policy<typename Backend::error_policy>(try_run(plans, limits, last_run));
  }

  //! The timestamp of the next iteration (`database::now` while the engine holds the state).
  std::uint32_t now() const noexcept { return now_; }

  //! Rows per function (indexed like the declarations at `create`): the device's for the
  //! resident tables, the host's (unchanged) for the others.
  std::vector<std::uint64_t> sizes() const {
    std::vector<std::uint64_t> out(function_count_);
    for (std::size_t f = 0; f < function_count_; ++f)
      out[f] = tables_[f].resident ? tables_[f].rows : tables_[f].host_rows;
    return out;
  }
  //! Rows over every function's table (subsumed rows included, as egglog counts them).
  std::uint64_t total_rows() const noexcept {
    std::uint64_t n = 0;
    for (std::size_t f = 0; f < function_count_; ++f)
      n += tables_[f].resident ? tables_[f].rows : tables_[f].host_rows;
    return n;
  }
  //! E-classes: roots of the id space that are not containers (as `session::eclasses`).
  std::uint64_t eclasses() const noexcept { return eclasses_ - container_roots_; }
  //! Ids made so far (the id space's size).
  std::uint64_t class_id_count() const noexcept { return ids_; }
  //! Whether the last iteration was handed back (`iteration_stop::handed_to_cpu`) because a
  //! primitive met a value the device does not decide (`device::prim_outcome::outside`): an
  //! i64 outside [0, 2^31), or a call that is an error on the CPU engine.
  bool met_outside_values() const noexcept { return met_outside_; }

  //! The representative of id `x` (read back from the device).
  result<value> find(value x) const {
    return apply_error_policy<typename Backend::error_policy>(find_on_device(x));
  }

  //! Writes the state into `db` (the database it was created from, or one like it): every
  //! resident table's rows replaced by the device's (live, with their timestamps, in the order
  //! of their timestamps as the host keeps them; where the engine keeps none,
  //! `device::keeps_timestamps`, all stamped `now()`, new to every rule's next search), the id
  //! space by the device's union-find (the ids made here extend it), and `db.now` moved past
  //! them; their key indexes are filled on up to `threads` threads (0: every core). The engine
  //! keeps its state and may run on.
  //! @returns / throws: the device's error (the host rows of a table may then be incomplete);
  //!          `errc::out_of_memory` when the host copy does not fit.
  result<void> download(database& db, unsigned threads = 0) const {
    return apply_error_policy<typename Backend::error_policy>(
        try_download(db, vyre::detail::resolve_threads(threads)));
  }

 private:
  using index = detail::gpu_built_index;

  static expected<gpu_engine> make(Backend& gpu, const declarations& decl, const database& db) {
    VYRE_TRY(gpu_resident_check(decl, db));
    VYRE_TRY_ASSIGN(stream_lease stream, gpu.streams().acquire());
    gpu_engine engine(vyre::detail::runtime_of(gpu), decl, device::subsumed_tables(decl, db),
                      device::deleted_tables(decl), std::move(stream));
    engine.backend_ = &gpu;
    engine.now_ = db.now;
    VYRE_TRY(engine.start_rebuilds());
    VYRE_TRY(engine.load(db));
    return engine;
  }

  gpu_engine(const vyre::detail::runtime_ref& runtime, const declarations& decl,
             const std::vector<std::uint8_t>& subsumed, const std::vector<std::uint8_t>& deleted,
             stream_lease stream)
      : detail::gpu_rebuild(runtime, decl, subsumed, deleted, std::move(stream)), decl_(&decl) {}

  // --- plans --------------------------------------------------------------------------------

  expected<std::vector<device::rule_plan>> plan_ruleset(std::uint32_t ruleset) const {
    if (ruleset >= decl_->rulesets.size())
      return fail(error(errc::invalid_argument, "eqsat gpu_engine: no such ruleset")
                      .with("ruleset", ruleset)
                      .with("rulesets", decl_->rulesets.size())
                      .fix("pass a ruleset of the declarations"));
    // Id literals are canonicalized against an empty database here and on the device before
    // the iteration (the host's id space is stale while the engine holds the state).
    static const database no_ids;
    std::vector<device::rule_plan> plans;
    for (const std::uint32_t r : device::ruleset_rules(*decl_, ruleset)) {
      VYRE_TRY_ASSIGN(device::rule_plan plan, device::plan_rule(*decl_, no_ids, decl_->rules[r]));
      plans.push_back(std::move(plan));
    }
    return plans;
  }

  //! Gives the allocation policy's cached free blocks back to the device when this iteration
  //! is large (its scratch above `big_scratch_bytes`): the search's freed buffers and the old
  //! state block would otherwise stay cached (and counted) through the rebuild, the peak.
  expected<void> release_cache() {
    if (arena_.size_bytes() < big_scratch_bytes || backend_ == nullptr) return {};
    return backend_->memory().release_cached();
  }

  // --- load and download --------------------------------------------------------------------

  //! `db`'s state into this new engine: the live rows of the resident tables (id columns
  //! mapped to their representatives) and every id's representative uploaded into an exact
  //! state block, then a rebuild, which sorts every table by its keys as the search expects
  //! (the rows are canonical and distinct already: it unites and drops nothing, which the
  //! counts check).
  expected<void> load(const database& db) {
    const char* what = "eqsat: load the database";
    const std::uint64_t ids = db.ids.size();
    VYRE_TRY(check_ids(ids));
    container_roots_ = 0;
    db.containers.for_each([&](value id, const container_store::entry&) {
      container_roots_ += db.ids.is_root(id) ? 1 : 0;
    });
    // The host copies first (every check before the first upload), then the uploads (pageable:
    // the copies live until the stream is synchronized below).
    std::vector<value> parent;
    VYRE_TRY(try_resize(parent, static_cast<std::size_t>(ids), what));
    for (std::size_t x = 0; x < parent.size(); ++x)
      parent[x] = db.ids.find_const(static_cast<value>(x));
    std::vector<std::vector<value>> cells(tables_.size());
    std::vector<std::vector<std::uint32_t>> stamps(tables_.size());
    std::vector<std::uint64_t> want(tables_.size(), 0);
    base_bound_ = 1;
    for (std::size_t f = 0; f < tables_.size(); ++f) {
      table& t = tables_[f];
      const bool keys_only = f >= function_count_;
      const eqsat::table& host = db.tables[t.function];
      if (!t.resident) {
        t.host_rows = host.size();
        continue;
      }
      if (t.deleted_keys) continue;  // empty between iterations
      VYRE_TRY(try_resize(cells[f], host.size() * t.width, what));
      VYRE_TRY(try_reserve(stamps[f], host.size(), what));
      std::size_t at = 0;
      for (std::size_t r = 0; r < host.rows(); ++r) {
        const row_state state = host.state(r);
        if (state == row_state::stale || (keys_only && state != row_state::subsumed)) continue;
        const value* row = host.row(r);
        stamps[f].push_back(host.stamp(r));
        for (std::uint32_t c = 0; c < t.width; ++c) {
          if (keys_only && c + 1 == t.width) {  // a subsumed key's value
            cells[f][at++] = 0;
            continue;
          }
          if (((t.class_mask >> c) & 1u) == 0) {
            base_bound_ = (std::max)(base_bound_, std::uint64_t{row[c]} + 1);
            cells[f][at++] = row[c];
            continue;
          }
          if (row[c] >= parent.size())
            return fail(error(errc::invalid_state, "eqsat gpu_engine: a row names no id")
                            .about(decl_->functions[t.function].name)
                            .with("row", r)
                            .with("id", row[c])
                            .with("ids", parent.size())
                            .fix("load a database a cpu_engine or session left"));
          cells[f][at++] = parent[row[c]];
        }
      }
      cells[f].resize(at);  // a table of subsumed keys takes only the subsumed rows
      want[f] = at / t.width;
    }
    VYRE_TRY(reserve(want, ids));
    if (!parent.empty())
      VYRE_CUDA_TRY(cudaMemcpyAsync(parent_, parent.data(), parent.size() * sizeof(value),
                                    cudaMemcpyHostToDevice, stream()),
                    what);
    ids_ = static_cast<std::uint32_t>(ids);
    for (std::size_t f = 0; f < tables_.size(); ++f) {
      if (!cells[f].empty()) {
        VYRE_CUDA_TRY(
            cudaMemcpyAsync(tables_[f].cells, cells[f].data(), cells[f].size() * sizeof(value),
                            cudaMemcpyHostToDevice, stream()),
            what);
        if (tables_[f].stamps != nullptr)
          VYRE_CUDA_TRY(cudaMemcpyAsync(tables_[f].stamps, stamps[f].data(),
                                        stamps[f].size() * sizeof(std::uint32_t),
                                        cudaMemcpyHostToDevice, stream()),
                        what);
      }
      tables_[f].rows = static_cast<std::uint32_t>(want[f]);
    }
    VYRE_TRY(rebuild(0));
    drop_big_arena();
    VYRE_TRY(fit());
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), what);
    std::uint64_t kept = 0, had = 0;
    for (std::size_t f = 0; f < tables_.size(); ++f) {
      kept += tables_[f].resident ? tables_[f].rows : 0;
      had += want[f];
    }
    const std::uint64_t roots = db.ids.roots_below(db.ids.size());
    if (kept != had || eclasses_ != roots)
      return fail(error(errc::invalid_state,
                        "eqsat gpu_engine: the database's rows were not canonical and distinct")
                      .with("rows", had)
                      .with("rows_after_rebuild", kept)
                      .with("roots", roots)
                      .with("roots_after_rebuild", eclasses_)
                      .fix("load a database after a rebuild (cpu_engine::rebuild)"));
    unions_ = db.ids.unions();
    return {};
  }

  expected<void> try_download(database& db, unsigned threads) const {
    const char* what = "eqsat: download the state";
    if (db.tables.size() < function_count_)
      return fail(error(errc::invalid_argument, "eqsat gpu_engine: the database lacks tables")
                      .with("tables", db.tables.size())
                      .with("functions", function_count_)
                      .fix("download into the database the engine was made from"));
    std::vector<value> parent;
    VYRE_TRY(try_resize(parent, ids_, what));
    VYRE_TRY(read_back(parent.data(), parent_, ids_, what));
    const auto rows_of = [&](std::size_t f, std::vector<value>& cells) -> expected<void> {
      const std::size_t words = std::size_t{tables_[f].rows} * tables_[f].width;
      VYRE_TRY(try_resize(cells, words, what));
      return read_back(cells.data(), tables_[f].cells, words, what);
    };
    for (std::size_t f = 0; f < function_count_; ++f) {
      if (!tables_[f].resident) continue;
      const std::uint32_t width = tables_[f].width, rows = tables_[f].rows;
      std::vector<value> cells;
      VYRE_TRY(rows_of(f, cells));
      // Without timestamps on the device every row is new to every rule's next search.
      std::vector<std::uint32_t> stamps;
      VYRE_TRY(try_resize(stamps, rows, what));
      if (tables_[f].stamps != nullptr) {
        VYRE_TRY(read_back(stamps.data(), tables_[f].stamps, rows, what));
      } else {
        std::fill(stamps.begin(), stamps.end(), now_);
      }
      // The device's rows are sorted by their keys, the host's by their timestamps: the
      // subsumed keys name their rows in the first order, the host takes the second.
      std::vector<std::uint8_t> subsumed;
      if (subsumed_keys_[f] != no_table) {
        VYRE_TRY(try_resize(subsumed, rows, what));
        std::vector<value> keys;
        VYRE_TRY(rows_of(subsumed_keys_[f], keys));
        for (std::size_t k = 0; k + width <= keys.size(); k += width) {
          const std::uint32_t r =
              detail::find_sorted_row(cells.data(), rows, width, keys.data() + k);
          if (r != rows) subsumed[r] = 1;
        }
      }
      // Rows already in timestamp order (all of them where the engine keeps no timestamps) go
      // as they are; the others are permuted into it.
      std::vector<std::uint32_t> order;
      if (!std::is_sorted(stamps.begin(), stamps.end())) {
        VYRE_TRY(try_resize(order, rows, what));
        for (std::uint32_t r = 0; r < rows; ++r) order[r] = r;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::uint32_t a, std::uint32_t b) { return stamps[a] < stamps[b]; });
        std::vector<value> by_stamp;
        std::vector<std::uint32_t> sorted_stamps;
        VYRE_TRY(try_resize(by_stamp, cells.size(), what));
        VYRE_TRY(try_resize(sorted_stamps, rows, what));
        for (std::uint32_t i = 0; i < rows; ++i) {
          std::copy_n(cells.data() + std::size_t{order[i]} * width, width,
                      by_stamp.data() + std::size_t{i} * width);
          sorted_stamps[i] = stamps[order[i]];
        }
        cells = std::move(by_stamp);
        stamps = std::move(sorted_stamps);
      }
      eqsat::table& host = db.tables[f];
      VYRE_TRY(host.assign(std::move(cells), std::move(stamps), threads));
      if (!subsumed.empty())
        for (std::uint32_t i = 0; i < rows; ++i)
          if (subsumed[order.empty() ? i : order[i]] != 0) host.mark_subsumed(i);
    }
    db.ids.assign(std::move(parent), unions_);
    db.now = (std::max)(db.now, keep_stamps_ ? now_ : now_ + 1);
    return {};
  }

  // --- iteration ----------------------------------------------------------------------------

  expected<iteration_report> try_run(std::span<const device::rule_plan> plans,
                                     const iteration_limits& limits,
                                     std::span<const std::uint32_t> last_run) {
    if (!last_run.empty() && last_run.size() != plans.size())
      return fail(error(errc::invalid_argument,
                        "eqsat gpu_engine: one last-run timestamp per plan, or none")
                      .with("plans", plans.size())
                      .with("timestamps", last_run.size())
                      .fix("pass database::last_run of each plan's rule"));
    for (const device::rule_plan& plan : plans) {
      const auto tabled = [&](std::uint32_t f) {
        return f < tables_.size() && tables_[f].resident;
      };
      bool ok = true;
      for (const device::plan_atom& a : plan.atoms) ok = ok && tabled(a.table);
      for (const device::make_node& m : plan.actions) ok = ok && tabled(m.table);
      for (const device::set_node& st : plan.sets) ok = ok && tabled(st.table);
      for (const device::compute_step& c : plan.computes)
        ok = ok && (c.kind != device::compute_kind::lookup || tabled(c.table));
      for (const device::make_node& m : plan.subsumed)
        ok = ok && tabled(m.table) && subsumed_keys_[m.table] != no_table;
      for (const device::make_node& m : plan.deleted)
        ok = ok && tabled(m.table) && deleted_keys_[m.table] != no_table;
      if (!ok)
        return fail(error(errc::invalid_argument,
                          "eqsat gpu_engine: a plan names a table the engine does not hold")
                        .with("rule", plan.rule)
                        .fix("plan the rules over the declarations the engine was made with"));
    }
    iteration_report report;
    VYRE_TRY_ASSIGN(snapshot saved, take_snapshot());
    auto step = iterate(plans, limits, last_run, report);
    if (!step) {
      (void)cudaStreamSynchronize(stream());
      restore(saved);
      return fail(step.error());
    }
    if (report.stopped == iteration_stop::handed_to_cpu) {
      restore(saved);
    } else if (limits.node_limit != 0 && total_rows() > limits.node_limit) {
      restore(saved);
      report.stopped = iteration_stop::node_limit;
    } else if (clock::now() > limits.deadline) {
      restore(saved);
      report.stopped = iteration_stop::time_limit;
    } else {
      unions_ += report.unions;
      ++now_;
    }
    return report;
  }

  //! The index of table `f` by `column`, or by the pair with `column2` unless that is
  //! `no_column` (built into `built` once per search).
  expected<device::column_index> index_of(std::vector<index>& built, std::uint32_t f,
                                          std::uint32_t column, std::uint32_t column2) {
    const table& t = tables_[f];
    // Rebuilt tables are sorted by their keys: by the first one (and the first two) already.
    if (column == 0 && t.width > 1 && column2 == device::no_column)
      return device::sorted_index(view(f));
    if (column == 0 && column2 == 1 && t.width > 2) return device::sorted_pair_index(view(f));
    for (const index& ix : built)
      if (ix.table == f && ix.column == column && ix.column2 == column2) return ix.view;
    index ix;
    ix.table = f;
    ix.column = column;
    ix.column2 = column2;
    ix.view = device::column_index{nullptr, nullptr, 1, t.rows};
    if (t.rows != 0) {
      const bool pair = column2 != device::no_column;
      VYRE_TRY_ASSIGN(ix.block, allocate<std::uint32_t>((pair ? 6 : 4) * std::size_t{t.rows},
                                                        "eqsat: search index"));
      const int column_bits = bits().of(view(f), column);
      if (pair) {
        VYRE_TRY_ASSIGN(ix.view, device::build_pair_index(runtime_.memory, view(f), column, column2,
                                                          column_bits, ix.block.get(), stream()));
      } else {
        VYRE_TRY_ASSIGN(ix.view, device::build_index(runtime_.memory, view(f), column, column_bits,
                                                     ix.block.get(), stream()));
      }
    }
    built.push_back(std::move(ix));
    return built.back().view;
  }

  //! `a`: `plan`'s head as the apply kernel takes it, its rows and classes not placed.
  //! @pre `plan.actions_fit<typename Actions::limits>()`
  template <class Actions>
  void actions_into(Actions& a, const device::rule_plan& plan) const noexcept {
    a = Actions{};
    a.fresh_count = static_cast<std::uint32_t>(plan.actions.size());
    a.step_count = plan.step_count();
    a.saved_count = static_cast<std::uint32_t>(plan.saved.size());
    const auto put = [&](typename Actions::step_type& g, std::uint32_t f,
                         const std::vector<device::plan_operand>& args) {
      g.cells = tables_[f].cells;
      g.stamps = tables_[f].stamps;
      g.width = tables_[f].width;
      for (std::size_t c = 0; c < args.size(); ++c) {
        g.kind[c] = static_cast<std::uint8_t>(args[c].kind);
        g.value[c] = args[c].value;
      }
    };
    a.compute_count = static_cast<std::uint32_t>(plan.computes.size());
    for (std::size_t c = 0; c < plan.computes.size(); ++c) {
      const device::compute_step& step = plan.computes[c];
      auto& g = a.computes[c];
      g.op = step.op;
      g.arg_count = step.arg_count;
      for (std::uint32_t i = 0; i < step.arg_count; ++i) {
        g.kind[i] = static_cast<std::uint8_t>(step.args[i].kind);
        g.value[i] = step.args[i].value;
      }
      g.lookup = step.kind == device::compute_kind::lookup;
      if (g.lookup) {  // the rows the iteration found, sorted by their keys
        g.cells = tables_[step.table].cells;
        g.rows = tables_[step.table].rows;
        g.width = tables_[step.table].width;
      }
    }
    a.outside = outside_.get();
    for (std::size_t s = 0; s < plan.actions.size(); ++s) {
      put(a.steps[s], plan.actions[s].table, plan.actions[s].args);
      a.steps[s].kind[a.steps[s].width - 1] = detail::gpu_fresh;
    }
    for (std::size_t i = 0; i < plan.sets.size(); ++i) {
      const device::set_node& st = plan.sets[i];
      auto& g = a.steps[plan.actions.size() + i];
      put(g, st.table, st.args);
      g.kind[g.width - 1] = static_cast<std::uint8_t>(st.value.kind);
      g.value[g.width - 1] = st.value.value;
      g.inline_value = orders_i64(st.table);
    }
    for (std::size_t i = 0; i < plan.subsumed.size(); ++i) {
      const device::make_node& m = plan.subsumed[i];
      auto& g = a.steps[plan.actions.size() + plan.sets.size() + i];
      put(g, subsumed_keys_[m.table], m.args);
      g.kind[g.width - 1] = static_cast<std::uint8_t>(device::operand_kind::constant);
      g.value[g.width - 1] = 0;
    }
    for (std::size_t i = 0; i < plan.deleted.size(); ++i) {
      const device::make_node& m = plan.deleted[i];
      auto& g = a.steps[plan.actions.size() + plan.sets.size() + plan.subsumed.size() + i];
      put(g, deleted_keys_[m.table], m.args);
      g.kind[g.width - 1] = static_cast<std::uint8_t>(device::operand_kind::constant);
      g.value[g.width - 1] = 0;
    }
    a.unite_count = static_cast<std::uint32_t>(plan.unites.size());
    for (std::size_t u = 0; u < plan.unites.size(); ++u)
      for (int i = 0; i < 2; ++i) {
        a.unite_kind[u][i] = static_cast<std::uint8_t>(plan.unites[u][i].kind);
        a.unite_value[u][i] = plan.unites[u][i].value;
      }
  }

  //! The table step `s` of `plan` appends to: its function's, or a subsumed or deleted row's
  //! keys.
  std::uint32_t step_table(const device::rule_plan& plan, std::size_t s) const noexcept {
    const std::uint32_t f = plan.step_table(s);
    if (plan.deletes(s)) return deleted_keys_[f];
    return plan.subsumes(s) ? subsumed_keys_[f] : f;
  }

  //! Whether table `f` is a function merged by min or max over i64: its values must be those
  //! the device orders, [0, 2^31).
  bool orders_i64(std::uint32_t f) const { return device::orders_i64(*decl_, f); }

  //! Whether `plan` may meet a value the device does not decide (a primitive, a lookup, a set
  //! that must hold an i64 the device orders): it then needs the `outside_` flag.
  bool may_meet_outside(const device::rule_plan& plan) const noexcept {
    if (!plan.prims.empty() || !plan.computes.empty()) return true;
    for (const device::set_node& st : plan.sets)
      if (orders_i64(st.table)) return true;
    return false;
  }

  //! `plan` with its id literals canonical in the device's union-find.
  expected<device::rule_plan> canonical_plan(const device::rule_plan& plan) const {
    device::rule_plan out = plan;
    for (const auto& [atom, column] : plan.id_literals) {
      device::plan_column& col = out.atoms[atom].columns[column];
      if (col.value < ids_) {
        VYRE_TRY_ASSIGN(col.value, find_on_device(col.value));
      }
    }
    return out;
  }

  //! Whether `plan` sets a function the device folds by `new` or keeps by `:no-merge`,
  //! deletes, or writes a table a rule deletes from: a match applied again could change (or
  //! conflict with, or make again) what it wrote, so its search keeps only the matches with a
  //! new row, whatever that costs.
  bool writes_once(const device::rule_plan& plan) const noexcept {
    if (!plan.deleted.empty()) return true;
    for (const device::set_node& st : plan.sets) {
      const device::device_merge m = tables_[st.table].merge;
      if (m == device::device_merge::replace || m == device::device_merge::none) return true;
      if (deleted_keys_[st.table] != no_table) return true;
    }
    // A row a rule deletes would be made again by a match found again.
    for (const device::make_node& m : plan.actions)
      if (deleted_keys_[m.table] != no_table) return true;
    return false;
  }

  //! Whether the search of `plan`, last run at `mid`, keeps only the matches with a row stamped
  //! since (seminaive) rather than every match. Every other write is idempotent, so the two give
  //! one e-graph: the check is made where it must be (`writes_once`), or where it pays, when
  //! about half the matches or more would be old (estimated from how much of each atom's table
  //! was there when the rule last ran: a Datalog closure's matches are mostly old, a rewrite
  //! system's that grows tenfold an iteration mostly new, where the check would only cost the
  //! search a pass and a scan at its last level).
  bool filters_new(const device::rule_plan& plan, std::uint32_t mid) const {
    if (!keep_stamps_) return false;
    if (writes_once(plan)) return true;
    const std::vector<std::uint32_t>* then = nullptr;
    for (const auto& [ts, rows] : rows_at_)
      if (ts == mid) then = &rows;
    if (then == nullptr) return true;  // unknown: the check is never wrong
    double old = 1.0;
    for (const device::plan_atom& a : plan.atoms) {
      const std::uint32_t now = tables_[a.table].rows;
      if (now != 0) old *= (std::min)(1.0, static_cast<double>((*then)[a.table]) / now);
    }
    return old >= 0.5;
  }

  //! Takes the keys the apply deleted out of their tables (and out of their subsumed keys):
  //! rows the table held before the apply (`rows_before`) go, rows it appended stay, as the
  //! CPU engine's merge deletes before it writes; the tables of deleted keys are empty again.
  //! `rows_before` of those tables becomes what the deletion left, so that a deletion alone
  //! does not count as a change (as in egglog). One read back of the kept counts.
  expected<void> delete_rows(std::vector<std::uint32_t>& rows_before) {
    const char* what = "eqsat: delete rows";
    std::vector<std::uint32_t> touched;  // tables the deletion compacts
    for (std::size_t f = 0; f < function_count_; ++f) {
      const std::uint32_t d = deleted_keys_[f];
      if (d == no_table || tables_[d].rows == 0) continue;
      VYRE_TRY(device::sort_rows(runtime_.memory, view(d), bits(), arena_.get(), stream()));
      touched.push_back(static_cast<std::uint32_t>(f));
      if (subsumed_keys_[f] != no_table) touched.push_back(subsumed_keys_[f]);
    }
    if (touched.empty()) return {};
    VYRE_TRY_ASSIGN(u32_array kept, allocate<std::uint32_t>(touched.size(), what));
    for (std::size_t i = 0; i < touched.size(); ++i) {
      const std::uint32_t c = touched[i];
      const std::uint32_t f = tables_[c].function;
      VYRE_TRY(device::drop_deleted(runtime_.memory, view(c), view(deleted_keys_[f]),
                                    rows_before[c], arena_.get(), kept.get() + i, stream()));
    }
    std::vector<std::uint32_t> counts(touched.size());
    VYRE_TRY(read_back(counts.data(), kept.get(), counts.size(), what));
    for (std::size_t i = 0; i < touched.size(); ++i) {
      table& t = tables_[touched[i]];
      rows_before[touched[i]] -= t.rows - counts[i];  // only rows held before are deleted
      t.rows = counts[i];
    }
    for (std::size_t f = 0; f < function_count_; ++f)
      if (deleted_keys_[f] != no_table) tables_[deleted_keys_[f]].rows = 0;
    return {};
  }

  //! Remembers every table's rows as the iteration at timestamp `ts` starts (`filters_new`
  //! reads them for the rules that run next at `ts`): the last `rows_at_limit` iterations.
  void remember_rows(std::uint32_t ts) {
    if (rows_at_.size() >= rows_at_limit) rows_at_.erase(rows_at_.begin());
    std::vector<std::uint32_t> rows(tables_.size());
    for (std::size_t f = 0; f < tables_.size(); ++f) rows[f] = tables_[f].rows;
    rows_at_.emplace_back(ts, std::move(rows));
  }

  //! One iteration, launched step by step: the search's totals read back size the apply.
  //! Mutates the committed state (the caller restores its snapshot on an error, or when the
  //! report says `handed_to_cpu`: the search found enough to reach the node limit).
  expected<void> iterate(std::span<const device::rule_plan> given, const iteration_limits& limits,
                         std::span<const std::uint32_t> last_run, iteration_report& report) {
    const auto t0 = clock::now();
    remember_rows(now_);
    std::vector<std::uint32_t> rows_before(tables_.size());
    for (std::size_t f = 0; f < tables_.size(); ++f) rows_before[f] = tables_[f].rows;
    const std::uint32_t old_ids = ids_;
    const std::uint64_t old_roots = eclasses_;

    // Plans with their id literals canonical now; constants widen the sorts' value range.
    const std::size_t rules = given.size();
    std::vector<device::rule_plan> plans(rules);
    bool primitives = false;
    for (std::size_t r = 0; r < rules; ++r) {
      if (given[r].id_literals.empty()) {
        plans[r] = given[r];
      } else {
        VYRE_TRY_ASSIGN(plans[r], canonical_plan(given[r]));
      }
      const auto widen = [&](const device::plan_operand& o) {
        if (o.kind == device::operand_kind::constant)
          base_bound_ = (std::max)(base_bound_, std::uint64_t{o.value} + 1);
      };
      for (const device::make_node& m : plans[r].actions)
        for (const device::plan_operand& o : m.args) widen(o);
      for (const device::set_node& st : plans[r].sets) {
        for (const device::plan_operand& o : st.args) widen(o);
        widen(st.value);
      }
      primitives = primitives || may_meet_outside(plans[r]);
      for (const device::plan_prim& p : plans[r].prims)
        if (device::yields_i64(p.op))
          base_bound_ = (std::max)(base_bound_, std::uint64_t{device::inline_i64_end});
      if (!plans[r].computes.empty())
        base_bound_ = (std::max)(base_bound_, std::uint64_t{device::inline_i64_end});
    }
    // Primitives report a value they cannot decide in one device word (`outside_`).
    met_outside_ = false;
    if (primitives) {
      if (outside_.size() == 0) {
        VYRE_TRY_ASSIGN(outside_, allocate<std::uint32_t>(1, "eqsat: primitive flag"));
      }
      VYRE_CUDA_TRY(cudaMemsetAsync(outside_.get(), 0, sizeof(std::uint32_t), stream()),
                    "eqsat: primitive flag");
    }
    // Whether a primitive met such a value (read after a synchronize); then the iteration goes
    // to the CPU engine, which decides it exactly.
    const auto outside = [&]() -> expected<bool> {
      if (!primitives) return false;
      std::uint32_t flag = 0;
      VYRE_TRY(read_back(&flag, outside_.get(), 1, "eqsat: primitive flag"));
      met_outside_ = flag != 0;
      if (met_outside_) report.stopped = iteration_stop::handed_to_cpu;
      return met_outside_;
    };

    // 1. Search: every rule's join level by level (one read back of the candidate totals per
    // level), then the matches written where the apply reads them.
    std::vector<index> indexes;
    std::vector<device::table_ref> views(tables_.size()), subsumed(function_count_);
    for (std::uint32_t c = 0; c < tables_.size(); ++c) views[c] = view(c);
    for (std::size_t f = 0; f < function_count_; ++f)
      subsumed[f] =
          subsumed_keys_[f] == no_table ? device::table_ref{nullptr, 0} : view(subsumed_keys_[f]);
    device::join_search search(runtime_.memory, stream(), runtime_.telemetry);
    // A rule within the narrow class passes its query by value; a wider one is flattened into
    // this block and copied to the device by the search.
    std::vector<device::wide_flat_query> wide;
    const auto add = [&](std::size_t r, auto& q) -> expected<void> {
      VYRE_TRY(device::flatten_into(
          q, plans[r], std::span<const device::table_ref>(views),
          [&](std::uint32_t f, std::uint32_t column, std::uint32_t column2) {
            return index_of(indexes, f, column, column2);
          },
          outside_.get(), std::span<const device::table_ref>(subsumed)));
      const bool naive = decl_->rules[plans[r].rule].naive;
      const std::uint32_t mid = last_run.empty() || naive ? 0u : last_run[r];
      q.mid = mid != 0 && filters_new(plans[r], mid) ? mid : 0u;
      return search.add(q);
    };
    for (std::size_t r = 0; r < rules; ++r) {
      if (plans[r].query_fits<device::narrow_limits>()) {
        device::flat_query q{};
        VYRE_TRY(add(r, q));
        continue;
      }
      if (wide.empty()) VYRE_TRY(try_resize(wide, 1, "eqsat: wide query"));
      VYRE_TRY(add(r, wide[0]));
    }
    // Under a node limit the join's candidates get the CPU engine's match budget, so that a
    // search the device runs to its end is one the CPU engine would have run to its end too.
    VYRE_TRY_ASSIGN(const bool searched, search.run(limits.match_budget_bytes()));
    if (!searched) {
      report.stopped = iteration_stop::handed_to_cpu;
      return {};
    }
    std::vector<std::uint64_t> totals(rules, 0);
    for (std::size_t r = 0; r < rules; ++r) {
      if (!plans[r].panics || search.matches(r) == 0) continue;
      // A match of a rule that panics: the CPU engine runs the iteration and stops with it.
      met_outside_ = true;
      report.stopped = iteration_stop::handed_to_cpu;
      return {};
    }
    std::vector<std::uint32_t*> matches(rules, nullptr);  // in the arena
    std::vector<std::uint64_t> appended(tables_.size(), 0);
    std::uint64_t fresh = 0, match_words = 0, new_rows = 0, cpu_match_bytes = 0;
    for (std::size_t r = 0; r < rules; ++r) {
      const std::uint64_t total = search.matches(r);
      totals[r] = total;
      report.matches += total;
      if (total == 0) continue;
      const device::rule_plan& plan = plans[r];
      for (std::size_t s = 0; s < plan.step_count(); ++s) appended[step_table(plan, s)] += total;
      // No overflow: totals are below 2^32 per rule, steps and variables a few dozen.
      new_rows += total * plan.step_count();
      fresh += total * plan.actions.size();
      match_words += total * plan.saved.size();
      cpu_match_bytes += total * decl_->rules[plan.rule].body.variable_count() * sizeof(value);
    }
    // Under a node limit, an iteration that could reach it, or whose matches the CPU engine
    // would stop on (its match budget), goes to the CPU engine, whose checks inside an
    // iteration are exact. Rows only grow by the apply (at most one per match and step) and
    // shrink in the rebuild, and the CPU engine's seminaive matches are among these, so an
    // iteration that passes commits on both engines.
    if (limits.node_limit != 0 && (total_rows() + new_rows > limits.node_limit ||
                                   cpu_match_bytes > limits.match_budget_bytes())) {
      report.stopped = iteration_stop::handed_to_cpu;
      return {};
    }
    std::vector<std::uint64_t> after(tables_.size()), after_caps(tables_.size());
    for (std::size_t f = 0; f < tables_.size(); ++f) {
      after[f] = tables_[f].rows + appended[f];
      if (after[f] > 0x7fffffffull)
        return fail(error(errc::abi_limit, "eqsat gpu_engine: rows of a table exceed 2^31")
                        .about(decl_->functions[tables_[f].function].name)
                        .with("rows", after[f])
                        .fix("stop earlier with --node-limit"));
      after_caps[f] = grown_capacity(after[f], tables_[f].capacity);  // for the rebuild
    }
    VYRE_TRY(check_ids(std::uint64_t{ids_} + fresh));
    VYRE_TRY(ensure_arena(
        (std::max)(static_cast<std::size_t>(match_words), rebuild_words_for(after_caps))));
    std::size_t match_at = 0;
    for (std::size_t r = 0; r < rules; ++r) {
      if (totals[r] == 0) continue;
      matches[r] = arena_.get() + match_at;
      match_at += static_cast<std::size_t>(totals[r] * plans[r].saved.size());
    }
    VYRE_TRY(search.write_all(matches));
    search.clear();
    indexes.clear();
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), "eqsat: search");
    VYRE_TRY_ASSIGN(const bool searched_outside, outside());
    if (searched_outside) return {};
    const auto t1 = clock::now();

    // 2. Apply: room for the new rows and classes first (exact), then one kernel per rule. The
    // pool's cache goes back to the device on both sides of the new state block: before, the
    // search's freed buffers; after, the old block. Either would add to the iteration's peak.
    VYRE_TRY(release_cache());
    VYRE_TRY(reserve(after, std::uint64_t{ids_} + fresh));
    VYRE_TRY(release_cache());
    std::uint32_t class_base = ids_;
    VYRE_TRY(add_classes(std::uint64_t{ids_} + fresh));
    std::vector<std::uint32_t> cursor(tables_.size());
    for (std::size_t f = 0; f < tables_.size(); ++f) cursor[f] = tables_[f].rows;
    // A head within the narrow class is a kernel parameter; a wider one is copied to the
    // device (each kept until the apply's synchronize).
    std::vector<detail::wide_gpu_actions> wide_actions;
    std::vector<device_array<detail::wide_gpu_actions>> wide_on_device;
    const auto place = [&](auto& a, const device::rule_plan& plan, std::uint32_t total) {
      actions_into(a, plan);
      a.class_base = class_base;
      a.now = now_;
      for (std::size_t s = 0; s < plan.step_count(); ++s) {
        a.steps[s].row_base = cursor[step_table(plan, s)];
        cursor[step_table(plan, s)] += total;
      }
      class_base += total * a.fresh_count;
    };
    for (std::size_t r = 0; r < rules; ++r) {
      if (totals[r] == 0) continue;
      const device::rule_plan& plan = plans[r];
      const auto total = static_cast<std::uint32_t>(totals[r]);
      if (plan.actions_fit<device::narrow_limits>()) {
        detail::gpu_actions a;
        place(a, plan, total);
        detail::eqsat_apply_kernel<<<grid(total), block, 0, stream()>>>(a, matches[r], total,
                                                                        parent_);
        VYRE_TRY(launched("eqsat: apply"));
        continue;
      }
      if (wide_actions.empty()) VYRE_TRY(try_resize(wide_actions, 1, "eqsat: wide actions"));
      place(wide_actions[0], plan, total);
      VYRE_TRY(try_reserve(wide_on_device, wide_on_device.size() + 1, "eqsat: wide actions"));
      VYRE_TRY_ASSIGN(device_array<detail::wide_gpu_actions> on_device,
                      allocate<detail::wide_gpu_actions>(1, "eqsat: wide actions"));
      // Pageable memory: the copy is staged before the call returns, so the block is reused.
      VYRE_CUDA_TRY(
          cudaMemcpyAsync(on_device.get(), wide_actions.data(), sizeof(detail::wide_gpu_actions),
                          cudaMemcpyHostToDevice, stream()),
          "eqsat: wide actions");
      detail::eqsat_apply_kernel<<<grid(total), block, 0, stream()>>>(
          static_cast<const detail::wide_gpu_actions*>(on_device.get()), matches[r], total,
          parent_);
      VYRE_TRY(launched("eqsat: apply"));
      wide_on_device.push_back(std::move(on_device));
    }
    for (std::size_t f = 0; f < tables_.size(); ++f) tables_[f].rows = cursor[f];
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), "eqsat: apply");
    VYRE_TRY_ASSIGN(const bool applied_outside, outside());
    if (applied_outside) return {};
    VYRE_TRY(delete_rows(rows_before));
    const auto t2 = clock::now();

    // 3. Rebuild. Two values of a `:no-merge` function for one key are an error the CPU engine
    // reports: the iteration goes there.
    VYRE_TRY_ASSIGN(const std::uint64_t old_roots_after, rebuild(old_ids));
    if (last_rebuild_conflict_) {
      met_outside_ = true;
      report.stopped = iteration_stop::handed_to_cpu;
      return {};
    }
    drop_big_arena();
    VYRE_TRY(fit());
    const auto t3 = clock::now();

    report.search_seconds = std::chrono::duration<double>(t1 - t0).count();
    report.apply_seconds = std::chrono::duration<double>(t2 - t1).count();
    report.rebuild_seconds = std::chrono::duration<double>(t3 - t2).count();
    report.rebuild_rounds = last_rebuild_rounds_;
    report.unions = old_roots - old_roots_after;
    bool rows_changed = false;
    for (std::size_t f = 0; f < tables_.size(); ++f)
      rows_changed = rows_changed || tables_[f].rows != rows_before[f];
    // A set that lowered (or raised) a function's value leaves its rows as many.
    report.changed = report.unions != 0 || rows_changed || last_rebuild_folded_;
    return {};
  }

  const declarations* decl_;
  Backend* backend_ = nullptr;
  std::uint64_t container_roots_ = 0;    //!< container ids among the roots (the host's, unchanged)
  std::uint64_t unions_ = 0;             //!< the id space's union counter (`id_space::unions`)
  device_array<std::uint32_t> outside_;  //!< the primitives' flag (`flat_query::outside`)
  bool met_outside_ = false;             //!< `met_outside_values()`
  //! Every table's rows at the start of the iterations at these timestamps (`remember_rows`).
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> rows_at_;
  static constexpr std::size_t rows_at_limit = 64;
};

}  // namespace vyre::eqsat

#include "vyre/detail/epilogue.hpp"
