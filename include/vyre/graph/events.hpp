// SPDX-License-Identifier: Apache-2.0
//! @file
//! A hook through which captured graphs and the graph cache report what they do (captures,
//! instantiations, launches, updates), so a telemetry layer can count them without this
//! component depending on it. Host-only C++20.
#pragma once

#include <atomic>
#include <cstdint>

namespace vyre::graph {

//! What a graph object just did.
enum class graph_event : std::uint8_t {
  capture,        //!< a stream capture ended in a graph
  instantiate,    //!< a graph became an executable graph
  launch,         //!< an executable graph was launched
  upload,         //!< an executable graph was uploaded to the device
  update,         //!< an executable graph was changed in place (node params or whole graph)
  reinstantiate,  //!< a refused whole-graph update fell back to a new instantiation
};
inline constexpr int graph_event_count = 6;

//! A plain callback plus its context; empty by default (reports go nowhere). Copyable, so
//! a graph and the cache it came from can share one.
//! @note `notify` runs on the thread that made the call, inside the call: keep it cheap and
//!       non-throwing (it is invoked from noexcept paths).
struct graph_event_hook {
  void* context = nullptr;
  void (*notify)(void* context, graph_event event) noexcept = nullptr;

  void operator()(graph_event event) const noexcept {
    if (notify != nullptr) notify(context, event);
  }
  explicit operator bool() const noexcept { return notify != nullptr; }
};

//! Ready-made event counters (relaxed atomics, safe from several threads); `hook()` reports
//! into them.
struct graph_event_counters {
  std::atomic<std::uint64_t> counts[graph_event_count]{};

  std::uint64_t count(graph_event event) const noexcept {
    return counts[static_cast<int>(event)].load(std::memory_order_relaxed);
  }
  graph_event_hook hook() noexcept {
    return graph_event_hook{
        this, [](void* self, graph_event event) noexcept {
          static_cast<graph_event_counters*>(self)->counts[static_cast<int>(event)].fetch_add(
              1, std::memory_order_relaxed);
        }};
  }
};

}  // namespace vyre::graph
