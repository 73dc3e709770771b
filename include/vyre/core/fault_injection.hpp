// SPDX-License-Identifier: Apache-2.0
//! @file
//! A testing seam that makes the Nth allocation of one kind fail, so tests can drive every
//! out-of-memory path of vyre deterministically:
//!
//!     vyre::testing::scoped_allocation_fault fault(vyre::testing::allocation_kind::pinned, 3);
//!     auto r = gpu.upload(image);          // the third pinned staging request fails
//!     if (!fault.fired()) { /* the operation made fewer than 3 pinned requests */ }
//!
//! Consulted by every vyre allocation path:
//! - `device`: `direct_resource`, `caching_pool_resource`, `stream_ordered_resource`
//!   (`try_allocate`, cache hits included) and the algorithms' stream-ordered buffers;
//! - `pinned`: `pinned_pool::acquire` (cache hits included);
//! - `host`: `vyre::try_reserve` / `vyre::try_resize` when they would grow the container, image
//!   word storage, graph node inventories, graph cache entries and the backend's state
//!   (`backend::acquire`).
//!
//! An injected failure is reported exactly as the real one would be (`errc::out_of_memory`
//! naming the bytes; device and pinned failures carry `cudaErrorMemoryAllocation`), and counts
//! as "the allocator had nothing" for that one request: retries inside the same request (the
//! caching pool's release-and-retry) are not attempted.
//!
//! Always compiled in (no macro, so every translation unit agrees on the layout): while
//! disarmed, an allocation path pays one relaxed atomic load. The injector is process-wide:
//! allocations on any thread count, in the order they reach the check.
#pragma once

#include <atomic>
#include <cstdint>

#include "vyre/detail/enum_name.hpp"

namespace vyre::testing {

//! What kind of memory an allocation obtains.
enum class allocation_kind : std::uint8_t {
  device = 1,  //!< device memory (every allocation policy, algorithms scratch)
  pinned = 2,  //!< page-locked host memory (the pinned staging pool)
  host = 3,    //!< ordinary host memory that vyre allocates fallibly (staging, bookkeeping)
};

constexpr const char* allocation_kind_name(allocation_kind kind) noexcept {
  constexpr const char* names[] = {"device", "pinned", "host"};
  return vyre::detail::enum_name<allocation_kind::device, allocation_kind::host>(kind, names,
                                                                                 "unknown");
}

//! The process-wide injector (see the file comment). Thread-safe.
class fault_injector {
 public:
  constexpr fault_injector() noexcept = default;
  fault_injector(const fault_injector&) = delete;
  fault_injector& operator=(const fault_injector&) = delete;

  //! Fails the `n`th allocation of `kind` from now on (1 = the next one); only that one.
  //! `n == 0` disarms.
  void fail_nth(allocation_kind kind, std::uint64_t n) noexcept {
    armed_.store(0, std::memory_order_seq_cst);
    seen_.store(0, std::memory_order_relaxed);
    fired_.store(false, std::memory_order_relaxed);
    target_.store(n, std::memory_order_relaxed);
    if (n != 0) armed_.store(static_cast<std::uint8_t>(kind), std::memory_order_seq_cst);
  }
  //! Stops injecting; `seen()` and `fired()` keep their values.
  void disarm() noexcept { armed_.store(0, std::memory_order_seq_cst); }
  //! Whether the armed failure was injected.
  bool fired() const noexcept { return fired_.load(std::memory_order_acquire); }
  //! Allocations of the armed kind that reached the check since `fail_nth`.
  std::uint64_t seen() const noexcept { return seen_.load(std::memory_order_relaxed); }

  //! Called by allocation paths: true when this allocation must fail.
  bool should_fail(allocation_kind kind) noexcept {
    if (armed_.load(std::memory_order_relaxed) == 0) [[likely]]
      return false;
    return count(kind);
  }

 private:
  bool count(allocation_kind kind) noexcept {
    if (armed_.load(std::memory_order_acquire) != static_cast<std::uint8_t>(kind)) return false;
    const std::uint64_t nth = seen_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (nth != target_.load(std::memory_order_relaxed)) return false;
    fired_.store(true, std::memory_order_release);
    return true;
  }

  std::atomic<std::uint8_t> armed_{0};  // 0: disarmed, else the allocation_kind
  std::atomic<std::uint64_t> seen_{0};
  std::atomic<std::uint64_t> target_{0};
  std::atomic<bool> fired_{false};
};

//! The one injector of the process.
inline fault_injector& allocation_faults() noexcept {
  static fault_injector injector;  // constant-initialised: no guard, no allocation
  return injector;
}

//! Whether the current allocation of `kind` must fail (one relaxed load while disarmed).
inline bool inject_allocation_failure(allocation_kind kind) noexcept {
  return allocation_faults().should_fail(kind);
}

//! Arms the injector for its lifetime (RAII): fails the `n`th allocation of `kind`.
class scoped_allocation_fault {
 public:
  scoped_allocation_fault(allocation_kind kind, std::uint64_t n) noexcept {
    allocation_faults().fail_nth(kind, n);
  }
  scoped_allocation_fault(const scoped_allocation_fault&) = delete;
  scoped_allocation_fault& operator=(const scoped_allocation_fault&) = delete;
  ~scoped_allocation_fault() { allocation_faults().disarm(); }

  bool fired() const noexcept { return allocation_faults().fired(); }
  std::uint64_t seen() const noexcept { return allocation_faults().seen(); }
};

}  // namespace vyre::testing
