// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::egraph::kernel_view`: the packed image as user kernels see it: the image's
//! `image_columns` (device pointers and counts, validated once on the host by
//! `backend.kernel_view`) plus a fault record, passed to kernels by value.
//!
//! Two kinds of accessors:
//! - checked (`eclass(row)`, `children(row)`, `group(i)`, ...): never read out of bounds. On a
//!   bad index they return a neutral value (`invalid_id`, an empty span) and record the first
//!   fault in the view's fault record, which lives in the image's own allocation. The kernel
//!   keeps running; after it, `check_view_faults(gpu, image)` on the host turns the record into
//!   a `vyre::error` naming the accessor, the index and the bound (and clears it).
//! - `_nocheck`: plain loads for hot loops whose indices are correct by construction.
//!
//!     __global__ void count_ops(vyre::egraph::kernel_view view, unsigned* per_op) {
//!       for (unsigned row = blockIdx.x * blockDim.x + threadIdx.x; row < view.row_count();
//!            row += gridDim.x * blockDim.x)
//!         atomicAdd(&per_op[view.op_nocheck(row)], 1u);
//!     }
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda/std/span>

#include "vyre/core/config.hpp"
#include "vyre/detail/enum_name.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::egraph {

//! Returned by checked accessors for a bad index, and by `find_group` for an absent e-class.
inline constexpr std::uint32_t invalid_id = 0xFFFFFFFFu;

//! Which checked accessor recorded a fault.
enum class view_accessor : std::uint32_t {
  none = 0,
  eclass,
  op,
  signature,
  children,
  group,
};

VYRE_HOST_DEVICE constexpr const char* view_accessor_name(view_accessor accessor) noexcept {
  constexpr const char* names[] = {"none",           "eclass(row)",   "op(row)",
                                   "signature(row)", "children(row)", "group(i)"};
  return vyre::detail::enum_name<view_accessor::none, view_accessor::group>(accessor, names,
                                                                            "unknown accessor");
}

//! The first out-of-bounds access of the kernels that used a view, written on the device.
struct view_fault {
  std::uint32_t accessor = 0;  //!< a `view_accessor`; 0 while no fault happened
  std::uint32_t reserved = 0;
  std::uint64_t index = 0;       //!< the index that was out of bounds
  std::uint64_t bound = 0;       //!< what it had to stay below
  unsigned long long count = 0;  //!< how many faults happened in all
};
static_assert(sizeof(view_fault) == 32);

//! One e-class group: its id and the rows that belong to it (ascending row indices).
struct group_entry {
  std::uint32_t eclass = invalid_id;
  cuda::std::span<const std::uint32_t> rows;
};

namespace detail {
struct kernel_view_access;
}  // namespace detail

class kernel_view {
 public:
  //! An empty view (no rows, no groups); build real ones with `backend.kernel_view(image)`.
  kernel_view() = default;

  VYRE_HOST_DEVICE constexpr std::uint32_t row_count() const noexcept {
    return columns_.row_count();
  }
  VYRE_HOST_DEVICE constexpr std::uint32_t child_count() const noexcept {
    return columns_.child_count();
  }
  VYRE_HOST_DEVICE constexpr std::uint32_t group_count() const noexcept {
    return columns_.group_count();
  }

  //! The unchecked columns, for the algorithms and for code that streams whole columns.
  VYRE_HOST_DEVICE constexpr const image_columns& columns() const noexcept { return columns_; }

  // Checked accessors: see the file comment.
  VYRE_DEVICE std::uint32_t eclass(std::uint32_t row) const noexcept {
    return row < row_count() ? columns_.row_eclass_ids()[row]
                             : fault(view_accessor::eclass, row, row_count());
  }
  VYRE_DEVICE std::uint32_t op(std::uint32_t row) const noexcept {
    return row < row_count() ? columns_.row_language_op_ids()[row]
                             : fault(view_accessor::op, row, row_count());
  }
  VYRE_DEVICE std::uint32_t signature(std::uint32_t row) const noexcept {
    return row < row_count() ? columns_.row_signatures()[row]
                             : fault(view_accessor::signature, row, row_count());
  }
  //! The row's children (child e-class ids); empty on a bad row or a range outside `children`.
  VYRE_DEVICE cuda::std::span<const std::uint32_t> children(std::uint32_t row) const noexcept {
    if (row >= row_count()) {
      fault(view_accessor::children, row, row_count());
      return {};
    }
    const std::uint64_t begin = columns_.row_children_offsets()[row];
    const std::uint64_t end = begin + columns_.row_children_lens()[row];  // u64: cannot wrap
    if (end > child_count()) {
      fault(view_accessor::children, end, child_count());
      return {};
    }
    return {columns_.children() + begin, static_cast<std::size_t>(end - begin)};
  }
  //! Group `i`: its e-class and its rows; `{invalid_id, {}}` on a bad index or range.
  VYRE_DEVICE group_entry group(std::uint32_t i) const noexcept {
    if (i >= group_count()) {
      fault(view_accessor::group, i, group_count());
      return {};
    }
    const std::uint32_t begin = columns_.group_offsets()[i];
    const std::uint32_t end = columns_.group_offsets()[i + 1];
    if (begin > end || end > row_count()) {
      fault(view_accessor::group, end, row_count());
      return {};
    }
    return {columns_.group_eclass_ids()[i],
            {columns_.group_rows() + begin, static_cast<std::size_t>(end - begin)}};
  }

  // Unchecked accessors: @pre the index is in range.
  VYRE_DEVICE std::uint32_t eclass_nocheck(std::uint32_t row) const noexcept {
    return columns_.row_eclass_ids()[row];
  }
  VYRE_DEVICE std::uint32_t op_nocheck(std::uint32_t row) const noexcept {
    return columns_.row_language_op_ids()[row];
  }
  VYRE_DEVICE std::uint32_t signature_nocheck(std::uint32_t row) const noexcept {
    return columns_.row_signatures()[row];
  }
  VYRE_DEVICE cuda::std::span<const std::uint32_t> children_nocheck(
      std::uint32_t row) const noexcept {
    return {columns_.children() + columns_.row_children_offsets()[row],
            columns_.row_children_lens()[row]};
  }
  VYRE_DEVICE group_entry group_nocheck(std::uint32_t i) const noexcept {
    const std::uint32_t begin = columns_.group_offsets()[i];
    return {columns_.group_eclass_ids()[i],
            {columns_.group_rows() + begin, columns_.group_offsets()[i + 1] - begin}};
  }

  //! The group index of e-class `eclass` by binary search over the ascending group ids, or
  //! `invalid_id` when no row has that e-class (a normal answer, not a fault).
  VYRE_DEVICE std::uint32_t find_group(std::uint32_t eclass) const noexcept {
    const std::uint32_t* ids = columns_.group_eclass_ids();
    std::uint32_t low = 0;
    std::uint32_t high = group_count();
    while (low < high) {
      const std::uint32_t mid = low + (high - low) / 2;
      const std::uint32_t id = ids[mid];
      if (id == eclass) return mid;
      if (id < eclass)
        low = mid + 1;
      else
        high = mid;
    }
    return invalid_id;
  }

  //! A whole column, for kernels that stream it (e.g. CUB over `row_signatures`).
  VYRE_HOST_DEVICE cuda::std::span<const std::uint32_t> column(image_column which) const noexcept {
    return columns_.column(which);
  }

 private:
  friend struct detail::kernel_view_access;

  //! Records the first fault (later ones only count) and returns `invalid_id`.
  VYRE_DEVICE std::uint32_t fault(view_accessor accessor, std::uint64_t index,
                                  std::uint64_t bound) const noexcept {
#if defined(__CUDA_ARCH__)
    if (fault_ != nullptr) {
      if (atomicCAS(&fault_->accessor, 0u, static_cast<std::uint32_t>(accessor)) == 0u) {
        fault_->index = index;
        fault_->bound = bound;
      }
      atomicAdd(&fault_->count, 1ull);
    }
#else
    (void)accessor, (void)index, (void)bound;
#endif
    return invalid_id;
  }

  image_columns columns_;
  view_fault* fault_ = nullptr;
};

static_assert(std::is_trivially_copyable_v<kernel_view>,
              "kernel_view is passed to kernels by value: it must stay trivially copyable");

}  // namespace vyre::egraph
