// SPDX-License-Identifier: Apache-2.0
//! @file
//! Packing a snapshot into the image: `pack` (owned words), `packed_word_count` + `pack_into`
//! (caller memory, e.g. a pinned staging buffer), and `prepare_pack` (validate and group once,
//! learn the size, then write).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda/std/span>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/detail/host_special_members.hpp"
#include "vyre/egraph/detail/pack_impl.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/layout.hpp"
#include "vyre/egraph/snapshot.hpp"

namespace vyre::egraph {

//! A validated, grouped snapshot whose image size is known and which has not been written yet.
//! It refers to the snapshot (which must outlive it and stay unchanged) and holds the grouping
//! scratch. Writing consumes it.
class prepared_pack {
 public:
  VYRE_HOST_MOVE_ONLY_MEMBERS(prepared_pack);  // host-only (vyre/detail/host_special_members.hpp)
  const image_layout& layout() const noexcept { return layout_; }
  std::uint64_t word_count() const noexcept { return layout_.word_count(); }

  //! Writes the image into the first `word_count()` words of `destination`.
  //! @throws vyre::error_exception `errc::invalid_argument` naming both sizes when
  //!         `destination` is too small; `errc::invalid_state` when already written.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, void> write_into(cuda::std::span<std::uint32_t> destination) && {
    return apply_error_policy<OnError>(std::move(*this).write_into_impl(destination));
  }

  //! The image in newly allocated words.
  template <class OnError = on_error::throw_exception>
  result_t<OnError, host_image> to_image() && {
    return apply_error_policy<OnError>(std::move(*this).to_image_impl());
  }

  static expected<prepared_pack> prepare_impl(const snapshot& source,
                                              const snapshot_limits& limits) {
    prepared_pack prepared;
    prepared.columns_ = source.columns();
    VYRE_TRY_ASSIGN(prepared.groups_, detail::analyze(prepared.columns_, limits));
    // Counts fit u32: analyze checked them against the limits, which never exceed u32.
    prepared.layout_ =
        image_layout::for_counts(static_cast<std::uint32_t>(prepared.columns_.rows.size()),
                                 static_cast<std::uint32_t>(prepared.columns_.children.size()),
                                 prepared.groups_.group_count);
    prepared.ready_ = true;
    return prepared;
  }

  expected<void> write_into_impl(cuda::std::span<std::uint32_t> destination) && noexcept {
    if (!ready_)
      return fail(error(errc::invalid_state, "prepared_pack::write_into: already written")
                      .fix("call prepare_pack again; a prepared pack writes once"));
    if (destination.size() < word_count())
      return fail(error(errc::invalid_argument, "pack_into: destination too small")
                      .with("destination_words", destination.size())
                      .with("image_words", word_count())
                      .fix("size the destination with packed_word_count (or "
                           "prepared_pack::word_count)"));
    detail::emit(columns_, groups_, layout_, destination.data());
    ready_ = false;
    return {};
  }

  expected<host_image> to_image_impl() && noexcept {
    VYRE_TRY_ASSIGN(auto storage, detail::allocate_words(word_count(), "pack: image words"));
    VYRE_TRY(
        std::move(*this).write_into_impl({storage.get(), static_cast<std::size_t>(word_count())}));
    return host_image::adopt(std::move(storage), layout_);
  }

 private:
  detail::snapshot_columns columns_;
  detail::grouping groups_;
  image_layout layout_;
  bool ready_ = false;
};

VYRE_HOST_MOVE_ONLY_MEMBERS_DEFAULTED(prepared_pack);

//! Validates `source` and groups its rows: the expensive half of packing, after which the
//! image size is known. See `snapshot::validate` for the errors.
template <class OnError = on_error::throw_exception>
result_t<OnError, prepared_pack> prepare_pack(const snapshot& source,
                                              const snapshot_limits& limits = {}) {
  return apply_error_policy<OnError>(prepared_pack::prepare_impl(source, limits));
}

//! Words `pack(source)` produces: 6R + C + 2G + 1. Validates (see `snapshot::validate`).
//! @note This groups the rows to count the e-classes; to size a buffer and then write into it
//!       without grouping twice, use `prepare_pack`.
template <class OnError = on_error::throw_exception>
result_t<OnError, std::uint64_t> packed_word_count(const snapshot& source) {
  auto prepared = prepared_pack::prepare_impl(source, {});
  if (!prepared)
    return apply_error_policy<OnError>(expected<std::uint64_t>(fail(prepared.error())));
  return apply_error_policy<OnError>(expected<std::uint64_t>(prepared->word_count()));
}

//! Packs `source` into the front of `destination` (caller memory, e.g. pinned) and returns the
//! layout. Validates first; nothing is written on error.
//! @throws vyre::error_exception the errors of `snapshot::validate`, or
//!         `errc::invalid_argument` naming both sizes when `destination` is too small.
template <class OnError = on_error::throw_exception>
result_t<OnError, image_layout> pack_into(const snapshot& source,
                                          cuda::std::span<std::uint32_t> destination) {
  auto run = [&]() -> expected<image_layout> {
    VYRE_TRY_ASSIGN(prepared_pack prepared, prepared_pack::prepare_impl(source, {}));
    const image_layout layout = prepared.layout();
    VYRE_TRY(std::move(prepared).write_into_impl(destination));
    return layout;
  };
  return apply_error_policy<OnError>(run());
}

//! Packs `source` into a new `host_image`: the nine columns of docs/image_format.md in one
//! slab.
//! Deterministic: the same snapshot gives the same words.
//! @throws vyre::error_exception the errors of `snapshot::validate`, or `errc::out_of_memory`.
template <class OnError = on_error::throw_exception>
result_t<OnError, host_image> pack(const snapshot& source) {
  auto run = [&]() -> expected<host_image> {
    VYRE_TRY_ASSIGN(prepared_pack prepared, prepared_pack::prepare_impl(source, {}));
    return std::move(prepared).to_image_impl();
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::egraph
