// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::detail::enum_name`: the lookup behind the `*_name` functions of vyre's enums, which
//! keep their names in a table indexed by the enum's value. Host and device.
#pragma once

#include <cstddef>
#include <type_traits>

#include "vyre/core/config.hpp"

namespace vyre::detail {

//! The name of `value` in `names`, which names the values `First` through `Last` in order
//! (checked at compile time: one name per value); `fallback` for any other value (an
//! out-of-range cast from an integer makes one).
template <auto First, decltype(First) Last, std::size_t N>
requires std::is_enum_v<decltype(First)> VYRE_HOST_DEVICE constexpr const char* enum_name(
    decltype(First) value, const char* const (&names)[N], const char* fallback) noexcept {
  static_assert(static_cast<std::size_t>(Last) - static_cast<std::size_t>(First) + 1 == N,
                "one name per enum value from First through Last");
  // Unsigned: a value below `First` wraps to a large index and gets `fallback` too.
  const auto index = static_cast<std::size_t>(value) - static_cast<std::size_t>(First);
  return index < N ? names[index] : fallback;
}

}  // namespace vyre::detail
