// SPDX-License-Identifier: Apache-2.0
//! @file
//! Graph keys: what decides whether two captured launch pipelines are interchangeable.
//!
//! A join pipeline captured for 1000 probe rows also serves 700 rows when every buffer is
//! sized by the row count's capacity class (the next power of two), so keys hold capacity
//! classes, never exact sizes. The scan topology (how many levels a block scan over the probe
//! capacity needs) fixes the kernel node count; the node layout version lets the engine retire
//! every cached graph when it changes how it builds them.
//!
//! Everything here is constexpr and host-only C++20 (no nvcc needed).
#pragma once

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/detail/enum_name.hpp"

namespace vyre::graph {

//! The capacity class of `n`: 1 when `n <= 1`, else the smallest power of two `>= n`,
//! saturating at the type's maximum when that power of two does not fit.
//! @note The saturated value (for example 0xFFFFFFFF for u32 inputs above 2^31) is not a power
//!       of two: it is the one class every such input shares.
template <std::unsigned_integral T>
constexpr T capacity_class(T n) noexcept {
  if (n <= 1) return T{1};
  constexpr T top_bit = T{1} << (std::numeric_limits<T>::digits - 1);
  if (n > top_bit) return (std::numeric_limits<T>::max)();
  T power = 1;
  while (power < n) power = static_cast<T>(power << 1);
  return power;
}

//! Shape of a multi-level block scan over `n` elements: a block of `block_size` elements per
//! thread block; while the current length exceeds one block, the per-block totals form a
//! scratch level of `ceil(length / block_size)` elements that is scanned in turn.
//!
//!     constexpr vyre::graph::scan_topology t(65'537);  // levels {257, 2}, 5 kernel nodes
struct scan_topology {
  static constexpr std::uint32_t block_size = 256;
  //! A u64 input needs at most 7 levels (2^56, 2^48, ..., 2^8); 8 leaves room.
  static constexpr std::size_t max_levels = 8;

  std::uint64_t input_length = 0;
  std::uint32_t level_count = 0;
  //! `scratch_lengths[0..level_count)`, the rest zero (so equality compares whole arrays).
  std::array<std::uint64_t, max_levels> scratch_lengths{};

  constexpr scan_topology() noexcept = default;
  constexpr explicit scan_topology(std::uint64_t n) noexcept : input_length(n) {
    std::uint64_t length = n;
    while (length > block_size) {
      // ceil(length / 256) without the overflow of (length + 255) / 256.
      length = length / block_size + (length % block_size != 0 ? 1u : 0u);
      scratch_lengths[level_count++] = length;
    }
  }

  //! Kernel nodes a scan of this shape launches: none for an empty input, else one scan of the
  //! input plus, per scratch level, one scan of the level and one add-back pass.
  constexpr std::uint32_t kernel_node_count() const noexcept {
    return input_length == 0 ? 0u : 1u + 2u * level_count;
  }
  //! Length of scratch level `level`, 0 past the last level.
  constexpr std::uint64_t scratch_length(std::size_t level) const noexcept {
    return level < level_count ? scratch_lengths[level] : 0u;
  }
  constexpr bool operator==(const scan_topology&) const noexcept = default;
};

//! How a join pipeline probes: a plain inner join, or an inner join through a prebuilt index.
enum class join_kind : std::uint8_t { inner = 0, indexed_inner = 1 };

constexpr const char* join_kind_name(join_kind kind) noexcept {
  constexpr const char* names[] = {"inner", "indexed_inner"};
  return vyre::detail::enum_name<join_kind::inner, join_kind::indexed_inner>(kind, names,
                                                                             "unknown join kind");
}

//! The identity of a captured join pipeline. Build one with `make_graph_key`; compare with
//! `==`; hash with `graph_key_hash` (or `std::hash<vyre::graph::graph_key>`).
struct graph_key {
  join_kind join = join_kind::inner;
  std::uint8_t key_arity = 0;
  std::uint32_t key_bytes = 0;
  std::uint64_t probe_capacity = 1;
  std::uint64_t output_capacity = 1;
  scan_topology probe_scan{};
  std::uint32_t node_layout_version = 0;

  constexpr bool operator==(const graph_key&) const noexcept = default;
};

//! What a key is made from: exact sizes, which the key turns into capacity classes.
struct graph_key_inputs {
  join_kind join = join_kind::inner;
  //! Key columns; at most 255 (the key stores a u8).
  std::uint64_t key_arity = 0;
  std::uint32_t key_bytes = 0;
  std::uint64_t probe_rows = 0;
  std::uint64_t output_rows = 0;
  std::uint32_t node_layout_version = 0;
};

namespace detail {
constexpr expected<graph_key> make_graph_key(const graph_key_inputs& in) noexcept {
  if (in.key_arity > (std::numeric_limits<std::uint8_t>::max)())
    return fail(error(errc::out_of_range, "graph_key: the key arity does not fit its u8 field")
                    .with("key_arity", in.key_arity)
                    .with("max", (std::numeric_limits<std::uint8_t>::max)())
                    .fix("join on at most 255 key columns, or hash wider keys into fewer "
                         "columns first"));
  if (in.join != join_kind::inner && in.join != join_kind::indexed_inner)
    return fail(error(errc::invalid_argument, "graph_key: unknown join kind")
                    .with("join_kind", static_cast<std::uint64_t>(in.join))
                    .fix("pass vyre::graph::join_kind::inner or join_kind::indexed_inner"));
  graph_key key;
  key.join = in.join;
  key.key_arity = static_cast<std::uint8_t>(in.key_arity);
  key.key_bytes = in.key_bytes;
  key.probe_capacity = capacity_class(in.probe_rows);
  key.output_capacity = capacity_class(in.output_rows);
  key.probe_scan = scan_topology(key.probe_capacity);
  key.node_layout_version = in.node_layout_version;
  return key;
}

// 64-bit mix (the splitmix64 finaliser): every input bit reaches every output bit.
constexpr std::uint64_t mix64(std::uint64_t h, std::uint64_t v) noexcept {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 27;
  h *= 0x94D049BB133111EBull;
  h ^= h >> 31;
  return h;
}
}  // namespace detail

//! A key from exact sizes: probe and output rows become capacity classes, the probe scan
//! topology follows the probe capacity.
//! @throws vyre::error_exception (under `on_error::throw_exception`) with `errc::out_of_range`
//!         when `key_arity > 255`, `errc::invalid_argument` for an unknown join kind.
template <class OnError = on_error::throw_exception>
constexpr result_t<OnError, graph_key> make_graph_key(const graph_key_inputs& inputs) {
  return apply_error_policy<OnError>(detail::make_graph_key(inputs));
}

//! A stable 64-bit hash of every field (the same on every platform and in constexpr).
constexpr std::uint64_t hash_value(const graph_key& key) noexcept {
  std::uint64_t h = 0x6A09E667F3BCC909ull;
  h = detail::mix64(h, static_cast<std::uint64_t>(key.join));
  h = detail::mix64(h, key.key_arity);
  h = detail::mix64(h, key.key_bytes);
  h = detail::mix64(h, key.probe_capacity);
  h = detail::mix64(h, key.output_capacity);
  h = detail::mix64(h, key.probe_scan.input_length);
  h = detail::mix64(h, key.probe_scan.level_count);
  for (std::uint64_t length : key.probe_scan.scratch_lengths) h = detail::mix64(h, length);
  h = detail::mix64(h, key.node_layout_version);
  return h;
}

//! Hash functor for unordered containers.
struct graph_key_hash {
  constexpr std::size_t operator()(const graph_key& key) const noexcept {
    return static_cast<std::size_t>(hash_value(key));
  }
};

}  // namespace vyre::graph

template <>
struct std::hash<vyre::graph::graph_key> {
  std::size_t operator()(const vyre::graph::graph_key& key) const noexcept {
    return vyre::graph::graph_key_hash{}(key);
  }
};
