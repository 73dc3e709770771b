// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device build: raw rows already on the device (any row order) -> DESIGN.md's packed image,
//! byte-identical to the host pack of the same rows. CUB does the heavy lifting: a radix sort of
//! (e-class, row) pairs restricted to the bits the ids use, a run-length encode for the groups,
//! exclusive scans for the children and group offsets; one kernel writes the row columns,
//! signatures and children, and two device-to-device copies place the group columns. Input
//! checks (length sum, children naming rows) finish before the image is allocated, so a bad
//! input costs no image. Engines that build repeatedly pass a `build_workspace` (temporaries,
//! scratch and a pinned readback kept between calls: only the image is allocated per build).
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
#include <algorithm>
#include <utility>
#include <vector>

#include <cub/block/block_reduce.cuh>
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
#include "vyre/core/reserve.hpp"

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

//! Before the sort: the row ids the sort carries along (0..R-1; `row_ids` null when a reused
//! workspace already holds them: the sort only reads them), and the u64 sum of the children
//! lengths (checked against `child_count` on the host: when they agree, no u32 prefix
//! offset wraps, so the later kernels need no range checks). Launched with a capped grid: one
//! block-reduced atomic per block, not per warp, so a 16M-row sum does not queue on one word.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(block_size)
    build_prepass_kernel(const std::uint32_t* lengths, std::uint32_t row_count,
                         std::uint32_t* row_ids, unsigned long long* length_sum) {
  using block_sum = cub::BlockReduce<unsigned long long, block_size>;
  __shared__ typename block_sum::TempStorage scratch;
  unsigned long long local = 0;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < row_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    if (row_ids != nullptr) row_ids[i] = static_cast<std::uint32_t>(i);
    local += lengths[i];
  }
  const unsigned long long total = block_sum(scratch).Sum(local);
  if (threadIdx.x == 0 && total != 0) atomicAdd(length_sum, total);
}

//! Blocks of the prepass: enough to fill the device, few enough that the atomics are cheap.
inline constexpr unsigned prepass_max_blocks = 1024;

//! The row columns in one pass: e-class, op and length copied, the children copied while they
//! are folded into the row's signature (the children column needs no separate copy), and the
//! closing group offset (= R).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void build_rows_kernel(raw_rows_ref rows, const std::uint32_t* offsets,
                                   std::uint32_t* eclass, std::uint32_t* op, std::uint32_t* lens,
                                   std::uint32_t* signatures, std::uint32_t* children,
                                   std::uint32_t* closing_group_offset) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < rows.row_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(i);
    const std::uint32_t length = rows.children_length[r];
    const std::uint32_t offset = offsets[r];
    const std::uint32_t row_op = rows.op[r];
    eclass[r] = rows.eclass[r];
    op[r] = row_op;
    lens[r] = length;
    const std::uint32_t* from = rows.children + offset;
    std::uint32_t signature = signature_begin(row_op, length);
    for (std::uint32_t k = 0; k < length; ++k) {
      const std::uint32_t child = from[k];
      children[offset + k] = child;
      signature = signature_fold(signature, child);
    }
    signatures[r] = signature;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *closing_group_offset = rows.row_count;
}

//! The child check's presence bitmap: one bit per group id (the bitmap is cleared before).
//! The ids are sorted and distinct, so a warp's ids share few words: one atomic per word and
//! warp. `group_count` is read on the device (the host does not know it yet).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void mark_groups_kernel(const std::uint32_t* group_ids, const int* group_count,
                                    std::uint32_t* present) {
  const auto groups = static_cast<std::uint32_t>(*group_count);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < groups;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t id = group_ids[i];
    const std::uint32_t word = id >> 5;
    const std::uint32_t bit = 1u << (id & 31u);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const unsigned same_word = __match_any_sync(__activemask(), word);
    const std::uint32_t bits = __reduce_or_sync(same_word, bit);
    if ((threadIdx.x & 31u) == static_cast<unsigned>(__ffs(same_word) - 1)) atomicOr(&present[word], bits);
#else
    atomicOr(&present[word], bit);
#endif
  }
}

//! Children naming no group, one bitmap load each (ids up to `largest_id`).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void check_children_present_kernel(const std::uint32_t* children,
                                               std::uint32_t child_count,
                                               const std::uint32_t* present,
                                               std::uint32_t largest_id, device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < child_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t child = children[i];
    if (child > largest_id || ((present[child >> 5] >> (child & 31u)) & 1u) == 0)
      atomicMin(&status->bad_child, static_cast<std::uint32_t>(i));
  }
}

//! Whether the child check uses a presence bitmap for ids up to `largest_id`: at most one
//! word per row (or 256 KiB for small tables), so it never outgrows the other temporaries.
//! Sparser ids are checked by binary search over the sorted group ids.
constexpr bool bitmap_checks_children(std::uint32_t largest_id, std::uint32_t row_count) noexcept {
  constexpr std::uint64_t small_table_words = std::uint64_t{1} << 16;
  const std::uint64_t words = std::uint64_t{largest_id} / 32 + 1;
  return words <= (std::max)(std::uint64_t{row_count}, small_table_words);
}
static_assert(bitmap_checks_children(0x1FFFFFu, 1) && !bitmap_checks_children(0x200000u, 1));
static_assert(bitmap_checks_children(32u * 1000000u - 1, 1000000) &&
              !bitmap_checks_children(32u * 1000000u, 1000000));

//! Sparse ids: children naming no group, by binary search over the sorted group ids
//! (`group_count` is read on the device: the check runs before the host knows it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void check_children_kernel(const std::uint32_t* children, std::uint32_t child_count,
                                       const std::uint32_t* group_ids, const int* group_count,
                                       device_status* status) {
  const auto groups = static_cast<std::uint32_t>(*group_count);
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < child_count;
       i += std::uint64_t{gridDim.x} * blockDim.x)
    if (find_sorted(group_ids, groups, children[i]) == groups)
      atomicMin(&status->bad_child, static_cast<std::uint32_t>(i));
}

//! What `build` reads back after the sort: one transfer.
struct build_counters {
  device_status status;               //!< bad_child from the child check
  unsigned long long length_sum = 0;  //!< sum of the children lengths (u64)
  int groups = 0;                     //!< runs of the sorted e-class ids
  std::uint32_t largest_id = 0;       //!< DeviceReduce::Max of the e-class ids
};

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void init_build_counters_kernel(build_counters* counters) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    counters->status = clean_status;
    counters->length_sum = 0;
    counters->groups = 0;
    counters->largest_id = 0;
  }
}

//! The lengths do not add up to `child_count`: name the first row whose children range runs
//! past the column (or the last row when the lengths fall short). Error path only: it reads the
//! lengths back to the host.
inline error build_length_error(const raw_rows_ref& rows, std::uint64_t length_sum,
                                cudaStream_t stream) {
  std::uint32_t bad_row = rows.row_count - 1;
  std::vector<std::uint32_t> lengths;
  if (try_resize(lengths, rows.row_count, "build: read lengths") &&
      copy_to_host(lengths.data(), rows.children_length, rows.row_count, stream,
                   "build: read lengths")) {
    std::uint64_t end = 0;
    for (std::uint32_t r = 0; r < rows.row_count; ++r) {
      end += lengths[r];
      if (end > rows.child_count) {
        bad_row = r;
        break;
      }
    }
  }
  return error(errc::out_of_range,
               "build: a row's children range does not match the children column (the "
               "lengths must add up to child_count)")
      .with("row", bad_row)
      .with("length_sum", length_sum)
      .with("child_count", rows.child_count)
      .fix("pass the children of every row concatenated in row order, and child_count = "
           "sum of children_length");
}

inline error build_child_error(const device_status& status) {
  return error(errc::not_found, "build: a child names an e-class that has no row")
      .with("child_entry", status.bad_child)
      .fix("add a row for that e-class or drop the child");
}

}  // namespace detail

//! Reusable temporaries for repeated `build` calls on one stream: the sort and group buffers,
//! the child check's presence bitmap, the CUB scratch and a page-locked readback slot, grown as
//! inputs need (never shrunk). With a warm workspace a build allocates only its image, and the
//! host's wait for the id range overlaps the row-id / length-sum pass.
//! @note Bound to the stream it was made for; not thread-safe. Memory is freed in stream order
//!       on that stream: keep the stream alive until the workspace is destroyed.
class build_workspace {
 public:
  build_workspace() noexcept = default;
  explicit build_workspace(cudaStream_t stream) noexcept : stream_(stream) {}
  build_workspace(build_workspace&&) noexcept = default;
  build_workspace& operator=(build_workspace&&) noexcept = default;

  cudaStream_t stream() const noexcept { return stream_; }
  //! Rows the sort temporaries hold without reallocating.
  std::uint32_t capacity() const noexcept { return capacity_; }

  //! Allocates for `rows` rows now (the first `build` does it otherwise; the child check's
  //! bitmap comes with the first checked build).
  //! @throws nothing; errors: more than INT_MAX rows (`errc::abi_limit`), allocation failures.
  expected<void> reserve(std::uint32_t rows) {
    if (rows > static_cast<std::uint32_t>(INT_MAX))
      return fail(error(errc::abi_limit, "build_workspace: too many rows for CUB's run-length encode")
                      .with("rows", rows)
                      .with("max_rows", INT_MAX)
                      .fix("shard the e-graph into parts of at most 2^31 - 1 rows"));
    VYRE_TRY(reserve_head(rows));
    return reserve_tail(rows);
  }

 private:
  friend expected<device_packed_image> build(const raw_rows_ref& rows, build_workspace& workspace,
                                             child_check check);
  friend expected<device_packed_image> build(const raw_rows_ref& rows, cudaStream_t stream,
                                             child_check check);
  using u32_buffer = device_buffer<std::uint32_t>;

  build_workspace(cudaStream_t stream, bool pinned) noexcept : stream_(stream), pinned_(pinned) {}

  //! What the first kernels need: counters, row ids, scratch (and the pinned slot and event).
  expected<void> reserve_head(std::uint32_t rows) {
    const char* what = "build: workspace";
    if (counters_.get() == nullptr) {
      VYRE_TRY_ASSIGN(counters_, device_buffer<detail::build_counters>::allocate(1, stream_, what));
    }
    if (pinned_ && readback_.get() == nullptr) {
      VYRE_TRY_ASSIGN(readback_, detail::pinned_buffer<detail::build_counters>::allocate(1, what));
      VYRE_TRY_ASSIGN(id_range_read_, detail::make_event(what));
    }
    if (rows > row_ids_.size()) {
      VYRE_TRY(ensure(row_ids_, rows, what));
      identity_rows_ = 0;
    }
    // CUB's scratch for every call at this size (the sort over all 32 bits bounds the later,
    // narrower one); queried per call: host-only sizes.
    std::size_t max_bytes = 0, sort_bytes = 0, rle_bytes = 0, scan_bytes = 0;
    std::uint32_t* none = nullptr;
    int* no_count = nullptr;
    VYRE_CUDA_TRY(cub::DeviceReduce::Max(nullptr, max_bytes, none, none, rows, stream_),
                  "build: scratch size (cub::DeviceReduce::Max)");
    VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, none, none, none, none, rows,
                                                  0, 32, stream_),
                  "build: scratch size (cub::DeviceRadixSort::SortPairs)");
    VYRE_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, none, none, none, no_count,
                                                     static_cast<int>(rows), stream_),
                  "build: scratch size (cub::DeviceRunLengthEncode::Encode)");
    VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, none, none, rows, stream_),
                  "build: scratch size (cub::DeviceScan::ExclusiveSum)");
    const std::size_t need = (std::max)({max_bytes, sort_bytes, rle_bytes, scan_bytes, std::size_t{1}});
    if (need > scratch_.size()) {
      VYRE_TRY_ASSIGN(scratch_, device_buffer<unsigned char>::allocate(need, stream_, "build: CUB scratch"));
    }
    return {};
  }

  //! What the sort and the groups need (allocated while the first kernels run).
  expected<void> reserve_tail(std::uint32_t rows) {
    const char* what = "build: workspace";
    if (rows <= capacity_) return {};
    std::size_t held = SIZE_MAX;
    for (u32_buffer* b : {&sorted_ids_, &sorted_rows_, &unique_ids_, &counts_}) {
      VYRE_TRY(ensure(*b, rows, what));
      held = (std::min)(held, b->size());
    }
    capacity_ = static_cast<std::uint32_t>(held);  // grown() keeps sizes within INT_MAX
    return {};
  }

  //! `buffer` holding at least `items` words (grown, contents dropped).
  expected<void> ensure(u32_buffer& buffer, std::size_t items, const char* what) {
    if (items <= buffer.size()) return {};
    VYRE_TRY_ASSIGN(buffer, u32_buffer::allocate(grown(items, buffer.size()), stream_, what));
    return {};
  }

  //! Repeated builds grow by half again, so a slowly growing e-graph reallocates rarely;
  //! a one-shot workspace takes exactly what it needs.
  std::size_t grown(std::size_t items, std::size_t current) const noexcept {
    if (!pinned_) return items;
    return (std::min)(std::size_t{INT_MAX}, (std::max)(items, current + current / 2));
  }

  cudaStream_t stream_ = nullptr;
  bool pinned_ = true;
  std::uint32_t capacity_ = 0;
  std::uint32_t identity_rows_ = 0;  // row_ids_[0, identity_rows_) hold 0, 1, 2, ...
  u32_buffer row_ids_, sorted_ids_, sorted_rows_, unique_ids_, counts_;
  u32_buffer present_;  // the child check's bitmap
  device_buffer<detail::build_counters> counters_;
  device_buffer<unsigned char> scratch_;
  detail::pinned_buffer<detail::build_counters> readback_;
  detail::owned_event id_range_read_;
};

//! Builds the packed image of `rows` (device pointers) on the workspace's stream: the same
//! words the host pack writes for the same rows (children offsets = prefix sums of the
//! lengths; groups list rows ascending).
//!
//! Work: `cub::DeviceReduce::Max` (the id range -> the bits the sort needs), one pass for the
//! row ids and the u64 length sum (it runs while the host reads the id range),
//! `cub::DeviceRadixSort::SortPairs` over those bits, `cub::DeviceRunLengthEncode::Encode`,
//! the child check (when on: a presence bitmap of the group ids and one load per child, or a
//! binary search per child when the ids are too sparse for a bitmap, see
//! `detail::bitmap_checks_children`), two `cub::DeviceScan::ExclusiveSum`, one kernel for the
//! row columns, signatures and children, two device-to-device copies for the group ids and
//! rows. Two host waits: the id range, and the group count with the input checks. The image's
//! words are written in stream order after the call returns: use it on the stream (or
//! synchronise) like any other stream-ordered result.
//! @pre `rows` points to device memory readable on the workspace's stream.
//! @throws nothing; errors: lengths that do not add up to `child_count` (`errc::out_of_range`,
//!         naming the first row past the column), a child without rows (`errc::not_found`,
//!         when `check` is on), more than INT_MAX rows (`errc::abi_limit`), CUDA failures
//!         (`errc::cuda_runtime` / `errc::out_of_memory`). Nothing leaks; the workspace stays
//!         usable after an error.
inline expected<device_packed_image> build(const raw_rows_ref& rows, build_workspace& workspace,
                                           child_check check = child_check::on) {
  using detail::block_size;
  using detail::grid_for;
  using u32_buffer = device_buffer<std::uint32_t>;
  const cudaStream_t stream = workspace.stream_;
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
    VYRE_TRY_ASSIGN(auto words, u32_buffer::allocate(1, stream, "build: image"));
    VYRE_CUDA_TRY(cudaMemsetAsync(words.get(), 0, sizeof(std::uint32_t), stream), "build: image");
    return device_packed_image(std::move(words), packed_layout{});
  }

  VYRE_TRY(workspace.reserve_head(R));
  build_workspace& w = workspace;
  detail::build_counters* const on_device = w.counters_.get();
  int* const groups_out = &on_device->groups;
  const std::size_t scratch_bytes = w.scratch_.size();
  detail::build_counters pageable{};
  detail::build_counters* const seen = w.readback_.get() != nullptr ? w.readback_.get() : &pageable;
  const bool checked = check == child_check::on && rows.child_count != 0;

  // The id range first. With a pinned readback the row-id / length-sum pass runs while the
  // host waits for it; a pageable readback blocks the host, so everything it does not need is
  // enqueued (and the sort temporaries allocated) before it.
  detail::init_build_counters_kernel<><<<1, 1, 0, stream>>>(on_device);
  VYRE_TRY(detail::launched("build: init counters"));
  std::size_t bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceReduce::Max(w.scratch_.get(), bytes, rows.eclass, &on_device->largest_id,
                                       R, stream),
                "build: e-class id range (cub::DeviceReduce::Max)");
  const auto prepass = [&]() -> expected<void> {
    const bool write_ids = w.identity_rows_ < R;
    detail::build_prepass_kernel<><<<(std::min)(grid_for(R), detail::prepass_max_blocks), block_size, 0, stream>>>(
        rows.children_length, R, write_ids ? w.row_ids_.get() : nullptr, &on_device->length_sum);
    VYRE_TRY(detail::launched("build: row ids and length sum"));
    if (write_ids) w.identity_rows_ = R;
    return w.reserve_tail(R);
  };
  if (seen != &pageable) {
    VYRE_CUDA_TRY(cudaMemcpyAsync(seen, on_device, sizeof(detail::build_counters),
                                  cudaMemcpyDeviceToHost, stream),
                  "build: read id range");
    VYRE_CUDA_TRY(cudaEventRecord(w.id_range_read_.get(), stream), "build: read id range");
    VYRE_TRY(prepass());
    VYRE_CUDA_TRY(cudaEventSynchronize(w.id_range_read_.get()), "build: read id range");
  } else {
    VYRE_TRY(prepass());
    VYRE_TRY(detail::copy_to_host(seen, on_device, 1, stream, "build: read id range"));
  }
  const std::uint32_t largest_id = seen->largest_id;
  const int end_bit = (cuda::std::max)(1, cuda::std::bit_width(largest_id));

  // Rows sorted by e-class (stable: ascending rows inside each class), then the groups.
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(w.scratch_.get(), bytes, rows.eclass,
                                                w.sorted_ids_.get(), w.row_ids_.get(),
                                                w.sorted_rows_.get(), R, 0, end_bit, stream),
                "build: group rows (cub::DeviceRadixSort::SortPairs)");
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(w.scratch_.get(), bytes, w.sorted_ids_.get(),
                                                   w.unique_ids_.get(), w.counts_.get(), groups_out,
                                                   static_cast<int>(R), stream),
                "build: groups (cub::DeviceRunLengthEncode::Encode)");
  if (checked && detail::bitmap_checks_children(largest_id, R)) {
    const std::uint32_t words = largest_id / 32 + 1;
    VYRE_TRY(w.ensure(w.present_, words, "build: child check bitmap"));
    VYRE_CUDA_TRY(cudaMemsetAsync(w.present_.get(), 0, std::size_t{words} * sizeof(std::uint32_t), stream),
                  "build: child check bitmap");
    detail::mark_groups_kernel<><<<grid_for(R), block_size, 0, stream>>>(w.unique_ids_.get(), groups_out,
                                                                         w.present_.get());
    VYRE_TRY(detail::launched("build: child check bitmap"));
    detail::check_children_present_kernel<><<<grid_for(rows.child_count), block_size, 0, stream>>>(
        rows.children, rows.child_count, w.present_.get(), largest_id, &on_device->status);
    VYRE_TRY(detail::launched("build: child check"));
  } else if (checked) {
    detail::check_children_kernel<><<<grid_for(rows.child_count), block_size, 0, stream>>>(
        rows.children, rows.child_count, w.unique_ids_.get(), groups_out, &on_device->status);
    VYRE_TRY(detail::launched("build: child check"));
  }
  VYRE_CUDA_TRY(cudaMemcpyAsync(seen, on_device, sizeof(detail::build_counters),
                                cudaMemcpyDeviceToHost, stream),
                "build: read group count");
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "build: read group count");
  if (seen->length_sum != rows.child_count)
    return fail(detail::build_length_error(rows, seen->length_sum, stream));
  if (seen->status.bad_child != 0xFFFFFFFFu) return fail(detail::build_child_error(seen->status));
  const auto G = static_cast<std::uint32_t>(seen->groups);

  // The image: everything from here on is stream-ordered work, no further waits.
  const packed_layout layout{R, rows.child_count, G};
  VYRE_TRY_ASSIGN(auto image_words, u32_buffer::allocate(static_cast<std::size_t>(layout.word_count()),
                                                         stream, "build: image"));
  std::uint32_t* const base = image_words.get();
  std::uint32_t* const offsets = base + layout.row_children_offsets();
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(w.scratch_.get(), bytes, rows.children_length, offsets,
                                              R, stream),
                "build: children offsets (cub::DeviceScan::ExclusiveSum)");
  // The closing group offset (= R) is written by the rows kernel, the other G by the scan.
  detail::build_rows_kernel<><<<grid_for(R), block_size, 0, stream>>>(
      rows, offsets, base + layout.row_eclass_ids(), base + layout.row_language_op_ids(),
      base + layout.row_children_lens(), base + layout.row_signatures(), base + layout.children(),
      base + layout.group_offsets() + G);
  VYRE_TRY(detail::launched("build: row columns, signatures and children"));
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(w.scratch_.get(), bytes, w.counts_.get(),
                                              base + layout.group_offsets(), G, stream),
                "build: group offsets (cub::DeviceScan::ExclusiveSum)");
  VYRE_CUDA_TRY(cudaMemcpyAsync(base + layout.group_eclass_ids(), w.unique_ids_.get(),
                                std::size_t{G} * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, stream),
                "build: group ids");
  VYRE_CUDA_TRY(cudaMemcpyAsync(base + layout.group_rows(), w.sorted_rows_.get(),
                                std::size_t{R} * sizeof(std::uint32_t), cudaMemcpyDeviceToDevice, stream),
                "build: group rows");
  return device_packed_image(std::move(image_words), layout);
}

//! One-shot `build` on `stream`: a temporary workspace (pageable readbacks, exact sizes,
//! freed in stream order). Engines that build repeatedly keep a `build_workspace` instead.
//! @note Scratch and the image come from `cudaMallocAsync` on the device's current memory pool.
//!       Its release threshold is 0 by default, so every synchronisation hands freed memory
//!       back to the driver and the next call maps it again; an engine that builds repeatedly
//!       should raise it (`cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, ...)`).
inline expected<device_packed_image> build(const raw_rows_ref& rows, cudaStream_t stream,
                                           child_check check = child_check::on) {
  build_workspace once(stream, false);
  return build(rows, once, check);
}

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
