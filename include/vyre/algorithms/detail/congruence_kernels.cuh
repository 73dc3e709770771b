// SPDX-License-Identifier: Apache-2.0
//! @file
//! The congruence closure pipeline on the device, written once for the one-shot `congruence`
//! and `congruence_plan`: its kernels (they read the input from a device `plan_params` block, the
//! round kernels from their parameters in a one-shot call, and report through `plan_counters`)
//! and the functions that enqueue its three parts on a stream
//! (input checks; one round; the class map and rebuilt image). The plan captures the parts
//! into one graph per row bucket; the one-shot call enqueues them directly with bucket = rows.
//!
//! Per round: canonicalise every child through the flattened union-find (one load), re-sign
//! every row, radix-sort rows by signature, find each row's leader (the first row of its
//! signature run with equal op and children: full rows are compared, so a 32-bit collision
//! never merges different rows), hook the leader's and the row's e-classes with a lock-free
//! CAS (larger root under smaller, so a set's root is its smallest e-class), then flatten by
//! pointer jumping. The final round's leaders are the rows the rebuilt image keeps.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/atomic>
#include <cuda/functional>
#include <cuda/std/bit>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/plan_params.cuh"
#include "vyre/core/error.hpp"
#include "vyre/core/union_find.hpp"
#include "vyre/egraph/signature.hpp"

namespace vyre::algorithms::detail {

using atomic_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;

//! Joins the groups' sets of `a` and `b` in the union-find `parent` (`vyre::union_find_ref`,
//! whose roots are the smallest ids); a union that merged two sets counts and marks the round.
VYRE_DEVICE inline void hook(std::uint32_t* parent, std::uint32_t groups, std::uint32_t a,
                             std::uint32_t b, device_status* status) noexcept {
  if (!union_find_ref{parent, groups}.unite(a, b)) return;
  atomicAdd(&status->merges, 1ull);
  status->changed = 1;
}

//! run_start[p] = p where a new signature starts, else 0 (a max-scan then spreads it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void run_heads_kernel(const std::uint32_t* sorted_keys, std::uint32_t* run_start,
                                  std::uint32_t count) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto p = static_cast<std::uint32_t>(i);
    run_start[p] = (p == 0 || sorted_keys[p] != sorted_keys[p - 1]) ? p : 0;
  }
}

VYRE_DEVICE inline bool same_canonical_row(const image_columns& image, const std::uint32_t* canon,
                                           std::uint32_t a, std::uint32_t b) noexcept {
  const std::uint32_t length = image.row_children_lens()[a];
  if (image.row_language_op_ids()[a] != image.row_language_op_ids()[b] ||
      length != image.row_children_lens()[b])
    return false;
  const std::uint32_t* ca = canon + image.row_children_offsets()[a];
  const std::uint32_t* cb = canon + image.row_children_offsets()[b];
  for (std::uint32_t k = 0; k < length; ++k)
    if (ca[k] != cb[k]) return false;
  return true;
}

//! Input checks and the dense indices: rows' children ranges, children naming groups,
//! dense_row / parent. Every later kernel does nothing when an input check failed.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void congruence_setup_kernel(const plan_params* params, std::uint32_t* dense_row,
                                         std::uint32_t* parent, device_status* status) {
  const image_columns image = params->image;
  VYRE_DETAIL_GRID_LOOP(i, image.row_count())
  if (std::uint64_t{image.row_children_offsets()[i]} + image.row_children_lens()[i] >
      image.child_count())
    atomicMin(&status->bad_row, static_cast<std::uint32_t>(i));
  VYRE_DETAIL_GRID_LOOP(i, image.group_count()) {
    const auto g = static_cast<std::uint32_t>(i);
    parent[g] = g;
    for (std::uint32_t k = image.group_offsets()[g]; k < image.group_offsets()[g + 1]; ++k)
      dense_row[image.group_rows()[k]] = g;
  }
}

//! Canonical children (dense class of each child's representative); clears the round's flag.
//! `Image`: `image_from_block` or `image_by_value` (see there), for this and the round's other
//! kernels.
template <class Image>
VYRE_KERNEL void canonicalise_kernel(Image input, const std::uint32_t* dense_child,
                                     const std::uint32_t* parent, std::uint32_t* canon,
                                     device_status* status) {
  // Inputs read once into registers (the stores below may alias the parameter block as far as
  // the compiler knows), and both loads issued before the branch: one latency, not two, in
  // front of a two-load body.
  const bool ok = input_ok(status);
  const std::uint32_t children = input.get().child_count();
  if (!ok) return;
  if (blockIdx.x == 0 && threadIdx.x == 0) status->changed = 0;  // read after this round
  VYRE_DETAIL_GRID_LOOP(i, children) canon[i] = parent[dense_child[i]];
}

//! Sort keys over the whole bucket: real rows their signature, padding rows the largest key
//! (stable sort: padding lands after every real row, even one whose signature is the max).
template <class Image, class Signature>
VYRE_KERNEL void sign_kernel(Image input, const std::uint32_t* canon, Signature signature,
                             std::uint32_t bucket, std::uint32_t* keys, std::uint32_t* rows,
                             const device_status* status) {
  // A rejected input still gets defined keys (all padding): the sort after this reads them.
  const bool ok = input_ok(status);
  const image_columns image = input.get();
  const std::uint32_t real_rows = ok ? image.row_count() : 0u;
  VYRE_DETAIL_GRID_LOOP(i, bucket) {
    const auto r = static_cast<std::uint32_t>(i);
    keys[r] = r < real_rows
                  ? signature(image.row_language_op_ids()[r],
                              canon + image.row_children_offsets()[r], image.row_children_lens()[r])
                  : 0xFFFFFFFFu;
    rows[r] = r;
  }
}

//! Leaders and unions over the bucket's sorted positions; padding positions (rows >= R, all
//! after the real ones) only clear their flag.
template <class Image>
VYRE_KERNEL void leaders_kernel(Image input, const std::uint32_t* canon,
                                const std::uint32_t* sorted_rows, const std::uint32_t* run_start,
                                const std::uint32_t* dense_row, std::uint32_t* parent,
                                std::uint8_t* leader_flag, std::uint32_t bucket,
                                device_status* status) {
  // A rejected input still gets defined flags (none lead): the selection after this reads them.
  const bool ok = input_ok(status);
  const image_columns image = input.get();
  VYRE_DETAIL_GRID_LOOP(i, bucket) {
    const auto p = static_cast<std::uint32_t>(i);
    const std::uint32_t r = sorted_rows[p];
    if (!ok || r >= image.row_count()) {
      leader_flag[r] = 0;
      continue;
    }
    std::uint32_t leader = r;
    for (std::uint32_t q = run_start[p]; q < p; ++q)
      if (same_canonical_row(image, canon, sorted_rows[q], r)) {
        leader = sorted_rows[q];
        break;
      }
    leader_flag[r] = leader == r ? 1 : 0;
    if (leader != r) hook(parent, image.group_count(), dense_row[r], dense_row[leader], status);
  }
}

template <class Image>
VYRE_KERNEL void flatten_kernel(Image input, std::uint32_t* parent, const device_status* status) {
  const bool ok = input_ok(status);  // both loads before the branch (see canonicalise_kernel)
  const std::uint32_t groups = input.get().group_count();
  if (!ok) return;
  VYRE_DETAIL_GRID_LOOP(i, groups) {
    const auto g = static_cast<std::uint32_t>(i);
    atomic_u32(parent[g]).store(union_find_ref{parent, groups}.find(g),
                                cuda::std::memory_order_relaxed);
  }
}

//! End of a round: count it; go on while it merged, the input is fine and fewer than G + 1
//! rounds ran (then `changed` stays set and the host reports it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void congruence_continue_kernel(cudaGraphConditionalHandle handle,
                                            const plan_params* params, plan_counters* counters) {
  const bool ok = input_ok(&counters->status);
  const std::uint32_t done = ok ? ++counters->rounds : counters->rounds;
  const std::uint64_t limit = std::uint64_t{params->image.group_count()} + 1;
  cudaGraphSetConditional(handle, ok && counters->status.changed != 0 && done < limit ? 1u : 0u);
}

//! The class map, and each kept row's rebuilt columns (e-class = representative id), its
//! grouping key (the dense representative) and row id; padding rows get length 0 and the
//! largest key.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void gather_kept_kernel(const plan_params* params, const std::uint32_t* kept,
                                    const std::uint32_t* dense_row, const std::uint32_t* parent,
                                    std::uint32_t bucket, std::uint32_t pad_key,
                                    std::uint32_t* class_ids, std::uint32_t* representative,
                                    std::uint32_t* eclass, std::uint32_t* op, std::uint32_t* lens,
                                    std::uint32_t* group_key, std::uint32_t* row_ids,
                                    const plan_counters* counters) {
  // A rejected input still gets defined sort input (all padding): the sorts after this read it.
  const bool ok = input_ok(&counters->status);
  const image_columns image = params->image;
  const std::uint32_t K = ok ? counters->kept : 0u;
  if (ok) VYRE_DETAIL_GRID_LOOP(i, image.group_count()) {
      class_ids[i] = image.group_eclass_ids()[i];
      representative[i] = image.group_eclass_ids()[parent[i]];
    }
  VYRE_DETAIL_GRID_LOOP(i, bucket) {
    row_ids[i] = static_cast<std::uint32_t>(i);
    if (i < K) {
      const std::uint32_t r = kept[i];
      const std::uint32_t root = parent[dense_row[r]];
      eclass[i] = image.group_eclass_ids()[root];
      op[i] = image.row_language_op_ids()[r];
      lens[i] = image.row_children_lens()[r];
      group_key[i] = root;
    } else {
      lens[i] = 0;
      group_key[i] = pad_key;
    }
  }
}

//! The rebuilt children (canonical, as original ids) and signatures; the last kept row records
//! the rebuilt child count.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void rebuilt_children_kernel(const plan_params* params, const std::uint32_t* kept,
                                         const std::uint32_t* canon, const std::uint32_t* op,
                                         const std::uint32_t* lens, const std::uint32_t* offsets,
                                         std::uint32_t* children, std::uint32_t* signatures,
                                         plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const image_columns image = params->image;
  const std::uint32_t K = counters->kept;
  if (K == 0 && blockIdx.x == 0 && threadIdx.x == 0) counters->rebuilt_children = 0;
  VYRE_DETAIL_GRID_LOOP(i, K) {
    const std::uint32_t r = kept[i];
    const std::uint32_t* from = canon + image.row_children_offsets()[r];
    std::uint32_t* to = children + offsets[i];
    const std::uint32_t length = lens[i];
    for (std::uint32_t k = 0; k < length; ++k) to[k] = image.group_eclass_ids()[from[k]];
    signatures[i] = egraph::row_signature(op[i], to, length);
    if (i + 1 == K) counters->rebuilt_children = offsets[i] + length;
  }
}

//! The rebuilt group ids from the grouping sort's runs (the padding run, when there is one,
//! is the last and is dropped).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void rebuilt_groups_kernel(const plan_params* params, const std::uint32_t* run_keys,
                                       std::uint32_t bucket, std::uint32_t* group_ids,
                                       plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const std::uint32_t K = counters->kept;
  const auto runs = static_cast<std::uint32_t>(counters->runs);
  const std::uint32_t groups = K < bucket ? runs - 1 : runs;
  if (blockIdx.x == 0 && threadIdx.x == 0) counters->rebuilt_groups = groups;
  const std::uint32_t* const ids = params->image.group_eclass_ids();
  VYRE_DETAIL_GRID_LOOP(g, groups) group_ids[g] = ids[run_keys[g]];
}

inline error congruence_input_error(const device_status& status, const image_columns& image) {
  if (status.bad_row != 0xFFFFFFFFu)
    return error(errc::out_of_range,
                 "congruence: a row's children range ends past the children column")
        .with("row", status.bad_row)
        .with("child_count", image.child_count())
        .fix("pass a packed image built by pack or build");
  return error(errc::not_found, "congruence: a child names an e-class that has no row")
      .with("child_entry", status.bad_child)
      .fix("add a row for that e-class or drop the child");
}

//! The device memory one congruence pipeline works in, `bucket` rows and the children
//! (a plan's storage, or a one-shot call's temporaries; owned elsewhere). Per-row buffers hold
//! `bucket` elements, `counts` and the rebuilt offsets `bucket + 1`, the child buffers the
//! children.
struct congruence_buffers {
  const plan_params* params = nullptr;
  plan_counters* counters = nullptr;
  std::uint32_t* dense_row = nullptr;
  std::uint32_t* parent = nullptr;
  std::uint32_t* dense_child = nullptr;
  std::uint32_t* canon = nullptr;
  std::uint32_t* keys = nullptr;
  std::uint32_t* rows = nullptr;
  std::uint32_t* sorted_keys = nullptr;
  std::uint32_t* sorted_rows = nullptr;
  std::uint32_t* run_start = nullptr;
  std::uint32_t* counts = nullptr;
  std::uint8_t* leader_flag = nullptr;
  std::uint32_t* class_ids = nullptr;
  std::uint32_t* representative = nullptr;
  std::uint32_t* kept = nullptr;
  //! The rebuilt image's nine columns (`image_column` order), each with room for `bucket` rows.
  std::uint32_t* rebuilt[egraph::image_column_count] = {};
  unsigned char* scratch = nullptr;
  std::size_t scratch_bytes = 0;

  std::uint32_t* out(image_column column) const noexcept {
    return rebuilt[static_cast<std::size_t>(column)];
  }
};

//! Launch grids of one pipeline: over the bucket's rows, the children, and the groups (the
//! union-find; a plan, which does not know the group count when it captures, uses its rows).
struct congruence_grids {
  unsigned rows = 1;
  unsigned children = 1;
  unsigned groups = 1;
};

//! The bits of the rebuilt grouping sort (dense representatives < bucket) and the key that
//! sorts padding rows after every real one.
inline int group_sort_bits(std::uint32_t bucket) noexcept {
  return (cuda::std::max)(1, cuda::std::bit_width(bucket));
}
inline std::uint32_t group_pad_key(std::uint32_t bucket) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t{1} << group_sort_bits(bucket)) - 1);
}

//! CUB scratch for every sort, scan, selection and run-length encode of a `bucket`-row run.
inline expected<std::size_t> congruence_scratch_bytes(const congruence_buffers& b,
                                                      std::uint32_t bucket, cudaStream_t stream) {
  const std::uint32_t n = bucket;
  std::size_t bytes = 1, need = 0;
  const auto keep = [&]() { bytes = (std::max)(bytes, need); };
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, need, b.keys, b.sorted_keys, b.rows,
                                                b.sorted_rows, n, 0, 32, stream),
                "congruence: scratch size (cub::DeviceRadixSort::SortPairs)");
  keep();
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, need, b.keys, b.rows, b.sorted_keys,
                                                b.out(image_column::group_rows), n, 0,
                                                group_sort_bits(n), stream),
                "congruence: scratch size (cub::DeviceRadixSort::SortPairs)");
  keep();
  VYRE_CUDA_TRY(cub::DeviceScan::InclusiveScan(nullptr, need, b.run_start, b.run_start,
                                               cuda::maximum<std::uint32_t>{}, n, stream),
                "congruence: scratch size (cub::DeviceScan::InclusiveScan)");
  keep();
  VYRE_CUDA_TRY(cub::DeviceSelect::Flagged(nullptr, need, b.rows, b.leader_flag, b.kept,
                                           &b.counters->kept, n, stream),
                "congruence: scratch size (cub::DeviceSelect::Flagged)");
  keep();
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, need, b.out(image_column::row_children_lens),
                                              b.out(image_column::row_children_offsets), n, stream),
                "congruence: scratch size (cub::DeviceScan::ExclusiveSum)");
  keep();
  VYRE_CUDA_TRY(
      cub::DeviceRunLengthEncode::Encode(nullptr, need, b.sorted_keys, b.run_start, b.counts,
                                         &b.counters->runs, static_cast<int>(n), stream),
      "congruence: scratch size (cub::DeviceRunLengthEncode::Encode)");
  keep();
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, need, b.counts,
                                              b.out(image_column::group_offsets), n + 1, stream),
                "congruence: scratch size (cub::DeviceScan::ExclusiveSum)");
  keep();
  return bytes;
}

//! Part 1: clean counters, input checks and the dense indices.
inline expected<void> enqueue_congruence_checks(const congruence_buffers& b,
                                                const congruence_grids& grids, cudaStream_t on) {
  init_counters_kernel<><<<1, 1, 0, on>>>(b.counters);
  VYRE_TRY(launched("congruence: init counters"));
  congruence_setup_kernel<>
      <<<grids.rows, block_size, 0, on>>>(b.params, b.dense_row, b.parent, &b.counters->status);
  VYRE_TRY(launched("congruence: input checks and dense rows"));
  dense_children_kernel<>
      <<<grids.children, block_size, 0, on>>>(b.params, b.dense_child, &b.counters->status);
  return launched("congruence: dense children");
}

//! Part 2: one round over `bucket` rows (the caller decides whether another runs: a flag
//! readback, or `enqueue_congruence_continue` inside a WHILE body). `input`: where the kernels
//! read the image (`image_from_block{b.params}` in a plan, `image_by_value` in a one-shot call).
template <class Image, class Signature>
expected<void> enqueue_congruence_round(const congruence_buffers& b, Image input,
                                        std::uint32_t bucket, const congruence_grids& grids,
                                        Signature signature, cudaStream_t on) {
  device_status* const status = &b.counters->status;
  canonicalise_kernel<<<grids.children, block_size, 0, on>>>(input, b.dense_child, b.parent,
                                                             b.canon, status);
  VYRE_TRY(launched("congruence: canonicalise children"));
  sign_kernel<<<grids.rows, block_size, 0, on>>>(input, b.canon, signature, bucket, b.keys, b.rows,
                                                 status);
  VYRE_TRY(launched("congruence: sign rows"));
  std::size_t bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(b.scratch, bytes, b.keys, b.sorted_keys, b.rows,
                                                b.sorted_rows, bucket, 0, 32, on),
                "congruence: sort rows by signature (cub::DeviceRadixSort::SortPairs)");
  run_heads_kernel<><<<grids.rows, block_size, 0, on>>>(b.sorted_keys, b.run_start, bucket);
  VYRE_TRY(launched("congruence: signature runs"));
  bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::InclusiveScan(b.scratch, bytes, b.run_start, b.run_start,
                                               cuda::maximum<std::uint32_t>{}, bucket, on),
                "congruence: signature run starts (cub::DeviceScan::InclusiveScan)");
  leaders_kernel<<<grids.rows, block_size, 0, on>>>(input, b.canon, b.sorted_rows, b.run_start,
                                                    b.dense_row, b.parent, b.leader_flag, bucket,
                                                    status);
  VYRE_TRY(launched("congruence: leaders and unions"));
  flatten_kernel<<<grids.groups, block_size, 0, on>>>(input, b.parent, status);
  return launched("congruence: flatten");
}

//! The WHILE body's last node: count the round, run another while it merged.
inline expected<void> enqueue_congruence_continue(const congruence_buffers& b,
                                                  cudaGraphConditionalHandle handle,
                                                  cudaStream_t on) {
  congruence_continue_kernel<><<<1, 1, 0, on>>>(handle, b.params, b.counters);
  return launched("congruence: WHILE condition");
}

//! Part 3: the class map and the rebuilt image (the final round's leaders in row order,
//! canonical, regrouped by representative, re-signed) into `b.rebuilt`; the counters get its
//! row, child and group counts.
inline expected<void> enqueue_congruence_rebuild(const congruence_buffers& b, std::uint32_t bucket,
                                                 const congruence_grids& grids, cudaStream_t on) {
  plan_counters* const counters = b.counters;
  // Kept rows: the final round's leaders in row order (`rows` holds 0..bucket-1 from the sign
  // pass; padding rows are never flagged).
  std::size_t bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceSelect::Flagged(b.scratch, bytes, b.rows, b.leader_flag, b.kept,
                                           &counters->kept, bucket, on),
                "congruence: kept rows (cub::DeviceSelect::Flagged)");
  gather_kept_kernel<><<<grids.rows, block_size, 0, on>>>(
      b.params, b.kept, b.dense_row, b.parent, bucket, group_pad_key(bucket), b.class_ids,
      b.representative, b.out(image_column::row_eclass_ids),
      b.out(image_column::row_language_op_ids), b.out(image_column::row_children_lens), b.keys,
      b.sorted_keys, counters);
  VYRE_TRY(launched("congruence: class map and kept rows"));
  bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(
      cub::DeviceScan::ExclusiveSum(b.scratch, bytes, b.out(image_column::row_children_lens),
                                    b.out(image_column::row_children_offsets), bucket, on),
      "congruence: rebuilt offsets (cub::DeviceScan::ExclusiveSum)");
  rebuilt_children_kernel<><<<grids.rows, block_size, 0, on>>>(
      b.params, b.kept, b.canon, b.out(image_column::row_language_op_ids),
      b.out(image_column::row_children_lens), b.out(image_column::row_children_offsets),
      b.out(image_column::children), b.out(image_column::row_signatures), counters);
  VYRE_TRY(launched("congruence: rebuilt children and signatures"));
  // Group the kept rows by representative: the dense representative orders like its id.
  bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(b.scratch, bytes, b.keys, b.rows, b.sorted_keys,
                                                b.out(image_column::group_rows), bucket, 0,
                                                group_sort_bits(bucket), on),
                "congruence: rebuilt groups (cub::DeviceRadixSort::SortPairs)");
  bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(b.scratch, bytes, b.rows, b.run_start, b.counts,
                                                   &counters->runs, static_cast<int>(bucket), on),
                "congruence: rebuilt group sizes (cub::DeviceRunLengthEncode::Encode)");
  bytes = b.scratch_bytes;
  VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(b.scratch, bytes, b.counts,
                                              b.out(image_column::group_offsets), bucket + 1, on),
                "congruence: rebuilt group offsets (cub::DeviceScan::ExclusiveSum)");
  rebuilt_groups_kernel<><<<grids.rows, block_size, 0, on>>>(
      b.params, b.run_start, bucket, b.out(image_column::group_eclass_ids), counters);
  return launched("congruence: rebuilt group ids");
}

//! The rebuilt image's counts from the counters a run read back.
inline image_counts rebuilt_counts(const plan_counters& seen, const image_columns& input) noexcept {
  if (input.row_count() == 0) return image_layout::for_counts(0, 0, 0).counts();
  return image_layout::for_counts(seen.kept, seen.rebuilt_children, seen.rebuilt_groups).counts();
}

//! The error a run's counters report, if any (input checks first).
inline expected<void> congruence_outcome(const plan_counters& seen, const image_columns& input) {
  if (seen.status.bad_row != 0xFFFFFFFFu || seen.status.bad_child != 0xFFFFFFFFu)
    return fail(congruence_input_error(seen.status, input));
  if (seen.status.changed != 0)
    return fail(error(errc::invalid_state, "congruence: more rounds than e-classes (a library bug)")
                    .with("rounds", seen.rounds)
                    .with("classes", input.group_count())
                    .fix("report this with the input"));
  return {};
}
}  // namespace vyre::algorithms::detail
