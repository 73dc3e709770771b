// SPDX-License-Identifier: Apache-2.0
//! @file
//! The fast CPU engine: congruence closure and tree-cost extraction with results identical to
//! `congruence_reference` and `extract_reference` (same representatives, merges, rebuilt rows
//! and kept rows; same per-class costs bit for bit, same choices, same root cost), built for
//! speed:
//!
//! - e-class ids are densified by a direct index table when they are dense (max id < 2x rows)
//!   and by an LSD radix sort plus an open-addressing id table otherwise;
//! - the hash-cons is a flat open-addressing table of (row signature, row) words, so a probe
//!   compares stored signatures and never re-hashes a row;
//! - parent lists are one CSR array whose per-class segments are linked on union; the union-find
//!   (`host_union_find`, joined with `link`) joins by parent count (the smaller side's parents
//!   are re-canonicalised) and tracks the smallest member, which is the reported representative;
//! - the rebuild needs no second hash pass: each row remembers the row it matched when last
//!   stored, and the first row of each resulting tree is the first occurrence of its key;
//! - extraction runs Knuth's generalisation of Dijkstra when every node cost is non-negative
//!   (sign bit clear): a monotone radix heap keyed by the cost's bits hands out classes a batch
//!   of equal costs at a time, and a row is evaluated once, when its last child class becomes
//!   final. Negative costs (and -0.0) run the reference's worklist, which stops at a
//!   negative-cost cycle once the rows that lowered the costs form a cycle.
//!
//! Threads (`threads`, 0 = every core): densify, signatures, per-round canonicalisation, the
//! first hash-cons pass (sharded by signature, one shard per thread), the rebuild's output, the
//! final row costs. The union-find, later hash-cons rounds and the Knuth queue are serial.
//!
//! `rounds` differs from the references: congruence counts worklist generations (the first
//! sees every row; later ones the parents of merged classes, canonicalised as a batch);
//! extraction reports 1 for the priority-queue pass and the reference's pass count for the
//! worklist. Plain C++20 with std::thread (compiles with g++ alone); nothing throws.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include <cuda/std/span>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "vyre/algorithms/cpu.hpp"
#include "vyre/algorithms/raw_rows.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/core/union_find.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/detail/parallel.hpp"
#include "vyre/egraph/signature.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms::cpu_engine {

namespace detail {

using u32 = std::uint32_t;
using u64 = std::uint64_t;
inline constexpr u32 none = 0xFFFFFFFFu;

//! Allocates large arrays (4 MiB and up) on 2 MiB boundaries and asks Linux for transparent
//! huge pages there: the engine's arrays are read at random, and with 4 KiB pages nearly every
//! access at millions of rows also misses the TLB. Elsewhere it is `std::allocator`.
template <class T>
struct huge_allocator {
  using value_type = T;
  static constexpr std::size_t huge_page = std::size_t{2} << 20;
  static constexpr std::size_t threshold = std::size_t{4} << 20;

  huge_allocator() noexcept = default;
  template <class U>
  huge_allocator(const huge_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > (std::numeric_limits<std::size_t>::max)() / sizeof(T) - huge_page)
      throw std::bad_alloc();
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= threshold) {
      const std::size_t rounded = (bytes + huge_page - 1) / huge_page * huge_page;
      void* memory = std::aligned_alloc(huge_page, rounded);
      if (memory == nullptr) throw std::bad_alloc();
      ::madvise(memory, rounded, MADV_HUGEPAGE);  // advice only: failure changes nothing
      return static_cast<T*>(memory);
    }
#endif
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* memory, std::size_t n) noexcept {
#if defined(__linux__)
    if (n * sizeof(T) >= threshold) {
      std::free(memory);
      return;
    }
#endif
    std::allocator<T>().deallocate(memory, n);
  }
  template <class U>
  bool operator==(const huge_allocator<U>&) const noexcept {
    return true;
  }
};

template <class T>
using big_vector = std::vector<T, huge_allocator<T>>;

// Fork-join over contiguous ranges (vyre/detail/parallel.hpp).
using vyre::detail::chunk_count;
using vyre::detail::parallel_chunks;
using vyre::detail::resolve_threads;

// The rows, their offsets and the input checks are the old engine's (cpu.hpp `rows_of`).
using rows_view = vyre::algorithms::detail::host_rows;

//! Fibonacci hashing of a 32-bit key to `bits` bits.
inline u64 spread(u32 key, unsigned bits) noexcept {
  return (u64{key} * 0x9E3779B97F4A7C15ull) >> (64u - bits);
}

inline unsigned log2_capacity_for(std::size_t count) noexcept {
  unsigned bits = 4;
  while ((std::size_t{1} << bits) < count * 2 + 2) ++bits;
  return bits;
}

//! Every distinct e-class id ascending, each row's and each child's index into it, and a
//! lookup from id to index (direct table or open addressing).
struct dense_map {
  std::vector<u32> ids;
  big_vector<u32> of_row;
  big_vector<u32> of_child;  //!< indexed like the children column
  big_vector<u32> direct;    //!< id -> index (or none) when dense
  big_vector<u64> table;     //!< (id << 32 | index) when sparse; all ones = empty
  unsigned table_bits = 0;

  u32 index_of(u32 id) const noexcept {
    if (!direct.empty() || table.empty()) return id < direct.size() ? direct[id] : none;
    const u64 mask = table.size() - 1;
    for (u64 slot = spread(id, table_bits);; slot = (slot + 1) & mask) {
      const u64 entry = table[slot];
      if (entry == ~u64{0}) return none;
      if (static_cast<u32>(entry >> 32) == id) return static_cast<u32>(entry);
    }
  }

  VYRE_HOST_SPECIAL_MEMBERS(dense_map);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dense_map);

//! Sorts `keys` ascending (LSD radix, 8 bits a pass); `scratch` is resized to match.
inline void radix_sort(std::vector<u32>& keys, std::vector<u32>& scratch) {
  scratch.resize(keys.size());
  for (unsigned shift = 0; shift < 32; shift += 8) {
    std::size_t count[257] = {};
    for (const u32 k : keys) ++count[((k >> shift) & 0xFFu) + 1];
    if (std::count(count + 1, count + 257, keys.size()) == 1) continue;  // one bucket: no-op
    for (int b = 0; b < 256; ++b) count[b + 1] += count[b];
    for (const u32 k : keys) scratch[count[(k >> shift) & 0xFFu]++] = k;
    keys.swap(scratch);
  }
}

//! Densifies the e-class ids of `rows` and checks every child, with the references' errors
//! (the first bad row in row order).
inline expected<dense_map> densify(const rows_view& rows, unsigned threads) {
  dense_map dense;
  const u32 row_count = rows.row_count;
  VYRE_TRY(try_resize(dense.of_row, row_count, "cpu engine: row e-class indices"));
  VYRE_TRY(try_resize(dense.of_child, rows.child_count, "cpu engine: child e-class indices"));
  u32 max_id = 0;
  for (u32 r = 0; r < row_count; ++r) max_id = (std::max)(max_id, rows.row_eclass_ids[r]);
  try {
    if (row_count != 0 && u64{max_id} < 2 * u64{row_count}) {
      dense.direct.assign(std::size_t{max_id} + 1, none);
      for (u32 r = 0; r < row_count; ++r) dense.direct[rows.row_eclass_ids[r]] = 0;
      u32 next = 0;
      for (std::size_t id = 0; id < dense.direct.size(); ++id)
        if (dense.direct[id] == 0) {
          dense.direct[id] = next++;
          dense.ids.push_back(static_cast<u32>(id));
        }
    } else if (row_count != 0) {
      std::vector<u32> scratch;
      dense.ids.assign(rows.row_eclass_ids, rows.row_eclass_ids + row_count);
      radix_sort(dense.ids, scratch);
      dense.ids.erase(std::unique(dense.ids.begin(), dense.ids.end()), dense.ids.end());
      dense.table_bits = log2_capacity_for(dense.ids.size());
      dense.table.assign(std::size_t{1} << dense.table_bits, ~u64{0});
      const u64 mask = dense.table.size() - 1;
      for (u32 g = 0; g < dense.ids.size(); ++g) {
        u64 slot = spread(dense.ids[g], dense.table_bits);
        while (dense.table[slot] != ~u64{0}) slot = (slot + 1) & mask;
        dense.table[slot] = (u64{dense.ids[g]} << 32) | g;
      }
    }
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "cpu engine: e-class id table")
                    .with("rows", row_count)
                    .with("max_eclass_id", max_id)
                    .fix("free host memory or process the input in smaller shards"));
  }

  // Rows and children, chunk by chunk; each chunk stops at its first bad row.
  struct problem {
    u32 row = none;
    bool past_end = false;
    u32 child = 0;
  };
  const unsigned chunks = chunk_count(threads, row_count);
  std::vector<problem> problems;
  VYRE_TRY(try_resize(problems, chunks, "cpu engine: per-chunk problems"));
  try {
    parallel_chunks(chunks, row_count, [&](unsigned c, std::size_t begin, std::size_t end) {
      for (auto r = static_cast<u32>(begin); r < end; ++r) {
        dense.of_row[r] = dense.index_of(rows.row_eclass_ids[r]);
        for (u32 k = 0; k < rows.row_children_lens[r]; ++k) {
          const u64 entry = u64{rows.row_children_offsets[r]} + k;
          if (entry >= rows.child_count) {
            problems[c] = {r, true, 0};
            return;
          }
          const u32 child = rows.children[entry];
          const u32 index = dense.index_of(child);
          if (index == none) {
            problems[c] = {r, false, child};
            return;
          }
          dense.of_child[entry] = index;
        }
      }
    });
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "cpu engine: densify workers")
                    .with("rows", row_count)
                    .fix("free host memory or pass threads = 1"));
  }
  for (const problem& p : problems) {
    if (p.row == none) continue;
    if (p.past_end)
      return fail(error(errc::out_of_range, "rows: a row's children run past the children column")
                      .with("row", p.row)
                      .with("children_end",
                            u64{rows.row_children_offsets[p.row]} + rows.row_children_lens[p.row])
                      .with("child_count", rows.child_count)
                      .fix("fix the row's children offset and length"));
    return fail(error(errc::not_found, "rows: a child names an e-class that has no row")
                    .with("row", p.row)
                    .with("child_eclass", p.child)
                    .fix("add a row for that e-class or drop the child"));
  }
  return dense;
}

//! A flat open-addressing set of rows keyed by a row signature: each slot holds
//! (signature << 32 | row); probes compare signatures first and call `same(a, b)` on a match.
class row_table {
 public:
  static constexpr u64 empty = ~u64{0};
  static constexpr u64 tombstone = ~u64{0} - 1;

  void init(std::size_t expected_rows) {
    bits_ = log2_capacity_for(expected_rows);
    slots_.assign(std::size_t{1} << bits_, empty);
    live_ = used_ = 0;
  }

  //! The row already stored under an equal key, or `none` after storing `row` (its slot goes
  //! to `slot_of[row]` when `slot_of` is given).
  template <class Same>
  u32 find_or_insert(u32 signature, u32 row, Same&& same, u32* slot_of) {
    if ((used_ + 1) * 10 > slots_.size() * 7) rehash(slot_of);
    const u64 mask = slots_.size() - 1;
    u64 free_slot = empty;
    for (u64 slot = spread(signature, bits_);; slot = (slot + 1) & mask) {
      const u64 entry = slots_[slot];
      if (entry == empty) {
        if (free_slot == empty) {
          free_slot = slot;
          ++used_;
        }
        break;
      }
      if (entry == tombstone) {
        if (free_slot == empty) free_slot = slot;
        continue;
      }
      if (static_cast<u32>(entry >> 32) == signature && same(static_cast<u32>(entry), row))
        return static_cast<u32>(entry);
    }
    slots_[free_slot] = (u64{signature} << 32) | row;
    ++live_;
    if (slot_of != nullptr) slot_of[row] = static_cast<u32>(free_slot);
    return none;
  }

  void erase(u32 slot) noexcept {
    slots_[slot] = tombstone;
    --live_;
  }

 private:
  void rehash(u32* slot_of) {
    big_vector<u64> old;
    old.swap(slots_);
    bits_ = (std::max)(bits_, log2_capacity_for(live_ + 1));
    slots_.assign(std::size_t{1} << bits_, empty);
    const u64 mask = slots_.size() - 1;
    for (const u64 entry : old) {
      if (entry == empty || entry == tombstone) continue;
      u64 slot = spread(static_cast<u32>(entry >> 32), bits_);
      while (slots_[slot] != empty) slot = (slot + 1) & mask;
      slots_[slot] = entry;
      if (slot_of != nullptr) slot_of[static_cast<u32>(entry)] = static_cast<u32>(slot);
    }
    used_ = live_;
  }

  big_vector<u64> slots_;
  unsigned bits_ = 4;
  std::size_t live_ = 0;
  std::size_t used_ = 0;  // live + tombstones
};

//! The shard of a signature (shards = a power of two).
inline unsigned shard_of(u32 signature, unsigned shard_count) noexcept {
  return static_cast<unsigned>((signature * 0x2545F491u) >> 16) & (shard_count - 1);
}

//! Hash-cons shards for `threads` workers: a power of two, at most 16 (each shard's worker
//! reads every row's signature, so more shards cost more than they save).
inline unsigned shard_count_for(unsigned threads) noexcept {
  unsigned shards = 1;
  while (shards < threads && shards < 16) shards *= 2;
  return shards;
}

//! Signature of row `r` with children `canon` (indexed like the children column).
inline u32 signature_of(const rows_view& rows, const u32* canon, u32 r) noexcept {
  return vyre::egraph::row_signature(
      rows.row_language_op_ids[r], canon + rows.row_children_offsets[r], rows.row_children_lens[r]);
}

inline bool same_row(const rows_view& rows, const u32* canon, u32 a, u32 b) noexcept {
  if (rows.row_language_op_ids[a] != rows.row_language_op_ids[b] ||
      rows.row_children_lens[a] != rows.row_children_lens[b])
    return false;
  const u32* x = canon + rows.row_children_offsets[a];
  const u32* y = canon + rows.row_children_offsets[b];
  for (u32 k = 0; k < rows.row_children_lens[a]; ++k)  // short rows: a loop beats a memcmp call
    if (x[k] != y[k]) return false;
  return true;
}

//! Congruence closure over densified rows (see `cpu_engine::congruence`).
inline expected<congruence_result> congruence(const rows_view& rows, const dense_map& dense,
                                              unsigned threads) {
  const u32 row_count = rows.row_count;
  const auto class_count = static_cast<u32>(dense.ids.size());
  congruence_result result;
  try {
    // Canonical children (dense indices of union-find roots), rewritten as rows are
    // re-canonicalised; the signature each row was last stored under.
    big_vector<u32> canon(dense.of_child);
    big_vector<u32> signature(row_count);
    const unsigned row_chunks = chunk_count(threads, row_count);
    parallel_chunks(row_chunks, row_count, [&](unsigned, std::size_t begin, std::size_t end) {
      for (auto r = static_cast<u32>(begin); r < end; ++r)
        signature[r] = signature_of(rows, canon.data(), r);
    });

    // Parents: per class, the rows naming it (one entry per child occurrence), as CSR segments
    // linked into one chain per set on union.
    big_vector<u32> parent_start(std::size_t{class_count} + 1, 0u);
    for (const u32 c : dense.of_child) ++parent_start[c + 1];
    for (u32 g = 0; g < class_count; ++g) parent_start[g + 1] += parent_start[g];
    big_vector<u32> parent_rows(rows.child_count);
    {
      big_vector<u32> cursor(parent_start.begin(), parent_start.end() - 1);
      for (u32 r = 0; r < row_count; ++r)
        for (u32 k = 0; k < rows.row_children_lens[r]; ++k)
          parent_rows[cursor[canon[rows.row_children_offsets[r] + k]]++] = r;
    }
    // The classes' union-find, joined by parent count (`link`: the side with fewer parents
    // joins the other, so fewer rows are re-canonicalised); per root: its parents' count, its
    // smallest member (the representative reported) and its chain of CSR segments.
    host_union_find<big_vector<u32>> sets;
    VYRE_TRY(sets.grow(class_count, "cpu_engine::congruence: union-find parents"));
    big_vector<u32> weight(class_count), smallest(class_count), chain_next(class_count, none),
        chain_tail(class_count);
    for (u32 g = 0; g < class_count; ++g) {
      smallest[g] = chain_tail[g] = g;
      weight[g] = parent_start[g + 1] - parent_start[g];
    }
    const auto find = [&](u32 x) { return sets.find(x); };

    big_vector<char> queued(row_count, 0), in_memo(row_count, 0);
    // The row each row matched when last stored (itself when it was stored): rows linked this
    // way had identical children then, so they have the same key at the fixpoint.
    big_vector<u32> match_of(row_count);
    big_vector<u32> slot_of(row_count, none);
    std::vector<u32> pending, next;
    // Joins the sets of classes a and b; queues the parents of the side with fewer parents.
    const auto unite = [&](u32 a, u32 b) {
      a = find(a);
      b = find(b);
      if (a == b) return;
      if (weight[a] > weight[b] || (weight[a] == weight[b] && a < b)) std::swap(a, b);
      // a (fewer parents) joins b.
      for (u32 g = a; g != none; g = chain_next[g])
        for (u32 i = parent_start[g]; i < parent_start[g + 1]; ++i) {
          const u32 p = parent_rows[i];
          if (queued[p] == 0) {
            queued[p] = 1;
            next.push_back(p);
          }
        }
      sets.link(a, b);
      weight[b] += weight[a];
      smallest[b] = (std::min)(smallest[a], smallest[b]);
      chain_next[chain_tail[b]] = a;
      chain_tail[b] = chain_tail[a];
      ++result.merges;
    };

    // The hash-cons, sharded by signature. First pass: every row, the shards in parallel
    // (each scans the rows in order); matches become unions afterwards. A row stored with
    // children that a union then changes is queued (it is a parent of the losing side).
    const unsigned shards = threads <= 1 || row_count < (1u << 15) ? 1u : shard_count_for(threads);
    std::vector<row_table> memo(shards);
    const auto same = [&](u32 a, u32 b) { return same_row(rows, canon.data(), a, b); };
    std::vector<std::vector<std::pair<u32, u32>>> matches(shards);
    // Each worker owns a range of shards and scans the rows once.
    parallel_chunks(
        (std::min)(threads, shards), shards, [&](unsigned, std::size_t begin, std::size_t end) {
          for (std::size_t s = begin; s < end; ++s) memo[s].init(row_count / shards + 16);
          for (u32 r = 0; r < row_count; ++r) {
            const unsigned s = shards == 1 ? 0u : shard_of(signature[r], shards);
            if (s < begin || s >= end) continue;
            const u32 found = memo[s].find_or_insert(signature[r], r, same, slot_of.data());
            match_of[r] = found == none ? r : found;
            if (found == none)
              in_memo[r] = 1;
            else
              matches[s].emplace_back(r, found);
          }
        });
    result.rounds = 1;
    for (const auto& list : matches)
      for (const auto& [r, other] : list) unite(dense.of_row[r], dense.of_row[other]);
    matches.clear();

    // Later rounds: canonicalise the queued rows as a batch (parallel, read-only finds), then
    // re-store them one by one, uniting on a match.
    const auto root_of = [&](u32 x) { return sets.find_const(x); };
    while (!next.empty()) {
      pending.swap(next);
      next.clear();
      ++result.rounds;
      const unsigned chunks = chunk_count(threads, pending.size(), 1u << 12);
      parallel_chunks(chunks, pending.size(), [&](unsigned, std::size_t begin, std::size_t end) {
        for (std::size_t i = begin; i < end; ++i) {
          const u32 r = pending[i];
          for (u32 k = 0; k < rows.row_children_lens[r]; ++k) {
            u32& child = canon[rows.row_children_offsets[r] + k];
            child = root_of(child);
          }
        }
      });
      for (const u32 r : pending) {
        queued[r] = 0;
        if (in_memo[r] != 0) {
          memo[shards == 1 ? 0 : shard_of(signature[r], shards)].erase(slot_of[r]);
          in_memo[r] = 0;
        }
        for (u32 k = 0; k < rows.row_children_lens[r]; ++k) {
          u32& child = canon[rows.row_children_offsets[r] + k];
          child = find(child);
        }
        signature[r] = signature_of(rows, canon.data(), r);
        auto& table = memo[shards == 1 ? 0 : shard_of(signature[r], shards)];
        const u32 found = table.find_or_insert(signature[r], r, same, slot_of.data());
        match_of[r] = found == none ? r : found;
        if (found == none)
          in_memo[r] = 1;
        else
          unite(dense.of_row[r], dense.of_row[found]);
      }
    }
    std::vector<row_table>().swap(memo);

    // Class map: the smallest member of each set.
    big_vector<u32> representative(class_count);
    for (u32 g = 0; g < class_count; ++g) representative[g] = smallest[find(g)];
    result.eclass_ids = dense.ids;
    result.representative.resize(class_count);
    for (u32 g = 0; g < class_count; ++g) result.representative[g] = dense.ids[representative[g]];

    // Rebuilt rows: the first row of each key is kept. Following `match_of` from any row ends
    // at a row still stored (a match points at a row stored at the time; one that was stored,
    // then re-stored later, points onward from a later time, so there are no cycles), and the
    // stored rows' keys are distinct at the fixpoint: the rows of one tree are exactly the rows
    // of one key.
    big_vector<u32>& tree = signature;  // reused: each row's tree root
    parallel_chunks(row_chunks, row_count, [&](unsigned, std::size_t begin, std::size_t end) {
      for (auto r = static_cast<u32>(begin); r < end; ++r) {
        u32 x = r;
        while (match_of[x] != x) x = match_of[x];
        tree[r] = x;
      }
    });
    big_vector<char>& keep = queued;  // reused: all zero at the fixpoint
    big_vector<char>& claimed = in_memo;
    std::fill(claimed.begin(), claimed.end(), 0);
    for (u32 r = 0; r < row_count; ++r)
      if (claimed[tree[r]] == 0) {
        claimed[tree[r]] = 1;
        keep[r] = 1;
      }
    std::vector<std::size_t> kept_before(row_chunks + 1, 0), children_before(row_chunks + 1, 0);
    parallel_chunks(row_chunks, row_count, [&](unsigned c, std::size_t begin, std::size_t end) {
      std::size_t kept = 0, children = 0;
      for (std::size_t r = begin; r < end; ++r)
        if (keep[r] != 0) {
          ++kept;
          children += rows.row_children_lens[r];
        }
      kept_before[c + 1] = kept;
      children_before[c + 1] = children;
    });
    for (unsigned c = 0; c < row_chunks; ++c) {
      kept_before[c + 1] += kept_before[c];
      children_before[c + 1] += children_before[c];
    }
    raw_rows& out = result.rebuilt;
    const std::size_t kept_count = kept_before[row_chunks];
    result.kept_rows.resize(kept_count);
    out.row_eclass_ids.resize(kept_count);
    out.row_language_op_ids.resize(kept_count);
    out.row_children_lens.resize(kept_count);
    out.children.resize(children_before[row_chunks]);
    parallel_chunks(row_chunks, row_count, [&](unsigned c, std::size_t begin, std::size_t end) {
      std::size_t at = kept_before[c], child_at = children_before[c];
      for (auto r = static_cast<u32>(begin); r < end; ++r) {
        if (keep[r] == 0) continue;
        result.kept_rows[at] = r;
        out.row_eclass_ids[at] = result.representative[dense.of_row[r]];
        out.row_language_op_ids[at] = rows.row_language_op_ids[r];
        out.row_children_lens[at] = rows.row_children_lens[r];
        ++at;
        for (u32 k = 0; k < rows.row_children_lens[r]; ++k)
          out.children[child_at++] = result.representative[canon[rows.row_children_offsets[r] + k]];
      }
    });
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "cpu engine congruence: host memory")
                    .with("rows", row_count)
                    .fix("free host memory or process the input in smaller shards"));
  }
  return result;
}

//! A monotone priority queue of (non-negative double, class) (a radix heap): keys compare as
//! their bit patterns, and every key pushed is at least the last key popped (Knuth's
//! extraction guarantees it: a row's cost is never below its children's). Equal keys pop in
//! any order.
class radix_queue {
 public:
  bool empty() const noexcept { return size_ == 0; }
  void push(double key, u32 value) {
    const u64 bits = key_bits(key);
    buckets_[bucket_of(bits)].emplace_back(bits, value);
    ++size_;
  }
  //! Moves every entry with the smallest key into `out` (replacing its contents).
  //! @pre `!empty()`.
  void pop_equal(std::vector<std::pair<double, u32>>& out) {
    if (buckets_[0].empty()) refill();
    out.clear();
    double key;
    std::memcpy(&key, &last_, sizeof key);
    for (const auto& entry : buckets_[0]) out.emplace_back(key, entry.second);
    size_ -= buckets_[0].size();
    buckets_[0].clear();
  }

 private:
  //! Moves the entries of the first non-empty bucket down, its smallest key becoming `last_`.
  void refill() {
    std::size_t b = 1;
    while (buckets_[b].empty()) ++b;
    u64 smallest = ~u64{0};
    for (const auto& entry : buckets_[b]) smallest = (std::min)(smallest, entry.first);
    last_ = smallest;
    for (const auto& entry : buckets_[b]) buckets_[bucket_of(entry.first)].push_back(entry);
    buckets_[b].clear();
  }
  static u64 key_bits(double key) noexcept {
    u64 bits;
    std::memcpy(&bits, &key, sizeof bits);
    return bits;
  }
  std::size_t bucket_of(u64 bits) const noexcept {
    const u64 differ = bits ^ last_;
    return differ == 0 ? 0 : 64 - static_cast<std::size_t>(std::countl_zero(differ));
  }

  std::vector<std::pair<u64, u32>> buckets_[65];
  u64 last_ = 0;
  std::size_t size_ = 0;
};

//! Tree-cost extraction over densified rows (see `cpu_engine::extract`).
inline expected<extraction_result> extract(const rows_view& rows, const dense_map& dense,
                                           cuda::std::span<const double> node_cost,
                                           cuda::std::span<const u32> roots, unsigned threads) {
  if (node_cost.size() != rows.row_count)
    return fail(error(errc::invalid_argument, "extract: one node cost per row is required")
                    .with("costs", node_cost.size())
                    .with("rows", rows.row_count)
                    .fix("pass exactly one cost per row, in row order"));
  bool non_negative = true;
  for (std::size_t r = 0; r < node_cost.size(); ++r) {
    if (!std::isfinite(node_cost[r]))
      return fail(error(errc::invalid_argument, "extract: a node cost is not finite")
                      .with("row", r)
                      .fix("give every node a finite cost (drop nodes that must never be chosen)"));
    non_negative = non_negative && !std::signbit(node_cost[r]);
  }
  const auto class_count = static_cast<u32>(dense.ids.size());
  std::vector<u32> root_index;
  VYRE_TRY(try_resize(root_index, roots.size(), "extract: root indices"));
  for (std::size_t i = 0; i < roots.size(); ++i) {
    const u32 index = dense.index_of(roots[i]);
    if (index == none)
      return fail(error(errc::not_found, "extract: a root names an e-class that has no row")
                      .with("root", i)
                      .with("eclass", roots[i])
                      .fix("pass e-class ids that appear in the rows' e-class column"));
    root_index[i] = index;
  }

  constexpr double infinity = std::numeric_limits<double>::infinity();
  extraction_result result;
  try {
    std::vector<double>& cost = result.cost;
    cost.assign(class_count, infinity);
    const u32* of_child = dense.of_child.data();
    const auto row_cost = [&](u32 r) {
      double total = node_cost[r];  // children left to right, as the reference sums them
      for (u32 k = 0; k < rows.row_children_lens[r]; ++k)
        total += cost[of_child[rows.row_children_offsets[r] + k]];
      return total;
    };
    // Parents per class, one entry per child occurrence, rows ascending (CSR).
    big_vector<u32> parent_start(std::size_t{class_count} + 1, 0u), parent_rows(rows.child_count);
    for (u32 r = 0; r < rows.row_count; ++r)
      for (u32 k = 0; k < rows.row_children_lens[r]; ++k)
        ++parent_start[of_child[rows.row_children_offsets[r] + k] + 1];
    for (u32 g = 0; g < class_count; ++g) parent_start[g + 1] += parent_start[g];
    {
      big_vector<u32> cursor(parent_start.begin(), parent_start.end() - 1);
      for (u32 r = 0; r < rows.row_count; ++r)
        for (u32 k = 0; k < rows.row_children_lens[r]; ++k)
          parent_rows[cursor[of_child[rows.row_children_offsets[r] + k]]++] = r;
    }

    if (non_negative) {
      // Knuth: a class is final when popped with its least tentative cost; a row is evaluated
      // once, when its last child class becomes final. Sums of non-negative doubles never drop
      // below an operand, so this is the reference's fixpoint, bit for bit.
      // Everything a ready row needs in one record (one cache miss), and both costs of a class
      // side by side; a class is final once its final cost is finite (only finite totals are
      // queued).
      struct row_record {
        double node_cost;
        u32 eclass, first, length, waiting;
      };
      struct class_state {
        double tentative = infinity, final_cost = infinity;
        u32 choice = no_row;
      };
      big_vector<row_record> record(rows.row_count);
      parallel_chunks(chunk_count(threads, rows.row_count), rows.row_count,
                      [&](unsigned, std::size_t begin, std::size_t end) {
                        for (auto r = static_cast<u32>(begin); r < end; ++r)
                          record[r] = {node_cost[r], dense.of_row[r], rows.row_children_offsets[r],
                                       rows.row_children_lens[r], rows.row_children_lens[r]};
                      });
      big_vector<class_state> state(class_count);
      radix_queue queue;
      // A ready row's total is final (its children are), so the choice is settled here too:
      // the least total, ties to the smallest row index, as the reference's final pass picks.
      const auto offer = [&](u32 r) {
        const row_record& row = record[r];
        double total = row.node_cost;  // children left to right, as the reference sums them
        for (u32 k = 0; k < row.length; ++k) total += state[of_child[row.first + k]].final_cost;
        class_state& target = state[row.eclass];
        if (total < target.tentative) {  // never for a final class: total >= its cost
          target.tentative = total;
          target.choice = r;
          queue.push(total, row.eclass);
        } else if (total == target.tentative && total < infinity && r < target.choice) {
          target.choice = r;
        }
      };
      for (u32 r = 0; r < rows.row_count; ++r)
        if (record[r].length == 0) offer(r);
      // Classes leave the queue a batch of equal keys at a time: all of them are final, then
      // their parents' counts drop, then the rows that became ready are evaluated (three flat
      // loops whose cache misses overlap; the values equal one-at-a-time Knuth).
      std::vector<std::pair<double, u32>> batch;
      std::vector<u32> finalized, ready;
      while (!queue.empty()) {
        queue.pop_equal(batch);
        finalized.clear();
        for (const auto& [total, g] : batch) {
          class_state& popped = state[g];
          if (popped.final_cost != infinity || total > popped.tentative) continue;
          popped.final_cost = total;
          finalized.push_back(g);
        }
        ready.clear();
        for (const u32 g : finalized)
          for (u32 i = parent_start[g]; i < parent_start[g + 1]; ++i) {
            const u32 p = parent_rows[i];
            if (--record[p].waiting == 0) ready.push_back(p);
          }
        for (const u32 p : ready) offer(p);
      }
      result.choice.resize(class_count);
      for (u32 g = 0; g < class_count; ++g) {
        cost[g] = state[g].final_cost;
        result.choice[g] = state[g].choice;
      }
      result.rounds = 1;
    } else {
      // The reference's worklist (passes in the same order, so -0.0 and negative costs give
      // the same bits), and its early stop at a cycle of lowering rows (a negative-cost cycle).
      namespace reference = vyre::algorithms::detail;
      const u64 round_limit = u64{class_count} + 1;
      std::vector<u32> pending(rows.row_count), next;
      next.reserve(rows.row_count);
      std::vector<char> queued(rows.row_count, 0);
      std::vector<u32> via(class_count, no_row);  // the row whose total last lowered each cost
      for (u32 r = 0; r < rows.row_count; ++r) pending[r] = r;
      while (!pending.empty()) {
        if (result.rounds == round_limit)
          return fail(reference::negative_cycle_error(result.rounds, class_count));
        if (reference::check_lowering_cycle_after(result.rounds)) {
          VYRE_TRY_ASSIGN(
              const u32 on_cycle,
              reference::lowering_cycle_class(rows, class_count, via.data(), dense.of_row.data(),
                                              of_child, parent_start.data(), parent_rows.data()));
          if (on_cycle != no_row)
            return fail(
                reference::negative_cycle_error(result.rounds, class_count, dense.ids[on_cycle]));
        }
        ++result.rounds;
        next.clear();
        for (const u32 r : pending) {
          queued[r] = 0;
          const double total = row_cost(r);
          const u32 g = dense.of_row[r];
          if (!(total < cost[g])) continue;
          cost[g] = total;
          via[g] = r;
          for (u32 i = parent_start[g]; i < parent_start[g + 1]; ++i) {
            const u32 p = parent_rows[i];
            if (queued[p] == 0) {
              queued[p] = 1;
              next.push_back(p);
            }
          }
        }
        pending.swap(next);
      }
      // Choices from the final costs: the cheapest row, ties to the smallest row index.
      big_vector<double> totals(rows.row_count);
      parallel_chunks(chunk_count(threads, rows.row_count), rows.row_count,
                      [&](unsigned, std::size_t begin, std::size_t end) {
                        for (auto r = static_cast<u32>(begin); r < end; ++r)
                          totals[r] = row_cost(r);
                      });
      result.choice.assign(class_count, no_row);
      big_vector<double> best(class_count, infinity);
      for (u32 r = 0; r < rows.row_count; ++r) {
        const u32 g = dense.of_row[r];
        if (totals[r] < best[g]) {
          best[g] = totals[r];
          result.choice[g] = r;
        }
      }
    }

    result.eclass_ids = dense.ids;
  } catch (const std::bad_alloc&) {
    return fail(error(errc::out_of_memory, "cpu engine extract: host memory")
                    .with("rows", rows.row_count)
                    .fix("free host memory or process the input in smaller shards"));
  }
  for (const u32 g : root_index) result.root_cost += result.cost[g];
  return result;
}

}  // namespace detail

//! Congruence closure with the result of `congruence_reference` (representatives, merges,
//! rebuilt rows, kept rows); only `rounds` counts differently (worklist generations).
//! @param threads worker threads; 0 = every core (`std::thread::hardware_concurrency`).
//! @throws nothing; errors as `congruence_reference`: lengths that do not add up
//!         (`errc::invalid_argument` / `errc::out_of_range`), a child naming an e-class without
//!         rows (`errc::not_found`), host memory (`errc::out_of_memory`).
inline expected<congruence_result> congruence(const raw_rows_ref& rows, unsigned threads = 0) {
  const unsigned workers = detail::resolve_threads(threads);
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const detail::rows_view view, vyre::algorithms::detail::rows_of(rows, offsets));
  VYRE_TRY_ASSIGN(const detail::dense_map dense, detail::densify(view, workers));
  return detail::congruence(view, dense, workers);
}

//! @overload The rows of a packed host image (its explicit children offsets are used).
inline expected<congruence_result> congruence(const image_columns& image, unsigned threads = 0) {
  const unsigned workers = detail::resolve_threads(threads);
  const detail::rows_view view = vyre::algorithms::detail::rows_of(image);
  VYRE_TRY_ASSIGN(const detail::dense_map dense, detail::densify(view, workers));
  return detail::congruence(view, dense, workers);
}

//! Tree-cost extraction with the result of `extract_reference` (costs bit for bit, choices
//! with ties to the smallest row index, root cost); `rounds` is 1 when every node cost is
//! non-negative (one priority-queue pass), else the reference's worklist pass count.
//! @param node_cost one finite cost per row, in row order.
//! @param roots e-class ids (each must have rows); the root cost sums them in order.
//! @param threads worker threads; 0 = every core.
//! @throws nothing; errors as `extract_reference`: wrong cost count or a non-finite cost
//!         (`errc::invalid_argument`), an unknown root or child class (`errc::not_found`), a
//!         negative-cost cycle (`errc::invalid_argument`, found as early and named as there),
//!         host memory (`errc::out_of_memory`).
inline expected<extraction_result> extract(const raw_rows_ref& rows,
                                           cuda::std::span<const double> node_cost,
                                           cuda::std::span<const std::uint32_t> roots,
                                           unsigned threads = 0) {
  const unsigned workers = detail::resolve_threads(threads);
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const detail::rows_view view, vyre::algorithms::detail::rows_of(rows, offsets));
  VYRE_TRY_ASSIGN(const detail::dense_map dense, detail::densify(view, workers));
  return detail::extract(view, dense, node_cost, roots, workers);
}

//! @overload The rows of a packed host image.
inline expected<extraction_result> extract(const image_columns& image,
                                           cuda::std::span<const double> node_cost,
                                           cuda::std::span<const std::uint32_t> roots,
                                           unsigned threads = 0) {
  const unsigned workers = detail::resolve_threads(threads);
  const detail::rows_view view = vyre::algorithms::detail::rows_of(image);
  VYRE_TRY_ASSIGN(const detail::dense_map dense, detail::densify(view, workers));
  return detail::extract(view, dense, node_cost, roots, workers);
}

}  // namespace vyre::algorithms::cpu_engine

#include "vyre/detail/epilogue.hpp"
