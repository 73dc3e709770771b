// SPDX-License-Identifier: Apache-2.0
//! @file
//! Persistent helper threads for the host lanes of staged uploads.
//!
//! Creating a thread costs tens of microseconds, as much as staging a whole 1 MiB upload, so
//! the resident store keeps its helpers: they are started on the first upload that wants more
//! than one lane, poll briefly for more work after each job (back-to-back uploads find them
//! awake), then sleep on a condition variable until the next job or `stop()`.
//!
//! `run(lanes, body)` calls `body(lane)` once for each lane in [0, lanes). The calling thread
//! takes lanes too, and takes every lane no helper has claimed yet, so a job finishes even when
//! no helper could be started or all are busy with other callers' jobs: helpers only ever speed
//! a job up. No heap allocation per job (jobs are intrusive list nodes on the caller's stack).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <thread>
#include <vector>

namespace vyre::detail {

class lane_pool {
 public:
  //! Most helper threads (so at most this many lanes run at once besides the caller).
  static constexpr std::size_t max_helpers = 15;
  //! How long an idle helper keeps polling for the next job before it sleeps: long enough to
  //! bridge the gap between back-to-back uploads, short enough not to matter to a busy host.
  static constexpr std::chrono::microseconds idle_poll{200};

  lane_pool() noexcept = default;
  lane_pool(const lane_pool&) = delete;
  lane_pool& operator=(const lane_pool&) = delete;
  ~lane_pool() { stop(); }

  //! Calls `body(lane)` once for every lane in [0, lanes), on the calling thread and on up to
  //! `lanes - 1` helpers, and returns when every call has returned.
  //! @pre `body` does not throw, and no lane waits for another lane: lanes may run one after
  //!      the other on the calling thread.
  //! @note Thread-safe: concurrent jobs share the helpers.
  template <class Body>
  void run(std::size_t lanes, Body& body) noexcept {
    static_assert(noexcept(body(std::size_t{0})), "lane bodies must be noexcept");
    if (lanes == 0) return;
    job j;
    j.invoke = [](void* context, std::size_t lane) noexcept {
      (*static_cast<Body*>(context))(lane);
    };
    j.context = &body;
    j.lanes = lanes;
    if (lanes > 1 && start_helpers(lanes - 1) > 0) {
      {
        std::lock_guard lock(mutex_);
        push(&j);
      }
      // Wake only as many sleepers as there are lanes to hand out.
      for (std::size_t i = 1; i < lanes; ++i) wake_.notify_one();
    }
    // The caller takes lane 0, then whatever the helpers have not claimed.
    for (std::size_t lane = 0; claim(j, lane);) {
      j.invoke(j.context, lane);
      finish(j);
    }
    // Wait for the lanes helpers are running: poll first (they are usually about to finish),
    // then sleep.
    const auto deadline = std::chrono::steady_clock::now() + idle_poll;
    while (j.finished.load(std::memory_order_acquire) != lanes &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
    if (j.finished.load(std::memory_order_acquire) != lanes) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return j.finished.load(std::memory_order_acquire) == lanes; });
    }
  }

  //! Stops and joins the helpers (after the lanes they are running); the next `run` that
  //! wants helpers starts them again. Jobs in progress still complete: their callers take the
  //! lanes no helper claimed.
  void stop() noexcept {
    std::lock_guard helpers_lock(helpers_mutex_);
    if (helpers_.empty()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    polling_stop_.store(true, std::memory_order_release);
    wake_.notify_all();
    for (std::thread& helper : helpers_) helper.join();
    helpers_.clear();
    std::lock_guard lock(mutex_);
    stopping_ = false;
    polling_stop_.store(false, std::memory_order_release);
  }

  //! Helper threads currently started.
  std::size_t helpers() const {
    std::lock_guard lock(helpers_mutex_);
    return helpers_.size();
  }

 private:
  struct job {
    void (*invoke)(void*, std::size_t) noexcept = nullptr;
    void* context = nullptr;
    std::size_t lanes = 0;
    std::size_t claimed = 0;  // under mutex_
    std::atomic<std::size_t> finished{0};
    job* prev = nullptr;  // queue links, under mutex_
    job* next = nullptr;
    bool queued = false;
  };

  // Starts helpers until there are `wanted` (at most max_helpers); returns how many run.
  // Thread creation failing is not an error: the caller runs the lanes itself.
  std::size_t start_helpers(std::size_t wanted) noexcept {
    if (wanted > max_helpers) wanted = max_helpers;
    std::lock_guard helpers_lock(helpers_mutex_);
    try {
      helpers_.reserve(max_helpers);
      while (helpers_.size() < wanted) helpers_.emplace_back([this] { serve(); });
    } catch (...) {
      // No memory or no thread: run with the helpers there are.
    }
    return helpers_.size();
  }

  // Under mutex_.
  void push(job* j) noexcept {
    j->prev = tail_;
    j->next = nullptr;
    if (tail_ != nullptr)
      tail_->next = j;
    else
      head_ = j;
    tail_ = j;
    j->queued = true;
    queued_.fetch_add(1, std::memory_order_release);
  }
  void unlink(job* j) noexcept {
    if (!j->queued) return;
    if (j->prev != nullptr)
      j->prev->next = j->next;
    else
      head_ = j->next;
    if (j->next != nullptr)
      j->next->prev = j->prev;
    else
      tail_ = j->prev;
    j->prev = j->next = nullptr;
    j->queued = false;
    queued_.fetch_sub(1, std::memory_order_release);
  }
  // Under mutex_: the next lane of `j`, unlinking `j` once all its lanes are claimed.
  bool claim_locked(job& j, std::size_t& lane) noexcept {
    if (j.claimed == j.lanes) return false;
    lane = j.claimed++;
    if (j.claimed == j.lanes) unlink(&j);
    return true;
  }
  bool claim(job& j, std::size_t& lane) noexcept {
    std::lock_guard lock(mutex_);
    return claim_locked(j, lane);
  }
  void finish(job& j) noexcept {
    const std::size_t lanes = j.lanes;  // `j` may be gone once `finished` reaches `lanes`
    bool last = false;
    {
      std::lock_guard lock(mutex_);
      last = j.finished.fetch_add(1, std::memory_order_acq_rel) + 1 == lanes;
    }
    if (last) done_.notify_all();
  }

  void serve() noexcept {
    for (;;) {
      // Poll briefly before sleeping: the next upload often follows at once.
      const auto deadline = std::chrono::steady_clock::now() + idle_poll;
      while (queued_.load(std::memory_order_acquire) == 0 &&
             !polling_stop_.load(std::memory_order_acquire) &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      job* j = nullptr;
      std::size_t lane = 0;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return stopping_ || head_ != nullptr; });
        if (stopping_) return;
        j = head_;
        (void)claim_locked(*j, lane);  // a queued job always has an unclaimed lane
      }
      j->invoke(j->context, lane);
      finish(*j);
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;  // helpers: a job was queued, or stop
  std::condition_variable done_;  // callers: a lane finished
  job* head_ = nullptr;
  job* tail_ = nullptr;
  bool stopping_ = false;
  std::atomic<std::size_t> queued_{0};     // jobs in the queue (read while polling)
  std::atomic<bool> polling_stop_{false};  // stop, for polling helpers
  mutable std::mutex helpers_mutex_;       // guards helpers_ (start and stop)
  std::vector<std::thread> helpers_;
};

}  // namespace vyre::detail
