// SPDX-License-Identifier: Apache-2.0
//! @file
//! egglog's arithmetic and comparisons on i64, written once for the host and the device: the
//! CPU engine's primitive catalog (`primitives_base.hpp`) and the GPU engine's device
//! primitives (`device/plan.hpp`) both evaluate these, so the two engines agree by
//! construction.
#pragma once

#include <cstdint>

#include "vyre/core/config.hpp"

namespace vyre::eqsat {

//! The binary i64 operations, as the catalog registers them (`i64_op_names`).
enum class i64_op : std::uint32_t {
  add,
  sub,
  mul,
  div,
  rem,
  band,
  bor,
  bxor,
  shl,
  shr,
  min,
  max,
};
inline constexpr std::uint32_t i64_op_count = static_cast<std::uint32_t>(i64_op::max) + 1;

//! egglog's names of the `i64_op`s, in their order.
inline constexpr const char* i64_op_names[i64_op_count] = {"+", "-", "*",  "/",  "%",   "&",
                                                           "|", "^", "<<", ">>", "min", "max"};

//! `a op b` into `r`; false where egglog fails: overflow, division by zero (and the one
//! quotient that overflows), a shift outside [0, 64).
VYRE_HOST_DEVICE constexpr bool i64_apply(i64_op op, std::int64_t a, std::int64_t b,
                                          std::int64_t& r) noexcept {
  // Literals, not numeric_limits: its members are host functions to nvcc.
  constexpr std::int64_t highest = 0x7fffffffffffffff;
  constexpr std::int64_t lowest = -highest - 1;
  switch (op) {
    case i64_op::add:
      if ((b > 0 && a > highest - b) || (b < 0 && a < lowest - b)) return false;
      r = a + b;
      return true;
    case i64_op::sub:
      if ((b < 0 && a > highest + b) || (b > 0 && a < lowest + b)) return false;
      r = a - b;
      return true;
    case i64_op::mul:
      if (a > 0 ? (b > 0 ? a > highest / b : b < lowest / a)
                : (b > 0 ? a < lowest / b : (a != 0 && b < highest / a)))
        return false;
      r = a * b;
      return true;
    case i64_op::div:
    case i64_op::rem:
      if (b == 0 || (a == lowest && b == -1)) return false;
      r = op == i64_op::div ? a / b : a % b;
      return true;
    case i64_op::band:
      r = a & b;
      return true;
    case i64_op::bor:
      r = a | b;
      return true;
    case i64_op::bxor:
      r = a ^ b;
      return true;
    case i64_op::shl:
    case i64_op::shr:
      if (b < 0 || b >= 64) return false;
      r = op == i64_op::shl ? static_cast<std::int64_t>(static_cast<std::uint64_t>(a) << b)
                            : a >> b;
      return true;
    case i64_op::min:
      r = a <= b ? a : b;
      return true;
    case i64_op::max:
      r = a > b ? a : b;
      return true;
  }
  return false;
}

//! The comparisons, as the catalog registers them for every ordered sort: the filters
//! (`compare_names`, Unit) and the `bool-` forms, which add `equal`.
enum class compare_op : std::uint32_t { less, greater, less_equal, greater_equal, equal };
inline constexpr std::uint32_t filter_count = 4;  //!< `<` `>` `<=` `>=`: no filter for `equal`

//! egglog's names of the filter comparisons, in `compare_op` order.
inline constexpr const char* compare_names[filter_count] = {"<", ">", "<=", ">="};

//! Whether `op` holds for a three-way comparison result `cmp` (<0, 0, >0).
VYRE_HOST_DEVICE constexpr bool compare_holds(compare_op op, int cmp) noexcept {
  switch (op) {
    case compare_op::less:
      return cmp < 0;
    case compare_op::greater:
      return cmp > 0;
    case compare_op::less_equal:
      return cmp <= 0;
    case compare_op::greater_equal:
      return cmp >= 0;
    case compare_op::equal:
      return cmp == 0;
  }
  return false;
}

}  // namespace vyre::eqsat
