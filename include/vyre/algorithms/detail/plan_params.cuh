// SPDX-License-Identifier: Apache-2.0
//! @file
//! What the congruence and extraction pipelines share, one-shot or planned: the parameter block
//! their kernels read the input from (`plan_params`), the counters they write and the host
//! reads back in one transfer (`plan_counters`), and the host checks and staging of an input.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/parallel.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::algorithms::detail {

//! What every pipeline kernel reads from device memory: the input of the current call.
struct plan_params {
  image_columns image;                   //!< device columns and counts of the input image
  const double* node_cost = nullptr;     //!< extraction: one cost per row (device)
  const std::uint32_t* roots = nullptr;  //!< extraction: root e-class ids (device)
  std::uint32_t root_count = 0;
};

//! Where a round kernel reads the input image's columns. A plan's captured graph serves every
//! input of its capacity, so its kernels read the device parameter block that each run rewrites
//! (`image_from_block`). A one-shot call knows its input when it launches and passes the columns
//! in the kernel's own parameters (`image_by_value`): one dependent device load less in front of
//! every thread's work, which the round kernels (a thread per row or child) pay per item.
struct image_from_block {
  const plan_params* params = nullptr;
  VYRE_DEVICE image_columns get() const noexcept { return params->image; }
};
struct image_by_value {
  image_columns image;
  VYRE_DEVICE image_columns get() const noexcept { return image; }
};

//! What a run writes and the host reads back in one transfer.
struct plan_counters {
  device_status status;
  std::uint32_t rounds = 0;
  std::uint32_t kept = 0;              //!< congruence: rows of the rebuilt image
  std::uint32_t rebuilt_children = 0;  //!< congruence: its child entries
  std::uint32_t rebuilt_groups = 0;    //!< congruence: its groups
  int runs = 0;                        //!< congruence: runs of the grouping sort (padding included)
  std::uint32_t reserved = 0;
  double root_cost = 0;  //!< extraction: sum of the roots' costs
};

VYRE_DEVICE inline bool input_ok(const device_status* status) noexcept {
  return status->bad_row == 0xFFFFFFFFu && status->bad_child == 0xFFFFFFFFu;
}

//! The dense class of every child entry (binary search of its e-class id among the groups'
//! ids); an unknown id sets `bad_child` (the smallest such entry) and maps to class 0. Shared
//! by congruence and extraction, launched on a grid over the children (a thread per entry:
//! each search is a chain of dependent loads).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void dense_children_kernel(const plan_params* params, std::uint32_t* dense_child,
                                       device_status* status) {
  const image_columns image = params->image;  // read once (the stores below may alias it)
  VYRE_DETAIL_GRID_LOOP(i, image.child_count()) {
    const std::uint32_t g =
        find_sorted(image.group_eclass_ids(), image.group_count(), image.children()[i]);
    if (g == image.group_count()) {
      atomicMin(&status->bad_child, static_cast<std::uint32_t>(i));
      dense_child[i] = 0;
    } else {
      dense_child[i] = g;
    }
  }
}

//! Starts a run: clean status, zero counters.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void init_counters_kernel(plan_counters* counters) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *counters = plan_counters{clean_status};
}

inline expected<void> check_image_counts(const image_columns& image, const char* what) {
  if (image.group_count() > image.row_count())
    return fail(error(errc::invalid_layout, what)
                    .with("rows", image.row_count())
                    .with("groups", image.group_count())
                    .fix("pass a packed image built by pack or build (every group has a row)"));
  return {};
}

//! Copies `count` spans `from[i]` -> `to[i]` of `bytes[i]` bytes with `threads` threads (0: every
//! core), split by bytes so that one large span is shared too: one thread's memcpy between
//! pageable and pinned host memory is far below the bus (egglog's math e-graph after 12
//! iterations stages 570 MB). Small copies stay on the caller's thread; a thread that cannot be
//! started copies its share in the caller.
inline void parallel_copy(std::size_t count, void* const* to, const void* const* from,
                          const std::size_t* bytes, unsigned threads) noexcept {
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += bytes[i];
  // Below 8 MB a thread costs more than it saves.
  constexpr std::size_t grain = std::size_t{8} << 20;
  vyre::detail::parallel_ranges(
      threads, total, grain, [&](std::size_t begin, std::size_t end) noexcept {
        std::size_t at = 0;  // start of span i in the concatenation
        for (std::size_t i = 0; i < count && at < end; at += bytes[i], ++i) {
          const std::size_t lo = (std::max)(begin, at);
          const std::size_t hi = (std::min)(end, at + bytes[i]);
          if (lo < hi)
            std::memcpy(static_cast<char*>(to[i]) + (lo - at),
                        static_cast<const char*>(from[i]) + (lo - at), hi - lo);
        }
      });
}

//! One more host span staged with an image (`stage_columns`), e.g. extraction's node costs.
struct extra_span {
  void* to = nullptr;
  const void* from = nullptr;
  std::size_t bytes = 0;
};

//! The host image's nine columns, copied contiguously into `to` (layout order), and `extra`, by
//! `threads` threads (0: every core; see `parallel_copy`).
inline void stage_columns(const image_columns& image, std::uint32_t* to, unsigned threads,
                          extra_span extra = {}) noexcept {
  const image_layout at = image_layout::for_counts(image.counts);
  constexpr std::size_t spans = egraph::image_column_count + 1;
  void* targets[spans] = {};
  const void* sources[spans] = {};
  std::size_t bytes[spans] = {};
  for (std::size_t c = 0; c < egraph::image_column_count; ++c) {
    const auto column = image.column(static_cast<image_column>(c));
    targets[c] = to + at.spans[c].offset;
    sources[c] = column.data();
    bytes[c] = column.size_bytes();
  }
  targets[spans - 1] = extra.to;
  sources[spans - 1] = extra.from;
  bytes[spans - 1] = extra.bytes;
  parallel_copy(spans, targets, sources, bytes, threads);
}

//! Runs `task(i)` for i in [0, `count`), one task per thread with `threads` threads (0: every
//! core) when the tasks move `bytes` >= 8 MB in all, else on the caller's thread. For filling
//! fresh result vectors: their first touch, not the copy, is most of the cost, and the page
//! faults of one vector are taken by the thread that fills it. `task` must not throw.
template <class Task>
void parallel_tasks(std::size_t count, std::size_t bytes, unsigned threads, Task&& task) noexcept {
  constexpr std::size_t grain = std::size_t{8} << 20;
  vyre::detail::parallel_ranges(bytes < grain ? 1u : threads, count, 1,
                                [&](std::size_t begin, std::size_t end) noexcept {
                                  for (std::size_t i = begin; i < end; ++i) task(i);
                                });
}

//! Fills `count` (<= 16) host vectors from spans of a pinned staging block: `to[i]` gets
//! `words[i]` words at `from[i]`, in parallel (`parallel_tasks`). Fails as `try_assign` does
//! (the first failed column's error).
inline expected<void> take_columns(std::size_t count, std::vector<std::uint32_t>* const* to,
                                   const std::uint32_t* const* from, const std::size_t* words,
                                   unsigned threads, const char* what) noexcept {
  constexpr std::size_t most_columns = 16;
  if (count > most_columns)
    return fail(error(errc::invalid_argument, what)
                    .with("columns", count)
                    .with("most", most_columns)
                    .fix("take at most 16 columns per call"));
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += words[i];
  expected<void> outcome[most_columns];
  parallel_tasks(count, total * sizeof(std::uint32_t), threads, [&](std::size_t i) noexcept {
    outcome[i] = try_assign(*to[i], from[i], words[i], what);
  });
  for (std::size_t i = 0; i < count; ++i)
    if (!outcome[i]) return fail(outcome[i].error());
  return {};
}

//! A plan's parameter block and counters: the device copies its captured graph reads and
//! writes, and the pinned copies the host fills and reads. One run is `replay`: upload the
//! parameters, launch the graph, read the counters back (the run's one wait).
struct plan_io {
  device_array<plan_params> params;
  device_array<plan_counters> counters;
  pinned_array<plan_params> host_params;
  pinned_array<plan_counters> host_counters;

  VYRE_HOST_MOVE_ONLY_MEMBERS(plan_io);  // host-only (vyre/detail/host_special_members.hpp)

  static expected<plan_io> allocate(const runtime_ref& runtime, cudaStream_t stream,
                                    const char* what) {
    plan_io io;
    VYRE_TRY_ASSIGN(io.params, runtime.allocate<plan_params>(1, stream, what));
    VYRE_TRY_ASSIGN(io.counters, runtime.allocate<plan_counters>(1, stream, what));
    VYRE_TRY_ASSIGN(io.host_params, pinned_array<plan_params>::allocate(runtime, 1, what));
    VYRE_TRY_ASSIGN(io.host_counters, pinned_array<plan_counters>::allocate(runtime, 1, what));
    return io;
  }

  //! Runs `graph` (an instantiated graph with `launch(stream)`) on `input`; `what` names the
  //! plan in errors.
  template <class Graph>
  expected<plan_counters> replay(const runtime_ref& runtime, Graph& graph, const plan_params& input,
                                 cudaStream_t stream, const char* what) {
    *host_params.get() = input;
    VYRE_CUDA_TRY(cudaMemcpyAsync(params.get(), host_params.get(), sizeof(plan_params),
                                  cudaMemcpyHostToDevice, stream),
                  what);
    VYRE_TRY(graph.launch(stream));
    if (runtime.telemetry != nullptr) runtime.telemetry->record_graph_launch();
    VYRE_TRY(copy_to_host(runtime, host_counters.get(), counters.get(), 1, stream, what));
    return *host_counters.get();
  }
};
VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(plan_io);

}  // namespace vyre::algorithms::detail
