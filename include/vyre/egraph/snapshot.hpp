// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::egraph::snapshot`: an e-graph on the host as rows (e-nodes) plus a flat children
//! column plus an op registry, ready to be validated and packed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <new>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph/detail/pack_impl.hpp"
#include "vyre/egraph/row.hpp"

namespace vyre::egraph {

//! One e-node for `snapshot::build`: `{eclass, "op", {child eclass, ...}}`.
struct node_spec {
  std::uint32_t eclass = 0;
  std::string_view op;
  std::initializer_list<std::uint32_t> children;
};

//! An e-graph on the host: rows, a flat children column of child e-class ids, and an op
//! registry (names interned to dense ids in first-seen order).
//!
//! Building functions check what they can see at once (a known op, u32 limits); `validate`
//! checks the whole snapshot (including rows added raw and children that name e-classes with
//! no row) and `pack` validates before it writes anything.
//!
//! Error policy: every fallible member takes `OnError` as its first template parameter,
//! defaulting to `vyre::on_error::throw_exception` (returns the value, throws
//! `vyre::error_exception`); pass `vyre::on_error::return_expected` to get
//! `vyre::expected<T>` instead: `snap.validate<vyre::on_error::return_expected>()`.
class snapshot {
 public:
  // Special members are defaulted out of line: under nvcc, implicit or in-class defaulted ones
  // would be inferred __host__ __device__ and call std::vector's host-only members, so any CUDA
  // translation unit holding a snapshot member would fail to compile.
  snapshot() noexcept;
  ~snapshot();
  snapshot(const snapshot&);
  snapshot(snapshot&&) noexcept;
  snapshot& operator=(const snapshot&);
  snapshot& operator=(snapshot&&) noexcept;

  // ----- op registry ------------------------------------------------------------------------

  //! The id of op `name`, interning it (next dense id) when it is new.
  //! @throws vyre::error_exception `errc::abi_limit` when the registry already holds 2^32 - 1
  //!         ops; `errc::out_of_memory` when the registry cannot grow.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::uint32_t> intern_op(std::string_view name) {
    return apply_error_policy<OnError>(intern_op_impl(name));
  }

  //! The id of op `name` if it is interned.
  std::optional<std::uint32_t> find_op(std::string_view name) const {
    const auto found = op_ids_.find(name);
    if (found == op_ids_.end()) return std::nullopt;
    return found->second;
  }

  //! The name of op `id`.
  //! @throws vyre::error_exception `errc::not_found` naming the id when it is not interned.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::string_view> op_name(std::uint32_t id) const {
    if (id >= op_names_.size())
      return apply_error_policy<OnError>(expected<std::string_view>(
          fail(error(errc::not_found, "snapshot::op_name: op id is not interned")
                   .with("op", id)
                   .with("op_count", op_names_.size())
                   .fix("use an id returned by intern_op"))));
    return apply_error_policy<OnError>(expected<std::string_view>(op_names_[id]));
  }

  std::size_t op_count() const noexcept { return op_names_.size(); }

  // ----- rows ---------------------------------------------------------------------------------

  //! Appends a row of e-class `eclass` and op `op` whose children (child e-class ids) are
  //! appended to the children column. Returns the new row's index.
  //! @throws vyre::error_exception `errc::invalid_argument` for an op id that is not
  //!         interned, `errc::abi_limit` when rows, children or the row's child count exceed
  //!         u32, `errc::out_of_memory`. Nothing is appended on error.
  //! @note Children need not have rows yet; `validate` checks that they do in the end.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::uint32_t> add_row(std::uint32_t eclass, std::uint32_t op,
                                           cuda::std::span<const std::uint32_t> children) {
    return apply_error_policy<OnError>(add_row_impl(eclass, op, children));
  }
  //! @overload
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::uint32_t> add_row(std::uint32_t eclass, std::uint32_t op,
                                           std::initializer_list<std::uint32_t> children = {}) {
    return add_row<OnError>(
        eclass, op, cuda::std::span<const std::uint32_t>(children.begin(), children.size()));
  }

  //! Appends `entries` to the children column unchecked (for rows added with `add_raw_row`).
  //! Returns the offset of the first appended entry.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::uint32_t> append_children(cuda::std::span<const std::uint32_t> entries) {
    return apply_error_policy<OnError>(append_children_impl(entries));
  }

  //! Appends a row as given, without checking its op or children range (for readers of
  //! untrusted data, which then call `validate`). Returns the new row's index.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, std::uint32_t> add_raw_row(const row& raw) {
    return apply_error_policy<OnError>(add_raw_row_impl(raw));
  }

  //! Reserves room for `rows` rows and `child_entries` children entries.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, void> reserve(std::size_t rows, std::size_t child_entries) {
    expected<void> result = try_reserve(rows_, rows, "snapshot rows");
    if (result) result = try_reserve(children_, child_entries, "snapshot children column");
    return apply_error_policy<OnError>(result);
  }

  std::size_t row_count() const noexcept { return rows_.size(); }
  std::size_t child_count() const noexcept { return children_.size(); }
  cuda::std::span<const row> rows() const noexcept { return {rows_.data(), rows_.size()}; }
  cuda::std::span<const std::uint32_t> children() const noexcept {
    return {children_.data(), children_.size()};
  }
  //! The children of row `r` (unchecked: the row must have passed validation or been added
  //! with `add_row`).
  cuda::std::span<const std::uint32_t> children_of(const row& r) const noexcept {
    return children().subspan(r.children_offset, r.children_length);
  }

  // ----- checking -----------------------------------------------------------------------------

  //! Checks the whole snapshot. Each failure is its own error naming the row and the value:
  //! - `errc::invalid_argument`: a row names an op id that is not interned;
  //! - `errc::overflow`: a row's children offset + length overflows u32;
  //! - `errc::out_of_range`: a row's children range ends past the children column;
  //! - `errc::not_found`: a child names an e-class that has no row;
  //! - `errc::abi_limit`: rows, children entries, one row's children or the op registry exceed
  //!   `limits` (by default the u32 image ABI); the fix hint says to shard the snapshot;
  //! - `errc::out_of_memory`: the check's scratch space could not be allocated.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, void> validate(const snapshot_limits& limits = {}) const {
    auto grouped = detail::analyze(columns(), limits);
    if (!grouped) return apply_error_policy<OnError>(expected<void>(fail(grouped.error())));
    return apply_error_policy<OnError>(expected<void>());
  }

  // ----- building from tuples ---------------------------------------------------------------

  //! A snapshot from `{eclass, "op", {children...}}` literals, ops interned in first-seen
  //! order. `build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}})`.
  template <class OnError = on_error::throw_exception>
  static result_t<OnError, snapshot> build(std::initializer_list<node_spec> nodes) {
    return apply_error_policy<OnError>(build_impl(nodes));
  }

  //! A snapshot from any range of tuple-like `(eclass, op name, children range)` elements,
  //! for example `std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>>`.
  template <class OnError = on_error::throw_exception, std::ranges::input_range Nodes>
  static result_t<OnError, snapshot> from_tuples(Nodes&& nodes) {
    return apply_error_policy<OnError>(build_impl(std::forward<Nodes>(nodes)));
  }

  //! The columns as plain spans (what validation and packing read).
  detail::snapshot_columns columns() const noexcept {
    return {rows(), children(), op_names_.size()};
  }

 private:
  struct name_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const noexcept {
      return std::hash<std::string_view>{}(text);
    }
  };

  expected<std::uint32_t> intern_op_impl(std::string_view name) {
    if (const auto found = op_ids_.find(name); found != op_ids_.end()) return found->second;
    if (op_names_.size() >= snapshot_limits::u32_max)
      return fail(error(errc::abi_limit, "snapshot::intern_op: op registry full for u32 op ids")
                      .with("ops", op_names_.size())
                      .fix(shard_hint)
                      .about(name));
    const auto id = static_cast<std::uint32_t>(op_names_.size());
    try {
      op_names_.emplace_back(name);
      try {
        op_ids_.emplace(op_names_.back(), id);
      } catch (...) {
        op_names_.pop_back();
        throw;
      }
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "snapshot::intern_op: registry allocation failed")
                      .with("ops", op_names_.size())
                      .fix("free host memory")
                      .about(name));
    }
    return id;
  }

  expected<std::uint32_t> append_children_impl(cuda::std::span<const std::uint32_t> entries) {
    const std::uint64_t end = std::uint64_t{children_.size()} + entries.size();
    if (end > snapshot_limits::u32_max)
      return fail(
          error(errc::abi_limit, "snapshot: children column too long for u32 children offsets")
              .with("child_entries", children_.size())
              .with("appending", entries.size())
              .fix(shard_hint));
    const auto offset = static_cast<std::uint32_t>(children_.size());
    if (children_.capacity() < end) {
      // Geometric growth, but fallible.
      const std::size_t grown = (std::max)(static_cast<std::size_t>(end), 2 * children_.capacity());
      VYRE_TRY(try_reserve(children_, grown, "snapshot children column"));
    }
    children_.insert(children_.end(), entries.begin(), entries.end());
    return offset;
  }

  // Room for one more row: the u32 row limit, then capacity (grown geometrically).
  expected<void> reserve_row_impl() {
    if (rows_.size() >= snapshot_limits::u32_max)
      return fail(
          error(errc::abi_limit, "snapshot::add_row: too many rows for u32 grouped row indices")
              .with("rows", rows_.size())
              .fix(shard_hint));
    if (rows_.size() == rows_.capacity())
      VYRE_TRY(try_reserve(rows_, (std::max)(std::size_t{16}, 2 * rows_.size()), "snapshot rows"));
    return {};
  }

  expected<std::uint32_t> add_raw_row_impl(const row& raw) {
    VYRE_TRY(reserve_row_impl());
    rows_.push_back(raw);
    return static_cast<std::uint32_t>(rows_.size() - 1);
  }

  expected<std::uint32_t> add_row_impl(std::uint32_t eclass, std::uint32_t op,
                                       cuda::std::span<const std::uint32_t> entries) {
    if (op >= op_names_.size())
      return fail(error(errc::invalid_argument, "snapshot::add_row: op id is not interned")
                      .with("row", rows_.size())
                      .with("op", op)
                      .with("op_count", op_names_.size())
                      .fix("intern the op with snapshot::intern_op first"));
    if (entries.size() > snapshot_limits::u32_max)
      return fail(error(errc::abi_limit, "snapshot::add_row: row has too many children")
                      .with("row", rows_.size())
                      .with("children_length", entries.size())
                      .fix(shard_hint));
    // Reserve the row first so that appending children is the last step that can fail.
    VYRE_TRY(reserve_row_impl());
    VYRE_TRY_ASSIGN(const std::uint32_t offset, append_children_impl(entries));
    rows_.push_back(row{eclass, op, offset, static_cast<std::uint32_t>(entries.size())});
    return static_cast<std::uint32_t>(rows_.size() - 1);
  }

  template <class Nodes>
  static expected<snapshot> build_impl(Nodes&& nodes) {
    snapshot result;
    std::vector<std::uint32_t> scratch;
    for (auto&& node : nodes) {
      auto&& [eclass, op, children] = node;
      VYRE_TRY_ASSIGN(const std::uint32_t op_id, result.intern_op_impl(std::string_view(op)));
      scratch.clear();
      for (auto&& child : children) {
        VYRE_TRY_ASSIGN(const std::uint32_t id,
                        narrow<std::uint32_t>(child, "snapshot::build: child e-class id"));
        if (scratch.size() == scratch.capacity())
          VYRE_TRY(try_reserve(scratch, (std::max)(std::size_t{8}, 2 * scratch.size()),
                               "snapshot::build children"));
        scratch.push_back(id);
      }
      VYRE_TRY_ASSIGN(const std::uint32_t eclass_id,
                      narrow<std::uint32_t>(eclass, "snapshot::build: e-class id"));
      VYRE_TRY(result.add_row_impl(eclass_id, op_id, {scratch.data(), scratch.size()}));
    }
    return result;
  }

  std::vector<row> rows_;
  std::vector<std::uint32_t> children_;
  std::vector<std::string> op_names_;
  std::unordered_map<std::string, std::uint32_t, name_hash, std::equal_to<>> op_ids_;
};

inline snapshot::snapshot() noexcept = default;
inline snapshot::~snapshot() = default;
inline snapshot::snapshot(const snapshot&) = default;
inline snapshot::snapshot(snapshot&&) noexcept = default;
inline snapshot& snapshot::operator=(const snapshot&) = default;
inline snapshot& snapshot::operator=(snapshot&&) noexcept = default;

}  // namespace vyre::egraph
