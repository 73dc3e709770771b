// SPDX-License-Identifier: Apache-2.0
//! @file
//! A plan's capacity (`plan_capacity`), what it does beyond it (`plan_growth`) and its row
//! buckets: one captured graph per bucket, rows rounded up to a quarter of their power of two
//! (at least 1024), so padding costs at most 25% of the input.
#pragma once

#include <bit>
#include <cstdint>

#include "vyre/core/error.hpp"

namespace vyre::algorithms {

//! The largest input a plan holds without reallocating.
struct plan_capacity {
  std::uint32_t rows = 0;      //!< rows (rounded up to a row bucket, at least 1024)
  std::uint32_t children = 0;  //!< child entries
};

//! What a plan does with an input beyond its capacity.
enum class plan_growth : std::uint8_t {
  reallocate,  //!< grow to fit (rows to the next power of two) and re-capture; costs one setup
  fail         //!< return `errc::out_of_range` naming the sizes; the plan stays usable
};

namespace detail {

inline constexpr std::uint32_t plan_min_bucket = 1024;
inline constexpr std::uint32_t plan_max_bucket = 1u << 30;  // CUB item counts stay < INT_MAX

//! The row bucket of `rows`: at least `plan_min_bucket`, else `rows` rounded up to a quarter
//! of its octave (4 buckets per power of two), so padding costs at most 25% of the input.
//! @pre rows <= plan_max_bucket
inline std::uint32_t plan_bucket(std::uint32_t rows) noexcept {
  if (rows <= plan_min_bucket) return plan_min_bucket;
  const std::uint32_t step = std::bit_floor(rows - 1) / 4;
  return (rows + step - 1) / step * step;
}

inline error plan_capacity_error(const char* what, std::uint32_t rows, std::uint32_t children,
                                 const plan_capacity& capacity) {
  return error(errc::out_of_range, what)
      .with("rows", rows)
      .with("children", children)
      .with("capacity_rows", capacity.rows)
      .with("capacity_children", capacity.children)
      .fix(
          "call reserve() with a larger capacity, or create the plan with "
          "plan_growth::reallocate");
}

}  // namespace detail

}  // namespace vyre::algorithms
