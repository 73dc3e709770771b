// SPDX-License-Identifier: Apache-2.0
//! @file
//! A test-and-test-and-set spin lock for critical sections of a few loads and stores, where a
//! futex round trip would cost more than the work. Waiters spin briefly, then yield, so an
//! oversubscribed machine still makes progress. Satisfies Lockable (use std::lock_guard).
#pragma once

#include <atomic>
#include <thread>

namespace vyre::detail {

class spin_lock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 128)
          relax();
        else
          std::this_thread::yield();
      }
    }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void relax() noexcept {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_ia32_pause();
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    asm volatile("yield");
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace vyre::detail
