// SPDX-License-Identifier: Apache-2.0
//! @file
//! DAG-cost extraction on the CPU: a deterministic heuristic (greedy DAG start, then local
//! search) that picks one e-node per needed e-class so that the sum of the costs of the
//! distinct chosen e-nodes reachable from the roots (each paid once) is small.
//!
//! Tree-cost extraction (`extract_reference`) pays a shared sub-term once per use; DAG cost pays
//! it once. The heuristic works in three steps:
//!
//! 1. Two acyclic starts, both built in Knuth's generalisation of Dijkstra's order (an e-class
//!    is settled when its cheapest e-node whose children are all settled is the cheapest of the
//!    open ones; a settled class never changes, so the choice map is acyclic by construction):
//!    the *tree start* values an e-node by its tree cost (the tree-cost selection), the *greedy
//!    DAG start* (extraction-gym's faster-greedy-dag) by the cost of the union of its children's
//!    chosen node sets plus itself.
//! 2. Local search over the whole choice map: for each needed class, every alternative e-node
//!    is tried; its marginal cost (its cost + the cost of the classes it newly needs - the cost
//!    of those no longer needed) is found exactly by reference counting (a class is needed while
//!    a root or a needed chosen e-node names it). The best improving switch is taken; switches
//!    that would close a cycle are skipped (a strict topological labelling filters most of them,
//!    a depth-first search decides the rest). Passes repeat until none improves.
//! 3. Iterated local search: random kicks (a needed class switched to a random acyclic
//!    alternative), local search again, the best selection kept, within a deterministic work
//!    budget.
//!
//! Several independent searches (different starts and seeds) run on `std::thread`s; the
//! cheapest result wins, ties to the lowest search index, so the result depends on the seed and
//! the search count, never on the thread count or timing.
//!
//! Plain C++20 host code (g++ alone). Nothing throws; errors come back in `vyre::expected`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <random>
#include <ranges>
#include <thread>
#include <utility>
#include <vector>

#include <cuda/std/span>

#include "vyre/algorithms/cpu.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/host_special_members.hpp"

#include "vyre/detail/prologue.hpp"  // host-only aggregates in expected (see there)

namespace vyre::algorithms {

//! How `extract_dag` searches.
struct dag_options {
  //! Independent searches: search i starts from the greedy DAG start when i % 3 == 0, the tree
  //! method's selection when i % 3 == 1, the tree start otherwise, with seed `seed + i`. The
  //! result depends on this and `seed` only.
  std::uint32_t searches = 4;
  //! Worker threads; 0: `std::thread::hardware_concurrency()`. Never changes the result.
  std::uint32_t threads = 0;
  std::uint64_t seed = 1;
  //! Work units (reference-count updates and search visits) each search may spend on kicks
  //! after its first local optimum; 0 disables kicks (plain local search).
  std::uint64_t kick_budget = 60'000'000;
  //! A search stops kicking after this many kicks in a row that found nothing cheaper.
  std::uint32_t kick_patience = 1000;
};

//! A DAG-cost selection.
struct dag_extraction_result {
  std::vector<std::uint32_t> eclass_ids;  //!< every e-class id, ascending
  //! Parallel: the chosen row of each e-class reachable from the roots through the chosen rows,
  //! `no_row` for every other class. Acyclic.
  std::vector<std::uint32_t> choice;
  double dag_cost = 0;  //!< sum of the costs of the chosen rows (each once)
  //! The DAG cost of the tree-cost selection (`extract_reference`'s, or the tree start's when
  //! that one has a cycle through zero-cost ties).
  double tree_selection_dag_cost = 0;
  std::uint32_t selected_rows = 0;  //!< rows in the selection
  std::uint64_t moves = 0;          //!< improving switches of the winning search

  VYRE_HOST_SPECIAL_MEMBERS(
      dag_extraction_result);  // host-only (vyre/detail/host_special_members.hpp)
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(dag_extraction_result);

namespace detail {

//! The extraction problem over dense class indices: each row's distinct child classes, the rows
//! of each class and the rows naming each class. A row naming its own class is never usable.
struct dag_problem {
  std::uint32_t class_count = 0;
  std::uint32_t row_count = 0;
  std::vector<std::uint32_t> ids;  //!< dense class -> e-class id
  std::vector<std::uint32_t> row_class;
  std::vector<double> cost;
  std::vector<std::uint32_t> child_start, child;       //!< distinct child classes of each row (CSR)
  std::vector<std::uint32_t> class_start, class_rows;  //!< rows of each class (CSR)
  std::vector<std::uint32_t> parent_start, parent_rows;  //!< rows naming each class (CSR)
  std::vector<char> usable;                              //!< row does not name its own class
  std::vector<std::uint32_t> roots;                      //!< dense, distinct

  std::uint32_t children_begin(std::uint32_t r) const noexcept { return child_start[r]; }
  std::uint32_t children_end(std::uint32_t r) const noexcept { return child_start[r + 1]; }
};

inline void csr_from_keys(const std::vector<std::uint32_t>& keys,
                          const std::vector<std::uint32_t>& values, std::uint32_t key_count,
                          std::vector<std::uint32_t>& start, std::vector<std::uint32_t>& out) {
  start.assign(std::size_t{key_count} + 1, 0u);
  for (const std::uint32_t k : keys) ++start[k + 1];
  for (std::uint32_t k = 0; k < key_count; ++k) start[k + 1] += start[k];
  out.resize(values.size());
  std::vector<std::uint32_t> cursor(start.begin(), start.end() - 1);
  for (std::size_t i = 0; i < keys.size(); ++i) out[cursor[keys[i]]++] = values[i];
}

//! The host allocation failure of a DAG extraction step (`context`) on `rows` rows.
inline error dag_out_of_memory(const char* context, std::uint32_t rows, const char* who,
                               const char* hint = "free host memory") noexcept {
  return error(errc::out_of_memory, context).with("rows", rows).about(who).fix(hint);
}

//! Validates costs and roots and builds the problem. Refuses negative costs (DAG cost is then
//! not what a selection should minimise: paying a node once is no longer a lower bound).
inline expected<dag_problem> make_dag_problem(const host_rows& rows, const dense_classes& dense,
                                              cuda::std::span<const double> node_cost,
                                              cuda::std::span<const std::uint32_t> roots,
                                              const char* who) {
  if (node_cost.size() != rows.row_count)
    return fail(error(errc::invalid_argument, "DAG extraction: one node cost per row is required")
                    .with("costs", node_cost.size())
                    .with("rows", rows.row_count)
                    .about(who)
                    .fix("pass exactly one cost per row, in row order"));
  for (std::size_t r = 0; r < node_cost.size(); ++r) {
    if (!std::isfinite(node_cost[r]))
      return fail(error(errc::invalid_argument, "DAG extraction: a node cost is not finite")
                      .with("row", r)
                      .about(who)
                      .fix("give every node a finite cost"));
    if (node_cost[r] < 0) {
      char text[80];
      std::snprintf(text, sizeof text, "%s: row %zu has cost %.17g", who, r, node_cost[r]);
      return fail(error(errc::invalid_argument,
                        "DAG extraction: a node cost is negative (DAG and ILP extraction need "
                        "costs >= 0)")
                      .with("row", r)
                      .about(text)
                      .fix("shift or clamp the costs to be non-negative, or use tree extraction "
                           "(--method tree), which accepts negative costs without negative "
                           "cycles"));
    }
  }
  dag_problem p;
  p.class_count = static_cast<std::uint32_t>(dense.ids.size());
  p.row_count = rows.row_count;
  try {
    p.ids = dense.ids;
    p.row_class = dense.of_row;
    p.cost.assign(node_cost.begin(), node_cost.end());
    p.usable.assign(p.row_count, 1);
    p.child_start.assign(std::size_t{p.row_count} + 1, 0u);
    std::vector<std::uint32_t> scratch;
    for (std::uint32_t r = 0; r < p.row_count; ++r) {
      scratch.assign(
          dense.of_child.begin() + rows.row_children_offsets[r],
          dense.of_child.begin() + rows.row_children_offsets[r] + rows.row_children_lens[r]);
      std::sort(scratch.begin(), scratch.end());
      scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
      for (const std::uint32_t c : scratch) {
        if (c == p.row_class[r]) p.usable[r] = 0;
        p.child.push_back(c);
      }
      p.child_start[r + 1] = static_cast<std::uint32_t>(p.child.size());
    }
    std::vector<std::uint32_t> row_index(p.row_count);
    for (std::uint32_t r = 0; r < p.row_count; ++r) row_index[r] = r;
    csr_from_keys(p.row_class, row_index, p.class_count, p.class_start, p.class_rows);
    std::vector<std::uint32_t> parent_of(p.child.size());
    for (std::uint32_t r = 0; r < p.row_count; ++r)
      for (std::uint32_t k = p.child_start[r]; k < p.child_start[r + 1]; ++k) parent_of[k] = r;
    csr_from_keys(p.child, parent_of, p.class_count, p.parent_start, p.parent_rows);
    for (std::size_t i = 0; i < roots.size(); ++i) {
      const auto it = std::lower_bound(p.ids.begin(), p.ids.end(), roots[i]);
      if (it == p.ids.end() || *it != roots[i])
        return fail(
            error(errc::not_found, "DAG extraction: a root names an e-class that has no row")
                .with("root", i)
                .with("eclass", roots[i])
                .about(who)
                .fix("pass e-class ids that appear in the rows' e-class column"));
      p.roots.push_back(static_cast<std::uint32_t>(it - p.ids.begin()));
    }
    std::sort(p.roots.begin(), p.roots.end());
    p.roots.erase(std::unique(p.roots.begin(), p.roots.end()), p.roots.end());
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("DAG extraction: problem arrays", rows.row_count, who));
  }
  return p;
}

//! Settles classes in Knuth-Dijkstra order. `value(row, choice)` prices a row whose children
//! are all settled (it must be >= each child's settled value when costs are >= 0); returns the
//! choice map (`no_row` for classes never settled: every node of theirs needs a cycle).
//! `on_settle(class, row)` runs as a class settles; returning false abandons (empty result).
template <class Value, class Settle>
std::vector<std::uint32_t> settle_classes(const dag_problem& p, Value value, Settle on_settle) {
  using entry = std::pair<double, std::uint32_t>;  // value, row (ties: smaller row first)
  std::priority_queue<entry, std::vector<entry>, std::greater<entry>> open;
  std::vector<std::uint32_t> choice(p.class_count, no_row);
  std::vector<std::uint32_t> waiting(p.row_count);
  for (std::uint32_t r = 0; r < p.row_count; ++r) {
    waiting[r] = p.children_end(r) - p.children_begin(r);
    if (p.usable[r] && waiting[r] == 0) open.emplace(value(r, choice), r);
  }
  while (!open.empty()) {
    const std::uint32_t r = open.top().second;
    open.pop();
    const std::uint32_t c = p.row_class[r];
    if (choice[c] != no_row) continue;
    choice[c] = r;
    if (!on_settle(c, r)) return {};
    for (std::uint32_t k = p.parent_start[c]; k < p.parent_start[c + 1]; ++k) {
      const std::uint32_t parent = p.parent_rows[k];
      if (--waiting[parent] == 0 && p.usable[parent] && choice[p.row_class[parent]] == no_row)
        open.emplace(value(parent, choice), parent);
    }
  }
  return choice;
}

//! The tree-cost selection (acyclic; with costs >= 0 every class's tree cost is optimal).
inline std::vector<std::uint32_t> tree_start(const dag_problem& p) {
  std::vector<double> tree(p.class_count, 0.0);
  std::uint32_t settling = no_row;
  double settled_value = 0;
  auto value = [&](std::uint32_t r, const std::vector<std::uint32_t>&) {
    double total = p.cost[r];
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      total += tree[p.child[k]];
    return total;
  };
  return settle_classes(p, value, [&](std::uint32_t c, std::uint32_t r) {
    settling = c;
    settled_value = value(r, {});
    tree[settling] = settled_value;
    return true;
  });
}

//! The greedy DAG start: a row is worth the cost of the union of its children's node sets plus
//! its own cost. Abandoned (empty) when the stored sets would pass `max_entries` in all.
inline std::vector<std::uint32_t> greedy_dag_start(const dag_problem& p, std::size_t max_entries) {
  std::vector<std::vector<std::uint32_t>> set(p.class_count);  // classes in each settled set
  std::vector<std::uint32_t> stamp(p.class_count, 0);
  std::uint32_t epoch = 0;
  std::size_t stored = 0;
  std::vector<std::uint32_t> members;
  const std::vector<std::uint32_t>* chosen = nullptr;
  // Collects the union of r's children's sets into `members` and returns its cost + cost[r].
  auto gather = [&](std::uint32_t r, const std::vector<std::uint32_t>& choice) {
    ++epoch;
    members.clear();
    double total = p.cost[r];
    for (std::uint32_t k = p.children_begin(r); k < p.children_end(r); ++k)
      for (const std::uint32_t d : set[p.child[k]])
        if (stamp[d] != epoch) {
          stamp[d] = epoch;
          members.push_back(d);
          total += p.cost[choice[d]];
        }
    return total;
  };
  std::vector<std::uint32_t> result;
  result = settle_classes(
      p,
      [&](std::uint32_t r, const std::vector<std::uint32_t>& choice) {
        chosen = &choice;
        return gather(r, choice);
      },
      [&](std::uint32_t c, std::uint32_t r) {
        gather(r, *chosen);
        members.push_back(c);
        stored += members.size();
        if (stored > max_entries) return false;
        set[c] = members;
        return true;
      });
  return result;
}

//! One local search over a full, acyclic choice map.
class dag_search {
 public:
  dag_search(const dag_problem& p, std::vector<std::uint32_t> choice, std::uint64_t seed)
      : p_(p),
        choice_(std::move(choice)),
        ref_(p.class_count, 0),
        label_(p.class_count, 0),
        stamp_(p.class_count, 0),
        rng_(seed) {
    for (const std::uint32_t root : p_.roots) increment(root);
    relabel();
  }

  double cost() const noexcept { return total_; }
  std::uint64_t moves() const noexcept { return moves_; }
  const std::vector<std::uint32_t>& choice() const noexcept { return choice_; }

  //! Passes of best-improvement switches until none improves.
  void descend() {
    std::vector<std::uint32_t> order;
    bool improved = true;
    while (improved) {
      improved = false;
      const std::uint64_t pass_start = work_;
      order.clear();
      for (std::uint32_t c = 0; c < p_.class_count; ++c)
        if (ref_[c] > 0 && p_.class_start[c + 1] - p_.class_start[c] > 1) order.push_back(c);
      std::shuffle(order.begin(), order.end(), rng_);
      for (const std::uint32_t c : order) {
        if (ref_[c] == 0) continue;
        const std::uint32_t current = choice_[c];
        std::uint32_t best_row = no_row;
        double best_delta = -tolerance();
        for (std::uint32_t k = p_.class_start[c]; k < p_.class_start[c + 1]; ++k) {
          const std::uint32_t r = p_.class_rows[k];
          if (r == current) continue;
          // Whatever the switch frees is part of the rest of the selection, so the change is
          // at least cost(r) - total: skip rows that cannot beat the best found.
          if (p_.cost[r] - total_ >= best_delta || !switchable(c, r)) continue;
          const double delta = trial(c, r);
          if (delta < best_delta) {
            best_delta = delta;
            best_row = r;
          }
        }
        if (best_row != no_row) {
          commit(c, best_row);
          ++moves_;
          improved = true;
        }
      }
      last_pass_work_ = work_ - pass_start;
    }
  }

  //! Iterated local search within `budget` work units, until `patience` kicks in a row found
  //! nothing cheaper; ends on the best map found.
  void kick_and_descend(std::uint64_t budget, std::uint32_t patience) {
    // Each kick is followed by at least one full pass: when a pass alone costs a good part of
    // the budget (long chains of exclusive sub-terms), kicks cannot pay for themselves.
    if (last_pass_work_ > budget / 8) return;
    std::vector<std::uint32_t> best = choice_;
    double best_cost = exact_cost();
    std::vector<std::uint32_t> needed;
    const std::uint64_t stop = work_ + budget;
    std::uint32_t stalled = 0;
    while (work_ < stop && stalled < patience) {
      ++stalled;
      work_ += p_.class_count;
      needed.clear();
      for (std::uint32_t c = 0; c < p_.class_count; ++c)
        if (ref_[c] > 0 && p_.class_start[c + 1] - p_.class_start[c] > 1) needed.push_back(c);
      if (needed.empty()) break;
      const std::uint32_t kicks = 1 + static_cast<std::uint32_t>(rng_() % 3);
      for (std::uint32_t i = 0; i < kicks; ++i) {
        const std::uint32_t c = needed[rng_() % needed.size()];
        if (ref_[c] == 0) continue;
        const std::uint32_t n = p_.class_start[c + 1] - p_.class_start[c];
        const std::uint32_t r = p_.class_rows[p_.class_start[c] + rng_() % n];
        if (r != choice_[c] && switchable(c, r)) commit(c, r);
      }
      descend();
      const double now = exact_cost();
      if (now < best_cost - tolerance()) {
        stalled = 0;
        best_cost = now;
        best = choice_;
      } else if (now > best_cost + tolerance()) {
        reset(best);
      }
    }
    reset(best);
  }

  //! The DAG cost summed afresh over the needed classes.
  double exact_cost() const {
    double total = 0;
    for (std::uint32_t c = 0; c < p_.class_count; ++c)
      if (ref_[c] > 0) total += p_.cost[choice_[c]];
    return total;
  }
  bool needed(std::uint32_t c) const noexcept { return ref_[c] > 0; }

 private:
  double tolerance() const noexcept { return 1e-9 * (std::max)(1.0, std::abs(total_)); }

  //! Whether `c` may switch to `r`: r's children all have a choice and none reaches c.
  bool switchable(std::uint32_t c, std::uint32_t r) {
    if (!p_.usable[r]) return false;
    bool labelled_below = true;
    for (std::uint32_t k = p_.children_begin(r); k < p_.children_end(r); ++k) {
      const std::uint32_t d = p_.child[k];
      if (choice_[d] == no_row) return false;
      if (label_[d] >= label_[c]) labelled_below = false;
    }
    if (labelled_below) return true;  // c reachable from d would need label[d] > label[c]
    ++epoch_;
    stack_.clear();
    for (std::uint32_t k = p_.children_begin(r); k < p_.children_end(r); ++k) {
      const std::uint32_t d = p_.child[k];
      if (label_[d] > label_[c] && stamp_[d] != epoch_) {
        stamp_[d] = epoch_;
        stack_.push_back(d);
      }
    }
    while (!stack_.empty()) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      ++work_;
      if (x == c) return false;
      const std::uint32_t xr = choice_[x];
      for (std::uint32_t k = p_.children_begin(xr); k < p_.children_end(xr); ++k) {
        const std::uint32_t y = p_.child[k];
        if (label_[y] >= label_[c] && stamp_[y] != epoch_) {
          stamp_[y] = epoch_;
          stack_.push_back(y);
        }
      }
    }
    return true;
  }

  //! The change of DAG cost if c switched to r (the map is left unchanged).
  double trial(std::uint32_t c, std::uint32_t r) {
    const double before = total_;
    const std::uint32_t old = choice_[c];
    apply(c, r);
    const double delta = total_ - before;
    apply(c, old);
    total_ = before;
    return delta;
  }

  void commit(std::uint32_t c, std::uint32_t r) {
    apply(c, r);
    relabel();
  }

  //! Switches c to r, keeping reference counts and the running total exact: newly named
  //! classes first, so that classes named by both the old and the new row never drop to zero.
  void apply(std::uint32_t c, std::uint32_t r) {
    const std::uint32_t old = choice_[c];
    choice_[c] = r;
    if (ref_[c] == 0) return;
    total_ += p_.cost[r] - p_.cost[old];
    for (std::uint32_t k = p_.children_begin(r); k < p_.children_end(r); ++k)
      increment(p_.child[k]);
    for (std::uint32_t k = p_.children_begin(old); k < p_.children_end(old); ++k)
      decrement(p_.child[k]);
  }

  void increment(std::uint32_t c) { adjust<+1>(c); }
  void decrement(std::uint32_t c) { adjust<-1>(c); }

  //! Adds `Step` (+1 or -1) to class c's reference count; a class whose count leaves or reaches
  //! zero adds or removes its chosen row's cost and passes the step on to that row's children.
  template <int Step>
  void adjust(std::uint32_t c) {
    stack_.clear();
    stack_.push_back(c);
    while (!stack_.empty()) {
      const std::uint32_t x = stack_.back();
      stack_.pop_back();
      ++work_;
      if constexpr (Step > 0) {
        if (ref_[x]++ != 0) continue;
      } else {
        if (--ref_[x] != 0) continue;
      }
      const std::uint32_t xr = choice_[x];
      total_ += Step * p_.cost[xr];
      for (std::uint32_t k = p_.children_begin(xr); k < p_.children_end(xr); ++k)
        stack_.push_back(p_.child[k]);
    }
  }

  //! A strict topological labelling of the whole choice map: label[c] > label[d] for every
  //! child class d of c's chosen row (the height of c; classes without a choice get 0).
  void relabel() {
    std::fill(label_.begin(), label_.end(), no_row);
    std::vector<std::pair<std::uint32_t, std::uint32_t>> frames;  // class, next child index
    for (std::uint32_t start = 0; start < p_.class_count; ++start) {
      if (label_[start] != no_row) continue;
      if (choice_[start] == no_row) {
        label_[start] = 0;
        continue;
      }
      frames.emplace_back(start, p_.children_begin(choice_[start]));
      label_[start] = no_row - 1;  // on the stack
      while (!frames.empty()) {
        auto& [x, next] = frames.back();
        const std::uint32_t xr = choice_[x];
        if (next < p_.children_end(xr)) {
          const std::uint32_t y = p_.child[next++];
          ++work_;
          if (label_[y] == no_row) {
            if (choice_[y] == no_row) {
              label_[y] = 0;
            } else {
              label_[y] = no_row - 1;
              frames.emplace_back(y, p_.children_begin(choice_[y]));
            }
          }
          continue;
        }
        std::uint32_t height = 0;
        for (std::uint32_t k = p_.children_begin(xr); k < p_.children_end(xr); ++k)
          height = (std::max)(height, label_[p_.child[k]] + 1);
        label_[x] = height;
        frames.pop_back();
      }
    }
  }

  void reset(const std::vector<std::uint32_t>& choice) {
    choice_ = choice;
    std::fill(ref_.begin(), ref_.end(), 0u);
    total_ = 0;
    for (const std::uint32_t root : p_.roots) increment(root);
    relabel();
  }

  const dag_problem& p_;
  std::vector<std::uint32_t> choice_;
  std::vector<std::uint32_t> ref_;
  std::vector<std::uint32_t> label_;
  std::vector<std::uint32_t> stamp_;
  std::vector<std::uint32_t> stack_;
  std::uint32_t epoch_ = 0;
  double total_ = 0;
  std::uint64_t moves_ = 0;
  std::uint64_t work_ = 0;
  std::uint64_t last_pass_work_ = 0;
  std::mt19937_64 rng_;
};

//! The choice of every class reachable from the roots through `choice` (`no_row` elsewhere)
//! and its DAG cost.
inline double restrict_to_reachable(const dag_problem& p, const std::vector<std::uint32_t>& choice,
                                    std::vector<std::uint32_t>& out, std::uint32_t& rows) {
  out.assign(p.class_count, no_row);
  std::vector<std::uint32_t> stack(p.roots.begin(), p.roots.end());
  double total = 0;
  rows = 0;
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (out[c] != no_row) continue;
    out[c] = choice[c];
    total += p.cost[choice[c]];
    ++rows;
    for (std::uint32_t k = p.children_begin(choice[c]); k < p.children_end(choice[c]); ++k)
      stack.push_back(p.child[k]);
  }
  return total;
}

//! Whether the choices reachable from `starts` (class indices) through `choice` form no cycle;
//! with `complete`, also whether every class reached (a start included) has a choice. Without
//! it, classes without a choice end a path (as starts, they are passed over).
template <class Starts>
bool choices_acyclic(const dag_problem& p, const std::vector<std::uint32_t>& choice,
                     const Starts& starts, bool complete) {
  std::vector<char> state(p.class_count, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<std::uint32_t, std::uint32_t>> frames;
  for (const std::uint32_t start : starts) {
    if (state[start] != 0) continue;
    if (choice[start] == no_row) {
      if (complete) return false;
      continue;
    }
    state[start] = 1;
    frames.emplace_back(start, p.children_begin(choice[start]));
    while (!frames.empty()) {
      auto& [c, next] = frames.back();
      if (next == p.children_end(choice[c])) {
        state[c] = 2;
        frames.pop_back();
        continue;
      }
      const std::uint32_t d = p.child[next++];
      if (state[d] == 1 || (complete && choice[d] == no_row)) return false;
      if (state[d] == 0 && choice[d] != no_row) {
        state[d] = 1;
        frames.emplace_back(d, p.children_begin(choice[d]));
      }
    }
  }
  return true;
}

//! The choice map of `extract_reference` (the tree method's selection) over the problem's
//! classes, or empty when it has a cycle (zero-cost ties) or misses a class the tree start has.
inline std::vector<std::uint32_t> reference_start(const dag_problem& p,
                                                  const extraction_result& reference,
                                                  const std::vector<std::uint32_t>& tree) {
  if (reference.choice.size() != p.class_count) return {};
  for (std::uint32_t c = 0; c < p.class_count; ++c)
    if ((reference.choice[c] == no_row) != (tree[c] == no_row)) return {};
  if (!choices_acyclic(p, reference.choice, std::views::iota(0u, p.class_count), false)) return {};
  return reference.choice;
}

//! The heuristic on a built problem. `reference` (optional) is `extract_reference`'s result on
//! the same rows: its selection is one more start, so the result never costs more than the
//! tree method's selection. Errors: a root with no acyclic choice.
inline expected<dag_extraction_result> extract_dag(const dag_problem& p, const dag_options& options,
                                                   const char* who,
                                                   const extraction_result* reference = nullptr) {
  std::vector<std::uint32_t> tree;
  std::vector<std::uint32_t> greedy;
  std::vector<std::uint32_t> by_reference;
  try {
    tree = tree_start(p);
    for (const std::uint32_t root : p.roots)
      if (tree[root] == no_row)
        return fail(error(errc::invalid_argument,
                          "DAG extraction: a needed e-class has no acyclic choice (every e-node "
                          "of it needs the class itself again below it)")
                        .with("eclass", p.ids[root])
                        .about(who)
                        .fix("add an e-node to that class whose children do not lead back to it, "
                             "or do not make it a root"));
    greedy = greedy_dag_start(p, std::size_t{1} << 26);
    if (reference != nullptr) by_reference = reference_start(p, *reference, tree);
  } catch (const std::bad_alloc&) {
    return fail(dag_out_of_memory("DAG extraction: starting selections", p.row_count, who));
  }
  if (greedy.empty()) greedy = tree;
  if (by_reference.empty()) by_reference = tree;

  const std::uint32_t searches = (std::max)(options.searches, 1u);
  std::vector<std::vector<std::uint32_t>> found(searches);
  std::vector<double> found_cost(searches, std::numeric_limits<double>::infinity());
  std::vector<std::uint64_t> found_moves(searches, 0);
  std::vector<char> failed(searches, 0);
  auto run = [&](std::uint32_t i) {
    try {
      dag_search search(p,
                        i % 3 == 0   ? greedy
                        : i % 3 == 1 ? by_reference
                                     : tree,
                        options.seed + i);
      search.descend();
      if (options.kick_budget > 0)
        search.kick_and_descend(options.kick_budget, options.kick_patience);
      found_cost[i] = search.exact_cost();
      found[i] = search.choice();
      found_moves[i] = search.moves();
    } catch (const std::bad_alloc&) {
      failed[i] = 1;
    }
  };
  std::uint32_t threads =
      options.threads != 0 ? options.threads : std::thread::hardware_concurrency();
  threads = (std::min)((std::max)(threads, 1u), searches);
  if (threads == 1) {
    for (std::uint32_t i = 0; i < searches; ++i) run(i);
  } else {
    std::vector<std::thread> workers;
    try {
      for (std::uint32_t t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
          for (std::uint32_t i = t; i < searches; i += threads) run(i);
        });
    } catch (const std::exception&) {
      for (auto& w : workers) w.join();
      return fail(error(errc::invalid_state, "DAG extraction: could not start worker threads")
                      .with("threads", threads)
                      .about(who)
                      .fix("pass dag_options::threads = 1"));
    }
    for (auto& w : workers) w.join();
  }
  std::uint32_t winner = no_row;
  for (std::uint32_t i = 0; i < searches; ++i) {
    if (failed[i] != 0)
      return fail(error(errc::out_of_memory, "DAG extraction: a search ran out of memory")
                      .with("search", i)
                      .about(who)
                      .fix("free host memory"));
    if (winner == no_row || found_cost[i] < found_cost[winner]) winner = i;
  }

  dag_extraction_result result;
  try {
    result.eclass_ids = p.ids;
    std::vector<std::uint32_t> scratch;
    std::uint32_t rows = 0;
    result.tree_selection_dag_cost = restrict_to_reachable(p, by_reference, scratch, rows);
    result.dag_cost = restrict_to_reachable(p, found[winner], result.choice, result.selected_rows);
  } catch (const std::bad_alloc&) {
    return fail(
        error(errc::out_of_memory, "DAG extraction: result").about(who).fix("free host memory"));
  }
  result.moves = found_moves[winner];
  return result;
}

}  // namespace detail

namespace detail {

//! What both extraction modes start from: the DAG problem of `view` and its tree-cost
//! selection (a search start, and the ILP's first bound); `who` names the caller in errors.
struct dag_input {
  dag_problem problem;
  extraction_result tree;
};

inline expected<dag_input> dag_input_of(const host_rows& view,
                                        cuda::std::span<const double> node_cost,
                                        cuda::std::span<const std::uint32_t> roots,
                                        const char* who) {
  VYRE_TRY_ASSIGN(const dense_classes dense, densify(view));
  dag_input input;
  VYRE_TRY_ASSIGN(input.problem, make_dag_problem(view, dense, node_cost, roots, who));
  VYRE_TRY_ASSIGN(input.tree, extract(view, dense, node_cost, roots));
  return input;
}

//! `dag_input_of` over raw rows (children offsets are the prefix sums of the lengths).
inline expected<dag_input> dag_input_of(const raw_rows_ref& rows,
                                        cuda::std::span<const double> node_cost,
                                        cuda::std::span<const std::uint32_t> roots,
                                        const char* who) {
  std::vector<std::uint32_t> offsets;
  VYRE_TRY_ASSIGN(const host_rows view, rows_of(rows, offsets));
  return dag_input_of(view, node_cost, roots, who);
}

}  // namespace detail

//! The rows the DAG extractions take: an image's columns, or raw rows (children offsets are
//! the prefix sums of the lengths). Converts implicitly from either; a view, valid while they are.
class dag_rows {
 public:
  dag_rows(const image_columns& image) noexcept : image_(&image) {}  // NOLINT(*-explicit-*)
  dag_rows(const raw_rows_ref& rows) noexcept : rows_(&rows) {}      // NOLINT(*-explicit-*)

  //! The DAG problem of these rows and their tree-cost selection; `who` names the caller in
  //! errors.
  expected<detail::dag_input> input(cuda::std::span<const double> node_cost,
                                    cuda::std::span<const std::uint32_t> roots,
                                    const char* who) const {
    if (image_ != nullptr)
      return detail::dag_input_of(detail::rows_of(*image_), node_cost, roots, who);
    return detail::dag_input_of(*rows_, node_cost, roots, who);
  }

 private:
  const image_columns* image_ = nullptr;
  const raw_rows_ref* rows_ = nullptr;
};

namespace detail {

//! `extract` (`detail::extract_dag` or `detail::extract_dag_ilp`) on the DAG problem of `rows`,
//! with their tree-cost selection as the reference start; `who` names the caller in errors.
template <class Result, class Options>
expected<Result> extract_on_rows(dag_rows rows, cuda::std::span<const double> node_cost,
                                 cuda::std::span<const std::uint32_t> roots, const Options& options,
                                 const char* who,
                                 expected<Result> (*extract)(const dag_problem&, const Options&,
                                                             const char*,
                                                             const extraction_result*)) {
  VYRE_TRY_ASSIGN(const dag_input input, rows.input(node_cost, roots, who));
  return extract(input.problem, options, who, &input.tree);
}

}  // namespace detail

//! DAG-cost extraction (the heuristic above) of an image's columns or of raw rows.
//! @param node_cost one finite, non-negative cost per row, in row order.
//! @param roots e-class ids (each must have rows); duplicates count once.
//! @throws nothing; errors: wrong cost count, a non-finite or negative cost (naming the row and
//!         its cost), a root with no acyclic choice (naming the e-class), all
//!         `errc::invalid_argument`; an unknown root or child class (`errc::not_found`); host
//!         allocation failure (`errc::out_of_memory`).
inline expected<dag_extraction_result> extract_dag(dag_rows rows,
                                                   cuda::std::span<const double> node_cost,
                                                   cuda::std::span<const std::uint32_t> roots,
                                                   const dag_options& options = {}) {
  return detail::extract_on_rows(rows, node_cost, roots, options, "extract_dag",
                                 &detail::extract_dag);
}

}  // namespace vyre::algorithms

#include "vyre/detail/epilogue.hpp"
