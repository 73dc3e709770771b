// SPDX-License-Identifier: Apache-2.0
//! @file
//! The primitives of egglog 3.0's base sorts (Unit, bool, i64, f64, String, BigInt, BigRat),
//! the generic ones every sort has (`!=`, `value-eq`, `bool-!=`, `ordering-min`,
//! `ordering-max`) and the printed form of a base value.
//!
//! Semantics are egglog's, with one deliberate difference: what egglog does as a hard Rust
//! panic (`log2` of i64 <= 0, a negative BigInt shift, `bigrat` with a zero denominator,
//! BigRat `log`/`cbrt` of anything but 1) **fails** here, so a program cannot crash the
//! process. i64 arithmetic never wraps (overflow fails); f64 order is egglog's `OrderedFloat`
//! (NaN above everything and equal to itself, -0.0 == 0.0).
//!
//! BigInt and BigRat use GMP and exist only `#if defined(VYRE_WITH_GMP)` (link `-lgmp`);
//! without it they are not registered. Their values live in `base_values` as canonical decimal
//! text (`-12`, `-3/4`). So that a runaway program (`(<< x 10000000000)`) raises an error
//! instead of exhausting memory, a BigInt (or BigRat numerator/denominator) is limited to
//! `detail::max_big_bits` bits, and a string to `detail::max_string_bytes` bytes.
//!
//! Primitives read and intern values through `value_context::base`, which must be set.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(VYRE_WITH_GMP)
#include <gmp.h>
#endif

#include "vyre/core/error.hpp"
#include "vyre/eqsat/i64_ops.hpp"
#include "vyre/eqsat/primitives.hpp"
#include "vyre/eqsat/primitives_containers.hpp"
#include "vyre/eqsat/values.hpp"

namespace vyre::eqsat {

namespace detail {

//! Longest string a primitive builds (`+`, `replace`).
inline constexpr std::size_t max_string_bytes = std::size_t{1} << 30;

inline error string_too_long(std::size_t bytes) {
  return error(errc::out_of_range, "string primitive result longer than vyre builds")
      .with("bytes", bytes)
      .with("max_bytes", max_string_bytes);
}

// ---- f64 text -------------------------------------------------------------------------------

//! The shortest round-trip decimal digits of finite, non-zero |d|: |d| = d1.d2d3... x 10^exp.
struct f64_digits {
  std::string digits;
  int exponent = 0;
};

//! Splits `[first, last)`, scientific text from `std::to_chars`, into digits and exponent.
inline f64_digits split_scientific(const char* first, const char* last) {
  f64_digits out;
  const char* p = first;
  for (; p != last && *p != 'e'; ++p)
    if (*p != '.') out.digits += *p;
  if (p != last) {
    ++p;  // 'e'
    if (p != last && *p == '+') ++p;
    std::from_chars(p, last, out.exponent);
  }
  while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
  return out;
}

inline f64_digits shortest_digits(double d) {
  const double a = std::fabs(d);
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, a, std::chars_format::scientific);
  f64_digits out = split_scientific(buf, r.ptr);
  // When |d| lies exactly halfway between two shortest candidates, Rust (Dragon's
  // format_shortest) takes the upper one; std::to_chars takes the even one. The exact
  // expansion (at most 767 significant digits) shows the tie: the shortest digits then a 5.
  char exact[800];
  const auto x = std::to_chars(exact, exact + sizeof exact, a, std::chars_format::scientific, 780);
  if (x.ec != std::errc{}) return out;
  const f64_digits e = split_scientific(exact, x.ptr);
  const std::size_t n = out.digits.size();
  if (e.exponent != out.exponent || e.digits.size() != n + 1 || e.digits[n] != '5' ||
      e.digits.compare(0, n, out.digits) != 0)
    return out;
  std::size_t i = n;
  while (i > 0 && out.digits[i - 1] == '9') out.digits[--i] = '0';
  if (i == 0) {
    out.digits.insert(out.digits.begin(), '1');
    ++out.exponent;
  } else {
    ++out.digits[i - 1];
  }
  while (out.digits.size() > 1 && out.digits.back() == '0') out.digits.pop_back();
  return out;
}

//! Rust's shortest decimal (no exponent) of `d`: `Display` (`min_one_decimal` false: `1`,
//! `-0`) or the positional half of `Debug` (true: `1.0`, `-0.0`).
inline std::string f64_positional(double d, bool min_one_decimal) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  std::string out = std::signbit(d) ? "-" : "";
  if (d == 0) return out + (min_one_decimal ? "0.0" : "0");
  const f64_digits s = shortest_digits(d);
  const auto n = static_cast<long>(s.digits.size());
  const long e = s.exponent;
  if (e >= 0) {
    if (n <= e + 1) {
      out += s.digits;
      out.append(static_cast<std::size_t>(e + 1 - n), '0');
      if (min_one_decimal) out += ".0";
    } else {
      out.append(s.digits, 0, static_cast<std::size_t>(e + 1));
      out += '.';
      out.append(s.digits, static_cast<std::size_t>(e + 1));
    }
  } else {
    out += "0.";
    out.append(static_cast<std::size_t>(-e - 1), '0');
    out += s.digits;
  }
  return out;
}

//! Rust's `{:?}` of an f64 (egglog's f64 `to-string`): positional with at least one decimal,
//! except exponent form (`1e16`, `1.5e-7`) when |d| >= 1e16 or 0 < |d| < 1e-4.
inline std::string f64_debug(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  const double a = std::fabs(d);
  if (!((a != 0 && a < 1e-4) || a >= 1e16)) return f64_positional(d, true);
  const f64_digits s = shortest_digits(d);
  std::string out = std::signbit(d) ? "-" : "";
  out += s.digits[0];
  if (s.digits.size() > 1) {
    out += '.';
    out.append(s.digits, 1);
  }
  return out + 'e' + std::to_string(s.exponent);
}

//! Whether `text` reads as an i64 (Rust `i64::from_str`: optional sign, ASCII digits).
inline bool reads_as_i64(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  return !text.empty() && text[0] != '+' && r.ec == std::errc{} &&
         r.ptr == text.data() + text.size();
}

//! egglog's printed f64: Rust `Display`, plus `.0` when that text reads as an i64.
inline std::string f64_literal(double d) {
  std::string text = f64_positional(d, false);
  if (reads_as_i64(text)) text += ".0";
  return text;
}

// ---- argument access ---------------------------------------------------------------------------

inline double arg_f64(const prim_call& c, std::uint32_t i) noexcept {
  return c.ctx.base->to_f64(c.args[i]);
}
inline std::string arg_string(const prim_call& c, std::uint32_t i) {
  return std::string(c.ctx.base->to_string(c.args[i]));
}
inline prim_status ok_f64(prim_call& c, double d) {
  return c.result(c.ctx.base->from_f64(d));
}
inline prim_status ok_string(prim_call& c, std::string_view s) {
  if (s.size() > max_string_bytes) return c.raise(string_too_long(s.size()));
  return c.result(c.ctx.base->from_string(s));
}
inline prim_status ok_bool(prim_call& c, bool b) noexcept {
  return c.ok(b ? 1 : 0);
}

// ---- bool --------------------------------------------------------------------------------------

inline prim_status bool_not(prim_call& c) {
  return ok_bool(c, c.args[0] == 0);
}
inline prim_status bool_and(prim_call& c) {
  return ok_bool(c, c.args[0] != 0 && c.args[1] != 0);
}
inline prim_status bool_or(prim_call& c) {
  bool any = false;
  for (std::uint32_t i = 0; i < c.count; ++i) any = any || c.args[i] != 0;
  return ok_bool(c, any);
}
inline prim_status bool_xor(prim_call& c) {
  return ok_bool(c, (c.args[0] != 0) != (c.args[1] != 0));
}
inline prim_status bool_implies(prim_call& c) {
  return ok_bool(c, c.args[0] == 0 || c.args[1] != 0);
}
inline prim_status bool_guard(prim_call& c) {
  return unit_if(c, c.args[0] != 0);
}

// ---- i64 ---------------------------------------------------------------------------------------

//! Binary i64 arithmetic; `param` is an `i64_op` (`i64_apply`: overflow, division by zero
//! and shifts outside [0, 64) fail).
inline prim_status i64_binary(prim_call& c) {
  const auto op = static_cast<i64_op>(c.self.param);
  // min and max give one of their arguments: its value as it is, no interning.
  if (op == i64_op::min) return c.ok(arg_i64(c, 0) <= arg_i64(c, 1) ? c.args[0] : c.args[1]);
  if (op == i64_op::max) return c.ok(arg_i64(c, 0) > arg_i64(c, 1) ? c.args[0] : c.args[1]);
  std::int64_t r = 0;
  if (!i64_apply(op, arg_i64(c, 0), arg_i64(c, 1), r)) return prim_call::failed();
  return ok_i64(c, r);
}

//! Comparisons: `param` a `compare_op`; `result` Unit (a filter) or bool.
inline prim_status compare_result(prim_call& c, int cmp) {
  const bool holds = compare_holds(static_cast<compare_op>(c.self.param), cmp);
  return c.self.result == sorts::boolean ? ok_bool(c, holds) : unit_if(c, holds);
}

inline prim_status i64_compare(prim_call& c) {
  const std::int64_t a = arg_i64(c, 0), b = arg_i64(c, 1);
  return compare_result(c, a < b ? -1 : (a > b ? 1 : 0));
}

inline prim_status i64_not(prim_call& c) {
  return ok_i64(c, ~arg_i64(c, 0));
}

//! floor(log2 a); a <= 0 fails (egglog panics).
inline prim_status i64_log2(prim_call& c) {
  const std::int64_t a = arg_i64(c, 0);
  if (a <= 0) return prim_call::failed();
  return ok_i64(c, 63 - std::countl_zero(static_cast<std::uint64_t>(a)));
}

inline prim_status i64_abs(prim_call& c) {
  const std::int64_t a = arg_i64(c, 0);
  if (a == (std::numeric_limits<std::int64_t>::min)()) return prim_call::failed();
  return ok_i64(c, a < 0 ? -a : a);
}

inline prim_status i64_to_string(prim_call& c) {
  return ok_string(c, std::to_string(arg_i64(c, 0)));
}

// ---- String ------------------------------------------------------------------------------------

//! Whether byte `b` starts a UTF-8 character (is not a continuation byte).
inline bool char_start(char b) noexcept {
  return (static_cast<unsigned char>(b) & 0xC0u) != 0x80u;
}

inline std::size_t char_count(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char b : s) n += char_start(b) ? 1 : 0;
  return n;
}

//! Rust `str::matches(pat).count()`: non-overlapping, left to right; an empty pattern matches
//! at every character boundary (characters + 1).
inline std::size_t count_matches(std::string_view s, std::string_view pat) noexcept {
  if (pat.empty()) return char_count(s) + 1;
  std::size_t n = 0;
  for (std::size_t at = s.find(pat); at != std::string_view::npos;
       at = s.find(pat, at + pat.size()))
    ++n;
  return n;
}

inline prim_status string_concat(prim_call& c) {
  std::size_t total = 0;
  for (std::uint32_t i = 0; i < c.count; ++i) {
    const std::size_t n = c.ctx.base->to_string(c.args[i]).size();
    if (n > max_string_bytes - total) return c.raise(string_too_long(total + n));
    total += n;
  }
  std::string out;
  out.reserve(total);
  for (std::uint32_t i = 0; i < c.count; ++i) out += c.ctx.base->to_string(c.args[i]);
  return ok_string(c, out);
}

//! Rust `str::replace(from, to)`: every non-overlapping match, left to right; an empty `from`
//! puts `to` at every character boundary.
inline prim_status string_replace(prim_call& c) {
  const std::string s = arg_string(c, 0), from = arg_string(c, 1), to = arg_string(c, 2);
  const std::size_t matches = count_matches(s, from);
  const std::size_t keep = s.size() - (from.empty() ? 0 : matches * from.size());
  if (to.size() != 0 &&
      matches > (max_string_bytes - (std::min)(keep, max_string_bytes)) / to.size())
    return c.raise(string_too_long(max_string_bytes));
  std::string out;
  out.reserve(keep + matches * to.size());
  if (from.empty()) {
    out += to;
    for (std::size_t i = 0; i < s.size(); ++i) {
      out += s[i];
      if (i + 1 == s.size() || char_start(s[i + 1])) out += to;
    }
  } else {
    std::size_t pos = 0;
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, pos)) {
      out.append(s, pos, at - pos);
      out += to;
      pos = at + from.size();
    }
    out.append(s, pos, std::string::npos);
  }
  return ok_string(c, out);
}

inline prim_status string_count_matches(prim_call& c) {
  const std::string s = arg_string(c, 0), pat = arg_string(c, 1);
  return ok_i64(c, static_cast<std::int64_t>(count_matches(s, pat)));
}

// ---- f64 ---------------------------------------------------------------------------------------

enum class f64_op : std::uint32_t { add, sub, mul, div, rem, pow, min, max };

//! Binary f64 arithmetic (IEEE); `/` and `%` by zero (either sign) fail.
inline prim_status f64_binary(prim_call& c) {
  const double a = arg_f64(c, 0), b = arg_f64(c, 1);
  switch (static_cast<f64_op>(c.self.param)) {
    case f64_op::add:
      return ok_f64(c, a + b);
    case f64_op::sub:
      return ok_f64(c, a - b);
    case f64_op::mul:
      return ok_f64(c, a * b);
    case f64_op::div:
      if (b == 0.0) return prim_call::failed();
      return ok_f64(c, a / b);
    case f64_op::rem:
      if (b == 0.0) return prim_call::failed();
      return ok_f64(c, std::fmod(a, b));
    case f64_op::pow:
      return ok_f64(c, std::pow(a, b));
    case f64_op::min:
      return c.ok(ordered_float_cmp(a, b) <= 0 ? c.args[0] : c.args[1]);
    case f64_op::max:
      return c.ok(ordered_float_cmp(a, b) > 0 ? c.args[0] : c.args[1]);
  }
  return prim_call::failed();
}

inline prim_status f64_compare(prim_call& c) {
  return compare_result(c, ordered_float_cmp(arg_f64(c, 0), arg_f64(c, 1)));
}

enum class f64_unary_op : std::uint32_t { neg, abs, exp, log, sqrt };

//! `log` fails unless a > 0 and `sqrt` unless a >= 0 (NaN included: egglog 3.0's tests only
//! show `(log 0.0)`, `(log -1.0)` and `(sqrt -1.0)` failing).
inline prim_status f64_unary(prim_call& c) {
  const double a = arg_f64(c, 0);
  switch (static_cast<f64_unary_op>(c.self.param)) {
    case f64_unary_op::neg:
      return ok_f64(c, -a);
    case f64_unary_op::abs:
      return ok_f64(c, std::fabs(a));
    case f64_unary_op::exp:
      return ok_f64(c, std::exp(a));
    case f64_unary_op::log:
      if (!(a > 0.0)) return prim_call::failed();
      return ok_f64(c, std::log(a));
    case f64_unary_op::sqrt:
      if (!(a >= 0.0)) return prim_call::failed();
      return ok_f64(c, std::sqrt(a));
  }
  return prim_call::failed();
}

inline prim_status i64_to_f64(prim_call& c) {
  return ok_f64(c, static_cast<double>(arg_i64(c, 0)));
}

//! Rust `as i64`: truncates, saturates, NaN is 0.
inline prim_status f64_to_i64(prim_call& c) {
  const double a = arg_f64(c, 0);
  std::int64_t r = 0;
  if (std::isnan(a))
    r = 0;
  else if (a >= 9223372036854775808.0)
    r = (std::numeric_limits<std::int64_t>::max)();
  else if (a <= -9223372036854775808.0)
    r = (std::numeric_limits<std::int64_t>::min)();
  else
    r = static_cast<std::int64_t>(a);
  return ok_i64(c, r);
}

inline prim_status f64_to_string(prim_call& c) {
  return ok_string(c, f64_debug(arg_f64(c, 0)));
}

// ---- generic -----------------------------------------------------------------------------------

//! `!=` (param bit 1 clear, op 0), `value-eq` (op 1), `bool-!=` (op 2), `ordering-min` (op 3),
//! `ordering-max` (op 4): `param` = op << 1 | (values are ids, compared canonical).
inline prim_status generic(prim_call& c) {
  value a = c.args[0], b = c.args[1];
  if ((c.self.param & 1u) != 0 && c.ctx.ids != nullptr) {
    if (a < c.ctx.ids->size()) a = c.ctx.ids->find_const(a);
    if (b < c.ctx.ids->size()) b = c.ctx.ids->find_const(b);
  }
  switch (c.self.param >> 1) {
    case 0:
      return unit_if(c, a != b);
    case 1:
      return unit_if(c, a == b);
    case 2:
      return ok_bool(c, a != b);
    case 3:
      return c.ok((std::min)(a, b));
    default:
      return c.ok((std::max)(a, b));
  }
}

#if defined(VYRE_WITH_GMP)

//! Most bits of a BigInt, or of a BigRat's numerator or denominator.
inline constexpr std::size_t max_big_bits = std::size_t{1} << 22;

inline error big_too_large() {
  return error(errc::out_of_range, "BigInt/BigRat value larger than vyre computes")
      .with("max_bits", max_big_bits)
      .fix("keep big numbers below the limit (detail::max_big_bits)");
}

//! A GMP number (`Struct`: mpz_t's or mpq_t's element type) that is always cleared.
template <class Struct, void (*init)(Struct*), void (*clear)(Struct*)>
class gmp_number {
 public:
  gmp_number() noexcept { init(v_); }
  ~gmp_number() { clear(v_); }
  gmp_number(const gmp_number&) = delete;
  gmp_number& operator=(const gmp_number&) = delete;
  Struct* get() noexcept { return v_; }
  const Struct* get() const noexcept { return v_; }

 private:
  Struct v_[1];
};

using big_int = gmp_number<std::remove_extent_t<mpz_t>, mpz_init, mpz_clear>;
using big_rat = gmp_number<std::remove_extent_t<mpq_t>, mpq_init, mpq_clear>;

inline std::size_t big_bits(mpz_srcptr z) noexcept {
  return mpz_sgn(z) == 0 ? 0 : mpz_sizeinbase(z, 2);
}

//! Sets `z` from canonical decimal `text` (digits, optional `-`).
inline void set_text(mpz_ptr z, std::string_view text) {
  const std::string s(text);
  if (mpz_set_str(z, s.c_str(), 10) != 0) mpz_set_ui(z, 0);
}

inline std::string big_text(mpz_srcptr z) {
  std::string s(mpz_sizeinbase(z, 10) + 2, '\0');
  mpz_get_str(s.data(), 10, z);
  s.resize(std::strlen(s.c_str()));
  return s;
}

inline std::string rat_text(mpq_srcptr q) {
  return big_text(mpq_numref(q)) + '/' + big_text(mpq_denref(q));
}

//! Sets `q` from canonical `num/den` text.
inline void set_rat_text(mpq_ptr q, std::string_view text) {
  const std::size_t slash = text.find('/');
  set_text(mpq_numref(q), text.substr(0, slash));
  if (slash == std::string_view::npos)
    mpz_set_ui(mpq_denref(q), 1);
  else
    set_text(mpq_denref(q), text.substr(slash + 1));
  if (mpz_sgn(mpq_denref(q)) == 0) mpz_set_ui(mpq_denref(q), 1);
  mpq_canonicalize(q);
}

inline void arg_big(const prim_call& c, std::uint32_t i, big_int& out) {
  set_text(out.get(), c.ctx.base->bigint_text(c.args[i]));
}
inline void arg_big(const prim_call& c, std::uint32_t i, big_rat& out) {
  set_rat_text(out.get(), c.ctx.base->bigrat_text(c.args[i]));
}

inline prim_status ok_big(prim_call& c, const big_int& z) {
  if (big_bits(z.get()) > max_big_bits) return c.raise(big_too_large());
  return c.result(c.ctx.base->from_bigint_text(big_text(z.get())));
}
inline prim_status ok_big(prim_call& c, const big_rat& q) {
  if (big_bits(mpq_numref(q.get())) > max_big_bits || big_bits(mpq_denref(q.get())) > max_big_bits)
    return c.raise(big_too_large());
  return c.result(c.ctx.base->from_bigrat_text(rat_text(q.get())));
}

inline int big_cmp(const big_int& a, const big_int& b) noexcept {
  return mpz_cmp(a.get(), b.get());
}
inline int big_cmp(const big_rat& a, const big_rat& b) noexcept {
  return mpq_cmp(a.get(), b.get());
}

//! `min` (ties: argument 0) or `max` (ties: argument 1) of arguments 0 and 1 ordered by `cmp`.
inline prim_status pick_min_max(prim_call& c, bool max, int cmp) noexcept {
  return c.ok((max ? cmp > 0 : cmp <= 0) ? c.args[0] : c.args[1]);
}

// ---- BigInt ------------------------------------------------------------------------------------

inline prim_status big_from_i64(prim_call& c) {
  big_int z;
  set_text(z.get(), std::to_string(arg_i64(c, 0)));
  return ok_big(c, z);
}

//! num-bigint's base-10 parse: an optional `+` or `-`, then a digit, then digits and `_`.
inline prim_status big_from_string(prim_call& c) {
  const std::string s = arg_string(c, 0);
  std::size_t i = 0;
  std::string digits;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    if (s[0] == '-') digits += '-';
    i = 1;
  }
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return prim_call::failed();
  for (; i < s.size(); ++i) {
    if (s[i] == '_') continue;
    if (s[i] < '0' || s[i] > '9') return prim_call::failed();
    digits += s[i];
  }
  // d significant digits hold more than (d - 1) * 3.3 bits: refuse to parse gigantic text.
  const std::size_t first = digits.find_first_not_of("-0");
  if (first != std::string::npos && digits.size() - first - 1 > max_big_bits / 3)
    return c.raise(big_too_large());
  big_int z;
  set_text(z.get(), digits);
  return ok_big(c, z);
}

inline prim_status big_to_string(prim_call& c) {
  return ok_string(c, std::string(c.ctx.base->bigint_text(c.args[0])));
}

enum class big_op : std::uint32_t { add, sub, mul, div, rem, band, bor, bxor, min, max };

//! `r = a op b` for the ops before `min` (GMP's function for each, in big_op order); `/` and
//! `%` (truncating) by zero fail.
inline prim_status big_arithmetic(prim_call& c, big_op op, const big_int& a, const big_int& b,
                                  big_int& r) {
  if (op == big_op::mul && big_bits(a.get()) + big_bits(b.get()) > max_big_bits + 1)
    return c.raise(big_too_large());
  if ((op == big_op::div || op == big_op::rem) && mpz_sgn(b.get()) == 0) return prim_call::failed();
  static constexpr void (*const apply[])(mpz_ptr, mpz_srcptr, mpz_srcptr) = {
      mpz_add, mpz_sub, mpz_mul, mpz_tdiv_q, mpz_tdiv_r, mpz_and, mpz_ior, mpz_xor};
  static_assert(std::size(apply) == static_cast<std::size_t>(big_op::min), "one per big_op");
  apply[static_cast<std::size_t>(op)](r.get(), a.get(), b.get());
  return prim_status::ok;
}

//! `<<` (param 0) and `>>` (param 1, rounding toward -inf) by an i64; a negative shift fails
//! (egglog panics).
inline prim_status big_shift(prim_call& c) {
  big_int a, r;
  arg_big(c, 0, a);
  const std::int64_t b = arg_i64(c, 1);
  if (b < 0) return prim_call::failed();
  const std::size_t bits = big_bits(a.get());
  if (c.self.param == 0) {
    if (bits == 0) return ok_big(c, r);
    if (static_cast<std::uint64_t>(b) > max_big_bits - (std::min)(bits, max_big_bits))
      return c.raise(big_too_large());
    mpz_mul_2exp(r.get(), a.get(), static_cast<mp_bitcnt_t>(b));
  } else {
    const std::uint64_t shift = std::min<std::uint64_t>(static_cast<std::uint64_t>(b), bits + 1);
    mpz_fdiv_q_2exp(r.get(), a.get(), static_cast<mp_bitcnt_t>(shift));
  }
  return ok_big(c, r);
}

//! `not-Z` (param 0: -a - 1) and `bits` (param 1: bit length of |a|).
inline prim_status big_unary(prim_call& c) {
  big_int a, r;
  arg_big(c, 0, a);
  if (c.self.param == 0)
    mpz_com(r.get(), a.get());
  else
    set_text(r.get(), std::to_string(big_bits(a.get())));
  return ok_big(c, r);
}

// ---- BigRat ------------------------------------------------------------------------------------

//! `bigrat n d`: n/d reduced; d = 0 fails (egglog panics).
inline prim_status rat_make(prim_call& c) {
  big_int n, d;
  arg_big(c, 0, n);
  arg_big(c, 1, d);
  if (mpz_sgn(d.get()) == 0) return prim_call::failed();
  big_rat q;
  mpq_set_num(q.get(), n.get());
  mpq_set_den(q.get(), d.get());
  mpq_canonicalize(q.get());
  return ok_big(c, q);
}

//! `numer` (param 0) / `denom` (param 1) of the reduced form.
inline prim_status rat_part(prim_call& c) {
  big_rat q;
  arg_big(c, 0, q);
  big_int r;
  mpz_set(r.get(), c.self.param == 0 ? mpq_numref(q.get()) : mpq_denref(q.get()));
  return ok_big(c, r);
}

enum class rat_op : std::uint32_t { add, sub, mul, div, min, max };

inline std::size_t rat_bits(const big_rat& q) noexcept {
  return big_bits(mpq_numref(q.get())) + big_bits(mpq_denref(q.get()));
}

//! `r = a op b` for the ops before `min` (GMP's function for each, in rat_op order); `/` by
//! zero fails.
inline prim_status big_arithmetic(prim_call& c, rat_op op, const big_rat& a, const big_rat& b,
                                  big_rat& r) {
  if (rat_bits(a) + rat_bits(b) > 2 * max_big_bits + 2) return c.raise(big_too_large());
  if (op == rat_op::div && mpq_sgn(b.get()) == 0) return prim_call::failed();
  static constexpr void (*const apply[])(mpq_ptr, mpq_srcptr, mpq_srcptr) = {mpq_add, mpq_sub,
                                                                             mpq_mul, mpq_div};
  static_assert(std::size(apply) == static_cast<std::size_t>(rat_op::min), "one per rat_op");
  apply[static_cast<std::size_t>(op)](r.get(), a.get(), b.get());
  return prim_status::ok;
}

//! Binary BigInt (`Big` big_int, `Op` big_op) or BigRat (big_rat, rat_op) arithmetic: `min`
//! and `max` pick an argument, the other ops compute through `big_arithmetic`.
template <class Big, class Op>
prim_status big_binary(prim_call& c) {
  Big a, b, r;
  arg_big(c, 0, a);
  arg_big(c, 1, b);
  const auto op = static_cast<Op>(c.self.param);
  if (op == Op::min || op == Op::max) return pick_min_max(c, op == Op::max, big_cmp(a, b));
  if (const prim_status s = big_arithmetic(c, op, a, b, r); s != prim_status::ok) return s;
  return ok_big(c, r);
}

//! The comparisons (see `compare_result`) of BigInts (`Big` big_int) or BigRats (big_rat).
template <class Big>
prim_status big_compare(prim_call& c) {
  Big a, b;
  arg_big(c, 0, a);
  arg_big(c, 1, b);
  const int cmp = big_cmp(a, b);
  return compare_result(c, cmp < 0 ? -1 : (cmp > 0 ? 1 : 0));
}

enum class rat_unary_op : std::uint32_t { neg, abs, floor, ceil, round, sqrt, log, cbrt };

//! `sqrt` only of perfect squares > 0; `log` only of 1 (-> 0), `cbrt` only of 1 (-> 1): other
//! values fail (egglog: `todo!()` panics for log/cbrt).
inline prim_status rat_unary(prim_call& c) {
  big_rat a, r;
  arg_big(c, 0, a);
  mpz_srcptr num = mpq_numref(a.get());
  mpz_srcptr den = mpq_denref(a.get());
  const bool is_one = mpz_cmp_ui(num, 1) == 0 && mpz_cmp_ui(den, 1) == 0;
  switch (static_cast<rat_unary_op>(c.self.param)) {
    case rat_unary_op::neg:
      mpq_neg(r.get(), a.get());
      break;
    case rat_unary_op::abs:
      mpq_abs(r.get(), a.get());
      break;
    case rat_unary_op::floor:
      mpz_fdiv_q(mpq_numref(r.get()), num, den);
      break;
    case rat_unary_op::ceil:
      mpz_cdiv_q(mpq_numref(r.get()), num, den);
      break;
    case rat_unary_op::round: {
      // Ties away from zero: sign(a) * floor((2|n| + d) / 2d).
      big_int n2, d2;
      mpz_abs(n2.get(), num);
      mpz_mul_2exp(n2.get(), n2.get(), 1);
      mpz_add(n2.get(), n2.get(), den);
      mpz_mul_2exp(d2.get(), den, 1);
      mpz_fdiv_q(mpq_numref(r.get()), n2.get(), d2.get());
      if (mpz_sgn(num) < 0) mpz_neg(mpq_numref(r.get()), mpq_numref(r.get()));
      break;
    }
    case rat_unary_op::sqrt:
      if (mpz_sgn(num) <= 0 || mpz_perfect_square_p(num) == 0 || mpz_perfect_square_p(den) == 0)
        return prim_call::failed();
      mpz_sqrt(mpq_numref(r.get()), num);
      mpz_sqrt(mpq_denref(r.get()), den);
      break;
    case rat_unary_op::log:
      if (!is_one) return prim_call::failed();
      break;  // r is 0
    case rat_unary_op::cbrt:
      if (!is_one) return prim_call::failed();
      mpq_set_ui(r.get(), 1, 1);
      break;
  }
  mpq_canonicalize(r.get());
  return ok_big(c, r);
}

//! The f64 nearest to `q` (ties to even; too large is +-inf), as num-rational's `to_f64`.
inline double rat_to_double(mpq_srcptr q) {
  const int sign = mpq_sgn(q);
  if (sign == 0) return 0.0;
  big_int a, d, quot, rem;
  mpz_abs(a.get(), mpq_numref(q));
  mpz_set(d.get(), mpq_denref(q));
  // Scale so the integer quotient has 56 or 57 bits: enough for 53 plus round and sticky.
  const long k = 56 - (static_cast<long>(big_bits(a.get())) - static_cast<long>(big_bits(d.get())));
  if (k >= 0)
    mpz_mul_2exp(a.get(), a.get(), static_cast<mp_bitcnt_t>(k));
  else
    mpz_mul_2exp(d.get(), d.get(), static_cast<mp_bitcnt_t>(-k));
  mpz_tdiv_qr(quot.get(), rem.get(), a.get(), d.get());
  const long bq = static_cast<long>(big_bits(quot.get()));
  // |q| ~ quot * 2^-k; keep bits down to 2^max(E - 52, -1074), E = bq - 1 - k.
  long drop = (std::max)(bq - 53, k - 1074);
  drop = (std::min)(drop, bq + 1);
  const long unit = drop - k;
  const bool round_bit = mpz_tstbit(quot.get(), static_cast<mp_bitcnt_t>(drop - 1)) != 0;
  const bool below =
      mpz_sgn(rem.get()) != 0 || mpz_scan1(quot.get(), 0) < static_cast<mp_bitcnt_t>(drop - 1);
  big_int kept;
  mpz_fdiv_q_2exp(kept.get(), quot.get(), static_cast<mp_bitcnt_t>(drop));
  if (round_bit && (below || mpz_odd_p(kept.get()) != 0)) mpz_add_ui(kept.get(), kept.get(), 1);
  const double m = mpz_get_d(kept.get());  // at most 2^53: exact
  // Past +-2000 the result is inf (m >= 1) or 0 (m == 0: drop was capped) either way.
  const double r = std::ldexp(m, static_cast<int>(std::clamp(unit, -2000L, 2000L)));
  return sign < 0 ? -r : r;
}

inline prim_status rat_to_f64(prim_call& c) {
  big_rat a;
  arg_big(c, 0, a);
  return ok_f64(c, rat_to_double(a.get()));
}

//! `pow q e`: e must be an integer; 0^0 = 1, 0^n = 0 (n > 0), 0^n fails (n < 0); a negative
//! e raises the reciprocal; |e| > i64::MAX fails.
inline prim_status rat_pow(prim_call& c) {
  big_rat a, e, r;
  arg_big(c, 0, a);
  arg_big(c, 1, e);
  if (mpz_cmp_ui(mpq_denref(e.get()), 1) != 0) return prim_call::failed();
  mpz_srcptr en = mpq_numref(e.get());
  if (mpq_sgn(a.get()) == 0) {
    if (mpz_sgn(en) == 0) {
      mpq_set_ui(r.get(), 1, 1);
      return ok_big(c, r);
    }
    if (mpz_sgn(en) > 0) return ok_big(c, r);
    return prim_call::failed();
  }
  if (big_bits(en) > 63) return prim_call::failed();
  big_rat base;
  if (mpz_sgn(en) < 0)
    mpq_inv(base.get(), a.get());
  else
    mpq_set(base.get(), a.get());
  big_int mag;
  mpz_abs(mag.get(), en);
  std::uint64_t n = 0;
  const std::string mag_text = big_text(mag.get());  // below 2^63: parses
  std::from_chars(mag_text.data(), mag_text.data() + mag_text.size(), n);
  mpz_srcptr bn = mpq_numref(base.get());
  mpz_srcptr bd = mpq_denref(base.get());
  if (mpz_cmpabs_ui(bn, 1) == 0 && mpz_cmp_ui(bd, 1) == 0) {  // +-1: no growth
    mpq_set_si(r.get(), mpz_sgn(bn) < 0 && n % 2 == 1 ? -1 : 1, 1);
    return ok_big(c, r);
  }
  const std::size_t grow = (std::max)(big_bits(bn), big_bits(bd)) - 1;  // >= 1 here
  if (n > max_big_bits / grow + 1) return c.raise(big_too_large());
  mpz_pow_ui(mpq_numref(r.get()), bn, static_cast<unsigned long>(n));
  mpz_pow_ui(mpq_denref(r.get()), bd, static_cast<unsigned long>(n));
  mpq_canonicalize(r.get());
  return ok_big(c, r);
}

#endif  // VYRE_WITH_GMP

}  // namespace detail

//! Registers the primitives of the base sorts (Unit has none; BigInt and BigRat only with
//! VYRE_WITH_GMP). Repeated calls add nothing.
inline void register_base_primitives(prim_catalog& catalog) {
  using namespace detail;
  constexpr std::uint32_t unit = sorts::unit, boolean = sorts::boolean, i64 = sorts::i64,
                          f64 = sorts::f64, string = sorts::string;
  const auto op = [](auto e) { return static_cast<std::uint32_t>(e); };

  // String (registered before i64 in egglog; `count-matches` lives with i64 there).
  add_prim(catalog, "+", {}, string, string_concat, 0, prim_context::pure, {string});
  add_prim(catalog, "replace", {string, string, string}, string, string_replace);

  // bool
  add_prim(catalog, "not", {boolean}, boolean, bool_not);
  add_prim(catalog, "and", {boolean, boolean}, boolean, bool_and);
  add_prim(catalog, "or", {}, boolean, bool_or, 0, prim_context::pure, {boolean});
  add_prim(catalog, "xor", {boolean, boolean}, boolean, bool_xor);
  add_prim(catalog, "=>", {boolean, boolean}, boolean, bool_implies);
  add_prim(catalog, "guard", {boolean}, unit, bool_guard);

  // i64
  for (std::uint32_t k = 0; k < i64_op_count; ++k)
    add_prim(catalog, i64_op_names[k], {i64, i64}, i64, i64_binary, k);
  add_prim(catalog, "not-i64", {i64}, i64, i64_not);
  add_prim(catalog, "log2", {i64}, i64, i64_log2);
  add_prim(catalog, "abs", {i64}, i64, i64_abs);
  const char* const* const filters = compare_names;
  const char* const bool_cmps[] = {"bool-<", "bool->", "bool-<=", "bool->=", "bool-="};
  for (std::uint32_t k = 0; k < filter_count; ++k)
    add_prim(catalog, filters[k], {i64, i64}, unit, i64_compare, k);
  for (std::uint32_t k = 0; k < 5; ++k)
    add_prim(catalog, bool_cmps[k], {i64, i64}, boolean, i64_compare, k);
  add_prim(catalog, "to-string", {i64}, string, i64_to_string);
  add_prim(catalog, "count-matches", {string, string}, i64, string_count_matches);

  // f64
  const std::pair<const char*, f64_op> f64_ops[] = {
      {"+", f64_op::add}, {"-", f64_op::sub}, {"*", f64_op::mul},   {"/", f64_op::div},
      {"%", f64_op::rem}, {"^", f64_op::pow}, {"min", f64_op::min}, {"max", f64_op::max}};
  for (const auto& [name, o] : f64_ops) add_prim(catalog, name, {f64, f64}, f64, f64_binary, op(o));
  const std::pair<const char*, f64_unary_op> f64_unary_ops[] = {{"neg", f64_unary_op::neg},
                                                                {"abs", f64_unary_op::abs},
                                                                {"exp", f64_unary_op::exp},
                                                                {"log", f64_unary_op::log},
                                                                {"sqrt", f64_unary_op::sqrt}};
  for (const auto& [name, o] : f64_unary_ops) add_prim(catalog, name, {f64}, f64, f64_unary, op(o));
  for (std::uint32_t k = 0; k < filter_count; ++k)
    add_prim(catalog, filters[k], {f64, f64}, unit, f64_compare, k);
  add_prim(catalog, "to-f64", {i64}, f64, i64_to_f64);
  add_prim(catalog, "to-i64", {f64}, i64, f64_to_i64);
  add_prim(catalog, "to-string", {f64}, string, f64_to_string);

#if defined(VYRE_WITH_GMP)
  constexpr std::uint32_t big = sorts::bigint, rat = sorts::bigrat;
  add_prim(catalog, "bigint", {i64}, big, big_from_i64);
  add_prim(catalog, "from-string", {string}, big, big_from_string);
  add_prim(catalog, "to-string", {big}, string, big_to_string);
  const std::pair<const char*, big_op> big_ops[] = {
      {"+", big_op::add},   {"-", big_op::sub},  {"*", big_op::mul}, {"/", big_op::div},
      {"%", big_op::rem},   {"&", big_op::band}, {"|", big_op::bor}, {"^", big_op::bxor},
      {"min", big_op::min}, {"max", big_op::max}};
  for (const auto& [name, o] : big_ops)
    add_prim(catalog, name, {big, big}, big, big_binary<big_int, big_op>, op(o));
  add_prim(catalog, "<<", {big, i64}, big, big_shift, 0);
  add_prim(catalog, ">>", {big, i64}, big, big_shift, 1);
  add_prim(catalog, "not-Z", {big}, big, big_unary, 0);
  add_prim(catalog, "bits", {big}, big, big_unary, 1);
  for (std::uint32_t k = 0; k < filter_count; ++k)
    add_prim(catalog, filters[k], {big, big}, unit, big_compare<big_int>, k);
  for (std::uint32_t k = 0; k < 5; ++k)
    add_prim(catalog, bool_cmps[k], {big, big}, boolean, big_compare<big_int>, k);

  add_prim(catalog, "bigrat", {big, big}, rat, rat_make);
  add_prim(catalog, "numer", {rat}, big, rat_part, 0);
  add_prim(catalog, "denom", {rat}, big, rat_part, 1);
  const std::pair<const char*, rat_op> rat_ops[] = {{"+", rat_op::add},   {"-", rat_op::sub},
                                                    {"*", rat_op::mul},   {"/", rat_op::div},
                                                    {"min", rat_op::min}, {"max", rat_op::max}};
  for (const auto& [name, o] : rat_ops)
    add_prim(catalog, name, {rat, rat}, rat, big_binary<big_rat, rat_op>, op(o));
  const std::pair<const char*, rat_unary_op> rat_unary_ops[] = {
      {"neg", rat_unary_op::neg},   {"abs", rat_unary_op::abs},     {"floor", rat_unary_op::floor},
      {"ceil", rat_unary_op::ceil}, {"round", rat_unary_op::round}, {"sqrt", rat_unary_op::sqrt},
      {"log", rat_unary_op::log},   {"cbrt", rat_unary_op::cbrt}};
  for (const auto& [name, o] : rat_unary_ops) add_prim(catalog, name, {rat}, rat, rat_unary, op(o));
  for (std::uint32_t k = 0; k < filter_count; ++k)
    add_prim(catalog, filters[k], {rat, rat}, unit, big_compare<big_rat>, k);
  add_prim(catalog, "to-f64", {rat}, f64, rat_to_f64);
  add_prim(catalog, "pow", {rat, rat}, rat, rat_pow);
#endif
}

//! Registers the primitives every sort has (`!=`, `value-eq`, `bool-!=`, `ordering-min`,
//! `ordering-max`, on raw value handles; canonical ids for id sorts) for sort `sort`, and,
//! for a container or UnstableFn sort, its container primitives and the higher-order ones
//! pairing it with earlier-declared sorts (`register_container_primitives`). Call once per
//! sort as it is declared, base sorts 0-6 included; repeats add nothing.
inline void register_sort_primitives(prim_catalog& catalog, const std::vector<sort_info>& sorts,
                                     std::uint32_t sort) {
  using namespace detail;
  if (sort >= sorts.size()) return;
  const std::uint32_t ids = sorts[sort].is_id ? 1u : 0u;
  add_prim(catalog, "!=", {sort, sort}, sorts::unit, generic, 0u << 1 | ids);
  add_prim(catalog, "value-eq", {sort, sort}, sorts::unit, generic, 1u << 1 | ids);
  add_prim(catalog, "bool-!=", {sort, sort}, sorts::boolean, generic, 2u << 1 | ids);
  add_prim(catalog, "ordering-min", {sort, sort}, sort, generic, 3u << 1 | ids);
  add_prim(catalog, "ordering-max", {sort, sort}, sort, generic, 4u << 1 | ids);
  if (is_container(sorts[sort].kind)) register_container_primitives(catalog, sorts, sort);
}

//! egglog's printed form of base value `v` of kind `kind` (`extract`, `print-function`):
//! i64 decimal; f64 as Rust `Display` (never an exponent) plus `.0` when that reads as an
//! i64, `inf`/`-inf`/`NaN`; a String in quotes, unescaped; `true`/`false`; `()`; BigInt
//! `(from-string "N")`; BigRat `(bigrat (from-string "N") (from-string "D"))`. Empty for
//! other kinds.
inline std::string format_base_value(const base_values& base, sort_kind kind, value v) {
  switch (kind) {
    case sort_kind::unit:
      return "()";
    case sort_kind::boolean:
      return v != 0 ? "true" : "false";
    case sort_kind::i64:
      return std::to_string(base.to_i64(v));
    case sort_kind::f64:
      return detail::f64_literal(base.to_f64(v));
    case sort_kind::string:
      return '"' + std::string(base.to_string(v)) + '"';
    case sort_kind::bigint:
      return "(from-string \"" + std::string(base.bigint_text(v)) + "\")";
    case sort_kind::bigrat: {
      const std::string_view t = base.bigrat_text(v);
      const std::size_t slash = t.find('/');
      const std::string_view num = t.substr(0, slash);
      const std::string_view den = slash == std::string_view::npos ? "1" : t.substr(slash + 1);
      return "(bigrat (from-string \"" + std::string(num) + "\") (from-string \"" +
             std::string(den) + "\"))";
    }
    default:
      return {};
  }
}

}  // namespace vyre::eqsat
