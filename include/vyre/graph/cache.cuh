// SPDX-License-Identifier: Apache-2.0
//! @file
//! `graph_cache`: graph key -> instantiated graph, captured on the first miss, bounded by an
//! entry count and by the device memory the entries hold (least recently used first out), with
//! hit/miss/capture/eviction counters.
//!
//!     vyre::graph::graph_cache<> cache({.max_entries = 32, .max_device_bytes = 1ull << 30});
//!     cache.launch(stream, key, scratch_bytes, [&](cudaStream_t s) { enqueue_join(s, key); });
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/graph/captured_graph.cuh"
#include "vyre/graph/events.hpp"
#include "vyre/graph/key.hpp"
#include "vyre/graph/lru_map.hpp"

namespace vyre::graph {

//! An LRU cache of instantiated graphs. Not thread-safe: use one per thread or guard it.
//! Error policy as in `basic_captured_graph`: a template parameter, `throw_exception` by default.
template <class OnError = on_error::throw_exception>
class graph_cache {
  static_assert(on_error::policy<OnError>,
                "vyre::graph::graph_cache: OnError must be vyre::on_error::throw_exception or "
                "vyre::on_error::return_expected");

 public:
  using graph_type = basic_captured_graph<OnError>;
  template <class T>
  using result = result_t<OnError, T>;

  //! @param options passed to every capture (event hook, instantiation flags).
  //! @throws vyre::error_exception under `throw_exception` when a limit is zero; under
  //!         `return_expected` use `make`, which returns the error instead.
  explicit graph_cache(cache_limits limits = {}, graph_options options = {})
      : entries_(limits), options_(options) {
    if constexpr (std::same_as<OnError, on_error::throw_exception>)
      apply_error_policy<OnError>(entries_.check_limits(limits));
  }
  graph_cache(graph_cache&&) noexcept = default;
  graph_cache& operator=(graph_cache&&) noexcept = default;
  ~graph_cache() {}  // user-provided: keeps nvcc from inferring a host-device destructor

  //! A cache with checked limits, under either policy.
  static result<graph_cache> make(cache_limits limits, graph_options options = {}) {
    auto run = [&]() -> expected<graph_cache> {
      VYRE_TRY(entries_type::check_limits(limits));
      return graph_cache(unchecked{}, limits, options);
    };
    return apply_error_policy<OnError>(run());
  }

  //! The graph cached under `key`, or the one `capture(stream)` produces on a miss (captured
  //! with `captured_graph::capture_on_stream`, so the same contract and cleanup apply).
  //! `device_bytes` is the device memory the graph keeps alive (its scratch buffers, memory
  //! nodes); it counts against `max_device_bytes`. Inserting may evict the least recently used
  //! entries, which destroys their graphs: do not launch an evicted graph's work afterwards
  //! unless it completed (CUDA keeps launched work alive, so destroying is safe).
  //! @return never null; valid until the next call that inserts, erases or clears.
  template <class Capture>
  result<graph_type*> get_or_capture(cudaStream_t stream, const graph_key& key,
                                     std::uint64_t device_bytes, Capture&& capture) {
    return apply_error_policy<OnError>(get_internal(stream, key, device_bytes, capture));
  }

  //! The graph cached under `key`, or the one `build()` returns on a miss: any builder whose
  //! result is `vyre::expected<captured_graph_expected>` (a graph assembled from several
  //! captures, e.g. around a conditional node). Counted as a capture; limits and eviction as
  //! in `get_or_capture`. A failed or throwing build leaves the cache unchanged.
  //! @return never null; valid until the next call that inserts, erases or clears.
  template <class Build>
  result<graph_type*> get_or_build(const graph_key& key, std::uint64_t device_bytes,
                                   Build&& build) {
    return apply_error_policy<OnError>(build_internal(key, device_bytes, build));
  }

  //! `get_or_capture` then `launch(stream)`.
  template <class Capture>
  result<void> launch(cudaStream_t stream, const graph_key& key, std::uint64_t device_bytes,
                      Capture&& capture) {
    auto run = [&]() -> expected<void> {
      VYRE_TRY_ASSIGN(graph_type * graph, get_internal(stream, key, device_bytes, capture));
      return graph->core_.launch(stream);
    };
    return apply_error_policy<OnError>(run());
  }

  //! The cached graph or null; counts a hit or a miss.
  graph_type* find(const graph_key& key) noexcept { return entries_.find(key); }
  bool contains(const graph_key& key) const noexcept { return entries_.contains(key); }
  //! Destroys the entry under `key`; returns whether there was one.
  bool erase(const graph_key& key) noexcept { return entries_.erase(key); }
  void clear() noexcept { entries_.clear(); }
  std::size_t size() const noexcept { return entries_.size(); }
  cache_stats stats() const noexcept { return entries_.stats(); }
  cache_limits limits() const noexcept { return entries_.limits(); }

 private:
  struct unchecked {};
  graph_cache(unchecked, cache_limits limits, graph_options options) noexcept
      : entries_(limits), options_(options) {}

  template <class Capture>
  expected<graph_type*> get_internal(cudaStream_t stream, const graph_key& key,
                                     std::uint64_t device_bytes, Capture& capture) {
    if (graph_type* hit = entries_.find(key)) return hit;
    if (device_bytes > entries_.limits().max_device_bytes)
      return fail(error(errc::out_of_memory,
                        "graph_cache: one graph holds more device memory "
                        "than the whole cache may")
                      .with("device_bytes", device_bytes)
                      .with("max_device_bytes", entries_.limits().max_device_bytes)
                      .fix("raise cache_limits::max_device_bytes, or capture this graph "
                           "without the cache"));
    auto captured = basic_captured_graph<on_error::return_expected>::capture_on_stream(
        stream, capture, options_);
    if (!captured) return fail(captured.error());
    entries_.count_capture();
    graph_type graph = std::move(*captured).template with_policy<OnError>();
    return entries_.insert(key, std::move(graph), device_bytes);
  }

  template <class Build>
  expected<graph_type*> build_internal(const graph_key& key, std::uint64_t device_bytes,
                                       Build& build) {
    static_assert(std::same_as<std::remove_cvref_t<std::invoke_result_t<Build&>>,
                               expected<basic_captured_graph<on_error::return_expected>>>,
                  "vyre::graph::graph_cache::get_or_build: build() must return "
                  "vyre::expected<vyre::graph::captured_graph_expected>");
    if (graph_type* hit = entries_.find(key)) return hit;
    if (device_bytes > entries_.limits().max_device_bytes)
      return fail(error(errc::out_of_memory,
                        "graph_cache: one graph holds more device memory "
                        "than the whole cache may")
                      .with("device_bytes", device_bytes)
                      .with("max_device_bytes", entries_.limits().max_device_bytes)
                      .fix("raise cache_limits::max_device_bytes, or build this graph "
                           "without the cache"));
    auto built = std::invoke(build);
    if (!built) return fail(built.error());
    entries_.count_capture();
    graph_type graph = std::move(*built).template with_policy<OnError>();
    return entries_.insert(key, std::move(graph), device_bytes);
  }

  using entries_type = lru_map<graph_key, graph_type, graph_key_hash>;
  entries_type entries_;
  graph_options options_;
};

}  // namespace vyre::graph
