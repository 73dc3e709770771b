// SPDX-License-Identifier: Apache-2.0
//! @file
//! Fused kernels driven by a compile-time plan.
//!
//! `fused_pipeline<Plan, T, Stages...>` takes one elementwise functor per stage of a plan's
//! stage list (functor k implements stage k) and instantiates one kernel per group of the plan.
//! Each kernel reads an element once, applies its group's functors in order in registers and
//! writes the result once: the intermediates between fused stages never touch device memory.
//! Groups run in order on one stream, each group's result materialized in device memory for
//! the next.
//!
//!     struct scale { float k; __device__ float operator()(float v) const { return v * k; } };
//!     struct shift { float b; __device__ float operator()(float v) const { return v + b; } };
//!     constexpr auto plan = vyre::fusion::static_plan(stages, budget);  // 2 stages
//!     vyre::fusion::fused_pipeline<plan, float, scale, shift> pipeline{scale{2.f}, shift{1.f}};
//!     auto done = pipeline.run(d_in, d_out, count, stream);   // vyre::expected<void>
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/std/span>
#include <cuda/std/tuple>

#include "vyre/core/checked.hpp"
#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/fusion/stage.hpp"

namespace vyre::fusion {

namespace detail {
template <class P>
inline constexpr bool is_fixed_plan = false;
template <std::size_t N>
inline constexpr bool is_fixed_plan<fixed_plan<N>> = true;

//! Elements per 16-byte access, or 1 where T does not tile 16 bytes.
template <class T>
inline constexpr std::size_t vector_width = (sizeof(T) <= 16 && 16 % sizeof(T) == 0 &&
                                             alignof(T) <= 16)
                                                ? 16 / sizeof(T)
                                                : 1;

template <class T>
struct alignas(16) vector_of {
  T lane[vector_width<T>];
};

inline constexpr unsigned fused_block_threads = 256;
}  // namespace detail

//! Kernels live in a named namespace: VYRE_KERNEL's hidden visibility needs external linkage.
namespace kernels {

//! Applies `stages...` in order to each element of `in`, writing `out` (which may equal `in`).
//! `Vectorized`: both pointers are 16-byte aligned, so whole 16-byte chunks move per access.
template <class T, bool Vectorized, class... Stages>
VYRE_KERNEL void fused_group(const T* in, T* out, std::size_t count, Stages... stages) {
  const std::size_t thread = std::size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x;
  std::size_t scalar_begin = 0;
  if constexpr (Vectorized) {
    using vector = detail::vector_of<T>;
    constexpr std::size_t width = detail::vector_width<T>;
    const std::size_t chunks = count / width;
    const vector* in_chunks = reinterpret_cast<const vector*>(in);
    vector* out_chunks = reinterpret_cast<vector*>(out);
    for (std::size_t c = thread; c < chunks; c += stride) {
      vector v = in_chunks[c];
#pragma unroll
      for (std::size_t lane = 0; lane < width; ++lane) ((v.lane[lane] = stages(v.lane[lane])), ...);
      out_chunks[c] = v;
    }
    scalar_begin = chunks * width;
  }
  for (std::size_t i = scalar_begin + thread; i < count; i += stride) {
    T v = in[i];
    ((v = stages(v)), ...);
    out[i] = v;
  }
}

}  // namespace kernels

//! One kernel per group of `Plan`, applying the group's stage functors in registers.
//!
//! @tparam Plan a `fixed_plan<N>` value, normally `static_plan(...)`; its stage list order is
//!         the functor order.
//! @tparam T the element type every stage maps to itself.
//! @tparam Stages N functor types, each trivially copyable (they are kernel arguments) with a
//!         `__device__` `T operator()(T) const`.
template <auto Plan, class T, class... Stages>
class fused_pipeline {
  using plan_type = std::remove_cvref_t<decltype(Plan)>;
  static_assert(detail::is_fixed_plan<plan_type>,
                "vyre::fusion::fused_pipeline: Plan must be a vyre::fusion::fixed_plan value, "
                "e.g. constexpr auto plan = vyre::fusion::static_plan(stages, budget)");
  static_assert(plan_type::capacity == sizeof...(Stages),
                "vyre::fusion::fused_pipeline: pass exactly one stage functor per stage of the "
                "plan, in stage-list order");
  static_assert((std::is_trivially_copyable_v<Stages> && ...),
                "vyre::fusion::fused_pipeline: stage functors are kernel arguments and must be "
                "trivially copyable");
  static_assert(std::is_trivially_copyable_v<T>,
                "vyre::fusion::fused_pipeline: T must be trivially copyable");

 public:
  //! The plan the kernels were instantiated from.
  static constexpr const plan_type& plan = Plan;
  static constexpr std::size_t launch_count = Plan.launch_count();

  fused_pipeline() requires(std::is_default_constructible_v<Stages>&&...) = default;
  explicit fused_pipeline(Stages... stages) : stages_(stages...) {}

  //! Runs every group on `stream`: group 0 reads `in` and writes `out`, later groups update
  //! `out` in place. Asynchronous: synchronize `stream` before reading `out`.
  //! @pre `in` and `out` hold `count` elements each and are either the same buffer or do not
  //!      overlap (checked).
  //! @returns `errc::invalid_argument` for null or partly overlapping buffers,
  //!          `errc::cuda_runtime` (naming the group) when a launch fails.
  template <class OnError = on_error::return_expected>
  result_t<OnError, void> run(const T* in, T* out, std::size_t count, cudaStream_t stream) const {
    return apply_error_policy<OnError>(run_groups(in, out, count, {}, stream));
  }

  //! As above, but group g (all but the last) writes its result to `boundaries[g]` (`count`
  //! elements each), which group g + 1 reads: every materialized boundary stays inspectable,
  //! e.g. for a stage that needs its input on the host.
  //! @pre `boundaries.size() == launch_count - 1` (checked); no boundary buffer partly overlaps
  //!      another buffer of the call.
  template <class OnError = on_error::return_expected>
  result_t<OnError, void> run(const T* in, T* out, std::size_t count,
                              cuda::std::span<T* const> boundaries, cudaStream_t stream) const {
    if (boundaries.size() + 1 != launch_count)
      return apply_error_policy<OnError>(expected<void>(
          fail(error(errc::invalid_argument,
                     "vyre::fusion::fused_pipeline::run: one boundary buffer per group boundary")
                   .with("boundaries", boundaries.size())
                   .with("expected", launch_count - 1)
                   .fix("pass launch_count - 1 buffers of count elements, or use the overload "
                        "without boundaries"))));
    return apply_error_policy<OnError>(run_groups(in, out, count, boundaries, stream));
  }

 private:
  using stage_tuple = cuda::std::tuple<Stages...>;

  expected<void> run_groups(const T* in, T* out, std::size_t count,
                            cuda::std::span<T* const> boundaries, cudaStream_t stream) const {
    if (count == 0 || launch_count == 0) return {};
    VYRE_TRY_ASSIGN(const std::size_t bytes,
                    checked_mul<std::size_t>(count, sizeof(T),
                                             "vyre::fusion::fused_pipeline::run: count * "
                                             "sizeof(T)"));
    VYRE_TRY(check_buffer(in, "input", 0));
    VYRE_TRY(check_buffer(out, "output", 0));
    VYRE_TRY(check_overlap(in, out, bytes));
    for (std::size_t b = 0; b < boundaries.size(); ++b)
      VYRE_TRY(check_buffer(boundaries[b], "boundary", b));
    return launch_all(in, out, count, boundaries, stream, std::make_index_sequence<launch_count>{});
  }

  static expected<void> check_buffer(const T* buffer, const char* role, std::size_t index) {
    if (buffer != nullptr) return {};
    return fail(
        error(errc::invalid_argument, "vyre::fusion::fused_pipeline::run: a device buffer is null")
            .with("boundary_index", index)
            .about(std::string_view(role))
            .fix("pass device buffers of count elements"));
  }

  static expected<void> check_overlap(const T* in, const T* out, std::size_t bytes) {
    const auto a = reinterpret_cast<std::uintptr_t>(in);
    const auto b = reinterpret_cast<std::uintptr_t>(out);
    if (a == b || a + bytes <= b || b + bytes <= a) return {};
    return fail(error(errc::invalid_argument,
                      "vyre::fusion::fused_pipeline::run: input and output partly overlap")
                    .with("input_address", a)
                    .with("output_address", b)
                    .with("bytes", bytes)
                    .fix("pass the same buffer (in place) or two disjoint buffers"));
  }

  template <std::size_t... G>
  expected<void> launch_all(const T* in, T* out, std::size_t count,
                            cuda::std::span<T* const> boundaries, cudaStream_t stream,
                            std::index_sequence<G...>) const {
    expected<void> status{};
    // Groups in order; stop at the first failed launch.
    (void)((status = launch_group<G>(in, out, count, boundaries, stream), status.has_value()) &&
           ...);
    return status;
  }

  template <std::size_t G>
  expected<void> launch_group(const T* in, T* out, std::size_t count,
                              cuda::std::span<T* const> boundaries, cudaStream_t stream) const {
    constexpr group g = Plan.groups()[G];
    const bool keep_boundaries = !boundaries.empty();
    const T* source = G == 0 ? in : (keep_boundaries ? boundaries[G - 1] : out);
    T* destination = G + 1 == launch_count ? out : (keep_boundaries ? boundaries[G] : out);
    return launch_functors<g.first_stage>(source, destination, count, stream, G,
                                          std::make_index_sequence<g.stage_count>{});
  }

  template <std::size_t First, std::size_t... I>
  expected<void> launch_functors(const T* source, T* destination, std::size_t count,
                                 cudaStream_t stream, std::size_t group_index,
                                 std::index_sequence<I...>) const {
    constexpr std::size_t width = detail::vector_width<T>;
    const bool aligned = width > 1 && reinterpret_cast<std::uintptr_t>(source) % 16 == 0 &&
                         reinterpret_cast<std::uintptr_t>(destination) % 16 == 0;
    const std::size_t work = aligned ? (count / width) + (count % width) : count;
    constexpr std::size_t max_blocks = 0x7FFFFFFF;
    const std::size_t wanted =
        (work + detail::fused_block_threads - 1) / detail::fused_block_threads;
    const dim3 blocks(static_cast<unsigned>(wanted < max_blocks ? wanted : max_blocks));
    const dim3 threads(detail::fused_block_threads);
    if (aligned)
      kernels::fused_group<T, true, cuda::std::tuple_element_t<First + I, stage_tuple>...>
          <<<blocks, threads, 0, stream>>>(source, destination, count,
                                           cuda::std::get<First + I>(stages_)...);
    else
      kernels::fused_group<T, false, cuda::std::tuple_element_t<First + I, stage_tuple>...>
          <<<blocks, threads, 0, stream>>>(source, destination, count,
                                           cuda::std::get<First + I>(stages_)...);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess)
      return fail(cuda_error(status,
                             "vyre::fusion::fused_pipeline::run: a group's fused kernel "
                             "failed to launch")
                      .with("group", group_index)
                      .with("first_stage", First)
                      .with("stage_count", sizeof...(I))
                      .fix("check the stream and device; an earlier asynchronous error may be "
                           "reported here"));
    return {};
  }

  stage_tuple stages_{};
};

}  // namespace vyre::fusion
