// SPDX-License-Identifier: Apache-2.0
//! @file
//! The DAG extraction's local search, written once for both engines: a CPU thread runs one
//! search with `serial_exec`, a CUDA thread block runs one with the block executor of
//! `dag_extract.cuh`. The executor only decides who runs a loop; every value the search computes
//! is the same on both, so a search gives the same selection on the CPU and the GPU for a seed.
//!
//! A search holds a full, acyclic choice map and exact reference counts (a class is needed
//! while a root or a needed chosen e-node names it), so the DAG cost of a switch is found
//! exactly by cascading count changes. It descends in rounds:
//! - *screen* (parallel, read-only): every alternative row of every needed class is tried
//!   against the round's state, counts in a small private overlay; a class is kept when one of
//!   its alternatives improves, or when a cascade outgrows the overlay (then only the exact step
//!   can tell);
//! - *commit* (one thread): the kept classes in a seeded random order, each re-tried exactly on
//!   the live state and switched to its best improving alternative.
//! Rounds repeat until one commits nothing. Then iterated local search: a few random switches,
//! descend, keep the cheaper map, undo the switches otherwise, within a work budget, and never
//! once the best map costs the problem's lower bound (nothing can be cheaper).
//!
//! Cycles: a strict topological labelling (label[c] > label[d] for every child class d of c's
//! chosen row) rules most switches in or out at once; a depth-first search decides the rest.
//! Labels only grow: a switch raises the switched class and, as far as needed, its choosers.
//!
//! Floating point: only additions, subtractions and comparisons of the node costs, and the
//! tolerance's one product (rounded explicitly, so nvcc cannot fuse it), in the same order on
//! both sides.
#pragma once

#include <cstdint>

#include "vyre/core/config.hpp"
#include "vyre/detail/split_mix.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#else
#include <cmath>
#endif

namespace vyre::algorithms::detail {

//! The extraction problem as the search reads it (host or device memory; dense class indices).
struct dag_problem_ref {
  std::uint32_t class_count = 0;
  std::uint32_t root_count = 0;
  std::uint32_t multi_count = 0;  //!< classes with more than one row
  const std::uint32_t* row_class = nullptr;
  const double* cost = nullptr;
  const std::uint32_t* child_start = nullptr;   //!< row -> distinct child classes (CSR)
  const std::uint32_t* child = nullptr;         //!<
  const std::uint32_t* class_start = nullptr;   //!< class -> rows (CSR)
  const std::uint32_t* class_rows = nullptr;    //!<
  const std::uint32_t* parent_start = nullptr;  //!< class -> rows naming it (CSR)
  const std::uint32_t* parent_rows = nullptr;   //!<
  const unsigned char* usable = nullptr;        //!< row does not name its own class
  const std::uint32_t* roots = nullptr;         //!< dense, distinct
  const std::uint32_t* multi = nullptr;         //!< the classes with alternatives, ascending
  //! The rows of the classes with alternatives (the screen's items), and the index in `multi`
  //! of each one's class.
  std::uint32_t candidate_count = 0;
  const std::uint32_t* candidate_row = nullptr;
  const std::uint32_t* candidate_multi = nullptr;
};

//! The search's knobs (the public `dag_options` minus the scheduling ones).
struct dag_search_knobs {
  std::uint64_t seed = 1;
  std::uint64_t kick_budget = 0;
  std::uint32_t kick_patience = 0;
  //! A proven lower bound on every selection's cost: the search stops as soon as its best map
  //! costs this (within `dag_tolerance`). Negative: no such stop (costs are >= 0).
  double lower_bound = -1;
};

//! The undo log's length in switches (both engines: it decides when an undo becomes a reset,
//! which changes the work count and so where the budget ends).
inline constexpr std::uint32_t dag_undo_capacity = 4096;

//! One search's arrays; `class_count` entries unless said otherwise.
struct dag_search_arrays {
  std::uint32_t* choice = nullptr;
  std::uint32_t* ref = nullptr;
  std::uint32_t* label = nullptr;
  std::uint32_t* stamp = nullptr;  //!< depth-first search marks
  std::uint32_t* best = nullptr;   //!< the cheapest map found (the result)
  std::uint32_t* flag = nullptr;   //!< `multi_count`: kept by the screen
  std::uint32_t* list = nullptr;   //!< `multi_count`: the classes the commit step tries
  std::uint32_t* stack = nullptr;  //!< `stack_capacity`
  std::uint32_t* undo = nullptr;   //!< `2 * dag_undo_capacity`: (class, previous row) pairs
  std::uint32_t stack_capacity = 0;
};

//! Where one search's arrays lie in one block of words (a host vector, or device memory). The
//! per-class arrays every step reads (choice, counts, labels, marks) come first, so the GPU can
//! put them in the block's shared memory instead (`in_shared`): the exact steps run on one
//! thread, so each load's latency is the search's speed.
struct dag_search_layout {
  std::uint64_t classes, multi, stack, words;
  bool in_shared;

  //! The layout for `classes` classes, `multi` of them with alternatives, `children` child
  //! entries. The stack: cascades push each child entry at most once, the labelling keeps two
  //! words per open class.
  static constexpr dag_search_layout of(std::uint64_t classes, std::uint64_t multi,
                                        std::uint64_t children) noexcept {
    dag_search_layout l{};
    l.classes = classes;
    l.multi = multi;
    l.stack = (children + 1 > 2 * classes ? children + 1 : 2 * classes) + 2;
    l.words = 5 * classes + 2 * multi + l.stack + 2 * std::uint64_t{dag_undo_capacity};
    l.in_shared = false;
    return l;
  }
  //! Shared memory a block needs: 4 words per class when `in_shared`.
  constexpr std::uint64_t shared_bytes() const noexcept { return in_shared ? 16 * classes : 0; }
  //! The arrays of the search whose words start at `base`; `shared` holds the per-class arrays
  //! when `in_shared`.
  VYRE_HOST_DEVICE dag_search_arrays arrays(std::uint32_t* base,
                                            std::uint32_t* shared = nullptr) const noexcept {
    dag_search_arrays a;
    std::uint32_t* const per_class = in_shared && shared != nullptr ? shared : base;
    a.choice = per_class;
    a.ref = a.choice + classes;
    a.label = a.ref + classes;
    a.stamp = a.label + classes;
    a.best = base + 4 * classes;
    a.flag = a.best + classes;
    a.list = a.flag + multi;
    a.stack = a.list + multi;
    a.undo = a.stack + stack;
    a.stack_capacity = static_cast<std::uint32_t>(stack);
    return a;
  }
};

//! One search's scalars (shared memory on the device: every thread of the block reads them).
//! Trivial, as `__shared__` requires; `run` zeroes it.
struct dag_search_scalars {
  double total;      //!< DAG cost of the live map, kept by the cascades
  double best_cost;  //!< cost of `best`
  std::uint64_t work;
  std::uint64_t moves;
  std::uint64_t last_round_work;
  std::uint64_t kick_stop;
  std::uint64_t rng;  //!< split_mix state
  std::uint32_t epoch;
  std::uint32_t stalled;
  std::uint32_t undo_count;
  std::uint32_t undo_lost;  //!< the log overflowed since `best`: undo by a full reset
  std::uint32_t committed;
  std::uint32_t done;
  std::uint32_t copy_best;
};

inline constexpr std::uint32_t dag_no_row = 0xFFFFFFFFu;

//! a * b rounded once (nvcc would fuse a product into a following sum).
VYRE_HOST_DEVICE inline double dag_product(double a, double b) noexcept {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

VYRE_HOST_DEVICE inline double dag_tolerance(double total) noexcept {
  const double magnitude = total < 0 ? -total : total;
  return dag_product(1e-9, magnitude > 1.0 ? magnitude : 1.0);
}

//! Whether `cost` meets the lower bound `bound` (up to the rounding `dag_tolerance` allows):
//! then no selection is cheaper, and the map costing it is optimal.
VYRE_HOST_DEVICE inline bool reached(double cost, double bound) noexcept {
  return cost <= bound + dag_tolerance(bound);
}

//! The executor of a CPU thread: every loop runs here, in order.
struct serial_exec {
  template <class F>
  VYRE_HOST_DEVICE void for_each(std::uint32_t n, F&& f) {
    for (std::uint32_t i = 0; i < n; ++i) f(i);
  }
  template <class F>
  VYRE_HOST_DEVICE void single(F&& f) {
    f();
  }
  //! out[0..k) = the i < n with keep(i), ascending; returns k.
  template <class Keep>
  VYRE_HOST_DEVICE std::uint32_t compact(std::uint32_t n, Keep&& keep, std::uint32_t* out) {
    std::uint32_t k = 0;
    for (std::uint32_t i = 0; i < n; ++i)
      if (keep(i)) out[k++] = i;
    return k;
  }
};

//! The screen's private scratch: a small open-addressing map (class -> count change) and a
//! stack. Too small a scratch never gives a wrong answer: the class is kept for the exact step.
struct dag_screen_scratch {
  static constexpr std::uint32_t slots = 128;    // power of two
  static constexpr std::uint32_t max_keys = 64;  // half full at most
  static constexpr std::uint32_t stack_slots = 128;
  std::uint32_t key[slots];
  std::int32_t value[slots];
  std::uint8_t used_slot[max_keys];
  std::uint32_t used = 0;
  std::uint32_t stack[stack_slots];

  VYRE_HOST_DEVICE void clear() noexcept {
    for (std::uint32_t i = 0; i < used; ++i) key[used_slot[i]] = dag_no_row;
    used = 0;
  }
  //! The slot of `k`, inserted with value 0 when absent; `slots` when the map is full.
  VYRE_HOST_DEVICE std::uint32_t find(std::uint32_t k) noexcept {
    std::uint32_t s = (k * 0x9E3779B1u) >> 25;  // top 7 bits: 128 slots
    while (key[s] != dag_no_row) {
      if (key[s] == k) return s;
      s = (s + 1) & (slots - 1);
    }
    if (used == max_keys) return slots;
    key[s] = k;
    value[s] = 0;
    used_slot[used++] = static_cast<std::uint8_t>(s);
    return s;
  }
};

//! One search over a problem; `Exec` decides who runs each loop.
template <class Exec>
class dag_local_search {
 public:
  VYRE_HOST_DEVICE dag_local_search(const dag_problem_ref& p, const dag_search_arrays& a,
                                    dag_search_scalars& s, Exec& x) noexcept
      : p_(p), a_(a), s_(s), x_(x) {}

  //! The whole search from `start` (a full acyclic map); the cheapest map ends in `a.best`, its
  //! cost in `s.best_cost`.
  VYRE_HOST_DEVICE void run(const std::uint32_t* start, const dag_search_knobs& knobs) {
    begin(start, knobs);
    improve(knobs);
  }

  //! `run`'s first part: the first local optimum from `start`, in `a.best`. Returns whether the
  //! search is done already (no kicks, or the map meets the lower bound).
  VYRE_HOST_DEVICE bool begin(const std::uint32_t* start, const dag_search_knobs& knobs) {
    x_.for_each(p_.class_count, [&](std::uint32_t c) {
      a_.choice[c] = start[c];
      a_.ref[c] = 0;
      a_.stamp[c] = 0;
    });
    x_.single([&] {
      s_ = dag_search_scalars{};
      s_.rng = knobs.seed;
      for (std::uint32_t i = 0; i < p_.root_count; ++i) adjust<+1>(p_.roots[i]);
      relabel();
    });
    if (!reached(s_.total, knobs.lower_bound)) descend();  // else the start is optimal already
    x_.for_each(p_.class_count, [&](std::uint32_t c) { a_.best[c] = a_.choice[c]; });
    x_.single([&] {
      s_.best_cost = s_.total;
      s_.undo_count = 0;
      s_.undo_lost = 0;
      s_.kick_stop = s_.work + knobs.kick_budget;
      // Each kick is followed by at least one screen: when one costs a good part of the budget
      // (long chains of exclusive sub-terms), kicks cannot pay for themselves.
      s_.done = knobs.kick_budget == 0 || p_.multi_count == 0 ||
                s_.last_round_work > knobs.kick_budget / 8 ||
                reached(s_.best_cost, knobs.lower_bound);
    });
    return s_.done != 0;
  }

  //! `run`'s second part, after `begin`: the kicks.
  VYRE_HOST_DEVICE void improve(const dag_search_knobs& knobs) {
    while (!s_.done) {
      x_.single([&] {
        if (s_.work >= s_.kick_stop || s_.stalled >= knobs.kick_patience) {
          s_.done = 1;
          return;
        }
        ++s_.stalled;
        s_.work += p_.class_count;
        kick();
      });
      if (s_.done) break;
      descend();
      x_.single([&] {
        const double tol = dag_tolerance(s_.total);
        s_.copy_best = 0;
        if (s_.total < s_.best_cost - tol) {
          s_.stalled = 0;
          s_.best_cost = s_.total;
          s_.copy_best = 1;
          s_.undo_count = 0;
          s_.undo_lost = 0;
          s_.done = reached(s_.best_cost, knobs.lower_bound);
        } else if (s_.total > s_.best_cost + tol) {
          undo_to_best();
        }
      });
      if (s_.copy_best)
        x_.for_each(p_.class_count, [&](std::uint32_t c) { a_.best[c] = a_.choice[c]; });
    }
  }

 private:
  // ---- Rounds --------------------------------------------------------------------------------

  VYRE_HOST_DEVICE void descend() {
    dag_screen_scratch scratch;  // each thread's own; cleared after use, so set up once
    for (std::uint32_t k = 0; k < dag_screen_scratch::slots; ++k) scratch.key[k] = dag_no_row;
    for (;;) {
      const double round_total = s_.total;
      x_.for_each(p_.multi_count, [&](std::uint32_t i) { a_.flag[i] = 0; });
      // One item per alternative row: a class with many rows spreads over many threads.
      // A class already kept needs no more tries. Whether a thread sees another's flag in time
      // depends on the schedule, so the screen's work is charged per item, not per step: the
      // budget, and so the result, stay the same on any executor.
      x_.for_each(p_.candidate_count, [&](std::uint32_t k) {
        const std::uint32_t i = p_.candidate_multi[k];
        const std::uint32_t c = p_.multi[i];
        const std::uint32_t r = p_.candidate_row[k];
        if (a_.flag[i] != 0 || a_.ref[c] == 0 || r == a_.choice[c]) return;
        if (screen(c, r, round_total, scratch)) a_.flag[i] = 1;  // every writer writes 1
      });
      const std::uint32_t kept = x_.compact(
          p_.multi_count, [&](std::uint32_t i) { return a_.flag[i] != 0; }, a_.list);
      x_.single([&] {
        const std::uint64_t round_start = s_.work;
        s_.work += p_.candidate_count;
        s_.committed = 0;
        vyre::detail::split_mix rng{s_.rng};
        for (std::uint32_t i = kept; i > 1; --i) {  // Fisher-Yates over the kept classes
          const std::uint32_t j = rng.below(i);
          const std::uint32_t t = a_.list[i - 1];
          a_.list[i - 1] = a_.list[j];
          a_.list[j] = t;
        }
        s_.rng = rng.state;
        for (std::uint32_t i = 0; i < kept; ++i)
          if (improve(p_.multi[a_.list[i]])) s_.committed = 1;
        s_.last_round_work = s_.work - round_start;
      });
      if (!s_.committed) return;
    }
  }

  //! Switches `c` to its best improving alternative, tried exactly on the live state.
  VYRE_HOST_DEVICE bool improve(std::uint32_t c) {
    if (a_.ref[c] == 0) return false;
    const std::uint32_t current = a_.choice[c];
    std::uint32_t best_row = dag_no_row;
    double best_delta = -dag_tolerance(s_.total);
    for (std::uint32_t k = p_.class_start[c]; k < p_.class_start[c + 1]; ++k) {
      const std::uint32_t r = p_.class_rows[k];
      if (r == current) continue;
      // Whatever the switch frees is part of the rest of the selection, so the change is at
      // least cost(r) - total: skip rows that cannot beat the best found.
      if (p_.cost[r] - s_.total >= best_delta || !switchable(c, r)) continue;
      const double delta = trial(c, r);
      if (delta < best_delta) {
        best_delta = delta;
        best_row = r;
      }
    }
    if (best_row == dag_no_row) return false;
    commit(c, best_row);
    ++s_.moves;
    return true;
  }

  //! A few random switches among the needed classes with alternatives.
  VYRE_HOST_DEVICE void kick() {
    vyre::detail::split_mix rng{s_.rng};
    const std::uint32_t kicks = 1 + rng.below(3);
    for (std::uint32_t i = 0; i < kicks; ++i) {
      // A needed class: draws among all classes with alternatives until one is (most of them
      // may be unneeded), at most `draws` times.
      constexpr std::uint32_t draws = 64;
      std::uint32_t c = dag_no_row;
      for (std::uint32_t d = 0; d < draws && c == dag_no_row; ++d) {
        const std::uint32_t drawn = p_.multi[rng.below(p_.multi_count)];
        if (a_.ref[drawn] != 0) c = drawn;
      }
      if (c == dag_no_row) continue;
      const std::uint32_t n = p_.class_start[c + 1] - p_.class_start[c];
      const std::uint32_t r = p_.class_rows[p_.class_start[c] + rng.below(n)];
      if (r != a_.choice[c] && switchable(c, r)) commit(c, r);
    }
    s_.rng = rng.state;
  }

  //! Back to `best`: the logged switches undone in reverse order, or a full reset when the log
  //! overflowed.
  VYRE_HOST_DEVICE void undo_to_best() {
    if (s_.undo_lost != 0) {
      for (std::uint32_t c = 0; c < p_.class_count; ++c) {
        a_.choice[c] = a_.best[c];
        a_.ref[c] = 0;
      }
      s_.total = 0;
      for (std::uint32_t i = 0; i < p_.root_count; ++i) adjust<+1>(p_.roots[i]);
      relabel();
    } else {
      while (s_.undo_count > 0) {
        --s_.undo_count;
        const std::uint32_t c = a_.undo[2 * s_.undo_count];
        apply(c, a_.undo[2 * s_.undo_count + 1]);
        raise_labels(c);
      }
    }
    s_.total = s_.best_cost;  // the same map: drop the rounding the cascades accumulated
    s_.undo_count = 0;
    s_.undo_lost = 0;
  }

  // ---- Exact steps on the live state (one thread) ------------------------------------------

  VYRE_HOST_DEVICE void commit(std::uint32_t c, std::uint32_t r) {
    if (s_.undo_count < dag_undo_capacity) {
      a_.undo[2 * s_.undo_count] = c;
      a_.undo[2 * s_.undo_count + 1] = a_.choice[c];
      ++s_.undo_count;
    } else {
      s_.undo_lost = 1;
    }
    apply(c, r);
    raise_labels(c);
  }

  //! The change of DAG cost if c switched to r (the map is left as it was).
  VYRE_HOST_DEVICE double trial(std::uint32_t c, std::uint32_t r) {
    const double before = s_.total;
    const std::uint32_t old = a_.choice[c];
    apply(c, r);
    const double delta = s_.total - before;
    apply(c, old);
    s_.total = before;
    return delta;
  }

  //! Switches c to r, keeping the counts and the total exact: newly named classes first, so
  //! that classes named by both the old and the new row never drop to zero.
  VYRE_HOST_DEVICE void apply(std::uint32_t c, std::uint32_t r) {
    const std::uint32_t old = a_.choice[c];
    a_.choice[c] = r;
    if (a_.ref[c] == 0) return;
    s_.total = s_.total + p_.cost[r] - p_.cost[old];
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k)
      adjust<+1>(p_.child[k]);
    for (std::uint32_t k = p_.child_start[old]; k < p_.child_start[old + 1]; ++k)
      adjust<-1>(p_.child[k]);
  }

  //! Adds `Step` to class c's count; a class whose count leaves or reaches zero adds or
  //! removes its chosen row's cost and passes the step on to that row's children.
  template <int Step>
  VYRE_HOST_DEVICE void adjust(std::uint32_t c) {
    std::uint32_t top = 0;
    a_.stack[top++] = c;
    while (top > 0) {
      const std::uint32_t y = a_.stack[--top];
      ++s_.work;
      if constexpr (Step > 0) {
        if (a_.ref[y]++ != 0) continue;
      } else {
        if (--a_.ref[y] != 0) continue;
      }
      const std::uint32_t yr = a_.choice[y];
      s_.total = Step > 0 ? s_.total + p_.cost[yr] : s_.total - p_.cost[yr];
      for (std::uint32_t k = p_.child_start[yr]; k < p_.child_start[yr + 1]; ++k)
        a_.stack[top++] = p_.child[k];
    }
  }

  //! Whether `c` may switch to `r`: r's children all have a choice and none reaches c.
  VYRE_HOST_DEVICE bool switchable(std::uint32_t c, std::uint32_t r) {
    if (!p_.usable[r]) return false;
    bool below = true;
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k) {
      const std::uint32_t d = p_.child[k];
      if (a_.choice[d] == dag_no_row) return false;
      if (a_.label[d] >= a_.label[c]) below = false;
    }
    if (below) return true;  // d reaching c would need label[d] > label[c]
    const std::uint32_t epoch = ++s_.epoch;
    if (epoch == 0) {  // wrapped: no stale mark may equal a future epoch
      for (std::uint32_t y = 0; y < p_.class_count; ++y) a_.stamp[y] = 0;
      s_.epoch = 1;
      return switchable(c, r);
    }
    std::uint32_t top = 0;
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k) {
      const std::uint32_t d = p_.child[k];
      if (a_.label[d] > a_.label[c] && a_.stamp[d] != epoch) {
        a_.stamp[d] = epoch;
        a_.stack[top++] = d;
      }
    }
    while (top > 0) {
      const std::uint32_t y = a_.stack[--top];
      ++s_.work;
      if (y == c) return false;
      const std::uint32_t yr = a_.choice[y];
      for (std::uint32_t k = p_.child_start[yr]; k < p_.child_start[yr + 1]; ++k) {
        const std::uint32_t z = p_.child[k];
        if (a_.label[z] >= a_.label[c] && a_.stamp[z] != epoch) {
          a_.stamp[z] = epoch;
          a_.stack[top++] = z;
        }
      }
    }
    return true;
  }

  //! After c's choice changed: c above its new children, and each chooser above what it chose.
  VYRE_HOST_DEVICE void raise_labels(std::uint32_t c) {
    const std::uint32_t r = a_.choice[c];
    std::uint32_t height = 0;
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k) {
      const std::uint32_t h = a_.label[p_.child[k]] + 1;
      if (h > height) height = h;
    }
    if (height <= a_.label[c]) return;
    a_.label[c] = height;
    std::uint32_t top = 0;
    a_.stack[top++] = c;
    while (top > 0) {
      const std::uint32_t y = a_.stack[--top];
      ++s_.work;
      for (std::uint32_t k = p_.parent_start[y]; k < p_.parent_start[y + 1]; ++k) {
        const std::uint32_t pr = p_.parent_rows[k];
        const std::uint32_t q = p_.row_class[pr];
        if (a_.choice[q] != pr || a_.label[q] > a_.label[y]) continue;
        if (top == a_.stack_capacity || a_.label[y] >= 0x7FFFFFFFu) {
          relabel();  // out of room (or of label range): start the labels afresh
          return;
        }
        a_.label[q] = a_.label[y] + 1;
        a_.stack[top++] = q;
      }
    }
  }

  //! Labels every class with its height in the choice map (0 without a choice).
  VYRE_HOST_DEVICE void relabel() {
    constexpr std::uint32_t open = dag_no_row - 1, unseen = dag_no_row;
    for (std::uint32_t c = 0; c < p_.class_count; ++c) a_.label[c] = unseen;
    std::uint32_t* frames = a_.stack;  // (class, next child entry) pairs
    for (std::uint32_t start = 0; start < p_.class_count; ++start) {
      if (a_.label[start] != unseen) continue;
      if (a_.choice[start] == dag_no_row) {
        a_.label[start] = 0;
        continue;
      }
      std::uint32_t depth = 0;
      frames[0] = start;
      frames[1] = p_.child_start[a_.choice[start]];
      depth = 1;
      a_.label[start] = open;
      while (depth > 0) {
        const std::uint32_t y = frames[2 * depth - 2];
        const std::uint32_t yr = a_.choice[y];
        std::uint32_t& next = frames[2 * depth - 1];
        if (next < p_.child_start[yr + 1]) {
          const std::uint32_t z = p_.child[next++];
          ++s_.work;
          if (a_.label[z] == unseen) {
            if (a_.choice[z] == dag_no_row) {
              a_.label[z] = 0;
            } else {
              a_.label[z] = open;
              frames[2 * depth] = z;
              frames[2 * depth + 1] = p_.child_start[a_.choice[z]];
              ++depth;
            }
          }
          continue;
        }
        std::uint32_t height = 0;
        for (std::uint32_t k = p_.child_start[yr]; k < p_.child_start[yr + 1]; ++k) {
          const std::uint32_t h = a_.label[p_.child[k]] + 1;
          if (h > height) height = h;
        }
        a_.label[y] = height;
        --depth;
      }
    }
  }

  // ---- The screen: read-only, against the round's state ------------------------------------

  //! Whether switching `c` (needed) to `r` improves on the round's map, or may (the scratch was
  //! too small to tell).
  VYRE_HOST_DEVICE bool screen(std::uint32_t c, std::uint32_t r, double round_total,
                               dag_screen_scratch& scratch) const {
    const double limit = -dag_tolerance(round_total);
    if (!p_.usable[r] || p_.cost[r] - round_total >= limit) return false;
    scratch.clear();
    const int acyclic = screen_acyclic(c, r, scratch);
    if (acyclic <= 0) return acyclic < 0;
    scratch.clear();
    double delta = 0;
    if (!screen_delta(c, r, scratch, delta)) return true;
    return delta < limit;
  }

  //! `switchable` with private marks: 1 acyclic, 0 a cycle, -1 unknown (out of scratch).
  VYRE_HOST_DEVICE int screen_acyclic(std::uint32_t c, std::uint32_t r,
                                      dag_screen_scratch& scratch) const {
    bool below = true;
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k) {
      const std::uint32_t d = p_.child[k];
      if (a_.choice[d] == dag_no_row) return 0;
      if (a_.label[d] >= a_.label[c]) below = false;
    }
    if (below) return 1;
    std::uint32_t top = 0;
    auto visit = [&](std::uint32_t y) {  // false: out of scratch
      const std::uint32_t slot = scratch.find(y);
      if (slot == dag_screen_scratch::slots || top == dag_screen_scratch::stack_slots) return false;
      if (scratch.value[slot] == 0) {
        scratch.value[slot] = 1;
        scratch.stack[top++] = y;
      }
      return true;
    };
    for (std::uint32_t k = p_.child_start[r]; k < p_.child_start[r + 1]; ++k) {
      const std::uint32_t d = p_.child[k];
      if (a_.label[d] > a_.label[c] && !visit(d)) return -1;
    }
    while (top > 0) {
      const std::uint32_t y = scratch.stack[--top];
      if (y == c) return 0;
      const std::uint32_t yr = a_.choice[y];
      for (std::uint32_t k = p_.child_start[yr]; k < p_.child_start[yr + 1]; ++k) {
        const std::uint32_t z = p_.child[k];
        if (a_.label[z] >= a_.label[c] && !visit(z)) return -1;
      }
    }
    return 1;
  }

  //! `trial` with the count changes in the scratch; false when it ran out of scratch.
  VYRE_HOST_DEVICE bool screen_delta(std::uint32_t c, std::uint32_t r, dag_screen_scratch& scratch,
                                     double& delta) const {
    const std::uint32_t old = a_.choice[c];
    delta = p_.cost[r] - p_.cost[old];
    // Same order as `apply`: the new row's children up, then the old row's down.
    for (int step = +1; step >= -1; step -= 2) {
      const std::uint32_t from = step > 0 ? r : old;
      for (std::uint32_t k = p_.child_start[from]; k < p_.child_start[from + 1]; ++k) {
        std::uint32_t top = 0;
        scratch.stack[top++] = p_.child[k];
        while (top > 0) {
          const std::uint32_t y = scratch.stack[--top];
          const std::uint32_t slot = scratch.find(y);
          if (slot == dag_screen_scratch::slots) return false;
          const std::int64_t before = std::int64_t{a_.ref[y]} + scratch.value[slot];
          scratch.value[slot] += step;
          if (step > 0 ? before != 0 : before != 1) continue;
          const std::uint32_t yr = y == c ? r : a_.choice[y];
          delta = step > 0 ? delta + p_.cost[yr] : delta - p_.cost[yr];
          for (std::uint32_t j = p_.child_start[yr]; j < p_.child_start[yr + 1]; ++j) {
            if (top == dag_screen_scratch::stack_slots) return false;
            scratch.stack[top++] = p_.child[j];
          }
        }
      }
    }
    return true;
  }

  const dag_problem_ref& p_;
  const dag_search_arrays& a_;
  dag_search_scalars& s_;
  Exec& x_;
};

}  // namespace vyre::algorithms::detail
