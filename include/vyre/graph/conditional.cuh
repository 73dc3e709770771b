// SPDX-License-Identifier: Apache-2.0
//! @file
//! Conditional WHILE graphs (CUDA 12.4+): a body that repeats on the device while a condition
//! the body itself sets stays non-zero, so a fixpoint loop never returns to the host between
//! rounds. Both builders here are shorthands of `build_loop_graph` (vyre/graph/loop_graph.cuh),
//! which also takes a prefix and a suffix.
//!
//! Two levels:
//! - `build_while_graph(stream, body)`: the body gets the loop's `while_condition` and decides
//!   itself (`condition.set(keep_going)` from one device thread per round).
//! - `build_fixpoint_graph(stream, control, max_rounds, body)`: the body's kernels call
//!   `mark_changed(control)` when they change anything; vyre appends a one-thread decision
//!   kernel that repeats the body while something changed, up to `max_rounds` rounds, and
//!   records the rounds run and whether the loop converged in `*control`.
//!   `build_gated_fixpoint_graph` puts a prefix before it whose kernel decides whether the
//!   rounds run at all (work whose size the device learns, skipped when it would not fit).
#pragma once

#include <concepts>
#include <cstdint>
#include <type_traits>

#include <cuda_runtime_api.h>
#include <cuda/std/cstdint>

#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/detail/capture.cuh"
#include "vyre/graph/loop_graph.cuh"

namespace vyre::graph {

//! Device-resident state of a fixpoint loop (user-allocated device memory, 16 bytes, 4-byte
//! aligned). Each graph launch zeroes `changed`, `rounds` and `converged` first.
struct fixpoint_control {
  cuda::std::uint32_t changed = 0;    //!< set by the body when a round changed something
  cuda::std::uint32_t rounds = 0;     //!< rounds run in the last launch
  cuda::std::uint32_t converged = 0;  //!< 1 when the last round changed nothing
  cuda::std::uint32_t reserved = 0;
};

#if defined(__CUDACC__)
//! Records, from any device thread, that this round changed something.
VYRE_DEVICE inline void mark_changed(fixpoint_control* control) noexcept {
  atomicExch(&control->changed, 1u);
}

namespace detail {
// One thread: end of a round. A template so a header kernel has one definition per program.
template <int = 0>
VYRE_KERNEL void fixpoint_decide(cudaGraphConditionalHandle handle, fixpoint_control* control,
                                 cuda::std::uint32_t max_rounds) {
  const cuda::std::uint32_t rounds = control->rounds + 1u;
  const bool changed = control->changed != 0u;
  control->rounds = rounds;
  control->changed = 0u;
  control->converged = changed ? 0u : 1u;
  cudaGraphSetConditional(handle, (changed && rounds < max_rounds) ? 1u : 0u);
}
}  // namespace detail
#endif

//! Builds and instantiates a graph whose single WHILE node repeats `body` while its condition
//! is non-zero. The condition starts at 1 on every launch; the body's kernels receive the
//! `while_condition` and must clear it (`condition.set(false)`) to stop.
//!
//! `body(stream, condition)` enqueues the body on `stream` and returns `void`, `cudaError_t`
//! or `vyre::expected<void>`; the capture rules and cleanup guarantees are those of
//! `captured_graph::capture_on_stream`. The body may hold kernels, memsets, memcpys, empty
//! nodes and child graphs of one device (CUDA's rule for conditional bodies).
//! @note CUDA allows one instantiation of a graph with conditional nodes at a time, and such
//!       a graph cannot be cloned or used as a child graph.
template <class OnError = on_error::throw_exception, class Body>
result_t<OnError, basic_captured_graph<OnError>> build_while_graph(
    cudaStream_t stream, Body&& body, const graph_options& options = {}) {
  return build_loop_graph<OnError>(stream, no_stage{}, body, no_stage{},
                                   {.graph = options, .what = "build_while_graph"});
}

#if defined(__CUDACC__)
namespace detail {
//! `reset -> [prefix] -> WHILE(body; decide) -> suffix`: the fixpoint builders' one body.
template <class OnError, class Prefix, class Body, class Suffix>
result_t<OnError, basic_captured_graph<OnError>> build_fixpoint(
    cudaStream_t stream, fixpoint_control* control, std::uint32_t max_rounds, Prefix& prefix,
    Body& body, Suffix& suffix, loop_entry entry, const graph_options& options) {
  auto run = [&]() -> expected<basic_captured_graph<OnError>> {
    if (control == nullptr)
      return fail(error(errc::invalid_argument, "build_fixpoint_graph: control is null")
                      .fix("pass device memory for one vyre::graph::fixpoint_control"));
    if (max_rounds == 0)
      return fail(error(errc::invalid_argument,
                        "build_fixpoint_graph: max_rounds must be at "
                        "least 1")
                      .with("max_rounds", max_rounds)
                      .fix("bound the loop by the most rounds the fixpoint may need"));
    // Every field: the host reads the control block whole after a launch.
    auto reset_then_prefix = [&](cudaStream_t s, while_condition condition) -> expected<void> {
      VYRE_CUDA_TRY(cudaMemsetAsync(control, 0, sizeof(fixpoint_control), s),
                    "build_fixpoint_graph: reset the control block");
      if constexpr (is_no_stage<Prefix>) {
        (void)condition;
        return {};
      } else {
        return invoke_capture_body(prefix, s, condition);
      }
    };
    auto decide_after_body = [&](cudaStream_t s, while_condition condition) -> expected<void> {
      VYRE_TRY(invoke_capture_body(body, s));
      fixpoint_decide<<<1, 1, 0, s>>>(condition.handle, control, max_rounds);
      return cuda_check(cudaGetLastError(), "build_fixpoint_graph: launch of the decision kernel");
    };
    auto built = build_loop_graph<on_error::return_expected>(
        stream, reset_then_prefix, decide_after_body, suffix,
        {.graph = options, .entry = entry, .what = "build_fixpoint_graph"});
    if (!built) return fail(built.error());
    return std::move(*built).template with_policy<OnError>();
  };
  return apply_error_policy<OnError>(run());
}
}  // namespace detail

//! Builds and instantiates a device fixpoint loop. Each launch: zero `control`'s counters, then
//! repeat { `body(stream)`; decide } where decide ends the loop once a round did not call
//! `mark_changed(control)` or after `max_rounds` rounds, then `suffix(stream)` (work for the
//! converged state, in the same launch; `no_stage{}` for none). Read `control->rounds` and
//! `control->converged` after the launch completes (`converged == 0` with `rounds ==
//! max_rounds` means the cap stopped it, and the suffix ran anyway: give a suffix that needs
//! convergence a cap the loop cannot reach).
//! @pre `control` points at device memory for one `fixpoint_control`; `max_rounds >= 1`.
template <class OnError = on_error::throw_exception, class Body, class Suffix>
requires(!std::same_as<std::remove_cvref_t<Suffix>, graph_options>)
    result_t<OnError, basic_captured_graph<OnError>> build_fixpoint_graph(
        cudaStream_t stream, fixpoint_control* control, std::uint32_t max_rounds, Body&& body,
        Suffix&& suffix, const graph_options& options = {}) {
  no_stage none;
  return detail::build_fixpoint<OnError>(stream, control, max_rounds, none, body, suffix,
                                         loop_entry::body_runs_first, options);
}

//! A fixpoint loop behind a gate: each launch zeroes `control`, runs `prefix(stream,
//! condition)`, whose kernels open the loop with `condition.set(true)` from one thread (else the
//! rounds are skipped: `control->rounds == 0`), then the rounds as in `build_fixpoint_graph`,
//! then `suffix(stream)` either way. It is how work whose size the device learns (a search
//! that may outgrow its buffers) runs in one launch and skips what must not run.
template <class OnError = on_error::throw_exception, class Prefix, class Body, class Suffix>
result_t<OnError, basic_captured_graph<OnError>> build_gated_fixpoint_graph(
    cudaStream_t stream, fixpoint_control* control, std::uint32_t max_rounds, Prefix&& prefix,
    Body&& body, Suffix&& suffix, const graph_options& options = {}) {
  return detail::build_fixpoint<OnError>(stream, control, max_rounds, prefix, body, suffix,
                                         loop_entry::prefix_decides, options);
}

//! `build_fixpoint_graph` without a suffix.
template <class OnError = on_error::throw_exception, class Body>
result_t<OnError, basic_captured_graph<OnError>> build_fixpoint_graph(
    cudaStream_t stream, fixpoint_control* control, std::uint32_t max_rounds, Body&& body,
    const graph_options& options = {}) {
  return build_fixpoint_graph<OnError>(stream, control, max_rounds, body, no_stage{}, options);
}
#endif

}  // namespace vyre::graph
