// SPDX-License-Identifier: Apache-2.0
//! @file
//! Host-only special members for vyre's host types that travel through `cuda::std::expected`
//! and the error policies. nvcc (C++20) infers `__host__ __device__` for implicit special
//! members of such a type (`expected`'s members are host-device) and then warns (20011, 20013)
//! that they call host-only members (`std::vector`, `device_array`). Declaring them in the class
//! and defaulting them out of line makes them host-only wherever they are instantiated, also
//! inside templates outside the header's diagnostic region (`vyre/detail/prologue.hpp`, which
//! covers aggregates: those cannot declare constructors and stay aggregates).
//!
//!     struct result {
//!       std::vector<int> values;
//!       VYRE_HOST_SPECIAL_MEMBERS(result);        // in the class
//!     };
//!     VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(result);  // after it, same namespace
//!
//! `VYRE_HOST_MOVE_ONLY_MEMBERS` / `..._DEFAULTED` are the move-only pair.
#pragma once

//! Declares T's default constructor, destructor, copy and (noexcept) move operations.
#define VYRE_HOST_SPECIAL_MEMBERS(T) \
  T();                               \
  ~T();                              \
  T(const T&);                       \
  T(T&&) noexcept;                   \
  T& operator=(const T&);            \
  T& operator=(T&&) noexcept

//! Defaults what `VYRE_HOST_SPECIAL_MEMBERS(T)` declared (inline, host-only).
#define VYRE_HOST_SPECIAL_MEMBERS_DEFAULTED(T) \
  inline T::T() = default;                     \
  inline T::~T() = default;                    \
  inline T::T(const T&) = default;             \
  inline T::T(T&&) noexcept = default;         \
  inline T& T::operator=(const T&) = default;  \
  inline T& T::operator=(T&&) noexcept = default

//! Declares T's (noexcept) default constructor, destructor and (noexcept) move operations; no
//! copies.
#define VYRE_HOST_MOVE_ONLY_MEMBERS(T) \
  T() noexcept;                        \
  ~T();                                \
  T(T&&) noexcept;                     \
  T& operator=(T&&) noexcept

//! Defaults what `VYRE_HOST_MOVE_ONLY_MEMBERS(T)` declared (inline, host-only).
#define VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(T) \
  inline T::T() noexcept = default;              \
  inline T::~T() = default;                      \
  inline T::T(T&&) noexcept = default;           \
  inline T& T::operator=(T&&) noexcept = default
