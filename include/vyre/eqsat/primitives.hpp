// SPDX-License-Identifier: Apache-2.0
//! @file
//! Primitives: the functions over values that egglog's sorts bring (`+` on i64, `vec-push`,
//! `!=` ...), as overloads with concrete sorts, registered per sort as sorts are declared.
//!
//! An overload has fixed leading argument sorts, optionally a group of sorts repeated zero or
//! more times after them (`vec-of`: one element sort; `map-of`: key, value), a result sort,
//! the least context it may be called in and an evaluation function. A call either yields a
//! value, **fails** (egglog's `None`: in a query the match is dropped, in an action the
//! command stops with an error naming the call) or raises an error (a pool full, an unknown
//! table). The catalog lives in `primitives_base.hpp` (Unit, bool, i64, f64, String, BigInt,
//! BigRat and the primitives of every sort) and `primitives_containers.hpp`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

//! Where a call is evaluated, from the narrowest: a seminaive rule's query (pure), a check
//! or a `:naive` rule's query (read), a seminaive rule's actions or a `:merge` (write), a
//! top-level action or a `:naive` rule's actions (full). A primitive registered for a context
//! is visible in it and every wider one of its kind (pure everywhere; read in read and full;
//! write in write and full; full only in full).
enum class prim_context : std::uint8_t { pure, read, write, full };

inline bool visible_in(prim_context registered, prim_context at) noexcept {
  switch (registered) {
    case prim_context::pure:
      return true;
    case prim_context::read:
      return at == prim_context::read || at == prim_context::full;
    case prim_context::write:
      return at == prim_context::write || at == prim_context::full;
    case prim_context::full:
      return at == prim_context::full;
  }
  return false;
}

enum class prim_status : std::uint8_t { ok, fail, error };

//! An UnstableFn value's first content word is its target: this bit or'ed with a primitive
//! overload id, or (bit clear) a function (table) index.
inline constexpr value fn_target_primitive_bit = 0x80000000u;

//! What a primitive may read and change besides its arguments. Primitives that touch tables
//! (`unstable-app` of a function, `unstable-multiset-fill-index`) or unite ids (`vec-union`)
//! go through `tables`, which the engine provides.
class table_access {
 public:
  virtual ~table_access() = default;
  //! The value of `function` at `keys`; false when absent (subsumed rows count).
  virtual bool lookup(std::uint32_t function, const value* keys, value& out) = 0;
  //! The constructor row at `keys`, made with a fresh id when absent.
  virtual expected<value> make(std::uint32_t function, const value* keys) = 0;
  //! `function` at `keys` := `v` (merged as the function merges).
  virtual expected<void> set(std::uint32_t function, const value* keys, value v) = 0;
  virtual expected<void> unite(value a, value b) = 0;
  virtual expected<void> remove(std::uint32_t function, const value* keys) = 0;
  //! Whether `function` is a constructor (or relation): `unstable-app` of an UnstableFn
  //! that names it looks up or inserts a row rather than only looking one up.
  virtual bool is_constructor(std::uint32_t function) = 0;
};

class prim_catalog;

//! The state primitives run against.
struct value_context {
  base_values* base = nullptr;
  container_store* containers = nullptr;
  id_space* ids = nullptr;
  const std::vector<sort_info>* sorts = nullptr;
  table_access* tables = nullptr;         //!< null where no table may be touched
  const prim_catalog* catalog = nullptr;  //!< for primitives that call others (`unstable-app`)
  prim_context context = prim_context::pure;
  //! Canonical id of `v` of sort `sort` (containers must hold canonical ids).
  value canonical(value v) const noexcept { return ids->find_const(v); }
};

struct prim_overload;

//! One call: the arguments, and where the result or the error goes.
struct prim_call {
  value_context& ctx;
  const prim_overload& self;
  const value* args;
  std::uint32_t count;
  value out = 0;
  error err{errc::invalid_state, "primitive failed"};

  prim_status ok(value v) noexcept {
    out = v;
    return prim_status::ok;
  }
  static prim_status failed() noexcept { return prim_status::fail; }
  prim_status raise(const error& e) noexcept {
    err = e;
    return prim_status::error;
  }
  //! `ok(*r)` or `raise(r.error())`.
  prim_status result(const expected<value>& r) noexcept { return r ? ok(*r) : raise(r.error()); }
};

using prim_eval = prim_status (*)(prim_call&);

struct prim_overload {
  std::string name;
  std::vector<std::uint32_t> fixed;     //!< leading argument sorts
  std::vector<std::uint32_t> repeated;  //!< a group repeated 0+ times after them
  std::uint32_t result = 0;
  prim_context context = prim_context::pure;
  prim_eval eval = nullptr;
  std::uint32_t param = 0;  //!< overload data (a sort, a function sort, ...)
  VYRE_HOST_SPECIAL_MEMBERS(prim_overload);

  //! Whether `n` arguments fit the shape.
  bool accepts_count(std::size_t n) const noexcept {
    if (repeated.empty()) return n == fixed.size();
    return n >= fixed.size() && (n - fixed.size()) % repeated.size() == 0;
  }
  //! Sort of argument `i` (which `accepts_count` allows).
  std::uint32_t arg_sort(std::size_t i) const noexcept {
    return i < fixed.size() ? fixed[i] : repeated[(i - fixed.size()) % repeated.size()];
  }
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(prim_overload);

//! Every overload registered so far, by name.
class prim_catalog {
 public:
  VYRE_HOST_SPECIAL_MEMBERS(prim_catalog);

  std::uint32_t add(prim_overload o) {
    const auto id = static_cast<std::uint32_t>(overloads_.size());
    by_name_[o.name].push_back(id);
    overloads_.push_back(std::move(o));
    return id;
  }
  const prim_overload& operator[](std::uint32_t id) const noexcept { return overloads_[id]; }
  std::size_t size() const noexcept { return overloads_.size(); }
  //! The overloads named `name` (empty when none).
  const std::vector<std::uint32_t>& named(std::string_view name) const {
    static const std::vector<std::uint32_t> none;
    auto it = by_name_.find(std::string(name));
    return it == by_name_.end() ? none : it->second;
  }
  bool has(std::string_view name) const { return by_name_.count(std::string(name)) != 0; }

 private:
  std::vector<prim_overload> overloads_;
  std::unordered_map<std::string, std::vector<std::uint32_t>> by_name_;
};
VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(prim_catalog);

//! Evaluates overload `id` on `args` in `ctx` (an error when `count` does not fit its shape).
inline prim_status call_primitive(const prim_catalog& catalog, std::uint32_t id, value_context& ctx,
                                  const value* args, std::uint32_t count, value& out, error& err) {
  const prim_overload& o = catalog[id];
  if (o.eval == nullptr || !o.accepts_count(count)) {
    err =
        error(errc::invalid_argument, "primitive called with arguments its overload does not take")
            .about(o.name)
            .with("arguments", count);
    return prim_status::error;
  }
  prim_call call{ctx, o, args, count};
  const prim_status s = o.eval(call);
  if (s == prim_status::ok) out = call.out;
  if (s == prim_status::error) err = call.err;
  return s;
}

}  // namespace vyre::eqsat
