// SPDX-License-Identifier: Apache-2.0
//! @file
//! The primitives of egglog 3.0's container sorts (Vec, Set, Map, MultiSet, Pair, UnstableFn)
//! over `container_store`, and what the engine needs around them: the canonical contents of a
//! container after unions (rebuild), its printed term and a walk over its elements (extraction
//! cost).
//!
//! Contents layouts are values.hpp's (`container_store`): a set is its elements ascending and
//! distinct, a multiset (element, count low, count high) triples ascending by element, a map
//! (key, value) pairs ascending by key, a pair (first, second), an fn (target, captured...).
//! "Ascending" is raw u32 value order, egglog's (`set-get` and `multiset-pick` depend on it).
//! Elements of id sorts are stored canonical.
//!
//! Failing cases (an index out of range, a missing key, an empty multiset to pick from) fail;
//! egglog 3.0-era panics (`vec-set`/`vec-remove` out of range, `multiset-pick` of an empty
//! multiset) fail too, as post-3.0 egglog does. Misuse that is not the program's data (a value
//! that is not a container of the sort, no container store) raises an error.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

namespace detail {

//! Most words one container may hold: contents are u32-sized, and beyond this a program is
//! runaway (`vec-range` of 10^12) rather than something to allocate for.
inline constexpr std::size_t max_container_words = std::size_t{1} << 28;
//! Most nested UnstableFn applications (an fn whose target is `unstable-app` of another fn):
//! the nesting is the program's data, so it is bounded rather than trusted.
inline constexpr std::uint32_t max_fn_depth = 64;
//! Most elements a printed multiset repeats; past it the term would be gigabytes.
inline constexpr std::uint64_t max_printed_repeats = std::uint64_t{1} << 22;

inline constexpr std::uint64_t i64_max_count =
    static_cast<std::uint64_t>((std::numeric_limits<std::int64_t>::max)());

inline error no_container_store() {
  return error(errc::invalid_state, "container primitive called without a container store")
      .fix("set value_context::containers and value_context::ids");
}
inline error not_a_container(value v, std::uint32_t sort) {
  return error(errc::invalid_argument, "container primitive given a non-container of its sort")
      .with("value", v)
      .with("sort", sort);
}
inline error container_too_large(std::size_t words) {
  return error(errc::abi_limit, "container larger than vyre holds")
      .with("words", words)
      .with("max_words", max_container_words)
      .fix("build smaller containers");
}

//! Whether values of `sort` are union-find ids (so must be stored canonical).
inline bool is_id_sort(const value_context& ctx, std::uint32_t sort) noexcept {
  return ctx.sorts != nullptr && sort < ctx.sorts->size() && (*ctx.sorts)[sort].is_id;
}

//! `v` of `sort` as a container element: its canonical id for id sorts.
inline value element(const value_context& ctx, std::uint32_t sort, value v) noexcept {
  if (!is_id_sort(ctx, sort) || ctx.ids == nullptr || v >= ctx.ids->size()) return v;
  return ctx.ids->find_const(v);
}

//! Copies the contents of container `id` (of `sort`) into `out`.
inline prim_status load_container(prim_call& c, value id, std::uint32_t sort,
                                  std::vector<value>& out) {
  const container_store* store = c.ctx.containers;
  if (store == nullptr) return c.raise(no_container_store());
  value v = id;
  if (!store->contains(v) && c.ctx.ids != nullptr && v < c.ctx.ids->size())
    v = c.ctx.ids->find_const(v);
  if (!store->contains(v)) return c.raise(not_a_container(id, sort));
  const container_store::entry& e = store->at(v);
  if (e.sort != sort) return c.raise(not_a_container(id, sort));
  const value* p = store->contents(e);
  out.assign(p, p + e.length);
  return prim_status::ok;
}

//! Copies the contents of container argument `i` (of its fixed sort) into `out`.
inline prim_status load_arg(prim_call& c, std::uint32_t i, std::vector<value>& out) {
  return load_container(c, c.args[i], c.self.fixed[i], out);
}

//! Loads container argument 0 and canonicalizes argument 1 as its element (a map's key).
inline prim_status load_with_element(prim_call& c, std::vector<value>& words, value& x) {
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  x = element(c.ctx, c.self.fixed[1], c.args[1]);
  return prim_status::ok;
}

//! Interns `words` (canonical for `sort`) and makes its id the call's result.
inline prim_status make_container(prim_call& c, std::uint32_t sort,
                                  const std::vector<value>& words) {
  if (c.ctx.containers == nullptr || c.ctx.ids == nullptr) return c.raise(no_container_store());
  if (words.size() > max_container_words) return c.raise(container_too_large(words.size()));
  return c.result(c.ctx.containers->intern(sort, words.data(),
                                           static_cast<std::uint32_t>(words.size()), *c.ctx.ids));
}

inline prim_status ok_i64(prim_call& c, std::int64_t v) {
  if (c.ctx.base == nullptr)
    return c.raise(error(errc::invalid_state, "primitive called without base values")
                       .fix("set value_context::base"));
  return c.result(c.ctx.base->from_i64(v));
}
inline std::int64_t arg_i64(const prim_call& c, std::uint32_t i) noexcept {
  return c.ctx.base != nullptr ? c.ctx.base->to_i64(c.args[i]) : 0;
}
inline prim_status unit_if(prim_call& c, bool holds) noexcept {
  return holds ? c.ok(0) : prim_call::failed();
}

//! One distinct multiset element and how often it occurs.
struct ms_entry {
  value v = 0;
  std::uint64_t n = 0;
};

//! Reads (element, count low, count high) triples. @returns false on a malformed layout.
inline bool decode_multiset(const std::vector<value>& words, std::vector<ms_entry>& out) {
  out.clear();
  if (words.size() % 3 != 0) return false;
  out.reserve(words.size() / 3);
  for (std::size_t i = 0; i < words.size(); i += 3)
    out.push_back({words[i], std::uint64_t{words[i + 1]} | (std::uint64_t{words[i + 2]} << 32)});
  return true;
}

inline std::vector<value> encode_multiset(const std::vector<ms_entry>& es) {
  std::vector<value> words;
  words.reserve(es.size() * 3);
  for (const ms_entry& e : es) {
    words.push_back(e.v);
    words.push_back(static_cast<value>(e.n & 0xffffffffu));
    words.push_back(static_cast<value>(e.n >> 32));
  }
  return words;
}

//! Sorts by element, merges equal elements and drops zero counts. @returns false when a count
//! or the total passes i64's maximum (egglog: the primitive fails).
inline bool normalize_multiset(std::vector<ms_entry>& es) {
  std::stable_sort(es.begin(), es.end(),
                   [](const ms_entry& a, const ms_entry& b) { return a.v < b.v; });
  std::size_t w = 0;
  std::uint64_t total = 0;
  for (std::size_t r = 0; r < es.size(); ++r) {
    if (es[r].n == 0) continue;
    if (w != 0 && es[w - 1].v == es[r].v) {
      if (es[r].n > i64_max_count - es[w - 1].n) return false;
      es[w - 1].n += es[r].n;
    } else {
      es[w++] = es[r];
    }
    if (es[r].n > i64_max_count - total) return false;
    total += es[r].n;
  }
  es.resize(w);
  return true;
}

inline prim_status load_multiset(prim_call& c, value id, std::uint32_t sort,
                                 std::vector<ms_entry>& out) {
  std::vector<value> words;
  if (const prim_status s = load_container(c, id, sort, words); s != prim_status::ok) return s;
  if (!decode_multiset(words, out)) return c.raise(not_a_container(id, sort));
  return prim_status::ok;
}

//! Loads multiset argument `i` (of its fixed sort) into `out`.
inline prim_status load_arg(prim_call& c, std::uint32_t i, std::vector<ms_entry>& out) {
  return load_multiset(c, c.args[i], c.self.fixed[i], out);
}

//! Normalizes `es` and interns it as a multiset of `sort`; fails past i64 counts.
inline prim_status make_multiset(prim_call& c, std::uint32_t sort, std::vector<ms_entry>& es) {
  if (!normalize_multiset(es)) return prim_call::failed();
  return make_container(c, sort, encode_multiset(es));
}

//! Index of `v` among a multiset's entries, or `es.size()`.
inline std::size_t ms_find(const std::vector<ms_entry>& es, value v) {
  auto it =
      std::lower_bound(es.begin(), es.end(), v, [](const ms_entry& e, value x) { return e.v < x; });
  return it != es.end() && it->v == v ? static_cast<std::size_t>(it - es.begin()) : es.size();
}

//! Index of the first (key, value) pair of a map whose key is not below `k`.
inline std::size_t map_lower(const std::vector<value>& words, value k) {
  std::size_t lo = 0, hi = words.size() / 2;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (words[2 * mid] < k)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

//! Index of key `k` among a map's (key, value) pairs, or the number of pairs.
inline std::size_t map_find(const std::vector<value>& words, value k) {
  const std::size_t at = map_lower(words, k);
  return at < words.size() / 2 && words[2 * at] == k ? at : words.size() / 2;
}

//! Nesting depth of UnstableFn applications on this thread.
inline std::uint32_t& fn_depth() noexcept {
  thread_local std::uint32_t depth = 0;
  return depth;
}

class fn_depth_guard {
 public:
  fn_depth_guard() noexcept { ++fn_depth(); }
  ~fn_depth_guard() { --fn_depth(); }
  fn_depth_guard(const fn_depth_guard&) = delete;
  fn_depth_guard& operator=(const fn_depth_guard&) = delete;
};

//! Why an `unstable-app` of table `function` may not run where it was called.
inline error table_app_error(value function, const char* context, const char* hint) noexcept {
  return error(errc::invalid_state, context).with("function", function).fix(hint);
}

//! Applies the fn value `fn` (of `fn_sort`) to `args`: its target with the captured args
//! prepended. A primitive target is called through the catalog; a table target is looked up
//! (function, in read or full context) or looked up or inserted (constructor, in write or
//! full context), as egglog 3.0 does; elsewhere the application is an error. A missing
//! function row fails.
inline prim_status apply_fn(prim_call& c, value fn, std::uint32_t fn_sort, const value* args,
                            std::uint32_t count, value& out) {
  std::vector<value> words;
  if (const prim_status s = load_container(c, fn, fn_sort, words); s != prim_status::ok) return s;
  if (words.empty()) return c.raise(not_a_container(fn, fn_sort));
  if (fn_depth() >= max_fn_depth)
    return c.raise(error(errc::invalid_argument, "UnstableFn applications nested too deeply")
                       .with("max_depth", max_fn_depth)
                       .fix("do not wrap unstable-app in unstable-fn repeatedly"));
  const fn_depth_guard guard;
  std::vector<value> full(words.begin() + 1, words.end());
  full.insert(full.end(), args, args + count);
  if (full.size() > max_container_words) return c.raise(container_too_large(full.size()));
  const auto n = static_cast<std::uint32_t>(full.size());
  const value target = words[0];
  const prim_context at = c.ctx.context;

  if ((target & fn_target_primitive_bit) != 0) {
    const std::uint32_t id = target & ~fn_target_primitive_bit;
    if (c.ctx.catalog == nullptr || id >= c.ctx.catalog->size())
      return c.raise(error(errc::invalid_state, "unstable-app: the fn names no known primitive")
                         .with("overload", id)
                         .fix("set value_context::catalog"));
    const prim_overload& o = (*c.ctx.catalog)[id];
    if (!o.accepts_count(n))
      return c.raise(error(errc::invalid_argument,
                           "unstable-app: the primitive takes another number of arguments")
                         .about(o.name)
                         .with("arguments", n));
    if (!visible_in(o.context, at))
      return c.raise(
          error(errc::invalid_state, "unstable-app: the fn's primitive cannot run in this context")
              .about(o.name)
              .fix("apply it in a rule action or at top level"));
    error err{errc::invalid_state, "primitive failed"};
    value r = 0;
    const prim_status s = call_primitive(*c.ctx.catalog, id, c.ctx, full.data(), n, r, err);
    if (s == prim_status::error) return c.raise(err);
    if (s == prim_status::ok) out = r;
    return s;
  }

  if (c.ctx.tables == nullptr)
    return c.raise(table_app_error(target, "unstable-app of a table where no table may be read",
                                   "apply table fns in a `:naive` rule or at top level"));
  if (c.ctx.tables->is_constructor(target)) {
    if (at != prim_context::write && at != prim_context::full)
      return c.raise(table_app_error(
          target, "unstable-app of a constructor in a query or check, where no row may be made",
          "apply it in a rule action or at top level"));
    auto made = c.ctx.tables->make(target, full.data());
    if (!made) return c.raise(made.error());
    out = *made;
    return prim_status::ok;
  }
  if (at != prim_context::read && at != prim_context::full)
    return c.raise(table_app_error(
        target, "unstable-app of a function in a seminaive rule, where its rows are not tracked",
        "mark the rule :naive, or apply it in a check or at top level"));
  value r = 0;
  if (!c.ctx.tables->lookup(target, full.data(), r)) return prim_call::failed();
  out = r;
  return prim_status::ok;
}

//! The element a higher-order primitive hands F: a vec's element, a multiset entry's value.
inline const value& fn_input(const value& v) noexcept {
  return v;
}
inline const value& fn_input(const ms_entry& e) noexcept {
  return e.v;
}

//! Applies the fn argument 0 to each of `elements` in order and hands `step` the element,
//! whether F succeeded and its result. Stops at F's error or at a step that is not ok.
template <class Element, class Step>
prim_status apply_to_each(prim_call& c, const std::vector<Element>& elements, Step step) {
  for (const Element& x : elements) {
    value r = 0;
    const prim_status s = apply_fn(c, c.args[0], c.self.fixed[0], &fn_input(x), 1, r);
    if (s == prim_status::error) return s;
    if (const prim_status t = step(x, s == prim_status::ok, r); t != prim_status::ok) return t;
  }
  return prim_status::ok;
}

//! The element sort of the call's result sort (`unstable-vec-map`, `unstable-multiset-map`),
//! or 0 when the sort has none.
inline std::uint32_t result_element_sort(const prim_call& c) noexcept {
  const std::vector<sort_info>* sorts = c.ctx.sorts;
  const std::uint32_t result = c.self.result;
  return sorts != nullptr && result < sorts->size() && !(*sorts)[result].params.empty()
             ? (*sorts)[result].params[0]
             : 0;
}

// ---- Vec ------------------------------------------------------------------------------------

//! `vec-empty`, `set-empty`, `map-empty`: the empty contents.
inline prim_status vec_empty(prim_call& c) {
  return make_container(c, c.self.result, {});
}

//! The call's arguments as elements of its repeated sort (`vec-of`, `set-of`, `multiset-of`).
inline std::vector<value> element_args(const prim_call& c) {
  const std::uint32_t elem = c.self.repeated.empty() ? 0 : c.self.repeated[0];
  std::vector<value> words(c.args, c.args + c.count);
  for (value& w : words) w = element(c.ctx, elem, w);
  return words;
}

inline prim_status vec_of(prim_call& c) {
  return make_container(c, c.self.result, element_args(c));
}

inline prim_status vec_append(prim_call& c) {
  std::vector<value> words, part;
  for (std::uint32_t i = 0; i < c.count; ++i) {
    if (const prim_status s = load_container(c, c.args[i], c.self.result, part);
        s != prim_status::ok)
      return s;
    if (part.size() > max_container_words - words.size())
      return c.raise(container_too_large(words.size() + part.size()));
    words.insert(words.end(), part.begin(), part.end());
  }
  return make_container(c, c.self.result, words);
}

inline prim_status vec_push(prim_call& c) {
  std::vector<value> words;
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  words.push_back(element(c.ctx, c.self.fixed[1], c.args[1]));
  return make_container(c, c.self.result, words);
}

inline prim_status vec_pop(prim_call& c) {
  std::vector<value> words;
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  if (!words.empty()) words.pop_back();
  return make_container(c, c.self.result, words);
}

//! `vec-length` and `set-length`: the number of elements.
inline prim_status vec_length(prim_call& c) {
  std::vector<value> words;
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  return ok_i64(c, static_cast<std::int64_t>(words.size()));
}

//! `i` as an index into `size` elements; false when out of range (negative included).
inline bool index_in(std::int64_t i, std::size_t size, std::size_t& at) noexcept {
  if (i < 0 || static_cast<std::uint64_t>(i) >= size) return false;
  at = static_cast<std::size_t>(i);
  return true;
}

//! Loads container argument 0 and resolves argument 1 as an index into it; fails when the
//! index is out of range.
inline prim_status load_at_index(prim_call& c, std::vector<value>& words, std::size_t& at) {
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  return index_in(arg_i64(c, 1), words.size(), at) ? prim_status::ok : prim_call::failed();
}

inline prim_status vec_get(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_at_index(c, words, at); s != prim_status::ok) return s;
  return c.ok(words[at]);
}

inline prim_status vec_set(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_at_index(c, words, at); s != prim_status::ok) return s;
  words[at] = element(c.ctx, c.self.fixed[2], c.args[2]);
  return make_container(c, c.self.result, words);
}

inline prim_status vec_remove(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_at_index(c, words, at); s != prim_status::ok) return s;
  words.erase(words.begin() + static_cast<std::ptrdiff_t>(at));
  return make_container(c, c.self.result, words);
}

//! `vec-contains` (param 0) / `vec-not-contains` (param 1).
inline prim_status vec_contains(prim_call& c) {
  std::vector<value> words;
  value x = 0;
  if (const prim_status s = load_with_element(c, words, x); s != prim_status::ok) return s;
  const bool found = std::find(words.begin(), words.end(), x) != words.end();
  return unit_if(c, found == (c.self.param == 0));
}

inline prim_status vec_range(prim_call& c) {
  const std::int64_t n = arg_i64(c, 0);
  std::vector<value> words;
  if (n > 0) {
    if (static_cast<std::uint64_t>(n) > max_container_words)
      return c.raise(container_too_large(static_cast<std::size_t>(n)));
    words.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      auto v = c.ctx.base->from_i64(i);
      if (!v) return c.raise(v.error());
      words.push_back(*v);
    }
  }
  return make_container(c, c.self.result, words);
}

//! Unites the elements of two equally long vecs pairwise; @returns the first (egglog).
inline prim_status vec_union(prim_call& c) {
  std::vector<value> a, b;
  if (const prim_status s = load_arg(c, 0, a); s != prim_status::ok) return s;
  if (const prim_status s = load_arg(c, 1, b); s != prim_status::ok) return s;
  if (a.size() != b.size()) return prim_call::failed();
  if (c.ctx.tables == nullptr)
    return c.raise(error(errc::invalid_state, "vec-union called where nothing may be united")
                       .fix("call it in a rule action, a :merge or at top level"));
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) continue;
    if (auto r = c.ctx.tables->unite(a[i], b[i]); !r) return c.raise(r.error());
  }
  return c.ok(c.args[0]);
}

//! `unstable-vec-map F V1 -> V2`: applies F to every element in order, dropping failures.
inline prim_status vec_map(prim_call& c) {
  std::vector<value> in, out;
  if (const prim_status s = load_arg(c, 1, in); s != prim_status::ok) return s;
  const std::uint32_t out_elem = result_element_sort(c);
  out.reserve(in.size());
  const prim_status s = apply_to_each(c, in, [&](value, bool applied, value r) {
    if (applied) out.push_back(element(c.ctx, out_elem, r));
    return prim_status::ok;
  });
  if (s != prim_status::ok) return s;
  return make_container(c, c.self.result, out);
}

// ---- Set ------------------------------------------------------------------------------------

//! Sorts and dedupes `words` (a set's canonical layout).
inline void set_normalize(std::vector<value>& words) {
  std::sort(words.begin(), words.end());
  words.erase(std::unique(words.begin(), words.end()), words.end());
}

inline prim_status set_of(prim_call& c) {
  std::vector<value> words = element_args(c);
  set_normalize(words);
  return make_container(c, c.self.result, words);
}

//! `set-insert` (param 0) / `set-remove` (param 1).
inline prim_status set_edit(prim_call& c) {
  std::vector<value> words;
  value x = 0;
  if (const prim_status s = load_with_element(c, words, x); s != prim_status::ok) return s;
  auto it = std::lower_bound(words.begin(), words.end(), x);
  const bool present = it != words.end() && *it == x;
  if (c.self.param == 0 && !present) words.insert(it, x);
  if (c.self.param == 1 && present) words.erase(it);
  return make_container(c, c.self.result, words);
}

//! `set-union` (param 0), `set-diff` (1), `set-intersect` (2).
inline prim_status set_binary(prim_call& c) {
  std::vector<value> a, b, out;
  if (const prim_status s = load_arg(c, 0, a); s != prim_status::ok) return s;
  if (const prim_status s = load_arg(c, 1, b); s != prim_status::ok) return s;
  if (c.self.param == 0)
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  else if (c.self.param == 1)
    std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  else
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return make_container(c, c.self.result, out);
}

//! `set-contains` (param 0) / `set-not-contains` (param 1).
inline prim_status set_contains(prim_call& c) {
  std::vector<value> words;
  value x = 0;
  if (const prim_status s = load_with_element(c, words, x); s != prim_status::ok) return s;
  const bool found = std::binary_search(words.begin(), words.end(), x);
  return unit_if(c, found == (c.self.param == 0));
}

//! `set-get S i`: the i-th element in value order.
inline prim_status set_get(prim_call& c) {
  return vec_get(c);
}

// ---- Map ------------------------------------------------------------------------------------

//! Builds a map's layout from (key, value) pairs in argument order: a later duplicate key wins.
inline std::vector<value> map_from_pairs(std::vector<std::pair<value, value>>& kv) {
  std::stable_sort(kv.begin(), kv.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<value> words;
  words.reserve(kv.size() * 2);
  for (std::size_t i = 0; i < kv.size(); ++i) {
    if (i + 1 < kv.size() && kv[i + 1].first == kv[i].first) continue;  // a later one wins
    words.push_back(kv[i].first);
    words.push_back(kv[i].second);
  }
  return words;
}

inline prim_status map_of(prim_call& c) {
  if (c.self.repeated.size() != 2 || c.count % 2 != 0)
    return c.raise(error(errc::invalid_argument, "map-of takes keys and values in pairs")
                       .with("arguments", c.count));
  std::vector<std::pair<value, value>> kv;
  kv.reserve(c.count / 2);
  for (std::uint32_t i = 0; i + 1 < c.count; i += 2)
    kv.emplace_back(element(c.ctx, c.self.repeated[0], c.args[i]),
                    element(c.ctx, c.self.repeated[1], c.args[i + 1]));
  return make_container(c, c.self.result, map_from_pairs(kv));
}

inline prim_status map_insert(prim_call& c) {
  std::vector<value> words;
  value k = 0;
  if (const prim_status s = load_with_element(c, words, k); s != prim_status::ok) return s;
  const value v = element(c.ctx, c.self.fixed[2], c.args[2]);
  const std::size_t at = map_lower(words, k);
  if (at < words.size() / 2 && words[2 * at] == k)
    words[2 * at + 1] = v;
  else
    words.insert(words.begin() + static_cast<std::ptrdiff_t>(2 * at), {k, v});
  return make_container(c, c.self.result, words);
}

//! Loads map argument 0 and finds key argument 1 in it: `at` is the key's pair index, or the
//! number of pairs when the map lacks it.
inline prim_status load_map_key(prim_call& c, std::vector<value>& words, std::size_t& at) {
  value k = 0;
  if (const prim_status s = load_with_element(c, words, k); s != prim_status::ok) return s;
  at = map_find(words, k);
  return prim_status::ok;
}

inline prim_status map_get(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_map_key(c, words, at); s != prim_status::ok) return s;
  if (at >= words.size() / 2) return prim_call::failed();
  return c.ok(words[2 * at + 1]);
}

inline prim_status map_remove(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_map_key(c, words, at); s != prim_status::ok) return s;
  if (at < words.size() / 2)
    words.erase(words.begin() + static_cast<std::ptrdiff_t>(2 * at),
                words.begin() + static_cast<std::ptrdiff_t>(2 * at + 2));
  return make_container(c, c.self.result, words);
}

inline prim_status map_length(prim_call& c) {
  std::vector<value> words;
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  return ok_i64(c, static_cast<std::int64_t>(words.size() / 2));
}

//! `map-contains` (param 0) / `map-not-contains` (param 1).
inline prim_status map_contains(prim_call& c) {
  std::vector<value> words;
  std::size_t at = 0;
  if (const prim_status s = load_map_key(c, words, at); s != prim_status::ok) return s;
  return unit_if(c, (at < words.size() / 2) == (c.self.param == 0));
}

// ---- MultiSet -------------------------------------------------------------------------------

inline prim_status ms_of(prim_call& c) {
  std::vector<ms_entry> es;
  es.reserve(c.count);
  for (const value v : element_args(c)) es.push_back({v, 1});
  return make_multiset(c, c.self.result, es);
}

//! `multiset-single E n`: n copies; n < 0 fails, n = 0 is empty.
inline prim_status ms_single(prim_call& c) {
  const std::int64_t n = arg_i64(c, 1);
  if (n < 0) return prim_call::failed();
  std::vector<ms_entry> es;
  if (n > 0)
    es.push_back({element(c.ctx, c.self.fixed[0], c.args[0]), static_cast<std::uint64_t>(n)});
  return make_multiset(c, c.self.result, es);
}

//! `multiset-insert MS E` (param 0), `multiset-remove MS E` (1), `multiset-remove-swapped E MS`
//! (2), `multiset-reset-counts MS` (3). Removing an absent element fails.
inline prim_status ms_edit(prim_call& c) {
  const bool swapped = c.self.param == 2;
  const std::uint32_t ms_arg = swapped ? 1 : 0;
  std::vector<ms_entry> es;
  if (const prim_status s = load_arg(c, ms_arg, es); s != prim_status::ok) return s;
  if (c.self.param == 3) {
    for (ms_entry& e : es) e.n = 1;
    return make_multiset(c, c.self.result, es);
  }
  const std::uint32_t x_arg = swapped ? 0 : 1;
  const value x = element(c.ctx, c.self.fixed[x_arg], c.args[x_arg]);
  const std::size_t at = ms_find(es, x);
  if (c.self.param == 0) {
    if (at < es.size())
      ++es[at].n;  // normalize_multiset fails past i64
    else
      es.push_back({x, 1});
  } else {
    if (at >= es.size()) return prim_call::failed();
    --es[at].n;
  }
  return make_multiset(c, c.self.result, es);
}

//! `multiset-subtract A B` (param 0: A - B), `multiset-subtract-swapped B A` (1: A - B),
//! `multiset-intersection` (2: min counts), `multiset-sum` (3: added counts). Subtracting
//! what is not there (absent, or a larger count) fails.
inline prim_status ms_binary(prim_call& c) {
  std::vector<ms_entry> a, b;
  if (const prim_status s = load_arg(c, 0, a); s != prim_status::ok) return s;
  if (const prim_status s = load_arg(c, 1, b); s != prim_status::ok) return s;
  if (c.self.param == 1) std::swap(a, b);
  std::vector<ms_entry> out;
  if (c.self.param <= 1) {
    out = a;
    for (const ms_entry& e : b) {
      const std::size_t at = ms_find(out, e.v);
      if (at >= out.size() || out[at].n < e.n) return prim_call::failed();
      out[at].n -= e.n;
    }
  } else if (c.self.param == 2) {
    for (const ms_entry& e : a) {
      const std::size_t at = ms_find(b, e.v);
      if (at < b.size()) out.push_back({e.v, (std::min)(e.n, b[at].n)});
    }
  } else {
    out = a;
    out.insert(out.end(), b.begin(), b.end());
  }
  return make_multiset(c, c.self.result, out);
}

//! The total of a multiset's counts; false past i64 (cannot happen for interned multisets).
inline bool ms_total(const std::vector<ms_entry>& es, std::uint64_t& total) noexcept {
  total = 0;
  for (const ms_entry& e : es) {
    if (e.n > i64_max_count - total) return false;
    total += e.n;
  }
  return true;
}

//! `multiset-length` (param 0), `multiset-count MS E` (1), `multiset-contains MS E` (2),
//! `multiset-not-contains MS E` (3), `multiset-contains-swapped E MS` (4),
//! `multiset-not-contains-swapped E MS` (5), `multiset-pick` (6: smallest element),
//! `multiset-pick-max` (7: the largest count; of equal counts the largest element).
inline prim_status ms_read(prim_call& c) {
  const std::uint32_t op = c.self.param;
  const std::uint32_t ms_arg = op == 4 || op == 5 ? 1 : 0;
  std::vector<ms_entry> es;
  if (const prim_status s = load_arg(c, ms_arg, es); s != prim_status::ok) return s;
  if (op == 0) {
    std::uint64_t total = 0;
    if (!ms_total(es, total)) return prim_call::failed();
    return ok_i64(c, static_cast<std::int64_t>(total));
  }
  if (op == 6) return es.empty() ? prim_call::failed() : c.ok(es.front().v);
  if (op == 7) {
    if (es.empty()) return prim_call::failed();
    std::size_t best = 0;
    for (std::size_t i = 1; i < es.size(); ++i)
      if (es[i].n >= es[best].n) best = i;  // Rust max_by_key keeps the last maximum
    return c.ok(es[best].v);
  }
  const std::uint32_t x_arg = ms_arg == 0 ? 1 : 0;
  const std::size_t at = ms_find(es, element(c.ctx, c.self.fixed[x_arg], c.args[x_arg]));
  const std::uint64_t n = at < es.size() ? es[at].n : 0;
  if (op == 1) {
    if (n > i64_max_count) return prim_call::failed();
    return ok_i64(c, static_cast<std::int64_t>(n));
  }
  const bool want_present = op == 2 || op == 4;
  return unit_if(c, (n != 0) == want_present);
}

//! Multiplies two counts; false past i64.
inline bool count_mul(std::uint64_t a, std::uint64_t b, std::uint64_t& out) noexcept {
  if (a != 0 && b > i64_max_count / a) return false;
  out = a * b;
  return true;
}

//! `inner`'s entries with their counts times `times` appended to `out`, which is normalized;
//! false when a count overflows.
inline bool append_scaled(std::vector<ms_entry>& out, const std::vector<ms_entry>& inner,
                          std::uint64_t times) {
  for (const ms_entry& x : inner) {
    std::uint64_t n = 0;
    if (!count_mul(times, x.n, n)) return false;
    out.push_back({x.v, n});
  }
  return normalize_multiset(out);
}

//! `multiset-sum-multisets OUTER -> INNER`: the inner multisets summed, each as often as the
//! outer one holds it.
inline prim_status ms_sum_multisets(prim_call& c) {
  std::vector<ms_entry> outer, inner, out;
  if (const prim_status s = load_arg(c, 0, outer); s != prim_status::ok) return s;
  for (const ms_entry& o : outer) {
    if (const prim_status s = load_multiset(c, o.v, c.self.result, inner); s != prim_status::ok)
      return s;
    if (!append_scaled(out, inner, o.n)) return prim_call::failed();
  }
  return make_multiset(c, c.self.result, out);
}

//! `multiset-union-values MS -> E`: unites every distinct element with the smallest one and
//! returns it; an empty multiset fails.
inline prim_status ms_union_values(prim_call& c) {
  std::vector<ms_entry> es;
  if (const prim_status s = load_arg(c, 0, es); s != prim_status::ok) return s;
  if (es.empty()) return prim_call::failed();
  if (c.ctx.tables == nullptr)
    return c.raise(
        error(errc::invalid_state, "multiset-union-values called where nothing may be united")
            .fix("call it in a rule action, a :merge or at top level"));
  for (std::size_t i = 1; i < es.size(); ++i)
    if (auto r = c.ctx.tables->unite(es[0].v, es[i].v); !r) return c.raise(r.error());
  return c.ok(es[0].v);
}

//! `unstable-multiset-map F MS1 -> MS2`: F of every distinct element, counts kept, failures
//! dropped.
inline prim_status ms_map(prim_call& c) {
  std::vector<ms_entry> es, out;
  if (const prim_status s = load_arg(c, 1, es); s != prim_status::ok) return s;
  const std::uint32_t out_elem = result_element_sort(c);
  const prim_status s = apply_to_each(c, es, [&](const ms_entry& e, bool applied, value r) {
    if (applied) out.push_back({element(c.ctx, out_elem, r), e.n});
    return prim_status::ok;
  });
  if (s != prim_status::ok) return s;
  return make_multiset(c, c.self.result, out);
}

//! `unstable-multiset-filter F MS` (param 0: keep where F succeeds) and `-filter-not`
//! (param 1: keep where F fails).
inline prim_status ms_filter(prim_call& c) {
  std::vector<ms_entry> es, out;
  if (const prim_status s = load_arg(c, 1, es); s != prim_status::ok) return s;
  const prim_status s = apply_to_each(c, es, [&](const ms_entry& e, bool applied, value) {
    if (applied == (c.self.param == 0)) out.push_back(e);
    return prim_status::ok;
  });
  if (s != prim_status::ok) return s;
  return make_multiset(c, c.self.result, out);
}

//! `unstable-multiset-flat-map F MS`: the multisets F gives, counts multiplied; elements F
//! fails on are kept as they are.
inline prim_status ms_flat_map(prim_call& c) {
  std::vector<ms_entry> es, inner, out;
  if (const prim_status s = load_arg(c, 1, es); s != prim_status::ok) return s;
  const prim_status s = apply_to_each(c, es, [&](const ms_entry& e, bool applied, value r) {
    if (!applied) {
      inner.assign(1, {e.v, 1});  // kept as it is
    } else if (const prim_status t = load_multiset(c, r, c.self.result, inner);
               t != prim_status::ok) {
      return t;
    }
    return append_scaled(out, inner, e.n) ? prim_status::ok : prim_call::failed();
  });
  if (s != prim_status::ok) return s;
  return make_multiset(c, c.self.result, out);
}

//! `unstable-multiset-reduce F init MS`: a left fold of F over the elements in value order
//! with repeats, seeded with the first; `init` only for an empty multiset. A failing step
//! fails.
inline prim_status ms_reduce(prim_call& c) {
  std::vector<ms_entry> es;
  if (const prim_status s = load_arg(c, 2, es); s != prim_status::ok) return s;
  std::uint64_t total = 0;
  if (!ms_total(es, total) || total > max_container_words)
    return c.raise(error(errc::abi_limit, "unstable-multiset-reduce over too many elements")
                       .with("elements", total)
                       .with("max_elements", max_container_words));
  value acc = c.args[1];
  bool seeded = false;
  for (const ms_entry& e : es) {
    for (std::uint64_t k = 0; k < e.n; ++k) {
      if (!seeded) {
        acc = e.v;
        seeded = true;
        continue;
      }
      const value pair[2] = {acc, e.v};
      value r = 0;
      const prim_status s = apply_fn(c, c.args[0], c.self.fixed[0], pair, 2, r);
      if (s != prim_status::ok) return s;
      acc = element(c.ctx, c.self.fixed[1], r);
    }
  }
  return c.ok(acc);
}

//! The table an index fn names (fill-index / clear-index): false for a primitive target or
//! captured args (egglog ignores those; a key without them would not fit the table).
inline prim_status index_table(prim_call& c, value fn, std::uint32_t fn_sort,
                               std::uint32_t& function) {
  std::vector<value> words;
  if (const prim_status s = load_container(c, fn, fn_sort, words); s != prim_status::ok) return s;
  if (words.size() != 1 || (words[0] & fn_target_primitive_bit) != 0) return prim_call::failed();
  if (c.ctx.tables == nullptr)
    return c.raise(error(errc::invalid_state,
                         "multiset index primitive called where no table "
                         "may be written")
                       .fix("call it in a :naive rule's actions or at top level"));
  function = words[0];
  return prim_status::ok;
}

//! `unstable-multiset-fill-index MS F` (param 0): F(ms, e) := count of e, for each distinct e,
//! stopping at the first row that already exists (egglog: the index is filled in one pass).
//! `unstable-multiset-clear-index MS F` (param 1): deletes F(ms, e) for each distinct e.
inline prim_status ms_index(prim_call& c) {
  std::vector<ms_entry> es;
  if (const prim_status s = load_arg(c, 0, es); s != prim_status::ok) return s;
  std::uint32_t function = 0;
  if (const prim_status s = index_table(c, c.args[1], c.self.fixed[1], function);
      s != prim_status::ok)
    return s;
  const value ms = element(c.ctx, c.self.fixed[0], c.args[0]);
  for (const ms_entry& e : es) {
    const value keys[2] = {ms, e.v};
    if (c.self.param == 1) {
      if (auto r = c.ctx.tables->remove(function, keys); !r) return c.raise(r.error());
      continue;
    }
    value existing = 0;
    if (c.ctx.tables->lookup(function, keys, existing)) break;
    if (e.n > i64_max_count) return prim_call::failed();
    auto n = c.ctx.base->from_i64(static_cast<std::int64_t>(e.n));
    if (!n) return c.raise(n.error());
    if (auto r = c.ctx.tables->set(function, keys, *n); !r) return c.raise(r.error());
  }
  return c.ok(0);
}

// ---- Pair and UnstableFn ----------------------------------------------------------------------

inline prim_status pair_make(prim_call& c) {
  const std::vector<value> words{element(c.ctx, c.self.fixed[0], c.args[0]),
                                 element(c.ctx, c.self.fixed[1], c.args[1])};
  return make_container(c, c.self.result, words);
}

//! `pair-first` (param 0) / `pair-second` (param 1).
inline prim_status pair_get(prim_call& c) {
  std::vector<value> words;
  if (const prim_status s = load_arg(c, 0, words); s != prim_status::ok) return s;
  if (words.size() != 2) return c.raise(not_a_container(c.args[0], c.self.fixed[0]));
  return c.ok(words[c.self.param == 0 ? 0 : 1]);
}

//! `(unstable-fn "name" captured...)` as `make_fn_overload` resolved it: interns
//! (target, captured...) as a container of the fn sort.
inline prim_status fn_make(prim_call& c) {
  std::vector<value> words;
  words.reserve(c.count);
  words.push_back(c.self.param);
  for (std::uint32_t i = 1; i < c.count; ++i)
    words.push_back(element(c.ctx, c.self.arg_sort(i), c.args[i]));
  return make_container(c, c.self.result, words);
}

//! `unstable-app F args...`.
inline prim_status fn_app(prim_call& c) {
  if (c.count == 0) return c.raise(not_a_container(no_value, c.self.arg_sort(0)));
  value r = 0;
  const prim_status s = apply_fn(c, c.args[0], c.self.fixed[0], c.args + 1, c.count - 1, r);
  if (s == prim_status::ok) return c.ok(r);
  return s;
}

// ---- Registration -----------------------------------------------------------------------------

inline bool same_signature(const prim_overload& a, const prim_overload& b) noexcept {
  return a.name == b.name && a.fixed == b.fixed && a.repeated == b.repeated && a.result == b.result;
}

//! Adds `o` unless an overload with its name and signature exists (sorts may be registered
//! in any order, and pairings are found from both sides).
inline void add_unique(prim_catalog& catalog, prim_overload o) {
  for (const std::uint32_t id : catalog.named(o.name))
    if (same_signature(catalog[id], o)) return;
  catalog.add(std::move(o));
}

//! Registers one overload (see `prim_overload`).
inline void add_prim(prim_catalog& catalog, std::string name, std::vector<std::uint32_t> fixed,
                     std::uint32_t result, prim_eval eval, std::uint32_t param = 0,
                     prim_context context = prim_context::pure,
                     std::vector<std::uint32_t> repeated = {}) {
  prim_overload o;
  o.name = std::move(name);
  o.fixed = std::move(fixed);
  o.repeated = std::move(repeated);
  o.result = result;
  o.context = context;
  o.eval = eval;
  o.param = param;
  add_unique(catalog, std::move(o));
}

//! The element sort of a one-parameter container sort, or `no_value`.
inline std::uint32_t elem_of(const std::vector<sort_info>& sorts, std::uint32_t s) noexcept {
  return s < sorts.size() && sorts[s].params.size() == 1 ? sorts[s].params[0] : no_value;
}

//! Registers the higher-order primitives pairing fn sorts with vec and multiset sorts, for
//! every combination of sorts up to `sort` that involves `sort` (so each combination is
//! registered once, when the last of its sorts is declared).
inline void register_higher_order(prim_catalog& catalog, const std::vector<sort_info>& sorts,
                                  std::uint32_t sort) {
  std::vector<std::uint32_t> fns, vecs, multisets;
  const std::size_t last = std::min<std::size_t>(sort + std::size_t{1}, sorts.size());
  for (std::uint32_t s = 0; s < last; ++s) {
    if (sorts[s].kind == sort_kind::fn && !sorts[s].params.empty()) fns.push_back(s);
    if (sorts[s].kind == sort_kind::vec && sorts[s].params.size() == 1) vecs.push_back(s);
    if (sorts[s].kind == sort_kind::multiset && sorts[s].params.size() == 1) multisets.push_back(s);
  }
  for (const std::uint32_t f : fns) {
    const std::vector<std::uint32_t>& p = sorts[f].params;
    const std::size_t inputs = p.size() - 1;
    const std::uint32_t out = p.back();
    if (inputs == 1) {
      for (const std::uint32_t a : vecs)
        for (const std::uint32_t b : vecs)
          if ((f == sort || a == sort || b == sort) && elem_of(sorts, a) == p[0] &&
              elem_of(sorts, b) == out)
            add_prim(catalog, "unstable-vec-map", {f, a}, b, vec_map);
      for (const std::uint32_t a : multisets)
        for (const std::uint32_t b : multisets)
          if ((f == sort || a == sort || b == sort) && elem_of(sorts, a) == p[0] &&
              elem_of(sorts, b) == out)
            add_prim(catalog, "unstable-multiset-map", {f, a}, b, ms_map);
    }
    for (const std::uint32_t m : multisets) {
      if (f != sort && m != sort) continue;
      const std::uint32_t e = elem_of(sorts, m);
      if (inputs == 1 && p[0] == e && out == sorts::unit) {
        add_prim(catalog, "unstable-multiset-filter", {f, m}, m, ms_filter, 0);
        add_prim(catalog, "unstable-multiset-filter-not", {f, m}, m, ms_filter, 1);
      }
      if (inputs == 2 && p[0] == e && p[1] == e && out == e)
        add_prim(catalog, "unstable-multiset-reduce", {f, e, m}, e, ms_reduce);
      if (inputs == 2 && p[0] == m && p[1] == e && out == sorts::i64) {
        add_prim(catalog, "unstable-multiset-fill-index", {m, f}, sorts::unit, ms_index, 0,
                 prim_context::full);
        add_prim(catalog, "unstable-multiset-clear-index", {m, f}, sorts::unit, ms_index, 1,
                 prim_context::write);
      }
      if (inputs == 1 && p[0] == e && out == m)
        add_prim(catalog, "unstable-multiset-flat-map", {f, m}, m, ms_flat_map);
    }
  }
}

}  // namespace detail

//! Registers the primitives of container (or UnstableFn) sort `sort` of `sorts`, and the
//! higher-order ones pairing it with earlier-declared sorts of the other kind. Call once per
//! sort as it is declared (repeats add nothing). Does nothing for other sorts.
inline void register_container_primitives(prim_catalog& catalog,
                                          const std::vector<sort_info>& sorts, std::uint32_t sort) {
  using namespace detail;
  if (sort >= sorts.size()) return;
  const sort_info& info = sorts[sort];
  const std::vector<std::uint32_t>& p = info.params;
  const std::uint32_t s = sort;
  const auto i64 = sorts::i64;
  const auto unit = sorts::unit;
  switch (info.kind) {
    case sort_kind::vec: {
      if (p.size() != 1) return;
      const std::uint32_t e = p[0];
      add_prim(catalog, "vec-empty", {}, s, vec_empty);
      add_prim(catalog, "vec-of", {}, s, vec_of, 0, prim_context::pure, {e});
      add_prim(catalog, "vec-append", {}, s, vec_append, 0, prim_context::pure, {s});
      add_prim(catalog, "vec-push", {s, e}, s, vec_push);
      add_prim(catalog, "vec-pop", {s}, s, vec_pop);
      add_prim(catalog, "vec-length", {s}, i64, vec_length);
      add_prim(catalog, "vec-get", {s, i64}, e, vec_get);
      add_prim(catalog, "vec-set", {s, i64, e}, s, vec_set);
      add_prim(catalog, "vec-remove", {s, i64}, s, vec_remove);
      add_prim(catalog, "vec-contains", {s, e}, unit, vec_contains, 0);
      add_prim(catalog, "vec-not-contains", {s, e}, unit, vec_contains, 1);
      if (e == sorts::i64) add_prim(catalog, "vec-range", {i64}, s, vec_range);
      if (e < sorts.size() && sorts[e].kind == sort_kind::eq)
        add_prim(catalog, "vec-union", {s, s}, s, vec_union, 0, prim_context::write);
      break;
    }
    case sort_kind::set: {
      if (p.size() != 1) return;
      const std::uint32_t e = p[0];
      add_prim(catalog, "set-empty", {}, s, vec_empty);
      add_prim(catalog, "set-of", {}, s, set_of, 0, prim_context::pure, {e});
      add_prim(catalog, "set-insert", {s, e}, s, set_edit, 0);
      add_prim(catalog, "set-remove", {s, e}, s, set_edit, 1);
      add_prim(catalog, "set-union", {s, s}, s, set_binary, 0);
      add_prim(catalog, "set-diff", {s, s}, s, set_binary, 1);
      add_prim(catalog, "set-intersect", {s, s}, s, set_binary, 2);
      add_prim(catalog, "set-length", {s}, i64, vec_length);
      add_prim(catalog, "set-contains", {s, e}, unit, set_contains, 0);
      add_prim(catalog, "set-not-contains", {s, e}, unit, set_contains, 1);
      add_prim(catalog, "set-get", {s, i64}, e, set_get);
      break;
    }
    case sort_kind::map: {
      if (p.size() != 2) return;
      const std::uint32_t k = p[0], v = p[1];
      add_prim(catalog, "map-empty", {}, s, vec_empty);
      add_prim(catalog, "map-of", {}, s, map_of, 0, prim_context::pure, {k, v});
      add_prim(catalog, "map-insert", {s, k, v}, s, map_insert);
      add_prim(catalog, "map-get", {s, k}, v, map_get);
      add_prim(catalog, "map-remove", {s, k}, s, map_remove);
      add_prim(catalog, "map-length", {s}, i64, map_length);
      add_prim(catalog, "map-contains", {s, k}, unit, map_contains, 0);
      add_prim(catalog, "map-not-contains", {s, k}, unit, map_contains, 1);
      break;
    }
    case sort_kind::multiset: {
      if (p.size() != 1) return;
      const std::uint32_t e = p[0];
      add_prim(catalog, "multiset-of", {}, s, ms_of, 0, prim_context::pure, {e});
      add_prim(catalog, "multiset-single", {e, i64}, s, ms_single);
      add_prim(catalog, "multiset-insert", {s, e}, s, ms_edit, 0);
      add_prim(catalog, "multiset-remove", {s, e}, s, ms_edit, 1);
      add_prim(catalog, "multiset-remove-swapped", {e, s}, s, ms_edit, 2);
      add_prim(catalog, "multiset-reset-counts", {s}, s, ms_edit, 3);
      add_prim(catalog, "multiset-subtract", {s, s}, s, ms_binary, 0);
      add_prim(catalog, "multiset-subtract-swapped", {s, s}, s, ms_binary, 1);
      add_prim(catalog, "multiset-intersection", {s, s}, s, ms_binary, 2);
      add_prim(catalog, "multiset-sum", {s, s}, s, ms_binary, 3);
      add_prim(catalog, "multiset-length", {s}, i64, ms_read, 0);
      add_prim(catalog, "multiset-count", {s, e}, i64, ms_read, 1);
      add_prim(catalog, "multiset-contains", {s, e}, unit, ms_read, 2);
      add_prim(catalog, "multiset-not-contains", {s, e}, unit, ms_read, 3);
      add_prim(catalog, "multiset-contains-swapped", {e, s}, unit, ms_read, 4);
      add_prim(catalog, "multiset-not-contains-swapped", {e, s}, unit, ms_read, 5);
      add_prim(catalog, "multiset-pick", {s}, e, ms_read, 6);
      add_prim(catalog, "multiset-pick-max", {s}, e, ms_read, 7);
      if (elem_of(sorts, e) != no_value && sorts[e].kind == sort_kind::multiset)
        add_prim(catalog, "multiset-sum-multisets", {s}, e, ms_sum_multisets);
      if (e < sorts.size() && sorts[e].kind == sort_kind::eq)
        add_prim(catalog, "multiset-union-values", {s}, e, ms_union_values, 0, prim_context::write);
      break;
    }
    case sort_kind::pair: {
      if (p.size() != 2) return;
      add_prim(catalog, "pair", {p[0], p[1]}, s, pair_make);
      add_prim(catalog, "pair-first", {s}, p[0], pair_get, 0);
      add_prim(catalog, "pair-second", {s}, p[1], pair_get, 1);
      break;
    }
    case sort_kind::fn: {
      if (p.empty()) return;
      std::vector<std::uint32_t> fixed{s};
      fixed.insert(fixed.end(), p.begin(), p.end() - 1);
      add_prim(catalog, "unstable-app", std::move(fixed), p.back(), fn_app);
      break;
    }
    default:
      return;
  }
  register_higher_order(catalog, sorts, sort);
}

//! The overload the front end registers for one resolved `(unstable-fn "name" captured...)`:
//! arguments String (the name, ignored: `target` decides) then `captured_sorts`, result
//! `fn_sort`. `target` is `fn_target_primitive_bit | overload id` or a function index.
inline prim_overload make_fn_overload(std::uint32_t fn_sort, value target,
                                      std::vector<std::uint32_t> captured_sorts) {
  prim_overload o;
  o.name = "unstable-fn";
  o.fixed.reserve(captured_sorts.size() + 1);
  o.fixed.push_back(sorts::string);
  o.fixed.insert(o.fixed.end(), captured_sorts.begin(), captured_sorts.end());
  o.result = fn_sort;
  o.context = prim_context::pure;
  o.eval = detail::fn_make;
  o.param = target;
  return o;
}

//! The sort of captured argument `index` of fn values of `fn_sort` aimed at `target`, read
//! from the `unstable-fn` overload registered for them (`make_fn_overload`); `no_value` when
//! there is none. Printing, costs and rebuild need it: an fn's contents do not say.
inline std::uint32_t fn_captured_sort(const prim_catalog& catalog, std::uint32_t fn_sort,
                                      value target, std::uint32_t index) {
  for (const std::uint32_t id : catalog.named("unstable-fn")) {
    const prim_overload& o = catalog[id];
    if (o.result == fn_sort && o.param == target && index + std::size_t{1} < o.fixed.size())
      return o.fixed[index + 1];
  }
  return no_value;
}

//! The canonical contents of a container of kind `kind` whose elements may have been united:
//! `find(slot, v)` returns the canonical value of element `v` (itself for non-id slots). Slots:
//! vec, set, multiset elements 0; map keys 0 and values 1; pair first 0 and second 1; fn
//! captured argument i is slot i (the target, word 0, is kept). A set is re-sorted and
//! deduplicated, a multiset's counts merged, a map re-sorted with a later old key's value
//! winning when keys collide (egglog), the rest positional.
template <class Find>
std::vector<value> canonical_contents(sort_kind kind, const value* contents, std::uint32_t length,
                                      Find&& find) {
  std::vector<value> out(contents, contents + length);
  switch (kind) {
    case sort_kind::vec:
      for (value& v : out) v = find(std::uint32_t{0}, v);
      break;
    case sort_kind::set:
      for (value& v : out) v = find(std::uint32_t{0}, v);
      detail::set_normalize(out);
      break;
    case sort_kind::multiset: {
      std::vector<detail::ms_entry> es;
      if (!detail::decode_multiset(out, es)) break;
      for (detail::ms_entry& e : es) e.v = find(std::uint32_t{0}, e.v);
      // Merged counts keep the old total, which fit i64, so this cannot fail.
      (void)detail::normalize_multiset(es);
      out = detail::encode_multiset(es);
      break;
    }
    case sort_kind::map: {
      std::vector<std::pair<value, value>> kv;
      kv.reserve(out.size() / 2);
      for (std::size_t i = 0; i + 1 < out.size(); i += 2)  // old keys ascending
        kv.emplace_back(find(std::uint32_t{0}, out[i]), out[i + 1]);
      out = detail::map_from_pairs(kv);
      for (std::size_t i = 1; i < out.size(); i += 2) out[i] = find(std::uint32_t{1}, out[i]);
      break;
    }
    case sort_kind::pair:
      for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = find(static_cast<std::uint32_t>(i), out[i]);
      break;
    case sort_kind::fn:
      for (std::size_t i = 1; i < out.size(); ++i)
        out[i] = find(static_cast<std::uint32_t>(i - 1), out[i]);
      break;
    default:
      break;
  }
  return out;
}

namespace detail {

//! One node of a printed term in pre-order; a term is compared as its token sequence, which
//! is egglog's `TermDag::ast_cmp` (literals < variables < applications; literals Int < Float
//! < String < Bool < Unit, then by value; applications by head, arity, then children left to
//! right): with each application's arity in its token the sequences are prefix-free, so
//! comparing them lexicographically compares the trees.
struct term_token {
  enum class kind : std::uint8_t { int_lit, float_lit, string_lit, bool_lit, unit_lit, var, app };
  kind type = kind::unit_lit;
  std::int64_t i = 0;  //!< int_lit; bool_lit (0 or 1)
  double f = 0;        //!< float_lit
  std::string text;    //!< string_lit content, var name, app head
  std::uint32_t arity = 0;
};

//! f64 order of egglog's `OrderedFloat`: NaN above everything and equal to itself; -0 == 0.
inline int ordered_float_cmp(double a, double b) noexcept {
  const bool an = a != a, bn = b != b;
  if (an || bn) return an == bn ? 0 : (an ? 1 : -1);
  return a < b ? -1 : (a > b ? 1 : 0);
}

inline bool term_space(char ch) noexcept {
  return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

//! Classifies a bare atom of printed text as egglog's parser would.
inline term_token atom_token(std::string_view a) {
  term_token t;
  if (a == "true" || a == "false") {
    t.type = term_token::kind::bool_lit;
    t.i = a == "true" ? 1 : 0;
    return t;
  }
  std::int64_t iv = 0;
  const char* end = a.data() + a.size();
  if (auto r = std::from_chars(a.data(), end, iv); r.ec == std::errc{} && r.ptr == end) {
    t.type = term_token::kind::int_lit;
    t.i = iv;
    return t;
  }
  double fv = 0;
  if (a == "inf" || a == "-inf" || a == "NaN") {
    t.type = term_token::kind::float_lit;
    t.f = a == "NaN" ? std::numeric_limits<double>::quiet_NaN()
                     : (a == "inf" ? std::numeric_limits<double>::infinity()
                                   : -std::numeric_limits<double>::infinity());
    return t;
  }
  if (auto r = std::from_chars(a.data(), end, fv); r.ec == std::errc{} && r.ptr == end) {
    t.type = term_token::kind::float_lit;
    t.f = fv;
    return t;
  }
  t.type = term_token::kind::var;
  t.text = std::string(a);
  return t;
}

//! The tokens of printed term `text` of sort kind `kind`. A top-level String is taken whole;
//! nested strings are printed unescaped by egglog, so one ends at the first `"` followed by a
//! space, `)` or the end (a string holding such a sequence may then order off).
inline std::vector<term_token> term_tokens(std::string_view text, sort_kind kind) {
  std::vector<term_token> out;
  if (kind == sort_kind::string && text.size() >= 2 && text.front() == '"' && text.back() == '"') {
    term_token t;
    t.type = term_token::kind::string_lit;
    t.text = std::string(text.substr(1, text.size() - 2));
    out.push_back(std::move(t));
    return out;
  }
  std::vector<std::size_t> open;  // token index of each enclosing application
  auto child = [&] {
    if (!open.empty()) ++out[open.back()].arity;
  };
  std::size_t pos = 0;
  const std::size_t n = text.size();
  while (pos < n) {
    const char ch = text[pos];
    if (term_space(ch)) {
      ++pos;
    } else if (ch == '(') {
      if (pos + 1 < n && text[pos + 1] == ')') {
        child();
        out.push_back(term_token{});  // `()` is the Unit literal
        pos += 2;
        continue;
      }
      std::size_t e = ++pos;
      while (e < n && !term_space(text[e]) && text[e] != '(' && text[e] != ')') ++e;
      child();
      term_token t;
      t.type = term_token::kind::app;
      t.text = std::string(text.substr(pos, e - pos));
      open.push_back(out.size());
      out.push_back(std::move(t));
      pos = e;
    } else if (ch == ')') {
      if (!open.empty()) open.pop_back();
      ++pos;
    } else if (ch == '"') {
      std::size_t e = pos + 1;
      while (e < n) {
        if (text[e] == '"' && (e + 1 == n || term_space(text[e + 1]) || text[e + 1] == ')')) break;
        ++e;
      }
      child();
      term_token t;
      t.type = term_token::kind::string_lit;
      t.text = std::string(text.substr(pos + 1, e - pos - 1));
      out.push_back(std::move(t));
      pos = e < n ? e + 1 : n;
    } else {
      std::size_t e = pos;
      while (e < n && !term_space(text[e]) && text[e] != '(' && text[e] != ')') ++e;
      child();
      out.push_back(atom_token(text.substr(pos, e - pos)));
      pos = e;
    }
  }
  return out;
}

inline int token_cmp(const term_token& a, const term_token& b) noexcept {
  if (a.type != b.type) return a.type < b.type ? -1 : 1;
  switch (a.type) {
    case term_token::kind::int_lit:
    case term_token::kind::bool_lit:
      return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
    case term_token::kind::float_lit:
      return ordered_float_cmp(a.f, b.f);
    case term_token::kind::unit_lit:
      return 0;
    case term_token::kind::string_lit:
    case term_token::kind::var:
      return a.text.compare(b.text) < 0 ? -1 : (a.text == b.text ? 0 : 1);
    case term_token::kind::app:
      if (const int c = a.text.compare(b.text); c != 0) return c < 0 ? -1 : 1;
      return a.arity < b.arity ? -1 : (a.arity > b.arity ? 1 : 0);
  }
  return 0;
}

//! Compares two printed terms in egglog's term order (see `term_token`).
inline int term_cmp(const std::vector<term_token>& a, const std::vector<term_token>& b) noexcept {
  const std::size_t n = (std::min)(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (const int c = token_cmp(a[i], b[i]); c != 0) return c;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

//! The sort of slot `slot` of container sort `sort` (see `canonical_contents`), fn excluded.
inline std::uint32_t slot_sort(const std::vector<sort_info>& sorts, std::uint32_t sort,
                               std::uint32_t slot) noexcept {
  if (sort >= sorts.size() || slot >= sorts[sort].params.size()) return no_value;
  return sorts[sort].params[slot];
}

}  // namespace detail

//! Compares two printed terms in egglog 3.0's term order (`TermDag::ast_cmp`), each given
//! with the sort kind it was printed from: < 0, 0 or > 0.
inline int compare_printed_terms(std::string_view a, sort_kind a_kind, std::string_view b,
                                 sort_kind b_kind) {
  return detail::term_cmp(detail::term_tokens(a, a_kind), detail::term_tokens(b, b_kind));
}

//! Calls `f(sort, value, count)` for every element of container `id` that counts towards its
//! extraction cost (egglog: the sum of its elements' costs): vec, set and pair elements,
//! multiset elements with their multiplicity, map keys and values, an fn's captured args (the
//! name is free). `captured_sort(target, index)` gives an fn's captured argument sorts (see
//! `fn_captured_sort`). @returns false when `id` is not a container of `sorts`.
template <class F, class CapturedSort>
bool for_each_element(const std::vector<sort_info>& sorts, const container_store& store, value id,
                      F&& f, CapturedSort&& captured_sort) {
  if (!store.contains(id)) return false;
  const container_store::entry& e = store.at(id);
  if (e.sort >= sorts.size()) return false;
  const sort_info& info = sorts[e.sort];
  const std::vector<value> words(store.contents(e), store.contents(e) + e.length);
  switch (info.kind) {
    case sort_kind::vec:
    case sort_kind::set:
      for (const value v : words) f(detail::slot_sort(sorts, e.sort, 0), v, std::uint64_t{1});
      return true;
    case sort_kind::multiset: {
      std::vector<detail::ms_entry> es;
      if (!detail::decode_multiset(words, es)) return false;
      for (const detail::ms_entry& m : es) f(detail::slot_sort(sorts, e.sort, 0), m.v, m.n);
      return true;
    }
    case sort_kind::map:
    case sort_kind::pair:
      for (std::size_t i = 0; i < words.size(); ++i)
        f(detail::slot_sort(sorts, e.sort, static_cast<std::uint32_t>(i % 2)), words[i],
          std::uint64_t{1});
      return true;
    case sort_kind::fn:
      for (std::size_t i = 1; i < words.size(); ++i)
        f(static_cast<std::uint32_t>(captured_sort(words[0], static_cast<std::uint32_t>(i - 1))),
          words[i], std::uint64_t{1});
      return true;
    default:
      return false;
  }
}

//! The printed term of container `id`, as egglog 3.0's `reconstruct_termdag` builds it:
//! `(vec-of e...)` / `(vec-empty)`, `(set-of e...)` and `(multiset-of e...)` (repeats kept)
//! sorted in term order, `(map-of k v ...)` sorted by key term, `(pair a b)`,
//! `(unstable-fn "name" captured...)`. `element_text(sort, value)` prints an element;
//! `target_name(target)` names an fn's target; `captured_sort(target, index)` gives its
//! captured argument sorts (see `fn_captured_sort`). A multiset of more than
//! `max_printed_repeats` elements prints as `(multiset-sum (multiset-single e n) ...)`, which
//! reads back as the same value, rather than gigabytes. Empty when `id` is not a container.
template <class ElementText, class TargetName, class CapturedSort>
std::string format_container(const std::vector<sort_info>& sorts, const container_store& store,
                             value id, ElementText&& element_text, TargetName&& target_name,
                             CapturedSort&& captured_sort) {
  if (!store.contains(id)) return {};
  const container_store::entry& e = store.at(id);
  if (e.sort >= sorts.size()) return {};
  const sort_info& info = sorts[e.sort];
  const std::vector<value> words(store.contents(e), store.contents(e) + e.length);
  const auto kind_of = [&](std::uint32_t s) {
    return s < sorts.size() ? sorts[s].kind : sort_kind::eq;
  };
  const std::uint32_t s0 = detail::slot_sort(sorts, e.sort, 0);
  const std::uint32_t s1 = detail::slot_sort(sorts, e.sort, 1);

  struct item {
    std::string text;
    std::vector<detail::term_token> key;
    std::string value_text;  // map values
    std::uint64_t count = 1;
  };
  const auto keyed = [&](std::uint32_t s, value v) {
    item it;
    it.text = element_text(s, v);
    it.key = detail::term_tokens(it.text, kind_of(s));
    return it;
  };
  const auto by_term = [](const item& a, const item& b) {
    return detail::term_cmp(a.key, b.key) < 0;
  };
  std::string out;
  switch (info.kind) {
    case sort_kind::vec: {
      if (words.empty()) return "(vec-empty)";
      out = "(vec-of";
      for (const value v : words) out += ' ' + std::string(element_text(s0, v));
      return out + ')';
    }
    case sort_kind::set: {
      std::vector<item> items;
      for (const value v : words) items.push_back(keyed(s0, v));
      std::stable_sort(items.begin(), items.end(), by_term);
      out = "(set-of";
      for (std::size_t i = 0; i < items.size(); ++i)
        if (i == 0 || detail::term_cmp(items[i - 1].key, items[i].key) != 0)
          out += ' ' + items[i].text;
      return out + ')';
    }
    case sort_kind::map: {
      std::vector<item> items;
      for (std::size_t i = 0; i + 1 < words.size(); i += 2) {
        items.push_back(keyed(s0, words[i]));
        items.back().value_text = element_text(s1, words[i + 1]);
      }
      std::stable_sort(items.begin(), items.end(), by_term);
      out = "(map-of";
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i + 1 < items.size() && detail::term_cmp(items[i].key, items[i + 1].key) == 0)
          continue;  // equal key terms: the later value wins, as a BTreeMap insert
        out += ' ' + items[i].text + ' ' + items[i].value_text;
      }
      return out + ')';
    }
    case sort_kind::multiset: {
      std::vector<detail::ms_entry> es;
      if (!detail::decode_multiset(words, es)) return {};
      std::vector<item> items;
      std::uint64_t total = 0;
      for (const detail::ms_entry& m : es) {
        items.push_back(keyed(s0, m.v));
        items.back().count = m.n;
        total = m.n > (std::numeric_limits<std::uint64_t>::max)() - total
                    ? (std::numeric_limits<std::uint64_t>::max)()
                    : total + m.n;
      }
      std::stable_sort(items.begin(), items.end(), by_term);
      if (total > detail::max_printed_repeats) {
        out = "(multiset-sum";
        std::size_t parts = 0;
        for (const item& it : items) {
          std::string single = "(multiset-single " + it.text + ' ' + std::to_string(it.count) + ')';
          if (parts == 0) {
            out = std::move(single);
          } else {
            out = "(multiset-sum " + out + ' ' + single + ')';
          }
          ++parts;
        }
        return out;
      }
      out = "(multiset-of";
      for (const item& it : items)
        for (std::uint64_t k = 0; k < it.count; ++k) out += ' ' + it.text;
      return out + ')';
    }
    case sort_kind::pair: {
      if (words.size() != 2) return {};
      return "(pair " + std::string(element_text(s0, words[0])) + ' ' +
             std::string(element_text(s1, words[1])) + ')';
    }
    case sort_kind::fn: {
      if (words.empty()) return {};
      out = "(unstable-fn \"" + std::string(target_name(words[0])) + '"';
      for (std::size_t i = 1; i < words.size(); ++i) {
        const auto s =
            static_cast<std::uint32_t>(captured_sort(words[0], static_cast<std::uint32_t>(i - 1)));
        out += ' ' + std::string(element_text(s, words[i]));
      }
      return out + ')';
    }
    default:
      return {};
  }
}

}  // namespace vyre::eqsat
