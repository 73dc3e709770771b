// SPDX-License-Identifier: Apache-2.0
//! @file
//! Image files: a packed image on disk, checked when read.
//!
//! Format (version 2), every field a little-endian u32 word:
//!
//! | word  | field                                                        |
//! |-------|--------------------------------------------------------------|
//! | 0, 1  | magic "VYRE" "EGIM" (0x45525956, 0x4D494745)                 |
//! | 2     | format version (2; version 1 files are still read)           |
//! | 3     | header words (12)                                            |
//! | 4..6  | row count R, child count C, e-class group count G            |
//! | 7     | reserved, 0                                                  |
//! | 8, 9  | image word count, low then high half (must be 6R + C + 2G + 1) |
//! | 10, 11| checksum, low then high half                                 |
//! | 12..  | the image words                                              |
//!
//! The checksum is 64-bit FNV-1a over u32 words taken as numbers (h = 0xCBF29CE484222325;
//! h = (h ^ w) * 0x100000001B3 per word): over header words 0..9, then over the low and high
//! halves of each chunk's digest in order. The image words are cut into chunks of 2^16 words
//! (the last one shorter); a chunk's digest runs four FNV-1a lanes (word i of the chunk into
//! lane i mod 4) and is FNV-1a over the lanes' low and high halves, lane 0 first. Chunks are
//! digested on all host threads, and the lanes let one thread overlap its multiplies. (Version
//! 1's checksum continued one FNV-1a chain over every image word: a serial chain.)
//!
//! A reader refuses, with an error naming the file and the values, a file that is truncated or
//! has trailing bytes, a bad magic (and says so when it is byte-swapped), an unknown version
//! (`errc::corrupt_data`, like the other header checks: it is the file that is unreadable here),
//! counts that do not add up, a checksum mismatch, and an image that fails `validate_image`.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
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
#include "vyre/detail/parallel.hpp"
#include "vyre/egraph/detail/host_buffer.hpp"
#include "vyre/egraph/image.hpp"
#include "vyre/egraph/layout.hpp"

namespace vyre::egraph {

inline constexpr std::uint32_t image_file_magic0 = 0x45525956u;  // "VYRE"
inline constexpr std::uint32_t image_file_magic1 = 0x4D494745u;  // "EGIM"
//! The format version written.
inline constexpr std::uint32_t image_file_version = 2;
//! The oldest format version read (version 1: the checksum is one serial chain).
inline constexpr std::uint32_t image_file_oldest_version = 1;
inline constexpr std::uint32_t image_file_header_words = 12;
inline constexpr std::size_t image_file_header_bytes = image_file_header_words * 4;

namespace detail {
//! 64-bit FNV-1a over u32 words taken as numbers.
struct file_checksum {
  std::uint64_t state = 0xCBF29CE484222325ull;
  constexpr void add(std::uint32_t word) noexcept { state = (state ^ word) * 0x100000001B3ull; }
  constexpr void add64(std::uint64_t word) noexcept {
    add(static_cast<std::uint32_t>(word));
    add(static_cast<std::uint32_t>(word >> 32));
  }
};

//! Image words per checksum chunk (format version 2): 256 KiB, so that a large image gives
//! every thread many chunks and a chunk's words are still in cache when they are digested.
inline constexpr std::size_t image_file_checksum_chunk_words = std::size_t{1} << 16;

//! Words per piece when a byte-swapped file's words pass through a staging buffer (1 MiB).
inline constexpr std::size_t image_file_chunk_words = std::size_t{1} << 18;

//! Version 2's digest of one chunk (see the file comment).
inline std::uint64_t chunk_digest(const std::uint32_t* words, std::size_t count) noexcept {
  constexpr std::uint64_t prime = 0x100000001B3ull;
  std::uint64_t lane[4] = {0xCBF29CE484222325ull, 0xCBF29CE484222325ull, 0xCBF29CE484222325ull,
                           0xCBF29CE484222325ull};
  std::size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    lane[0] = (lane[0] ^ words[i]) * prime;
    lane[1] = (lane[1] ^ words[i + 1]) * prime;
    lane[2] = (lane[2] ^ words[i + 2]) * prime;
    lane[3] = (lane[3] ^ words[i + 3]) * prime;
  }
  for (std::size_t j = 0; i < count; ++i, ++j) lane[j] = (lane[j] ^ words[i]) * prime;
  file_checksum digest;
  for (const std::uint64_t state : lane) digest.add64(state);
  return digest.state;
}

//! Continues `sum`, which holds header words 0..9, over the `count` image words at `numbers` as
//! format `version` says: version 2 on up to `threads` host threads (0: every core), version 1
//! on this one. `prepare(begin, n)` runs first on each piece [begin, begin + n) that is about to
//! be summed (to stage file words into `numbers` while they are in cache); it must not throw.
//! The chunk digests need one word pair per chunk: `errc::out_of_memory` when they cannot be had.
template <class Prepare>
expected<std::uint64_t> continue_checksum(std::uint32_t version, file_checksum sum,
                                          const std::uint32_t* numbers, std::size_t count,
                                          unsigned threads, Prepare&& prepare) noexcept {
  if (version == 1) {
    prepare(std::size_t{0}, count);
    for (std::size_t i = 0; i < count; ++i) sum.add(numbers[i]);
    return sum.state;
  }
  const std::size_t chunk = image_file_checksum_chunk_words;
  const std::size_t chunks = (count + chunk - 1) / chunk;
  VYRE_TRY_ASSIGN(auto digests,
                  raw_array<std::uint64_t>::allocate(chunks, "image file: checksum chunk digests"));
  // Four chunks (1 MiB) per thread at least: below that a thread costs more than it saves.
  vyre::detail::parallel_ranges(threads, chunks, 4, [&](std::size_t first, std::size_t last) {
    for (std::size_t k = first; k < last; ++k) {
      const std::size_t begin = k * chunk;
      const std::size_t n = (std::min)(chunk, count - begin);
      prepare(begin, n);
      digests[k] = chunk_digest(numbers + begin, n);
    }
  });
  for (std::size_t k = 0; k < chunks; ++k) sum.add64(digests[k]);
  return sum.state;
}

//! Stages `count` file words at `from` (the file's byte order) into `to`, which may be `from`
//! itself, and continues `sum` over them (`continue_checksum`).
template <class Staging>
expected<std::uint64_t> stage_and_checksum(std::uint32_t version, file_checksum sum,
                                           const std::byte* from, std::uint32_t* to,
                                           std::size_t count, unsigned threads) noexcept {
  return continue_checksum(version, sum, to, count, threads,
                           [&](std::size_t begin, std::size_t n) noexcept {
                             std::uint32_t* words = to + begin;
                             const std::byte* bytes = from + begin * sizeof(std::uint32_t);
                             if (reinterpret_cast<const std::byte*>(words) != bytes)
                               std::memcpy(words, bytes, n * sizeof(std::uint32_t));
                             if constexpr (staging::swaps_bytes<Staging>)
                               for (std::size_t i = 0; i < n; ++i)
                                 words[i] = staging::staged_word<Staging>(words[i]);
                           });
}

using image_file_header_t = std::array<std::uint32_t, image_file_header_words>;

//! The checksum over header words 0..9, to be continued over the image words.
inline file_checksum header_checksum(const image_file_header_t& header) noexcept {
  file_checksum sum;
  for (std::size_t i = 0; i < 10; ++i) sum.add(header[i]);
  return sum;
}

//! The header of the file for `image`, checksum included (on up to `threads` threads).
//! @pre `validate_image(image)` passed.
inline expected<image_file_header_t> signed_image_file_header(const image_ref& image,
                                                              unsigned threads) noexcept {
  const image_layout& layout = image.layout;
  image_file_header_t header{image_file_magic0,
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
  VYRE_TRY_ASSIGN(
      const std::uint64_t sum,
      continue_checksum(image_file_version, header_checksum(header), image.words.data(),
                        image.words.size(), threads, [](std::size_t, std::size_t) noexcept {}));
  header[10] = static_cast<std::uint32_t>(sum);
  header[11] = static_cast<std::uint32_t>(sum >> 32);
  return header;
}

//! The size in bytes of the file for `image`.
inline expected<std::uint64_t> image_file_bytes(const image_ref& image) noexcept {
  VYRE_TRY_ASSIGN(const std::uint64_t payload,
                  words_to_bytes(image.words.size(), "image file size"));
  return checked_add<std::uint64_t>(payload, image_file_header_bytes, "image file size");
}

template <class Staging>
expected<std::vector<std::byte>> serialize_image(const image_ref& image, unsigned threads) {
  VYRE_TRY(validate_image(image, threads));
  VYRE_TRY_ASSIGN(const image_file_header_t header, signed_image_file_header(image, threads));
  VYRE_TRY_ASSIGN(const std::uint64_t total, image_file_bytes(image));
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

//! What an image file's header says, once checked.
struct checked_image_file_header {
  image_file_header_t words;  // as numbers (staged)
  image_layout layout;
  std::uint64_t word_count;
};

//! The checks of an image file's header, in order: the file holds a header, magic, version,
//! header words and reserved word, word count against the counts, and `file_bytes` against
//! the size the counts give (truncated or trailing bytes).
//! @pre `head` holds the file's first `image_file_header_bytes` bytes when `file_bytes` does.
template <class Staging>
expected<checked_image_file_header> check_image_file_header(cuda::std::span<const std::byte> head,
                                                            std::uint64_t file_bytes,
                                                            std::string_view source) {
  if (file_bytes < image_file_header_bytes)
    return fail(file_error(errc::corrupt_data, "image file: truncated header", source)
                    .with("bytes", file_bytes)
                    .with("header_bytes", image_file_header_bytes)
                    .fix("the file is truncated: write it again"));
  image_file_header_t header;
  for (std::size_t i = 0; i < header.size(); ++i) {
    std::uint32_t raw;
    std::memcpy(&raw, head.data() + i * 4, 4);
    header[i] = staging::staged_word<Staging>(raw);
  }
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
  // A property of the file, not of this machine or build: callers report it as bad input.
  if (header[2] < image_file_oldest_version || header[2] > image_file_version)
    return fail(file_error(errc::corrupt_data, "image file: unsupported format version", source)
                    .with("version", header[2])
                    .with("oldest_supported", image_file_oldest_version)
                    .with("newest_supported", image_file_version)
                    .fix("read it with the vyre version that wrote it, or write it again with "
                         "this one"));
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
  if (file_bytes != expected_bytes)
    return fail(file_error(errc::corrupt_data,
                           file_bytes < expected_bytes ? "image file: truncated image words"
                                                       : "image file: trailing bytes after the "
                                                         "image",
                           source)
                    .with("bytes", file_bytes)
                    .with("expected_bytes", expected_bytes)
                    .fix("the file is truncated or was appended to: write it again"));
  return checked_image_file_header{header, layout, word_count};
}

//! The image from a file's words: stages `from` into fresh storage (or `storage`'s own words in
//! place, when `from` is null), checks the checksum, then `validate_image`.
template <class Staging>
expected<host_image> finish_image(const checked_image_file_header& header, word_storage storage,
                                  const std::byte* from, unsigned threads,
                                  std::string_view source) {
  const auto count = static_cast<std::size_t>(header.word_count);
  std::uint32_t* to = storage.get();
  if (from == nullptr) from = reinterpret_cast<const std::byte*>(to);
  VYRE_TRY_ASSIGN(const std::uint64_t computed,
                  stage_and_checksum<Staging>(header.words[2], header_checksum(header.words), from,
                                              to, count, threads));
  const std::uint64_t stored =
      std::uint64_t{header.words[10]} | (std::uint64_t{header.words[11]} << 32);
  if (stored != computed)
    return fail(file_error(errc::corrupt_data, "image file: checksum mismatch", source)
                    .with("stored", stored)
                    .with("computed", computed)
                    .fix("the file is corrupt: write it again"));
  const image_ref ref{{to, count}, header.layout};
  if (auto valid = validate_image(ref, threads); !valid) return fail(valid.error().about(source));
  return host_image::adopt(std::move(storage), header.layout);
}

template <class Staging>
expected<host_image> parse_image(cuda::std::span<const std::byte> bytes, std::string_view source,
                                 unsigned threads) {
  VYRE_TRY_ASSIGN(const auto header, check_image_file_header<Staging>(bytes, bytes.size(), source));
  VYRE_TRY_ASSIGN(auto storage, allocate_words(header.word_count, "image file: image words"));
  return finish_image<Staging>(header, std::move(storage), bytes.data() + image_file_header_bytes,
                               threads, source);
}

//! Refuses a destination that exists and is not a regular file: renaming over it would replace
//! a symbolic link (not the file it names) or, run as root, a device such as /dev/null, and a
//! directory cannot be replaced. A missing destination is fine; one whose type cannot be read is
//! left to the open, which names the problem.
inline expected<void> check_destination(const std::filesystem::path& path,
                                        const std::string& name) {
  std::error_code ignored;
  const std::filesystem::file_type type = std::filesystem::symlink_status(path, ignored).type();
  if (type == std::filesystem::file_type::regular ||
      type == std::filesystem::file_type::not_found || type == std::filesystem::file_type::none)
    return {};
  return fail(file_error(errc::invalid_argument,
                         type == std::filesystem::file_type::symlink
                             ? "write_image_file: the destination is a symbolic link (it is "
                               "neither replaced nor written through)"
                             : "write_image_file: the destination is not a regular file (a "
                               "directory, device, FIFO or socket)",
                         name)
                  .fix("pass the path of a regular file or of a new one (for a link, the path "
                       "it points to)"));
}

//! Creates and opens a new file beside `path` (same directory, so the rename stays on one file
//! system), named `path` + ".tmp-" + a unique suffix, exclusively: an existing file or link of
//! that name is never opened or followed. Null (errno set) when none can be made.
inline std::FILE* create_temporary_beside(const std::filesystem::path& path,
                                          std::filesystem::path& temporary) {
  static std::atomic<std::uint64_t> counter{0};
  for (int attempt = 0; attempt < 16; ++attempt) {
    const auto clock =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    const std::uint64_t mix =
        (clock ^ (counter.fetch_add(1, std::memory_order_relaxed) << 48)) * 0x9E3779B97F4A7C15ull;
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%016llx", static_cast<unsigned long long>(mix));
    std::filesystem::path candidate = path;
    candidate += suffix;
    // C11's "x": create the file, or fail if anything of that name exists.
    if (std::FILE* file = std::fopen(candidate.string().c_str(), "wbx")) {
      temporary = std::move(candidate);
      return file;
    }
    if (errno != EEXIST) return nullptr;
  }
  return nullptr;
}

//! Writes the file for `image` to `path` through a new temporary file beside it and a rename
//! (`check_destination` first); the words go out in chunks, staged through a chunk-sized buffer
//! only when `Staging` swaps bytes.
template <class Staging>
expected<void> write_file(const std::filesystem::path& path, const image_ref& image,
                          unsigned threads) {
  const std::string name = path.string();
  VYRE_TRY(check_destination(path, name));
  VYRE_TRY(validate_image(image, threads));
  VYRE_TRY_ASSIGN(const image_file_header_t header, signed_image_file_header(image, threads));
  VYRE_TRY_ASSIGN(const std::uint64_t total, image_file_bytes(image));
  image_file_header_t staged_header;
  VYRE_TRY(staging::stage_words<Staging>({header.data(), header.size()},
                                         {staged_header.data(), staged_header.size()}));
  raw_array<std::uint32_t> buffer;
  if constexpr (staging::swaps_bytes<Staging>) {
    VYRE_TRY_ASSIGN(buffer, raw_array<std::uint32_t>::allocate(
                                (std::min)(image.words.size(), image_file_chunk_words),
                                "write_image_file: staging buffer"));
  }
  std::filesystem::path temporary;
  std::FILE* const out = create_temporary_beside(path, temporary);
  if (out == nullptr)
    return fail(file_error(errc::io, "write_image_file: cannot open for writing", name)
                    .fix("check that the directory exists and is writable"));
  bool written = true;
  const auto put = [&](const std::uint32_t* words, std::size_t count) {
    written = written && std::fwrite(words, sizeof(std::uint32_t), count, out) == count;
  };
  put(staged_header.data(), staged_header.size());
  if constexpr (staging::swaps_bytes<Staging>) {
    for (std::size_t at = 0; at < image.words.size() && written; at += buffer.size()) {
      const auto chunk =
          image.words.subspan(at, (std::min)(buffer.size(), image.words.size() - at));
      // The buffer holds a whole chunk, so staging cannot fail; were it to, the write fails.
      if (!staging::stage_words<Staging>(chunk, {buffer.data(), buffer.size()})) {
        written = false;
        break;
      }
      put(buffer.data(), chunk.size());
    }
  } else {
    put(image.words.data(), image.words.size());
  }
  written = std::fclose(out) == 0 && written;  // fclose flushes: a full disk shows here
  std::error_code ec;
  if (!written) {
    std::filesystem::remove(temporary, ec);
    return fail(file_error(errc::io, "write_image_file: write failed", name)
                    .with("bytes", total)
                    .fix("check free disk space"));
  }
  std::filesystem::rename(temporary, path, ec);  // readers never see a partial file
  if (ec) {
    std::filesystem::remove(temporary, ec);
    return fail(file_error(errc::io, "write_image_file: cannot replace the file", name)
                    .fix("check permissions on the destination"));
  }
  return {};
}

//! Reads and checks the image file at `path`: the header first (the checks of
//! `check_image_file_header` against the file's size), then the words straight into the
//! image's storage (in pieces on up to `threads` threads), then staged in place and summed
//! (`finish_image`).
template <class Staging>
expected<host_image> read_file(const std::filesystem::path& path, unsigned threads) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in)
    return fail(file_error(errc::io, "read_image_file: cannot open", name)
                    .fix("check the path and permissions"));
  const std::streamoff size = in.tellg();
  if (size < 0)
    return fail(file_error(errc::io, "read_image_file: cannot determine the file size", name)
                    .fix("pass a regular file"));
  const auto file_bytes = static_cast<std::uint64_t>(size);
  const auto read_failed = [&] {
    return fail(file_error(errc::io, "read_image_file: read failed", name)
                    .with("bytes", file_bytes)
                    .fix("check that the file is not being modified"));
  };
  in.seekg(0);
  std::array<std::byte, image_file_header_bytes> head;
  const std::size_t head_bytes =
      static_cast<std::size_t>(std::min<std::uint64_t>(file_bytes, head.size()));
  in.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head_bytes));
  if (!in) return read_failed();
  VYRE_TRY_ASSIGN(const auto header,
                  check_image_file_header<Staging>({head.data(), head_bytes}, file_bytes, name));
  VYRE_TRY_ASSIGN(auto storage, allocate_words(header.word_count, "image file: image words"));
  in.close();
  // Pieces of at least 4 MiB, one stream each on up to `threads` threads: the page faults of
  // the fresh storage and the copies out of the page cache are shared too. (A file replaced
  // between two opens mixes two files' words, which the checksum refuses.)
  const auto bytes = static_cast<std::size_t>(header.word_count * sizeof(std::uint32_t));
  auto* to = reinterpret_cast<char*>(storage.get());
  std::atomic<bool> read_ok{true};
  vyre::detail::parallel_ranges(
      threads, bytes, std::size_t{4} << 20, [&](std::size_t begin, std::size_t end) noexcept {
        try {
          std::ifstream piece(path, std::ios::binary);
          piece.seekg(static_cast<std::streamoff>(image_file_header_bytes + begin));
          piece.read(to + begin, static_cast<std::streamsize>(end - begin));
          if (!piece) read_ok.store(false, std::memory_order_relaxed);
        } catch (...) {  // the stream's buffer (std::bad_alloc)
          read_ok.store(false, std::memory_order_relaxed);
        }
      });
  if (!read_ok.load(std::memory_order_relaxed)) return read_failed();
  return finish_image<Staging>(header, std::move(storage), nullptr, threads, name);
}
}  // namespace detail

//! The bytes of an image file for `image` (validated first). `Staging` picks the word byte
//! order policy (`little_endian` is the file format; `forced_swap` exists for tests). Every
//! function here checks and sums large images on up to `threads` host threads (0: every core);
//! the bytes do not depend on it.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, std::vector<std::byte>> serialize_image(const image_ref& image,
                                                          unsigned threads = 0) {
  return apply_error_policy<OnError>(detail::serialize_image<Staging>(image, threads));
}

//! An image from the bytes of an image file; `source` names them in errors.
//! @throws vyre::error_exception see the file comment for the refused inputs.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, host_image> parse_image_file(cuda::std::span<const std::byte> bytes,
                                               std::string_view source = "image bytes",
                                               unsigned threads = 0) {
  return apply_error_policy<OnError>(detail::parse_image<Staging>(bytes, source, threads));
}

//! Writes `image` to `path` (through a new temporary file beside it and a rename, so a reader
//! never sees a partial file). `path` must be a regular file or not exist: a symbolic link, a
//! directory, a device, a FIFO or a socket there is refused, never replaced or written through.
//! @throws vyre::error_exception `errc::invalid_argument` naming the path when it exists and is
//!         not a regular file, `errc::io` naming the path, or `validate_image`'s errors.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, void> write_image_file(const std::filesystem::path& path, const image_ref& image,
                                         unsigned threads = 0) {
  return apply_error_policy<OnError>(detail::write_file<Staging>(path, image, threads));
}

//! Reads and checks an image file.
//! @throws vyre::error_exception `errc::io` naming the path, or the refusals of
//!         `parse_image_file`, each naming the path.
template <class OnError = on_error::throw_exception,
          staging::policy Staging = staging::little_endian>
result_t<OnError, host_image> read_image_file(const std::filesystem::path& path,
                                              unsigned threads = 0) {
  return apply_error_policy<OnError>(detail::read_file<Staging>(path, threads));
}

}  // namespace vyre::egraph
