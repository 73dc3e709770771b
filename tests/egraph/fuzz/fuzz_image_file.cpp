// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an image file. The reader must refuse or accept, never
// crash; an accepted image must pass validate_image and re-serialize to the same bytes.
//
// The first input byte picks a mode: even = the bytes as they are (header and checksum
// checks); odd = the checksum is recomputed and patched in first, so that mutations reach the
// image checks behind it (validate_image) instead of stopping at the checksum.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <vyre/egraph.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eg = vyre::egraph;
  using expect = vyre::on_error::return_expected;
  if (size == 0) return 0;
  const bool patch_checksum = (data[0] & 1u) != 0;
  std::vector<std::byte> bytes(size - 1);
  if (size > 1) std::memcpy(bytes.data(), data + 1, size - 1);
  if (patch_checksum && bytes.size() >= eg::image_file_header_bytes && bytes.size() % 4 == 0) {
    // The documented checksum: FNV-1a over u32 words 0..9 and then the image words.
    std::uint64_t sum = 0xCBF29CE484222325ull;
    for (std::size_t i = 0; i < bytes.size() / 4; ++i) {
      if (i == 10 || i == 11) continue;
      std::uint32_t word;
      std::memcpy(&word, bytes.data() + 4 * i, 4);
      sum = (sum ^ word) * 0x100000001B3ull;
    }
    const std::uint32_t halves[2] = {static_cast<std::uint32_t>(sum),
                                     static_cast<std::uint32_t>(sum >> 32)};
    std::memcpy(bytes.data() + 40, halves, 8);
  }
  const auto image = eg::parse_image_file<expect>({bytes.data(), bytes.size()}, "fuzz input");
  if (!image) return 0;
  if (!eg::validate_image(image->ref())) std::abort();
  const auto again = eg::serialize_image<expect>(image->ref());
  if (!again || again->size() != bytes.size() ||
      std::memcmp(again->data(), bytes.data(), bytes.size()) != 0)
    std::abort();
  return 0;
}
