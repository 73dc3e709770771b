// SPDX-License-Identifier: Apache-2.0
//! @file
//! `eqsat::detail::gpu_rebuild`: the GPU engine's rebuild and when it is captured. A rebuild is
//! congruence closure to a fixpoint (rounds of `device::compress` and `device::congruence_round`
//! per table) and then every table sorted by its keys with its duplicate rows dropped
//! (`device::sort_rows`, `device::drop_duplicates`). The capture policy: a state shape (every
//! capacity and the buffers, `gpu_rebuild_shape`) met for the first time runs the rounds
//! launched, with a flag read back per round; met again, it is captured as one CUDA graph with a
//! device-side loop (`graph::build_fixpoint_graph`) and replayed while the shape holds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/eqsat/detail/gpu_state.cuh"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/graph/cache.cuh"
#include "vyre/graph/conditional.cuh"
#include "vyre/runtime/device_array.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::detail {

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

//! The device state with its rebuild (see the file comment); the engine derives from it.
class gpu_rebuild : protected gpu_state {
 public:
  //! Counters of the captured rebuilds: a hit replayed the graph of an earlier rebuild of the
  //! same shape (capacities and buffers), a capture made one.
  graph::cache_stats rebuild_graph_stats() const noexcept { return rebuild_graphs_.stats(); }
  //! Whether rebuilds of a shape met before replay a captured graph (default on). Off, every
  //! rebuild launches its rounds with one flag read back per round: compute-sanitizer's
  //! racecheck and synccheck cannot follow CUB's sorts inside a graph's conditional loop.
  void capture_rebuilds(bool on) noexcept { capture_rebuilds_ = on; }

 protected:
  gpu_rebuild(const vyre::detail::runtime_ref& runtime, const declarations& decl,
              const std::vector<std::uint8_t>& subsumed, const std::vector<std::uint8_t>& deleted,
              stream_lease stream)
      : gpu_state(runtime, decl, subsumed, deleted, std::move(stream)) {}
  gpu_rebuild(gpu_rebuild&& o) noexcept
      : gpu_state(std::move(o)),
        report_(std::move(o.report_)),
        live_rows_(std::move(o.live_rows_)),
        live_rows_host_(std::move(o.live_rows_host_)),
        cub_scratch_(std::move(o.cub_scratch_)),
        small_tables_(std::move(o.small_tables_)),
        small_index_(std::move(o.small_index_)),
        small_kept_(std::move(o.small_kept_)),
        rebuild_graphs_(std::move(o.rebuild_graphs_)),
        shapes_seen_(std::move(o.shapes_seen_)),
        graph_base_bound_(o.graph_base_bound_),
        last_rebuild_rounds_(o.last_rebuild_rounds_),
        last_rebuild_folded_(o.last_rebuild_folded_),
        last_rebuild_conflict_(o.last_rebuild_conflict_),
        capture_rebuilds_(o.capture_rebuilds_) {}
  gpu_rebuild& operator=(gpu_rebuild&&) = delete;
  ~gpu_rebuild() {}  // NOLINT(modernize-use-equals-default): see gpu_state's move constructor

  //! The report and the rows-in-use buffers, once the tables are known.
  expected<void> start_rebuilds() {
    VYRE_TRY_ASSIGN(report_,
                    allocate<unsigned long long>(report_size(), "eqsat: iteration report"));
    // Zeroed once: a launched rebuild leaves the loop's round count and the kept rows of empty
    // tables unwritten, and the report is read back whole.
    VYRE_CUDA_TRY(cudaMemsetAsync(report_.get(), 0, report_.size_bytes(), stream()),
                  "eqsat: iteration report");
    const std::size_t inputs = (std::max)(tables_.size(), std::size_t{1});
    VYRE_TRY_ASSIGN(live_rows_, allocate<std::uint32_t>(inputs, "eqsat: rows in use"));
    VYRE_TRY_ASSIGN(clock_, allocate<std::uint32_t>(1, "eqsat: the rebuild's timestamp"));
    VYRE_TRY(try_resize(live_rows_host_, inputs, "eqsat: rows in use"));
    VYRE_TRY(try_resize(small_tables_, inputs, "eqsat: the rebuild's small tables"));
    VYRE_TRY(try_resize(small_index_, inputs, "eqsat: the rebuild's small tables"));
    VYRE_TRY(try_resize(small_kept_, inputs, "eqsat: the rebuild's small tables"));
    return {};
  }

  // The report's parts, in u64 words of `report_`: the loop's control, the roots (all, old),
  // whether a fold changed a function's value (its low u32) and whether a `:no-merge`
  // function met two values (its high u32), then the rows every table kept (u32).
  static constexpr std::size_t report_control = 0, report_roots = 2, report_folded = 4,
                               report_kept = 5;
  static_assert(sizeof(graph::fixpoint_control) == report_roots * sizeof(unsigned long long));
  std::size_t report_size() const noexcept { return report_kept + (tables_.size() + 1) / 2; }

  graph::fixpoint_control* control() const noexcept {
    return reinterpret_cast<graph::fixpoint_control*>(report_.get() + report_control);
  }
  //! The device u32 the dedupe sets when a fold changed a function's value.
  std::uint32_t* folded() const noexcept {
    return reinterpret_cast<std::uint32_t*>(report_.get() + report_folded);
  }
  //! The device u32 the dedupe sets when a `:no-merge` function met two values for one key.
  std::uint32_t* conflict() const noexcept { return folded() + 1; }

  //! Table `f` as the rebuild graph sees it: its capacity, with the rows in use on the device.
  device::table_ref capacity_view(std::uint32_t f) const noexcept {
    const table& t = tables_[f];
    return device::table_ref{t.cells,
                             static_cast<std::uint32_t>(t.capacity),
                             t.width,
                             t.class_mask,
                             live_rows_.get() + f,
                             t.merge,
                             t.stamps,
                             clock_.get()};
  }

  //! Table `f`'s congruence index in the arena (`rebuild_words_for`'s layout), laid out by
  //! the capacities, so the captured graph and the launched path agree.
  device::congruence_ref congruence(std::uint32_t f) const noexcept {
    std::uint32_t* at = arena_.get() + tables_.size() * device::congruence_control_words;
    for (std::uint32_t c = 0; c < f; ++c)
      at += tables_[c].capacity == 0 ? 0 : device::congruence_words(tables_[c].capacity);
    return device::congruence_at(at, tables_[f].capacity,
                                 arena_.get() + f * device::congruence_control_words);
  }

  //! One rebuild round on `s`: {compress; per table: congruence_round}, `*merged` set when a
  //! union merged two classes; tables of at most `device::small_table_rows` rows take one
  //! launch between them (`congruence_round_small`). Written once for the captured graph
  //! (tables at their capacity, `capacity_view`) and the launched path (`view`);
  //! `congruence_start` comes first.
  template <class View>
  expected<void> rebuild_round(cudaStream_t s, View view, device::union_find_ref uf) {
    auto* merged = reinterpret_cast<std::uint32_t*>(&control()->changed);
    VYRE_TRY(device::compress(uf, s));
    std::size_t small = 0;
    for (std::uint32_t c = 0; c < tables_.size(); ++c) {
      if (tables_[c].capacity == 0) continue;
      const device::table_ref t = view(c);
      if (t.rows > device::small_table_rows) {
        VYRE_TRY(device::congruence_round(t, uf, congruence(c), merged, s));
        continue;
      }
      small_tables_[small] = t;
      small_index_[small++] = congruence(c);
    }
    return device::congruence_round_small({small_tables_.data(), small},
                                          {small_index_.data(), small}, uf, merged, s);
  }

  //! After the last round: every table sorted by its arguments, and the first row of every run
  //! of equal arguments stays (their classes are equal: the last round united nothing); the
  //! kept counts land in the report. Small tables as in `rebuild_round`
  //! (`sort_and_dedupe_small`).
  template <class View>
  expected<void> rebuild_dedupe(cudaStream_t s, View view, const device::key_bits& bits,
                                device_resource_ref memory) {
    auto* kept = reinterpret_cast<std::uint32_t*>(report_.get() + report_kept);
    std::size_t small = 0;
    for (std::uint32_t c = 0; c < tables_.size(); ++c) {
      if (tables_[c].capacity == 0) continue;
      const device::table_ref t = view(c);
      if (t.rows > device::small_table_rows) {
        VYRE_TRY(device::sort_rows(memory, t, bits, arena_.get(), s));
        VYRE_TRY(
            device::drop_duplicates(memory, t, arena_.get(), kept + c, s, folded(), conflict()));
        continue;
      }
      small_tables_[small] = t;
      small_kept_[small++] = kept + c;
    }
    return device::sort_and_dedupe_small({small_tables_.data(), small}, {small_kept_.data(), small},
                                         s, folded(), conflict());
  }

  using graph_type = graph::graph_cache<on_error::return_expected>::graph_type;

  //! The shape of the state now (`gpu_rebuild_shape`).
  gpu_rebuild_shape rebuild_shape() const {
    gpu_rebuild_shape shape;
    shape.caps.resize(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) shape.caps[c] = tables_[c].capacity;
    shape.ids = parent_capacity_;
    shape.state = state_.get();
    shape.arena = arena_.get();
    return shape;
  }

  //! The radix sorts' bits of a captured graph: every id the union-find can hold.
  device::key_bits capacity_bits() const noexcept { return {parent_capacity_, base_bound_}; }

  //! CUB's scratch of the captured graphs, at least `bytes` (grown: every cached graph, which
  //! bakes the old block in, is dropped).
  expected<void> ensure_cub_scratch(std::size_t bytes) {
    if (cub_scratch_.size() >= bytes) return {};
    rebuild_graphs_.clear();
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

  //! The captured rebuild of the current shape (`gpu_rebuild_shape`), or null when the
  //! shape is new: a growing e-graph rarely meets a shape twice, and capturing costs more than
  //! the launches it replaces, so a shape is captured when it comes back and replayed after.
  //! The graph: a device fixpoint loop of `rebuild_round`s over the tables at their capacity,
  //! ended on the device by the round that unites nothing, then `rebuild_dedupe`. Rows in use
  //! come from `live_rows_`, so it serves every row count up to the capacities; CUB's scratch
  //! is `cub_scratch_` (grown, and the graphs dropped, when a new shape needs more). The radix
  //! sorts' bits are baked in too: a shape's key includes the values' range through the
  //! union-find's capacity, and a wider base range (a rule's new constant) drops the graphs.
  expected<graph_type*> rebuild_graph() {
    if (graph_base_bound_ != base_bound_) {
      rebuild_graphs_.clear();
      shapes_seen_.clear();
      graph_base_bound_ = base_bound_;
    }
    if (!capture_rebuilds_) return nullptr;
    const gpu_rebuild_shape shape = rebuild_shape();
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
    auto round = [&](cudaStream_t s) { return rebuild_round(s, at_capacity, uf); };
    auto dedupe = [&](cudaStream_t s) { return rebuild_dedupe(s, at_capacity, bits, memory); };
    return rebuild_graphs_.get_or_build(shape, 0, [&] {
      // No round cap the loop can reach: every round but the last merges two classes, and
      // the dedupe is only right once the loop converged.
      return graph::build_fixpoint_graph<on_error::return_expected>(stream(), control(),
                                                                    0xffffffffu, round, dedupe);
    });
  }

  //! Congruence closure, then duplicate rows dropped: one launch of the captured graph of
  //! this shape (`rebuild_graph`), or the same passes launched with a flag read back per round;
  //! updates the rows and the root count and returns the roots among the ids below
  //! `old_ids`, from one read back. Uses the arena (made large enough here).
  expected<std::uint64_t> rebuild(std::uint32_t old_ids) {
    const char* what = "eqsat: rebuild";
    VYRE_TRY(ensure_arena(rebuild_words()));
    VYRE_TRY_ASSIGN(graph_type * graph, rebuild_graph());
    VYRE_TRY(device::congruence_start(arena_.get(), tables_.size(), stream()));
    VYRE_CUDA_TRY(cudaMemsetAsync(folded(), 0, 2 * sizeof(std::uint32_t), stream()), what);
    // Pageable: the copy is staged before the call returns.
    VYRE_CUDA_TRY(cudaMemcpyAsync(clock_.get(), &now_, sizeof(std::uint32_t),
                                  cudaMemcpyHostToDevice, stream()),
                  what);
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
      last_rebuild_rounds_ = 0;
      for (std::uint32_t any = 1; any != 0; ++last_rebuild_rounds_) {
        VYRE_CUDA_TRY(cudaMemsetAsync(merged, 0, sizeof(std::uint32_t), stream()), what);
        VYRE_TRY(rebuild_round(stream(), exact, uf()));
        VYRE_TRY(read_back(&any, merged, 1, what));
      }
      VYRE_TRY(rebuild_dedupe(stream(), exact, bits(), runtime_.memory));
    }
    VYRE_TRY_ASSIGN(const std::vector<unsigned long long> report, read_report(uf(), old_ids));
    VYRE_TRY(take_kept(report, graph != nullptr));
    eclasses_ = report[report_roots];
    last_rebuild_folded_ = (report[report_folded] & 0xffffffffull) != 0;
    last_rebuild_conflict_ = (report[report_folded] >> 32) != 0;
    return report[report_roots + 1];
  }

  //! The roots of `counted` (all, and those below `old_ids`) into the report, then the report
  //! read back: the one read back of a rebuild.
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
    if (captured) last_rebuild_rounds_ = static_cast<std::uint32_t>(done.rounds);
    std::vector<std::uint32_t> kept(tables_.size());
    std::memcpy(kept.data(), report.data() + report_kept, kept.size() * sizeof(std::uint32_t));
    for (std::size_t c = 0; c < tables_.size(); ++c)
      if (tables_[c].capacity != 0) tables_[c].rows = kept[c];
    return {};
  }

  //! What a rebuild reports, read back in one copy: a `graph::fixpoint_control`, the roots
  //! (all, old), then the rows every table kept (u32), at `report_control` / `_roots` / `_kept`.
  device_array<unsigned long long> report_;
  device_array<std::uint32_t> live_rows_;      //!< rows in use per table, for the rebuild graph
  std::vector<std::uint32_t> live_rows_host_;  //!< their upload's source
  device_array<unsigned char> cub_scratch_;    //!< every CUB call of the rebuild graphs
  // A rebuild pass's tables of at most `device::small_table_rows` rows, one entry per table
  // (the first ones in use): their views, congruence indexes and kept counts.
  std::vector<device::table_ref> small_tables_;
  std::vector<device::congruence_ref> small_index_;
  std::vector<std::uint32_t*> small_kept_;
  //! One captured rebuild per shape (`rebuild_graph`).
  graph::graph_cache<on_error::return_expected, gpu_rebuild_shape, gpu_rebuild_shape_hash>
      rebuild_graphs_{graph::cache_limits{.max_entries = 16}};
  //! Shapes met once (launched); the second meeting captures (`rebuild_graph`).
  std::unordered_set<gpu_rebuild_shape, gpu_rebuild_shape_hash> shapes_seen_;
  std::uint64_t graph_base_bound_ = 0;     //!< `base_bound_` the captured rebuilds sort by
  std::uint32_t last_rebuild_rounds_ = 0;  //!< the last rebuild's rounds (its report)
  //! Whether the last rebuild's fold changed a function's value (a row kept its key).
  bool last_rebuild_folded_ = false;
  //! Whether the last rebuild met two values of a `:no-merge` function for one key (an error
  //! the CPU engine reports, so the engine hands the iteration back).
  bool last_rebuild_conflict_ = false;
  bool capture_rebuilds_ = true;  //!< `capture_rebuilds`
};

}  // namespace vyre::eqsat::detail

#include "vyre/detail/epilogue.hpp"
