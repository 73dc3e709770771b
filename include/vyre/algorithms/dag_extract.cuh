// SPDX-License-Identifier: Apache-2.0
//! @file
//! DAG-cost extraction on the GPU: `extract_dag(gpu, rows, node_cost, roots, options, stream)`.
//! The same method and the same result as the CPU `extract_dag` (`dag_extract.hpp`) for the same
//! options: the host builds the problem and the three starting maps, then one thread block runs
//! each search (`detail/dag_search.hpp`, the code the CPU threads run), all searches in one
//! launch. The block screens the classes in parallel; switches, kicks and undo run on its first
//! thread. The host picks the cheapest search (ties to the lowest index) and restricts its map to
//! what the roots reach.
//!
//!     vyre::backend<vyre::default_policies> gpu;
//!     auto found = vyre::algorithms::extract_dag(gpu, raw_rows, costs, roots);
//!     // found->dag_cost, found->choice (per e-class, ascending ids), as on the CPU
//!
//! Speed: the screen runs on the block's threads, but every switch, kick and undo runs on its
//! first thread, roughly ten times slower than a CPU core. With the default 4 searches the CPU
//! engine is faster; the GPU pays off when it runs many searches side by side (one block per SM:
//! `options.searches` = the SM count takes about as long as 4 and finds cheaper selections on
//! large e-graphs). BENCHMARKS.md has the measurements.
//!
//! Memory: the problem (about 4 words per row and per child entry) and per search about
//! 5 words per class + 2 per child entry, from the backend's allocation policy; staging through
//! its pinned pool.
#pragma once

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <cuda/std/span>

#include "vyre/algorithms/dag_extract.hpp"
#include "vyre/algorithms/detail/dag_search.hpp"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/core/error.hpp"
#include "vyre/runtime/backend.cuh"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

namespace detail {

//! The executor of a thread block: loops spread over its threads, `single` on thread 0, a
//! barrier after each so every thread sees what the others wrote.
struct dag_block_exec {
  std::uint32_t* total;   //!< shared: what `compact` kept
  std::uint32_t* counts;  //!< shared, one per warp

  template <class F>
  __device__ void for_each(std::uint32_t n, F&& f) {
    for (std::uint32_t i = threadIdx.x; i < n; i += blockDim.x) f(i);
    __syncthreads();
  }
  template <class F>
  __device__ void single(F&& f) {
    __syncthreads();  // every thread has read the scalars `f` may change
    if (threadIdx.x == 0) f();
    __syncthreads();
  }
  //! Ascending compaction: each thread takes a contiguous chunk, offsets by a scan of counts
  //! (within each warp by shuffles, then over the warps' totals).
  template <class Keep>
  __device__ std::uint32_t compact(std::uint32_t n, Keep&& keep, std::uint32_t* out) {
    const std::uint32_t per = (n + blockDim.x - 1) / blockDim.x;
    const std::uint32_t begin = threadIdx.x * per < n ? threadIdx.x * per : n;
    const std::uint32_t end = begin + per < n ? begin + per : n;
    std::uint32_t mine = 0;
    for (std::uint32_t i = begin; i < end; ++i) mine += keep(i) ? 1u : 0u;
    const std::uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    std::uint32_t inclusive = mine;
    for (std::uint32_t step = 1; step < 32; step *= 2) {
      const std::uint32_t below = __shfl_up_sync(0xFFFFFFFFu, inclusive, step);
      if (lane >= step) inclusive += below;
    }
    if (lane == 31) counts[warp] = inclusive;
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint32_t running = 0;
      for (std::uint32_t w = 0; w < blockDim.x / 32; ++w) {
        const std::uint32_t c = counts[w];
        counts[w] = running;
        running += c;
      }
      *total = running;
    }
    __syncthreads();
    std::uint32_t at = counts[warp] + inclusive - mine;
    for (std::uint32_t i = begin; i < end; ++i)
      if (keep(i)) out[at++] = i;
    const std::uint32_t kept = *total;
    __syncthreads();
    return kept;
  }
};

//! Threads per search: one per screened row up to this many (the screen is the parallel part).
inline constexpr unsigned dag_search_block = 1024;

inline unsigned dag_search_threads(std::uint64_t candidates) noexcept {
  const std::uint64_t warps = (candidates + 31) / 32;
  return warps == 0                       ? 32u
         : warps * 32 >= dag_search_block ? dag_search_block
                                          : unsigned(warps * 32);
}

//! One block per search: search i starts from `starts + (i % 3) * classes` (greedy, the tree
//! method's selection, the tree start) with seed `knobs.seed + i`.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void __launch_bounds__(dag_search_block)
    dag_search_kernel(dag_problem_ref problem, dag_search_layout layout, std::uint32_t* memory,
                      const std::uint32_t* starts, dag_search_knobs knobs, double* best_cost,
                      unsigned long long* moves) {
  __shared__ dag_search_scalars scalars;
  __shared__ std::uint32_t kept;
  __shared__ std::uint32_t counts[dag_search_block / 32];
  extern __shared__ std::uint32_t per_class[];
  const std::uint32_t search = blockIdx.x;
  const dag_search_arrays arrays = layout.arrays(memory + search * layout.words, per_class);
  dag_block_exec exec{&kept, counts};
  dag_search_knobs mine = knobs;
  mine.seed = knobs.seed + search;
  dag_local_search<dag_block_exec>(problem, arrays, scalars, exec)
      .run(starts + (search % 3) * layout.classes, mine);
  if (threadIdx.x == 0) {
    best_cost[search] = scalars.best_cost;
    moves[search] = scalars.moves;
  }
}

//! The problem's arrays, the starts and the result slots packed for one upload: doubles first,
//! then words (the word columns in `each_word_column`'s order, then the starts), then bytes
//! (`usable`).
struct dag_device_problem {
  std::uint64_t cost = 0, best_cost = 0, moves = 0;  // double / u64 offsets (8-byte units)
  std::uint64_t starts = 0;                          // words
  std::uint64_t usable = 0;                          // bytes
  std::uint64_t wide_words = 0, words = 0, bytes = 0;

  //! `f(host column, the view's pointer to it)` for every word column, in upload order.
  template <class View, class F>
  static void each_word_column(const dag_problem& p, View& view, F&& f) {
    f(p.row_class, view.row_class);
    f(p.child_start, view.child_start);
    f(p.child, view.child);
    f(p.class_start, view.class_start);
    f(p.class_rows, view.class_rows);
    f(p.parent_start, view.parent_start);
    f(p.parent_rows, view.parent_rows);
    f(p.roots, view.roots);
    f(p.multi, view.multi);
    f(p.candidate_row, view.candidate_row);
    f(p.candidate_multi, view.candidate_multi);
  }

  static dag_device_problem of(const dag_problem& p, std::uint32_t searches) noexcept {
    dag_device_problem l;
    l.cost = 0;
    l.best_cost = p.row_count;
    l.moves = l.best_cost + searches;
    l.wide_words = l.moves + searches;
    dag_problem_ref unused;
    each_word_column(p, unused, [&](const std::vector<std::uint32_t>& column, auto&) {
      l.starts += column.size();
    });
    l.words = l.starts + 3 * std::uint64_t{p.class_count};
    l.usable = 8 * l.wide_words + 4 * l.words;
    l.bytes = l.usable + p.row_count;
    return l;
  }
};

inline expected<dag_extraction_result> extract_dag_on_device(const runtime_ref& runtime,
                                                             const dag_problem& p,
                                                             const dag_options& options,
                                                             cudaStream_t stream, const char* who,
                                                             const extraction_result* reference) {
  VYRE_TRY_ASSIGN(const dag_starts starts, make_dag_starts(p, who, reference));
  const std::uint32_t searches = options.searches > 0 ? options.searches : 1u;
  const dag_device_problem l = dag_device_problem::of(p, searches);
  dag_search_layout search = p.search_layout();
  // The per-class arrays in shared memory when the backend's device lets a block have that much.
  constexpr std::uint64_t static_bytes = 4096;  // the kernel's own shared variables, rounded up
  search.in_shared = 16 * search.classes + static_bytes <= runtime.shared_memory_optin;
  if (search.in_shared)
    VYRE_CUDA_TRY(
        cudaFuncSetAttribute(dag_search_kernel<>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(search.shared_bytes())),
        "extract_dag (GPU): allow the shared memory");

  // One pinned block up (problem + starts), one device block for it, one for the searches.
  VYRE_TRY_ASSIGN(auto staged, pinned_array<unsigned char>::allocate(runtime, l.bytes,
                                                                     "extract_dag (GPU): staging"));
  wait_on_exit copies_done(stream);  // the upload reads `staged`
  unsigned char* const host = staged.get();
  auto words_at = [&](std::uint64_t offset) {
    return reinterpret_cast<std::uint32_t*>(host + 8 * l.wide_words) + offset;
  };
  std::memcpy(host + 8 * l.cost, p.cost.data(), p.cost.size() * sizeof(double));
  std::uint32_t* word = words_at(0);
  dag_problem_ref unused;
  dag_device_problem::each_word_column(
      p, unused, [&](const std::vector<std::uint32_t>& column, auto&) {
        if (!column.empty())
          std::memcpy(word, column.data(), column.size() * sizeof(std::uint32_t));
        word += column.size();
      });
  for (std::uint32_t k = 0; k < 3; ++k)
    std::memcpy(words_at(l.starts + std::uint64_t{k} * p.class_count), starts.of(k).data(),
                std::size_t{p.class_count} * sizeof(std::uint32_t));
  std::memcpy(host + l.usable, p.usable.data(), p.usable.size());

  VYRE_TRY_ASSIGN(auto device,
                  runtime.allocate<unsigned char>(l.bytes, stream, "extract_dag (GPU): problem"));
  VYRE_TRY_ASSIGN(auto memory, runtime.allocate<std::uint32_t>(search.words * searches, stream,
                                                               "extract_dag (GPU): searches"));
  VYRE_CUDA_TRY(cudaMemcpyAsync(device.get(), host, l.bytes, cudaMemcpyHostToDevice, stream),
                "extract_dag (GPU): upload the problem");
  if (runtime.telemetry != nullptr) runtime.telemetry->record_h2d(l.bytes);

  unsigned char* const base = device.get();
  const auto* dwords = reinterpret_cast<const std::uint32_t*>(base + 8 * l.wide_words);
  auto* const wide = reinterpret_cast<double*>(base);
  dag_problem_ref view = p.ref();
  const std::uint32_t* column_at = dwords;
  dag_device_problem::each_word_column(
      p, view, [&](const std::vector<std::uint32_t>& column, const std::uint32_t*& field) {
        field = column_at;
        column_at += column.size();
      });
  view.cost = wide + l.cost;
  view.usable = base + l.usable;
  double* const best_cost = wide + l.best_cost;
  auto* const moves = reinterpret_cast<unsigned long long*>(wide + l.moves);
  dag_search_kernel<>
      <<<searches, dag_search_threads(p.candidate_row.size()), search.shared_bytes(), stream>>>(
          view, search, memory.get(), dwords + l.starts,
          dag_search_knobs{options.seed, options.kick_budget, options.kick_patience,
                           starts.lower_bound},
          best_cost, moves);
  VYRE_TRY(launched("extract_dag (GPU): searches"));

  // Costs and moves down, then the winner's map (back into the staging block: it is free now).
  static_assert(sizeof(double) == sizeof(unsigned long long));
  VYRE_TRY(copy_to_host(runtime, reinterpret_cast<double*>(host), best_cost,
                        2 * std::size_t{searches}, stream,
                        "extract_dag (GPU): read the searches' costs"));
  std::vector<double> found_cost;
  std::vector<std::uint32_t> found;
  unsigned long long found_moves = 0;
  try {
    found_cost.assign(reinterpret_cast<const double*>(host),
                      reinterpret_cast<const double*>(host) + searches);
    found.resize(p.class_count);
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("extract_dag (GPU): result", p.row_count, who));
  }
  const std::uint32_t winner = dag_winner(found_cost, starts.lower_bound);
  std::memcpy(&found_moves, host + 8 * (std::size_t{searches} + winner), sizeof found_moves);
  const dag_search_arrays won = search.arrays(memory.get() + winner * search.words);
  VYRE_TRY(copy_to_host(runtime, reinterpret_cast<std::uint32_t*>(host), won.best, p.class_count,
                        stream, "extract_dag (GPU): read the winning map"));
  copies_done.disarm();
  std::memcpy(found.data(), host, std::size_t{p.class_count} * sizeof(std::uint32_t));
  return finish_dag(p, starts, found, found_moves, who);
}

}  // namespace detail

//! DAG-cost extraction on the device: the heuristic of the CPU `extract_dag`, one thread block
//! per search, with the same result for the same options (`threads` is not used). The rows,
//! costs and roots are host memory (the problem is built on the host); `stream` orders the
//! device work, and the call returns when the result is on the host.
//! @throws / returns (the backend's error policy): everything the CPU `extract_dag` reports,
//!         device allocation failures (`errc::out_of_memory`) and CUDA failures. Nothing leaks.
template <policy_bundle P>
typename backend<P>::template result<dag_extraction_result> extract_dag(
    backend<P>& gpu, dag_rows rows, cuda::std::span<const double> node_cost,
    cuda::std::span<const std::uint32_t> roots, const dag_options& options = {},
    cudaStream_t stream = nullptr) {
  constexpr const char* who = "extract_dag (GPU)";
  auto found = [&]() -> expected<dag_extraction_result> {
    VYRE_TRY_ASSIGN(const detail::dag_input input, rows.input(node_cost, roots, who));
    return detail::extract_dag_on_device(detail::runtime_of(gpu), input.problem, options, stream,
                                         who, &input.tree);
  }();
  return apply_error_policy<typename P::error_policy>(std::move(found));
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
