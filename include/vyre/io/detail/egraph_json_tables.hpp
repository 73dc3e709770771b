// SPDX-License-Identifier: Apache-2.0
//! @file
//! The id tables of the egraph-serialize JSON loader (`vyre/io/egraph_json.hpp`): names to
//! dense u32 ids in first-seen order, over zero-filled arrays that fault in huge pages. Host
//! only; no simdjson.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string_view>
#include <utility>

#include "vyre/core/error.hpp"
#include "vyre/detail/zero_pages.hpp"
#include "vyre/egraph/row.hpp"
#include "vyre/io/detail/egraph_json_scan.hpp"
#include "vyre/io/name_table.hpp"

namespace vyre::io::detail {

//! A zero-filled array of trivially copyable `T` for large random-access tables, over
//! `vyre::detail::allocate_zero_pages` (fresh pages that fault in 2 MiB at a time where Linux
//! grants huge pages, so random look-ups into it miss the TLB less).
template <class T>
class zeroed_array {
 public:
  zeroed_array() = default;
  zeroed_array(const zeroed_array&) = delete;
  zeroed_array& operator=(const zeroed_array&) = delete;
  zeroed_array(zeroed_array&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  zeroed_array& operator=(zeroed_array&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~zeroed_array() { release(); }

  //! An array of `count` zero bytes' `T`s; `errc::out_of_memory` when it cannot be had.
  static expected<zeroed_array> make(std::size_t count, const char* what) {
    zeroed_array out;
    const std::size_t bytes = count * sizeof(T);
    void* memory = count == 0 ? nullptr : vyre::detail::allocate_zero_pages(bytes);
    if (memory == nullptr && count != 0)
      return fail(error(errc::out_of_memory, what).with("bytes", bytes).fix("free host memory"));
    out.data_ = static_cast<T*>(memory);
    out.size_ = count;
    return out;
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }

 private:
  void release() noexcept {
    vyre::detail::release_zero_pages(data_, size_ * sizeof(T));
    data_ = nullptr;
    size_ = 0;
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

//! Names to dense u32 ids in first-seen order: a flat open-addressing table over a
//! `name_table`. A slot is half a cache line: a tag (hash bits, and the length when it is below
//! 255), the id, and the name itself when it is short (`inline_bytes`, as most ids are), else a
//! pointer to its characters in the table (which never move). So a look-up of a short name
//! touches one line, which `first_tag` can load early; no per-name allocation.
class interner {
 public:
  name_table names;

  //! The tag of a name with hash `hash` (look-ups take the hash precomputed); never 0
  //! (the tag of an empty slot).
  static std::uint32_t tag_of(std::uint64_t hash, std::size_t length) noexcept {
    const std::uint32_t tag = (static_cast<std::uint32_t>(hash >> 32) & ~0xffu) |
                              static_cast<std::uint32_t>(length < 255 ? length : 255);
    return tag != 0 ? tag : 0x100u;
  }

  //! The id of `text` (whose `hash_text` is `hash`), and whether it was new.
  expected<std::pair<std::uint32_t, bool>> intern(std::string_view text, std::uint64_t hash,
                                                  const char* what) {
    if (4 * (names.size() + 1) > 3 * slots_.size()) VYRE_TRY(grow(what));  // load <= 3/4
    const std::uint32_t tag = tag_of(hash, text.size());
    for (std::size_t at = home(hash, mask_);; at = (at + 1) & mask_) {
      slot& here = slots_[at];
      if (here.tag == 0) {
        if (names.size() >= egraph::snapshot_limits::u32_max)
          return fail(
              error(errc::abi_limit, what).with("ids", names.size()).fix(egraph::shard_hint));
        const auto id = static_cast<std::uint32_t>(names.size());
        VYRE_TRY(names.push_back(text));
        here.tag = tag;
        here.id = id;
        if (text.size() <= inline_bytes) {
          if (!text.empty()) std::memcpy(here.text, text.data(), text.size());
        } else {
          const char* stored = names[id].data();
          std::memcpy(here.text, &stored, sizeof stored);
        }
        return std::pair<std::uint32_t, bool>{id, true};
      }
      if (here.tag == tag && matches(here, text))
        return std::pair<std::uint32_t, bool>{here.id, false};
    }
  }
  expected<std::pair<std::uint32_t, bool>> intern(std::string_view text, const char* what) {
    return intern(text, hash_text(text), what);
  }

  std::optional<std::uint32_t> find(std::string_view text) const noexcept {
    if (slots_.empty()) return std::nullopt;
    const std::uint64_t hash = hash_text(text);
    const std::uint32_t tag = tag_of(hash, text.size());
    for (std::size_t at = home(hash, mask_);; at = (at + 1) & mask_) {
      const slot& here = slots_[at];
      if (here.tag == 0) return std::nullopt;
      if (here.tag == tag && matches(here, text)) return here.id;
    }
  }

  //! The tag of the slot a look-up of `hash` reads first (a load, for `egraph_builder::touch`).
  std::uint32_t first_tag(std::uint64_t hash) const noexcept {
    return slots_.empty() ? 0 : slots_[home(hash, mask_)].tag;
  }

  //! Room for `count` names without rehashing.
  expected<void> reserve(std::size_t count, const char* what) {
    VYRE_TRY(names.reserve(count));
    while (3 * slots_.size() < 4 * count) VYRE_TRY(grow(what));
    return {};
  }

  //! Drops the hash index (the names stay).
  void drop_index() noexcept {
    slots_ = {};
    mask_ = 0;
  }

 private:
  //! Names up to this long live in their slot.
  static constexpr std::size_t inline_bytes = 24;

  struct alignas(32) slot {
    std::uint32_t tag;  //!< 0: empty
    std::uint32_t id;
    char text[inline_bytes];  //!< the name, or (longer names) a pointer to its characters
  };
  static_assert(sizeof(slot) == 32);

  //! Where a look-up of `hash` starts: an even slot, so that it and the next one share a cache
  //! line (the table is page-aligned) and most look-ups touch one line.
  static std::size_t home(std::uint64_t hash, std::size_t mask) noexcept {
    return static_cast<std::size_t>(hash) & mask & ~std::size_t{1};
  }

  bool matches(const slot& here, std::string_view text) const noexcept {
    // Equal tags: equal lengths unless the length is 255 or more.
    if (text.size() <= inline_bytes) return same_text(here.text, text.data(), text.size());
    if ((here.tag & 0xffu) == 255 && names[here.id].size() != text.size()) return false;
    const char* stored;
    std::memcpy(&stored, here.text, sizeof stored);
    return same_text(stored, text.data(), text.size());
  }

  expected<void> grow(const char* what) {
    const std::size_t capacity = slots_.empty() ? 1024 : 2 * slots_.size();
    VYRE_TRY_ASSIGN(zeroed_array<slot> grown, zeroed_array<slot>::make(capacity, what));
    const std::size_t mask = capacity - 1;
    for (const slot& old : slots_) {
      if (old.tag == 0) continue;
      std::size_t at = home(hash_text(names[old.id]), mask);
      while (grown[at].tag != 0) at = (at + 1) & mask;
      grown[at] = old;
    }
    slots_ = std::move(grown);
    mask_ = mask;
    return {};
  }

  zeroed_array<slot> slots_;
  std::size_t mask_ = 0;
};

}  // namespace vyre::io::detail
