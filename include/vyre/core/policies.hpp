// SPDX-License-Identifier: Apache-2.0
//! @file
//! Compile-time policies: allocation, staging and error handling, each an empty tag type with
//! an `inline constexpr` value and a concept, bundled by `vyre::policies<Alloc, Staging, OnError>`.
//!
//! A wrong type is rejected with a message that names the valid choices:
//!
//!     vyre::policies<vyre::alloc::direct, vyre::staging::native, int>   // error:
//!     "vyre::policies: OnError must be vyre::on_error::throw_exception or
//!      vyre::on_error::return_expected"
#pragma once

#include <bit>
#include <concepts>
#include <type_traits>
#include <utility>

#include "vyre/core/error.hpp"

namespace vyre {

namespace detail {
//! `T` is one of `Choices` (a policy concept's valid tag types).
template <class T, class... Choices>
concept one_of = (std::same_as<T, Choices> || ...);
}  // namespace detail

//! How device memory is obtained. The pools themselves live in the runtime (`vyre/runtime.cuh`).
namespace alloc {
//! Power-of-two size classes kept per stream; reuse without a CUDA call on a hit.
struct caching_pool {};
//! A dedicated `cudaMemPool_t` driven by cudaMallocAsync/cudaFreeAsync.
struct stream_ordered {};
//! Plain cudaMalloc/cudaFree, nothing retained.
struct direct {};
inline constexpr caching_pool caching_pool_v{};
inline constexpr stream_ordered stream_ordered_v{};
inline constexpr direct direct_v{};

template <class T>
concept policy = detail::one_of<T, caching_pool, stream_ordered, direct>;
}  // namespace alloc

//! How host words become the little-endian device image.
namespace staging {
//! Copy words as they are. Valid only on a little-endian host (checked at compile time).
struct native {};
//! Byte-swap on big-endian hosts, plain copy on little-endian ones.
struct little_endian {};
//! Always byte-swap, as a big-endian host would: lets tests exercise the swap path anywhere.
//! Never use it for a real upload on a little-endian host: the image would be byte-swapped.
struct forced_swap {};
inline constexpr native native_v{};
inline constexpr little_endian little_endian_v{};
inline constexpr forced_swap forced_swap_v{};

template <class T>
concept policy = detail::one_of<T, native, little_endian, forced_swap>;

//! Whether staging under policy `P` swaps bytes on this host.
template <policy P>
inline constexpr bool swaps_bytes = std::same_as<P, forced_swap> ||
                                    (std::same_as<P, little_endian> &&
                                     std::endian::native == std::endian::big);
}  // namespace staging

//! What the public boundary does with a `vyre::error`.
namespace on_error {
//! Throw `vyre::error_exception`; results are returned as plain values.
struct throw_exception {};
//! Return `cuda::std::expected<T, vyre::error>`; never throws a vyre error.
struct return_expected {};
inline constexpr throw_exception throw_exception_v{};
inline constexpr return_expected return_expected_v{};

template <class T>
concept policy = detail::one_of<T, throw_exception, return_expected>;
}  // namespace on_error

namespace detail {
template <class OnError, class T>
struct boundary_result {
  static_assert(on_error::policy<OnError>,
                "vyre::result_t: OnError must be vyre::on_error::throw_exception or "
                "vyre::on_error::return_expected");
  using type = T;
};
template <class T>
struct boundary_result<on_error::throw_exception, T> {
  using type = T;
};
template <class T>
struct boundary_result<on_error::return_expected, T> {
  using type = cuda::std::expected<T, error>;
};
}  // namespace detail

//! The return type of a public call that yields `T` under error policy `OnError`.
template <class OnError, class T>
using result_t = typename detail::boundary_result<OnError, T>::type;

//! Applies error policy `OnError` to an internal result: throws `error_exception` or passes the
//! expected through.
template <class OnError, class T>
constexpr result_t<OnError, T> apply_error_policy(cuda::std::expected<T, error>&& result) {
  static_assert(on_error::policy<OnError>,
                "vyre::apply_error_policy: OnError must be vyre::on_error::throw_exception or "
                "vyre::on_error::return_expected");
  if constexpr (std::same_as<OnError, on_error::return_expected>) {
    return std::move(result);
  } else {
    if (!result) throw error_exception(result.error());
    if constexpr (!std::is_void_v<T>) return std::move(*result);
  }
}
template <class OnError, class T>
constexpr result_t<OnError, T> apply_error_policy(const cuda::std::expected<T, error>& result) {
  return apply_error_policy<OnError>(cuda::std::expected<T, error>(result));
}

//! The policy bundle a backend is instantiated with.
template <class Alloc = alloc::caching_pool, class Staging = staging::little_endian,
          class OnError = on_error::throw_exception>
struct policies {
  static_assert(alloc::policy<Alloc>,
                "vyre::policies: Alloc must be vyre::alloc::caching_pool, "
                "vyre::alloc::stream_ordered or vyre::alloc::direct");
  static_assert(staging::policy<Staging>,
                "vyre::policies: Staging must be vyre::staging::native, "
                "vyre::staging::little_endian or vyre::staging::forced_swap");
  static_assert(on_error::policy<OnError>,
                "vyre::policies: OnError must be vyre::on_error::throw_exception or "
                "vyre::on_error::return_expected");
  static_assert(!(std::same_as<Staging, staging::native> &&
                  std::endian::native == std::endian::big),
                "vyre::policies: staging::native copies host words unchanged, but this host is "
                "big-endian and the device image is little-endian; use "
                "vyre::staging::little_endian");

  using alloc_policy = Alloc;
  using staging_policy = Staging;
  using error_policy = OnError;

  template <class T>
  using result = result_t<OnError, T>;
};

template <class T>
inline constexpr bool is_policies_v = false;
template <class A, class S, class E>
inline constexpr bool is_policies_v<policies<A, S, E>> = true;

//! Satisfied by an instantiation of `vyre::policies`.
template <class T>
concept policy_bundle = is_policies_v<T>;

}  // namespace vyre
