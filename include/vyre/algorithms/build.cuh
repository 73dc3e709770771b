// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device build: raw rows already on the device (any row order) -> DESIGN.md's packed image,
//! byte-identical to the host pack of the same rows. CUB does the heavy lifting: a radix sort of
//! (e-class, row) pairs restricted to the bits the ids use, a run-length encode for the groups,
//! exclusive scans for the children and group offsets; one kernel writes the row columns and
//! signatures and checks every row's children range.
#pragma once

// nvcc (C++20) infers __host__ __device__ for the implicit special members of host-only
// aggregates (std::vector or device_buffer members) held in cuda::std::expected, then warns
// (20011, 20013) that they call host-only members. They only ever run on the host.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif

#include <climits>
#include <cstdint>
#include <utility>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/bit>
#include <cuda_runtime_api.h>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/signature.hpp"
#include "vyre/algorithms/rows.hpp"
#include "vyre/core/error.hpp"

namespace vyre::algorithms {

//! An owning packed image in device memory.
//! @note Its memory is freed in stream order on the stream it was built on: keep that stream
//!       alive until the image is destroyed.
class device_packed_image {
 public:
  device_packed_image() noexcept = default;
  device_packed_image(device_buffer<std::uint32_t> words, const packed_layout& layout) noexcept
      : words_(std::move(words)), layout_(layout) {}

  const packed_layout& layout() const noexcept { return layout_; }
  //! The image words (device memory), `layout().word_count()` of them.
  const std::uint32_t* words() const noexcept { return words_.get(); }
  std::uint32_t* words() noexcept { return words_.get(); }
  std::uint64_t word_count() const noexcept { return layout_.word_count(); }
  //! The nine columns as device pointers.
  packed_ref ref() const noexcept { return packed_ref::from_words(words_.get(), layout_); }

 private:
  device_buffer<std::uint32_t> words_;
  packed_layout layout_;
};

//! Whether `build` checks that every child names an e-class that has rows (a binary search per
//! child; the host pack always checks).
enum class child_check : std::uint8_t { on, off };

namespace detail {

//! Copies the row columns, signs every row and checks its children range against the scanned
//! offsets (a wrapped u32 scan shows up as an inconsistent range).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void build_rows_kernel(raw_rows_ref rows, packed_ref image, std::uint32_t* eclass,
                                   std::uint32_t* op, std::uint32_t* lens,
                                   std::uint32_t* signatures, device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < rows.row_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(i);
    const std::uint32_t length = rows.children_length[r];
    const std::uint32_t offset = image.children_offset[r];
    const std::uint64_t end = std::uint64_t{offset} + length;
    const std::uint64_t next =
        r + 1 < rows.row_count ? image.children_offset[r + 1] : std::uint64_t{rows.child_count};
    eclass[r] = rows.eclass[r];
    op[r] = rows.op[r];
    lens[r] = length;
    if (end != next || end > rows.child_count) {
      atomicMin(&status->bad_row, r);
      signatures[r] = 0;
      continue;
    }
    signatures[r] = row_signature(rows.op[r], rows.children + offset, length);
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void check_children_kernel(const std::uint32_t* children, std::uint32_t child_count,
                                       const std::uint32_t* group_ids, std::uint32_t group_count,
                                       device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < child_count;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    if (find_sorted(group_ids, group_count, children[i]) == group_count)
      atomicMin(&status->bad_child, static_cast<std::uint32_t>(i));
}

inline error build_input_error(const device_status& status, const raw_rows_ref& rows) {
  if (status.bad_row != 0xFFFFFFFFu)
    return error(errc::out_of_range,
                 "build: a row's children range does not match the children column (the "
                 "lengths must add up to child_count)")
        .with("row", status.bad_row)
        .with("child_count", rows.child_count)
        .fix("pass the children of every row concatenated in row order, and child_count = "
             "sum of children_length");
  return error(errc::not_found, "build: a child names an e-class that has no row")
      .with("child_entry", status.bad_child)
      .fix("add a row for that e-class or drop the child");
}

}  // namespace detail

//! Builds the packed image of `rows` (device pointers) on `stream`: the same words the host
//! pack writes for the same rows (children offsets = prefix sums of the lengths; groups list
//! rows ascending). Synchronises `stream` three times (id range, group count, status).
//! @pre `rows` points to device memory readable on `stream`.
//! @throws nothing; errors: inconsistent lengths (`errc::out_of_range`), a child without rows
//!         (`errc::not_found`, when `check` is on), more than INT_MAX rows (`errc::abi_limit`),
//!         CUDA failures (`errc::cuda_runtime` / `errc::out_of_memory`). Nothing leaks.
inline expected<device_packed_image> build(const raw_rows_ref& rows, cudaStream_t stream,
                                           child_check check = child_check::on) {
  using detail::block_size;
  using detail::grid_for;
  const std::uint32_t R = rows.row_count;
  if (R > static_cast<std::uint32_t>(INT_MAX))
    return fail(error(errc::abi_limit, "build: too many rows for CUB's run-length encode")
                    .with("rows", R)
                    .with("max_rows", INT_MAX)
                    .fix("shard the e-graph into parts of at most 2^31 - 1 rows"));
  if (R == 0) {
    if (rows.child_count != 0)
      return fail(error(errc::invalid_argument, "build: children without rows")
                      .with("child_count", rows.child_count)
                      .fix("pass child_count = 0 for an empty table"));
    VYRE_TRY_ASSIGN(auto words, device_buffer<std::uint32_t>::allocate(1, stream, "build: image"));
    VYRE_CUDA_TRY(cudaMemsetAsync(words.get(), 0, sizeof(std::uint32_t), stream), "build: image");
    return device_packed_image(std::move(words), packed_layout{});
  }

  VYRE_TRY_ASSIGN(auto status, device_buffer<detail::device_status>::allocate(1, stream, "build: status"));
  detail::init_status_kernel<><<<1, 1, 0, stream>>>(status.get());
  VYRE_TRY(detail::launched("build: init status"));

  // Id range -> the bits the radix sort needs.
  VYRE_TRY_ASSIGN(auto max_id, device_buffer<std::uint32_t>::allocate(1, stream, "build: max id"));
  VYRE_TRY(detail::cub_call(
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceReduce::Max(temp, bytes, rows.eclass, max_id.get(), R, stream);
      },
      stream, "build: e-class id range (cub::DeviceReduce::Max)"));
  std::uint32_t largest = 0;
  VYRE_TRY(detail::copy_to_host(&largest, max_id.get(), 1, stream, "build: read id range"));
  const int end_bit = (cuda::std::max)(1, cuda::std::bit_width(largest));

  // Rows sorted by e-class (stable: ascending rows inside each class).
  VYRE_TRY_ASSIGN(auto row_ids, device_buffer<std::uint32_t>::allocate(R, stream, "build: row ids"));
  VYRE_TRY_ASSIGN(auto sorted_ids, device_buffer<std::uint32_t>::allocate(R, stream, "build: sorted ids"));
  VYRE_TRY_ASSIGN(auto sorted_rows, device_buffer<std::uint32_t>::allocate(R, stream, "build: sorted rows"));
  detail::iota_kernel<><<<grid_for(R), block_size, 0, stream>>>(row_ids.get(), R);
  VYRE_TRY(detail::launched("build: row ids"));
  VYRE_TRY(detail::cub_call(
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, rows.eclass, sorted_ids.get(),
                                               row_ids.get(), sorted_rows.get(), R, 0, end_bit,
                                               stream);
      },
      stream, "build: group rows (cub::DeviceRadixSort::SortPairs)"));

  // Groups: distinct ids and their sizes.
  VYRE_TRY_ASSIGN(auto unique_ids, device_buffer<std::uint32_t>::allocate(R, stream, "build: group ids"));
  VYRE_TRY_ASSIGN(auto counts, device_buffer<std::uint32_t>::allocate(std::size_t{R} + 1, stream, "build: group sizes"));
  VYRE_TRY_ASSIGN(auto run_count, device_buffer<int>::allocate(1, stream, "build: group count"));
  VYRE_TRY(detail::cub_call(
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRunLengthEncode::Encode(temp, bytes, sorted_ids.get(), unique_ids.get(),
                                                  counts.get(), run_count.get(),
                                                  static_cast<int>(R), stream);
      },
      stream, "build: groups (cub::DeviceRunLengthEncode::Encode)"));
  int groups = 0;
  VYRE_TRY(detail::copy_to_host(&groups, run_count.get(), 1, stream, "build: read group count"));
  const auto G = static_cast<std::uint32_t>(groups);

  const packed_layout layout{R, rows.child_count, G};
  VYRE_TRY_ASSIGN(auto words, device_buffer<std::uint32_t>::allocate(
                                  static_cast<std::size_t>(layout.word_count()), stream, "build: image"));
  std::uint32_t* base = words.get();
  const packed_ref image = packed_ref::from_words(base, layout);
  std::uint32_t* offsets = base + layout.row_children_offsets();
  VYRE_TRY(detail::cub_call(
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(temp, bytes, rows.children_length, offsets, R, stream);
      },
      stream, "build: children offsets (cub::DeviceScan::ExclusiveSum)"));
  detail::build_rows_kernel<><<<grid_for(R), block_size, 0, stream>>>(
      rows, image, base + layout.row_eclass_ids(), base + layout.row_language_op_ids(),
      base + layout.row_children_lens(), base + layout.row_signatures(), status.get());
  VYRE_TRY(detail::launched("build: row columns and signatures"));
  VYRE_TRY(detail::copy_on_device(base + layout.children(), rows.children, rows.child_count,
                                  stream, "build: children column"));
  VYRE_TRY(detail::copy_on_device(base + layout.group_eclass_ids(), unique_ids.get(), G, stream,
                                  "build: group ids column"));
  VYRE_CUDA_TRY(cudaMemsetAsync(counts.get() + G, 0, sizeof(std::uint32_t), stream),
                "build: group offsets sentinel");
  VYRE_TRY(detail::cub_call(
      [&](void* temp, std::size_t& bytes) {
        return cub::DeviceScan::ExclusiveSum(temp, bytes, counts.get(), base + layout.group_offsets(),
                                             G + 1, stream);
      },
      stream, "build: group offsets (cub::DeviceScan::ExclusiveSum)"));
  VYRE_TRY(detail::copy_on_device(base + layout.group_rows(), sorted_rows.get(), R, stream,
                                  "build: group rows column"));
  if (check == child_check::on && rows.child_count != 0) {
    detail::check_children_kernel<><<<grid_for(rows.child_count), block_size, 0, stream>>>(
        base + layout.children(), rows.child_count, base + layout.group_eclass_ids(), G,
        status.get());
    VYRE_TRY(detail::launched("build: child check"));
  }
  detail::device_status seen{};
  VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "build: read status"));
  if (seen.bad_row != 0xFFFFFFFFu || seen.bad_child != 0xFFFFFFFFu)
    return fail(detail::build_input_error(seen, rows));
  return device_packed_image(std::move(words), layout);
}

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
