// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::gpu_engine`: equality saturation on the GPU with egglog's semantics, the same
//! calls as `cpu_engine` (so `eqsat::execute` runs either) and the same counts.
//!
//!     // the engine, or its error as the backend's error policy says (here: thrown)
//!     auto engine = vyre::eqsat::gpu_engine<vyre::backend<>>::create(gpu, prog);
//!     const vyre::eqsat::execution ex = vyre::eqsat::execute(prog, engine);
//!     if (engine.failure()) ...  // out of device memory or a CUDA error: the run stopped as
//!                                // `stop_reason::failed`, the last committed iteration kept
//!
//! State on the device, one block (`layout`): per constructor a table of rows of u32
//! `(columns..., eclass)` (see plan.hpp), then a union-find `parent` over class ids whose
//! representative is always the smallest id of its class; the class-id count on the host.
//! Tables and union-find grow by capacity class (`detail::gpu_capacity_class`: powers of two
//! up to 1M rows or ids, where they only grow, so a slowly growing e-graph keeps its shape and
//! its captured graphs; exact above, where the apply knows its final sizes from the match
//! totals and `add_term` adds a quarter, and a rebuild that leaves a fifth of the block unused
//! moves it to the sizes of what is left).
//!
//! Iteration:
//! 1. Search: every active rule's `query_plan`, flattened into `device::flat_query`, runs in one
//!    join-interpreter kernel: a thread per row of atom 0's table, nested loops over the later
//!    atoms through indexes (rows sorted by the key column, found by binary search; a table is
//!    sorted by its first column after every rebuild and needs no index for it). Two phases:
//!    count matches per row, read every rule's total back in one copy (the one host round
//!    trip the search makes per iteration), scan, write the saved registers.
//! 2. Apply without hashing: every `make_node` step of every match appends a row with a fresh
//!    class (`base + match * steps + step`) at a position known from the totals, then the
//!    match's root and result are united (lock-free: a CAS links the larger root under the
//!    smaller). A fresh row equal to an existing row is merged by the rebuild's congruence,
//!    which yields the e-graph `cpu_engine`'s lookup-or-insert yields.
//! 3. Rebuild, one launch of a captured graph per shape (the tables' and union-find's
//!    capacities and the buffers they live in; `graph::graph_cache`, counters in
//!    `rebuild_graph_stats`; a shape met for the first time runs the same passes launched,
//!    with a flag read back per round, and is captured when it comes back): a device loop
//!    (`graph::build_fixpoint_graph`) of rounds
//!    {compress the union-find; canonicalize every class column; sort each table's rows by
//!    their arguments (LSD: stable radix sorts of a row permutation, last argument first, in
//!    the arena's double buffers, rows beyond those in use sorted last; then the rows permuted
//!    in place a column at a time); unite the classes of adjacent rows with equal arguments}
//!    until a round unites nothing, decided on the device; then drop duplicate rows (compacted
//!    in place). The rows in use are uploaded before the launch (`device::table_ref::live`),
//!    so a slowly growing e-graph replays one graph; CUB's scratch is one block the graphs
//!    keep (`scratch_block_resource`). The counts come back in one copy.
//! 4. Counts: e-nodes per constructor = rows; e-classes = roots; `unions` = old classes merged
//!    away (as `cpu_engine`); the iteration changed the e-graph when that is not zero or rows
//!    were added.
//!
//! Captured iterations (opt-in, `capture_iterations(true)`; below the class limit; counters in
//! `iteration_graph_stats`): a shape (the rebuild's shape and the active rules) launched twice
//! that has room for `capture_payback` more iterations like its last is captured whole, then
//! replayed: one upload of the rows in use and the class-id count, one launch, one read back.
//! The graph runs steps 1-3 at the capacities: the search counts and sums on the device, one
//! thread places the apply (`eqsat_place_kernel`: each rule's rows and classes, and whether
//! they fit the tables, the union-find and the match buffers the graph was captured with,
//! room for twice the matches of the shape's last launched iteration), and the rebuild runs
//! behind that gate (`graph::build_gated_fixpoint_graph`). An iteration that does not fit
//! leaves the e-graph as it was: the graph is dropped and the iteration runs launched.
//!
//! `create(gpu, cpu)` starts from a `cpu_engine`'s committed state instead of an empty e-graph
//! (`auto_engine` runs small iterations on the CPU and moves there at the crossover).
//!
//! Every iteration starts with a device copy of the committed state (tables and union-find;
//! about a tenth of the iteration's peak on growing programs): an iteration that crosses the
//! node or time limit, or fails (out of device memory, a CUDA error), is rolled back to it.
//! `add_term` uploads the term's rows as fresh rows and rebuilds; `find` reads the union-find
//! back; `extract` downloads the tables once (until the next change) and runs the shared
//! host tree-cost code (`detail/tree_cost.hpp`).
//!
//! Host round trips per launched iteration: the match totals; the rebuild's report (kept rows of
//! every table, the roots for the counts, the loop's convergence), and on a rebuild shape's
//! first meeting one flag per round. Per captured iteration: the report alone.
//!
//! Device memory at the peak (math.egg iteration 12: 1,047,896 e-nodes before, 15,081,413
//! matches adding 35,342,286 rows and as many fresh classes, 36,390,182 rows before the
//! dedupe (Add 21,748,095, Mul 13,390,098), 15,987,528 after; 37,830,467 class ids):
//!   state block: rows before the dedupe, 12 B per binary row        436,623,872
//!                union-find, 4 B per class id ever made              151,322,112
//!   arena: max(matches 59,323,701 u32, 4 u32 per row of Add)        347,969,520
//!   snapshot of the committed state (rows, union-find; pool class)   33,554,432
//!   CUB scratch of the DoubleBuffer sorts and scans                  a few MB
//!   pool cache: released (`release_cache`) around the state's move    ~0
//! about 970 MB, 61 B per final e-node by this account. Measured on an H100 (the backend's
//! telemetry peak, docs/bench/eqsat-2026-11-24-h100-s10-mem.jsonl): 1,003,025,152 B, 62.7 B per
//! e-node; the rest is the CUB scratch and the pool's rounding to its size classes.
//! Limits: a table's rows below 2^31 (CUB's item counts), one rule's matches and class ids
//! below 2^32 (checked before the apply, errors name the value); `device::max_*` and
//! `detail::gpu_max_steps` per rule (checked by `create`).
//!
//! The search, union-find and rebuild passes are the public pieces of `eqsat/device/`
//! (`ematch.cuh`, `union_find.cuh`, `rebuild.cuh`); the apply is `detail/gpu_kernels.cuh`.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/cpu_engine.hpp"
#include "vyre/eqsat/detail/gpu_kernels.cuh"
#include "vyre/eqsat/detail/tree_cost.hpp"
#include "vyre/eqsat/device/ematch.cuh"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/eqsat/plan.hpp"
#include "vyre/eqsat/program.hpp"
#include "vyre/graph/cache.cuh"
#include "vyre/graph/conditional.cuh"
#include "vyre/runtime/device_array.hpp"
#include "vyre/runtime/streams.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat {

namespace detail {

//! A constructor's rows on the device: a slice of the engine's state block.
struct gpu_table {
  std::uint32_t* cells = nullptr;  //!< `capacity` rows of `width`
  std::size_t capacity = 0;
  std::uint32_t rows = 0;
  std::uint32_t width = 1;
  std::uint32_t class_mask = 0;  //!< bit c: column c holds a class id (the last always)
};

//! The committed state, copied on the device before an iteration: one block laid out like
//! the state block with every capacity equal to the rows (and the union-find to the ids).
struct gpu_snapshot {
  device_array<std::uint32_t> block;
  std::vector<std::uint32_t> rows;
  std::uint32_t ids = 0;
  std::uint64_t eclasses = 0;
  VYRE_HOST_MOVE_ONLY_MEMBERS(gpu_snapshot);
};
VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(gpu_snapshot);

//! Rows (or class ids) up to which a table (or the union-find) is sized by capacity class:
//! below it the padding is cheap and a slowly growing e-graph keeps its shape, so its
//! iterations and rebuilds replay captured graphs; above it every byte counts (the 64 B per
//! e-node budget) and launches are a small part of an iteration, so sizes are exact.
inline constexpr std::uint64_t gpu_class_limit = std::uint64_t{1} << 20;

//! The capacity of `n` rows or ids: 0 for 0; the power of two at or above it (at least 1024)
//! up to `gpu_class_limit`, so a capacity changes at each doubling of what it holds; `n`
//! itself above.
inline std::size_t gpu_capacity_class(std::uint64_t n) noexcept {
  if (n == 0) return 0;
  if (n > gpu_class_limit) return static_cast<std::size_t>(n);
  return static_cast<std::size_t>(std::bit_ceil((std::max)(n, std::uint64_t{1024})));
}

//! What a captured rebuild bakes in: every table's capacity, the union-find's, and the
//! state block and arena it works in. Equal shapes replay one graph (the rows in use are
//! uploaded before each launch).
struct gpu_rebuild_shape {
  std::vector<std::size_t> caps;
  std::size_t ids = 0;
  const void* state = nullptr;
  const void* arena = nullptr;
  friend bool operator==(const gpu_rebuild_shape&, const gpu_rebuild_shape&) = default;
};

struct gpu_rebuild_shape_hash {
  std::size_t operator()(const gpu_rebuild_shape& s) const noexcept {
    std::size_t h = std::hash<const void*>{}(s.state) ^ (std::hash<const void*>{}(s.arena) << 1);
    const auto mix = [&](std::size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
    mix(s.ids);
    for (std::size_t c : s.caps) mix(c);
    return h;
  }
};

//! What a captured iteration bakes in: its rebuild's shape and the rules it runs. Equal
//! shapes replay one graph (rows in use and the class-id count are uploaded before a launch).
struct gpu_iteration_shape {
  gpu_rebuild_shape rebuild;
  std::vector<std::uint32_t> active;
  friend bool operator==(const gpu_iteration_shape&, const gpu_iteration_shape&) = default;
};

struct gpu_iteration_shape_hash {
  std::size_t operator()(const gpu_iteration_shape& s) const noexcept {
    std::size_t h = gpu_rebuild_shape_hash{}(s.rebuild);
    for (std::uint32_t r : s.active) h ^= r + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }
};

//! The launched iterations of one shape and the match totals of the last (which size the
//! match buffers of its captured iteration).
struct gpu_shape_meetings {
  std::vector<unsigned long long> totals;
  std::uint32_t launched = 0;
};

//! Timing events (CUDA's default flags) recorded by the nodes of a captured iteration at its
//! start and the ends of its search and apply; owned here because the graphs only name them.
struct gpu_phase_events {
  static constexpr std::size_t count = 3;
  cudaEvent_t at[count] = {};

  gpu_phase_events() noexcept = default;
  gpu_phase_events(gpu_phase_events&& o) noexcept {
    for (std::size_t i = 0; i < count; ++i) at[i] = std::exchange(o.at[i], nullptr);
  }
  gpu_phase_events& operator=(gpu_phase_events&&) = delete;
  gpu_phase_events(const gpu_phase_events&) = delete;
  gpu_phase_events& operator=(const gpu_phase_events&) = delete;
  ~gpu_phase_events() {
    for (cudaEvent_t e : at)
      if (e != nullptr) (void)cudaEventDestroy(e);
  }

  expected<void> create() {
    for (cudaEvent_t& e : at)
      if (e == nullptr) VYRE_CUDA_TRY(cudaEventCreate(&e), "eqsat: phase timing events");
    return {};
  }
  //! Seconds from event `from` to event `to` (both completed).
  expected<double> seconds(std::size_t from, std::size_t to) const {
    float ms = 0;
    VYRE_CUDA_TRY(cudaEventElapsedTime(&ms, at[from], at[to]), "eqsat: phase times");
    return ms / 1000.0;
  }
};

//! A search index built for one iteration: one block of the sort's two key and two row
//! buffers; `view` points at the sorted pair.
struct gpu_built_index {
  std::uint32_t ctor = 0, column = 0;
  device_array<std::uint32_t> block;
  device::column_index view{};
};

}  // namespace detail

//! The GPU engine on a `vyre::backend<P>` (`Backend`), which must outlive it.
template <class Backend>
class gpu_engine {
  using u32_array = device_array<std::uint32_t>;
  using clock = std::chrono::steady_clock;

 public:
  template <class T>
  using result = typename Backend::template result<T>;

  //! An engine for `prog` (kept by reference) on `gpu`.
  //! @returns / throws (the backend's error policy): `errc::unsupported` naming the rule or
  //!          constructor beyond `detail::gpu_max_*`, or the runtime's error (no stream, no
  //!          memory).
  static result<gpu_engine> create(Backend& gpu, const program& prog) {
    return apply_error_policy<typename Backend::error_policy>(make(gpu, prog));
  }

  //! An engine on `gpu` holding `from`'s committed state: every table's rows, the union-find
  //! (class ids kept: both engines keep the smallest id of a class as its representative), the
  //! `let` classes and the iteration count; it runs `from.prog()` (kept by reference) on from
  //! there with the counts `from` would give. `auto_engine` moves its run here at the crossover.
  //! @returns / throws (the backend's error policy): as `create`; `errc::abi_limit` when a
  //!          table's rows exceed 2^31; `errc::invalid_state` when `from` was not rebuilt (its
  //!          rows are not canonical and distinct).
  static result<gpu_engine> create(Backend& gpu, const cpu_engine& from) {
    return apply_error_policy<typename Backend::error_policy>(make_from(gpu, from));
  }

  // User-provided (not defaulted): nvcc would otherwise infer __host__ __device__ special
  // members for a type held in cuda::std::expected and reject the host-only members'.
  gpu_engine(gpu_engine&& o) noexcept
      : prog_(o.prog_),
        backend_(o.backend_),
        runtime_(o.runtime_),
        stream_(std::move(o.stream_)),
        tables_(std::move(o.tables_)),
        state_(std::move(o.state_)),
        parent_(o.parent_),
        parent_capacity_(o.parent_capacity_),
        arena_(std::move(o.arena_)),
        report_(std::move(o.report_)),
        live_rows_(std::move(o.live_rows_)),
        live_rows_host_(std::move(o.live_rows_host_)),
        cub_scratch_(std::move(o.cub_scratch_)),
        rebuild_graphs_(std::move(o.rebuild_graphs_)),
        shapes_seen_(std::move(o.shapes_seen_)),
        search_block_(std::move(o.search_block_)),
        iteration_graphs_(std::move(o.iteration_graphs_)),
        iteration_inputs_(std::move(o.iteration_inputs_)),
        iterations_seen_(std::move(o.iterations_seen_)),
        phase_events_(std::move(o.phase_events_)),
        capture_iterations_(o.capture_iterations_),
        ids_(o.ids_),
        eclasses_(o.eclasses_),
        plans_(std::move(o.plans_)),
        global_class_(std::move(o.global_class_)),
        iteration_(o.iteration_),
        failure_(std::move(o.failure_)),
        host_valid_(o.host_valid_),
        costs_valid_(o.costs_valid_),
        host_cells_(std::move(o.host_cells_)),
        host_parent_(std::move(o.host_parent_)),
        costs_(std::move(o.costs_)) {}
  gpu_engine& operator=(gpu_engine&&) = delete;
  gpu_engine(const gpu_engine&) = delete;
  gpu_engine& operator=(const gpu_engine&) = delete;
  ~gpu_engine() {}  // NOLINT(modernize-use-equals-default): see the move constructor

  const program& prog() const noexcept { return *prog_; }
  const std::vector<query_plan>& plans() const noexcept { return plans_; }
  //! The first error the engine met (it then does nothing more); empty while it works.
  const std::optional<error>& failure() const noexcept { return failure_; }
  //! Counters of the captured rebuilds: a hit replayed the graph of an earlier rebuild of the
  //! same shape (capacities and buffers), a capture made one.
  graph::cache_stats rebuild_graph_stats() const noexcept { return rebuild_graphs_.stats(); }
  //! Counters of the captured iterations (search, apply and rebuild in one launch): a hit
  //! replayed the graph of an earlier iteration of the same shape, a capture made one.
  graph::cache_stats iteration_graph_stats() const noexcept { return iteration_graphs_.stats(); }
  //! Whether iterations of a shape met before run as one captured graph, or are launched step
  //! by step (the default; the results are the same). Off by default because it measured no
  //! faster: on `bench/eqsat/chain_program.py` (H100, docs/bench/eqsat-2026-11-25-h100-s16.*)
  //! a replayed iteration takes what a launched one takes, whose launches overlap the device's
  //! work, and more once its capacities run ahead of the rows; the captures cost about 0.9 ms.
  void capture_iterations(bool on) noexcept { capture_iterations_ = on; }

  //! Adds a ground term; returns its canonical e-class (0 after a failure, see `failure()`).
  std::uint32_t add_term(const term& t) {
    if (failure_) return 0;
    auto r = try_add_term(t);
    if (!r) {
      failure_ = r.error();
      return 0;
    }
    return *r;
  }
  void set_global(std::uint32_t global, std::uint32_t eclass) { global_class_[global] = eclass; }

  //! Runs up to `iterations` iterations of the rules `active`. Stops as `failed` when the
  //! device fails (see `failure()`); the last committed iteration stays.
  run_result run(std::uint64_t iterations, const std::vector<std::uint32_t>& active,
                 const run_limits& limits = {}) {
    run_result result;
    if (failure_) {
      result.stopped = stop_reason::failed;
      return result;
    }
    auto r = try_run(iterations, active, limits, result);
    if (!r) {
      failure_ = r.error();
      result.stopped = stop_reason::failed;
    }
    return result;
  }

  //! Counts of the committed e-graph.
  iteration_stats counts() const {
    iteration_stats stats;
    stats.iteration = iteration_;
    stats.per_constructor.resize(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      stats.per_constructor[c] = tables_[c].rows;
      stats.enodes += tables_[c].rows;
    }
    stats.eclasses = eclasses_;
    stats.device = device_kind::gpu;
    return stats;
  }

  //! The cheapest term of `eclass` (egglog's tree cost), from a host copy of the tables.
  extraction extract(std::uint32_t eclass) const {
    extraction out;
    if (!ensure_host()) return out;
    std::vector<detail::flat_table> flat;
    for (std::size_t c = 0; c < tables_.size(); ++c)
      flat.push_back({host_cells_[c].data(), tables_[c].rows, tables_[c].width});
    if (!costs_valid_) {
      costs_.compute(*prog_, flat, ids_);
      costs_valid_ = true;
    }
    const std::uint32_t cls = find_const(eclass);
    out.cost = costs_.class_cost[cls];
    out.term = costs_.term(*prog_, flat, cls);
    return out;
  }

  //! Canonical e-class id of `x` (read back from the device; `x` after a failure).
  std::uint32_t find(std::uint32_t x) {
    if (failure_) return x;
    if (host_valid_) return find_const(x);
    for (;;) {
      std::uint32_t p = x;
      auto r = read_back(&p, parent_ + x, 1, "eqsat: find");
      if (!r) {
        failure_ = r.error();
        return x;
      }
      if (p == x) return x;
      x = p;
    }
  }
  //! `find` on the host copy (downloads it first when stale).
  std::uint32_t find_const(std::uint32_t x) const {
    if (!ensure_host()) return x;
    while (host_parent_[x] != x) x = host_parent_[x];
    return x;
  }
  std::uint64_t class_id_count() const noexcept { return ids_; }
  //! Rows of constructor `c` (a host copy, downloaded when stale; empty after a failure).
  const std::vector<std::uint32_t>& rows(std::uint32_t c) const {
    static const std::vector<std::uint32_t> none;
    return ensure_host() ? host_cells_[c] : none;
  }
  std::uint32_t width(std::uint32_t c) const noexcept { return tables_[c].width; }

 private:
  static expected<gpu_engine> make(Backend& gpu, const program& prog) {
    for (std::size_t c = 0; c < prog.constructors.size(); ++c)
      if (prog.constructors[c].arity() + 1 > device::max_width)
        return fail(error(errc::unsupported, "eqsat gpu_engine: constructor arity")
                        .about(prog.constructors[c].name)
                        .with("arity", prog.constructors[c].arity())
                        .with("max", device::max_width - 1)
                        .fix("use --device cpu for constructors of more arguments"));
    std::vector<query_plan> plans = compile_rules(prog);
    for (const query_plan& p : plans) {
      std::size_t widest = 0;
      for (const make_node& m : p.actions) widest = (std::max)(widest, m.args.size() + 1);
      if (p.atoms.size() > device::max_atoms || p.register_count > device::max_registers ||
          p.saved.size() > device::max_saved || p.actions.size() > detail::gpu_max_steps)
        return fail(error(errc::unsupported, "eqsat gpu_engine: rule too large for the device")
                        .about(prog.rules[p.rule].text)
                        .with("atoms", p.atoms.size())
                        .with("registers", p.register_count)
                        .with("saved", p.saved.size())
                        .with("steps", p.actions.size())
                        .fix("split the rule, or use --device cpu"));
    }
    VYRE_TRY_ASSIGN(stream_lease stream, gpu.streams().acquire());
    gpu_engine engine(algorithms::detail::runtime_of(gpu), prog, std::move(stream));
    engine.backend_ = &gpu;
    engine.plans_ = std::move(plans);
    VYRE_TRY_ASSIGN(engine.report_,
                    engine.allocate<unsigned long long>(
                        engine.report_totals() + engine.plans_.size(), "eqsat: iteration report"));
    const std::size_t inputs = engine.input_rules() + engine.plans_.size() * rule_shape_words;
    VYRE_TRY_ASSIGN(engine.live_rows_,
                    engine.allocate<std::uint32_t>(inputs, "eqsat: rows in use"));
    VYRE_TRY(try_resize(engine.live_rows_host_, inputs, "eqsat: rows in use"));
    return engine;
  }

  static expected<gpu_engine> make_from(Backend& gpu, const cpu_engine& from) {
    VYRE_TRY_ASSIGN(gpu_engine engine, make(gpu, from.prog()));
    VYRE_TRY(engine.load(from));
    return engine;
  }

  using table = detail::gpu_table;
  using snapshot = detail::gpu_snapshot;
  using index = detail::gpu_built_index;

  gpu_engine(const algorithms::detail::runtime_ref& runtime, const program& prog,
             stream_lease stream)
      : prog_(&prog), runtime_(runtime), stream_(std::move(stream)) {
    tables_.resize(prog.constructors.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      const constructor_decl& decl = prog.constructors[c];
      tables_[c].width = decl.arity() + 1;
      tables_[c].class_mask = 1u << decl.arity();
      for (std::uint32_t a = 0; a < decl.arity(); ++a)
        if (decl.args[a].kind == sort_kind::datatype) tables_[c].class_mask |= 1u << a;
    }
    global_class_.assign(prog.globals.size(), 0);
  }

  cudaStream_t stream() const noexcept { return stream_.get(); }

  template <class T>
  expected<device_array<T>> allocate(std::size_t count, const char* what) const {
    return runtime_.allocate<T>(count, stream(), what);
  }

  template <class T>
  expected<void> read_back(T* host, const T* device, std::size_t count, const char* what) const {
    return algorithms::detail::copy_to_host(runtime_, host, device, count, stream(), what);
  }

  //! A slice of the state block starts at a multiple of 64 words (256 bytes).
  static std::size_t aligned(std::size_t words) noexcept { return (words + 63) & ~std::size_t{63}; }

  static expected<void> launched(const char* what) { return algorithms::detail::launched(what); }
  static unsigned grid(std::uint64_t items) { return algorithms::detail::grid_for(items); }
  static constexpr unsigned block = algorithms::detail::block_size;

  void invalidate() noexcept {
    host_valid_ = false;
    costs_valid_ = false;
  }

  // --- host copies --------------------------------------------------------------------------

  bool ensure_host() const {
    if (host_valid_) return true;
    if (failure_) return false;
    auto r = download_all();
    if (!r) {
      failure_ = r.error();
      return false;
    }
    host_valid_ = true;
    costs_valid_ = false;
    return true;
  }

  expected<void> download_all() const {
    host_cells_.resize(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      const table& t = tables_[c];
      VYRE_TRY(try_resize(host_cells_[c], std::size_t{t.rows} * t.width, "eqsat: host tables"));
      VYRE_TRY(read_back(host_cells_[c].data(), t.cells, std::size_t{t.rows} * t.width,
                         "eqsat: download a table"));
    }
    VYRE_TRY(try_resize(host_parent_, ids_, "eqsat: host union-find"));
    VYRE_TRY(read_back(host_parent_.data(), parent_, ids_, "eqsat: download parent"));
    return {};
  }

  // --- capacity -----------------------------------------------------------------------------

  //! Words of a state block whose tables hold `caps[c]` rows and whose union-find holds
  //! `ids` slots; `at[c]` receives each table's first word (the union-find's is returned).
  std::size_t layout(const std::vector<std::size_t>& caps, std::size_t ids,
                     std::vector<std::size_t>& at, std::size_t& words) const {
    at.resize(tables_.size());
    words = 0;
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      at[c] = words;
      words += aligned(caps[c] * tables_[c].width);
    }
    const std::size_t parent_at = words;
    words += aligned(ids);
    return parent_at;
  }

  //! Points the tables and the union-find into `block` (laid out by `layout(caps, ids)`).
  void bind(std::uint32_t* block, const std::vector<std::size_t>& caps, std::size_t ids) {
    std::vector<std::size_t> at;
    std::size_t words = 0;
    const std::size_t parent_at = layout(caps, ids, at, words);
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      tables_[c].cells = block + at[c];
      tables_[c].capacity = caps[c];
    }
    parent_ = block + parent_at;
    parent_capacity_ = ids;
  }

  //! A new state block of `caps[c]` rows per table and `ids` union-find slots (exact: one
  //! allocation, so the pool rounds it once), holding the current rows and union-find.
  expected<void> relayout(const std::vector<std::size_t>& caps, std::size_t ids) {
    std::vector<std::size_t> at;
    std::size_t words = 0;
    const std::size_t parent_at = layout(caps, ids, at, words);
    VYRE_TRY_ASSIGN(u32_array block,
                    allocate<std::uint32_t>((std::max)(words, std::size_t{1}), "eqsat: state"));
    for (std::size_t c = 0; c < tables_.size(); ++c)
      VYRE_TRY(algorithms::detail::copy_on_device(block.get() + at[c], tables_[c].cells,
                                                  std::size_t{tables_[c].rows} * tables_[c].width,
                                                  stream(), "eqsat: move a table"));
    VYRE_TRY(algorithms::detail::copy_on_device(block.get() + parent_at, parent_, ids_, stream(),
                                                "eqsat: move the union-find"));
    bind(block.get(), caps, ids);
    state_ = std::move(block);  // the old block is freed after the copies (stream order)
    return {};
  }

  //! Room for `rows[c]` rows per table and `ids` class ids, by capacity class
  //! (`detail::gpu_capacity_class`). Above the class limit: `exact` to the row (the apply,
  //! which knows its final sizes), else a quarter more than needed (`add_term`, called often).
  expected<void> reserve(const std::vector<std::uint64_t>& rows, std::uint64_t ids, bool exact) {
    bool grow = ids > parent_capacity_;
    for (std::size_t c = 0; c < tables_.size(); ++c) grow = grow || rows[c] > tables_[c].capacity;
    if (!grow) return {};
    const auto room = [&](std::uint64_t want, std::size_t have, std::uint64_t most) {
      if (want <= have) return have;
      std::uint64_t cap = detail::gpu_capacity_class(want);
      if (!exact && want > detail::gpu_class_limit) cap = (std::min)(want + want / 4, most);
      return (std::max)(static_cast<std::size_t>(cap), have);
    };
    std::vector<std::size_t> caps(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c)
      caps[c] = room(rows[c], tables_[c].capacity, 0x7fffffffull);
    return relayout(caps, room(ids, parent_capacity_, 0xfffffffeull));
  }

  //! Moves to the capacity classes of the rows a rebuild left when some capacity is above the
  //! class limit and that frees more than a fifth of the block. Below the limit capacities only
  //! grow: the block is small, and one that keeps its classes keeps its captured graphs (the
  //! apply's room for rows before the dedupe would otherwise be given back every iteration).
  expected<void> fit() {
    bool classed = parent_capacity_ <= detail::gpu_class_limit;
    std::size_t held = parent_capacity_, want = detail::gpu_capacity_class(ids_);
    std::vector<std::size_t> caps(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      caps[c] = detail::gpu_capacity_class(tables_[c].rows);
      held += tables_[c].capacity * tables_[c].width;
      want += caps[c] * tables_[c].width;
      classed = classed && tables_[c].capacity <= detail::gpu_class_limit;
    }
    if (classed || held <= want + want / 4) return {};
    return relayout(caps, detail::gpu_capacity_class(ids_));
  }

  //! Class ids `[ids_, ids)` made (each its own class); the union-find must hold them.
  expected<void> add_classes(std::uint64_t ids) {
    const auto to = static_cast<std::uint32_t>(ids);
    if (to > ids_) VYRE_TRY(device::init_classes({parent_, to}, ids_, to, stream()));
    ids_ = to;
    return {};
  }

  static expected<void> check_ids(std::uint64_t ids) {
    if (ids <= 0xfffffffeull) return {};
    return fail(error(errc::abi_limit, "eqsat gpu_engine: class ids exceed u32")
                    .with("ids", ids)
                    .fix("lower the iteration count or set --node-limit"));
  }

  //! The scratch of one iteration (matches, then the rebuild's sort and dedupe buffers): at
  //! least `words` u32 (the old one is freed first).
  expected<void> ensure_arena(std::size_t words) {
    if (arena_.size() >= words) return {};
    arena_ = u32_array{};
    VYRE_TRY_ASSIGN(arena_, allocate<std::uint32_t>(words, "eqsat: scratch"));
    return {};
  }

  //! Gives the allocation policy's cached free blocks back to the device when this iteration
  //! is large (its scratch above `big_scratch_bytes`): the search's freed buffers and the old
  //! state block would otherwise stay cached (and counted) through the rebuild, the peak.
  static constexpr std::size_t big_scratch_bytes = std::size_t{64} << 20;
  expected<void> release_cache() {
    if (arena_.size_bytes() < big_scratch_bytes || backend_ == nullptr) return {};
    return backend_->memory().release_cached();
  }

  //! Scratch words the rebuild needs: four u32 per row of the largest table's capacity.
  std::size_t rebuild_words() const noexcept {
    std::size_t n = 1;
    for (const table& t : tables_) n = (std::max)(n, t.capacity);
    return 4 * n;
  }

  //! The arena goes back after an iteration when it is large (the next iteration's search
  //! allocates before it); a small one stays, with the captured rebuilds that bake it in.
  void drop_big_arena() noexcept {
    if (arena_.size_bytes() >= big_scratch_bytes) arena_ = u32_array{};
  }

  // --- snapshot -----------------------------------------------------------------------------

  expected<snapshot> take_snapshot() const {
    snapshot s;
    std::vector<std::size_t> caps(tables_.size()), at;
    for (std::size_t c = 0; c < tables_.size(); ++c) caps[c] = tables_[c].rows;
    std::size_t words = 0;
    const std::size_t parent_at = layout(caps, ids_, at, words);
    VYRE_TRY_ASSIGN(s.block,
                    allocate<std::uint32_t>((std::max)(words, std::size_t{1}), "eqsat: snapshot"));
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      VYRE_TRY(algorithms::detail::copy_on_device(s.block.get() + at[c], tables_[c].cells,
                                                  std::size_t{tables_[c].rows} * tables_[c].width,
                                                  stream(), "eqsat: snapshot rows"));
      s.rows.push_back(tables_[c].rows);
    }
    VYRE_TRY(algorithms::detail::copy_on_device(s.block.get() + parent_at, parent_, ids_, stream(),
                                                "eqsat: snapshot union-find"));
    s.ids = ids_;
    s.eclasses = eclasses_;
    return s;
  }

  //! Back to the snapshot's state (moves only: cannot fail).
  void restore(snapshot& s) noexcept {
    std::vector<std::size_t> caps(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      tables_[c].rows = s.rows[c];
      caps[c] = s.rows[c];
    }
    ids_ = s.ids;
    eclasses_ = s.eclasses;
    bind(s.block.get(), caps, s.ids);
    state_ = std::move(s.block);
    arena_ = u32_array{};
    invalidate();
  }

  // --- load ---------------------------------------------------------------------------------

  //! `from`'s committed state into this new engine: the rows (class columns mapped through
  //! `find`) and every id's representative uploaded into an exact state block, then a rebuild,
  //! which sorts every table by its arguments as the search expects (the rows are canonical and
  //! distinct already: it unites and drops nothing, which the counts check).
  expected<void> load(const cpu_engine& from) {
    const char* what = "eqsat: load the cpu engine's state";
    const std::uint64_t ids = from.class_id_count();
    VYRE_TRY(check_ids(ids));
    std::vector<std::uint64_t> want(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      want[c] = from.rows(static_cast<std::uint32_t>(c)).size() / tables_[c].width;
      VYRE_TRY(device::detail::cub_items(want[c], what));
    }
    // The host copies first (every check before the first upload), then the uploads (pageable:
    // the copies live until the stream is synchronized below).
    std::vector<std::uint32_t> parent(static_cast<std::size_t>(ids));
    for (std::size_t x = 0; x < parent.size(); ++x)
      parent[x] = from.find_const(static_cast<std::uint32_t>(x));
    std::vector<std::vector<std::uint32_t>> cells(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      const table& t = tables_[c];
      cells[c] = from.rows(static_cast<std::uint32_t>(c));
      for (std::size_t i = 0; i < cells[c].size(); ++i) {
        if (((t.class_mask >> (i % t.width)) & 1u) == 0) continue;
        if (cells[c][i] >= parent.size())
          return fail(
              error(errc::invalid_state, "eqsat gpu_engine: a cpu engine row names no class")
                  .about(prog_->constructors[c].name)
                  .with("row", i / t.width)
                  .with("class", cells[c][i])
                  .with("class_ids", parent.size())
                  .fix("load a cpu_engine between calls (after add_term or run returned)"));
        cells[c][i] = parent[cells[c][i]];
      }
    }
    VYRE_TRY(reserve(want, ids, true));
    if (!parent.empty())
      VYRE_CUDA_TRY(cudaMemcpyAsync(parent_, parent.data(), parent.size() * sizeof(std::uint32_t),
                                    cudaMemcpyHostToDevice, stream()),
                    what);
    ids_ = static_cast<std::uint32_t>(ids);
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      if (!cells[c].empty())
        VYRE_CUDA_TRY(cudaMemcpyAsync(tables_[c].cells, cells[c].data(),
                                      cells[c].size() * sizeof(std::uint32_t),
                                      cudaMemcpyHostToDevice, stream()),
                      what);
      tables_[c].rows = static_cast<std::uint32_t>(want[c]);
    }
    VYRE_TRY(rebuild(0));
    drop_big_arena();
    VYRE_TRY(fit());
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), what);
    invalidate();
    const iteration_stats have = counts(), had = from.counts();
    if (have.per_constructor != had.per_constructor || have.eclasses != had.eclasses)
      return fail(error(errc::invalid_state,
                        "eqsat gpu_engine: the cpu engine's rows were not "
                        "canonical and distinct")
                      .with("enodes", had.enodes)
                      .with("enodes_after_rebuild", have.enodes)
                      .with("eclasses", had.eclasses)
                      .with("eclasses_after_rebuild", have.eclasses)
                      .fix("load a cpu_engine between calls (after add_term or run returned)"));
    for (std::size_t g = 0; g < global_class_.size(); ++g) {
      const std::uint32_t cls = from.globals()[g];
      global_class_[g] = cls < parent.size() ? parent[cls] : 0;  // unset: 0, as `make` has it
    }
    iteration_ = from.iteration();
    return {};
  }

  // --- add_term -----------------------------------------------------------------------------

  expected<std::uint32_t> try_add_term(const term& t) {
    if (t.kind == term_kind::global) return find(global_class_[t.id]);
    // Every call node of the term becomes a fresh row with a fresh class; the rebuild merges
    // the ones already present.
    std::vector<std::vector<std::uint32_t>> fresh(tables_.size());
    std::uint32_t next = ids_;
    auto build = [&](auto& self, const term& node) -> std::uint32_t {
      if (node.kind == term_kind::literal) return node.id;
      if (node.kind == term_kind::global) return find(global_class_[node.id]);
      std::vector<std::uint32_t> row;
      for (const term& arg : node.args) row.push_back(self(self, arg));
      const std::uint32_t cls = next++;
      row.push_back(cls);
      fresh[node.id].insert(fresh[node.id].end(), row.begin(), row.end());
      return cls;
    };
    const std::uint32_t root = build(build, t);
    if (failure_) return fail(*failure_);
    VYRE_TRY_ASSIGN(snapshot saved, take_snapshot());
    auto done = [&]() -> expected<void> {
      VYRE_TRY(check_ids(next));
      std::vector<std::uint64_t> want(tables_.size());
      for (std::size_t c = 0; c < tables_.size(); ++c)
        want[c] = std::uint64_t{tables_[c].rows} + fresh[c].size() / tables_[c].width;
      VYRE_TRY(reserve(want, next, false));
      VYRE_TRY(add_classes(next));
      for (std::size_t c = 0; c < tables_.size(); ++c) {
        if (fresh[c].empty()) continue;
        table& tb = tables_[c];
        const std::size_t added = fresh[c].size() / tb.width;
        VYRE_CUDA_TRY(cudaMemcpyAsync(tb.cells + std::size_t{tb.rows} * tb.width, fresh[c].data(),
                                      fresh[c].size() * sizeof(std::uint32_t),
                                      cudaMemcpyHostToDevice, stream()),
                      "eqsat: upload a term's rows");
        tb.rows += static_cast<std::uint32_t>(added);
      }
      VYRE_TRY(rebuild(0));
      drop_big_arena();
      // The upload reads pageable host memory: wait before `fresh` goes away.
      VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), "eqsat: add a term");
      return {};
    }();
    invalidate();
    if (!done) {
      (void)cudaStreamSynchronize(stream());
      restore(saved);
      return fail(done.error());
    }
    return find(root);
  }

  // --- run ----------------------------------------------------------------------------------

  expected<void> try_run(std::uint64_t iterations, const std::vector<std::uint32_t>& active,
                         const run_limits& limits, run_result& result) {
    const auto start = clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
    result.stopped = stop_reason::iterations;
    for (std::uint64_t i = 0; i < iterations; ++i) {
      if (limits.time_limit > 0 && elapsed() >= limits.time_limit) {
        result.stopped = stop_reason::time_limit;
        break;
      }
      VYRE_TRY_ASSIGN(snapshot saved, take_snapshot());
      iteration_stats stats;
      bool changed = false;
      auto step = iterate(active, stats, changed);
      invalidate();
      if (!step) {
        (void)cudaStreamSynchronize(stream());
        restore(saved);
        return fail(step.error());
      }
      if (limits.node_limit != 0 && stats.enodes > limits.node_limit) {
        restore(saved);
        result.stopped = stop_reason::node_limit;
        break;
      }
      if (limits.time_limit > 0 && elapsed() > limits.time_limit) {
        restore(saved);
        result.stopped = stop_reason::time_limit;
        break;
      }
      ++iteration_;
      stats.iteration = iteration_;
      stats.device = device_kind::gpu;
      result.iterations.push_back(std::move(stats));
      if (!changed) {
        result.stopped = stop_reason::saturated;
        break;
      }
    }
    return {};
  }

  std::uint64_t total_rows() const noexcept {
    std::uint64_t n = 0;
    for (const table& t : tables_) n += t.rows;
    return n;
  }

  //! The index of table `ctor` by `column` (built into `built` once per search).
  expected<device::column_index> index_of(std::vector<index>& built, std::uint32_t ctor,
                                          std::uint32_t column) {
    const table& t = tables_[ctor];
    // Rebuilt tables are sorted by their arguments: by the first one already.
    if (column == 0 && t.width > 1) return device::sorted_index(view(ctor));
    for (const index& ix : built)
      if (ix.ctor == ctor && ix.column == column) return ix.view;
    index ix;
    ix.ctor = ctor;
    ix.column = column;
    ix.view = device::column_index{nullptr, nullptr, 1, t.rows};
    if (t.rows != 0) {
      VYRE_TRY_ASSIGN(ix.block,
                      allocate<std::uint32_t>(4 * std::size_t{t.rows}, "eqsat: search index"));
      VYRE_TRY_ASSIGN(ix.view,
                      device::build_index(runtime_.memory, view(ctor), column,
                                          bits().of(view(ctor), column), ix.block.get(), stream()));
    }
    built.push_back(std::move(ix));
    return built.back().view;
  }

  //! Table `c` as the device pieces see it.
  device::table_ref view(std::uint32_t c) const noexcept {
    const table& t = tables_[c];
    return device::table_ref{t.cells, t.rows, t.width, t.class_mask};
  }
  //! The union-find over the class ids made so far.
  device::union_find_ref uf() const noexcept { return {parent_, ids_}; }
  //! The value ranges of the columns (the radix sorts' bits).
  device::key_bits bits() const noexcept { return {ids_, prog_->literals.size()}; }

  //! `plan`'s right-hand side as the apply kernel takes it, its rows and classes not placed.
  detail::gpu_actions actions_of(const query_plan& plan) const noexcept {
    detail::gpu_actions a{};
    a.step_count = static_cast<std::uint32_t>(plan.actions.size());
    a.saved_count = static_cast<std::uint32_t>(plan.saved.size());
    a.result_kind = static_cast<std::uint8_t>(plan.result.kind);
    a.result_value = plan.result.value;
    for (std::size_t s = 0; s < plan.actions.size(); ++s) {
      const make_node& m = plan.actions[s];
      detail::gpu_step& g = a.steps[s];
      g.cells = tables_[m.ctor].cells;
      g.width = tables_[m.ctor].width;
      for (std::size_t c = 0; c < m.args.size(); ++c) {
        g.kind[c] = static_cast<std::uint8_t>(m.args[c].kind);
        g.value[c] = m.args[c].value;
      }
    }
    return a;
  }

  //! One iteration: search, apply, rebuild, as one captured graph when its shape was met before
  //! (`iterate_captured`), else launched step by step (`iterate_launched`). Mutates the
  //! committed state (the caller restores its snapshot on an error).
  expected<void> iterate(const std::vector<std::uint32_t>& active, iteration_stats& stats,
                         bool& changed) {
    std::optional<detail::gpu_iteration_shape> shape = iteration_shape(active);
    double tried = 0;  // a captured launch that did not fit: its time counts in the search's
    if (shape) {
      const auto start = clock::now();
      VYRE_TRY_ASSIGN(const bool done, iterate_captured(*shape, stats, changed));
      if (done) return {};
      tried = std::chrono::duration<double>(clock::now() - start).count();
    }
    std::vector<unsigned long long> totals;
    VYRE_TRY(iterate_launched(active, stats, changed, totals));
    stats.search_seconds += tried;
    if (shape) {
      if (iterations_seen_.size() >= 64 && !iterations_seen_.contains(*shape))
        iterations_seen_.clear();
      detail::gpu_shape_meetings& met = iterations_seen_[std::move(*shape)];
      met.totals = std::move(totals);
      ++met.launched;
    }
    return {};
  }

  //! `iterate` step by step: the search's totals read back (into `totals`) size the apply.
  expected<void> iterate_launched(const std::vector<std::uint32_t>& active, iteration_stats& stats,
                                  bool& changed, std::vector<unsigned long long>& totals) {
    const auto t0 = clock::now();
    const std::uint64_t rows_before = total_rows();
    const std::uint32_t old_ids = ids_;
    const std::uint64_t old_roots = eclasses_;

    // 1. Search: count passes of every rule, one read back of the totals, write passes.
    const std::size_t rules = active.size();
    std::vector<index> indexes;
    std::vector<device::flat_query> queries(rules);
    std::vector<device::table_ref> views(tables_.size());
    for (std::uint32_t c = 0; c < tables_.size(); ++c) views[c] = view(c);
    std::vector<u32_array> offsets(rules);
    std::vector<std::uint32_t*> matches(rules, nullptr);  // in the arena
    totals.assign(rules, 0);
    VYRE_TRY_ASSIGN(device_array<unsigned long long> totals_dev,
                    allocate<unsigned long long>(rules, "eqsat: match totals"));
    if (rules != 0)
      VYRE_CUDA_TRY(cudaMemsetAsync(totals_dev.get(), 0, totals_dev.size_bytes(), stream()),
                    "eqsat: match totals");
    for (std::size_t r = 0; r < rules; ++r) {
      const query_plan& plan = plans_[active[r]];
      device::flat_query& q = queries[r];
      VYRE_TRY_ASSIGN(q, device::flatten(plan, std::span<const device::table_ref>(views),
                                         [&](std::uint32_t ctor, std::uint32_t column) {
                                           return index_of(indexes, ctor, column);
                                         }));
      const std::uint32_t n = q.atoms[0].rows;
      if (n == 0) continue;
      VYRE_TRY(device::detail::cub_items(n, "eqsat: total matches"));
      VYRE_TRY_ASSIGN(offsets[r], allocate<std::uint32_t>(n, "eqsat: matches per row"));
      VYRE_TRY(device::count_matches(q, offsets[r].get(), stream()));
      const std::uint32_t* counts = offsets[r].get();
      unsigned long long* total = totals_dev.get() + r;
      VYRE_TRY(algorithms::detail::cub_call(
          runtime_,
          [&](void* temp, std::size_t& bytes) {
            return cub::DeviceReduce::Reduce(temp, bytes, counts, total, static_cast<int>(n),
                                             cuda::std::plus<unsigned long long>{}, 0ull, stream());
          },
          stream(), "eqsat: total matches"));
    }
    // The search's one host round trip per iteration: the totals size the match buffers, the
    // new rows and the fresh classes.
    VYRE_TRY(read_back(totals.data(), totals_dev.get(), rules, "eqsat: read the totals"));
    // The totals size everything that follows: the match buffers, the rows each table will
    // hold (the rebuild's scratch is four u32 per row of the largest) and the fresh classes.
    std::vector<std::uint64_t> appended(tables_.size(), 0);
    std::uint64_t fresh = 0, match_words = 0;
    for (std::size_t r = 0; r < rules; ++r) {
      const unsigned long long total = totals[r];
      stats.matches += total;
      if (total == 0) continue;
      const query_plan& plan = plans_[active[r]];
      if (total > 0xffffffffull)
        return fail(error(errc::abi_limit, "eqsat gpu_engine: matches of one rule exceed u32")
                        .about(prog_->rules[plan.rule].text)
                        .with("matches", total)
                        .fix("set --node-limit lower"));
      for (const make_node& m : plan.actions) appended[m.ctor] += total;
      fresh += total * plan.actions.size();
      match_words += total * plan.saved.size();
    }
    std::uint64_t widest = 1;
    std::vector<std::uint64_t> after(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      after[c] = tables_[c].rows + appended[c];
      if (after[c] > 0x7fffffffull)
        return fail(error(errc::abi_limit, "eqsat gpu_engine: rows of a table exceed 2^31")
                        .about(prog_->constructors[c].name)
                        .with("rows", after[c])
                        .fix("set --node-limit lower"));
      widest = (std::max)(widest, std::uint64_t{detail::gpu_capacity_class(after[c])});
    }
    VYRE_TRY(check_ids(std::uint64_t{ids_} + fresh));
    VYRE_TRY(ensure_arena(static_cast<std::size_t>((std::max)(match_words, 4 * widest))));
    std::size_t match_at = 0;
    for (std::size_t r = 0; r < rules; ++r) {
      const unsigned long long total = totals[r];
      if (total == 0) continue;
      const query_plan& plan = plans_[active[r]];
      matches[r] = arena_.get() + match_at;
      match_at += static_cast<std::size_t>(total * plan.saved.size());
      const std::uint32_t n = queries[r].atoms[0].rows;
      std::uint32_t* counts = offsets[r].get();
      VYRE_TRY(algorithms::detail::cub_call(
          runtime_,
          [&](void* temp, std::size_t& bytes) {
            return cub::DeviceScan::ExclusiveSum(temp, bytes, counts, counts, static_cast<int>(n),
                                                 stream());
          },
          stream(), "eqsat: match offsets"));
      VYRE_TRY(device::write_matches(queries[r], counts, matches[r], stream()));
    }
    indexes.clear();
    offsets.clear();
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), "eqsat: search");
    const auto t1 = clock::now();

    // 2. Apply: room for the new rows and classes first (exact), then one kernel per rule. The
    // pool's cache goes back to the device on both sides of the new state block: before, the
    // search's freed buffers; after, the old block. Either would add to the iteration's peak.
    VYRE_TRY(release_cache());
    VYRE_TRY(reserve(after, std::uint64_t{ids_} + fresh, true));
    VYRE_TRY(release_cache());
    std::uint32_t class_base = ids_;
    VYRE_TRY(add_classes(std::uint64_t{ids_} + fresh));
    std::vector<std::uint32_t> cursor(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) cursor[c] = tables_[c].rows;
    for (std::size_t r = 0; r < rules; ++r) {
      if (totals[r] == 0) continue;
      const query_plan& plan = plans_[active[r]];
      const auto total = static_cast<std::uint32_t>(totals[r]);
      detail::gpu_actions a = actions_of(plan);
      a.class_base = class_base;
      for (std::size_t s = 0; s < plan.actions.size(); ++s) {
        a.steps[s].row_base = cursor[plan.actions[s].ctor];
        cursor[plan.actions[s].ctor] += total;
      }
      class_base += total * a.step_count;
      detail::eqsat_apply_kernel<>
          <<<grid(total), block, 0, stream()>>>(a, matches[r], total, parent_, nullptr);
      VYRE_TRY(launched("eqsat: apply"));
    }
    for (std::size_t c = 0; c < tables_.size(); ++c) tables_[c].rows = cursor[c];
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream()), "eqsat: apply");
    const auto t2 = clock::now();

    // 3. Rebuild.
    VYRE_TRY_ASSIGN(const std::uint64_t old_roots_after, rebuild(old_ids));
    drop_big_arena();
    VYRE_TRY(fit());
    const auto t3 = clock::now();

    stats.search_seconds = std::chrono::duration<double>(t1 - t0).count();
    stats.apply_seconds = std::chrono::duration<double>(t2 - t1).count();
    stats.rebuild_seconds = std::chrono::duration<double>(t3 - t2).count();
    const iteration_stats now = counts();
    stats.enodes = now.enodes;
    stats.eclasses = now.eclasses;
    stats.per_constructor = now.per_constructor;
    stats.unions = old_roots - old_roots_after;
    changed = stats.unions != 0 || stats.enodes != rows_before;
    return {};
  }

  // --- rebuild ------------------------------------------------------------------------------

  // The report's parts, in u64 words of `report_`: the loop's control, the roots (all, old),
  // a captured iteration's status (u32: fits, class ids after), the rows every table kept
  // (u32), then a captured iteration's match totals per rule.
  static constexpr std::size_t report_control = 0, report_roots = 2, report_status = 4,
                               report_kept = 5;
  static_assert(sizeof(graph::fixpoint_control) == report_roots * sizeof(unsigned long long));
  std::size_t report_totals() const noexcept { return report_kept + (tables_.size() + 1) / 2; }

  // The launch inputs, in u32 of `live_rows_`: the rows in use per table, the class-id count,
  // each table's capacity, the union-find's, then a captured iteration's rule shapes.
  static constexpr std::size_t rule_shape_words = sizeof(detail::gpu_rule_shape) / 4;
  static_assert(sizeof(detail::gpu_rule_shape) % 4 == 0);
  std::size_t input_ids() const noexcept { return tables_.size(); }
  std::size_t input_caps() const noexcept { return tables_.size() + 1; }
  std::size_t input_rules() const noexcept { return 2 * tables_.size() + 2; }

  graph::fixpoint_control* control() const noexcept {
    return reinterpret_cast<graph::fixpoint_control*>(report_.get() + report_control);
  }

  //! Table `c` as the rebuild graph sees it: its capacity, with the rows in use on the device.
  device::table_ref capacity_view(std::uint32_t c) const noexcept {
    const table& t = tables_[c];
    return device::table_ref{t.cells, static_cast<std::uint32_t>(t.capacity), t.width, t.class_mask,
                             live_rows_.get() + c};
  }

  //! One rebuild round on `s`: {compress; per table: canonicalize, sort_rows, unite_congruent},
  //! `*merged` set when a union merged two classes. Written once for the captured graph
  //! (tables at their capacity, `capacity_view`) and the launched path (`view`).
  template <class View>
  expected<void> rebuild_round(cudaStream_t s, View view, device::union_find_ref uf,
                               const device::key_bits& bits, device_resource_ref memory) {
    auto* merged = reinterpret_cast<std::uint32_t*>(&control()->changed);
    VYRE_TRY(device::compress(uf, s));
    for (std::uint32_t c = 0; c < tables_.size(); ++c) {
      if (tables_[c].capacity == 0) continue;
      const device::table_ref t = view(c);
      VYRE_TRY(device::canonicalize(t, uf, s));
      VYRE_TRY(device::sort_rows(memory, t, bits, arena_.get(), s));
      VYRE_TRY(device::unite_congruent(t, uf, merged, s));
    }
    return {};
  }

  //! After the last round: the first row of every run of equal arguments stays (their classes
  //! are equal: the last round united nothing); the kept counts land in the report.
  template <class View>
  expected<void> rebuild_dedupe(cudaStream_t s, View view, device_resource_ref memory) {
    auto* kept = reinterpret_cast<std::uint32_t*>(report_.get() + report_kept);
    for (std::uint32_t c = 0; c < tables_.size(); ++c) {
      if (tables_[c].capacity == 0) continue;
      VYRE_TRY(device::drop_duplicates(memory, view(c), arena_.get(), kept + c, s));
    }
    return {};
  }

  using graph_type = graph::graph_cache<on_error::return_expected>::graph_type;

  //! The shape of the state now (`detail::gpu_rebuild_shape`).
  detail::gpu_rebuild_shape rebuild_shape() const {
    detail::gpu_rebuild_shape shape;
    shape.caps.resize(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) shape.caps[c] = tables_[c].capacity;
    shape.ids = parent_capacity_;
    shape.state = state_.get();
    shape.arena = arena_.get();
    return shape;
  }

  //! The radix sorts' bits of a captured graph: every id the union-find can hold.
  device::key_bits capacity_bits() const noexcept {
    return {parent_capacity_, prog_->literals.size()};
  }

  //! CUB's scratch of the captured graphs, at least `bytes` (grown: every cached graph, which
  //! bakes the old block in, is dropped).
  expected<void> ensure_cub_scratch(std::size_t bytes) {
    if (cub_scratch_.size() >= bytes) return {};
    rebuild_graphs_.clear();
    iteration_graphs_.clear();
    cub_scratch_ = device_array<unsigned char>{};
    VYRE_TRY_ASSIGN(cub_scratch_, allocate<unsigned char>(bytes, "eqsat: graphs' CUB scratch"));
    return {};
  }

  //! CUB scratch bytes of the rebuild of every table at its capacity.
  expected<std::size_t> rebuild_cub_bytes() const {
    std::size_t bytes = 1;
    for (std::uint32_t c = 0; c < tables_.size(); ++c) {
      if (tables_[c].capacity == 0) continue;
      VYRE_TRY_ASSIGN(const std::size_t need,
                      device::rebuild_cub_bytes(capacity_view(c), capacity_bits()));
      bytes = (std::max)(bytes, need);
    }
    return bytes;
  }

  //! The captured rebuild of the current shape (`detail::gpu_rebuild_shape`), or null when the
  //! shape is new: a growing e-graph rarely meets a shape twice, and capturing costs more than
  //! the launches it replaces, so a shape is captured when it comes back and replayed after.
  //! The graph: a device fixpoint loop of `rebuild_round`s over the tables at their capacity,
  //! ended on the device by the round that unites nothing, then `rebuild_dedupe`. Rows in use
  //! come from `live_rows_`, so it serves every row count up to the capacities; CUB's scratch
  //! is `cub_scratch_` (grown, and the graphs dropped, when a new shape needs more).
  expected<graph_type*> rebuild_graph() {
    const detail::gpu_rebuild_shape shape = rebuild_shape();
    if (rebuild_graphs_.contains(shape)) return rebuild_graphs_.find(shape);  // one hit
    if (shapes_seen_.size() >= 64) shapes_seen_.clear();
    if (shapes_seen_.insert(shape).second) return nullptr;
    const device::key_bits bits = capacity_bits();
    VYRE_TRY_ASSIGN(const std::size_t bytes, rebuild_cub_bytes());
    VYRE_TRY(ensure_cub_scratch(bytes));
    scratch_block_resource scratch(cub_scratch_.get(), cub_scratch_.size());
    const device_resource_ref memory(scratch);
    const device::union_find_ref uf{parent_, static_cast<std::uint32_t>(parent_capacity_)};
    const auto at_capacity = [this](std::uint32_t c) { return capacity_view(c); };
    auto round = [&](cudaStream_t s) { return rebuild_round(s, at_capacity, uf, bits, memory); };
    auto dedupe = [&](cudaStream_t s) { return rebuild_dedupe(s, at_capacity, memory); };
    return rebuild_graphs_.get_or_build(shape, 0, [&] {
      // No round cap the loop can reach: every round but the last merges two classes, and
      // the dedupe is only right once the loop converged.
      return graph::build_fixpoint_graph<on_error::return_expected>(stream(), control(),
                                                                    0xffffffffu, round, dedupe);
    });
  }

  //! Congruence closure, then duplicate rows dropped: one launch of the captured graph of
  //! this shape (`rebuild_graph`), or the same passes launched with a flag read back per round;
  //! updates the rows and the e-class count and returns the roots among the ids below
  //! `old_ids`, from one read back. Uses the arena (made large enough here).
  expected<std::uint64_t> rebuild(std::uint32_t old_ids) {
    const char* what = "eqsat: rebuild";
    VYRE_TRY(ensure_arena(rebuild_words()));
    VYRE_TRY_ASSIGN(graph_type * graph, rebuild_graph());
    if (graph != nullptr) {
      // The union-find's ids past the last one made are padding: singletons nothing names.
      const auto ids_cap = static_cast<std::uint32_t>(parent_capacity_);
      VYRE_TRY(device::init_classes({parent_, ids_cap}, ids_, ids_cap, stream()));
      for (std::size_t c = 0; c < tables_.size(); ++c) live_rows_host_[c] = tables_[c].rows;
      // Pageable: the copy is staged before the call returns.
      VYRE_CUDA_TRY(
          cudaMemcpyAsync(live_rows_.get(), live_rows_host_.data(),
                          tables_.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream()),
          what);
      VYRE_TRY(graph->launch(stream()));
    } else {
      const auto exact = [this](std::uint32_t c) { return view(c); };
      auto* merged = reinterpret_cast<std::uint32_t*>(&control()->changed);
      for (std::uint32_t any = 1; any != 0;) {
        VYRE_CUDA_TRY(cudaMemsetAsync(merged, 0, sizeof(std::uint32_t), stream()), what);
        VYRE_TRY(rebuild_round(stream(), exact, uf(), bits(), runtime_.memory));
        VYRE_TRY(read_back(&any, merged, 1, what));
      }
      VYRE_TRY(rebuild_dedupe(stream(), exact, runtime_.memory));
    }
    VYRE_TRY_ASSIGN(const std::vector<unsigned long long> report, read_report(uf(), old_ids));
    VYRE_TRY(take_kept(report, graph != nullptr));
    eclasses_ = report[report_roots];
    return report[report_roots + 1];
  }

  // --- captured iterations ------------------------------------------------------------------

  //! The shape of this iteration when it may run as one captured graph: captures on, every
  //! table and the union-find within the class limit (where capacities are classes, so shapes
  //! repeat), and an arena the rebuild fits in (a launched iteration leaves one: the shape
  //! names it, and allocating one here would only be freed by the launched search's).
  std::optional<detail::gpu_iteration_shape> iteration_shape(
      const std::vector<std::uint32_t>& active) const {
    if (!capture_iterations_ || active.empty() || active.size() > plans_.size()) return {};
    if (parent_capacity_ == 0 || parent_capacity_ > detail::gpu_class_limit) return {};
    for (const table& t : tables_)
      if (t.capacity > detail::gpu_class_limit) return {};
    if (arena_.size() < rebuild_words()) return {};
    return detail::gpu_iteration_shape{rebuild_shape(), active};
  }

  //! Iterations like the last launched one that a shape must still have room for to be
  //! captured, so that a capture (about 0.9 ms on an H100, two launched iterations of a small
  //! e-graph) is spent only on a shape that lasts.
  static constexpr std::uint64_t capture_payback = 6;

  //! Whether the shape now has room for `times` more iterations like the last one, whose
  //! match totals are `totals`: its fresh class ids fit that often, and the next apply's rows
  //! fit.
  bool has_room(const std::vector<std::uint32_t>& active,
                const std::vector<unsigned long long>& totals, std::uint64_t times) const {
    std::uint64_t fresh = 0;
    std::vector<std::uint64_t> rows(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) rows[c] = tables_[c].rows;
    for (std::size_t r = 0; r < active.size(); ++r)
      for (const make_node& m : plans_[active[r]].actions) {
        rows[m.ctor] += totals[r];
        fresh += totals[r];
      }
    for (std::size_t c = 0; c < tables_.size(); ++c)
      if (rows[c] > tables_[c].capacity) return false;
    return ids_ + times * fresh <= parent_capacity_;
  }

  //! Whether matches as many as `totals` fit the match buffers of `shape`'s captured graph.
  bool matches_fit(const detail::gpu_iteration_shape& shape,
                   const std::vector<unsigned long long>& totals) const {
    const std::vector<std::uint32_t>& inputs = iteration_inputs_.find(shape)->second;
    for (std::size_t r = 0; r < shape.active.size(); ++r) {
      detail::gpu_rule_shape rule{};
      std::memcpy(static_cast<void*>(&rule), inputs.data() + input_rules() + r * rule_shape_words,
                  sizeof(rule));
      if (totals[r] > rule.match_capacity) return false;
    }
    return true;
  }

  //! The iteration as one launch of the captured graph of `shape` and one read back. A shape
  //! is captured at its third meeting, after two launched iterations, when it `has_room` for
  //! `capture_payback` more: a fast-growing e-graph (math.egg's) leaves each shape after one
  //! or two iterations, and a capture costs more than the launches of a few. False, the
  //! e-graph unchanged, when the shape is not captured (yet), or when this iteration's matches,
  //! rows or classes would outgrow (by the last iteration's) or did outgrow the graph's
  //! buffers (the graph is dropped): the caller then runs it launched, which grows them. The
  //! capture's time counts in the search's.
  expected<bool> iterate_captured(const detail::gpu_iteration_shape& shape, iteration_stats& stats,
                                  bool& changed) {
    const auto seen = iterations_seen_.find(shape);
    if (seen == iterations_seen_.end() || seen->second.launched < 2) return false;
    std::vector<unsigned long long>& last = seen->second.totals;
    if (!iteration_graphs_.contains(shape) && !has_room(shape.active, last, capture_payback))
      return false;
    const auto before_capture = clock::now();
    VYRE_TRY_ASSIGN(graph_type * graph, iteration_graph(shape, last));
    if (graph == nullptr) return false;
    if (!has_room(shape.active, last, 1) || !matches_fit(shape, last)) {
      iteration_graphs_.erase(shape);  // outgrown, most likely: spare the launch that tells
      return false;
    }
    const auto launch_start = clock::now();
    const double capture_seconds =
        std::chrono::duration<double>(launch_start - before_capture).count();
    const char* what = "eqsat: captured iteration";
    const std::uint64_t rows_before = total_rows();
    const std::uint32_t old_ids = ids_;
    const std::uint64_t old_roots = eclasses_;
    const auto ids_cap = static_cast<std::uint32_t>(parent_capacity_);
    // Fresh classes come from the union-find's padding: singletons that nothing names yet.
    VYRE_TRY(device::init_classes({parent_, ids_cap}, ids_, ids_cap, stream()));
    const std::vector<std::uint32_t>& inputs = iteration_inputs_.find(shape)->second;
    std::copy(inputs.begin(), inputs.end(), live_rows_host_.begin());
    for (std::size_t c = 0; c < tables_.size(); ++c) live_rows_host_[c] = tables_[c].rows;
    live_rows_host_[input_ids()] = ids_;
    // Pageable: the copy is staged before the call returns.
    VYRE_CUDA_TRY(
        cudaMemcpyAsync(live_rows_.get(), live_rows_host_.data(),
                        inputs.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice, stream()),
        what);
    VYRE_TRY(graph->launch(stream()));
    VYRE_TRY_ASSIGN(const std::vector<unsigned long long> report,
                    read_report({parent_, ids_cap}, old_ids));
    std::uint32_t status[2] = {};
    std::memcpy(status, report.data() + report_status, sizeof(status));
    if (status[0] != 1) {
      iteration_graphs_.erase(shape);  // outgrown: a launched iteration grows the buffers
      return false;
    }
    VYRE_TRY(take_kept(report, true));
    ids_ = status[1];
    eclasses_ = report[report_roots] - (ids_cap - ids_);  // the padding ids are roots too
    for (std::size_t r = 0; r < shape.active.size(); ++r) {
      last[r] = report[report_totals() + r];
      stats.matches += last[r];
    }
    drop_big_arena();
    VYRE_TRY(fit());
    // The phases add up to the iteration's wall time, as a launched iteration's do: the search
    // and the apply are the device's times between the graph's events (plus the capture), the
    // rebuild is the rest (its device time, the upload, the launch and the read back).
    const double wall = std::chrono::duration<double>(clock::now() - launch_start).count();
    VYRE_TRY_ASSIGN(const double search, phase_events_.seconds(0, 1));
    VYRE_TRY_ASSIGN(const double apply, phase_events_.seconds(1, 2));
    stats.search_seconds = capture_seconds + search;
    stats.apply_seconds = apply;
    stats.rebuild_seconds = (std::max)(wall - search - apply, 0.0);
    const iteration_stats now = counts();
    stats.enodes = now.enodes;
    stats.eclasses = now.eclasses;
    stats.per_constructor = now.per_constructor;
    stats.unions = old_roots - report[report_roots + 1];
    changed = stats.unions != 0 || stats.enodes != rows_before;
    return true;
  }

  //! The captured iteration of `shape`, or null when a rule's matches in the shape's last
  //! launched iteration (`totals`) leave no room below the class limit. The graph, on the
  //! tables and union-find at their capacities with the rows in use and the class-id count
  //! uploaded before each launch (`live_rows_`):
  //!   search: the indexes built; per rule the matches counted and summed (into the report);
  //!           then one thread places the apply (`eqsat_place_kernel`): whether it fits the
  //!           graph's buffers, and where each rule's rows and classes go; per rule the counts
  //!           scanned and the matches written into a buffer of room for twice those `totals`;
  //!   apply:  per rule, the kernel over the matches the device placed (none when it did not
  //!           fit); the rows in use after it, into `live_rows_`;
  //!   rebuild: behind the gate the placing set, the device loop of `rebuild_round`s, then
  //!           `rebuild_dedupe` either way (it keeps every row of an unchanged e-graph).
  //! Timing events mark the start and the ends of the search and apply. Everything the graph writes
  //! besides the e-graph lives in `search_block_` (grown: every captured iteration dropped),
  //! `cub_scratch_`, the arena and the report.
  expected<graph_type*> iteration_graph(const detail::gpu_iteration_shape& shape,
                                        const std::vector<unsigned long long>& totals) {
    if (iteration_graphs_.contains(shape) && iteration_inputs_.contains(shape))
      return iteration_graphs_.find(shape);  // one hit
    // A graph whose inputs were forgotten is captured again: its buffers match its inputs.
    iteration_graphs_.erase(shape);
    const char* what = "eqsat: capture an iteration";
    const std::vector<std::uint32_t>& active = shape.active;
    const std::size_t rules = active.size(), tables = tables_.size();
    std::vector<std::uint32_t> room(rules);
    for (std::size_t r = 0; r < rules; ++r) {
      const std::uint64_t want = 2 * std::uint64_t{totals[r]} + 1024;
      if (want > detail::gpu_class_limit) return nullptr;
      room[r] = static_cast<std::uint32_t>(detail::gpu_capacity_class(want));
    }
    // The search block: per rule its counts (atom 0's capacity), the placing, the rows after
    // the apply, the indexes (four u32 per row of their table's capacity), per rule its matches.
    struct built_index {
      std::uint32_t ctor, column;
      std::size_t at;
    };
    std::vector<built_index> indexes;
    std::vector<std::size_t> counts_at(rules), match_at(rules);
    std::size_t words = 0;
    for (std::size_t r = 0; r < rules; ++r) {
      counts_at[r] = words;
      words += aligned(tables_[plans_[active[r]].atoms[0].ctor].capacity);
    }
    const std::size_t placed_at = words;
    words += aligned(rules * detail::gpu_placed_words);
    const std::size_t live_after_at = words;
    words += aligned(tables);
    for (std::uint32_t rule : active)
      for (std::size_t k = 1; k < plans_[rule].atoms.size(); ++k) {
        const plan_atom& a = plans_[rule].atoms[k];
        const bool sorted = a.key_column == 0 && tables_[a.ctor].width > 1;
        const bool have = std::any_of(indexes.begin(), indexes.end(), [&](const built_index& i) {
          return i.ctor == a.ctor && i.column == a.key_column;
        });
        if (sorted || have) continue;
        indexes.push_back({a.ctor, a.key_column, words});
        words += aligned(4 * tables_[a.ctor].capacity);
      }
    for (std::size_t r = 0; r < rules; ++r) {
      match_at[r] = words;
      words += aligned(std::size_t{room[r]} * plans_[active[r]].saved.size());
    }
    if (search_block_.size() < words) {
      iteration_graphs_.clear();  // every one bakes the old block in
      search_block_ = u32_array{};
      VYRE_TRY_ASSIGN(search_block_, allocate<std::uint32_t>(words, "eqsat: captured search"));
    }
    // CUB's scratch: the rebuild's, every rule's sum and scan, every index's sort.
    const device::key_bits bits = capacity_bits();
    VYRE_TRY_ASSIGN(std::size_t cub_bytes, rebuild_cub_bytes());
    for (std::size_t r = 0; r < rules; ++r) {
      const auto n = static_cast<int>(tables_[plans_[active[r]].atoms[0].ctor].capacity);
      if (n == 0) continue;
      const std::uint32_t* in = nullptr;
      std::uint32_t* inout = nullptr;
      unsigned long long* sum = nullptr;
      std::size_t bytes = 0;
      VYRE_CUDA_TRY(cub::DeviceReduce::Reduce(nullptr, bytes, in, sum, n,
                                              cuda::std::plus<unsigned long long>{}, 0ull),
                    what);
      cub_bytes = (std::max)(cub_bytes, bytes);
      VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, bytes, inout, inout, n), what);
      cub_bytes = (std::max)(cub_bytes, bytes);
    }
    for (const built_index& i : indexes) {
      const auto n = static_cast<int>(tables_[i.ctor].capacity);
      cub::DoubleBuffer<std::uint32_t> none(nullptr, nullptr);
      std::size_t bytes = 0;
      VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, none, none, n, 0,
                                                    bits.of(capacity_view(i.ctor), i.column)),
                    what);
      cub_bytes = (std::max)(cub_bytes, bytes);
    }
    VYRE_TRY(ensure_cub_scratch(cub_bytes));
    VYRE_TRY(phase_events_.create());
    // The launch inputs past the rows and ids: the capacities, then the rule shapes.
    std::vector<std::uint32_t> inputs;
    VYRE_TRY(try_resize(inputs, input_rules() + rules * rule_shape_words, what));
    for (std::size_t c = 0; c < tables; ++c)
      inputs[input_caps() + c] = static_cast<std::uint32_t>(tables_[c].capacity);
    inputs[input_caps() + tables] = static_cast<std::uint32_t>(parent_capacity_);
    for (std::size_t r = 0; r < rules; ++r) {
      const query_plan& plan = plans_[active[r]];
      detail::gpu_rule_shape rule{};
      rule.step_count = static_cast<std::uint32_t>(plan.actions.size());
      rule.match_capacity = room[r];
      for (std::size_t s = 0; s < plan.actions.size(); ++s) rule.ctor[s] = plan.actions[s].ctor;
      std::memcpy(inputs.data() + input_rules() + r * rule_shape_words, &rule, sizeof(rule));
    }

    scratch_block_resource scratch(cub_scratch_.get(), cub_scratch_.size());
    const device_resource_ref memory(scratch);
    const auto runtime = device::detail::runtime_for(memory);
    const device::union_find_ref uf_cap{parent_, static_cast<std::uint32_t>(parent_capacity_)};
    std::uint32_t* buf = search_block_.get();
    std::uint32_t* live = live_rows_.get();
    unsigned long long* sums = report_.get() + report_totals();
    cudaEvent_t* events = phase_events_.at;
    const auto mark = [&](cudaStream_t s, std::size_t e) {
      return cuda_check(cudaEventRecordWithFlags(events[e], s, cudaEventRecordExternal), what);
    };
    auto search_and_apply = [&](cudaStream_t s, graph::while_condition gate) -> expected<void> {
      VYRE_TRY(mark(s, 0));
      VYRE_CUDA_TRY(cudaMemsetAsync(sums, 0, rules * sizeof(unsigned long long), s), what);
      std::vector<device::table_ref> views(tables);
      for (std::uint32_t c = 0; c < tables; ++c) views[c] = capacity_view(c);
      std::vector<device::column_index> built(indexes.size());
      for (std::size_t i = 0; i < indexes.size(); ++i) {
        const device::table_ref& t = views[indexes[i].ctor];
        VYRE_TRY_ASSIGN(built[i],
                        device::build_index(memory, t, indexes[i].column,
                                            bits.of(t, indexes[i].column), buf + indexes[i].at, s));
      }
      const auto index_of = [&](std::uint32_t ctor,
                                std::uint32_t column) -> expected<device::column_index> {
        for (std::size_t i = 0; i < indexes.size(); ++i)
          if (indexes[i].ctor == ctor && indexes[i].column == column) return built[i];
        return device::sorted_index(views[ctor]);
      };
      std::vector<device::flat_query> queries(rules);
      for (std::size_t r = 0; r < rules; ++r) {
        VYRE_TRY_ASSIGN(queries[r],
                        device::flatten(plans_[active[r]],
                                        std::span<const device::table_ref>(views), index_of));
        const std::uint32_t n = queries[r].atoms[0].rows;
        if (n == 0) continue;
        std::uint32_t* counts = buf + counts_at[r];
        VYRE_TRY(device::count_matches(queries[r], counts, s));
        VYRE_TRY(algorithms::detail::cub_call(
            runtime,
            [&](void* temp, std::size_t& bytes) {
              return cub::DeviceReduce::Reduce(temp, bytes, counts, sums + r, static_cast<int>(n),
                                               cuda::std::plus<unsigned long long>{}, 0ull, s);
            },
            s, what));
      }
      detail::eqsat_place_kernel<><<<1, 1, 0, s>>>(
          sums, reinterpret_cast<const detail::gpu_rule_shape*>(live + input_rules()),
          static_cast<std::uint32_t>(rules), live, live + input_caps(),
          static_cast<std::uint32_t>(tables), buf + placed_at, buf + live_after_at,
          reinterpret_cast<std::uint32_t*>(report_.get() + report_status), gate);
      VYRE_TRY(launched(what));
      for (std::size_t r = 0; r < rules; ++r) {
        const std::uint32_t n = queries[r].atoms[0].rows;
        if (n == 0) continue;
        std::uint32_t* counts = buf + counts_at[r];
        VYRE_TRY(algorithms::detail::cub_call(
            runtime,
            [&](void* temp, std::size_t& bytes) {
              return cub::DeviceScan::ExclusiveSum(temp, bytes, counts, counts, static_cast<int>(n),
                                                   s);
            },
            s, what));
        VYRE_TRY(device::write_matches(queries[r], counts, buf + match_at[r], s, room[r]));
      }
      VYRE_TRY(mark(s, 1));
      for (std::size_t r = 0; r < rules; ++r) {
        detail::eqsat_apply_kernel<><<<grid(room[r]), block, 0, s>>>(
            actions_of(plans_[active[r]]), buf + match_at[r], room[r], parent_,
            buf + placed_at + r * detail::gpu_placed_words);
        VYRE_TRY(launched(what));
      }
      VYRE_TRY(algorithms::detail::copy_on_device(live, buf + live_after_at, tables, s, what));
      return mark(s, 2);
    };
    const auto at_capacity = [this](std::uint32_t c) { return capacity_view(c); };
    auto round = [&](cudaStream_t s) {
      return rebuild_round(s, at_capacity, uf_cap, bits, memory);
    };
    auto dedupe = [&](cudaStream_t s) { return rebuild_dedupe(s, at_capacity, memory); };
    if (iteration_inputs_.size() >= 64) iteration_inputs_.clear();
    iteration_inputs_.insert_or_assign(shape, std::move(inputs));
    VYRE_TRY_ASSIGN(graph_type * graph, iteration_graphs_.get_or_build(shape, 0, [&] {
      // No round cap the loop can reach, as in `rebuild_graph`.
      return graph::build_gated_fixpoint_graph<on_error::return_expected>(
          stream(), control(), 0xffffffffu, search_and_apply, round, dedupe);
    }));
    // Uploaded now, so the first launch's phase times are the work's.
    VYRE_TRY(graph->upload(stream()));
    return graph;
  }

  //! The roots of `counted` (all, and those below `old_ids`) into the report, then the report
  //! read back: the one read back of a rebuild or captured iteration.
  expected<std::vector<unsigned long long>> read_report(device::union_find_ref counted,
                                                        std::uint32_t old_ids) {
    const char* what = "eqsat: read the report";
    unsigned long long* roots = report_.get() + report_roots;
    VYRE_CUDA_TRY(cudaMemsetAsync(roots, 0, 2 * sizeof(unsigned long long), stream()), what);
    VYRE_TRY(device::count_roots(counted, old_ids, roots, stream()));
    std::vector<unsigned long long> report;
    VYRE_TRY(try_resize(report, report_.size(), what));
    VYRE_TRY(read_back(report.data(), report_.get(), report.size(), what));
    return report;
  }

  //! From a report read back: every table's rows become those its dedupe kept, after checking
  //! that a captured loop (`captured`) converged.
  expected<void> take_kept(const std::vector<unsigned long long>& report, bool captured) {
    graph::fixpoint_control done{};
    std::memcpy(static_cast<void*>(&done), report.data() + report_control, sizeof(done));
    if (captured && done.converged != 1)
      return fail(error(errc::invalid_state, "eqsat gpu_engine: the rebuild did not converge")
                      .with("rounds", done.rounds)
                      .fix("report this: the rebuild loop has no reachable round cap"));
    std::vector<std::uint32_t> kept(tables_.size());
    std::memcpy(kept.data(), report.data() + report_kept, kept.size() * sizeof(std::uint32_t));
    for (std::size_t c = 0; c < tables_.size(); ++c)
      if (tables_[c].capacity != 0) tables_[c].rows = kept[c];
    return {};
  }

  // Members: the stream first, so that the device arrays (stream-ordered frees) die before it.
  const program* prog_;
  Backend* backend_ = nullptr;
  algorithms::detail::runtime_ref runtime_;
  stream_lease stream_;
  std::vector<table> tables_;
  u32_array state_;                  //!< every table's rows, then the union-find (`layout`)
  std::uint32_t* parent_ = nullptr;  //!< the union-find in `state_`
  std::size_t parent_capacity_ = 0;
  u32_array arena_;  //!< one iteration's scratch: the matches, then the rebuild's buffers
  //! What a rebuild reports, read back in one copy: a `graph::fixpoint_control`, the roots
  //! (all, old), then the rows every table kept (u32), at `report_control` / `_roots` / `_kept`.
  device_array<unsigned long long> report_;
  device_array<std::uint32_t> live_rows_;      //!< rows in use per table, for the rebuild graph
  std::vector<std::uint32_t> live_rows_host_;  //!< their upload's source
  device_array<unsigned char> cub_scratch_;    //!< every CUB call of the rebuild graphs
  //! One captured rebuild per shape (`rebuild_graph`).
  graph::graph_cache<on_error::return_expected, detail::gpu_rebuild_shape,
                     detail::gpu_rebuild_shape_hash>
      rebuild_graphs_{graph::cache_limits{.max_entries = 16}};
  //! Shapes met once (launched); the second meeting captures (`rebuild_graph`).
  std::unordered_set<detail::gpu_rebuild_shape, detail::gpu_rebuild_shape_hash> shapes_seen_;
  //! A captured iteration's counts, indexes, placing and matches (`iteration_graph`).
  u32_array search_block_;
  //! One captured iteration per shape (`iteration_graph`), with its launch inputs past the
  //! rows and ids, and the match totals of each shape's last launched iteration.
  graph::graph_cache<on_error::return_expected, detail::gpu_iteration_shape,
                     detail::gpu_iteration_shape_hash>
      iteration_graphs_{graph::cache_limits{.max_entries = 16}};
  std::unordered_map<detail::gpu_iteration_shape, std::vector<std::uint32_t>,
                     detail::gpu_iteration_shape_hash>
      iteration_inputs_;
  std::unordered_map<detail::gpu_iteration_shape, detail::gpu_shape_meetings,
                     detail::gpu_iteration_shape_hash>
      iterations_seen_;
  detail::gpu_phase_events phase_events_;
  bool capture_iterations_ = false;
  std::uint32_t ids_ = 0;
  std::uint64_t eclasses_ = 0;
  std::vector<query_plan> plans_;
  std::vector<std::uint32_t> global_class_;
  std::uint64_t iteration_ = 0;
  mutable std::optional<error> failure_;
  mutable bool host_valid_ = false;
  mutable bool costs_valid_ = false;
  mutable std::vector<std::vector<std::uint32_t>> host_cells_;
  mutable std::vector<std::uint32_t> host_parent_;
  mutable detail::tree_costs costs_;
};

}  // namespace vyre::eqsat

#include "vyre/detail/epilogue.hpp"
