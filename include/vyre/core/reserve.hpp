// SPDX-License-Identifier: Apache-2.0
//! @file
//! Fallible container growth: reserve or resize without letting `std::bad_alloc` or
//! `std::length_error` escape. The error names what was being reserved and how many.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>

#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"

namespace vyre {

namespace detail {
template <class Container>
error reservation_error(const char* what, std::size_t count) {
  using value_type = typename Container::value_type;
  const std::uint64_t bytes =
      count > SIZE_MAX / sizeof(value_type) ? UINT64_MAX : count * sizeof(value_type);
  return error(errc::out_of_memory, what)
      .with("elements", count)
      .with("bytes", bytes)
      .fix("free host memory or process the input in smaller shards");
}

//! Whether growing `container` to `count` elements allocates and the fault injector says that
//! allocation fails (vyre/core/fault_injection.hpp). One relaxed load while disarmed.
template <class Container>
bool injected_growth_failure(const Container& container, std::size_t count) noexcept {
  if constexpr (requires { container.capacity(); }) {
    if (count <= container.capacity()) return false;
  }
  return testing::inject_allocation_failure(testing::allocation_kind::host);
}

//! Runs `grow` (which grows `container` to `count` elements), turning an injected fault,
//! `std::bad_alloc` or `std::length_error` into `errc::out_of_memory` naming `what`.
template <class Container, class Grow>
expected<void> try_grow(const Container& container, std::size_t count, const char* what,
                        Grow grow) noexcept {
  if (injected_growth_failure(container, count))
    return fail(reservation_error<Container>(what, count));
  try {
    grow();
    return {};
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  return fail(reservation_error<Container>(what, count));
}
}  // namespace detail

//! `container.reserve(count)`; on failure `errc::out_of_memory` naming `what`, container unchanged.
//! @param what static text, e.g. "snapshot rows".
template <class Container>
expected<void> try_reserve(Container& container, std::size_t count, const char* what) noexcept {
  return detail::try_grow(container, count, what, [&] { container.reserve(count); });
}

//! `container.resize(count)`; on failure `errc::out_of_memory` naming `what`, container unchanged.
template <class Container>
expected<void> try_resize(Container& container, std::size_t count, const char* what) noexcept {
  return detail::try_grow(container, count, what, [&] { container.resize(count); });
}

//! `container.assign(first, first + count)`: one pass that allocates and copies (no zero fill
//! first, as resize then memcpy would); on failure `errc::out_of_memory` naming `what`.
template <class Container, class T>
expected<void> try_assign(Container& container, const T* first, std::size_t count,
                          const char* what) noexcept {
  return detail::try_grow(container, count, what, [&] { container.assign(first, first + count); });
}

}  // namespace vyre
