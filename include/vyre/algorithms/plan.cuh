// SPDX-License-Identifier: Apache-2.0
//! @file
//! Reusable plans for repeated congruence closure and extraction on e-graphs up to a capacity,
//! and the host/device dispatch for e-graphs that live on the host.
//!
//! Small e-graphs are latency bound: a one-shot `congruence` / `extract` call spends its time
//! in allocations, CUB scratch queries, launches and synchronisations, not in the kernels. A
//! plan pays those once:
//!
//! - every buffer and the CUB scratch are allocated once for a capacity (rows, children);
//! - the whole pipeline (input checks, the rounds inside a conditional WHILE node, the class
//!   map, the rebuilt image / the choices and root cost) is captured once per row bucket (the
//!   rows rounded up to a quarter of their power of two, at least 1024) into one CUDA graph;
//! - the graph never changes: its kernels read the input (pointers and counts) from a device
//!   parameter block, so a call is one small upload, one graph replay and one small readback.
//!   Rows beyond the input up to the bucket are padding the kernels skip (their sort keys sort
//!   last), so the CUB calls run at their captured sizes.
//!
//!     vyre::algorithms::congruence_plan<> closure(stream, {.rows = 1 << 16, .children = 1 << 17});
//!     vyre::algorithms::extract_plan best(stream);
//!     for (...) {
//!       auto merged = closure.run(image.ref());        // resident device image: on the device
//!       auto cheapest = best.run(merged->rebuilt, costs, roots);
//!       auto on_host = closure.run_host(host_image);   // host image: the CPU reference below
//!     }                                                // the crossover, else the device
//!
//! Results are the same as the one-shot functions' (and the CPU references'). A plan's views
//! point into plan memory and stay valid until its next `run`/`run_host`/`reserve` or its
//! destruction (`congruence_plan::copy_rebuilt_image` keeps a rebuilt image longer). Inputs
//! beyond the capacity grow the plan (`plan_growth::reallocate`, one new setup) or fail with
//! the sizes named (`plan_growth::fail`); a failed call leaves the plan usable.
//!
//! Dispatch (`run_host`, `vyre::algorithms::dispatch`): a host image below the crossover row
//! count (`congruence_host_below_rows`, `extract_host_below_rows`, measured by
//! bench_algorithms) runs the CPU reference, since no graph launch plus transfers beats the
//! CPU on a few hundred rows; above it, the image is uploaded and the plan replays. Both sides
//! return the same host result (`congruence_result` / `extraction_result`).
#pragma once

// nvcc (C++20) infers __host__ __device__ for the implicit special members of host-only
// aggregates (std::vector or device_buffer members) held in cuda::std::expected, then warns
// (20011, 20013) that they call host-only members. They only ever run on the host.
#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/functional>
#include <cuda/std/bit>
#include <cuda/std/span>

#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/congruence.cuh"
#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/extract.cuh"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/graph/detail/capture.cuh"

namespace vyre::algorithms {

//! Where a plan runs an e-graph that lives on the host (`run_host`). A resident device image
//! (`run`) always stays on the device.
enum class dispatch : std::uint8_t {
  automatic,  //!< the CPU reference below `dispatch_options::host_below_rows` rows, else the device
  device,     //!< always the device (upload, replay, download)
  host        //!< always the CPU reference
};

//! `dispatch_options::host_below_rows` value meaning "the algorithm's default crossover".
inline constexpr std::uint32_t default_crossover = 0xFFFFFFFFu;

//! Dispatch knobs.
struct dispatch_options {
  dispatch where = dispatch::automatic;
  //! `automatic` runs the CPU reference for inputs with fewer rows than this
  //! (`default_crossover`: `congruence_host_below_rows` / `extract_host_below_rows`).
  std::uint32_t host_below_rows = default_crossover;
};

//! Default crossovers (rows) of `automatic` dispatch: below them the CPU reference is faster
//! than one plan replay plus the upload and download (a replay costs tens of microseconds of
//! launch latency whatever the size; the CPU references cost about 0.2-0.3 us (congruence) and
//! 0.1 us (extraction) per row on the real e-graphs). Chosen on the safe side: a file just
//! below a crossover runs on the CPU, which is never slower than the CPU. `bench_algorithms`
//! measures the real crossovers (its `congruence_dispatch_crossover` /
//! `extract_dispatch_crossover` lines); re-measure on other machines and pass your own through
//! `dispatch_options::host_below_rows`.
inline constexpr std::uint32_t congruence_host_below_rows = 512;
inline constexpr std::uint32_t extract_host_below_rows = 1024;

namespace detail {
inline bool runs_on_host(const dispatch_options& options, std::uint32_t rows,
                         std::uint32_t default_rows) noexcept {
  const std::uint32_t below =
      options.host_below_rows == default_crossover ? default_rows : options.host_below_rows;
  return options.where == dispatch::host || (options.where == dispatch::automatic && rows < below);
}
}  // namespace detail

//! The largest input a plan holds without reallocating.
struct plan_capacity {
  std::uint32_t rows = 0;      //!< rows (rounded up to a row bucket, at least 1024)
  std::uint32_t children = 0;  //!< child entries
};

//! What a plan does with an input beyond its capacity.
enum class plan_growth : std::uint8_t {
  reallocate,  //!< grow to fit (rows to the next power of two) and re-capture; costs one setup
  fail         //!< return `errc::out_of_range` naming the sizes; the plan stays usable
};

namespace detail {

inline constexpr std::uint32_t plan_min_bucket = 1024;
inline constexpr std::uint32_t plan_max_bucket = 1u << 30;  // CUB item counts stay < INT_MAX

//! The row bucket of `rows`: at least `plan_min_bucket`, else `rows` rounded up to a quarter
//! of its octave (4 buckets per power of two), so padding costs at most 25% of the input.
//! @pre rows <= plan_max_bucket
inline std::uint32_t plan_bucket(std::uint32_t rows) noexcept {
  if (rows <= plan_min_bucket) return plan_min_bucket;
  const std::uint32_t step = cuda::std::bit_floor(rows - 1) / 4;
  return (rows + step - 1) / step * step;
}

//! Instantiated graphs by key (a bucket, or a bucket and a variant), captured on first use.
class graph_cache {
 public:
  cudaGraphExec_t find(std::uint64_t key) const noexcept {
    for (const auto& [k, exec] : entries_)
      if (k == key) return exec.get();
    return nullptr;
  }
  expected<cudaGraphExec_t> insert(std::uint64_t key, graph::detail::unique_exec exec) {
    VYRE_TRY(try_reserve(entries_, entries_.size() + 1, "plan: graph cache"));
    entries_.emplace_back(key, std::move(exec));
    return entries_.back().second.get();
  }
  void clear() noexcept { entries_.clear(); }

 private:
  std::vector<std::pair<std::uint64_t, graph::detail::unique_exec>> entries_;
};

//! What every plan kernel reads from device memory: the input of the current call.
struct plan_params {
  image_columns image;                   //!< device columns and counts of the input image
  const double* node_cost = nullptr;     //!< extraction: one cost per row (device)
  const std::uint32_t* roots = nullptr;  //!< extraction: root e-class ids (device)
  std::uint32_t root_count = 0;
};

//! What a plan's replay writes and the host reads back in one transfer.
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

#define VYRE_PLAN_LOOP(i, count)                                                            \
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < (count); \
       i += std::uint64_t{gridDim.x} * blockDim.x)

// ---- congruence plan kernels: the one-shot kernels' logic, inputs read from `params` ------

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_init_kernel(plan_counters* counters) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *counters = plan_counters{clean_status};
}

//! Input checks and the dense indices: rows' children ranges, children naming groups,
//! dense_row / parent. Every later kernel does nothing when an input check failed.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_congruence_setup_kernel(const plan_params* params, std::uint32_t* dense_row,
                                              std::uint32_t* parent, std::uint32_t* dense_child,
                                              device_status* status) {
  const image_columns image = params->image;
  VYRE_PLAN_LOOP(i, image.row_count())
  if (std::uint64_t{image.row_children_offsets()[i]} + image.row_children_lens()[i] >
      image.child_count())
    atomicMin(&status->bad_row, static_cast<std::uint32_t>(i));
  VYRE_PLAN_LOOP(i, image.group_count()) {
    const auto g = static_cast<std::uint32_t>(i);
    parent[g] = g;
    for (std::uint32_t k = image.group_offsets()[g]; k < image.group_offsets()[g + 1]; ++k)
      dense_row[image.group_rows()[k]] = g;
  }
  VYRE_PLAN_LOOP(i, image.child_count()) {
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

//! Canonical children (dense class of each child's representative); clears the round's flag.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_canonicalise_kernel(const plan_params* params,
                                          const std::uint32_t* dense_child,
                                          const std::uint32_t* parent, std::uint32_t* canon,
                                          device_status* status) {
  if (!input_ok(status)) return;
  if (blockIdx.x == 0 && threadIdx.x == 0) status->changed = 0;  // read after this round
  VYRE_PLAN_LOOP(i, params->image.child_count()) canon[i] = parent[dense_child[i]];
}

//! Sort keys over the whole bucket: real rows their signature, padding rows the largest key
//! (stable sort: padding lands after every real row, even one whose signature is the max).
template <class Signature>
VYRE_KERNEL void plan_sign_kernel(const plan_params* params, const std::uint32_t* canon,
                                  Signature signature, std::uint32_t bucket, std::uint32_t* keys,
                                  std::uint32_t* rows, const device_status* status) {
  // A rejected input still gets defined keys (all padding): the sort after this reads them.
  const bool ok = input_ok(status);
  const image_columns image = params->image;
  const std::uint32_t real_rows = ok ? image.row_count() : 0u;
  VYRE_PLAN_LOOP(i, bucket) {
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
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_leaders_kernel(const plan_params* params, const std::uint32_t* canon,
                                     const std::uint32_t* sorted_rows,
                                     const std::uint32_t* run_start, const std::uint32_t* dense_row,
                                     std::uint32_t* parent, std::uint8_t* leader_flag,
                                     std::uint32_t bucket, device_status* status) {
  // A rejected input still gets defined flags (none lead): the selection after this reads them.
  const bool ok = input_ok(status);
  const image_columns image = params->image;
  VYRE_PLAN_LOOP(i, bucket) {
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
    if (leader != r) hook(parent, dense_row[r], dense_row[leader], status);
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_flatten_kernel(const plan_params* params, std::uint32_t* parent,
                                     const device_status* status) {
  if (!input_ok(status)) return;
  VYRE_PLAN_LOOP(i, params->image.group_count()) {
    const auto g = static_cast<std::uint32_t>(i);
    atomic_u32(parent[g]).store(find_root(parent, g), cuda::std::memory_order_relaxed);
  }
}

//! End of a round: count it; go on while it merged, the input is fine and fewer than G + 1
//! rounds ran (then `changed` stays set and the host reports it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_congruence_continue_kernel(cudaGraphConditionalHandle handle,
                                                 const plan_params* params,
                                                 plan_counters* counters) {
  const bool ok = input_ok(&counters->status);
  const std::uint32_t done = ok ? ++counters->rounds : counters->rounds;
  const std::uint64_t limit = std::uint64_t{params->image.group_count()} + 1;
  cudaGraphSetConditional(handle, ok && counters->status.changed != 0 && done < limit ? 1u : 0u);
}

//! The class map, and each kept row's rebuilt columns (e-class = representative id), its
//! grouping key (the dense representative) and row id; padding rows get length 0 and the
//! largest key.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_gather_kept_kernel(const plan_params* params, const std::uint32_t* kept,
                                         const std::uint32_t* dense_row,
                                         const std::uint32_t* parent, std::uint32_t bucket,
                                         std::uint32_t pad_key, std::uint32_t* class_ids,
                                         std::uint32_t* representative, std::uint32_t* eclass,
                                         std::uint32_t* op, std::uint32_t* lens,
                                         std::uint32_t* group_key, std::uint32_t* row_ids,
                                         const plan_counters* counters) {
  // A rejected input still gets defined sort input (all padding): the sorts after this read it.
  const bool ok = input_ok(&counters->status);
  const image_columns image = params->image;
  const std::uint32_t K = ok ? counters->kept : 0u;
  if (ok) VYRE_PLAN_LOOP(i, image.group_count()) {
      class_ids[i] = image.group_eclass_ids()[i];
      representative[i] = image.group_eclass_ids()[parent[i]];
    }
  VYRE_PLAN_LOOP(i, bucket) {
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
VYRE_KERNEL void plan_rebuilt_children_kernel(const plan_params* params, const std::uint32_t* kept,
                                              const std::uint32_t* canon, const std::uint32_t* op,
                                              const std::uint32_t* lens,
                                              const std::uint32_t* offsets, std::uint32_t* children,
                                              std::uint32_t* signatures, plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const image_columns image = params->image;
  const std::uint32_t K = counters->kept;
  if (K == 0 && blockIdx.x == 0 && threadIdx.x == 0) counters->rebuilt_children = 0;
  VYRE_PLAN_LOOP(i, K) {
    const std::uint32_t r = kept[i];
    const std::uint32_t* from = canon + image.row_children_offsets()[r];
    std::uint32_t* to = children + offsets[i];
    const std::uint32_t length = lens[i];
    for (std::uint32_t k = 0; k < length; ++k) to[k] = image.group_eclass_ids()[from[k]];
    signatures[i] = row_signature(op[i], to, length);
    if (i + 1 == K) counters->rebuilt_children = offsets[i] + length;
  }
}

//! The rebuilt group ids from the grouping sort's runs (the padding run, when there is one,
//! is the last and is dropped).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_rebuilt_groups_kernel(const plan_params* params,
                                            const std::uint32_t* run_keys, std::uint32_t bucket,
                                            std::uint32_t* group_ids, plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const std::uint32_t K = counters->kept;
  const auto runs = static_cast<std::uint32_t>(counters->runs);
  const std::uint32_t groups = K < bucket ? runs - 1 : runs;
  if (blockIdx.x == 0 && threadIdx.x == 0) counters->rebuilt_groups = groups;
  VYRE_PLAN_LOOP(g, groups) group_ids[g] = params->image.group_eclass_ids()[run_keys[g]];
}

// ---- extraction plan kernels: the one-shot `extract`'s row-parallel logic ----------------

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_extract_setup_kernel(const plan_params* params, double* cost,
                                           std::uint32_t* choice, std::uint32_t* dense_row,
                                           std::uint32_t* dense_child, device_status* status) {
  const image_columns image = params->image;
  VYRE_PLAN_LOOP(i, image.row_count())
  extract_setup_at(image, params->node_cost, i, cost, choice, dense_row, status);
  VYRE_PLAN_LOOP(i, image.child_count()) {
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

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(1024)
    plan_relax_single_block_kernel(const plan_params* params, const std::uint32_t* dense_child,
                                   const std::uint32_t* dense_row, double* cost,
                                   plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const image_columns image = params->image;
  relax_in_block(image, params->node_cost, dense_child, dense_row, cost,
                 std::uint64_t{image.group_count()} + 1, &counters->status.changed,
                 &counters->rounds);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_relax_round_kernel(const plan_params* params,
                                         const std::uint32_t* dense_child,
                                         const std::uint32_t* dense_row, double* cost,
                                         plan_counters* counters) {
  if (!input_ok(&counters->status)) return;
  const image_columns image = params->image;
  bool dropped = false;
  VYRE_PLAN_LOOP(i, image.row_count())
  dropped |= relax_row(image, params->node_cost, dense_child, dense_row, cost,
                       static_cast<std::uint32_t>(i));
  if (dropped) counters->status.changed = 1;
}

//! End of an extraction round: count it; clear `changed` for the next one unless the round
//! bound stops the loop with costs still dropping (then it stays set for the host).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_extract_continue_kernel(cudaGraphConditionalHandle handle,
                                              const plan_params* params, plan_counters* counters) {
  const bool ok = input_ok(&counters->status);
  const std::uint32_t done = ok ? ++counters->rounds : counters->rounds;
  const bool changed = counters->status.changed != 0;
  const std::uint64_t limit = std::uint64_t{params->image.group_count()} + 1;
  const bool again = ok && changed && done < limit;
  if (again) counters->status.changed = 0;
  cudaGraphSetConditional(handle, again ? 1u : 0u);
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_choose_kernel(const plan_params* params, const std::uint32_t* dense_child,
                                    const std::uint32_t* dense_row, double* cost,
                                    std::uint32_t* choice, const plan_counters* counters) {
  if (!input_ok(&counters->status) || counters->status.changed != 0) return;
  const image_columns image = params->image;
  VYRE_PLAN_LOOP(i, image.row_count())
  choose_row(image, params->node_cost, dense_child, dense_row, cost, choice,
             static_cast<std::uint32_t>(i));
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void plan_root_cost_kernel(const plan_params* params, const double* cost,
                                       plan_counters* counters) {
  if (threadIdx.x != 0 || blockIdx.x != 0 || !input_ok(&counters->status)) return;
  const image_columns image = params->image;
  double total = 0;  // one thread: the reference's summation order
  for (std::uint32_t i = 0; i < params->root_count; ++i) {
    const std::uint32_t g =
        find_sorted(image.group_eclass_ids(), image.group_count(), params->roots[i]);
    if (g == image.group_count()) {
      atomicMin(&counters->status.bad_root, i);
      continue;
    }
    total += cost[g];
  }
  counters->root_cost = total;
}

#undef VYRE_PLAN_LOOP

// ---- host plumbing ---------------------------------------------------------------------------

//! Captures `enqueue(stream)` on `stream` into a new graph; the capture always ends.
template <class Enqueue>
expected<graph::detail::unique_graph> capture_graph(cudaStream_t stream, Enqueue&& enqueue,
                                                    const char* what) {
  VYRE_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), what);
  expected<void> enqueued = enqueue(stream);
  cudaGraph_t raw = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &raw);
  graph::detail::unique_graph graph(raw);
  VYRE_TRY(enqueued);
  VYRE_CUDA_TRY(ended, what);
  return graph;
}

//! One instantiated plan graph: `prefix -> WHILE(body) -> suffix` (or `prefix` alone when
//! `body` is null), built from three captures on `stream`.
template <class Prefix, class Body, class Suffix>
expected<graph::detail::unique_exec> instantiate_loop_graph(cudaStream_t stream, Prefix&& prefix,
                                                            Body* body, Suffix&& suffix,
                                                            const char* what) {
  VYRE_TRY_ASSIGN(auto first, capture_graph(stream, prefix, what));
  VYRE_TRY_ASSIGN(auto last, capture_graph(stream, suffix, what));
  cudaGraph_t raw = nullptr;
  VYRE_CUDA_TRY(cudaGraphCreate(&raw, 0), what);
  graph::detail::unique_graph top(raw);
  cudaGraphNode_t before = nullptr;
  VYRE_CUDA_TRY(cudaGraphAddChildGraphNode(&before, raw, nullptr, 0, first.get()), what);
  if (body != nullptr) {
    // The condition starts at 1 on every launch: the body runs at least once and its last
    // kernel decides whether it runs again.
    cudaGraphConditionalHandle handle{};
    VYRE_CUDA_TRY(cudaGraphConditionalHandleCreate(&handle, raw, 1, cudaGraphCondAssignDefault),
                  what);
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t loop = nullptr;
#if CUDART_VERSION >= 13000
    VYRE_CUDA_TRY(cudaGraphAddNode(&loop, raw, &before, nullptr, 1, &params), what);
#else
    VYRE_CUDA_TRY(cudaGraphAddNode(&loop, raw, &before, 1, &params), what);
#endif
    const cudaGraph_t body_graph = params.conditional.phGraph_out[0];
    if (body_graph == nullptr)
      return fail(
          error(errc::cuda_runtime, what).fix("report this: CUDA returned no WHILE body graph"));
    VYRE_CUDA_TRY(cudaStreamBeginCaptureToGraph(stream, body_graph, nullptr, nullptr, 0,
                                                cudaStreamCaptureModeThreadLocal),
                  what);
    expected<void> enqueued = (*body)(stream, handle);
    cudaGraph_t ended_graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &ended_graph);
    VYRE_TRY(enqueued);
    VYRE_CUDA_TRY(ended, what);
    before = loop;
  }
  cudaGraphNode_t after = nullptr;
  VYRE_CUDA_TRY(cudaGraphAddChildGraphNode(&after, raw, &before, 1, last.get()), what);
  cudaGraphExec_t exec = nullptr;
  VYRE_CUDA_TRY(cudaGraphInstantiate(&exec, raw, 0),
                "plan: instantiate the graph (conditional WHILE nodes need CUDA 12.4+)");
  return graph::detail::unique_exec(exec);
}

inline error plan_capacity_error(const char* what, std::uint32_t rows, std::uint32_t children,
                                 const plan_capacity& capacity) {
  return error(errc::out_of_range, what)
      .with("rows", rows)
      .with("children", children)
      .with("capacity_rows", capacity.rows)
      .with("capacity_children", capacity.children)
      .fix(
          "call reserve() with a larger capacity, or construct the plan with "
          "plan_growth::reallocate");
}

inline expected<void> check_image_counts(const image_columns& image, const char* what) {
  if (image.group_count() > image.row_count())
    return fail(error(errc::invalid_layout, what)
                    .with("rows", image.row_count())
                    .with("groups", image.group_count())
                    .fix("pass a packed image built by pack or build (every group has a row)"));
  return {};
}

//! The host image's nine columns, copied contiguously into `to` (layout order).
inline void stage_columns(const image_columns& image, std::uint32_t* to) noexcept {
  const image_layout at = image_layout::for_counts(image.counts);
  for (std::size_t c = 0; c < egraph::image_column_count; ++c) {
    const auto column = image.column(static_cast<image_column>(c));
    if (!column.empty()) std::memcpy(to + at.spans[c].offset, column.data(), column.size_bytes());
  }
}

}  // namespace detail

//! The device result of one `congruence_plan::run`: device pointers into plan memory, valid
//! until the plan's next run (or its destruction). Same contents as `device_congruence_result`.
struct congruence_view {
  const std::uint32_t* eclass_ids = nullptr;      //!< G original e-class ids, ascending
  const std::uint32_t* representative = nullptr;  //!< parallel: smallest id of its merged set
  std::uint32_t class_count = 0;                  //!< G
  std::uint64_t merges = 0;
  std::uint32_t rounds = 0;  //!< rounds run, the final (merge-free) one included
  //! The rebuilt image's nine columns (separate plan buffers, not one contiguous image; see
  //! `congruence_plan::copy_rebuilt_image` for an owning contiguous copy).
  image_columns rebuilt;
  const std::uint32_t* kept_rows = nullptr;  //!< original row of each rebuilt row
};

//! Repeated congruence closure on e-graphs up to a capacity: allocations, CUB scratch and the
//! captured graph are paid once; a call is one parameter upload, one graph replay (the rounds
//! loop on the device in a conditional WHILE node) and one small readback.
//! @tparam Signature as for `congruence`.
//! @note Not thread-safe; one plan per host thread (or serialise calls). All work runs on the
//!       stream given at construction; results are ready when `run` returns.
template <class Signature = design_signature>
class congruence_plan {
 public:
  //! An empty plan: the first `run` allocates (with `plan_growth::reallocate`).
  congruence_plan() noexcept = default;
  //! Allocates for `capacity` on `stream` now (errors surface from `reserve`; check `valid()`
  //! or call `reserve` yourself for an error value).
  congruence_plan(cudaStream_t stream, plan_capacity capacity = {},
                  plan_growth growth = plan_growth::reallocate, Signature signature = {})
      : stream_(stream), growth_(growth), signature_(signature) {
    reserved_ = reserve(capacity);
  }
  congruence_plan(congruence_plan&&) noexcept = default;
  congruence_plan& operator=(congruence_plan&&) noexcept = default;

  //! Whether the constructor's allocation succeeded (else `reserve_error()` says why).
  bool valid() const noexcept { return reserved_.has_value(); }
  const expected<void>& reserve_error() const noexcept { return reserved_; }
  const plan_capacity& capacity() const noexcept { return capacity_; }
  cudaStream_t stream() const noexcept { return stream_; }

  //! Makes room for `capacity` (rows rounded up to a row bucket >= 1024). Drops the captured
  //! graphs when it reallocates. Strong guarantee: on failure the plan keeps its old storage.
  expected<void> reserve(plan_capacity capacity) {
    if (capacity.rows > detail::plan_max_bucket)
      return fail(error(errc::abi_limit, "congruence_plan: too many rows for one plan")
                      .with("rows", capacity.rows)
                      .with("max_rows", detail::plan_max_bucket)
                      .fix("shard the e-graph"));
    const std::uint32_t rows = detail::plan_bucket(capacity.rows);
    if (storage_.ready && rows <= capacity_.rows && capacity.children <= capacity_.children)
      return {};
    const plan_capacity grown{(std::max)(rows, capacity_.rows),
                              (std::max)(capacity.children, capacity_.children)};
    VYRE_TRY_ASSIGN(storage fresh, storage::allocate(grown, stream_));
    storage_ = std::move(fresh);
    capacity_ = grown;
    graphs_.clear();
    reserved_ = expected<void>{};
    return {};
  }

  //! Congruence closure of the device image `image` (same contract as `congruence`).
  //! @throws nothing; errors: a child without rows (`errc::not_found`), a children range past
  //!         the column (`errc::out_of_range`), an input beyond capacity with
  //!         `plan_growth::fail` (`errc::out_of_range`, naming sizes and capacity), more groups
  //!         than rows (`errc::invalid_layout`), CUDA failures. The plan stays usable.
  expected<congruence_view> run(const image_columns& image) {
    VYRE_TRY(detail::check_image_counts(image, "congruence_plan: more groups than rows"));
    VYRE_TRY(fit(image.row_count(), image.child_count()));
    const std::uint32_t bucket = detail::plan_bucket(image.row_count());
    VYRE_TRY_ASSIGN(cudaGraphExec_t exec, graph_for(bucket));
    storage& s = storage_;
    detail::plan_params params;
    params.image = image;
    *s.host_params.get() = params;
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.params.get(), s.host_params.get(), sizeof(detail::plan_params),
                                  cudaMemcpyHostToDevice, stream_),
                  "congruence_plan: upload parameters");
    VYRE_CUDA_TRY(cudaGraphLaunch(exec, stream_), "congruence_plan: replay");
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.host_counters.get(), s.counters.get(),
                                  sizeof(detail::plan_counters), cudaMemcpyDeviceToHost, stream_),
                  "congruence_plan: read counters");
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "congruence_plan: finish");
    const detail::plan_counters seen = *s.host_counters.get();
    if (seen.status.bad_row != 0xFFFFFFFFu || seen.status.bad_child != 0xFFFFFFFFu)
      return fail(detail::congruence_input_error(seen.status, image));
    if (seen.status.changed != 0)
      return fail(
          error(errc::invalid_state, "congruence_plan: more rounds than e-classes (a library bug)")
              .with("rounds", seen.rounds)
              .with("classes", image.group_count())
              .fix("report this with the input"));
    congruence_view view;
    view.eclass_ids = s.class_ids.get();
    view.representative = s.representative.get();
    view.class_count = image.group_count();
    view.merges = seen.status.merges;
    view.rounds = image.row_count() == 0 ? 0 : seen.rounds;
    const std::uint32_t K = image.row_count() == 0 ? 0 : seen.kept;
    const image_layout layout =
        image_layout::for_counts(K, image.row_count() == 0 ? 0 : seen.rebuilt_children,
                                 image.row_count() == 0 ? 0 : seen.rebuilt_groups);
    view.rebuilt.pointers = {
        s.r_eclass.get(),    s.r_op.get(),       s.r_offsets.get(),   s.r_lens.get(),
        s.r_signature.get(), s.r_children.get(), s.r_group_ids.get(), s.r_group_offsets.get(),
        s.r_group_rows.get()};
    view.rebuilt.counts = layout.counts();
    view.kept_rows = s.kept.get();
    return view;
  }

  //! Congruence closure of a host image (host pointers, e.g. `pack_reference(...)->ref()` or an
  //! egraph snapshot's packed image), on the CPU reference or the device as `options` says.
  //! Both sides give the same result, except `rounds` (CPU worklist passes vs device rounds).
  expected<congruence_result> run_host(const image_columns& host_image,
                                       dispatch_options options = {}) {
    if (detail::runs_on_host(options, host_image.row_count(), congruence_host_below_rows))
      return congruence_reference(host_image);
    VYRE_TRY(detail::check_image_counts(host_image, "congruence_plan: more groups than rows"));
    VYRE_TRY(fit(host_image.row_count(), host_image.child_count()));
    storage& s = storage_;
    const image_layout layout = image_layout::for_counts(host_image.counts);
    const auto words = static_cast<std::size_t>(layout.word_count());
    VYRE_TRY(s.staging.ensure(words, "congruence_plan: pinned staging"));
    if (s.input.size() < words) {
      // Room for the largest image the capacity allows: 6R + C + 2G + 1 words, G <= R.
      const std::size_t most = 8 * std::size_t{capacity_.rows} + capacity_.children + 1;
      VYRE_TRY_ASSIGN(s.input,
                      u32_buffer::allocate(most, stream_, "congruence_plan: uploaded image"));
    }
    detail::stage_columns(host_image, s.staging.get());
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.input.get(), s.staging.get(), words * sizeof(std::uint32_t),
                                  cudaMemcpyHostToDevice, stream_),
                  "congruence_plan: upload the image");
    VYRE_TRY_ASSIGN(const congruence_view view,
                    run(image_columns::from_words(s.input.get(), layout)));
    // One staging block for every result column: G + G + 5K + C' words.
    const std::uint32_t G = view.class_count, K = view.rebuilt.row_count(),
                        C = view.rebuilt.child_count();
    const std::size_t total = 2 * std::size_t{G} + 4 * std::size_t{K} + C;
    VYRE_TRY(
        s.staging.ensure((std::max)(total, std::size_t{1}), "congruence_plan: pinned staging"));
    std::uint32_t* at = s.staging.get();
    const auto fetch = [&](const std::uint32_t* from, std::size_t count) -> expected<void> {
      if (count != 0)
        VYRE_CUDA_TRY(cudaMemcpyAsync(at, from, count * sizeof(std::uint32_t),
                                      cudaMemcpyDeviceToHost, stream_),
                      "congruence_plan: download the result");
      at += count;
      return {};
    };
    VYRE_TRY(fetch(view.eclass_ids, G));
    VYRE_TRY(fetch(view.representative, G));
    VYRE_TRY(fetch(view.kept_rows, K));
    VYRE_TRY(fetch(view.rebuilt.row_eclass_ids(), K));
    VYRE_TRY(fetch(view.rebuilt.row_language_op_ids(), K));
    VYRE_TRY(fetch(view.rebuilt.row_children_lens(), K));
    VYRE_TRY(fetch(view.rebuilt.children(), C));
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "congruence_plan: download the result");
    congruence_result result;
    result.merges = view.merges;
    result.rounds = view.rounds;
    const std::uint32_t* from = s.staging.get();
    const auto take = [&](std::vector<std::uint32_t>& to, std::size_t count) -> expected<void> {
      VYRE_TRY(try_resize(to, count, "congruence_plan: result"));
      if (count != 0) std::memcpy(to.data(), from, count * sizeof(std::uint32_t));
      from += count;
      return {};
    };
    VYRE_TRY(take(result.eclass_ids, G));
    VYRE_TRY(take(result.representative, G));
    VYRE_TRY(take(result.kept_rows, K));
    VYRE_TRY(take(result.rebuilt.row_eclass_ids, K));
    VYRE_TRY(take(result.rebuilt.row_language_op_ids, K));
    VYRE_TRY(take(result.rebuilt.row_children_lens, K));
    VYRE_TRY(take(result.rebuilt.children, C));
    return result;
  }

  //! An owning contiguous copy of the last run's rebuilt image (stream-ordered on the plan's
  //! stream), e.g. to keep it past the next run.
  expected<device_packed_image> copy_rebuilt_image(const congruence_view& view) const {
    const image_layout layout = image_layout::for_counts(view.rebuilt.counts);
    VYRE_TRY_ASSIGN(auto words, device_buffer<std::uint32_t>::allocate(
                                    static_cast<std::size_t>(layout.word_count()), stream_,
                                    "congruence_plan: rebuilt image"));
    for (std::size_t c = 0; c < egraph::image_column_count; ++c) {
      const auto column = view.rebuilt.column(static_cast<image_column>(c));
      VYRE_TRY(detail::copy_on_device(words.get() + layout.spans[c].offset, column.data(),
                                      column.size(), stream_,
                                      "congruence_plan: copy the rebuilt image"));
    }
    return device_packed_image(std::move(words), layout);
  }

 private:
  using u32_buffer = device_buffer<std::uint32_t>;

  struct storage {
    bool ready = false;
    std::size_t scratch_bytes = 0;
    device_buffer<detail::plan_params> params;
    device_buffer<detail::plan_counters> counters;
    detail::pinned_buffer<detail::plan_params> host_params;
    detail::pinned_buffer<detail::plan_counters> host_counters;
    detail::pinned_buffer<std::uint32_t> staging;  //!< run_host: image upload and result download
    u32_buffer input;  //!< run_host: the uploaded image (allocated on the first device run_host)
    u32_buffer dense_row, parent, dense_child, canon, keys, rows, sorted_keys, sorted_rows,
        run_start, counts;
    device_buffer<std::uint8_t> leader_flag;
    u32_buffer class_ids, representative, kept;
    u32_buffer r_eclass, r_op, r_offsets, r_lens, r_signature, r_children, r_group_ids,
        r_group_offsets, r_group_rows;
    device_buffer<unsigned char> scratch;
    detail::owned_stream capture;

    static expected<storage> allocate(const plan_capacity& at, cudaStream_t stream) {
      storage s;
      const std::size_t B = at.rows, C = (std::max)(at.children, 1u);
      const char* what = "congruence_plan: allocate";
      VYRE_TRY_ASSIGN(s.params, device_buffer<detail::plan_params>::allocate(1, stream, what));
      VYRE_TRY_ASSIGN(s.counters, device_buffer<detail::plan_counters>::allocate(1, stream, what));
      VYRE_TRY_ASSIGN(s.host_params, detail::pinned_buffer<detail::plan_params>::allocate(1, what));
      VYRE_TRY_ASSIGN(s.host_counters,
                      detail::pinned_buffer<detail::plan_counters>::allocate(1, what));
      for (u32_buffer* b :
           {&s.dense_row, &s.parent, &s.keys, &s.rows, &s.sorted_keys, &s.sorted_rows, &s.run_start,
            &s.class_ids, &s.representative, &s.kept, &s.r_eclass, &s.r_op, &s.r_lens,
            &s.r_signature, &s.r_group_ids, &s.r_group_rows}) {
        VYRE_TRY_ASSIGN(*b, u32_buffer::allocate(B, stream, what));
      }
      for (u32_buffer* b : {&s.counts, &s.r_offsets, &s.r_group_offsets}) {
        VYRE_TRY_ASSIGN(*b, u32_buffer::allocate(B + 1, stream, what));
      }
      for (u32_buffer* b : {&s.dense_child, &s.canon, &s.r_children}) {
        VYRE_TRY_ASSIGN(*b, u32_buffer::allocate(C, stream, what));
      }
      VYRE_TRY_ASSIGN(s.leader_flag, device_buffer<std::uint8_t>::allocate(B, stream, what));
      // Stale-but-initialised: the group scan reads counts past the last run.
      VYRE_CUDA_TRY(cudaMemsetAsync(s.counts.get(), 0, (B + 1) * sizeof(std::uint32_t), stream),
                    what);
      // CUB scratch: the largest need over every bucket up to the capacity.
      std::size_t bytes = 1;
      for (std::size_t b = detail::plan_min_bucket; b <= B;
           b = detail::plan_bucket(static_cast<std::uint32_t>(b) + 1)) {
        const auto n = static_cast<std::uint32_t>(b);
        std::size_t need = 0;
        VYRE_CUDA_TRY(
            cub::DeviceRadixSort::SortPairs(nullptr, need, s.keys.get(), s.sorted_keys.get(),
                                            s.rows.get(), s.sorted_rows.get(), n, 0, 32, stream),
            "congruence_plan: scratch size (cub::DeviceRadixSort::SortPairs)");
        bytes = (std::max)(bytes, need);
        const int group_bits = (cuda::std::max)(1, cuda::std::bit_width(n));
        VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, need, s.keys.get(), s.rows.get(),
                                                      s.sorted_keys.get(), s.r_group_rows.get(), n,
                                                      0, group_bits, stream),
                      "congruence_plan: scratch size (cub::DeviceRadixSort::SortPairs)");
        bytes = (std::max)(bytes, need);
        VYRE_CUDA_TRY(
            cub::DeviceScan::InclusiveScan(nullptr, need, s.run_start.get(), s.run_start.get(),
                                           cuda::maximum<std::uint32_t>{}, n, stream),
            "congruence_plan: scratch size (cub::DeviceScan::InclusiveScan)");
        bytes = (std::max)(bytes, need);
        VYRE_CUDA_TRY(cub::DeviceSelect::Flagged(nullptr, need, s.rows.get(), s.leader_flag.get(),
                                                 s.kept.get(), &s.counters.get()->kept, n, stream),
                      "congruence_plan: scratch size (cub::DeviceSelect::Flagged)");
        bytes = (std::max)(bytes, need);
        VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, need, s.r_lens.get(),
                                                    s.r_offsets.get(), n, stream),
                      "congruence_plan: scratch size (cub::DeviceScan::ExclusiveSum)");
        bytes = (std::max)(bytes, need);
        VYRE_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(
                          nullptr, need, s.sorted_keys.get(), s.run_start.get(), s.counts.get(),
                          &s.counters.get()->runs, static_cast<int>(n), stream),
                      "congruence_plan: scratch size (cub::DeviceRunLengthEncode::Encode)");
        bytes = (std::max)(bytes, need);
        VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, need, s.counts.get(),
                                                    s.r_group_offsets.get(), n + 1, stream),
                      "congruence_plan: scratch size (cub::DeviceScan::ExclusiveSum)");
        bytes = (std::max)(bytes, need);
      }
      VYRE_TRY_ASSIGN(s.scratch, device_buffer<unsigned char>::allocate(bytes, stream, what));
      s.scratch_bytes = bytes;
      VYRE_TRY_ASSIGN(s.capture, detail::make_stream("congruence_plan: capture stream"));
      s.ready = true;
      return s;
    }
  };

  expected<void> fit(std::uint32_t rows, std::uint32_t children) {
    if (rows <= detail::plan_max_bucket && storage_.ready &&
        detail::plan_bucket(rows) <= capacity_.rows && children <= capacity_.children)
      return {};
    if (growth_ == plan_growth::fail && storage_.ready)
      return fail(detail::plan_capacity_error("congruence_plan: the input exceeds the capacity",
                                              rows, children, capacity_));
    return reserve({rows, children});
  }

  expected<cudaGraphExec_t> graph_for(std::uint32_t bucket) {
    if (cudaGraphExec_t exec = graphs_.find(bucket); exec != nullptr) return exec;
    VYRE_TRY_ASSIGN(auto exec, capture(bucket));
    return graphs_.insert(bucket, std::move(exec));
  }

  //! The whole pipeline for inputs of at most `bucket` rows.
  expected<graph::detail::unique_exec> capture(std::uint32_t bucket) {
    using detail::block_size;
    using detail::grid_for;
    storage& s = storage_;
    const std::uint32_t B = bucket;
    const unsigned rows_grid = grid_for(B);
    const unsigned child_grid =
        grid_for((std::min)(std::uint64_t{capacity_.children}, std::uint64_t{4} * B));
    const detail::plan_params* params = s.params.get();
    detail::plan_counters* counters = s.counters.get();
    detail::device_status* status = &counters->status;
    const std::size_t scratch_bytes = s.scratch_bytes;
    const int group_bits = (cuda::std::max)(1, cuda::std::bit_width(B));
    const std::uint32_t pad_key = static_cast<std::uint32_t>((std::uint64_t{1} << group_bits) - 1);
    const Signature signature = signature_;

    const auto prefix = [&](cudaStream_t on) -> expected<void> {
      detail::plan_init_kernel<><<<1, 1, 0, on>>>(counters);
      VYRE_TRY(detail::launched("congruence_plan: init counters"));
      detail::plan_congruence_setup_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.dense_row.get(), s.parent.get(), s.dense_child.get(), status);
      return detail::launched("congruence_plan: input checks and dense classes");
    };
    auto body = [&](cudaStream_t on, cudaGraphConditionalHandle handle) -> expected<void> {
      detail::plan_canonicalise_kernel<><<<child_grid, block_size, 0, on>>>(
          params, s.dense_child.get(), s.parent.get(), s.canon.get(), status);
      VYRE_TRY(detail::launched("congruence_plan: canonicalise children"));
      detail::plan_sign_kernel<<<rows_grid, block_size, 0, on>>>(
          params, s.canon.get(), signature, B, s.keys.get(), s.rows.get(), status);
      VYRE_TRY(detail::launched("congruence_plan: sign rows"));
      std::size_t bytes = scratch_bytes;
      VYRE_CUDA_TRY(
          cub::DeviceRadixSort::SortPairs(s.scratch.get(), bytes, s.keys.get(), s.sorted_keys.get(),
                                          s.rows.get(), s.sorted_rows.get(), B, 0, 32, on),
          "congruence_plan: sort rows by signature (cub::DeviceRadixSort::SortPairs)");
      detail::run_heads_kernel<>
          <<<rows_grid, block_size, 0, on>>>(s.sorted_keys.get(), s.run_start.get(), B);
      VYRE_TRY(detail::launched("congruence_plan: signature runs"));
      bytes = scratch_bytes;
      VYRE_CUDA_TRY(
          cub::DeviceScan::InclusiveScan(s.scratch.get(), bytes, s.run_start.get(),
                                         s.run_start.get(), cuda::maximum<std::uint32_t>{}, B, on),
          "congruence_plan: signature run starts (cub::DeviceScan::InclusiveScan)");
      detail::plan_leaders_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.canon.get(), s.sorted_rows.get(), s.run_start.get(), s.dense_row.get(),
          s.parent.get(), s.leader_flag.get(), B, status);
      VYRE_TRY(detail::launched("congruence_plan: leaders and unions"));
      detail::plan_flatten_kernel<>
          <<<rows_grid, block_size, 0, on>>>(params, s.parent.get(), status);
      VYRE_TRY(detail::launched("congruence_plan: flatten"));
      detail::plan_congruence_continue_kernel<><<<1, 1, 0, on>>>(handle, params, counters);
      return detail::launched("congruence_plan: WHILE condition");
    };
    const auto suffix = [&](cudaStream_t on) -> expected<void> {
      // Kept rows: the final round's leaders in row order (`rows` holds 0..B-1 from the sign
      // pass; padding rows are never flagged).
      std::size_t bytes = scratch_bytes;
      VYRE_CUDA_TRY(
          cub::DeviceSelect::Flagged(s.scratch.get(), bytes, s.rows.get(), s.leader_flag.get(),
                                     s.kept.get(), &counters->kept, B, on),
          "congruence_plan: kept rows (cub::DeviceSelect::Flagged)");
      detail::plan_gather_kept_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.kept.get(), s.dense_row.get(), s.parent.get(), B, pad_key, s.class_ids.get(),
          s.representative.get(), s.r_eclass.get(), s.r_op.get(), s.r_lens.get(), s.keys.get(),
          s.sorted_keys.get(), counters);
      VYRE_TRY(detail::launched("congruence_plan: class map and kept rows"));
      bytes = scratch_bytes;
      VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(s.scratch.get(), bytes, s.r_lens.get(),
                                                  s.r_offsets.get(), B, on),
                    "congruence_plan: rebuilt offsets (cub::DeviceScan::ExclusiveSum)");
      detail::plan_rebuilt_children_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.kept.get(), s.canon.get(), s.r_op.get(), s.r_lens.get(), s.r_offsets.get(),
          s.r_children.get(), s.r_signature.get(), counters);
      VYRE_TRY(detail::launched("congruence_plan: rebuilt children and signatures"));
      // Group the kept rows by representative: the dense representative orders like its id.
      bytes = scratch_bytes;
      VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(s.scratch.get(), bytes, s.keys.get(),
                                                    s.rows.get(), s.sorted_keys.get(),
                                                    s.r_group_rows.get(), B, 0, group_bits, on),
                    "congruence_plan: rebuilt groups (cub::DeviceRadixSort::SortPairs)");
      bytes = scratch_bytes;
      VYRE_CUDA_TRY(cub::DeviceRunLengthEncode::Encode(s.scratch.get(), bytes, s.rows.get(),
                                                       s.run_start.get(), s.counts.get(),
                                                       &counters->runs, static_cast<int>(B), on),
                    "congruence_plan: rebuilt group sizes (cub::DeviceRunLengthEncode::Encode)");
      bytes = scratch_bytes;
      VYRE_CUDA_TRY(cub::DeviceScan::ExclusiveSum(s.scratch.get(), bytes, s.counts.get(),
                                                  s.r_group_offsets.get(), B + 1, on),
                    "congruence_plan: rebuilt group offsets (cub::DeviceScan::ExclusiveSum)");
      detail::plan_rebuilt_groups_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.run_start.get(), B, s.r_group_ids.get(), counters);
      return detail::launched("congruence_plan: rebuilt group ids");
    };
    return detail::instantiate_loop_graph(s.capture.get(), prefix, &body, suffix,
                                          "congruence_plan: capture the pipeline");
  }

  cudaStream_t stream_ = nullptr;
  plan_growth growth_ = plan_growth::reallocate;
  Signature signature_{};
  plan_capacity capacity_{};
  storage storage_{};
  detail::graph_cache graphs_;
  expected<void> reserved_{};
};

//! The device result of one `extract_plan::run`: device pointers into plan memory, valid until
//! the plan's next run. Same contents as `device_extraction_result`.
struct extraction_view {
  const double* cost = nullptr;           //!< per group: tree cost or +inf
  const std::uint32_t* choice = nullptr;  //!< per group: chosen row, or `no_row`
  std::uint32_t class_count = 0;
  double root_cost = 0;
  std::uint32_t rounds = 0;
};

//! Repeated bottom-up extraction on e-graphs up to a capacity: one parameter upload (with the
//! roots), one graph replay (single-block fixpoint for small e-graphs, else a conditional WHILE
//! loop of rounds) and one small readback per call. Same costs and choices as `extract` and
//! `extract_reference` (bit for bit); `rounds` may differ (in-place rounds see each other's
//! updates in scheduling order).
//! @note Not thread-safe; all work runs on the stream given at construction.
class extract_plan {
 public:
  extract_plan() noexcept = default;
  extract_plan(cudaStream_t stream, plan_capacity capacity = {},
               plan_growth growth = plan_growth::reallocate, extract_options options = {})
      : stream_(stream), growth_(growth), options_(options) {
    reserved_ = reserve(capacity);
  }
  extract_plan(extract_plan&&) noexcept = default;
  extract_plan& operator=(extract_plan&&) noexcept = default;

  bool valid() const noexcept { return reserved_.has_value(); }
  const expected<void>& reserve_error() const noexcept { return reserved_; }
  const plan_capacity& capacity() const noexcept { return capacity_; }

  //! As `congruence_plan::reserve`.
  expected<void> reserve(plan_capacity capacity) {
    if (capacity.rows > detail::plan_max_bucket)
      return fail(error(errc::abi_limit, "extract_plan: too many rows for one plan")
                      .with("rows", capacity.rows)
                      .with("max_rows", detail::plan_max_bucket)
                      .fix("shard the e-graph"));
    const std::uint32_t rows = detail::plan_bucket(capacity.rows);
    if (storage_.ready && rows <= capacity_.rows && capacity.children <= capacity_.children)
      return {};
    const plan_capacity grown{(std::max)(rows, capacity_.rows),
                              (std::max)(capacity.children, capacity_.children)};
    VYRE_TRY_ASSIGN(storage fresh, storage::allocate(grown, stream_));
    storage_ = std::move(fresh);
    capacity_ = grown;
    graphs_.clear();
    reserved_ = expected<void>{};
    return {};
  }

  //! Extraction over the device image `image` with device `node_cost` (one per row) and host
  //! `roots`; same contract and results as `extract`.
  //! @throws nothing; errors as `extract`, plus capacity errors as `congruence_plan::run`.
  expected<extraction_view> run(const image_columns& image, const double* node_cost,
                                cuda::std::span<const std::uint32_t> roots) {
    VYRE_TRY(detail::check_image_counts(image, "extract_plan: more groups than rows"));
    if (roots.size() > 0xFFFFFFFFu)
      return fail(error(errc::abi_limit, "extract_plan: more roots than u32 can count")
                      .with("roots", roots.size())
                      .fix("pass at most 2^32 - 1 roots"));
    VYRE_TRY(fit(image.row_count(), image.child_count()));
    storage& s = storage_;
    const auto root_count = static_cast<std::uint32_t>(roots.size());
    if (root_count > s.roots.size()) {
      VYRE_TRY_ASSIGN(auto bigger,
                      device_buffer<std::uint32_t>::allocate(cuda::std::bit_ceil(root_count),
                                                             stream_, "extract_plan: roots"));
      VYRE_TRY(s.host_roots.ensure(bigger.size(), "extract_plan: pinned roots"));
      s.roots = std::move(bigger);
    }
    if (root_count != 0) {
      std::memcpy(s.host_roots.get(), roots.data(), roots.size_bytes());
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.roots.get(), s.host_roots.get(), roots.size_bytes(),
                                    cudaMemcpyHostToDevice, stream_),
                    "extract_plan: upload roots");
    }
    const bool single = image.group_count() <= options_.single_block_max_groups &&
                        image.row_count() <= options_.single_block_max_rows;
    const std::uint32_t bucket = detail::plan_bucket(image.row_count());
    VYRE_TRY_ASSIGN(cudaGraphExec_t exec, graph_for(bucket, single));
    detail::plan_params p;
    p.image = image;
    p.node_cost = node_cost;
    p.roots = s.roots.get();
    p.root_count = root_count;
    *s.host_params.get() = p;
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.params.get(), s.host_params.get(), sizeof(detail::plan_params),
                                  cudaMemcpyHostToDevice, stream_),
                  "extract_plan: upload parameters");
    VYRE_CUDA_TRY(cudaGraphLaunch(exec, stream_), "extract_plan: replay");
    VYRE_CUDA_TRY(cudaMemcpyAsync(s.host_counters.get(), s.counters.get(),
                                  sizeof(detail::plan_counters), cudaMemcpyDeviceToHost, stream_),
                  "extract_plan: read counters");
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "extract_plan: finish");
    const detail::plan_counters seen = *s.host_counters.get();
    if (seen.status.bad_row != 0xFFFFFFFFu)
      return fail(error(errc::invalid_argument, "extract: a node cost is not finite")
                      .with("row", seen.status.bad_row)
                      .fix("give every node a finite cost (drop nodes that must never be chosen)"));
    if (seen.status.bad_child != 0xFFFFFFFFu)
      return fail(error(errc::not_found, "extract: a child names an e-class that has no row")
                      .with("child_entry", seen.status.bad_child)
                      .fix("add a row for that e-class or drop the child"));
    if (seen.status.changed != 0)
      return fail(error(errc::invalid_argument,
                        "extract: costs still decrease after #classes + 1 rounds (a negative-cost "
                        "cycle makes the tree cost unbounded)")
                      .with("rounds", std::uint64_t{image.group_count()} + 1)
                      .with("classes", image.group_count())
                      .fix("make node costs non-negative, or at least free of negative cycles"));
    if (seen.status.bad_root != 0xFFFFFFFFu)
      return fail(error(errc::not_found, "extract: a root names an e-class that has no row")
                      .with("root", seen.status.bad_root)
                      .with("eclass", roots[seen.status.bad_root])
                      .fix("pass e-class ids that appear in the rows' e-class column"));
    extraction_view view;
    view.cost = s.cost.get();
    view.choice = s.choice.get();
    view.class_count = image.group_count();
    view.root_cost = seen.root_cost;
    view.rounds = image.group_count() == 0 ? 0 : seen.rounds;
    return view;
  }

  //! Extraction over a host image (host pointers) with host costs and roots, on the CPU
  //! reference or the device as `options` says; both give the same costs (bit for bit),
  //! choices and root cost. `rounds` counts the passes of the side that ran.
  expected<extraction_result> run_host(const image_columns& host_image,
                                       cuda::std::span<const double> node_cost,
                                       cuda::std::span<const std::uint32_t> roots,
                                       dispatch_options options = {}) {
    if (detail::runs_on_host(options, host_image.row_count(), extract_host_below_rows))
      return extract_reference(host_image, node_cost, roots);
    if (node_cost.size() != host_image.row_count())
      return fail(error(errc::invalid_argument, "extract: one node cost per row is required")
                      .with("costs", node_cost.size())
                      .with("rows", host_image.row_count())
                      .fix("pass exactly one cost per row, in row order"));
    VYRE_TRY(detail::check_image_counts(host_image, "extract_plan: more groups than rows"));
    VYRE_TRY(fit(host_image.row_count(), host_image.child_count()));
    storage& s = storage_;
    const image_layout layout = image_layout::for_counts(host_image.counts);
    const std::uint32_t R = layout.row_count, G = layout.group_count;
    const auto words = static_cast<std::size_t>(layout.word_count());
    // Staging: the image words, then the costs (as 2 words each, 8-byte aligned).
    const std::size_t cost_at = (words + 1) & ~std::size_t{1};
    VYRE_TRY(s.staging.ensure(cost_at + 2 * std::size_t{R} + 1, "extract_plan: pinned staging"));
    if (s.input.size() < cost_at + 2 * std::size_t{R}) {
      // Room for the largest image the capacity allows (8R + C + 1 words), one alignment word
      // and the costs (2 words per row).
      const std::size_t most = 10 * std::size_t{capacity_.rows} + capacity_.children + 2;
      VYRE_TRY_ASSIGN(s.input, device_buffer<std::uint32_t>::allocate(
                                   most, stream_, "extract_plan: uploaded image"));
    }
    detail::stage_columns(host_image, s.staging.get());
    if (R != 0) std::memcpy(s.staging.get() + cost_at, node_cost.data(), node_cost.size_bytes());
    VYRE_CUDA_TRY(
        cudaMemcpyAsync(s.input.get(), s.staging.get(), (cost_at + 2 * std::size_t{R}) * 4,
                        cudaMemcpyHostToDevice, stream_),
        "extract_plan: upload the image and costs");
    const auto* device_cost = reinterpret_cast<const double*>(s.input.get() + cost_at);
    VYRE_TRY_ASSIGN(const extraction_view view,
                    run(image_columns::from_words(s.input.get(), layout), device_cost, roots));
    // Costs (2 words each) then choices.
    VYRE_TRY(s.staging.ensure(3 * std::size_t{G} + 1, "extract_plan: pinned staging"));
    if (G != 0) {
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.staging.get(), view.cost, G * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream_),
                    "extract_plan: download costs");
      VYRE_CUDA_TRY(cudaMemcpyAsync(s.staging.get() + 2 * std::size_t{G}, view.choice,
                                    G * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream_),
                    "extract_plan: download choices");
    }
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream_), "extract_plan: download the result");
    extraction_result result;
    VYRE_TRY(try_resize(result.eclass_ids, G, "extract_plan: result"));
    VYRE_TRY(try_resize(result.cost, G, "extract_plan: result"));
    VYRE_TRY(try_resize(result.choice, G, "extract_plan: result"));
    if (G != 0) {
      std::memcpy(result.eclass_ids.data(), host_image.group_eclass_ids(),
                  G * sizeof(std::uint32_t));
      std::memcpy(result.cost.data(), s.staging.get(), G * sizeof(double));
      std::memcpy(result.choice.data(), s.staging.get() + 2 * std::size_t{G},
                  G * sizeof(std::uint32_t));
    }
    result.root_cost = view.root_cost;
    result.rounds = view.rounds;
    return result;
  }

 private:
  struct storage {
    bool ready = false;
    device_buffer<detail::plan_params> params;
    device_buffer<detail::plan_counters> counters;
    detail::pinned_buffer<detail::plan_params> host_params;
    detail::pinned_buffer<detail::plan_counters> host_counters;
    detail::pinned_buffer<std::uint32_t> host_roots;
    detail::pinned_buffer<std::uint32_t> staging;  //!< run_host: image + costs up, results down
    device_buffer<std::uint32_t> input;  //!< run_host: the uploaded image and costs (lazily)
    device_buffer<std::uint32_t> roots;
    device_buffer<std::uint32_t> dense_child, dense_row, choice;
    device_buffer<double> cost;
    detail::owned_stream capture;

    static expected<storage> allocate(const plan_capacity& at, cudaStream_t stream) {
      storage s;
      const std::size_t B = at.rows, C = (std::max)(at.children, 1u);
      const char* what = "extract_plan: allocate";
      VYRE_TRY_ASSIGN(s.params, device_buffer<detail::plan_params>::allocate(1, stream, what));
      VYRE_TRY_ASSIGN(s.counters, device_buffer<detail::plan_counters>::allocate(1, stream, what));
      VYRE_TRY_ASSIGN(s.host_params, detail::pinned_buffer<detail::plan_params>::allocate(1, what));
      VYRE_TRY_ASSIGN(s.host_counters,
                      detail::pinned_buffer<detail::plan_counters>::allocate(1, what));
      // Image words (<= 8B + C + 1) + alignment word + costs (2 words per row).
      VYRE_TRY_ASSIGN(s.dense_child, device_buffer<std::uint32_t>::allocate(C, stream, what));
      VYRE_TRY_ASSIGN(s.choice, device_buffer<std::uint32_t>::allocate(B, stream, what));
      VYRE_TRY_ASSIGN(s.dense_row, device_buffer<std::uint32_t>::allocate(B, stream, what));
      VYRE_TRY_ASSIGN(s.cost, device_buffer<double>::allocate(B, stream, what));
      VYRE_TRY_ASSIGN(s.capture, detail::make_stream("extract_plan: capture stream"));
      s.ready = true;
      return s;
    }
  };

  expected<void> fit(std::uint32_t rows, std::uint32_t children) {
    if (rows <= detail::plan_max_bucket && storage_.ready &&
        detail::plan_bucket(rows) <= capacity_.rows && children <= capacity_.children)
      return {};
    if (growth_ == plan_growth::fail && storage_.ready)
      return fail(detail::plan_capacity_error("extract_plan: the input exceeds the capacity", rows,
                                              children, capacity_));
    return reserve({rows, children});
  }

  expected<cudaGraphExec_t> graph_for(std::uint32_t bucket, bool single) {
    const std::uint64_t key = 2 * std::uint64_t{bucket} + (single ? 1 : 0);
    if (cudaGraphExec_t exec = graphs_.find(key); exec != nullptr) return exec;
    VYRE_TRY_ASSIGN(auto exec, capture(bucket, single));
    return graphs_.insert(key, std::move(exec));
  }

  expected<graph::detail::unique_exec> capture(std::uint32_t bucket, bool single) {
    using detail::block_size;
    using detail::grid_for;
    storage& s = storage_;
    const unsigned rows_grid = grid_for(bucket);
    const detail::plan_params* params = s.params.get();
    detail::plan_counters* counters = s.counters.get();
    const auto prefix = [&](cudaStream_t on) -> expected<void> {
      detail::plan_init_kernel<><<<1, 1, 0, on>>>(counters);
      VYRE_TRY(detail::launched("extract_plan: init counters"));
      detail::plan_extract_setup_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.cost.get(), s.choice.get(), s.dense_row.get(), s.dense_child.get(),
          &counters->status);
      VYRE_TRY(detail::launched("extract_plan: input checks"));
      if (single) {
        detail::plan_relax_single_block_kernel<><<<1, 1024, 0, on>>>(
            params, s.dense_child.get(), s.dense_row.get(), s.cost.get(), counters);
        VYRE_TRY(detail::launched("extract_plan: single-block fixpoint"));
      }
      return {};
    };
    auto body = [&](cudaStream_t on, cudaGraphConditionalHandle handle) -> expected<void> {
      detail::plan_relax_round_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.dense_child.get(), s.dense_row.get(), s.cost.get(), counters);
      VYRE_TRY(detail::launched("extract_plan: relax round"));
      detail::plan_extract_continue_kernel<><<<1, 1, 0, on>>>(handle, params, counters);
      return detail::launched("extract_plan: WHILE condition");
    };
    const auto suffix = [&](cudaStream_t on) -> expected<void> {
      detail::plan_choose_kernel<><<<rows_grid, block_size, 0, on>>>(
          params, s.dense_child.get(), s.dense_row.get(), s.cost.get(), s.choice.get(), counters);
      VYRE_TRY(detail::launched("extract_plan: choose rows"));
      detail::plan_root_cost_kernel<><<<1, 32, 0, on>>>(params, s.cost.get(), counters);
      return detail::launched("extract_plan: root cost");
    };
    return detail::instantiate_loop_graph(s.capture.get(), prefix, single ? nullptr : &body, suffix,
                                          "extract_plan: capture the pipeline");
  }

  cudaStream_t stream_ = nullptr;
  plan_growth growth_ = plan_growth::reallocate;
  extract_options options_{};
  plan_capacity capacity_{};
  storage storage_{};
  detail::graph_cache graphs_;
  expected<void> reserved_{};
};

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
