// SPDX-License-Identifier: Apache-2.0
//! @file
//! Pools of non-blocking streams and of events (at most 128 each), handed out as move-only
//! RAII leases. A lease synchronises its stream or event before the object goes back to the
//! pool, so the next holder never inherits pending work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/runtime/detail/read_locked.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! Most streams (and, separately, events) one pool creates.
inline constexpr std::size_t default_lease_pool_cap = 128;

namespace detail {

template <class Handle, class Traits>
class lease;

//! The shared machinery of the stream and event pools. `Traits` creates, synchronises and
//! destroys one object.
template <class Handle, class Traits>
class lease_pool {
 public:
  explicit lease_pool(int ordinal, telemetry_counters* telemetry = nullptr,
                      std::size_t cap = default_lease_pool_cap) noexcept
      : ordinal_(ordinal), telemetry_(telemetry), cap_(cap) {}
  lease_pool(const lease_pool&) = delete;
  lease_pool& operator=(const lease_pool&) = delete;
  ~lease_pool() { (void)release_idle(); }

  //! `take()` as a lease that gives the object back (synchronised) when destroyed.
  //! @returns `errc::invalid_state` when all `cap()` objects are leased.
  expected<lease<Handle, Traits>> acquire() noexcept {
    VYRE_TRY_ASSIGN(Handle h, take());
    return lease<Handle, Traits>(*this, h);
  }

  //! An idle object, or a new one while fewer than `cap` exist.
  //! @returns `errc::invalid_state` naming the cap when every object is leased.
  expected<Handle> take() noexcept {
    {
      std::lock_guard lock(mutex_);
      if (!idle_.empty()) {
        Handle h = idle_.back();
        idle_.pop_back();
        return h;
      }
      if (created_ >= cap_)
        return fail(error(errc::invalid_state, Traits::exhausted_context)
                        .with("cap", cap_)
                        .fix("return leases before acquiring more (a lease returns its object "
                             "when destroyed)"));
      ++created_;  // reserve the slot; undone below on failure
      try {
        idle_.reserve(created_);  // give_back never allocates
      } catch (...) {
        --created_;
        return fail(
            error(errc::out_of_memory, "stream/event pool: host allocation of the idle list failed")
                // NOLINTNEXTLINE(bugprone-sizeof-expression): the handles are pointers
                .with("bytes", (created_ + 1) * sizeof(Handle))
                .with("cap", cap_)
                .fix("free host memory"));
      }
    }
    detail::device_guard guard(ordinal_);
    Handle h{};
    auto created = guard.status();
    if (created) created = Traits::create(h);
    if (!created) {
      std::lock_guard lock(mutex_);
      --created_;
      return fail(created.error());
    }
    return h;
  }

  //! Synchronises `h` and makes it idle again. A failed synchronisation destroys it instead
  //! (its state is unknown).
  expected<void> give_back(Handle h) noexcept {
    const auto synced = Traits::synchronize(h);
    if (telemetry_ != nullptr) telemetry_->record_sync();
    std::lock_guard lock(mutex_);
    if (!synced) {
      (void)Traits::destroy(h);
      --created_;
      return synced;
    }
    idle_.push_back(h);  // capacity reserved in take()
    return {};
  }

  //! Destroys every idle object (leased ones stay valid).
  expected<void> release_idle() noexcept {
    std::vector<Handle> idle;
    {
      std::lock_guard lock(mutex_);
      idle.swap(idle_);
      created_ -= idle.size();
      try {
        idle_.reserve(created_);
      } catch (...) {
      }
    }
    detail::device_guard guard(ordinal_);
    expected<void> result;
    for (Handle h : idle)
      if (auto destroyed = Traits::destroy(h); !destroyed && result) result = destroyed;
    return result;
  }

  std::size_t created() const { return detail::read_locked(mutex_, created_); }
  std::size_t idle() const {
    std::lock_guard lock(mutex_);
    return idle_.size();
  }
  std::size_t cap() const noexcept { return cap_; }

 private:
  int ordinal_;
  telemetry_counters* telemetry_;
  std::size_t cap_;
  mutable std::mutex mutex_;
  std::size_t created_ = 0;
  std::vector<Handle> idle_;
};

//! The error texts of one pooled handle type.
struct handle_texts {
  const char* exhausted;
  const char* create;
  const char* synchronize;
  const char* destroy;
};

//! The CUDA calls of one pooled handle type: `Create(&h, Flags)`, `Synchronize(h)`,
//! `Destroy(h)`, failing with the matching text of `Text`.
template <class Handle, cudaError_t (*Create)(Handle*, unsigned int), unsigned int Flags,
          cudaError_t (*Synchronize)(Handle), cudaError_t (*Destroy)(Handle),
          const handle_texts& Text>
struct handle_traits {
  static constexpr const char* exhausted_context = Text.exhausted;
  static expected<void> create(Handle& h) noexcept {
    return cuda_check(Create(&h, Flags), Text.create);
  }
  static expected<void> synchronize(Handle h) noexcept {
    return cuda_check(Synchronize(h), Text.synchronize);
  }
  static expected<void> destroy(Handle h) noexcept { return cuda_check(Destroy(h), Text.destroy); }
};

inline constexpr handle_texts stream_texts{
    "stream_pool: every stream is leased", "stream_pool: cudaStreamCreateWithFlags failed",
    "stream_lease: cudaStreamSynchronize failed", "stream_pool: cudaStreamDestroy failed"};
inline constexpr handle_texts event_texts{
    "event_pool: every event is leased", "event_pool: cudaEventCreateWithFlags failed",
    "event_lease: cudaEventSynchronize failed", "event_pool: cudaEventDestroy failed"};

using stream_traits = handle_traits<cudaStream_t, cudaStreamCreateWithFlags, cudaStreamNonBlocking,
                                    cudaStreamSynchronize, cudaStreamDestroy, stream_texts>;
using event_traits = handle_traits<cudaEvent_t, cudaEventCreateWithFlags, cudaEventDisableTiming,
                                   cudaEventSynchronize, cudaEventDestroy, event_texts>;

//! A leased pooled object; returned (after synchronisation) on destruction or `reset()`.
template <class Handle, class Traits>
class lease {
 public:
  using pool_type = lease_pool<Handle, Traits>;
  lease() noexcept = default;
  lease(pool_type& pool, Handle h) noexcept : pool_(&pool), handle_(h) {}
  lease(lease&& other) noexcept
      : pool_(std::exchange(other.pool_, nullptr)),
        handle_(std::exchange(other.handle_, Handle{})) {}
  lease& operator=(lease&& other) noexcept {
    if (this != &other) {
      (void)reset();
      pool_ = std::exchange(other.pool_, nullptr);
      handle_ = std::exchange(other.handle_, Handle{});
    }
    return *this;
  }
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  ~lease() { (void)reset(); }

  Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return pool_ != nullptr; }
  //! Synchronises and returns the object to its pool now.
  expected<void> reset() noexcept {
    if (pool_ == nullptr) return {};
    auto* pool = std::exchange(pool_, nullptr);
    return pool->give_back(std::exchange(handle_, Handle{}));
  }

 private:
  pool_type* pool_ = nullptr;
  Handle handle_{};
};

}  // namespace detail

//! A leased non-blocking stream (`get()`), synchronised before it returns to its pool.
using stream_lease = detail::lease<cudaStream_t, detail::stream_traits>;
//! A leased event created with cudaEventDisableTiming, synchronised before it returns.
using event_lease = detail::lease<cudaEvent_t, detail::event_traits>;

//! Pool of non-blocking streams (thread-safe); `acquire()` leases one.
class stream_pool : public detail::lease_pool<cudaStream_t, detail::stream_traits> {
 public:
  using lease_pool::lease_pool;
};

//! Pool of events (thread-safe); `acquire()` leases one.
class event_pool : public detail::lease_pool<cudaEvent_t, detail::event_traits> {
 public:
  using lease_pool::lease_pool;
};

}  // namespace vyre
