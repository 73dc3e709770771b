// SPDX-License-Identifier: Apache-2.0
// Test support: REQUIRE_ERROR(result, expected_code) requires a `vyre::expected` to hold an error
// and checks its code; REQUIRE_ERROR_WITH(result, expected_code, text) also checks that the message
// contains `text`. `result` is evaluated once; keep it in a variable to check more of the error
// after.
#pragma once

#include <string>

#include <catch2/catch.hpp>

#define REQUIRE_ERROR(result, expected_code)              \
  do {                                                    \
    const auto& vyre_error_ = (result);                   \
    REQUIRE_FALSE(vyre_error_.has_value());               \
    CHECK(vyre_error_.error().code() == (expected_code)); \
  } while (false)

#define REQUIRE_ERROR_WITH(result, expected_code, text)                   \
  do {                                                                    \
    const auto& vyre_error_ = (result);                                   \
    REQUIRE_FALSE(vyre_error_.has_value());                               \
    CHECK(vyre_error_.error().code() == (expected_code));                 \
    CHECK(vyre_error_.error().message().find(text) != std::string::npos); \
  } while (false)
