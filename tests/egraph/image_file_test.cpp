// SPDX-License-Identifier: Apache-2.0
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#if defined(__unix__)
#include <sys/stat.h>  // mkfifo
#endif

#include <catch2/catch.hpp>

#include <vyre/egraph.hpp>

#include "image_file_checksum.hpp"

namespace eg = vyre::egraph;
using expect = vyre::on_error::return_expected;

namespace {
eg::host_image sample_image() {
  return eg::pack(eg::snapshot::build(
      {{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}, {7, "neg", {2}}, {1, "mul", {7, 1}}}));
}
std::uint32_t word_of(const std::vector<std::byte>& bytes, std::size_t index) {
  std::uint32_t word;
  std::memcpy(&word, bytes.data() + index * 4, 4);
  return word;  // the tests run on little-endian hosts (checked below)
}
void set_word(std::vector<std::byte>& bytes, std::size_t index, std::uint32_t word) {
  std::memcpy(bytes.data() + index * 4, &word, 4);
}
std::uint64_t documented_checksum(const std::vector<std::byte>& bytes) {
  return vyre_test::documented_image_file_checksum(bytes.data(), bytes.size());
}
// Stores documented_checksum in words 10 and 11.
void sign(std::vector<std::byte>& bytes) {
  const std::uint64_t sum = documented_checksum(bytes);
  set_word(bytes, 10, static_cast<std::uint32_t>(sum));
  set_word(bytes, 11, static_cast<std::uint32_t>(sum >> 32));
}
vyre::error refused(const std::vector<std::byte>& bytes) {
  const auto result = eg::parse_image_file<expect>({bytes.data(), bytes.size()}, "sample.vyreimg");
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().subject() == "sample.vyreimg");
  return result.error();
}
}  // namespace

TEST_CASE("image file: bytes round-trip and the header is as documented", "[egraph][file]") {
  static_assert(std::endian::native == std::endian::little, "these tests poke little-endian words");
  const auto image = sample_image();
  const auto bytes = eg::serialize_image(image.ref());
  REQUIRE(bytes.size() == eg::image_file_header_bytes + image.words().size_bytes());
  CHECK(word_of(bytes, 0) == 0x45525956u);
  CHECK(std::memcmp(bytes.data(), "VYREEGIM", 8) == 0);
  CHECK(word_of(bytes, 2) == eg::image_file_version);
  CHECK(eg::image_file_version == 2u);
  CHECK(word_of(bytes, 3) == 12u);
  CHECK(word_of(bytes, 4) == image.layout().row_count);
  CHECK(word_of(bytes, 5) == image.layout().child_count);
  CHECK(word_of(bytes, 6) == image.layout().group_count);
  CHECK(word_of(bytes, 8) == image.words().size());
  CHECK(word_of(bytes, 12) == image.words()[0]);
  const auto back = eg::parse_image_file({bytes.data(), bytes.size()});
  CHECK(back.layout() == image.layout());
  CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin()));
}

// docs/image_format.md, "Image files": the worked example's file, every word as documented.
TEST_CASE("image file: the worked example's file, word for word", "[egraph][file]") {
  const auto image =
      eg::pack(eg::snapshot::build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}}));
  const auto bytes = eg::serialize_image(image.ref());
  const std::vector<std::uint32_t> header{0x45525956u, 0x4D494745u, 2, 12, 3, 2, 2, 0, 25, 0};
  const std::uint64_t checksum = 0xA937E306B795CF4Eull;  // computed independently (Python)
  REQUIRE(bytes.size() == 148);
  for (std::size_t i = 0; i < header.size(); ++i) CHECK(word_of(bytes, i) == header[i]);
  CHECK(word_of(bytes, 10) == static_cast<std::uint32_t>(checksum));
  CHECK(word_of(bytes, 11) == static_cast<std::uint32_t>(checksum >> 32));
  // The image words themselves are pinned in pack_test.cpp.
  for (std::size_t i = 0; i < image.words().size(); ++i)
    CHECK(word_of(bytes, 12 + i) == image.words()[i]);
  CHECK(documented_checksum(bytes) == checksum);
}

// Version 1 files (one FNV-1a chain over every word) still read, to the same image.
TEST_CASE("image file: a version 1 file reads back, and its checksum is still checked",
          "[egraph][file]") {
  const auto image = sample_image();
  auto bytes = eg::serialize_image(image.ref());
  set_word(bytes, 2, 1);
  sign(bytes);
  // The worked example's version 1 checksum, as version 1 documented it.
  auto example = eg::serialize_image(
      eg::pack(eg::snapshot::build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}})).ref());
  set_word(example, 2, 1);
  CHECK(documented_checksum(example) == 0x8155124C2A2356B3ull);
  const auto back = eg::parse_image_file({bytes.data(), bytes.size()});
  CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin(),
                   image.words().end()));
  set_word(bytes, 12, word_of(bytes, 12) ^ 4u);
  CHECK_THAT(refused(bytes).message(), Catch::Contains("checksum mismatch"));
}

TEST_CASE("image file: write and read a file", "[egraph][file]") {
  const auto image = sample_image();
  const auto path = std::filesystem::temp_directory_path() / "vyre_egraph_image_file_test.vyreimg";
  eg::write_image_file(path, image.ref());
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  const auto back = eg::read_image_file(path);
  CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin()));
  std::filesystem::remove(path);

  const auto missing = eg::read_image_file<expect>(path);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == vyre::errc::io);
  CHECK_THAT(std::string(missing.error().subject()),
             Catch::Contains("vyre_egraph_image_file_test"));
  const auto unwritable = eg::write_image_file<expect>("/nonexistent-dir/x.vyreimg", image.ref());
  REQUIRE_FALSE(unwritable.has_value());
  CHECK(unwritable.error().code() == vyre::errc::io);
  CHECK_THROWS_AS(eg::read_image_file(path), vyre::error_exception);
}

TEST_CASE("image file: a link, a directory or a FIFO destination is refused, never replaced",
          "[egraph][file]") {
  // A rename over the destination would replace a symbolic link (and, run as root, a device such
  // as /dev/null) instead of writing where it points: such destinations are refused, naming the
  // path, and a regular one is replaced through a new temporary file beside it.
  namespace fs = std::filesystem;
  const auto image = sample_image();
  const fs::path folder = fs::temp_directory_path() / "vyre_egraph_image_file_destinations";
  fs::remove_all(folder);
  fs::create_directories(folder / "directory");
  const fs::path target = folder / "target";
  std::ofstream(target) << "keep";
  fs::create_symlink(target, folder / "link");
  fs::create_symlink(folder / "missing", folder / "dangling");
  std::vector<fs::path> refused_paths{folder / "link", folder / "dangling", folder / "directory"};
#if defined(__unix__)
  if (::mkfifo((folder / "fifo").c_str(), 0600) == 0) refused_paths.push_back(folder / "fifo");
#endif
  for (const fs::path& path : refused_paths) {
    INFO(path);
    const auto written = eg::write_image_file<expect>(path, image.ref());
    REQUIRE_FALSE(written.has_value());
    CHECK(written.error().code() == vyre::errc::invalid_argument);
    CHECK(written.error().subject() == path.string());
    CHECK_THAT(written.error().message(),
               Catch::Contains("symbolic link") || Catch::Contains("not a regular file"));
  }
  CHECK(fs::read_symlink(folder / "link") == target);
  CHECK(fs::file_size(target) == 4);
  CHECK_FALSE(fs::exists(folder / "missing"));
  CHECK(fs::is_empty(folder / "directory"));
  const fs::path regular = folder / "regular.vyreimg";
  eg::write_image_file(regular, image.ref());  // created
  eg::write_image_file(regular, image.ref());  // replaced
  CHECK(fs::is_regular_file(regular));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(folder)) ++entries;
  CHECK(entries == refused_paths.size() + 2);  // + target and regular: no temporary file left
  fs::remove_all(folder);
}

TEST_CASE("image file: staging policy decides the byte order", "[egraph][file]") {
  const auto image = sample_image();
  const auto swapped =
      eg::serialize_image<vyre::on_error::throw_exception, vyre::staging::forced_swap>(image.ref());
  CHECK(std::memcmp(swapped.data(), "ERYVMIGE", 8) == 0);
  const auto back =
      eg::parse_image_file<vyre::on_error::throw_exception, vyre::staging::forced_swap>(
          {swapped.data(), swapped.size()});
  CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin()));
  const auto err = refused(swapped);
  CHECK(err.code() == vyre::errc::corrupt_data);
  CHECK_THAT(err.message(), Catch::Contains("byte-swapped"));
}

TEST_CASE("image file: truncated, corrupt, wrong-version and inconsistent files are refused",
          "[egraph][file]") {
  const auto good = eg::serialize_image(sample_image().ref());
  SECTION("empty and truncated header") {
    CHECK_THAT(refused({}).message(), Catch::Contains("truncated header"));
    CHECK(refused({good.begin(), good.begin() + 47}).value_or("bytes", 0) == 47);
  }
  SECTION("every truncation is refused") {
    for (std::size_t size = 0; size < good.size(); ++size)
      CHECK(refused({good.begin(), good.begin() + static_cast<std::ptrdiff_t>(size)}).code() ==
            vyre::errc::corrupt_data);
  }
  SECTION("truncated words and trailing bytes") {
    CHECK_THAT(refused({good.begin(), good.end() - 4}).message(),
               Catch::Contains("truncated image"));
    auto longer = good;
    longer.push_back(std::byte{0});
    CHECK_THAT(refused(longer).message(), Catch::Contains("trailing bytes"));
  }
  SECTION("bad magic") {
    auto bytes = good;
    set_word(bytes, 0, 0x12345678u);
    CHECK_THAT(refused(bytes).message(), Catch::Contains("bad magic"));
  }
  SECTION("wrong version") {
    for (const std::uint32_t version : {0u, 3u, 0xFFFFFFFFu}) {
      auto bytes = good;
      set_word(bytes, 2, version);
      const auto err = refused(bytes);
      // Bad input (corrupt_data), not a missing feature of the machine (unsupported).
      CHECK(err.code() == vyre::errc::corrupt_data);
      CHECK_THAT(err.message(), Catch::Contains("unsupported format version"));
      CHECK(err.value_or("version", 7) == version);
      CHECK(err.value_or("oldest_supported", 0) == 1);
      CHECK(err.value_or("newest_supported", 0) == 2);
    }
  }
  SECTION("malformed header") {
    auto bytes = good;
    set_word(bytes, 7, 1);
    CHECK_THAT(refused(bytes).message(), Catch::Contains("malformed header"));
  }
  SECTION("counts that do not add up") {
    auto bytes = good;
    set_word(bytes, 6, word_of(bytes, 6) + 1);
    const auto err = refused(bytes);
    CHECK(err.code() == vyre::errc::invalid_layout);
    CHECK(err.value_or("groups", 0) == word_of(good, 6) + 1);
    set_word(bytes, 6, word_of(good, 6));
    set_word(bytes, 9, 1);  // word count high half
    CHECK(refused(bytes).code() == vyre::errc::invalid_layout);
  }
  SECTION("consistent counts but too large for the file") {
    auto bytes = good;
    set_word(bytes, 4, 0xFFFFFFFFu);
    const std::uint64_t words =
        6ull * 0xFFFFFFFFull + word_of(good, 5) + 2ull * word_of(good, 6) + 1;
    set_word(bytes, 8, static_cast<std::uint32_t>(words));
    set_word(bytes, 9, static_cast<std::uint32_t>(words >> 32));
    CHECK_THAT(refused(bytes).message(), Catch::Contains("truncated image"));
  }
  SECTION("every flipped bit is caught") {
    for (std::size_t byte = 0; byte < good.size(); ++byte)
      for (int bit = 0; bit < 8; bit += 3) {
        auto bytes = good;
        bytes[byte] ^= std::byte(1u << bit);
        const auto result = eg::parse_image_file<expect>({bytes.data(), bytes.size()});
        CHECK_FALSE(result.has_value());
      }
  }
  SECTION("checksum mismatch names both sums") {
    auto bytes = good;
    set_word(bytes, 12, word_of(bytes, 12) ^ 0x10u);
    const auto err = refused(bytes);
    CHECK_THAT(err.message(), Catch::Contains("checksum"));
    CHECK(err.value_or("stored", 0) != err.value_or("computed", 0));
  }
  SECTION("valid checksum over an invalid image") {
    // Re-sign a corrupted image: the checksum passes and validate_image refuses it.
    auto bytes = good;
    const std::size_t group_offsets_word =
        12 + sample_image().layout().offset(eg::image_column::group_offsets);
    set_word(bytes, group_offsets_word + 1, 0);
    sign(bytes);
    const auto err = refused(bytes);
    CHECK(err.code() == vyre::errc::corrupt_data);
    CHECK_THAT(err.message(), Catch::Contains("group offsets"));
  }
}

namespace {
// A chain of `rows` e-nodes, one child each.
eg::host_image chain_image(std::uint32_t rows) {
  std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes;
  nodes.emplace_back(0u, "lit", std::vector<std::uint32_t>{});
  for (std::uint32_t i = 1; i < rows; ++i)
    nodes.emplace_back(i, "f", std::vector<std::uint32_t>{i - 1});
  return eg::pack(eg::snapshot::from_tuples(nodes));
}
std::vector<std::byte> contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> chars{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}
void overwrite(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}
// The file reader refuses `bytes` as a file with the error parse_image_file gives for them.
vyre::error file_refused(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
  overwrite(path, bytes);
  const auto from_file = eg::read_image_file<expect>(path);
  REQUIRE_FALSE(from_file.has_value());
  const auto from_bytes = eg::parse_image_file<expect>({bytes.data(), bytes.size()}, path.string());
  REQUIRE_FALSE(from_bytes.has_value());
  CHECK(from_file.error().code() == from_bytes.error().code());
  CHECK(from_file.error().message() == from_bytes.error().message());
  return from_file.error();
}
}  // namespace

// A byte-swapped file's words pass through a 1 MiB buffer (2^18 words), and the checksum cuts
// them into 2^16-word chunks: this image spans three buffers and nine chunks, the last ones
// partial. The file must be byte for byte what serialize_image gives, and the checksum the
// documented one.
TEMPLATE_TEST_CASE("image file: a multi-chunk image is written and read back exactly",
                   "[egraph][file]", vyre::staging::little_endian, vyre::staging::forced_swap) {
  using throws = vyre::on_error::throw_exception;
  const auto image = chain_image(60000);
  REQUIRE(image.words().size() > 2 * (std::size_t{1} << 18));
  REQUIRE(image.words().size() % (std::size_t{1} << 18) != 0);
  const auto path = std::filesystem::temp_directory_path() /
                    // One file per byte order: CTest runs the two instantiations at once.
                    (std::is_same_v<TestType, vyre::staging::forced_swap>
                         ? "vyre_egraph_image_file_chunks_swap.vyreimg"
                         : "vyre_egraph_image_file_chunks.vyreimg");
  eg::write_image_file<throws, TestType>(path, image.ref());
  CHECK_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  CHECK(contents(path) == eg::serialize_image<throws, TestType>(image.ref()));
  if constexpr (std::is_same_v<TestType, vyre::staging::little_endian>) {
    const auto bytes = contents(path);
    CHECK(documented_checksum(bytes) ==
          (word_of(bytes, 10) | std::uint64_t{word_of(bytes, 11)} << 32));
  }
  const auto back = eg::read_image_file<throws, TestType>(path);
  CHECK(back.layout() == image.layout());
  CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin(),
                   image.words().end()));
  std::filesystem::remove(path);
}

TEST_CASE("image file: a file that is truncated or too long is refused as its bytes are",
          "[egraph][file]") {
  const auto image = chain_image(60000);
  const auto good = eg::serialize_image(image.ref());
  const auto path = std::filesystem::temp_directory_path() / "vyre_egraph_image_file_sizes.vyreimg";
  SECTION("truncated inside the payload") {
    const std::vector<std::byte> bytes(good.begin(), good.begin() + 48 + 300000 * 4 + 2);
    const auto err = file_refused(path, bytes);
    CHECK(err.code() == vyre::errc::corrupt_data);
    CHECK_THAT(err.message(), Catch::Contains("truncated image words"));
    CHECK(err.value_or("bytes", 0) == bytes.size());
    CHECK(err.value_or("expected_bytes", 0) == good.size());
    CHECK(err.subject() == path.string());
  }
  SECTION("a trailing byte") {
    auto bytes = good;
    bytes.push_back(std::byte{0});
    const auto err = file_refused(path, bytes);
    CHECK_THAT(err.message(), Catch::Contains("trailing bytes"));
    CHECK(err.value_or("bytes", 0) == good.size() + 1);
    CHECK(err.value_or("expected_bytes", 0) == good.size());
  }
  SECTION("empty and a truncated header") {
    CHECK_THAT(file_refused(path, {}).message(), Catch::Contains("truncated header"));
    CHECK(file_refused(path, {good.begin(), good.begin() + 47}).value_or("bytes", 0) == 47);
  }
  SECTION("a header refusal and a checksum mismatch in the last chunk") {
    auto bytes = good;
    set_word(bytes, 2, 3);
    CHECK(file_refused(path, bytes).code() == vyre::errc::corrupt_data);
    bytes = good;
    set_word(bytes, bytes.size() / 4 - 1, word_of(bytes, bytes.size() / 4 - 1) ^ 1u);
    CHECK_THAT(file_refused(path, bytes).message(), Catch::Contains("checksum mismatch"));
  }
  std::filesystem::remove(path);
}

// Threads split the checksum and the checks, never the answer: the same bytes, and the same
// first bad item named, on one thread and on many.
TEST_CASE("image file: threads change neither the bytes nor the error", "[egraph][file]") {
  const auto image = chain_image(300000);  // rows, children and chunks enough for 4+ threads
  const auto one = eg::serialize_image(image.ref(), 1);
  for (const unsigned threads : {0u, 2u, 3u, 8u}) {
    CHECK(eg::serialize_image(image.ref(), threads) == one);
    const auto back = eg::parse_image_file({one.data(), one.size()}, "threads", threads);
    CHECK(std::equal(back.words().begin(), back.words().end(), image.words().begin(),
                     image.words().end()));
  }
  const eg::image_layout layout = image.layout();
  std::vector<std::uint32_t> words(image.words().begin(), image.words().end());
  const auto validate = [&](unsigned threads) {
    const auto valid =
        eg::validate_image(eg::image_ref{{words.data(), words.size()}, layout}, threads);
    REQUIRE_FALSE(valid.has_value());
    return valid.error();
  };
  const auto same_on_all_threads = [&](const char* needle, const char* key, std::uint64_t value) {
    for (const unsigned threads : {1u, 2u, 3u, 8u}) {
      const auto err = validate(threads);
      CHECK_THAT(err.message(), Catch::Contains(needle));
      CHECK(err.value_or(key, 0) == value);
    }
  };
  // Two bad signatures, in different threads' ranges: the first is named.
  const std::size_t signatures = layout.offset(eg::image_column::row_signatures);
  words[signatures + 250000] ^= 1u;
  words[signatures + 100] ^= 1u;
  same_on_all_threads("signature", "row", 100);
  words.assign(image.words().begin(), image.words().end());
  // Two children naming no group.
  const std::size_t children = layout.offset(eg::image_column::children);
  words[children + 299000] = 0xFFFFFFF0u;
  words[children + 70000] = 0xFFFFFFF1u;
  // The rows' signatures would fail first: sign the changed rows again.
  const std::size_t ops = layout.offset(eg::image_column::row_language_op_ids);
  const std::size_t offsets = layout.offset(eg::image_column::row_children_offsets);
  const std::size_t lens = layout.offset(eg::image_column::row_children_lens);
  for (std::uint32_t r = 0; r < layout.row_count; ++r)
    words[signatures + r] = eg::row_signature(
        words[ops + r], words.data() + children + words[offsets + r], words[lens + r]);
  same_on_all_threads("no group", "child_entry", 70000);
}
