// SPDX-License-Identifier: Apache-2.0
//! @file
//! Checked arithmetic for sizes and offsets: add, multiply, narrow, words to bytes. Each is
//! constexpr, host and device, and returns an error naming the field and the values instead of
//! wrapping around or truncating.
#pragma once

#include <concepts>
#include <cstdint>
#include <cuda/std/limits>
#include <cuda/std/utility>
#include <type_traits>

#include "vyre/core/error.hpp"

namespace vyre {

//! `a + b`, or `errc::overflow` naming `field`.
template <std::unsigned_integral T>
VYRE_HOST_DEVICE constexpr expected<T> checked_add(T a, T b, const char* field) noexcept {
  if (a > (cuda::std::numeric_limits<T>::max)() - b)
    return fail(error(errc::overflow, field)
                    .with("lhs", a)
                    .with("rhs", b)
                    .with("max", (cuda::std::numeric_limits<T>::max)())
                    .fix("the sum exceeds the type's range: split the input into smaller parts"));
  return static_cast<T>(a + b);
}

//! `a * b`, or `errc::overflow` naming `field`.
template <std::unsigned_integral T>
VYRE_HOST_DEVICE constexpr expected<T> checked_mul(T a, T b, const char* field) noexcept {
  if (a != 0 && b > (cuda::std::numeric_limits<T>::max)() / a)
    return fail(error(errc::overflow, field)
                    .with("lhs", a)
                    .with("rhs", b)
                    .with("max", (cuda::std::numeric_limits<T>::max)())
                    .fix("the product exceeds the type's range: split the input into smaller "
                         "parts"));
  return static_cast<T>(a * b);
}

//! `value` converted to `To` when it fits exactly, else `errc::out_of_range` naming `field`.
template <std::integral To, std::integral From>
VYRE_HOST_DEVICE constexpr expected<To> narrow(From value, const char* field) noexcept {
  if (!cuda::std::in_range<To>(value)) {
    // Negative values are reported through their two's-complement bit pattern plus a flag.
    // (No `value < 0` on unsigned types: nvcc warns about the pointless comparison.)
    bool negative = false;
    if constexpr (std::is_signed_v<From>) negative = value < From{0};
    return fail(error(errc::out_of_range, field)
                    .with("value", static_cast<std::uint64_t>(value))
                    .with("negative", negative ? 1u : 0u)
                    .with("max", static_cast<std::uint64_t>((cuda::std::numeric_limits<To>::max)()))
                    .fix("the value does not fit the destination type: split the input"));
  }
  return static_cast<To>(value);
}

//! Bytes of `words` u32 words, or `errc::overflow` naming `field`.
VYRE_HOST_DEVICE constexpr expected<std::uint64_t> words_to_bytes(std::uint64_t words,
                                                                  const char* field) noexcept {
  return checked_mul<std::uint64_t>(words, sizeof(std::uint32_t), field);
}

}  // namespace vyre
