// SPDX-License-Identifier: Apache-2.0
//! @file
//! A packed image on the GPU: `backend.upload(image)` -> `resident_image` ->
//! `backend.kernel_view(resident)`.
//!
//! An upload makes exactly one resident allocation (the image's bytes plus a 32-byte fault
//! record for checked view accessors, see kernel_view.cuh) and one host-to-device copy, which
//! telemetry counts as one upload operation. A pinned source (say, an image packed straight
//! into pinned memory with `prepare_pack(...).write_into`) is copied as it is; a pageable one is
//! staged through the backend's pinned pool in chunks, the host copy of one chunk overlapping
//! the DMA of the previous one. Under a byte-swapping staging policy every word is swapped on
//! its way through staging. If anything fails, the allocation is released.
//!
//! A `resident_image` is a small value naming the buffer (a checked handle of the backend's
//! resident store) and its byte layout; it does not free on destruction. Free it with
//! `gpu.free_resident(image.handle())`, or let `gpu.clear_resident()`/`cleanup()` do it. A
//! freed, stale or foreign image is rejected by every call that takes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <utility>

#include <cuda_runtime_api.h>

#include "vyre/core/byte_order.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/kernel_view.cuh"
#include "vyre/egraph/upload_plan.hpp"
#include "vyre/runtime/backend.cuh"

namespace vyre::egraph {

//! An image resident on one backend's device.
class resident_image {
 public:
  resident_image() = default;
  //! @param layout the byte layout; `kernel_view` checks it against the real buffer.
  resident_image(resident_handle handle, const upload_layout& layout) noexcept
      : handle_(handle), layout_(layout) {}

  resident_handle handle() const noexcept { return handle_; }
  const upload_layout& layout() const noexcept { return layout_; }
  std::uint64_t byte_length() const noexcept { return layout_.total_bytes; }
  std::uint64_t word_count() const noexcept { return layout_.words.word_count(); }
  //! Where the view's fault record sits in the buffer: after the image, 16-byte aligned.
  std::uint64_t fault_record_offset() const noexcept {
    return (layout_.total_bytes + 15u) / 16u * 16u;
  }

 private:
  resident_handle handle_{};
  upload_layout layout_{};
};

namespace detail {

struct kernel_view_access {
  static kernel_view make(const std::byte* base, const upload_layout& layout,
                          view_fault* fault) noexcept {
    kernel_view view;
    for (std::size_t c = 0; c < image_column_count; ++c) {
      const column_span span = layout.byte_spans[c];
      view.columns_.pointers[c] =
          span.is_empty() ? nullptr : reinterpret_cast<const std::uint32_t*>(base + span.offset);
    }
    view.columns_.counts = layout.words.counts();
    view.fault_ = fault;
    return view;
  }
};

//! Every check of a view over `buffer`: fault record inside the buffer, each column inside the
//! image bytes, 4-byte aligned, as long as its count says, and no pointer arithmetic that wraps.
inline expected<kernel_view> make_checked_view(const resident_image& image,
                                               const resident_span& buffer) noexcept {
  const upload_layout& layout = image.layout();
  const std::uint64_t fault_offset = image.fault_record_offset();
  if (fault_offset < layout.total_bytes || fault_offset > buffer.bytes ||
      buffer.bytes - fault_offset < sizeof(view_fault))
    return fail(error(errc::invalid_layout,
                      "kernel_view: the image's bytes and fault record do not fit its buffer")
                    .with("image_bytes", layout.total_bytes)
                    .with("buffer_bytes", buffer.bytes)
                    .fix("build views from the resident_image that upload returned"));
  const auto base = reinterpret_cast<std::uintptr_t>(buffer.data);
  if (base > UINTPTR_MAX - buffer.bytes)
    return fail(error(errc::invalid_layout, "kernel_view: buffer address range wraps around")
                    .with("address", base)
                    .with("buffer_bytes", buffer.bytes));
  for (std::size_t c = 0; c < image_column_count; ++c) {
    const auto which = static_cast<image_column>(c);
    const column_span span = layout.column(which);
    const std::uint64_t want = column_length(which, layout.words.counts()) * 4u;
    if (span.length != want)
      return fail(error(errc::invalid_layout,
                        "kernel_view: column length does not match the layout's counts")
                      .with("length_bytes", span.length)
                      .with("expected_bytes", want)
                      .fix("upload the image again; do not edit resident layouts by hand")
                      .about(image_column_name(which)));
    if (span.offset % 4u != 0 || span.offset > layout.total_bytes ||
        layout.total_bytes - span.offset < span.length)
      return fail(error(errc::invalid_layout,
                        "kernel_view: column byte range lies outside the resident image")
                      .with("offset", span.offset)
                      .with("length", span.length)
                      .with("image_bytes", layout.total_bytes)
                      .fix("upload the image again; do not edit resident layouts by hand")
                      .about(image_column_name(which)));
  }
  auto* fault = reinterpret_cast<view_fault*>(buffer.data + fault_offset);
  return kernel_view_access::make(buffer.data, layout, fault);
}

//! The one staged (or direct) copy of `words` into `handle` at byte 0, under `Staging`.
template <class Staging, class Policies>
expected<void> copy_words(backend<Policies>& gpu, resident_handle handle,
                          cuda::std::span<const std::uint32_t> words, cudaStream_t stream) {
  if constexpr (staging::swaps_bytes<Staging>) {
    // Swapping needs a staging pass even for a pinned source. The fill only reads `words` and
    // writes its own chunk, so several host lanes may run it at once.
    upload_options options;
    options.host_lanes = auto_host_lanes(words.size_bytes());
    return gpu.resident().upload_with(
        handle, 0, words.size_bytes(), stream,
        [words](std::size_t at, std::span<std::byte> chunk) noexcept -> expected<void> {
          // Chunks start at multiples of the chunk size, itself a multiple of 4 (checked).
          if (at % 4u != 0 || chunk.size() % 4u != 0)
            return fail(error(errc::invalid_argument,
                              "upload: staging chunk is not a whole number of words")
                            .with("offset", at)
                            .with("bytes", chunk.size())
                            .fix("use a chunk size that is a multiple of 4"));
          return staging::stage_words<Staging>(
              words.subspan(at / 4u, chunk.size() / 4u),
              cuda::std::span<std::uint32_t>(reinterpret_cast<std::uint32_t*>(chunk.data()),
                                             chunk.size() / 4u));
        },
        options);
  } else {
    const auto* bytes = reinterpret_cast<const std::byte*>(words.data());
    return gpu.resident().upload(handle, std::span<const std::byte>(bytes, words.size_bytes()), 0,
                                 stream);
  }
}

template <class Policies>
expected<resident_image> upload_image(backend<Policies>& gpu, const image_ref& image) noexcept {
  VYRE_TRY_ASSIGN(const upload_layout layout,
                  compute_upload_layout(image.layout, image.words.size()));
  const resident_image unplaced(resident_handle{}, layout);
  VYRE_TRY_ASSIGN(const std::uint64_t buffer_bytes,
                  checked_add<std::uint64_t>(unplaced.fault_record_offset(), sizeof(view_fault),
                                             "upload: image bytes + fault record"));
  VYRE_TRY_ASSIGN(const std::size_t allocation,
                  narrow<std::size_t>(buffer_bytes, "upload: image allocation bytes"));
  VYRE_TRY_ASSIGN(stream_lease stream, gpu.streams().acquire());
  VYRE_TRY_ASSIGN(const resident_handle handle, gpu.resident().allocate(allocation, stream.get()));
  const resident_image placed(handle, layout);

  auto fill = [&]() -> expected<void> {
    // The fault record is cleared first: the device does it while the host stages the image,
    // and the one synchronisation below covers both.
    VYRE_TRY_ASSIGN(const resident_span buffer, gpu.resident().lookup(handle));
    VYRE_CUDA_TRY(cudaMemsetAsync(buffer.data + placed.fault_record_offset(), 0, sizeof(view_fault),
                                  stream.get()),
                  "upload: clearing the view fault record failed");
    VYRE_TRY(copy_words<typename Policies::staging_policy>(gpu, handle, image.words, stream.get()));
    // The image must be complete before any other stream reads it (and before a pinned
    // source may be reused by the caller).
    VYRE_CUDA_TRY(cudaStreamSynchronize(stream.get()), "upload: cudaStreamSynchronize failed");
    gpu.telemetry().record_sync();
    return {};
  }();
  if (!fill) {
    // Nothing may still read or write the buffer when it goes back.
    (void)cudaStreamSynchronize(stream.get());
    (void)cudaGetLastError();
    (void)gpu.resident().free(handle);
    return fail(fill.error());
  }
  return placed;
}

//! Downloads a resident image into a host image (host byte order), validated on the way in.
template <class Policies>
expected<host_image> download_image(backend<Policies>& gpu, const resident_image& image) noexcept {
  const std::uint64_t words = image.word_count();
  VYRE_TRY_ASSIGN(auto storage, allocate_words(words, "download: host image words"));
  const std::span<std::byte> destination(reinterpret_cast<std::byte*>(storage.get()),
                                         static_cast<std::size_t>(words * 4u));
  VYRE_TRY_ASSIGN(stream_lease stream, gpu.streams().acquire());
  VYRE_TRY(gpu.resident().download(image.handle(), destination, 0, stream.get()));
  if constexpr (staging::swaps_bytes<typename Policies::staging_policy>) {
    const cuda::std::span<std::uint32_t> all(storage.get(), static_cast<std::size_t>(words));
    VYRE_TRY(staging::stage_words<typename Policies::staging_policy>(all, all));
  }
  const image_layout layout = image.layout().words;
  VYRE_TRY(validate_image(image_ref{
      cuda::std::span<const std::uint32_t>(storage.get(), static_cast<std::size_t>(words)),
      layout}));
  return host_image::adopt(std::move(storage), layout);
}

//! Reads and clears the fault record of `image`'s views after the kernels that used them.
template <class Policies>
expected<void> check_faults(backend<Policies>& gpu, const resident_image& image) noexcept {
  view_fault record;
  VYRE_TRY_ASSIGN(stream_lease stream, gpu.streams().acquire());
  VYRE_TRY(gpu.resident().download(
      image.handle(), std::span<std::byte>(reinterpret_cast<std::byte*>(&record), sizeof(record)),
      static_cast<std::size_t>(image.fault_record_offset()), stream.get()));
  if (record.accessor == 0) return {};
  VYRE_TRY_ASSIGN(const resident_span buffer, gpu.resident().lookup(image.handle()));
  VYRE_CUDA_TRY(cudaMemsetAsync(buffer.data + image.fault_record_offset(), 0, sizeof(view_fault),
                                stream.get()),
                "check_view_faults: clearing the fault record failed");
  VYRE_CUDA_TRY(cudaStreamSynchronize(stream.get()),
                "check_view_faults: cudaStreamSynchronize failed");
  return fail(error(errc::out_of_range,
                    "kernel_view: a checked accessor was called with an index out of bounds")
                  .with("index", record.index)
                  .with("bound", record.bound)
                  .with("faults", record.count)
                  .fix("keep indices below row_count()/group_count(), or check the image's "
                       "children offsets")
                  .about(view_accessor_name(static_cast<view_accessor>(record.accessor))));
}

}  // namespace detail

// The backend's extension points (found by argument-dependent lookup): `gpu.upload(x)` and
// `gpu.kernel_view(r)` for e-graph images. Each applies the backend's error policy.

namespace detail {

//! The packed words of what `upload_to_backend` accepts.
inline image_ref image_ref_of(const image_ref& image) {
  return image;
}
inline image_ref image_ref_of(const host_image& image) {
  return image.ref();
}
inline image_ref image_ref_of(const upload_plan_ref& plan) {
  return image_ref{plan.words(), plan.layout().words};
}
inline image_ref image_ref_of(const upload_plan& plan) {
  return image_ref_of(plan.ref());
}

}  // namespace detail

//! Uploads a packed image (an `image_ref`, `host_image`, `upload_plan` or `upload_plan_ref`):
//! one resident allocation, one host-to-device copy.
//! @throws / returns `errc::invalid_layout` or `errc::overflow` naming a column for a layout
//!         that does not fit its words, `errc::out_of_memory` naming the bytes (resident budget,
//!         device or pinned staging), or a CUDA error. Nothing stays allocated on failure.
template <class Policies, class Image>
requires requires(const Image& image) {
  detail::image_ref_of(image);
}
typename backend<Policies>::template result<resident_image> upload_to_backend(
    backend<Policies>& gpu, const Image& image) {
  return apply_error_policy<typename Policies::error_policy>(
      detail::upload_image(gpu, detail::image_ref_of(image)));
}

//! A checked device view of a resident image.
//! @throws / returns `errc::invalid_handle` for a freed, stale or foreign image;
//!         `errc::invalid_layout` naming the column and its byte range when a span does not fit.
template <class Policies>
typename backend<Policies>::template result<kernel_view> kernel_view_of(
    backend<Policies>& gpu, const resident_image& image) {
  auto run = [&]() -> expected<kernel_view> {
    VYRE_TRY_ASSIGN(const resident_span buffer, gpu.resident().lookup(image.handle()));
    return detail::make_checked_view(image, buffer);
  };
  return apply_error_policy<typename Policies::error_policy>(run());
}

//! Downloads a resident image for verification: the round trip is byte-identical.
template <class Policies>
typename backend<Policies>::template result<host_image> download(backend<Policies>& gpu,
                                                                 const resident_image& image) {
  return apply_error_policy<typename Policies::error_policy>(detail::download_image(gpu, image));
}

//! Reports (and clears) the first out-of-bounds call of a checked accessor made by kernels
//! that used views of `image`. Call it after those kernels completed.
template <class Policies>
typename backend<Policies>::template result<void> check_view_faults(backend<Policies>& gpu,
                                                                    const resident_image& image) {
  return apply_error_policy<typename Policies::error_policy>(detail::check_faults(gpu, image));
}

}  // namespace vyre::egraph
