// SPDX-License-Identifier: Apache-2.0
//! @file
//! Runtime telemetry: lock-free counters (relaxed atomics, one cache line each so threads that
//! bump different counters never contend), a plain snapshot, and a Prometheus text exposition
//! with `vyre_*` metric names. Host-only; compiles with any C++20 compiler.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vyre {

//! A consistent-enough copy of the counters (each field read once, relaxed).
struct telemetry_snapshot {
  std::uint64_t kernel_launches = 0;
  std::uint64_t graph_launches = 0;
  std::uint64_t h2d_bytes = 0;
  std::uint64_t h2d_operations = 0;
  std::uint64_t d2h_bytes = 0;
  std::uint64_t d2h_operations = 0;
  std::uint64_t sync_points = 0;
  std::uint64_t pool_hits = 0;
  std::uint64_t pool_misses = 0;
  std::uint64_t bytes_requested = 0;
  std::uint64_t allocations = 0;
  std::uint64_t current_device_bytes = 0;
  std::uint64_t peak_device_bytes = 0;

  friend constexpr bool operator==(const telemetry_snapshot&, const telemetry_snapshot&) = default;
};

//! The live counters of one backend. Every `record_*` is a relaxed atomic add (no lock, no
//! CUDA call), so other components (graphs, egraph uploads, user launch code) record through
//! the backend's `telemetry()` freely from any thread.
class telemetry_counters {
 public:
  telemetry_counters() = default;
  telemetry_counters(const telemetry_counters&) = delete;
  telemetry_counters& operator=(const telemetry_counters&) = delete;

  void record_kernel_launch(std::uint64_t count = 1) noexcept { add(kernel_launches_, count); }
  void record_graph_launch(std::uint64_t count = 1) noexcept { add(graph_launches_, count); }
  //! One host-to-device upload of `bytes` (however many copies it took).
  void record_h2d(std::uint64_t bytes) noexcept {
    add(h2d_bytes_, bytes);
    add(h2d_operations_, 1);
  }
  //! One device-to-host download of `bytes`.
  void record_d2h(std::uint64_t bytes) noexcept {
    add(d2h_bytes_, bytes);
    add(d2h_operations_, 1);
  }
  //! A point where the host waited for the device (stream/event/device synchronize).
  void record_sync(std::uint64_t count = 1) noexcept { add(sync_points_, count); }
  void record_pool_hit() noexcept { add(pool_hits_, 1); }
  void record_pool_miss() noexcept { add(pool_misses_, 1); }
  //! A successful device allocation: `requested` bytes asked for, `held` bytes now held for it.
  void record_allocation(std::uint64_t requested, std::uint64_t held) noexcept {
    add(bytes_requested_, requested);
    add(allocations_, 1);
    const std::uint64_t now =
        current_device_bytes_.value.fetch_add(held, std::memory_order_relaxed) + held;
    std::uint64_t peak = peak_device_bytes_.value.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_device_bytes_.value.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  //! A device allocation of `held` bytes returned.
  void record_deallocation(std::uint64_t held) noexcept {
    current_device_bytes_.value.fetch_sub(held, std::memory_order_relaxed);
  }

  telemetry_snapshot snapshot() const noexcept {
    telemetry_snapshot s;
    s.kernel_launches = load(kernel_launches_);
    s.graph_launches = load(graph_launches_);
    s.h2d_bytes = load(h2d_bytes_);
    s.h2d_operations = load(h2d_operations_);
    s.d2h_bytes = load(d2h_bytes_);
    s.d2h_operations = load(d2h_operations_);
    s.sync_points = load(sync_points_);
    s.pool_hits = load(pool_hits_);
    s.pool_misses = load(pool_misses_);
    s.bytes_requested = load(bytes_requested_);
    s.allocations = load(allocations_);
    s.current_device_bytes = load(current_device_bytes_);
    s.peak_device_bytes = load(peak_device_bytes_);
    return s;
  }

  //! Zeroes every counter. `current_device_bytes` is a gauge of live memory and is kept; the
  //! peak restarts from it.
  void reset() noexcept {
    for (counter* c : {&kernel_launches_, &graph_launches_, &h2d_bytes_, &h2d_operations_,
                       &d2h_bytes_, &d2h_operations_, &sync_points_, &pool_hits_, &pool_misses_,
                       &bytes_requested_, &allocations_})
      c->value.store(0, std::memory_order_relaxed);
    peak_device_bytes_.value.store(load(current_device_bytes_), std::memory_order_relaxed);
  }

 private:
  // One cache line per counter: no false sharing between unrelated counters.
  struct alignas(64) counter {
    std::atomic<std::uint64_t> value{0};
  };
  static void add(counter& c, std::uint64_t n) noexcept {
    c.value.fetch_add(n, std::memory_order_relaxed);
  }
  static std::uint64_t load(const counter& c) noexcept {
    return c.value.load(std::memory_order_relaxed);
  }

  counter kernel_launches_, graph_launches_, h2d_bytes_, h2d_operations_, d2h_bytes_,
      d2h_operations_, sync_points_, pool_hits_, pool_misses_, bytes_requested_, allocations_,
      current_device_bytes_, peak_device_bytes_;
};

//! One metric of the exposition: name, type, help text and the snapshot field it reads.
struct telemetry_metric {
  const char* name;
  const char* type;  //!< "counter" or "gauge"
  const char* help;
  using field_pointer = std::uint64_t telemetry_snapshot::*;
  field_pointer field;
};

//! Every exported metric, in exposition order.
inline constexpr telemetry_metric telemetry_metrics[] = {
    {"vyre_kernel_launches_total", "counter", "Kernel launches recorded.",
     &telemetry_snapshot::kernel_launches},
    {"vyre_graph_launches_total", "counter", "CUDA graph launches recorded.",
     &telemetry_snapshot::graph_launches},
    {"vyre_h2d_bytes_total", "counter", "Bytes copied host to device.",
     &telemetry_snapshot::h2d_bytes},
    {"vyre_h2d_operations_total", "counter", "Host-to-device uploads.",
     &telemetry_snapshot::h2d_operations},
    {"vyre_d2h_bytes_total", "counter", "Bytes copied device to host.",
     &telemetry_snapshot::d2h_bytes},
    {"vyre_d2h_operations_total", "counter", "Device-to-host downloads.",
     &telemetry_snapshot::d2h_operations},
    {"vyre_sync_points_total", "counter", "Times the host waited for the device.",
     &telemetry_snapshot::sync_points},
    {"vyre_pool_hits_total", "counter", "Allocations served from a pool without a CUDA call.",
     &telemetry_snapshot::pool_hits},
    {"vyre_pool_misses_total", "counter", "Allocations that had to obtain new device memory.",
     &telemetry_snapshot::pool_misses},
    {"vyre_requested_bytes_total", "counter", "Device bytes requested by allocations.",
     &telemetry_snapshot::bytes_requested},
    {"vyre_allocations_total", "counter", "Successful device allocations.",
     &telemetry_snapshot::allocations},
    {"vyre_device_bytes", "gauge", "Device bytes currently held by live allocations.",
     &telemetry_snapshot::current_device_bytes},
    {"vyre_device_bytes_peak", "gauge", "Peak of vyre_device_bytes since creation or reset.",
     &telemetry_snapshot::peak_device_bytes},
};

//! Prometheus text exposition (format 0.0.4) of `s`: `# HELP`, `# TYPE` and one sample per
//! metric. `labels` is inserted verbatim between braces when not empty, e.g. `device="0"`.
//! @pre `labels` is a valid Prometheus label list (names `[a-zA-Z_][a-zA-Z0-9_]*`, values
//!      quoted with `\\`, `\"` and `\n` escaped); `prometheus_label` builds one safely.
inline std::string to_prometheus(const telemetry_snapshot& s, std::string_view labels = {}) {
  std::string text;
  text.reserve(1600);
  for (const telemetry_metric& m : telemetry_metrics) {
    text += "# HELP ";
    text += m.name;
    text += ' ';
    text += m.help;
    text += "\n# TYPE ";
    text += m.name;
    text += ' ';
    text += m.type;
    text += '\n';
    text += m.name;
    if (!labels.empty()) {
      text += '{';
      text += labels;
      text += '}';
    }
    text += ' ';
    text += std::to_string(s.*(m.field));
    text += '\n';
  }
  return text;
}

//! `name="value"` with the value escaped as the Prometheus text format requires.
inline std::string prometheus_label(std::string_view name, std::string_view value) {
  std::string text(name);
  text += "=\"";
  for (const char c : value) {
    if (c == '\\')
      text += "\\\\";
    else if (c == '"')
      text += "\\\"";
    else if (c == '\n')
      text += "\\n";
    else
      text += c;
  }
  text += '"';
  return text;
}

}  // namespace vyre
