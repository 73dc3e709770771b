// SPDX-License-Identifier: Apache-2.0
//! @file
//! Congruence closure on the device (the GPU rebuild). Per round: canonicalise every child
//! through the flattened union-find (one load), re-sign every row, radix-sort rows by signature,
//! find each row's leader (the first row of its signature run with equal op and children: full
//! rows are compared, so a 32-bit collision never merges different rows), hook the leader's and
//! the row's e-classes with a lock-free CAS (larger root under smaller, so a set's root is its
//! smallest e-class), then flatten by pointer jumping. Rounds repeat until nothing merges.
//! The final round's leaders are the rows the rebuilt image keeps.
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
#include <utility>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/atomic>
#include <cuda/functional>

#include "vyre/algorithms/build.cuh"
#include "vyre/algorithms/detail/device_support.cuh"
#include "vyre/algorithms/detail/signature.hpp"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"

namespace vyre::algorithms {

//! What the device congruence closure found (device buffers, plus counters on the host).
struct device_congruence_result {
  device_buffer<std::uint32_t> eclass_ids;      //!< G original e-class ids, ascending
  device_buffer<std::uint32_t> representative;  //!< parallel: smallest id of its merged set
  std::uint64_t merges = 0;                     //!< unions that joined two sets
  std::uint32_t rounds = 0;                     //!< rounds run, the final (merge-free) one included
  device_packed_image rebuilt;                  //!< canonical, duplicate-free, regrouped, re-signed
  device_buffer<std::uint32_t> kept_rows;       //!< original row of each rebuilt row

  // Host-only special members, defaulted out of line: nvcc would otherwise infer them
  // __host__ __device__ (the type is held in cuda::std::expected) and reject their calls to
  // host-only members.
  device_congruence_result();
  ~device_congruence_result();
  device_congruence_result(device_congruence_result&&) noexcept;
  device_congruence_result& operator=(device_congruence_result&&) noexcept;
};
inline device_congruence_result::device_congruence_result() = default;
inline device_congruence_result::~device_congruence_result() = default;
inline device_congruence_result::device_congruence_result(device_congruence_result&&) noexcept =
    default;
inline device_congruence_result& device_congruence_result::operator=(
    device_congruence_result&&) noexcept = default;

//! The signature used to bucket rows: the image's row signature (docs/image_format.md) (over dense
//! class indices).
struct design_signature {
  VYRE_HOST_DEVICE std::uint32_t operator()(std::uint32_t op, const std::uint32_t* children,
                                            std::uint32_t length) const noexcept {
    return detail::row_signature(op, children, length);
  }
};

namespace detail {

using atomic_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;

VYRE_DEVICE inline std::uint32_t load_relaxed(std::uint32_t* p) noexcept {
  return atomic_u32(*p).load(cuda::std::memory_order_relaxed);
}

VYRE_DEVICE inline std::uint32_t find_root(std::uint32_t* parent, std::uint32_t x) noexcept {
  for (std::uint32_t up = load_relaxed(parent + x); up != x; up = load_relaxed(parent + x)) x = up;
  return x;
}

//! Lock-free union: hook the larger root under the smaller with a CAS; retry when another
//! thread re-hooked that root first. Hooks only go from larger to smaller ids, so no cycle
//! can form and a set's root is its smallest member.
VYRE_DEVICE inline void hook(std::uint32_t* parent, std::uint32_t a, std::uint32_t b,
                             device_status* status) noexcept {
  for (;;) {
    a = find_root(parent, a);
    b = find_root(parent, b);
    if (a == b) return;
    const std::uint32_t high = a > b ? a : b;
    const std::uint32_t low = a > b ? b : a;
    std::uint32_t expected = high;
    if (atomic_u32(parent[high])
            .compare_exchange_strong(expected, low, cuda::std::memory_order_relaxed)) {
      atomicAdd(&status->merges, 1ull);
      status->changed = 1;
      return;
    }
  }
}

//! dense_row[group_rows[i]] = group of position i; parent[g] = g.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void congruence_setup_kernel(image_columns image, std::uint32_t* dense_row,
                                         std::uint32_t* parent) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.group_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto g = static_cast<std::uint32_t>(i);
    parent[g] = g;
    for (std::uint32_t k = image.group_offsets()[g]; k < image.group_offsets()[g + 1]; ++k)
      dense_row[image.group_rows()[k]] = g;
  }
}

//! Rows whose children range leaves the children column (checked once; rounds trust it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void check_ranges_kernel(image_columns image, device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x)
    if (std::uint64_t{image.row_children_offsets()[i]} + image.row_children_lens()[i] >
        image.child_count())
      atomicMin(&status->bad_row, static_cast<std::uint32_t>(i));
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void canonicalise_kernel(const std::uint32_t* dense_child, const std::uint32_t* parent,
                                     std::uint32_t* canon, std::uint32_t child_count,
                                     device_status* status) {
  const std::uint64_t first = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  if (first == 0) status->changed = 0;  // read back after this round's unions
  for (std::uint64_t i = first; i < child_count; i += std::uint64_t{gridDim.x} * blockDim.x)
    canon[i] = parent[dense_child[i]];
}

template <class Signature>
VYRE_KERNEL void sign_kernel(image_columns image, const std::uint32_t* canon, Signature signature,
                             std::uint32_t* keys, std::uint32_t* rows) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(i);
    keys[r] = signature(image.row_language_op_ids()[r], canon + image.row_children_offsets()[r],
                        image.row_children_lens()[r]);
    rows[r] = r;
  }
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

//! Each row finds its leader: the first row of its signature run equal to it (rows ascend
//! inside a run because the radix sort is stable). A row with another leader is congruent to
//! it: their e-classes are hooked. `leader_flag[r]` says whether row r leads.
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void leaders_kernel(image_columns image, const std::uint32_t* canon,
                                const std::uint32_t* sorted_rows, const std::uint32_t* run_start,
                                const std::uint32_t* dense_row, std::uint32_t* parent,
                                std::uint8_t* leader_flag, device_status* status) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.row_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto p = static_cast<std::uint32_t>(i);
    const std::uint32_t r = sorted_rows[p];
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

//! Pointer jumping: every node points at its root (roots do not move during this kernel).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void flatten_kernel(std::uint32_t* parent, std::uint32_t count) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto g = static_cast<std::uint32_t>(i);
    const std::uint32_t root = find_root(parent, g);
    atomic_u32(parent[g]).store(root, cuda::std::memory_order_relaxed);
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void gather_kept_kernel(image_columns image, const std::uint32_t* kept,
                                    std::uint32_t kept_count, const std::uint32_t* dense_row,
                                    const std::uint32_t* parent, std::uint32_t* eclass,
                                    std::uint32_t* op, std::uint32_t* lens) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < kept_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t r = kept[i];
    eclass[i] = image.group_eclass_ids()[parent[dense_row[r]]];
    op[i] = image.row_language_op_ids()[r];
    lens[i] = image.row_children_lens()[r];
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void gather_children_kernel(image_columns image, const std::uint32_t* kept,
                                        std::uint32_t kept_count, const std::uint32_t* new_offsets,
                                        const std::uint32_t* canon, std::uint32_t* children) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < kept_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint32_t r = kept[i];
    const std::uint32_t* from = canon + image.row_children_offsets()[r];
    std::uint32_t* to = children + new_offsets[i];
    for (std::uint32_t k = 0; k < image.row_children_lens()[r]; ++k)
      to[k] = image.group_eclass_ids()[from[k]];
  }
}

template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void class_map_kernel(image_columns image, const std::uint32_t* parent,
                                  std::uint32_t* ids, std::uint32_t* representative) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
       i < image.group_count(); i += std::uint64_t{gridDim.x} * blockDim.x) {
    ids[i] = image.group_eclass_ids()[i];
    representative[i] = image.group_eclass_ids()[parent[i]];
  }
}

//! The WHILE body's last node: count the round and keep looping while it merged something
//! (and the round bound is not reached; then `changed` stays set and the host reports it).
template <int = 0>  // header kernels are templates: one symbol however many TUs include them
VYRE_KERNEL void continue_while_kernel(cudaGraphConditionalHandle handle, device_status* status,
                                       std::uint32_t* rounds, std::uint32_t round_limit) {
  const std::uint32_t done = ++*rounds;
  cudaGraphSetConditional(handle, status->changed != 0 && done < round_limit ? 1u : 0u);
}

//! Owners of the graph objects the conditional-WHILE driver creates.
struct graph_owner {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStream_t capture = nullptr;
  graph_owner() = default;
  graph_owner(const graph_owner&) = delete;
  graph_owner& operator=(const graph_owner&) = delete;
  ~graph_owner() {
    if (exec != nullptr) (void)cudaGraphExecDestroy(exec);
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    if (capture != nullptr) (void)cudaStreamDestroy(capture);
  }
};

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

}  // namespace detail

//! Congruence closure of the packed image `image` (device pointers, e.g. `build(...).ref()`),
//! on `stream`. Rows are congruent when they have the same op and the same children after
//! mapping every child to its representative; their e-classes merge until nothing merges. The
//! representative of a set is its smallest original e-class id.
//! @param driver `loop_driver::flag_readback`: one 24-byte status readback per round;
//!        `loop_driver::conditional_graph`: the rounds run inside one CUDA graph with a
//!        conditional WHILE node (CUDA 12.4+), with no host round trip until the fixpoint.
//! @tparam Signature the bucketing hash over (op, dense canonical children, length); any
//!         function works, collisions only cost time (tests use a degenerate one).
//! @throws nothing; errors: a child without rows (`errc::not_found`), a children range past
//!         the column (`errc::out_of_range`), CUDA failures. Nothing leaks.
template <class Signature = design_signature>
expected<device_congruence_result> congruence(const image_columns& image, cudaStream_t stream,
                                              loop_driver driver = loop_driver::flag_readback,
                                              Signature signature = {}) {
  using detail::block_size;
  using detail::grid_for;
  const std::uint32_t R = image.row_count(), C = image.child_count(), G = image.group_count();
  using u32_buffer = device_buffer<std::uint32_t>;

  VYRE_TRY_ASSIGN(auto status,
                  device_buffer<detail::device_status>::allocate(1, stream, "congruence: status"));
  VYRE_TRY_ASSIGN(u32_buffer dense_row, u32_buffer::allocate(R, stream, "congruence: row classes"));
  VYRE_TRY_ASSIGN(u32_buffer dense_child,
                  u32_buffer::allocate(C, stream, "congruence: child classes"));
  VYRE_TRY_ASSIGN(u32_buffer parent, u32_buffer::allocate(G, stream, "congruence: union-find"));
  VYRE_TRY_ASSIGN(u32_buffer canon,
                  u32_buffer::allocate(C, stream, "congruence: canonical children"));
  VYRE_TRY_ASSIGN(u32_buffer keys, u32_buffer::allocate(R, stream, "congruence: signatures"));
  VYRE_TRY_ASSIGN(u32_buffer rows, u32_buffer::allocate(R, stream, "congruence: row ids"));
  VYRE_TRY_ASSIGN(u32_buffer sorted_keys,
                  u32_buffer::allocate(R, stream, "congruence: sorted signatures"));
  VYRE_TRY_ASSIGN(u32_buffer sorted_rows,
                  u32_buffer::allocate(R, stream, "congruence: sorted rows"));
  VYRE_TRY_ASSIGN(u32_buffer run_start, u32_buffer::allocate(R, stream, "congruence: run starts"));
  VYRE_TRY_ASSIGN(auto leader_flag,
                  device_buffer<std::uint8_t>::allocate(R, stream, "congruence: leaders"));
  // The WHILE driver's round counter (the graph counts its own rounds).
  const bool while_graph = R != 0 && driver == loop_driver::conditional_graph;
  VYRE_TRY_ASSIGN(u32_buffer rounds_run,
                  u32_buffer::allocate(while_graph ? 1 : 0, stream, "congruence: round counter"));
  if (while_graph)
    VYRE_CUDA_TRY(cudaMemsetAsync(rounds_run.get(), 0, sizeof(std::uint32_t), stream),
                  "congruence: round counter");

  // Scratch for the per-round sort and scan, sized once.
  std::size_t sort_bytes = 0, scan_bytes = 0;
  VYRE_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.get(), sorted_keys.get(),
                                                rows.get(), sorted_rows.get(), R, 0, 32, stream),
                "congruence: sort scratch size");
  VYRE_CUDA_TRY(
      cub::DeviceScan::InclusiveScan(nullptr, scan_bytes, run_start.get(), run_start.get(),
                                     cuda::maximum<std::uint32_t>{}, R, stream),
      "congruence: scan scratch size");
  VYRE_TRY_ASSIGN(auto scratch, device_buffer<unsigned char>::allocate(
                                    (std::max)((std::max)(sort_bytes, scan_bytes), std::size_t{1}),
                                    stream, "congruence: CUB scratch"));

  detail::init_status_kernel<><<<1, 1, 0, stream>>>(status.get());
  VYRE_TRY(detail::launched("congruence: init status"));
  if (G != 0) {
    detail::congruence_setup_kernel<>
        <<<grid_for(G), block_size, 0, stream>>>(image, dense_row.get(), parent.get());
    VYRE_TRY(detail::launched("congruence: setup"));
  }
  if (R != 0) {
    detail::check_ranges_kernel<><<<grid_for(R), block_size, 0, stream>>>(image, status.get());
    VYRE_TRY(detail::launched("congruence: check ranges"));
  }
  if (C != 0) {
    detail::dense_children_kernel<>
        <<<grid_for(C), block_size, 0, stream>>>(image, dense_child.get(), status.get());
    VYRE_TRY(detail::launched("congruence: dense children"));
  }
  detail::device_status seen{};
  VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "congruence: read input status"));
  if (seen.bad_row != 0xFFFFFFFFu || seen.bad_child != 0xFFFFFFFFu)
    return fail(detail::congruence_input_error(seen, image));

  // One round, enqueued on `on` (the caller's stream, or a capturing stream).
  const auto enqueue_round = [&](cudaStream_t on) -> expected<void> {
    detail::canonicalise_kernel<><<<grid_for(C), block_size, 0, on>>>(
        dense_child.get(), parent.get(), canon.get(), C, status.get());
    VYRE_TRY(detail::launched("congruence: canonicalise children"));
    detail::sign_kernel<<<grid_for(R), block_size, 0, on>>>(image, canon.get(), signature,
                                                            keys.get(), rows.get());
    VYRE_TRY(detail::launched("congruence: sign rows"));
    std::size_t bytes = sort_bytes;
    VYRE_CUDA_TRY(
        cub::DeviceRadixSort::SortPairs(scratch.get(), bytes, keys.get(), sorted_keys.get(),
                                        rows.get(), sorted_rows.get(), R, 0, 32, on),
        "congruence: sort rows by signature (cub::DeviceRadixSort::SortPairs)");
    detail::run_heads_kernel<>
        <<<grid_for(R), block_size, 0, on>>>(sorted_keys.get(), run_start.get(), R);
    VYRE_TRY(detail::launched("congruence: signature runs"));
    bytes = scan_bytes;
    VYRE_CUDA_TRY(
        cub::DeviceScan::InclusiveScan(scratch.get(), bytes, run_start.get(), run_start.get(),
                                       cuda::maximum<std::uint32_t>{}, R, on),
        "congruence: signature run starts (cub::DeviceScan::InclusiveScan)");
    detail::leaders_kernel<><<<grid_for(R), block_size, 0, on>>>(
        image, canon.get(), sorted_rows.get(), run_start.get(), dense_row.get(), parent.get(),
        leader_flag.get(), status.get());
    VYRE_TRY(detail::launched("congruence: leaders and unions"));
    detail::flatten_kernel<><<<grid_for(G), block_size, 0, on>>>(parent.get(), G);
    VYRE_TRY(detail::launched("congruence: flatten"));
    return {};
  };
  // Every round but the last merges at least once, so G + 1 rounds always suffice.
  const std::uint32_t round_limit = G + 1;
  const auto too_many_rounds = [&](std::uint32_t rounds) {
    return error(errc::invalid_state, "congruence: more rounds than e-classes (a library bug)")
        .with("rounds", rounds)
        .with("classes", G)
        .fix("report this with the input");
  };

  device_congruence_result result;
  if (R != 0 && driver == loop_driver::flag_readback) {
    for (bool changed = true; changed;) {
      if (result.rounds == round_limit) return fail(too_many_rounds(result.rounds));
      ++result.rounds;
      VYRE_TRY(enqueue_round(stream));
      VYRE_TRY(
          detail::copy_to_host(&seen, status.get(), 1, stream, "congruence: read round status"));
      changed = seen.changed != 0;
    }
  } else if (while_graph) {
    // A graph whose only node is a conditional WHILE; its body is one captured round plus the
    // kernel that decides whether to run another.
    detail::graph_owner owner;
    VYRE_CUDA_TRY(cudaGraphCreate(&owner.graph, 0), "congruence: create the WHILE graph");
    cudaGraphConditionalHandle handle{};
    VYRE_CUDA_TRY(
        cudaGraphConditionalHandleCreate(&handle, owner.graph, 1, cudaGraphCondAssignDefault),
        "congruence: create the WHILE condition");
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t node{};
#if CUDART_VERSION >= 13000
    const cudaError_t added = cudaGraphAddNode(&node, owner.graph, nullptr, nullptr, 0, &params);
#else
    const cudaError_t added = cudaGraphAddNode(&node, owner.graph, nullptr, 0, &params);
#endif
    VYRE_CUDA_TRY(added, "congruence: add the conditional WHILE node");
    const cudaGraph_t body = params.conditional.phGraph_out[0];
    VYRE_CUDA_TRY(cudaStreamCreateWithFlags(&owner.capture, cudaStreamNonBlocking),
                  "congruence: capture stream");
    VYRE_CUDA_TRY(cudaStreamBeginCaptureToGraph(owner.capture, body, nullptr, nullptr, 0,
                                                cudaStreamCaptureModeThreadLocal),
                  "congruence: capture the round");
    auto captured = enqueue_round(owner.capture);
    if (captured) {
      detail::continue_while_kernel<>
          <<<1, 1, 0, owner.capture>>>(handle, status.get(), rounds_run.get(), round_limit);
      captured = detail::launched("congruence: WHILE condition");
    }
    cudaGraph_t ended = nullptr;
    const cudaError_t end_status = cudaStreamEndCapture(owner.capture, &ended);
    VYRE_TRY(captured);
    VYRE_CUDA_TRY(end_status, "congruence: end the round capture");
    VYRE_CUDA_TRY(cudaGraphInstantiate(&owner.exec, owner.graph, 0),
                  "congruence: instantiate the WHILE graph (needs CUDA 12.4+ conditional nodes)");
    VYRE_CUDA_TRY(cudaGraphLaunch(owner.exec, stream), "congruence: launch the WHILE graph");
    VYRE_TRY(detail::copy_to_host(&result.rounds, rounds_run.get(), 1, stream,
                                  "congruence: read rounds"));
    VYRE_TRY(detail::copy_to_host(&seen, status.get(), 1, stream, "congruence: read status"));
    if (seen.changed != 0) return fail(too_many_rounds(result.rounds));
  }
  result.merges = seen.merges;

  // Class map.
  VYRE_TRY_ASSIGN(result.eclass_ids, u32_buffer::allocate(G, stream, "congruence: class ids"));
  VYRE_TRY_ASSIGN(result.representative, u32_buffer::allocate(G, stream, "congruence: class map"));
  if (G != 0) {
    detail::class_map_kernel<><<<grid_for(G), block_size, 0, stream>>>(
        image, parent.get(), result.eclass_ids.get(), result.representative.get());
    VYRE_TRY(detail::launched("congruence: class map"));
  }

  // Rebuilt rows: the final round's leaders, in row order, mapped back to original ids.
  VYRE_TRY_ASSIGN(result.kept_rows, u32_buffer::allocate(R, stream, "congruence: kept rows"));
  VYRE_TRY_ASSIGN(auto kept_count,
                  device_buffer<std::uint32_t>::allocate(1, stream, "congruence: kept count"));
  std::uint32_t K = 0;
  if (R != 0) {
    detail::iota_kernel<><<<grid_for(R), block_size, 0, stream>>>(rows.get(), R);
    VYRE_TRY(detail::launched("congruence: row ids"));
    VYRE_TRY(detail::cub_call(
        [&](void* temp, std::size_t& bytes) {
          return cub::DeviceSelect::Flagged(temp, bytes, rows.get(), leader_flag.get(),
                                            result.kept_rows.get(), kept_count.get(), R, stream);
        },
        stream, "congruence: kept rows (cub::DeviceSelect::Flagged)"));
    VYRE_TRY(detail::copy_to_host(&K, kept_count.get(), 1, stream, "congruence: read kept count"));
  }
  // Reuse per-row scratch for the rebuilt columns (K <= R).
  std::uint32_t* new_eclass = keys.get();
  std::uint32_t* new_op = sorted_keys.get();
  std::uint32_t* new_lens = sorted_rows.get();
  std::uint32_t* new_offsets = run_start.get();
  std::uint32_t new_child_count = 0;
  if (K != 0) {
    detail::gather_kept_kernel<>
        <<<grid_for(K), block_size, 0, stream>>>(image, result.kept_rows.get(), K, dense_row.get(),
                                                 parent.get(), new_eclass, new_op, new_lens);
    VYRE_TRY(detail::launched("congruence: gather kept rows"));
    VYRE_TRY(detail::cub_call(
        [&](void* temp, std::size_t& bytes) {
          return cub::DeviceScan::ExclusiveSum(temp, bytes, new_lens, new_offsets, K, stream);
        },
        stream, "congruence: rebuilt offsets (cub::DeviceScan::ExclusiveSum)"));
    std::uint32_t last[2] = {0, 0};
    VYRE_TRY(detail::copy_to_host(last, new_offsets + (K - 1), 1, stream,
                                  "congruence: read child count"));
    VYRE_TRY(detail::copy_to_host(last + 1, new_lens + (K - 1), 1, stream,
                                  "congruence: read child count"));
    new_child_count = last[0] + last[1];
  }
  VYRE_TRY_ASSIGN(u32_buffer new_children,
                  u32_buffer::allocate(new_child_count, stream, "congruence: rebuilt children"));
  if (K != 0) {
    detail::gather_children_kernel<><<<grid_for(K), block_size, 0, stream>>>(
        image, result.kept_rows.get(), K, new_offsets, canon.get(), new_children.get());
    VYRE_TRY(detail::launched("congruence: gather rebuilt children"));
  }
  const raw_rows_ref rebuilt_rows{new_eclass,         new_op, new_lens,
                                  new_children.get(), K,      new_child_count};
  VYRE_TRY_ASSIGN(result.rebuilt, build(rebuilt_rows, stream, child_check::off));
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream), "congruence: finish");
  return result;
}

}  // namespace vyre::algorithms

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
