// SPDX-License-Identifier: Apache-2.0
//! @file
//! The resident store: long-lived device buffers named by checked handles.
//!
//! A `resident_handle` carries the owning backend's id, a slot and the slot's generation, so
//! a handle from another backend, a freed handle or a stale one (its slot since reused) is
//! rejected with an error that says which. Buffers come from the backend's allocation policy;
//! the store keeps their total under a budget (90% of device memory by default) and refuses to
//! free a buffer that a pending launch still uses (`mark_in_use`).
//!
//! Uploads: a pinned source is copied with one asynchronous copy; a pageable source (or a
//! `fill` callback) is staged through the pinned pool in chunks (`plan_staging` says how many,
//! how large and on how many host lanes), so the host copy of one chunk overlaps the DMA of the
//! earlier ones. Host lanes past the caller's run on persistent helper threads, started on the
//! first multi-lane upload and joined by `stop_host_lanes` (`backend::cleanup`) or the
//! destructor. Either way telemetry records one upload operation. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "vyre/core/byte_order.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/runtime/detail/lane_pool.hpp"
#include "vyre/runtime/detail/read_locked.hpp"
#include "vyre/runtime/memory.hpp"
#include "vyre/runtime/pinned.hpp"
#include "vyre/runtime/staging_plan.hpp"
#include "vyre/runtime/streams.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! Names one resident buffer of one backend. Trivially copyable; a default-constructed
//! handle names nothing.
struct resident_handle {
  std::uint32_t backend_id = 0;
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;

  constexpr bool empty() const noexcept { return backend_id == 0; }
  friend constexpr bool operator==(const resident_handle&, const resident_handle&) = default;
};

//! Where a resident buffer lives: its device pointer and byte length.
struct resident_span {
  std::byte* data = nullptr;
  std::size_t bytes = 0;
};

//! Resident buffers of one backend. Thread-safe.
class resident_store {
 public:
  //! Default budget: this fraction (in tenths) of the device's total memory.
  static constexpr std::size_t budget_tenths = 9;
  static constexpr std::size_t event_cap = 4096;

  //! @param backend_id the owning backend's id (non-zero).
  //! @param memory the allocation policy's resource; @param pinned staging pool.
  resident_store(std::uint32_t backend_id, int ordinal, device_resource_ref memory,
                 pinned_pool* pinned, telemetry_counters* telemetry,
                 std::size_t device_total_bytes) noexcept
      : backend_id_(backend_id),
        ordinal_(ordinal),
        memory_(memory),
        pinned_(pinned),
        telemetry_(telemetry),
        budget_(device_total_bytes / 10 * budget_tenths),
        events_(ordinal, nullptr, event_cap) {}
  resident_store(const resident_store&) = delete;
  resident_store& operator=(const resident_store&) = delete;
  ~resident_store() { (void)clear(); }

  std::uint32_t backend_id() const noexcept { return backend_id_; }
  //! The most resident bytes the store holds at once.
  std::size_t budget() const { return detail::read_locked(mutex_, budget_); }
  //! Sets the budget (tests, or a process that shares the device).
  void set_budget(std::size_t bytes) noexcept {
    std::lock_guard lock(mutex_);
    budget_ = bytes;
  }
  std::size_t bytes_in_use() const { return detail::read_locked(mutex_, bytes_in_use_); }
  std::size_t live_buffers() const { return detail::read_locked(mutex_, live_); }

  //! A new buffer of `bytes` bytes, ready for work ordered after this call on `stream`.
  //! @returns `errc::invalid_argument` for zero bytes; `errc::out_of_memory` naming the
  //!          request, the bytes in use and the budget when the budget would be exceeded, or
  //!          the policy's out-of-memory error.
  expected<resident_handle> allocate(std::size_t bytes, cudaStream_t stream) noexcept {
    if (bytes == 0)
      return fail(error(errc::invalid_argument, "resident_store::allocate: zero-byte request")
                      .with("bytes", 0)
                      .fix("request at least one byte"));
    std::uint32_t index = 0;
    {
      std::lock_guard lock(mutex_);
      if (bytes > budget_ || bytes_in_use_ > budget_ - bytes)
        return fail(error(errc::out_of_memory,
                          "resident_store::allocate: the resident budget would be exceeded")
                        .with("requested_bytes", bytes)
                        .with("bytes_in_use", bytes_in_use_)
                        .with("budget_bytes", budget_)
                        .fix("free resident buffers (free/clear), or shard the input"));
      VYRE_TRY_ASSIGN(index, claim_slot());
      bytes_in_use_ += bytes;  // reserve the budget before the (unlocked) allocation
      slots_[index].state = slot_state::allocating;
    }
    auto ptr = memory_.try_allocate(bytes, stream);
    std::lock_guard lock(mutex_);
    slot& s = slots_[index];
    if (!ptr) {
      bytes_in_use_ -= bytes;
      s.state = slot_state::empty;
      free_slots_.push_back(index);  // capacity reserved by claim_slot
      return fail(ptr.error());
    }
    s.data = static_cast<std::byte*>(*ptr);
    s.bytes = bytes;
    s.stream = stream;
    s.state = slot_state::live;
    s.busy = 0;
    ++live_;
    return resident_handle{backend_id_, index, s.generation};
  }

  //! Allocates `source.size()` bytes and uploads `source` into them; the buffer is released
  //! again when the upload fails.
  expected<resident_handle> allocate_copy(std::span<const std::byte> source, cudaStream_t stream,
                                          upload_options options = {}) noexcept {
    VYRE_TRY_ASSIGN(const resident_handle h, allocate(source.size(), stream));
    if (auto uploaded = upload(h, source, 0, stream, options); !uploaded) {
      (void)free_after_failure(h);
      return fail(uploaded.error());
    }
    return h;
  }

  //! Allocates `bytes` bytes and fills them through `fill` in staged chunks (see
  //! `upload_with`); the buffer is released again when filling or copying fails.
  template <class Fill>
  expected<resident_handle> allocate_filled(std::size_t bytes, cudaStream_t stream, Fill&& fill,
                                            upload_options options = {}) noexcept {
    VYRE_TRY_ASSIGN(const resident_handle h, allocate(bytes, stream));
    if (auto uploaded = upload_with(h, 0, bytes, stream, fill, options); !uploaded) {
      (void)free_after_failure(h);
      return fail(uploaded.error());
    }
    return h;
  }

  //! The device pointer and byte length of `h`.
  //! @returns `errc::invalid_handle` for an empty, foreign, freed or stale handle.
  expected<resident_span> lookup(resident_handle h) const noexcept {
    std::lock_guard lock(mutex_);
    VYRE_TRY_ASSIGN(const slot* s, checked(h));
    return resident_span{s->data, s->bytes};
  }

  //! Copies `source` to byte `offset` of `h` on `stream`. A pinned source is copied
  //! asynchronously (keep it alive and unchanged until `stream` passes this point); a
  //! pageable one is staged through the pinned pool and the call returns once it is copied.
  //! @returns `errc::invalid_handle`; `errc::out_of_range` when the bytes do not fit the
  //!          buffer; `errc::invalid_argument` for a device-memory source; CUDA errors.
  expected<void> upload(resident_handle h, std::span<const std::byte> source, std::size_t offset,
                        cudaStream_t stream, upload_options options = {}) noexcept {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, source.data()) != cudaSuccess) {
      (void)cudaGetLastError();
      attributes.type = cudaMemoryTypeUnregistered;
    }
    if (attributes.type == cudaMemoryTypeDevice)
      return fail(error(errc::invalid_argument,
                        "resident_store::upload: the source is device memory, not host memory")
                      .with("bytes", source.size())
                      .fix("copy device to device with cudaMemcpyAsync into resident_buffer()"));
    if (source.empty() || attributes.type != cudaMemoryTypeHost) {
      // A plain copy is safe on several lanes at once.
      if (options.host_lanes == 0) options.host_lanes = auto_host_lanes(source.size());
      return upload_with(
          h, offset, source.size(), stream,
          [source](std::size_t at, std::span<std::byte> chunk) noexcept {
            staging::copy_for_dma(chunk.data(), source.data() + at, chunk.size());
          },
          options);
    }
    VYRE_TRY_ASSIGN(const resident_span target,
                    begin_host_operation(h, offset, source.size(), "resident_store::upload"));
    const auto copied =
        cuda_check(cudaMemcpyAsync(target.data + offset, source.data(), source.size(),
                                   cudaMemcpyHostToDevice, stream),
                   "resident_store::upload: cudaMemcpyAsync (pinned source) failed");
    end_host_operation(h);
    VYRE_TRY(copied);
    if (telemetry_ != nullptr) telemetry_->record_h2d(source.size());
    return {};
  }

  //! Uploads `bytes` bytes to byte `offset` of `h`, produced chunk by chunk by
  //! `fill(std::size_t byte_offset, std::span<std::byte> chunk)` (which returns void or
  //! `vyre::expected<void>`; an error stops the upload; it must not throw) into pinned
  //! staging memory, staged as `plan_staging(bytes, options, 1)` says. The host fill of one
  //! chunk overlaps the copies of the earlier ones. Returns once every chunk is copied; on
  //! failure, once no copy still reads the staging memory.
  //! @returns `errc::invalid_argument` for more than `max_host_lanes` lanes.
  template <class Fill>
  expected<void> upload_with(resident_handle h, std::size_t offset, std::size_t bytes,
                             cudaStream_t stream, Fill&& fill,
                             upload_options options = {}) noexcept {
    if (options.host_lanes > max_host_lanes)
      return fail(error(errc::invalid_argument, "resident_store::upload: too many host lanes")
                      .with("host_lanes", options.host_lanes)
                      .with("max_host_lanes", max_host_lanes)
                      .fix("ask for at most max_host_lanes lanes, or 0 for the automatic choice"));
    VYRE_TRY_ASSIGN(const resident_span target,
                    begin_host_operation(h, offset, bytes, "resident_store::upload"));
    auto result = bytes == 0 ? expected<void>{}
                             : staged_copy(target.data + offset, bytes, stream, fill,
                                           plan_staging(bytes, options, 1));
    end_host_operation(h);
    VYRE_TRY(result);
    if (telemetry_ != nullptr) telemetry_->record_h2d(bytes);
    return {};
  }

  //! Copies `destination.size()` bytes from byte `offset` of `h` after the work queued on
  //! `stream`, and waits for them.
  expected<void> download(resident_handle h, std::span<std::byte> destination, std::size_t offset,
                          cudaStream_t stream) noexcept {
    VYRE_TRY_ASSIGN(const resident_span source, begin_host_operation(h, offset, destination.size(),
                                                                     "resident_store::download"));
    auto copied = cuda_check(cudaMemcpyAsync(destination.data(), source.data + offset,
                                             destination.size(), cudaMemcpyDeviceToHost, stream),
                             "resident_store::download: cudaMemcpyAsync failed");
    if (copied)
      copied = cuda_check(cudaStreamSynchronize(stream),
                          "resident_store::download: cudaStreamSynchronize failed");
    end_host_operation(h);
    VYRE_TRY(copied);
    if (telemetry_ != nullptr) {
      telemetry_->record_d2h(destination.size());
      telemetry_->record_sync();
    }
    return {};
  }

  //! Marks `h` in use by the work queued so far on `stream` (a kernel that reads it): `free`
  //! is refused until that work completes.
  expected<void> mark_in_use(resident_handle h, cudaStream_t stream) noexcept {
    VYRE_TRY_ASSIGN(event_lease event, events_.acquire());
    VYRE_CUDA_TRY(cudaEventRecord(event.get(), stream),
                  "resident_store::mark_in_use: cudaEventRecord failed");
    std::lock_guard lock(mutex_);
    VYRE_TRY_ASSIGN(slot * s, checked(h));
    prune(*s);
    try {
      s->pending.push_back(std::move(event));
    } catch (...) {
      return fail(error(errc::out_of_memory, "resident_store::mark_in_use: host allocation failed")
                      .with("bytes", (s->pending.size() + 1) * sizeof(event_lease)));
    }
    return {};
  }

  //! Whether work marked with `mark_in_use` is still pending (or a host copy is running).
  expected<bool> in_use(resident_handle h) noexcept {
    std::lock_guard lock(mutex_);
    VYRE_TRY_ASSIGN(slot * s, checked(h));
    prune(*s);
    return !s->pending.empty() || s->busy != 0;
  }

  //! Frees `h`'s buffer; `h` and its copies become invalid.
  //! @returns `errc::invalid_handle`; `errc::in_use` naming the pending launches while work
  //!          marked with `mark_in_use` has not completed (nothing is freed then).
  expected<void> free(resident_handle h) noexcept {
    slot released;
    {
      std::lock_guard lock(mutex_);
      VYRE_TRY_ASSIGN(slot * s, checked(h));
      prune(*s);
      if (!s->pending.empty() || s->busy != 0)
        return fail(
            error(errc::in_use, "resident_store::free: the buffer is in use by pending work")
                .with("pending_launches", s->pending.size())
                .with("host_copies", s->busy)
                .with("bytes", s->bytes)
                .fix("synchronise the stream that uses it (or wait for its event) "
                     "before freeing"));
      released = retire(h.slot);
    }
    return memory_.try_deallocate(released.data, released.bytes, released.stream);
  }

  //! Waits for the pending work of every buffer, then frees them all; every handle becomes
  //! invalid. @returns `errc::in_use` (freeing nothing) while a host copy is running.
  expected<void> clear() noexcept {
    std::vector<slot> released;
    {
      std::lock_guard lock(mutex_);
      for (const slot& s : slots_)
        if (s.state == slot_state::live && s.busy != 0)
          return fail(error(errc::in_use, "resident_store::clear: a host copy is running")
                          .with("host_copies", s.busy)
                          .fix("wait for uploads and downloads to return before clear()"));
      try {
        released.reserve(live_);
      } catch (...) {
        return fail(error(errc::out_of_memory, "resident_store::clear: host allocation failed")
                        .with("bytes", live_ * sizeof(slot)));
      }
      for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(slots_.size()); ++i) {
        if (slots_[i].state != slot_state::live) continue;
        for (auto& event : slots_[i].pending) (void)event.reset();  // waits for the work
        slots_[i].pending.clear();
        released.push_back(retire(i));
      }
    }
    expected<void> result;
    for (slot& s : released)
      if (auto freed = memory_.try_deallocate(s.data, s.bytes, s.stream); !freed && result)
        result = freed;
    return result;
  }

  //! Joins the persistent host-lane helpers (they start again on the next multi-lane upload);
  //! `backend::cleanup` calls this. Uploads in progress still complete.
  void stop_host_lanes() noexcept { lanes_.stop(); }
  //! Host-lane helper threads currently started.
  std::size_t host_lane_helpers() const { return lanes_.helpers(); }

 private:
  enum class slot_state : std::uint8_t { empty, allocating, live };
  struct slot {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
    cudaStream_t stream = nullptr;
    std::uint32_t generation = 1;
    std::uint32_t busy = 0;  // host copies running
    slot_state state = slot_state::empty;
    std::vector<event_lease> pending;
  };

  // Under the lock.
  expected<std::uint32_t> claim_slot() noexcept {
    try {
      if (!free_slots_.empty()) {
        const std::uint32_t index = free_slots_.back();
        free_slots_.pop_back();
        return index;
      }
      if (slots_.size() >= UINT32_MAX)
        return fail(error(errc::abi_limit, "resident_store::allocate: too many buffers")
                        .with("buffers", slots_.size()));
      slots_.emplace_back();
      free_slots_.reserve(slots_.size());  // later returns never allocate
      return static_cast<std::uint32_t>(slots_.size() - 1);
    } catch (...) {
      return fail(error(errc::out_of_memory, "resident_store::allocate: host allocation failed")
                      .with("bytes", (slots_.size() + 1) * sizeof(slot)));
    }
  }

  // Under the lock: empties the slot, bumps its generation, returns what it held.
  slot retire(std::uint32_t index) noexcept {
    slot& s = slots_[index];
    slot released;
    released.data = std::exchange(s.data, nullptr);
    released.bytes = std::exchange(s.bytes, 0);
    released.stream = s.stream;
    s.state = slot_state::empty;
    s.generation = s.generation == UINT32_MAX ? 1 : s.generation + 1;
    bytes_in_use_ -= released.bytes;
    --live_;
    free_slots_.push_back(index);  // capacity reserved by claim_slot
    return released;
  }

  // Under the lock: drops the events of completed work.
  void prune(slot& s) noexcept {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.pending.size(); ++i) {
      const cudaError_t done = cudaEventQuery(s.pending[i].get());
      if (done == cudaErrorNotReady) {
        (void)cudaGetLastError();
        if (kept != i) s.pending[kept] = std::move(s.pending[i]);
        ++kept;
      }
      // Completed (or failed: the error resurfaces at the next synchronisation) events return
      // to the pool; their synchronisation is immediate.
    }
    s.pending.resize(kept);
  }

  // Under the lock.
  expected<const slot*> checked(resident_handle h) const noexcept {
    return const_cast<resident_store*>(this)->checked(h);
  }
  expected<slot*> checked(resident_handle h) noexcept {
    if (h.empty())
      return fail(error(errc::invalid_handle, "resident_store: the handle is empty")
                      .fix("use a handle returned by allocate()"));
    if (h.backend_id != backend_id_)
      return fail(
          error(errc::invalid_handle, "resident_store: the handle belongs to another backend")
              .with("handle_backend", h.backend_id)
              .with("this_backend", backend_id_)
              .fix("use each handle with the backend that allocated it"));
    if (h.slot >= slots_.size())
      return fail(error(errc::invalid_handle, "resident_store: the handle names no slot")
                      .with("slot", h.slot)
                      .with("slots", slots_.size())
                      .fix("use a handle returned by allocate(), unmodified"));
    slot& s = slots_[h.slot];
    if (s.state != slot_state::live || s.generation != h.generation) {
      if (s.state == slot_state::live || h.generation < s.generation - 1 ||
          h.generation > s.generation)
        return fail(error(errc::invalid_handle,
                          "resident_store: the handle is stale (its buffer was freed and the "
                          "slot reused)")
                        .with("slot", h.slot)
                        .with("handle_generation", h.generation)
                        .with("current_generation", s.generation)
                        .fix("drop handles when their buffer is freed"));
      return fail(error(errc::invalid_handle, "resident_store: the handle's buffer was freed")
                      .with("slot", h.slot)
                      .with("handle_generation", h.generation)
                      .fix("do not use a handle after free() or clear()"));
    }
    return &s;
  }

  expected<resident_span> begin_host_operation(resident_handle h, std::size_t offset,
                                               std::size_t bytes, const char* what) noexcept {
    std::lock_guard lock(mutex_);
    VYRE_TRY_ASSIGN(slot * s, checked(h));
    if (offset > s->bytes || bytes > s->bytes - offset)
      return fail(error(errc::out_of_range, "resident_store: the copy does not fit the buffer")
                      .with("offset", offset)
                      .with("bytes", bytes)
                      .with("buffer_bytes", s->bytes)
                      .about(what)
                      .fix("keep offset + bytes within the buffer's byte length"));
    ++s->busy;
    return resident_span{s->data, s->bytes};
  }
  void end_host_operation(resident_handle h) noexcept {
    std::lock_guard lock(mutex_);
    --slots_[h.slot].busy;  // the slot cannot be retired while busy
  }

  expected<void> free_after_failure(resident_handle h) noexcept {
    // The failed upload waited for its own copies; nothing else knows the handle yet.
    slot released;
    {
      std::lock_guard lock(mutex_);
      VYRE_TRY(checked(h));
      released = retire(h.slot);
    }
    return memory_.try_deallocate(released.data, released.bytes, released.stream);
  }

  // Copies `bytes` bytes to `destination` through pinned staging, as `plan` says. Lanes claim
  // chunks in order of their offsets from a shared counter (a lane that starts late, or not at
  // all, just takes fewer), fill them into staging slots and queue each copy on `stream`.
  // Without slot reuse chunk i has slot i; with it each lane double-buffers its own two slots,
  // refilling one only after the event recorded behind its previous copy. Lane 0 runs on the
  // calling thread, the others on the store's persistent helpers.
  template <class Fill>
  expected<void> staged_copy(std::byte* destination, std::size_t bytes, cudaStream_t stream,
                             Fill& fill, const staging_plan& plan) noexcept {
    if (pinned_ == nullptr)
      return fail(error(errc::invalid_state, "resident_store::upload: no pinned pool"));
    // One pinned block for every slot of every lane (pool-cached, so warm after first use).
    VYRE_TRY_ASSIGN(pinned_lease staging, pinned_->acquire(plan.staging_bytes()));
    const bool reuse = plan.reuses_slots();
    // An event per slot when slots are reused (then there are two per lane).
    std::array<event_lease, max_host_lanes * 2> copied;
    if (reuse) {
      if (plan.slots_per_lane > 2 || plan.lanes > max_host_lanes)
        return fail(
            error(errc::invalid_argument, "resident_store::upload: staging plan out of bounds")
                .with("lanes", plan.lanes)
                .with("slots_per_lane", plan.slots_per_lane));
      for (std::size_t s = 0; s < plan.lanes * plan.slots_per_lane; ++s) {
        VYRE_TRY_ASSIGN(copied[s], events_.acquire());
      }
    }
    int device = 0;
    VYRE_CUDA_TRY(cudaGetDevice(&device), "resident_store::upload: cudaGetDevice failed");

    std::atomic<std::size_t> next_chunk{0};
    std::atomic<bool> failed{false};
    std::mutex error_mutex;
    expected<void> first_error;
    const auto report = [&](expected<void> r) noexcept {
      std::lock_guard lock(error_mutex);
      if (first_error) first_error = r;
      failed.store(true, std::memory_order_relaxed);
    };
    auto lane_body = [&](std::size_t lane) noexcept {
      if (lane != 0) {
        // Helpers copy for the caller's device.
        int current = -1;
        if (cudaGetDevice(&current) != cudaSuccess || current != device)
          if (auto set = cuda_check(cudaSetDevice(device),
                                    "resident_store::upload: cudaSetDevice (host lane) failed");
              !set)
            return report(set);
      }
      bool in_flight[2] = {};  // with reuse: this lane's two slots
      for (std::size_t taken = 0;; ++taken) {
        if (failed.load(std::memory_order_relaxed)) return;  // another lane failed: stop early
        const std::size_t index = next_chunk.fetch_add(1, std::memory_order_relaxed);
        if (index >= plan.chunks) return;
        const std::size_t own = taken % plan.slots_per_lane;
        const std::size_t staging_slot = reuse ? lane * plan.slots_per_lane + own : index;
        if (reuse && in_flight[own]) {
          // The copy out of this slot must finish before it is refilled.
          if (auto done = cuda_check(cudaEventSynchronize(copied[staging_slot].get()),
                                     "resident_store::upload: waiting for a staging copy failed");
              !done)
            return report(done);
          in_flight[own] = false;
        }
        const std::size_t at = index * plan.chunk_bytes;
        const std::size_t n = (bytes - at) < plan.chunk_bytes ? bytes - at : plan.chunk_bytes;
        std::span<std::byte> view(staging.data() + staging_slot * plan.chunk_bytes, n);
        if constexpr (std::is_void_v<decltype(fill(at, view))>) {
          fill(at, view);
        } else {
          if (auto filled = fill(at, view); !filled) return report(std::move(filled));
        }
        if (auto queued = cuda_check(
                cudaMemcpyAsync(destination + at, view.data(), n, cudaMemcpyHostToDevice, stream),
                "resident_store::upload: cudaMemcpyAsync (staged chunk) failed");
            !queued)
          return report(queued);
        if (reuse) {
          if (auto recorded = cuda_check(cudaEventRecord(copied[staging_slot].get(), stream),
                                         "resident_store::upload: cudaEventRecord failed");
              !recorded)
            return report(recorded);
          in_flight[own] = true;
        }
      }
    };
    if (plan.lanes > 1)
      lanes_.run(plan.lanes, lane_body);
    else
      lane_body(0);

    // Every copy is queued (or the upload failed): the staging memory goes back to the pool
    // only once no copy reads it.
    auto synced = cuda_check(cudaStreamSynchronize(stream),
                             "resident_store::upload: cudaStreamSynchronize failed");
    if (telemetry_ != nullptr) telemetry_->record_sync();
    if (!first_error) return first_error;
    return synced;
  }

  std::uint32_t backend_id_;
  int ordinal_;
  device_resource_ref memory_;
  pinned_pool* pinned_;
  telemetry_counters* telemetry_;
  std::size_t budget_;
  event_pool events_;  // declared before the slots: outlives the leases they hold
  mutable std::mutex mutex_;
  std::size_t bytes_in_use_ = 0;
  std::size_t live_ = 0;
  std::vector<slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  detail::lane_pool lanes_;  // last: its helpers are joined before anything else goes
};

}  // namespace vyre
