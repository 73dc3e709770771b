// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::io::name_table`: a read-mostly table of names (node ids, e-class ids) stored flat in
//! large character blocks instead of one `std::string` each. Host code only (no simdjson), so
//! that translation units compiled by nvcc can hold one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/detail/zero_pages.hpp"

namespace vyre::io {

namespace detail {

using vyre::detail::advise_huge_pages;

}  // namespace detail

//! Names by dense id, `operator[]` gives a `std::string_view` valid as long as the table.
//! Characters live in blocks (`block_bytes`, then `large_block_bytes`) that never move, so
//! appending never copies the names already stored; each entry is 12 bytes (block and offset,
//! length).
class name_table {
 public:
  static constexpr std::size_t block_bytes = std::size_t{1} << 20;
  static constexpr std::size_t large_block_bytes = std::size_t{8}
                                                   << 20;  //!< blocks after the first

  std::size_t size() const noexcept { return lengths_.size(); }
  bool empty() const noexcept { return lengths_.empty(); }
  std::string_view operator[](std::size_t id) const noexcept {
    const std::uint64_t at = locations_[id];
    return {blocks_[at >> 32].get() + (at & 0xffffffffu), lengths_[id]};
  }

  //! Iterates the names in id order as `std::string_view`.
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = std::string_view;
    iterator() = default;
    iterator(const name_table* table, std::size_t id) : table_(table), id_(id) {}
    std::string_view operator*() const noexcept { return (*table_)[id_]; }
    iterator& operator++() noexcept {
      ++id_;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      ++id_;
      return old;
    }
    friend bool operator==(const iterator& a, const iterator& b) noexcept { return a.id_ == b.id_; }

   private:
    const name_table* table_ = nullptr;
    std::size_t id_ = 0;
  };
  iterator begin() const noexcept { return {this, 0}; }
  iterator end() const noexcept { return {this, size()}; }

  //! The id of the first entry equal to `name` (a linear scan: for occasional look-ups such as
  //! command-line arguments; loaders keep their own hash index).
  std::optional<std::uint32_t> find(std::string_view name) const noexcept {
    for (std::size_t id = 0; id < size(); ++id)
      if ((*this)[id] == name) return static_cast<std::uint32_t>(id);
    return std::nullopt;
  }

  //! Copies of every name, in id order (for tests and small tables).
  std::vector<std::string> to_strings() const {
    std::vector<std::string> out;
    out.reserve(size());
    for (const std::string_view name : *this) out.emplace_back(name);
    return out;
  }

  //! Appends `name` as the next id.
  //! @return `errc::out_of_memory` when the table cannot grow (the table is unchanged).
  expected<void> push_back(std::string_view name) {
    VYRE_TRY_ASSIGN(const std::uint64_t at, store(name));
    return push_location(at, name.size());
  }

  //! Reserves room for `entries` ids (not their characters).
  expected<void> reserve(std::size_t entries) {
    VYRE_TRY(try_reserve(locations_, entries, "name table"));
    VYRE_TRY(try_reserve(lengths_, entries, "name table"));
    detail::advise_huge_pages(locations_);
    detail::advise_huge_pages(lengths_);
    return {};
  }

  //! A table that shares this one's characters but lists entries `ids` (each an id of this
  //! table), in that order. This table is left empty. Used to reorder names without copying them.
  expected<name_table> take_reordered(const std::vector<std::uint32_t>& ids) && {
    name_table out;
    VYRE_TRY(out.reserve(ids.size()));
    for (const std::uint32_t id : ids) {
      out.locations_.push_back(locations_[id]);
      out.lengths_.push_back(lengths_[id]);
    }
    out.blocks_ = std::move(blocks_);
    out.used_ = used_;
    out.block_size_of_last_ = block_size_of_last_;
    *this = name_table();
    return out;
  }

 private:
  expected<std::uint64_t> store(std::string_view name) {
    if (name.size() > 0xffffffffu)
      return fail(error(errc::abi_limit, "name table: a name longer than 4 GiB")
                      .with("bytes", name.size())
                      .fix("shorten the id"));
    try {
      if (blocks_.empty() || used_ + name.size() > block_size_of_last_) {
        // The first block is small; a table that outgrows it gets large blocks on huge pages.
        const std::size_t size = blocks_.empty() ? block_bytes : large_block_bytes;
        const std::size_t bytes = name.size() > size ? name.size() : size;
        if (blocks_.size() == blocks_.capacity()) blocks_.reserve(2 * blocks_.size() + 8);
        blocks_.emplace_back(new char[bytes]);
        if (blocks_.size() > 1) detail::advise_huge_pages(blocks_.back().get(), bytes);
        block_size_of_last_ = bytes;
        used_ = 0;
      }
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "name table: cannot grow")
                      .with("names", size())
                      .fix("free host memory"));
    }
    if (!name.empty()) std::memcpy(blocks_.back().get() + used_, name.data(), name.size());
    const std::uint64_t at = (std::uint64_t{blocks_.size() - 1} << 32) | used_;
    used_ += name.size();
    return at;
  }

  expected<void> push_location(std::uint64_t at, std::size_t length) {
    if (locations_.size() == locations_.capacity())
      VYRE_TRY(try_reserve(locations_, 2 * locations_.size() + 16, "name table"));
    if (lengths_.size() == lengths_.capacity())
      VYRE_TRY(try_reserve(lengths_, 2 * lengths_.size() + 16, "name table"));
    locations_.push_back(at);
    lengths_.push_back(static_cast<std::uint32_t>(length));
    return {};
  }

  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t used_ = 0;
  std::size_t block_size_of_last_ = 0;
  std::vector<std::uint64_t> locations_;  //!< block << 32 | offset
  std::vector<std::uint32_t> lengths_;
};

}  // namespace vyre::io
