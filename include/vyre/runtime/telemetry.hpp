// SPDX-License-Identifier: Apache-2.0
//! @file
//! Runtime telemetry: per-thread counters (no lock and no shared cache line on the recording
//! path), a plain snapshot, and a Prometheus text exposition with `vyre_*` metric names.
//! Host-only; compiles with any C++20 compiler.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <thread>

#include "vyre/runtime/detail/chain.hpp"

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

//! The live counters of one backend. Recording costs no lock, no CUDA call and (apart from the
//! device-bytes gauge) no atomic read-modify-write: each thread counts into a slot of its own,
//! found through a small thread-local cache, and `snapshot()` sums the slots. Other components
//! (graphs, egraph uploads, user launch code) record through the backend's `telemetry()` freely
//! from any thread.
class telemetry_counters {
  struct thread_slot;

 public:
  telemetry_counters() = default;
  telemetry_counters(const telemetry_counters&) = delete;
  telemetry_counters& operator=(const telemetry_counters&) = delete;
  ~telemetry_counters() {
    detail::delete_chain(slots_.load(std::memory_order_acquire), &thread_slot::next);
  }

  void record_kernel_launch(std::uint64_t count = 1) noexcept { add(kernel_launches, count); }
  void record_graph_launch(std::uint64_t count = 1) noexcept { add(graph_launches, count); }
  //! One host-to-device upload of `bytes` (however many copies it took).
  void record_h2d(std::uint64_t bytes) noexcept {
    if (thread_slot* slot = my_slot()) {
      bump(*slot, h2d_bytes, bytes);
      bump(*slot, h2d_operations, 1);
    }
  }
  //! One device-to-host download of `bytes`.
  void record_d2h(std::uint64_t bytes) noexcept {
    if (thread_slot* slot = my_slot()) {
      bump(*slot, d2h_bytes, bytes);
      bump(*slot, d2h_operations, 1);
    }
  }
  //! A point where the host waited for the device (stream/event/device synchronize).
  void record_sync(std::uint64_t count = 1) noexcept { add(sync_points, count); }
  void record_pool_hit() noexcept { add(pool_hits, 1); }
  //! A pool hit that served `requested` bytes: `record_pool_hit()` plus `record_request()`
  //! with one slot look-up.
  void record_pool_hit(std::uint64_t requested) noexcept {
    if (thread_slot* slot = my_slot()) record_hit(*slot, requested);
  }
  void record_pool_miss() noexcept { add(pool_misses, 1); }
  //! A successful allocation of `requested` bytes (counts it; the gauge is separate).
  void record_request(std::uint64_t requested) noexcept {
    if (thread_slot* slot = my_slot()) {
      bump(*slot, bytes_requested, requested);
      bump(*slot, allocations, 1);
    }
  }
  //! The allocator took `bytes` of device memory (the gauge and its peak are global: a peak
  //! cannot be summed from per-thread parts, so pools call this only when they grow).
  void record_device_acquired(std::uint64_t bytes) noexcept {
    const std::uint64_t now =
        current_device_bytes_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::uint64_t peak = peak_device_bytes_.load(std::memory_order_relaxed);
    while (now > peak &&
           !peak_device_bytes_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  //! The allocator gave `bytes` of device memory back.
  void record_device_released(std::uint64_t bytes) noexcept {
    current_device_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
  }
  //! An allocation that takes its own device memory: `requested` bytes asked for, `held`
  //! bytes taken from the device for it.
  void record_allocation(std::uint64_t requested, std::uint64_t held) noexcept {
    record_request(requested);
    record_device_acquired(held);
  }
  //! The device memory of such an allocation (`held` bytes) given back.
  void record_deallocation(std::uint64_t held) noexcept { record_device_released(held); }

  //! The calling thread's counters in this instance, looked up once, for a hot path that keeps
  //! the handle (a pool's per-thread cache does). Record through it from that thread only; a
  //! default-constructed handle (or one made without host memory) records nothing.
  class local_counters {
   public:
    local_counters() noexcept = default;
    explicit operator bool() const noexcept { return slot_ != nullptr; }
    //! Same as `telemetry_counters::record_pool_hit(requested)`, with no look-up.
    void record_pool_hit(std::uint64_t requested) const noexcept {
      if (slot_ != nullptr) record_hit(*slot_, requested);
    }

   private:
    friend class telemetry_counters;
    explicit local_counters(thread_slot* slot) noexcept : slot_(slot) {}
    thread_slot* slot_ = nullptr;
  };
  //! This thread's `local_counters` (valid as long as this object lives).
  local_counters local() noexcept { return local_counters(my_slot()); }

  telemetry_snapshot snapshot() const noexcept {
    std::uint64_t totals[counter_count] = {};
    sum_slots(totals);
    for (int c = 0; c < counter_count; ++c)
      totals[c] -= baseline_[c].load(std::memory_order_relaxed);
    telemetry_snapshot s;
    s.kernel_launches = totals[kernel_launches];
    s.graph_launches = totals[graph_launches];
    s.h2d_bytes = totals[h2d_bytes];
    s.h2d_operations = totals[h2d_operations];
    s.d2h_bytes = totals[d2h_bytes];
    s.d2h_operations = totals[d2h_operations];
    s.sync_points = totals[sync_points];
    s.pool_hits = totals[pool_hits] + totals[served_hits];
    s.pool_misses = totals[pool_misses];
    s.bytes_requested = totals[bytes_requested];
    s.allocations = totals[allocations] + totals[served_hits];
    s.current_device_bytes = current_device_bytes_.load(std::memory_order_relaxed);
    s.peak_device_bytes = peak_device_bytes_.load(std::memory_order_relaxed);
    return s;
  }

  //! Zeroes every counter (the slots belong to their threads, so the current sums become the
  //! new baseline). `current_device_bytes` is a gauge of live memory and is kept; the peak
  //! restarts from it.
  void reset() noexcept {
    std::uint64_t totals[counter_count] = {};
    sum_slots(totals);
    for (int c = 0; c < counter_count; ++c)
      baseline_[c].store(totals[c], std::memory_order_relaxed);
    peak_device_bytes_.store(current_device_bytes_.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
  }

 private:
  enum counter_id : int {
    kernel_launches,
    graph_launches,
    h2d_bytes,
    h2d_operations,
    d2h_bytes,
    d2h_operations,
    sync_points,
    pool_hits,
    pool_misses,
    bytes_requested,
    allocations,
    served_hits,  // hits recorded with their bytes: each is also an allocation
    counter_count
  };
  // One thread's counters. Only the owning thread writes them (a plain load and store, no
  // read-modify-write); snapshots read them relaxed from any thread. 128-byte aligned: CPUs
  // that prefetch cache lines in pairs would otherwise share a pair between two threads.
  struct alignas(128) thread_slot {
    std::atomic<std::uint64_t> value[counter_count] = {};
    std::thread::id owner;
    thread_slot* next = nullptr;
  };
  // Which slot this thread uses in the last few instances it recorded into. Instance ids are
  // never reused, so an entry of a destroyed instance can never match a new one.
  struct slot_cache_entry {
    std::uint64_t instance = 0;
    thread_slot* slot = nullptr;
  };
  static constexpr int slot_cache_size = 4;

  // Adds every thread's counters (read relaxed) into `totals`.
  void sum_slots(std::uint64_t (&totals)[counter_count]) const noexcept {
    for (const thread_slot* slot = slots_.load(std::memory_order_acquire); slot != nullptr;
         slot = slot->next)
      for (int c = 0; c < counter_count; ++c)
        totals[c] += slot->value[c].load(std::memory_order_relaxed);
  }

  static std::uint64_t next_instance_id() noexcept {
    static std::atomic<std::uint64_t> next{1};
    return next.fetch_add(1, std::memory_order_relaxed);
  }
  static slot_cache_entry* slot_cache() noexcept {
    static thread_local slot_cache_entry entries[slot_cache_size];
    return entries;
  }

  thread_slot* my_slot() noexcept {
    slot_cache_entry* cache = slot_cache();
    for (int i = 0; i < slot_cache_size; ++i)
      if (cache[i].instance == instance_) return cache[i].slot;
    return find_or_add_slot(cache);
  }
  // First record of this thread into this instance: reuse the slot of an ended thread with the
  // same id (ids are recycled only after a thread ends) or add one. Null only without memory,
  // when the count is dropped rather than failing the operation being counted.
  thread_slot* find_or_add_slot(slot_cache_entry* cache) noexcept {
    const std::thread::id me = std::this_thread::get_id();
    thread_slot* slot = nullptr;
    {
      std::lock_guard lock(slots_mutex_);
      for (thread_slot* s = slots_.load(std::memory_order_relaxed); s != nullptr; s = s->next)
        if (s->owner == me) {
          slot = s;
          break;
        }
      if (slot == nullptr) {
        slot = new (std::nothrow) thread_slot;
        if (slot == nullptr) return nullptr;
        slot->owner = me;
        slot->next = slots_.load(std::memory_order_relaxed);
        slots_.store(slot, std::memory_order_release);
      }
    }
    // Round-robin replacement keeps the entries of the instances used most recently.
    static thread_local unsigned victim = 0;
    cache[victim % slot_cache_size] = {instance_, slot};
    ++victim;
    return slot;
  }
  static void bump(thread_slot& slot, counter_id c, std::uint64_t n) noexcept {
    slot.value[c].store(slot.value[c].load(std::memory_order_relaxed) + n,
                        std::memory_order_relaxed);
  }
  static void record_hit(thread_slot& slot, std::uint64_t requested) noexcept {
    // Two stores: the hit counts as a pool hit and as an allocation (see `snapshot`).
    bump(slot, served_hits, 1);
    bump(slot, bytes_requested, requested);
  }
  void add(counter_id c, std::uint64_t n) noexcept {
    if (thread_slot* slot = my_slot()) bump(*slot, c, n);
  }

  const std::uint64_t instance_ = next_instance_id();
  std::atomic<thread_slot*> slots_{nullptr};
  std::mutex slots_mutex_;
  std::atomic<std::uint64_t> baseline_[counter_count] = {};
  alignas(64) std::atomic<std::uint64_t> current_device_bytes_{0};
  std::atomic<std::uint64_t> peak_device_bytes_{0};
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
    {"vyre_device_bytes", "gauge",
     "Device bytes the allocator holds: live allocations plus the caching pool's free blocks.",
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
