// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::eqsat::device::hashcons`: a device hash-cons of rows. Keyed by a row's argument
//! columns (`arity` u32), it gives every distinct row one e-class: `lookup_or_insert(args)`,
//! callable from any thread of any kernel, returns the class of the row already there or
//! inserts it with a fresh class from a device counter. Many threads inserting the same row
//! at once get one row and one class.
//!
//! Memory (one block from the caller's `device_resource_ref`, plus 16 bytes of counters):
//! `capacity` slot words (a power of two) and `capacity * arity` key words, 4 (1 + arity)
//! bytes per slot. A slot is `empty_slot`, `busy_slot` (claimed, its row being written),
//! `no_class` (claimed when class ids had run out) or the class id of the row in its keys.
//! Open addressing with linear probing from a hash of the arguments.
//!
//! Concurrency and memory ordering. A slot only ever moves empty -> busy -> published (until
//! `clear`). An inserter claims an empty slot with a CAS (relaxed), writes the row's keys with
//! plain stores, takes a class (`atomicAdd` on the class counter) and publishes it with a
//! release store (device scope) of the slot word. A reader loads the slot word with acquire
//! (device scope): when it sees a class, the keys written before the release are visible to
//! its plain loads. A reader that sees `busy_slot` waits (`__nanosleep`) until the claimant
//! publishes; the claimant does no waiting of its own between claim and publish, and on sm_70
//! and later (independent thread scheduling) it makes progress even in the waiter's warp, so the
//! wait is bounded. Two inserters of one row probe the same slot sequence; the slots before the
//! claimed one stay occupied, so the second cannot claim an earlier slot, and it stops at the
//! first one's slot (equal keys): one slot per distinct row.
//!
//! Limits and results: a probe visits at most `capacity` slots, then reports `full` (the row
//! is not in the table and there was no room: nothing is dropped silently, the caller checks
//! the status; probes grow long near full, keep the load at most about one half). Class ids
//! come from `[first_class, class_limit)`, `class_limit <= no_class`; past it an insert
//! reports `out_of_classes` (its slot then holds `no_class`, and later lookups of that row
//! report the same). The class counter is 64-bit: it never wraps.
//!
//!     namespace dev = vyre::eqsat::device;
//!     auto hc = dev::hashcons::create(memory, 2, 1 << 20, stream);  // expected<hashcons>
//!     my_kernel<<<g, b, 0, stream>>>(hc->ref(), ...);
//!     //   device: const dev::hashcons_result r = ref.lookup_or_insert(args);
//!     //           if (!r.ok()) report(r.status);  // full / out_of_classes
//!     auto rows = hc->size(stream);                  // waits for the stream
//!     VYRE_TRY(hc->clear(stream));
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda/atomic>

#include "vyre/core/config.hpp"
#include "vyre/core/error.hpp"
#include "vyre/detail/device_support.cuh"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/detail/row_hash.hpp"
#include "vyre/eqsat/device/table.cuh"
#include "vyre/runtime/device_array.hpp"
#include "vyre/runtime/memory.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::eqsat::device {

//! What a hash-cons probe found.
enum class hashcons_status : std::uint32_t {
  found,           //!< the row was there: `eclass` is its class
  inserted,        //!< this call inserted the row with the fresh class `eclass`
  missing,         //!< `lookup` only: the row is not there
  full,            //!< not there and no free slot on its probe path: nothing inserted
  out_of_classes,  //!< the row's slot got no class: the ids reached `class_limit`
};

struct hashcons_result {
  std::uint32_t eclass;  //!< `hashcons_ref::no_class` unless found or inserted
  hashcons_status status;
  //! Found or inserted: `eclass` is the row's class.
  __host__ __device__ constexpr bool ok() const noexcept {
    return status == hashcons_status::found || status == hashcons_status::inserted;
  }
};

//! The device view of a hash-cons (non-owning; from `hashcons::ref()`), passed to kernels.
struct hashcons_ref {
  static constexpr std::uint32_t empty_slot = 0xffffffffu;
  static constexpr std::uint32_t busy_slot = 0xfffffffeu;
  static constexpr std::uint32_t no_class = 0xfffffffdu;  //!< also the largest class_limit

  std::uint32_t* slots = nullptr;  //!< `capacity` slot words
  std::uint32_t* keys = nullptr;   //!< `capacity * arity`: slot s's row at `keys + s * arity`
  //! [0] rows inserted, [1] the next class id (may pass `class_limit`: inserts then fail).
  unsigned long long* counters = nullptr;
  std::uint32_t capacity = 0;  //!< a power of two
  std::uint32_t arity = 0;
  std::uint32_t class_limit = no_class;

  //! The class of the row `args[0, arity)`, inserting it with a fresh class when absent.
  __device__ hashcons_result lookup_or_insert(const std::uint32_t* args) const {
    return probe(args, mode::fresh, no_class);
  }
  //! Inserts the row `args` with the caller's class `eclass` (< `no_class`; e.g. loading an
  //! existing table); `found` gives the class of an equal row already there instead. Counts a
  //! row, takes no id from the class counter.
  __device__ hashcons_result insert(const std::uint32_t* args, std::uint32_t eclass) const {
    if (eclass >= no_class) return {no_class, hashcons_status::out_of_classes};
    return probe(args, mode::given, eclass);
  }
  //! The class of the row `args`, or `missing` (`full` when every slot on its path is taken).
  __device__ hashcons_result lookup(const std::uint32_t* args) const {
    return probe(args, mode::lookup, no_class);
  }

  //! The first slot of the probe path of `args`: the low bits of the CPU engine's row hash.
  __host__ __device__ static std::uint32_t hash(const std::uint32_t* args,
                                                std::uint32_t arity) noexcept {
    return static_cast<std::uint32_t>(eqsat::detail::row_hash(args, arity));
  }

 private:
  enum class mode : std::uint8_t { lookup, fresh, given };
  using atomic_u32 = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>;

  __device__ bool same_row(std::uint32_t slot, const std::uint32_t* args) const {
    return eqsat::detail::same_row(keys + std::size_t{slot} * arity, args, arity);
  }

  //! Claimed slot `slot`: writes the row, takes its class, publishes (release).
  __device__ hashcons_result fill(std::uint32_t slot, const std::uint32_t* args, mode m,
                                  std::uint32_t eclass) const {
    std::uint32_t* row = keys + std::size_t{slot} * arity;
    for (std::uint32_t c = 0; c < arity; ++c) row[c] = args[c];
    if (m == mode::fresh) {
      const unsigned long long id = atomicAdd(counters + 1, 1ull);
      eclass = id < class_limit ? static_cast<std::uint32_t>(id) : no_class;
    }
    atomicAdd(counters, 1ull);
    atomic_u32(slots[slot]).store(eclass, cuda::std::memory_order_release);
    if (eclass == no_class) return {no_class, hashcons_status::out_of_classes};
    return {eclass, hashcons_status::inserted};
  }

  __device__ hashcons_result probe(const std::uint32_t* args, mode m, std::uint32_t eclass) const {
    const std::uint32_t mask = capacity - 1;
    std::uint32_t slot = hash(args, arity) & mask;
    for (std::uint32_t visited = 0; visited < capacity; ++visited, slot = (slot + 1) & mask) {
      atomic_u32 word(slots[slot]);
      std::uint32_t s = word.load(cuda::std::memory_order_acquire);
      if (s == empty_slot) {
        if (m == mode::lookup) return {no_class, hashcons_status::missing};
        if (word.compare_exchange_strong(s, busy_slot, cuda::std::memory_order_relaxed))
          return fill(slot, args, m, eclass);
        // Lost the slot to another inserter: `s` holds what it wrote (busy or published).
      }
      while (s == busy_slot) {
        __nanosleep(32);
        s = word.load(cuda::std::memory_order_acquire);
      }
      if (same_row(slot, args)) {
        if (s == no_class) return {no_class, hashcons_status::out_of_classes};
        return {s, hashcons_status::found};
      }
    }
    return {no_class, hashcons_status::full};
  }
};

namespace detail {

template <int = 0>
VYRE_KERNEL void hashcons_clear_kernel(hashcons_ref h, unsigned long long first_class) {
  VYRE_DETAIL_GRID_LOOP(i, h.capacity) {
    h.slots[i] = hashcons_ref::empty_slot;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    h.counters[0] = 0;
    h.counters[1] = first_class;
  }
}

}  // namespace detail

//! Rows inserted and the next class id, read back.
struct hashcons_counts {
  std::uint64_t rows = 0;
  std::uint64_t next_class = 0;  //!< may exceed `class_limit` after `out_of_classes`
};

//! The owning hash-cons: its device block and counters (move-only; frees stream-ordered on the
//! stream it was created on).
class hashcons {
 public:
  VYRE_HOST_MOVE_ONLY_MEMBERS(hashcons);

  //! An empty hash-cons of rows of `arity` u32 with at least `min_capacity` slots (rounded up
  //! to a power of two), class ids from `first_class` below `class_limit`, on `stream`.
  //! @returns `errc::invalid_argument` naming the capacity or class range, or the allocation's
  //!          error.
  static expected<hashcons> create(device_resource_ref memory, std::uint32_t arity,
                                   std::size_t min_capacity, cudaStream_t stream,
                                   std::uint32_t first_class = 0,
                                   std::uint32_t class_limit = hashcons_ref::no_class) {
    const char* what = "eqsat::device::hashcons::create";
    if (min_capacity == 0 || min_capacity > (std::size_t{1} << 31))
      return fail(error(errc::invalid_argument, what)
                      .with("min_capacity", min_capacity)
                      .with("max", std::uint64_t{1} << 31)
                      .fix("ask for 1 to 2^31 slots (about twice the rows expected)"));
    if (class_limit > hashcons_ref::no_class || first_class > class_limit)
      return fail(error(errc::invalid_argument, what)
                      .with("first_class", first_class)
                      .with("class_limit", class_limit)
                      .with("max", hashcons_ref::no_class)
                      .fix("pass first_class <= class_limit <= hashcons_ref::no_class"));
    std::size_t capacity = 1;
    while (capacity < min_capacity) capacity *= 2;
    hashcons h;
    VYRE_TRY_ASSIGN(h.block_, device_array<std::uint32_t>::allocate(
                                  memory, capacity * (std::size_t{1} + arity), stream, what));
    VYRE_TRY_ASSIGN(h.counters_,
                    device_array<unsigned long long>::allocate(memory, 2, stream, what));
    h.memory_ = memory;
    h.ref_.slots = h.block_.get();
    h.ref_.keys = h.block_.get() + capacity;
    h.ref_.counters = h.counters_.get();
    h.ref_.capacity = static_cast<std::uint32_t>(capacity);
    h.ref_.arity = arity;
    h.ref_.class_limit = class_limit;
    VYRE_TRY(h.clear(stream, first_class));
    return h;
  }

  //! The device view, for kernels.
  const hashcons_ref& ref() const noexcept { return ref_; }
  std::uint32_t capacity() const noexcept { return ref_.capacity; }
  std::uint32_t arity() const noexcept { return ref_.arity; }

  //! Empties every slot and restarts the class ids at `first_class`, on `stream`.
  expected<void> clear(cudaStream_t stream, std::uint32_t first_class = 0) {
    if (first_class > ref_.class_limit)
      return fail(error(errc::invalid_argument, "eqsat::device::hashcons::clear")
                      .with("first_class", first_class)
                      .with("class_limit", ref_.class_limit)
                      .fix("pass a first class id at most the class limit"));
    detail::hashcons_clear_kernel<>
        <<<detail::grid(ref_.capacity), detail::block, 0, stream>>>(ref_, first_class);
    return vyre::detail::launched("eqsat::device::hashcons::clear");
  }

  //! The counters, read back (waits for `stream`).
  expected<hashcons_counts> counts(cudaStream_t stream) const {
    unsigned long long c[2] = {0, 0};
    VYRE_TRY(vyre::detail::copy_to_host(detail::runtime_for(memory_), c, ref_.counters, 2, stream,
                                        "eqsat::device::hashcons::counts"));
    return hashcons_counts{c[0], c[1]};
  }
  //! Rows in the table (read back; waits for `stream`).
  expected<std::uint64_t> size(cudaStream_t stream) const {
    VYRE_TRY_ASSIGN(const hashcons_counts c, counts(stream));
    return c.rows;
  }

 private:
  device_array<std::uint32_t> block_;
  device_array<unsigned long long> counters_;
  device_resource_ref memory_;
  hashcons_ref ref_;
};
VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(hashcons);

}  // namespace vyre::eqsat::device

#include "vyre/detail/epilogue.hpp"
