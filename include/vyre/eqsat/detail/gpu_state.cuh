// SPDX-License-Identifier: Apache-2.0
//! @file
//! `eqsat::detail::gpu_state`: what the GPU engine (`gpu_engine.cuh`) holds on the device and
//! how it grows: one state block with every resident table's rows and their timestamps (and the
//! subsumed and deleted keys of the tables that have them) and the union-find, sized by
//! capacity class (`gpu_capacity_class`), moved to a new block when it grows or when a rebuild
//! leaves much of it unused; the iteration's scratch arena; and the device snapshot an
//! iteration is rolled back to. The rebuild (`gpu_rebuild.cuh`) and the engine's search and
//! apply build on it.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/database.hpp"
#include "vyre/eqsat/device/plan.hpp"
#include "vyre/eqsat/device/rebuild.cuh"
#include "vyre/eqsat/device/union_find.cuh"
#include "vyre/runtime/device_array.hpp"
#include "vyre/runtime/streams.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::detail {

//! A function's rows on the device: a slice of the engine's state block (resident tables), or
//! the host's row count (the others, which no rule on the device touches).
struct gpu_table {
  std::uint32_t* cells = nullptr;   //!< `capacity` rows of `width`
  std::uint32_t* stamps = nullptr;  //!< `capacity` timestamps: each row's last change
  std::size_t capacity = 0;
  std::uint32_t rows = 0;
  std::uint32_t width = 1;
  std::uint32_t class_mask = 0;  //!< bit c: column c holds an id (a constructor's last always)
  device::device_merge merge = device::device_merge::unite;  //!< how rows of one key merge
  //! The function whose rows (or, for a table of subsumed keys, whose subsumed keys) it holds.
  std::uint32_t function = 0;
  bool resident = false;
  //! A table of deleted keys: empty between iterations (the apply fills it, the deletion before
  //! the rebuild empties it), so the host never holds it.
  bool deleted_keys = false;
  std::uint64_t host_rows = 0;  //!< not resident: its size in the host database
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
//! below it the padding is cheap and a slowly growing e-graph keeps its shape, so its rebuilds
//! replay captured graphs; above it every byte counts and launches are a small part of an
//! iteration, so sizes are exact.
inline constexpr std::uint64_t gpu_class_limit = std::uint64_t{1} << 20;

//! The capacity of `n` rows or ids: 0 for 0; the power of two at or above it (at least 1024)
//! up to `gpu_class_limit`, so a capacity changes at each doubling of what it holds; `n`
//! itself above.
inline std::size_t gpu_capacity_class(std::uint64_t n) noexcept {
  if (n == 0) return 0;
  if (n > gpu_class_limit) return static_cast<std::size_t>(n);
  return static_cast<std::size_t>(std::bit_ceil((std::max)(n, std::uint64_t{1024})));
}

//! The device state of the GPU engine (see the file comment); the engine and its rebuild
//! derive from it.
class gpu_state {
 protected:
  using table = gpu_table;
  using snapshot = gpu_snapshot;
  using u32_array = device_array<std::uint32_t>;

  //! The tables of `decl`'s functions, and after them the subsumed keys of each function that
  //! `subsumed` marks (`device::subsumed_tables`), then the deleted keys of each that `deleted`
  //! marks (`device::deleted_tables`); none on the device yet.
  gpu_state(const vyre::detail::runtime_ref& runtime, const declarations& decl,
            const std::vector<std::uint8_t>& subsumed, const std::vector<std::uint8_t>& deleted,
            stream_lease stream)
      : runtime_(runtime),
        stream_(std::move(stream)),
        keep_stamps_(device::keeps_timestamps(decl)) {
    tables_.resize(decl.functions.size());
    for (std::size_t f = 0; f < tables_.size(); ++f) {
      const function_decl& fn = decl.functions[f];
      table& t = tables_[f];
      t.function = static_cast<std::uint32_t>(f);
      t.width = fn.arity() + 1;
      t.resident = device::device_resident(decl, static_cast<std::uint32_t>(f));
      if (!t.resident) continue;  // its width may exceed the mask's bits: never on the device
      (void)device::device_merge_of(decl, static_cast<std::uint32_t>(f), t.merge);
      t.class_mask = decl.sorts[fn.output].is_id ? 1u << fn.arity() : 0u;
      for (std::uint32_t a = 0; a < fn.arity(); ++a)
        if (decl.sorts[fn.inputs[a]].is_id) t.class_mask |= 1u << a;
    }
    // A function's subsumed (or deleted) keys: its key columns and a value of 0, merged by max
    // (so rows of one key fold into one and never change its value).
    function_count_ = tables_.size();
    const auto keys_of = [&](const std::vector<std::uint8_t>& marked, bool deleted_keys,
                             std::vector<std::uint32_t>& at) {
      at.assign(function_count_, no_table);
      for (std::size_t f = 0; f < function_count_; ++f) {
        if (f >= marked.size() || marked[f] == 0 || !tables_[f].resident) continue;
        table keys = tables_[f];
        keys.class_mask &= ~(1u << (keys.width - 1));
        keys.merge = device::device_merge::max;
        keys.deleted_keys = deleted_keys;
        at[f] = static_cast<std::uint32_t>(tables_.size());
        tables_.push_back(keys);
      }
    };
    keys_of(subsumed, false, subsumed_keys_);
    keys_of(deleted, true, deleted_keys_);
  }

  static constexpr std::uint32_t no_table = 0xffffffffu;

  // User-provided (not defaulted): nvcc would otherwise infer __host__ __device__ special
  // members for a type held in cuda::std::expected and reject the host-only members'.
  gpu_state(gpu_state&& o) noexcept
      : runtime_(o.runtime_),
        stream_(std::move(o.stream_)),
        keep_stamps_(o.keep_stamps_),
        tables_(std::move(o.tables_)),
        function_count_(o.function_count_),
        subsumed_keys_(std::move(o.subsumed_keys_)),
        deleted_keys_(std::move(o.deleted_keys_)),
        state_(std::move(o.state_)),
        parent_(o.parent_),
        parent_capacity_(o.parent_capacity_),
        arena_(std::move(o.arena_)),
        clock_(std::move(o.clock_)),
        now_(o.now_),
        ids_(o.ids_),
        eclasses_(o.eclasses_),
        base_bound_(o.base_bound_) {}
  gpu_state& operator=(gpu_state&&) = delete;
  gpu_state(const gpu_state&) = delete;
  gpu_state& operator=(const gpu_state&) = delete;
  ~gpu_state() {}  // NOLINT(modernize-use-equals-default): see the move constructor

  cudaStream_t stream() const noexcept { return stream_.get(); }

  template <class T>
  expected<device_array<T>> allocate(std::size_t count, const char* what) const {
    return runtime_.allocate<T>(count, stream(), what);
  }

  template <class T>
  expected<void> read_back(T* host, const T* device, std::size_t count, const char* what) const {
    return vyre::detail::copy_to_host(runtime_, host, device, count, stream(), what);
  }

  //! A slice of the state block starts at a multiple of 64 words (256 bytes).
  static std::size_t aligned(std::size_t words) noexcept { return (words + 63) & ~std::size_t{63}; }

  static expected<void> launched(const char* what) { return vyre::detail::launched(what); }
  static unsigned grid(std::uint64_t items) { return vyre::detail::grid_for(items); }
  static constexpr unsigned block = vyre::detail::block_size;

  expected<value> find_on_device(value x) const {
    if (x >= ids_)
      return fail(error(errc::invalid_argument, "eqsat gpu_engine: an id past those made")
                      .with("id", x)
                      .with("ids", ids_)
                      .fix("pass an id of the database the engine was made from, or one it made"));
    for (;;) {
      value p = x;
      VYRE_TRY(read_back(&p, parent_ + x, 1, "eqsat: find"));
      if (p == x) return x;
      x = p;
    }
  }

  //! Table `f` as the device pieces see it.
  device::table_ref view(std::uint32_t f) const noexcept {
    const table& t = tables_[f];
    return device::table_ref{t.cells, t.rows,  t.width,  t.class_mask,
                             nullptr, t.merge, t.stamps, clock_.get()};
  }
  //! The union-find over the class ids made so far.
  device::union_find_ref uf() const noexcept { return {parent_, ids_}; }
  //! The value ranges of the columns (the radix sorts' bits).
  device::key_bits bits() const noexcept { return {ids_, base_bound_}; }

  // --- capacity -----------------------------------------------------------------------------

  //! Words of a state block whose tables hold `caps[c]` rows and whose union-find holds
  //! `ids` slots; `at[c]` receives each table's first word, its rows' timestamps following its
  //! cells at `stamps_at(c, ...)` (the union-find's first word is returned).
  std::size_t layout(const std::vector<std::size_t>& caps, std::size_t ids,
                     std::vector<std::size_t>& at, std::size_t& words) const {
    at.resize(tables_.size());
    words = 0;
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      at[c] = words;
      words += aligned(caps[c] * tables_[c].width) + (keep_stamps_ ? aligned(caps[c]) : 0);
    }
    const std::size_t parent_at = words;
    words += aligned(ids);
    return parent_at;
  }

  //! Where table `c`'s timestamps start in a block whose table `c` starts at `at` and holds
  //! `cap` rows.
  std::size_t stamps_at(std::size_t c, std::size_t at, std::size_t cap) const noexcept {
    return at + aligned(cap * tables_[c].width);
  }

  //! Points the tables and the union-find into `block` (laid out by `layout(caps, ids)`).
  void bind(std::uint32_t* block, const std::vector<std::size_t>& caps, std::size_t ids) {
    std::vector<std::size_t> at;
    std::size_t words = 0;
    const std::size_t parent_at = layout(caps, ids, at, words);
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      tables_[c].cells = block + at[c];
      tables_[c].stamps = keep_stamps_ ? block + stamps_at(c, at[c], caps[c]) : nullptr;
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
    for (std::size_t c = 0; c < tables_.size(); ++c) {
      VYRE_TRY(vyre::detail::copy_on_device(block.get() + at[c], tables_[c].cells,
                                            std::size_t{tables_[c].rows} * tables_[c].width,
                                            stream(), "eqsat: move a table"));
      if (keep_stamps_)
        VYRE_TRY(vyre::detail::copy_on_device(block.get() + stamps_at(c, at[c], caps[c]),
                                              tables_[c].stamps, tables_[c].rows, stream(),
                                              "eqsat: move a table's timestamps"));
    }
    VYRE_TRY(vyre::detail::copy_on_device(block.get() + parent_at, parent_, ids_, stream(),
                                          "eqsat: move the union-find"));
    bind(block.get(), caps, ids);
    state_ = std::move(block);  // the old block is freed after the copies (stream order)
    return {};
  }

  //! The capacity `reserve` gives what holds `have` and must hold `want`.
  static std::size_t grown_capacity(std::uint64_t want, std::size_t have) noexcept {
    if (want <= have) return have;
    return (std::max)(detail::gpu_capacity_class(want), have);
  }

  //! Room for `rows[c]` rows per table and `ids` class ids, by capacity class
  //! (`detail::gpu_capacity_class`; exact above the class limit: the apply knows its sizes).
  expected<void> reserve(const std::vector<std::uint64_t>& rows, std::uint64_t ids) {
    bool grow = ids > parent_capacity_;
    for (std::size_t c = 0; c < tables_.size(); ++c) grow = grow || rows[c] > tables_[c].capacity;
    if (!grow) return {};
    std::vector<std::size_t> caps(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c)
      caps[c] = grown_capacity(rows[c], tables_[c].capacity);
    return relayout(caps, grown_capacity(ids, parent_capacity_));
  }

  //! Moves to the capacity classes of the rows a rebuild left when some capacity is above the
  //! class limit and that frees more than a fifth of the block. Below the limit capacities only
  //! grow: the block is small, and one that keeps its classes keeps its captured rebuilds (the
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
    if (ids < no_value) return {};
    return fail(error(errc::abi_limit, "eqsat gpu_engine: e-class and container ids exceed u32")
                    .with("ids", ids)
                    .fix("stop earlier with --node-limit"));
  }

  //! The scratch of one iteration (matches, then the rebuild's sort and dedupe buffers): at
  //! least `words` u32 (the old one is freed first).
  expected<void> ensure_arena(std::size_t words) {
    if (arena_.size() >= words) return {};
    arena_ = u32_array{};
    VYRE_TRY_ASSIGN(arena_, allocate<std::uint32_t>(words, "eqsat: scratch"));
    return {};
  }

  //! An iteration whose scratch is at least this large gives memory back early (the arena
  //! after it; the engine's pool cache around the state's move).
  static constexpr std::size_t big_scratch_bytes = std::size_t{64} << 20;

  //! Scratch words of a rebuild over tables of capacities `caps`: during the rounds every
  //! table's congruence index (its control words first, then each table's slots and moved
  //! bits), after them four u32 per row of the largest table for its sort.
  template <class Capacities>
  static std::size_t rebuild_words_for(const Capacities& caps) noexcept {
    std::size_t largest = 1, rounds = caps.size() * device::congruence_control_words;
    for (const auto cap : caps) {
      largest = (std::max)(largest, static_cast<std::size_t>(cap));
      rounds += cap == 0 ? 0 : device::congruence_words(static_cast<std::size_t>(cap));
    }
    return (std::max)(4 * largest, rounds);
  }
  std::size_t rebuild_words() const {
    std::vector<std::size_t> caps(tables_.size());
    for (std::size_t c = 0; c < tables_.size(); ++c) caps[c] = tables_[c].capacity;
    return rebuild_words_for(caps);
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
      VYRE_TRY(vyre::detail::copy_on_device(s.block.get() + at[c], tables_[c].cells,
                                            std::size_t{tables_[c].rows} * tables_[c].width,
                                            stream(), "eqsat: snapshot rows"));
      if (keep_stamps_)
        VYRE_TRY(vyre::detail::copy_on_device(s.block.get() + stamps_at(c, at[c], caps[c]),
                                              tables_[c].stamps, tables_[c].rows, stream(),
                                              "eqsat: snapshot timestamps"));
      s.rows.push_back(tables_[c].rows);
    }
    VYRE_TRY(vyre::detail::copy_on_device(s.block.get() + parent_at, parent_, ids_, stream(),
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
  }

  // The stream first, so that the device arrays (stream-ordered frees) die before it.
  vyre::detail::runtime_ref runtime_;
  stream_lease stream_;
  //! Whether the tables keep a timestamp per row (`device::keeps_timestamps`): else `stamps`
  //! is null, and the search matches naively.
  bool keep_stamps_ = true;
  //! The functions' tables (indexed like the declarations), then their subsumed keys, then
  //! their deleted keys.
  std::vector<table> tables_;
  std::size_t function_count_ = 0;  //!< the functions' tables, first in `tables_`
  //! Per function, the index in `tables_` of its subsumed keys, or `no_table`.
  std::vector<std::uint32_t> subsumed_keys_;
  //! Per function, the index in `tables_` of its deleted keys, or `no_table`.
  std::vector<std::uint32_t> deleted_keys_;
  device_array<std::uint32_t> state_;  //!< every resident table's rows, then the union-find
  std::uint32_t* parent_ = nullptr;    //!< the union-find in `state_`
  std::size_t parent_capacity_ = 0;
  device_array<std::uint32_t> arena_;  //!< one iteration's scratch: the matches, then the rebuild's
  //! One u32: the timestamp the rebuild gives the rows it changes (`device::table_ref::now`),
  //! `now_` uploaded before each rebuild.
  device_array<std::uint32_t> clock_;
  //! The timestamp of the iteration running (or the next one): egglog's clock, `database::now`.
  std::uint32_t now_ = 1;
  std::uint32_t ids_ = 0;
  std::uint64_t eclasses_ = 0;    //!< roots of the id space (containers' included)
  std::uint64_t base_bound_ = 1;  //!< every base-sort value in a table is below it
};

}  // namespace vyre::eqsat::detail

#include "vyre/detail/epilogue.hpp"
