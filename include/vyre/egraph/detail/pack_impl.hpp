// SPDX-License-Identifier: Apache-2.0
//! @file
//! Internals of validation and packing: checking rows, grouping rows by e-class (counting sort
//! for dense ids, LSD radix sort otherwise) and writing the nine columns. Everything returns
//! `vyre::expected`; the public boundary in snapshot.hpp / pack.hpp applies the error policy.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/egraph/detail/host_buffer.hpp"
#include "vyre/egraph/layout.hpp"
#include "vyre/egraph/row.hpp"
#include "vyre/egraph/signature.hpp"

namespace vyre::egraph::detail {

//! The input of validation and packing, as plain spans.
struct snapshot_columns {
  cuda::std::span<const row> rows;
  cuda::std::span<const std::uint32_t> children;
  std::uint64_t op_count = 0;
};

//! Grouping of rows by e-class, computed once and consumed by `emit`.
struct grouping {
  VYRE_HOST_MOVE_ONLY_MEMBERS(grouping);  // host-only (vyre/detail/host_special_members.hpp)

  bool dense = true;
  std::uint32_t min_eclass = 0;
  std::uint32_t group_count = 0;
  //! Dense: rows per e-class id (index id - min_eclass). `emit` turns it into cursors.
  raw_array<std::uint32_t> counts;
  //! Dense: one bit per id in [min_eclass, min_eclass + counts.size()): the id has rows. A
  //! bitmap (not `counts`) answers the children check: 32x smaller, so it stays in cache.
  std::vector<std::uint64_t> present;
  //! Sparse: (eclass << 32 | row index), sorted by e-class, rows ascending inside a class.
  raw_array<std::uint64_t> sorted;
  //! Sparse: the distinct e-class ids, ascending.
  std::vector<std::uint32_t> group_ids;

  bool has_rows(std::uint32_t eclass) const noexcept {
    if (eclass < min_eclass) return false;
    const std::uint64_t index = std::uint64_t{eclass} - min_eclass;
    if (dense) {
      return index < counts.size() && ((present[index >> 6] >> (index & 63u)) & 1u) != 0;
    }
    return std::binary_search(group_ids.begin(), group_ids.end(), eclass);
  }
};

VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(grouping);

//! Ids are "dense" when a counting array over [min, max] costs at most a few words per row.
inline bool use_counting_sort(std::uint64_t id_range, std::uint64_t rows) noexcept {
  return id_range <= 4 * rows + 65536;
}

inline expected<void> check_limits(const snapshot_columns& in, const snapshot_limits& limits) {
  if (in.rows.size() > limits.max_rows)
    return fail(error(errc::abi_limit,
                      "egraph snapshot: too many rows for u32 grouped row indices and group "
                      "offsets")
                    .with("rows", in.rows.size())
                    .with("max_rows", limits.max_rows)
                    .fix(shard_hint));
  if (in.children.size() > limits.max_child_entries)
    return fail(
        error(errc::abi_limit, "egraph snapshot: children column too long for u32 children offsets")
            .with("child_entries", in.children.size())
            .with("max_child_entries", limits.max_child_entries)
            .fix(shard_hint));
  if (in.op_count > limits.max_ops)
    return fail(error(errc::abi_limit, "egraph snapshot: op registry too large for u32 op ids")
                    .with("ops", in.op_count)
                    .with("max_ops", limits.max_ops)
                    .fix(shard_hint));
  return {};
}

//! Per-row checks: known op, offset + length without overflow, range inside the column. The
//! same pass finds the smallest and largest e-class id.
inline expected<void> check_rows(const snapshot_columns& in, const snapshot_limits& limits,
                                 std::uint32_t& min_id, std::uint32_t& max_id) {
  const std::uint64_t child_entries = in.children.size();
  min_id = in.rows.empty() ? 0 : in.rows[0].eclass;
  max_id = min_id;
  for (std::size_t r = 0; r < in.rows.size(); ++r) {
    const row& current = in.rows[r];
    min_id = (std::min)(min_id, current.eclass);
    max_id = (std::max)(max_id, current.eclass);
    if (current.op >= in.op_count) [[unlikely]]
      return fail(error(errc::invalid_argument, "snapshot::validate: row names an unknown op id")
                      .with("row", r)
                      .with("op", current.op)
                      .with("op_count", in.op_count)
                      .fix("intern the op with snapshot::intern_op before adding rows that use "
                           "it"));
    if (current.children_length > limits.max_row_children) [[unlikely]]
      return fail(error(errc::abi_limit, "snapshot::validate: row has too many children")
                      .with("row", r)
                      .with("children_length", current.children_length)
                      .with("max_row_children", limits.max_row_children)
                      .fix(shard_hint));
    if (current.children_end() > snapshot_limits::u32_max) [[unlikely]]
      return fail(
          error(errc::overflow, "snapshot::validate: row children offset + length overflows u32")
              .with("row", r)
              .with("children_offset", current.children_offset)
              .with("children_length", current.children_length)
              .fix("the row's children range is corrupt: rebuild the row with add_row"));
    if (current.children_end() > child_entries) [[unlikely]]
      return fail(error(errc::out_of_range,
                        "snapshot::validate: row children range ends past the children column")
                      .with("row", r)
                      .with("children_end", current.children_end())
                      .with("child_entries", child_entries)
                      .fix("append the row's children before the row, or use add_row, which "
                           "does both"));
  }
  return {};
}

inline expected<void> group_dense(const snapshot_columns& in, std::uint32_t min_id,
                                  std::uint64_t id_range, grouping& out) {
  out.dense = true;
  out.min_eclass = min_id;
  VYRE_TRY_ASSIGN(out.counts,
                  raw_array<std::uint32_t>::allocate(id_range, "pack: e-class counting array"));
  std::memset(out.counts.data(), 0, out.counts.size() * sizeof(std::uint32_t));
  std::uint32_t* counts = out.counts.data();
  std::uint32_t groups = 0;
  for (const row& current : in.rows) {
    std::uint32_t& count = counts[current.eclass - min_id];
    groups += count == 0 ? 1u : 0u;
    ++count;
  }
  out.group_count = groups;
  VYRE_TRY(try_resize(out.present, static_cast<std::size_t>((id_range + 63) / 64),
                      "pack: e-class presence bitmap"));
  for (std::size_t k = 0; k < out.counts.size(); ++k)
    out.present[k >> 6] |= std::uint64_t{counts[k] != 0} << (k & 63u);
  return {};
}

inline expected<void> group_sparse(const snapshot_columns& in, grouping& out) {
  out.dense = false;
  const std::size_t n = in.rows.size();
  VYRE_TRY_ASSIGN(out.sorted, raw_array<std::uint64_t>::allocate(n, "pack: e-class sort keys"));
  VYRE_TRY_ASSIGN(auto scratch,
                  raw_array<std::uint64_t>::allocate(n, "pack: e-class sort scratch"));
  // One pass builds the keys and the histograms of the four 8-bit digits of the e-class (256
  // buckets keep every scatter stream's page in the TLB).
  constexpr unsigned digit_bits = 8;
  constexpr unsigned passes = 4;
  constexpr std::uint32_t digit_mask = (1u << digit_bits) - 1;
  std::vector<std::array<std::uint32_t, 1u << digit_bits>> histograms;
  VYRE_TRY(try_resize(histograms, passes, "pack: radix histograms"));
  std::uint64_t* keys = out.sorted.data();
  for (std::size_t r = 0; r < n; ++r) {
    const std::uint32_t eclass = in.rows[r].eclass;
    keys[r] = (std::uint64_t{eclass} << 32) | static_cast<std::uint32_t>(r);
    for (unsigned pass = 0; pass < passes; ++pass)
      ++histograms[pass][(eclass >> (digit_bits * pass)) & digit_mask];
  }
  // LSD radix sort on the e-class digits; stable, so rows stay ascending inside a class. A pass
  // whose digit is the same for every key is skipped.
  std::uint64_t* source = keys;
  std::uint64_t* target = scratch.data();
  for (unsigned pass = 0; pass < passes; ++pass) {
    auto& histogram = histograms[pass];
    const unsigned shift = 32 + digit_bits * pass;
    if (n == 0 || histogram[(source[0] >> shift) & digit_mask] == n) continue;
    std::uint32_t running = 0;
    for (auto& bucket : histogram) {  // counts become scatter cursors
      const std::uint32_t count = bucket;
      bucket = running;
      running += count;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t key = source[i];
      target[histogram[(key >> shift) & digit_mask]++] = key;
    }
    std::swap(source, target);
  }
  if (source != keys) out.sorted.swap(scratch);
  // Distinct ids.
  std::uint32_t groups = 0;
  for (std::size_t i = 0; i < n; ++i)
    groups += (i == 0 || (out.sorted[i] >> 32) != (out.sorted[i - 1] >> 32)) ? 1u : 0u;
  VYRE_TRY(try_resize(out.group_ids, groups, "pack: e-class group ids"));
  std::uint32_t g = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto eclass = static_cast<std::uint32_t>(out.sorted[i] >> 32);
    if (i == 0 || eclass != out.group_ids[g - 1]) out.group_ids[g++] = eclass;
  }
  out.group_count = groups;
  return {};
}

//! The error for children entry `i` naming an e-class with no row (error path only: finds a
//! row that owns the entry, to name it).
inline error dangling_child_error(const snapshot_columns& in, std::size_t i) {
  const std::uint32_t child = in.children[i];
  std::uint64_t owner = snapshot_limits::u32_max + 1;
  for (std::size_t r = 0; r < in.rows.size(); ++r)
    if (in.rows[r].children_offset <= i && i < in.rows[r].children_end()) {
      owner = r;
      break;
    }
  error err(errc::not_found, "snapshot::validate: a child names an e-class that has no row");
  if (owner <= snapshot_limits::u32_max) err.with("row", owner);
  return err.with("child_entry", i)
      .with("child_eclass", child)
      .fix("add a row for that e-class or drop the child");
}

//! Sorts `values` ascending (LSD radix, 8-bit digits, trivial passes skipped); `scratch` has
//! the same size. The result ends in `values`.
inline void radix_sort_u32(raw_array<std::uint32_t>& values, raw_array<std::uint32_t>& scratch) {
  const std::size_t n = values.size();
  std::array<std::array<std::uint32_t, 256>, 4> histograms{};
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t v = values[i];
    ++histograms[0][v & 0xFFu];
    ++histograms[1][(v >> 8) & 0xFFu];
    ++histograms[2][(v >> 16) & 0xFFu];
    ++histograms[3][v >> 24];
  }
  for (unsigned pass = 0; pass < 4; ++pass) {
    auto& histogram = histograms[pass];
    const unsigned shift = 8 * pass;
    if (n == 0 || histogram[(values[0] >> shift) & 0xFFu] == n) continue;
    std::uint32_t running = 0;
    for (auto& bucket : histogram) {
      const std::uint32_t count = bucket;
      bucket = running;
      running += count;
    }
    const std::uint32_t* source = values.data();
    std::uint32_t* target = scratch.data();
    for (std::size_t i = 0; i < n; ++i)
      target[histogram[(source[i] >> shift) & 0xFFu]++] = source[i];
    values.swap(scratch);
  }
}

//! Every entry of the children column names an e-class that has a row.
//! Dense ids: one bit test per child in a bitmap that stays in cache. Sparse ids: the children
//! are radix sorted and merged with the sorted group ids; sequential passes beat a hash probe
//! per child once the id set outgrows the caches.
inline expected<void> check_children(const snapshot_columns& in, const grouping& groups) {
  const std::size_t count = in.children.size();
  if (groups.dense || count < 4096) {
    for (std::size_t i = 0; i < count; ++i)
      if (!groups.has_rows(in.children[i])) [[unlikely]]
        return fail(dangling_child_error(in, i));
    return {};
  }
  VYRE_TRY_ASSIGN(auto values, raw_array<std::uint32_t>::allocate(count, "pack: sorted children"));
  VYRE_TRY_ASSIGN(auto scratch, raw_array<std::uint32_t>::allocate(count, "pack: sorted children"));
  std::memcpy(values.data(), in.children.data(), in.children.size_bytes());
  radix_sort_u32(values, scratch);
  const std::uint32_t* ids = groups.group_ids.data();
  const std::size_t id_count = groups.group_ids.size();
  std::size_t j = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t child = values[i];
    while (j < id_count && ids[j] < child) ++j;
    if (j == id_count || ids[j] != child) [[unlikely]] {
      // Name the first children entry holding this value.
      std::size_t at = 0;
      while (in.children[at] != child) ++at;
      return fail(dangling_child_error(in, at));
    }
  }
  return {};
}

//! Validates the snapshot and groups its rows: everything `emit` needs.
inline expected<grouping> analyze(const snapshot_columns& in, const snapshot_limits& limits) {
  VYRE_TRY(check_limits(in, limits));
  std::uint32_t min_id = 0;
  std::uint32_t max_id = 0;
  VYRE_TRY(check_rows(in, limits, min_id, max_id));
  grouping result;
  if (!in.rows.empty()) {
    const std::uint64_t id_range = std::uint64_t{max_id} - min_id + 1;
    if (use_counting_sort(id_range, in.rows.size())) {
      VYRE_TRY(group_dense(in, min_id, id_range, result));
    } else {
      VYRE_TRY(group_sparse(in, result));
    }
  }
  VYRE_TRY(check_children(in, result));
  return result;
}

//! Writes the image into `out` (exactly `layout.word_count()` words). Consumes the counting
//! array of a dense grouping (it becomes the scatter cursors).
inline void emit(const snapshot_columns& in, grouping& groups, const image_layout& layout,
                 std::uint32_t* out) noexcept {
  std::uint32_t* eclass_ids = out + layout.offset(image_column::row_eclass_ids);
  std::uint32_t* op_ids = out + layout.offset(image_column::row_language_op_ids);
  std::uint32_t* offsets = out + layout.offset(image_column::row_children_offsets);
  std::uint32_t* lengths = out + layout.offset(image_column::row_children_lens);
  std::uint32_t* signatures = out + layout.offset(image_column::row_signatures);
  const std::uint32_t* children = in.children.data();
  const std::size_t n = in.rows.size();
  for (std::size_t r = 0; r < n; ++r) {
    const row current = in.rows[r];
    eclass_ids[r] = current.eclass;
    op_ids[r] = current.op;
    offsets[r] = current.children_offset;
    lengths[r] = current.children_length;
    signatures[r] =
        row_signature(current.op, children + current.children_offset, current.children_length);
  }
  if (!in.children.empty())
    std::memcpy(out + layout.offset(image_column::children), children, in.children.size_bytes());

  std::uint32_t* group_ids = out + layout.offset(image_column::group_eclass_ids);
  std::uint32_t* group_offsets = out + layout.offset(image_column::group_offsets);
  std::uint32_t* group_rows = out + layout.offset(image_column::group_rows);
  if (groups.dense) {
    std::uint32_t g = 0;
    std::uint32_t running = 0;
    std::uint32_t* counts = groups.counts.data();
    for (std::size_t k = 0; k < groups.counts.size(); ++k) {
      const std::uint32_t count = counts[k];
      if (count == 0) continue;
      group_ids[g] = groups.min_eclass + static_cast<std::uint32_t>(k);
      group_offsets[g] = running;
      ++g;
      counts[k] = running;
      running += count;
    }
    group_offsets[g] = running;
    const std::uint32_t min_id = groups.min_eclass;
    // Read the e-class column just written (4 bytes a row) rather than the rows (16).
    for (std::size_t r = 0; r < n; ++r)
      group_rows[counts[eclass_ids[r] - min_id]++] = static_cast<std::uint32_t>(r);
    groups.counts.clear();  // consumed
  } else {
    if (groups.group_count != 0)
      std::memcpy(group_ids, groups.group_ids.data(),
                  groups.group_ids.size() * sizeof(std::uint32_t));
    std::uint32_t g = 0;
    const std::uint64_t* sorted = groups.sorted.data();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t key = sorted[i];
      if (i == 0 || (key >> 32) != (sorted[i - 1] >> 32))
        group_offsets[g++] = static_cast<std::uint32_t>(i);
      group_rows[i] = static_cast<std::uint32_t>(key);
    }
    group_offsets[g] = static_cast<std::uint32_t>(n);
  }
}

}  // namespace vyre::egraph::detail
