// SPDX-License-Identifier: Apache-2.0
//! @file
//! The values of the relational core: sorts, the one encoding of a value as a u32, the pools
//! primitive values are interned in, the id space (one counter and one union-find over e-class
//! ids and container ids) and the container store.
//!
//! Every column of every table holds `value`s (u32). What a value means is its column's sort's
//! business, and the encoding is egglog's, so that orders that depend on it (a set's elements,
//! `set-get`, `multiset-pick`) come out as egglog's:
//!
//! | sort                         | value                                                       |
//! |------------------------------|-------------------------------------------------------------|
//! | Unit                         | 0                                                           |
//! | bool                         | 0 false, 1 true                                             |
//! | i64                          | the number itself in [0, 2^31); otherwise 2^31 + its index  |
//! |                              | among the interned i64s (first seen first)                  |
//! | f64, String, BigInt, BigRat  | the index in the sort's pool (first seen first)             |
//! | datatypes (eq sorts)         | an e-class id                                               |
//! | containers, UnstableFn       | a container id                                              |
//!
//! E-class ids and container ids come from one counter (`id_space`) and share one union-find
//! whose representative is always the smaller id. A container holding ids (directly or through
//! other containers) is re-canonicalized on rebuild; two containers whose contents become equal
//! are united like e-classes, so a table's id columns are canonicalized one way for both.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/core/union_find.hpp"
#include "vyre/detail/host_special_members.hpp"

namespace vyre::eqsat {

//! One cell of a table.
using value = std::uint32_t;

//! A value that no real value takes in an id column: "absent", "dead row".
inline constexpr value no_value = 0xffffffffu;

enum class sort_kind : std::uint8_t {
  unit,
  boolean,
  i64,
  f64,
  string,
  bigint,
  bigrat,
  eq,        //!< a datatype: values are e-class ids
  vec,       //!< params: element
  set,       //!< params: element
  map,       //!< params: key, value
  multiset,  //!< params: element
  pair,      //!< params: first, second
  fn,        //!< UnstableFn; params: inputs..., output
};

inline bool is_container(sort_kind k) noexcept {
  return k >= sort_kind::vec;
}
inline bool is_base(sort_kind k) noexcept {
  return k < sort_kind::eq;
}

//! A sort of the program. Sorts 0-6 are the base sorts, in `sort_kind` order.
struct sort_info {
  std::string name;
  sort_kind kind = sort_kind::unit;
  std::vector<std::uint32_t> params;
  //! Values are ids of the union-find: an eq sort or any container.
  bool is_id = false;
  //! Rebuild must canonicalize it: an eq sort, or a container holding such values.
  bool holds_ids = false;
  //! A relation's sort (egglog: non-unionable): `union` of its values is refused.
  bool unionable = true;
  VYRE_HOST_SPECIAL_MEMBERS(sort_info);
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(sort_info);

namespace sorts {
inline constexpr std::uint32_t unit = 0;
inline constexpr std::uint32_t boolean = 1;
inline constexpr std::uint32_t i64 = 2;
inline constexpr std::uint32_t f64 = 3;
inline constexpr std::uint32_t string = 4;
inline constexpr std::uint32_t bigint = 5;
inline constexpr std::uint32_t bigrat = 6;
inline constexpr std::uint32_t base_count = 7;
}  // namespace sorts

//! The base sorts, in `sorts::` order, with egglog's names.
inline std::vector<sort_info> base_sorts() {
  constexpr const char* names[] = {"Unit", "bool", "i64", "f64", "String", "BigInt", "BigRat"};
  std::vector<sort_info> out(sorts::base_count);
  for (std::uint32_t i = 0; i < sorts::base_count; ++i) {
    out[i].name = names[i];
    out[i].kind = static_cast<sort_kind>(i);
  }
  return out;
}

namespace detail {

//! 64-bit mix of a word sequence (for interning tables).
inline std::uint64_t mix_words(const value* words, std::size_t n, std::uint64_t seed) noexcept {
  std::uint64_t h = seed ^ (0x9E3779B97F4A7C15ull * (n + 1));
  for (std::size_t i = 0; i < n; ++i) {
    h ^= words[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  return h;
}

//! f64 identity as egglog's OrderedFloat: every NaN is one value, and -0.0 equals 0.0.
inline std::uint64_t f64_key(double d) noexcept {
  if (std::isnan(d)) return 0x7ff8000000000000ull;
  if (d == 0.0) return 0;
  return std::bit_cast<std::uint64_t>(d);
}

}  // namespace detail

//! Interned primitive values (i64 outside [0, 2^31), f64, String, BigInt, BigRat).
//! BigInt and BigRat are kept as their canonical decimal text (`-12`, `-3/4`).
class base_values {
 public:
  static constexpr value interned_i64_bit = 0x80000000u;
  VYRE_HOST_SPECIAL_MEMBERS(base_values);

  //! @returns the value, or `errc::abi_limit` past 2^31 interned i64s (or 2^32 - 1 of another
  //!          pool).
  expected<value> from_i64(std::int64_t v) {
    if (v >= 0 && v < std::int64_t{interned_i64_bit}) return static_cast<value>(v);
    auto [it, fresh] = i64_ids_.try_emplace(v, static_cast<value>(i64s_.size()));
    if (fresh) {
      if (i64s_.size() >= interned_i64_bit - 1) {
        i64_ids_.erase(it);
        return fail(pool_full("i64"));
      }
      i64s_.push_back(v);
    }
    return interned_i64_bit | it->second;
  }
  std::int64_t to_i64(value v) const noexcept {
    return (v & interned_i64_bit) == 0 ? std::int64_t{v} : i64s_[v & ~interned_i64_bit];
  }

  expected<value> from_f64(double d) {
    auto [it, fresh] = f64_ids_.try_emplace(detail::f64_key(d), static_cast<value>(f64s_.size()));
    if (fresh) {
      if (f64s_.size() >= no_value - 1) {
        f64_ids_.erase(it);
        return fail(pool_full("f64"));
      }
      f64s_.push_back(d);
    }
    return it->second;
  }
  double to_f64(value v) const noexcept { return f64s_[v]; }

  expected<value> from_string(std::string_view s) { return intern(strings_, string_ids_, s); }
  std::string_view to_string(value v) const noexcept { return strings_[v]; }

  //! `text`: canonical decimal (no leading zeros, `-` only when negative).
  expected<value> from_bigint_text(std::string_view text) {
    return intern(bigints_, bigint_ids_, text);
  }
  std::string_view bigint_text(value v) const noexcept { return bigints_[v]; }
  //! `text`: canonical `num/den` in lowest terms, den > 0.
  expected<value> from_bigrat_text(std::string_view text) {
    return intern(bigrats_, bigrat_ids_, text);
  }
  std::string_view bigrat_text(value v) const noexcept { return bigrats_[v]; }

  //! How many values each pool holds: `truncate` forgets the values interned after.
  struct pool_sizes {
    std::size_t i64s = 0, f64s = 0, strings = 0, bigints = 0, bigrats = 0;
  };
  pool_sizes sizes() const noexcept {
    return {i64s_.size(), f64s_.size(), strings_.size(), bigints_.size(), bigrats_.size()};
  }
  //! Forgets the values interned since the pools held `to` (an undone iteration's).
  void truncate(const pool_sizes& to) {
    for (std::size_t i = to.i64s; i < i64s_.size(); ++i) i64_ids_.erase(i64s_[i]);
    i64s_.resize((std::min)(to.i64s, i64s_.size()));
    for (std::size_t i = to.f64s; i < f64s_.size(); ++i) f64_ids_.erase(detail::f64_key(f64s_[i]));
    f64s_.resize((std::min)(to.f64s, f64s_.size()));
    truncate_pool(strings_, string_ids_, to.strings);
    truncate_pool(bigints_, bigint_ids_, to.bigints);
    truncate_pool(bigrats_, bigrat_ids_, to.bigrats);
  }

 private:
  static void truncate_pool(std::vector<std::string>& pool,
                            std::unordered_map<std::string, value>& ids, std::size_t to) {
    for (std::size_t i = to; i < pool.size(); ++i) ids.erase(pool[i]);
    pool.resize((std::min)(to, pool.size()));
  }
  static error pool_full(const char* which) {
    return error(errc::abi_limit, "value pool full: more distinct values than a u32 holds")
        .about(which)
        .fix("split the program; vyre interns each distinct primitive value once");
  }
  static expected<value> intern(std::vector<std::string>& pool,
                                std::unordered_map<std::string, value>& ids, std::string_view s) {
    auto it = ids.find(std::string(s));
    if (it != ids.end()) return it->second;
    if (pool.size() >= no_value - 1) return fail(pool_full("String/BigInt/BigRat"));
    const auto id = static_cast<value>(pool.size());
    pool.emplace_back(s);
    ids.emplace(pool.back(), id);
    return id;
  }

  std::vector<std::int64_t> i64s_;
  std::unordered_map<std::int64_t, value> i64_ids_;
  std::vector<double> f64s_;
  std::unordered_map<std::uint64_t, value> f64_ids_;
  std::vector<std::string> strings_;
  std::unordered_map<std::string, value> string_ids_;
  std::vector<std::string> bigints_;
  std::unordered_map<std::string, value> bigint_ids_;
  std::vector<std::string> bigrats_;
  std::unordered_map<std::string, value> bigrat_ids_;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(base_values);

//! The ids of e-classes and containers: one counter, one union-find (`host_union_find`: the
//! smaller id of a class is its representative, as egglog's), and a bit per id that says it is
//! no longer one (what the rebuild asks of every id of every row: 32 times denser than the
//! parents, so the answers stay in cache).
class id_space {
 public:
  VYRE_HOST_SPECIAL_MEMBERS(id_space);

  //! A fresh id. @returns `errc::abi_limit` once 2^32 - 1 ids exist.
  expected<value> make() {
    if (sets_.size() >= no_value)
      return fail(error(errc::abi_limit, "more e-class and container ids than a u32 holds")
                      .with("ids", sets_.size())
                      .fix("stop earlier with --node-limit, or split the program"));
    const auto id = static_cast<value>(sets_.size());
    if ((id & 63u) == 0) united_away_.push_back(0);  // first: a failing push leaves the ids whole
    sets_.add();
    return id;
  }
  //! `n` fresh ids, consecutive. @returns the first, or `errc::abi_limit` (nothing made) when
  //! they would pass 2^32 - 1 ids.
  expected<value> make_many(std::size_t n) {
    const std::size_t first = sets_.size();
    if (n > no_value - first)
      return fail(error(errc::abi_limit, "more e-class and container ids than a u32 holds")
                      .with("ids", first)
                      .with("asked", n)
                      .fix("stop earlier with --node-limit, or split the program"));
    united_away_.resize((first + n + 63) / 64, 0);  // first: a failing resize leaves them whole
    VYRE_TRY(sets_.grow(n, "eqsat: e-class and container ids"));
    return static_cast<value>(first);
  }
  std::size_t size() const noexcept { return sets_.size(); }

  //! The representative of `x`, halving the path on the way (not thread safe).
  value find(value x) noexcept { return sets_.find(x); }
  //! The representative of `x` without writing (safe beside other readers).
  value find_const(value x) const noexcept { return sets_.find_const(x); }
  bool is_root(value x) const noexcept { return ((united_away_[x >> 6] >> (x & 63u)) & 1u) == 0; }
  //! Unites the classes of `a` and `b`; the smaller representative stays. @returns whether
  //! they were apart.
  bool unite(value a, value b) noexcept {
    const value away = sets_.unite(a, b);
    if (away == sets_.none) return false;
    united_away_[away >> 6] |= std::uint64_t{1} << (away & 63u);
    ++unions_;
    return true;
  }
  //! Unions ever made (a change counter).
  std::uint64_t unions() const noexcept { return unions_; }
  //! Replaces the union-find by `parent` (every id's parent, the smaller id of a class its
  //! representative; ids past the old size are new ones) and the union counter by `unions`: how
  //! an engine that ran iterations elsewhere (the GPU engine) hands the ids back.
  void assign(std::vector<value> parent, std::uint64_t unions) {
    sets_.assign(std::move(parent));
    unions_ = unions;
    const std::vector<value>& p = sets_.parents();
    united_away_.assign((p.size() + 63) / 64, 0);
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p[i] != i) united_away_[i >> 6] |= std::uint64_t{1} << (i & 63u);
  }
  //! Roots among ids below `n`.
  std::uint64_t roots_below(std::size_t n) const noexcept {
    std::uint64_t r = 0;
    for (std::size_t i = 0; i < n && i < sets_.size(); ++i)
      r += sets_.is_root(static_cast<value>(i)) ? 1 : 0;
    return r;
  }

 private:
  host_union_find<std::vector<value>> sets_;
  std::vector<std::uint64_t> united_away_;  // bit i: id i is not a representative
  std::uint64_t unions_ = 0;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(id_space);

//! Container values: each id names (sort, contents). Contents by kind:
//! vec: elements; set: elements ascending, distinct; multiset: (element, count low, count high)
//! triples, elements ascending; map: (key, value) pairs, keys ascending; pair: (first, second);
//! fn: (target, captured args...), the target as `fn_target_primitive_bit` (primitives.hpp)
//! encodes it.
class container_store {
 public:
  VYRE_HOST_SPECIAL_MEMBERS(container_store);

  struct entry {
    std::uint32_t sort = 0;
    std::size_t offset = 0;
    std::uint32_t length = 0;
  };

  //! The id of (sort, contents), made with `ids` when new. Contents must be canonical for the
  //! sort (see the class comment).
  expected<value> intern(std::uint32_t sort, const value* contents, std::uint32_t length,
                         id_space& ids) {
    const std::uint64_t h = detail::mix_words(contents, length, sort);
    auto range = by_hash_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (same(it->second, sort, contents, length)) return it->second;
    VYRE_TRY_ASSIGN(const value id, ids.make());
    entry e{sort, arena_.size(), length};
    arena_.insert(arena_.end(), contents, contents + length);
    entries_.emplace(id, e);
    by_hash_.emplace(h, id);
    return id;
  }

  //! The entry of container `id` (which must be one).
  const entry& at(value id) const { return entries_.at(id); }
  bool contains(value id) const { return entries_.count(id) != 0; }
  const value* contents(const entry& e) const noexcept { return arena_.data() + e.offset; }
  std::size_t size() const noexcept { return entries_.size(); }

  //! Calls `f(id, entry)` for every container (unordered).
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, e] : entries_) f(id, e);
  }

  //! Replaces the contents of container `id` (rebuild: the canonical contents of a container
  //! whose elements were united); `h_old` and the new contents must be computed by the caller.
  //! @returns the id already holding the new contents (the caller unites the two), or `id`.
  value replace(value id, const value* contents, std::uint32_t length) {
    entry& e = entries_.at(id);
    erase_hash(id, e);
    const std::uint64_t h = detail::mix_words(contents, length, e.sort);
    auto range = by_hash_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second != id && same(it->second, e.sort, contents, length)) return it->second;
    e.offset = arena_.size();
    e.length = length;
    arena_.insert(arena_.end(), contents, contents + length);
    by_hash_.emplace(h, id);
    return id;
  }
  //! Forgets container `id` (rebuild: it was united into another with the same contents).
  void drop(value id) {
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    erase_hash(id, it->second);
    entries_.erase(it);
  }

 private:
  bool same(value id, std::uint32_t sort, const value* contents, std::uint32_t length) const {
    const entry& e = entries_.at(id);
    return e.sort == sort && e.length == length &&
           std::equal(contents, contents + length, arena_.data() + e.offset);
  }
  void erase_hash(value id, const entry& e) {
    const std::uint64_t h = detail::mix_words(arena_.data() + e.offset, e.length, e.sort);
    auto range = by_hash_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == id) {
        by_hash_.erase(it);
        return;
      }
  }

  std::unordered_map<value, entry> entries_;
  std::unordered_multimap<std::uint64_t, value> by_hash_;
  std::vector<value> arena_;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(container_store);

}  // namespace vyre::eqsat
