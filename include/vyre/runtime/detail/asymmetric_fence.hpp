// SPDX-License-Identifier: Apache-2.0
//! @file
//! Asymmetric fences: the frequent side pays a compiler barrier (`light`), the rare side a
//! process-wide barrier (`heavy`, Linux membarrier). Together they order a store before a load
//! on both sides, as two full fences would:
//!
//!     frequent:  busy = true;  light();  if (stop) ...     // every operation
//!     rare:      stop = true;  heavy();  while (busy) ...  // seldom
//!
//! either the frequent side sees `stop`, or the rare side sees `busy`. Where membarrier is not
//! available both sides fall back to full fences (correct, slower). Under ThreadSanitizer,
//! which models neither membarrier nor stand-alone fences, both sides instead make a
//! read-modify-write of one shared word: the two are ordered, and the later one reads the
//! earlier one's release, which gives the same guarantee in terms the tool checks. Host-only.
#pragma once

#include <atomic>

#if defined(__SANITIZE_THREAD__)
#define VYRE_DETAIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VYRE_DETAIL_TSAN 1
#endif
#endif

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace vyre::detail {

class asymmetric_fence {
 public:
#if defined(VYRE_DETAIL_TSAN)
  static bool is_asymmetric() noexcept {
    return false;
  }
  static void light() noexcept {
    (void)word().fetch_add(0, std::memory_order_acq_rel);
  }
  static void heavy() noexcept {
    (void)word().fetch_add(0, std::memory_order_acq_rel);
  }

 private:
  static std::atomic<unsigned>& word() noexcept {
    static std::atomic<unsigned> shared{0};
    return shared;
  }
#else
  //! Whether `light` can be a compiler barrier (membarrier registered for this process).
  static bool is_asymmetric() noexcept {
    static const bool registered = register_process();
    return registered;
  }
  static void light() noexcept {
    if (is_asymmetric())
      std::atomic_signal_fence(std::memory_order_seq_cst);
    else
      std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  static void heavy() noexcept {
#if defined(__linux__) && defined(__NR_membarrier)
    // Registered processes cannot see this fail (EPERM needs a missing registration).
    if (is_asymmetric()) {
      (void)syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
      return;
    }
#endif
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }

 private:
  static bool register_process() noexcept {
#if defined(__linux__) && defined(__NR_membarrier)
    const long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
  }
#endif
};

}  // namespace vyre::detail
