// SPDX-License-Identifier: Apache-2.0
// Test support: REQUIRE_OK(expr) fails the test with the error's message when a
// `vyre::expected` holds an error, and acquire_or_fail<Backend>() acquires device 0 or fails
// the test saying why; acquire_stream_or_fail(gpu) leases one of its streams or fails;
// require_each_ok(count, make) collects the values of `count` calls that
// must succeed.
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

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

// `gpu.acquire_stream()`, required to succeed (the `vyre::expected` holding the lease).
template <class Backend>
auto acquire_stream_or_fail(Backend& gpu) {
  auto stream = gpu.acquire_stream();
  REQUIRE_OK(stream);
  return stream;
}

// The values of `count` calls of `make()` (each a `vyre::expected` that must hold a value), in
// call order.
template <class Make>
auto require_each_ok(int count, Make make) {
  std::vector<std::remove_cvref_t<decltype(*make())>> values;
  for (int i = 0; i < count; ++i) {
    auto made = make();
    REQUIRE_OK(made);
    values.push_back(std::move(*made));
  }
  return values;
}

}  // namespace vyre_test
