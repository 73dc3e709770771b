// SPDX-License-Identifier: Apache-2.0
//! @file
//! Device build: raw rows already on the device (any row order) -> the packed image
//! (docs/image_format.md), byte-identical to the host pack of the same rows. CUB does the heavy
//! lifting: a radix sort of (e-class, row) pairs restricted to the bits the ids use, a run-length
//! encode for the groups, exclusive scans for the children and group offsets; one kernel writes the
//! row columns, signatures, children and group rows. The image is allocated before the groups are
//! counted (room for one group per row), so every column but the group offsets is written before
//! the host needs the count; a bad input frees it. Engines that build repeatedly pass a
//! `build_workspace` (temporaries, scratch and a pinned readback kept between calls: only the image
//! is allocated per build). Every buffer comes from the backend passed in (its allocation policy,
//! pinned pool and event pool); results follow its error policy.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/std/bit>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph/device_image.hpp"
#include "vyre/egraph/signature.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! Deprecated name of `egraph::device_image`, the owning device image `build` makes.
using device_packed_image [[deprecated("use vyre::egraph::device_image")]] = egraph::device_image;

//! Whether `build` checks that every child names an e-class that has rows (one bitmap load per
//! child, or a binary search for very sparse ids; the host pack always checks).
enum class child_check : std::uint8_t { on, off };

namespace detail {

//! What `build` reads back (twice: the id range, then the rest): one transfer each.
struct build_counters {
  device_status status;          //!< bad_child from the child check, bad_row from the rows kernel
  int groups = 0;                //!< runs of the sorted e-class ids
  std::uint32_t largest_id = 0;  //!< DeviceReduce::Max of the e-class ids
};

//! The child check's presence bitmap: one bit per group id up to `largest_id` (none when
//! `words` is null).
struct presence_bitmap {
  const std::uint32_t* words = nullptr;
  std::uint32_t largest_id = 0;
  VYRE_DEVICE bool contains(std::uint32_t id) const noexcept {
    return id <= largest_id && ((words[id >> 5] >> (id & 31u)) & 1u) != 0;
  }
};

//! The rest of the image but the group offsets, in one pass over the rows: e-class, op and
//! length copied, the children copied and folded into the row's signature, the group rows (the
//! sorted row ids) and the closing group offset (= R). Launched before the host knows the group
//! count (it reads it from `counters`). With a bitmap of the group ids, it checks each child
//! as it folds it (`status.bad_child`: the first child entry naming no group).
//! It also checks the lengths against the children column: `status.bad_row` names the first row
//! whose range ends past `child_count`, or the last row when they fall short. Up to the first
//! such row the u32 offsets are the true prefix sums, so that row is found; a warp with one
//! writes nothing, and every other access stays inside the columns (the image is discarded).
//! A warp takes 32 consecutive rows: their children are one contiguous range, which it copies
//! with coalesced loads and stores before each thread folds its own row's (now cached) children.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void build_rows_kernel(raw_rows_ref rows, build_counters* counters,
                                   const std::uint32_t* sorted_rows, presence_bitmap groups,
                                   std::uint32_t* image) {
  const image_layout layout = image_layout::for_counts(
      rows.row_count, rows.child_count, static_cast<std::uint32_t>(counters->groups));
  const std::uint32_t* const offsets = image + layout.offset(image_column::row_children_offsets);
  const std::uint32_t* const __restrict__ in_children = rows.children;
  std::uint32_t* const __restrict__ out_children = image + layout.offset(image_column::children);
  const unsigned lane = threadIdx.x % 32u;
  // The loop bound is the same for the whole warp (its first row), so the shuffles see all lanes.
  for (std::uint64_t first = blockIdx.x * std::uint64_t{blockDim.x} + (threadIdx.x - lane);
       first < rows.row_count; first += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t i = first + lane;
    const bool live = i < rows.row_count;
    const auto r = static_cast<std::uint32_t>(live ? i : first);
    // Every load before the first store: the columns may alias as far as the compiler knows,
    // and a load after a store would wait for it.
    const std::uint32_t length = live ? rows.row_children_lens[r] : 0;
    const std::uint32_t offset = offsets[r];
    const std::uint32_t row_eclass = rows.row_eclass_ids[r];
    const std::uint32_t row_op = rows.row_language_op_ids[r];
    const std::uint32_t group_row = sorted_rows[r];
    const std::uint64_t row_end = std::uint64_t{offset} + length;
    const bool past_column = live && row_end > rows.child_count;
    const bool short_column = live && r == rows.row_count - 1 && row_end < rows.child_count;
    const unsigned bad_lanes = __ballot_sync(0xFFFFFFFFu, past_column || short_column);
    if (bad_lanes != 0) {
      if (lane == static_cast<unsigned>(__ffs(bad_lanes) - 1))
        atomicMin(&counters->status.bad_row, r);
      continue;
    }
    const std::uint32_t begin = __shfl_sync(0xFFFFFFFFu, offset, 0);
    const std::uint32_t full_warp_end = __shfl_sync(0xFFFFFFFFu, offset + length, 31);
    // A partial warp holds the last row, whose children end the column.
    const std::uint64_t end = first + 32 <= rows.row_count ? full_warp_end : rows.child_count;
    for (std::uint64_t k = begin + lane; k < end; k += 32) out_children[k] = in_children[k];
    if (!live) continue;
    std::uint32_t signature = egraph::row_signature_begin(row_op, length);
    for (std::uint32_t k = 0; k < length; ++k) {
      const std::uint32_t child = in_children[offset + k];
      signature = egraph::row_signature_fold(signature, child);
      if (groups.words != nullptr && !groups.contains(child))
        atomicMin(&counters->status.bad_child, offset + k);
    }
    image[layout.offset(image_column::row_eclass_ids) + r] = row_eclass;
    image[layout.offset(image_column::row_language_op_ids) + r] = row_op;
    image[layout.offset(image_column::row_children_lens) + r] = length;
    image[layout.offset(image_column::row_signatures) + r] = signature;
    image[layout.offset(image_column::group_rows) + r] = group_row;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0)
    image[layout.offset(image_column::group_offsets) + layout.group_count] = rows.row_count;
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
    if ((threadIdx.x & 31u) == static_cast<unsigned>(__ffs(same_word) - 1))
      atomicOr(&present[word], bits);
#else
    atomicOr(&present[word], bit);
#endif
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

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void init_build_counters_kernel(build_counters* counters) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    counters->status = clean_status;
    counters->groups = 0;
    counters->largest_id = 0;
  }
}

//! The lengths do not add up to `child_count`; `bad_row` is the first row whose children range
//! runs past the column, or the last row when they fall short. Error path only: it reads the
//! lengths back to report their sum too (left out if that readback fails).
inline error build_length_error(const runtime_ref& runtime, const raw_rows_ref& rows,
                                std::uint32_t bad_row, cudaStream_t stream) {
  error reported = error(errc::out_of_range,
                         "build: a row's children range does not match the children column "
                         "(the lengths must add up to child_count)");
  reported.with("row", bad_row).with("child_count", rows.child_count);
  std::vector<std::uint32_t> lengths;
  if (try_resize(lengths, rows.row_count, "build: read lengths") &&
      copy_to_host(runtime, lengths.data(), rows.row_children_lens, rows.row_count, stream,
                   "build: read lengths")) {
    std::uint64_t length_sum = 0;
    for (const std::uint32_t length : lengths) length_sum += length;
    reported.with("length_sum", length_sum);
  }
  return reported.fix(
      "pass the children of every row concatenated in row order, and "
      "child_count = sum of row_children_lens");
}

inline error build_child_error(const device_status& status) {
  return error(errc::not_found, "build: a child names an e-class that has no row")
      .with("child_entry", status.bad_child)
      .fix("add a row for that e-class or drop the child");
}

}  // namespace detail

namespace detail {

//! What a build keeps between calls (see `build_workspace`), and the one-shot build's
//! temporaries (exact sizes, pageable readbacks).
class build_state {
 public:
  build_state(const runtime_ref& runtime, cudaStream_t stream, bool pinned) noexcept
      : runtime_(runtime), stream_(stream), pinned_(pinned) {}
  build_state(build_state&&) noexcept = default;
  build_state& operator=(build_state&&) noexcept = default;
  ~build_state() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  cudaStream_t stream() const noexcept { return stream_; }
  const runtime_ref& runtime() const noexcept { return runtime_; }
  //! Rows the sort temporaries hold without reallocating.
  std::uint32_t capacity() const noexcept { return capacity_; }

  //! Allocates for `rows` rows now (the first `build` does it otherwise; the child check's
  //! bitmap comes with the first checked build).
  //! @throws nothing; errors: more than INT_MAX rows (`errc::abi_limit`), allocation failures.
  expected<void> reserve(std::uint32_t rows) {
    if (rows > static_cast<std::uint32_t>(INT_MAX))
      return fail(
          error(errc::abi_limit, "build_workspace: too many rows for CUB's run-length encode")
              .with("rows", rows)
              .with("max_rows", INT_MAX)
              .fix("shard the e-graph into parts of at most 2^31 - 1 rows"));
    VYRE_TRY(reserve_head(rows));
    return reserve_tail(rows);
  }

 private:
  friend expected<egraph::device_image> build_into(const raw_rows_ref& rows, build_state& state,
                                                   child_check check);
  using u32_buffer = device_array<std::uint32_t>;

  //! What the first kernels need: counters, row ids, scratch (and the pinned slot and event).
  expected<void> reserve_head(std::uint32_t rows) {
    const char* what = "build: workspace";
    if (counters_.get() == nullptr) {
      VYRE_TRY_ASSIGN(counters_, runtime_.allocate<build_counters>(1, stream_, what));
    }
    if (pinned_ && readback_.get() == nullptr) {
      VYRE_TRY_ASSIGN(readback_, pinned_array<build_counters>::allocate(runtime_, 1, what));
      VYRE_TRY_ASSIGN(id_range_read_, runtime_.events->acquire());
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
    const std::size_t need =
        (std::max)({max_bytes, sort_bytes, rle_bytes, scan_bytes, std::size_t{1}});
    if (need > scratch_.size()) {
      VYRE_TRY_ASSIGN(scratch_,
                      runtime_.allocate<unsigned char>(need, stream_, "build: CUB scratch"));
    }
    return {};
  }

  //! What the sort and the groups need (allocated while the first kernels run).
  expected<void> reserve_tail(std::uint32_t rows) {
    const char* what = "build: workspace";
    if (rows <= capacity_) return {};
    std::size_t held = SIZE_MAX;
    for (u32_buffer* b : {&sorted_ids_, &sorted_rows_, &counts_}) {
      VYRE_TRY(ensure(*b, rows, what));
      held = (std::min)(held, b->size());
    }
    capacity_ = static_cast<std::uint32_t>(held);  // grown() keeps sizes within INT_MAX
    return {};
  }

  //! `buffer` holding at least `items` words (grown, contents dropped).
  expected<void> ensure(u32_buffer& buffer, std::size_t items, const char* what) {
    if (items <= buffer.size()) return {};
    VYRE_TRY_ASSIGN(buffer,
                    runtime_.allocate<std::uint32_t>(grown(items, buffer.size()), stream_, what));
    return {};
  }

  //! Repeated builds grow by half again, so a slowly growing e-graph reallocates rarely;
  //! a one-shot workspace takes exactly what it needs.
  std::size_t grown(std::size_t items, std::size_t current) const noexcept {
    if (!pinned_) return items;
    return (std::min)(std::size_t{INT_MAX}, (std::max)(items, current + current / 2));
  }

  runtime_ref runtime_;
  cudaStream_t stream_ = nullptr;
  bool pinned_ = true;
  std::uint32_t capacity_ = 0;
  std::uint32_t identity_rows_ = 0;  // row_ids_[0, identity_rows_) hold 0, 1, 2, ...
  u32_buffer row_ids_, sorted_ids_, sorted_rows_, counts_;
  u32_buffer present_;  // the child check's bitmap
  device_array<build_counters> counters_;
  device_array<unsigned char> scratch_;
  pinned_array<build_counters> readback_;
  event_lease id_range_read_;
};

}  // namespace detail

//! Reusable temporaries for repeated `build` calls on one stream: the sort and group buffers,
//! the child check's presence bitmap, the CUB scratch and a page-locked readback slot (from the
//! backend's pinned pool), grown as inputs need (never shrunk). With a warm workspace a build
//! allocates only its image (while the host waits for the id range) and writes no row ids.
//! All of it comes from the backend's allocation policy, pinned pool and event pool.
//! @note Bound to the backend and stream it was made for; not thread-safe. Memory is freed in
//!       stream order on that stream: keep the stream and the backend alive until the
//!       workspace is destroyed.
template <policy_bundle P = policies<>>
class build_workspace {
 public:
  template <class T>
  using result = typename backend<P>::template result<T>;

  build_workspace(backend<P>& gpu, cudaStream_t stream) noexcept
      : state_(detail::runtime_of(gpu), stream, true) {}
  build_workspace(build_workspace&&) noexcept = default;
  build_workspace& operator=(build_workspace&&) noexcept = default;
  ~build_workspace() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  cudaStream_t stream() const noexcept { return state_.stream(); }
  //! Rows the sort temporaries hold without reallocating.
  std::uint32_t capacity() const noexcept { return state_.capacity(); }

  //! Allocates for `rows` rows now (the first `build` does it otherwise; the child check's
  //! bitmap comes with the first checked build).
  //! @throws / returns (error policy) more than INT_MAX rows (`errc::abi_limit`), allocation
  //!         failures (`errc::out_of_memory`).
  result<void> reserve(std::uint32_t rows) {
    return apply_error_policy<typename P::error_policy>(state_.reserve(rows));
  }

  //! The workspace's state, for the algorithms.
  detail::build_state& state() noexcept { return state_; }

 private:
  detail::build_state state_;
};

namespace detail {
inline expected<egraph::device_image> build_into(const raw_rows_ref& rows, build_state& workspace,
                                                 child_check check) {
  using detail::block_size;
  using detail::grid_for;
  const runtime_ref& runtime = workspace.runtime_;
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
    VYRE_TRY_ASSIGN(auto words, runtime.allocate<std::uint32_t>(1, stream, "build: image"));
    VYRE_CUDA_TRY(cudaMemsetAsync(words.get(), 0, sizeof(std::uint32_t), stream), "build: image");
    return egraph::device_image(std::move(words), image_layout::for_counts(0, 0, 0));
  }

  VYRE_TRY(workspace.reserve_head(R));
  build_state& w = workspace;
  detail::build_counters* const on_device = w.counters_.get();
  int* const groups_out = &on_device->groups;
  const std::size_t scratch_bytes = w.scratch_.size();
  detail::build_counters pageable{};
  detail::build_counters* const seen = w.readback_.get() != nullptr ? w.readback_.get() : &pageable;
  const bool checked = check == child_check::on && rows.child_count != 0;

  // The id range first: the sort needs its bit width.
  detail::init_build_counters_kernel<><<<1, 1, 0, stream>>>(on_device);
  VYRE_TRY(detail::launched("build: init counters"));
  std::size_t bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceReduce::Max(w.scratch_.get(), bytes, rows.row_eclass_ids,
                                       &on_device->largest_id, R, stream),
                "build: e-class id range (cub::DeviceReduce::Max)");
  // Enqueued while the host waits for the id range: the row ids the sort carries along (unless
  // the workspace holds them), then the sort temporaries and the image (sized for one group
  // per row: the count comes later).
  const image_layout largest = image_layout::for_counts(R, rows.child_count, R);
  device_array<std::uint32_t> image_words;
  const auto row_ids_and_allocations = [&]() -> expected<void> {
    if (w.identity_rows_ < R) {
      detail::iota_kernel<><<<grid_for(R), block_size, 0, stream>>>(w.row_ids_.get(), R);
      VYRE_TRY(detail::launched("build: row ids"));
      w.identity_rows_ = R;
    }
    VYRE_TRY(w.reserve_tail(R));
    VYRE_TRY_ASSIGN(image_words,
                    runtime.allocate<std::uint32_t>(static_cast<std::size_t>(largest.word_count()),
                                                    stream, "build: image"));
    return {};
  };
  if (seen != &pageable) {
    VYRE_CUDA_TRY(cudaMemcpyAsync(seen, on_device, sizeof(detail::build_counters),
                                  cudaMemcpyDeviceToHost, stream),
                  "build: read id range");
    VYRE_CUDA_TRY(cudaEventRecord(w.id_range_read_.get(), stream), "build: read id range");
    VYRE_TRY(row_ids_and_allocations());
    VYRE_CUDA_TRY(cudaEventSynchronize(w.id_range_read_.get()), "build: read id range");
    runtime.synced();
  } else {  // a pageable readback blocks the host: enqueue the rest first
    VYRE_TRY(row_ids_and_allocations());
    VYRE_TRY(detail::copy_to_host(runtime, seen, on_device, 1, stream, "build: read id range"));
  }
  const std::uint32_t largest_id = seen->largest_id;
  const int end_bit = (cuda::std::max)(1, cuda::std::bit_width(largest_id));
  std::uint32_t* const base = image_words.get();

  // Rows sorted by e-class (stable: ascending rows inside each class), then the groups. The
  // group ids go straight into the image: their column starts at 5R + C whatever the count.
  std::uint32_t* const group_ids = base + largest.offset(image_column::group_eclass_ids);
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(w.scratch_.get(), bytes, rows.row_eclass_ids,
                                                w.sorted_ids_.get(), w.row_ids_.get(),
                                                w.sorted_rows_.get(), R, 0, end_bit, stream),
                "build: group rows (cub::DeviceRadixSort::SortPairs)");
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(
      cub::DeviceRunLengthEncode::Encode(w.scratch_.get(), bytes, w.sorted_ids_.get(), group_ids,
                                         w.counts_.get(), groups_out, static_cast<int>(R), stream),
      "build: groups (cub::DeviceRunLengthEncode::Encode)");
  detail::presence_bitmap group_bitmap;
  if (checked && detail::bitmap_checks_children(largest_id, R)) {
    const std::uint32_t words = largest_id / 32 + 1;
    VYRE_TRY(w.ensure(w.present_, words, "build: child check bitmap"));
    VYRE_CUDA_TRY(
        cudaMemsetAsync(w.present_.get(), 0, std::size_t{words} * sizeof(std::uint32_t), stream),
        "build: child check bitmap");
    detail::mark_groups_kernel<>
        <<<grid_for(R), block_size, 0, stream>>>(group_ids, groups_out, w.present_.get());
    VYRE_TRY(detail::launched("build: child check bitmap"));
    group_bitmap = {w.present_.get(), largest_id};  // the rows kernel checks each child
  } else if (checked) {
    detail::check_children_kernel<><<<grid_for(rows.child_count), block_size, 0, stream>>>(
        rows.children, rows.child_count, group_ids, groups_out, &on_device->status);
    VYRE_TRY(detail::launched("build: child check"));
  }

  // The children offsets, then every column but the group offsets (the rows kernel reads the
  // group count on the device, and checks the lengths).
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(
                    w.scratch_.get(), bytes, rows.row_children_lens,
                    base + largest.offset(image_column::row_children_offsets), R, stream),
                "build: children offsets (cub::DeviceScan::ExclusiveSum)");
  detail::build_rows_kernel<><<<grid_for(R), block_size, 0, stream>>>(
      rows, on_device, w.sorted_rows_.get(), group_bitmap, base);
  VYRE_TRY(detail::launched("build: row columns, signatures, children and group rows"));
  VYRE_TRY(detail::copy_to_host(runtime, seen, on_device, 1, stream,
                                "build: read group count and checks"));
  if (seen->status.bad_row != 0xFFFFFFFFu)
    return fail(detail::build_length_error(runtime, rows, seen->status.bad_row, stream));
  if (seen->status.bad_child != 0xFFFFFFFFu) return fail(detail::build_child_error(seen->status));

  // The last column: G group offsets (the rows kernel wrote the closing one).
  const image_layout layout =
      image_layout::for_counts(R, rows.child_count, static_cast<std::uint32_t>(seen->groups));
  bytes = scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(w.scratch_.get(), bytes, w.counts_.get(),
                                              base + layout.offset(image_column::group_offsets),
                                              layout.group_count, stream),
                "build: group offsets (cub::DeviceScan::ExclusiveSum)");
  return egraph::device_image(std::move(image_words), layout);
}
}  // namespace detail

//! Builds the packed image of `rows` (device pointers) on the workspace's stream: the same
//! words the host pack writes for the same rows (children offsets = prefix sums of the
//! lengths; groups list rows ascending).
//!
//! Work: `cub::DeviceReduce::Max` (the id range -> the bits the sort needs; the host waits for
//! it while the row ids are written, unless a reused workspace holds them, and the image is
//! allocated), `cub::DeviceRadixSort::SortPairs` over those bits,
//! `cub::DeviceRunLengthEncode::Encode` (the group ids straight into the image), the child check
//! (when on: a presence bitmap of the group ids, which the rows kernel reads once per child, or
//! a binary search per child when the ids are too sparse for a bitmap, see
//! `detail::bitmap_checks_children`), `cub::DeviceScan::ExclusiveSum` for the children
//! offsets, one kernel for the row columns, signatures, children and group rows that also
//! checks the lengths, a second host wait (the group count and the checks), and
//! `cub::DeviceScan::ExclusiveSum` for the group offsets.
//! The image buffer is allocated before the count is known, for one group per row: up to
//! 2 * (R - G) words past `word_count()` are unused. The image's words are written in stream
//! order after the call returns: use it on the stream (or synchronise) like any other
//! stream-ordered result.
//! @pre `rows` points to device memory readable on the workspace's stream.
//! @throws / returns (the backend's error policy): lengths that do not add up to `child_count`
//!         (`errc::out_of_range`, naming the first row past the column), a child without rows
//!         (`errc::not_found`, when `check` is on), more than INT_MAX rows (`errc::abi_limit`),
//!         a workspace made from another backend (`errc::invalid_argument`), allocation
//!         failures (`errc::out_of_memory`), CUDA failures (`errc::cuda_runtime`). Nothing
//!         leaks; the workspace stays usable after an error.
template <policy_bundle P>
typename backend<P>::template result<egraph::device_image> build(
    backend<P>& gpu, const raw_rows_ref& rows, build_workspace<P>& workspace,
    child_check check = child_check::on) {
  auto run = [&]() -> expected<egraph::device_image> {
    VYRE_TRY(detail::same_backend(gpu, workspace.state().runtime(),
                                  "build: the workspace belongs to another backend"));
    return detail::build_into(rows, workspace.state(), check);
  };
  return apply_error_policy<typename P::error_policy>(run());
}

//! One-shot `build` on `stream`: temporaries from `gpu`'s allocation policy (exact sizes,
//! pageable readbacks, returned in stream order). Engines that build repeatedly keep a
//! `build_workspace` instead.
template <policy_bundle P>
typename backend<P>::template result<egraph::device_image> build(
    backend<P>& gpu, const raw_rows_ref& rows, cudaStream_t stream,
    child_check check = child_check::on) {
  detail::build_state once(detail::runtime_of(gpu), stream, false);
  return apply_error_policy<typename P::error_policy>(detail::build_into(rows, once, check));
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
