// SPDX-License-Identifier: Apache-2.0
// Test support: REQUIRE_OK(expr) fails the test with the error's message when a
// `vyre::expected` holds an error, and acquire_or_fail<Backend>() acquires device 0 or fails
// the test saying why.
#pragma once

#include <utility>

#include <catch2/catch.hpp>

#include <vyre/runtime.cuh>

#define REQUIRE_OK(expr)                             \
  do {                                               \
    const auto& vyre_ok_ = (expr);                   \
    if (!vyre_ok_) FAIL(vyre_ok_.error().message()); \
  } while (false)

namespace vyre_test {

template <class Backend>
Backend acquire_or_fail(const vyre::backend_options& options = {}) {
  auto b = Backend::acquire(0, options);
  if (!b) FAIL(b.error().message());
  return std::move(*b);
}

}  // namespace vyre_test
