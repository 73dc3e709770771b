// SPDX-License-Identifier: Apache-2.0
//! @file
//! Image files: a packed image on disk, checked when read.
//!
//! Format (version 1), every field a little-endian u32 word:
//!
//! | word  | field                                                        |
//! |-------|--------------------------------------------------------------|
//! | 0, 1  | magic "VYRE" "EGIM" (0x45525956, 0x4D494745)                 |
//! | 2     | format version (1)                                           |
//! | 3     | header words (12)                                            |
//! | 4..6  | row count R, child count C, e-class group count G            |
//! | 7     | reserved, 0                                                  |
//! | 8, 9  | image word count, low then high half (must be 6R + C + 2G + 1) |
//! | 10, 11| checksum, low then high half                                 |
//! | 12..  | the image words                                              |
//!
//! The checksum is FNV-1a over u32 words (h = 0xCBF29CE484222325; h = (h ^ w) *
//! 0x100000001B3 per word) across header words 0..9 and then every image word, words taken as
//! numbers (not bytes). A reader refuses, with an error naming the file and the values, a file
//! that is truncated or has trailing bytes, a bad magic (and says so when it is byte-swapped),
//! an unknown version, counts that do not add up, a checksum mismatch, and an image that fails
//! `validate_image`.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <cuda/std/span>

#include "vyre/core/byte_order.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::egraph {

inline constexpr std::uint32_t image_file_magic0 = 0x45525956u;  // "VYRE"
inline constexpr std::uint32_t image_file_magic1 = 0x4D494745u;  // "EGIM"
inline constexpr std::uint32_t image_file_version = 1;
inline constexpr std::uint32_t image_file_header_words = 12;
inline constexpr std::size_t image_file_header_bytes = image_file_header_words * 4;

namespace detail {
struct file_checksum {
  std::uint64_t state = 0xCBF29CE484222325ull;
  constexpr void add(std::uint32_t word) noexcept { state = (state ^ word) * 0x100000001B3ull; }
};

inline std::array<std::uint32_t, image_file_header_words> image_file_header(
    const image_layout& layout) noexcept {
  std::array<std::uint32_t, image_file_header_words> header{
      image_file_magic0,
      image_file_magic1,
      image_file_version,
      image_file_header_words,
      layout.row_count,
      layout.child_count,
      layout.group_count,
      0,
      static_cast<std::uint32_t>(layout.word_count()),
      static_cast<std::uint32_t>(layout.word_count() >> 32),
      0,
      0};
  return header;
}

template <class Staging>
expected<std::vector<std::byte>> serialize_image(const image_ref& image) {
  VYRE_TRY(validate_image(image));
  auto header = image_file_header(image.layout);
  file_checksum sum;
  for (std::size_t i = 0; i < 10; ++i) sum.add(header[i]);
  for (const std::uint32_t word : image.words) sum.add(word);
  header[10] = static_cast<std::uint32_t>(sum.state);
  header[11] = static_cast<std::uint32_t>(sum.state >> 32);
  VYRE_TRY_ASSIGN(const std::uint64_t payload,
                  words_to_bytes(image.words.size(), "image file size"));
  VYRE_TRY_ASSIGN(const std::uint64_t total,
                  checked_add<std::uint64_t>(payload, image_file_header_bytes, "image file size"));
  std::vector<std::byte> bytes;
  VYRE_TRY(try_resize(bytes, static_cast<std::size_t>(total), "image file bytes"));
  auto* out = reinterpret_cast<std::uint32_t*>(bytes.data());
  VYRE_TRY(staging::stage_words<Staging>({header.data(), header.size()},
                                         {out, image_file_header_words}));
  VYRE_TRY(staging::stage_words<Staging>(image.words,
                                         {out + image_file_header_words, image.words.size()}));
  return bytes;
}

inline error file_error(errc code, const char* context, std::string_view source) {
  return error(code, context).about(source);
}

template <class Staging>
expected<host_image> parse_image(cuda::std::span<const std::byte> bytes, std::string_view source) {
  const auto word_at = [&](std::size_t index) {
    std::uint32_t raw;
    std::memcpy(&raw, bytes.data() + index * 4, 4);
    return staging::staged_word<Staging>(raw);
  };
  if (bytes.size() < image_file_header_bytes)
    return fail(file_error(errc::corrupt_data, "image file: truncated header", source)
                    .with("bytes", bytes.size())
                    .with("header_bytes", image_file_header_bytes)
                    .fix("the file is truncated: write it again"));
  std::array<std::uint32_t, image_file_header_words> header;
  for (std::size_t i = 0; i < header.size(); ++i) header[i] = word_at(i);
  if (header[0] != image_file_magic0 || header[1] != image_file_magic1) {
    const bool swapped = header[0] == cuda::std::byteswap(image_file_magic0) &&
                         header[1] == cuda::std::byteswap(image_file_magic1);
    return fail(file_error(errc::corrupt_data,
                           swapped ? "image file: byte-swapped magic (written big-endian)"
                                   : "image file: bad magic, not a vyre image file",
                           source)
                    .with("magic0", header[0])
                    .with("magic1", header[1])
                    .fix(swapped ? "write the file with staging::little_endian, or read it with "
                                   "the staging policy it was written with"
                                 : "pass a file written by write_image_file"));
  }
  if (header[2] != image_file_version)
    return fail(file_error(errc::unsupported, "image file: unsupported format version", source)
                    .with("version", header[2])
                    .with("supported", image_file_version)
                    .fix("write the file again with this version of vyre"));
  if (header[3] != image_file_header_words || header[7] != 0)
    return fail(file_error(errc::corrupt_data, "image file: malformed header", source)
                    .with("header_words", header[3])
                    .with("reserved", header[7])
                    .fix("the file is corrupt: write it again"));
  const image_layout layout = image_layout::for_counts(header[4], header[5], header[6]);
  const std::uint64_t word_count = std::uint64_t{header[8]} | (std::uint64_t{header[9]} << 32);
  if (word_count != layout.word_count())
    return fail(file_error(errc::invalid_layout,
                           "image file: word count does not add up from the counts (6R + C + 2G "
                           "+ 1)",
                           source)
                    .with("word_count", word_count)
                    .with("rows", header[4])
                    .with("children", header[5])
                    .with("groups", header[6])
                    .fix("the file is corrupt: write it again"));
  // word_count <= 6 * 2^32 + ..., so the byte size fits u64.
  const std::uint64_t expected_bytes = image_file_header_bytes + word_count * 4;
  if (bytes.size() != expected_bytes)
    return fail(file_error(errc::corrupt_data,
                           bytes.size() < expected_bytes ? "image file: truncated image words"
                                                         : "image file: trailing bytes after the "
                                                           "image",
                           source)
                    .with("bytes", bytes.size())
                    .with("expected_bytes", expected_bytes)
                    .fix("the file is truncated or was appended to: write it again"));
  VYRE_TRY_ASSIGN(auto storage, allocate_words(word_count, "image file: image words"));
  file_checksum sum;
  for (std::size_t i = 0; i < 10; ++i) sum.add(header[i]);
  for (std::size_t i = 0; i < word_count; ++i) {
    const std::uint32_t word = word_at(image_file_header_words + i);
    storage[i] = word;
    sum.add(word);
  }
  const std::uint64_t stored = std::uint64_t{header[10]} | (std::uint64_t{header[11]} << 32);
  if (stored != sum.state)
    return fail(file_error(errc::corrupt_data, "image file: checksum mismatch", source)
                    .with("stored", stored)
                    .with("computed", sum.state)
                    .fix("the file is corrupt: write it again"));
  const image_ref ref{{storage.get(), static_cast<std::size_t>(word_count)}, layout};
  if (auto valid = validate_image(ref); !valid) return fail(valid.error().about(source));
  return host_image::adopt(std::move(storage), layout);
}

inline expected<void> write_file(const std::filesystem::path& path,
                                 const std::vector<std::byte>& bytes) {
  const std::string name = path.string();
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return fail(file_error(errc::io, "write_image_file: cannot open for writing", name)
                      .fix("check that the directory exists and is writable"));
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return fail(file_error(errc::io, "write_image_file: write failed", name)
                      .with("bytes", bytes.size())
                      .fix("check free disk space"));
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);  // readers never see a partial file
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return fail(file_error(errc::io, "write_image_file: cannot replace the file", name)
                    .fix("check permissions on the destination"));
  }
  return {};
}

inline expected<std::vector<std::byte>> read_file(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return fail(file_error(errc::io, "read_image_file: cannot open", name)
                    .fix("check the path and permissions"));
  const std::streamoff size = in.tellg();
  if (size < 0)
    return fail(file_error(errc::io, "read_image_file: cannot determine the file size", name)
                    .fix("pass a regular file"));
  std::vector<std::byte> bytes;
  VYRE_TRY(try_resize(bytes, static_cast<std::size_t>(size), "read_image_file: file bytes"));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), size);
  if (!in)
    return fail(file_error(errc::io, "read_image_file: read failed", name)
                    .with("bytes", static_cast<std::uint64_t>(size))
                    .fix("check that the file is not being modified"));
  return bytes;
}
}  // namespace detail

//! The bytes of an image file for `image` (validated first). `Staging` picks the word byte
//! order policy (`little_endian` is the file format; `forced_swap` exists for tests).
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, std::vector<std::byte>> serialize_image(const image_ref& image) {
  return apply_error_policy<OnError>(detail::serialize_image<Staging>(image));
}

//! An image from the bytes of an image file; `source` names them in errors.
//! @throws vyre::error_exception see the file comment for the refused inputs.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, host_image> parse_image_file(cuda::std::span<const std::byte> bytes,
                                               std::string_view source = "image bytes") {
  return apply_error_policy<OnError>(detail::parse_image<Staging>(bytes, source));
}

//! Writes `image` to `path` (through a temporary file and a rename, so a reader never sees a
//! partial file).
//! @throws vyre::error_exception `errc::io` naming the path, or `validate_image`'s errors.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, void> write_image_file(const std::filesystem::path& path,
                                         const image_ref& image) {
  auto run = [&]() -> expected<void> {
    VYRE_TRY_ASSIGN(const auto bytes, detail::serialize_image<Staging>(image));
    return detail::write_file(path, bytes);
  };
  return apply_error_policy<OnError>(run());
}

//! Reads and checks an image file.
//! @throws vyre::error_exception `errc::io` naming the path, or the refusals of
//!         `parse_image_file`, each naming the path.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, host_image> read_image_file(const std::filesystem::path& path) {
  auto run = [&]() -> expected<host_image> {
    VYRE_TRY_ASSIGN(const auto bytes, detail::read_file(path));
    return detail::parse_image<Staging>({bytes.data(), bytes.size()}, path.string());
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::egraph
