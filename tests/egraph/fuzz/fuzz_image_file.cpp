// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an image file. The reader must refuse or accept, never
// crash; an accepted image must pass validate_image and re-serialize to the same bytes (for a
// version 1 file: the bytes of the current version).
//
// The first input byte picks a mode. Bit 1: the row signatures are recomputed and patched in
// (when the header's counts fit the bytes), so that mutations reach the group checks behind
// them. Bit 0: the checksum is recomputed and patched in, so that mutations reach
// validate_image instead of stopping at the checksum. Mode 0 keeps the bytes as they are.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <vyre/egraph.hpp>

#include "../image_file_checksum.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eg = vyre::egraph;
  using expect = vyre::on_error::return_expected;
  if (size == 0) return 0;
  const bool patch_checksum = (data[0] & 1u) != 0;
  const bool patch_signatures = (data[0] & 2u) != 0;
  std::vector<std::byte> bytes(size - 1);
  if (size > 1) std::memcpy(bytes.data(), data + 1, size - 1);
  if (patch_signatures && bytes.size() >= eg::image_file_header_bytes && bytes.size() % 4 == 0) {
    std::vector<std::uint32_t> words(bytes.size() / 4);
    std::memcpy(words.data(), bytes.data(), bytes.size());
    const auto layout = eg::image_layout::for_counts(words[4], words[5], words[6]);
    if (layout.word_count() + eg::image_file_header_words == words.size()) {
      std::uint32_t* image = words.data() + eg::image_file_header_words;
      for (std::uint32_t r = 0; r < layout.row_count; ++r) {
        const std::uint32_t offset =
            image[layout.offset(eg::image_column::row_children_offsets) + r];
        const std::uint32_t length = image[layout.offset(eg::image_column::row_children_lens) + r];
        if (std::uint64_t{offset} + length > layout.child_count) continue;
        image[layout.offset(eg::image_column::row_signatures) + r] =
            eg::row_signature(image[layout.offset(eg::image_column::row_language_op_ids) + r],
                              image + layout.offset(eg::image_column::children) + offset, length);
      }
      std::memcpy(bytes.data(), words.data(), bytes.size());
    }
  }
  const auto sign = [&] {
    const std::uint64_t sum = vyre_test::documented_image_file_checksum(bytes.data(), bytes.size());
    const std::uint32_t halves[2] = {static_cast<std::uint32_t>(sum),
                                     static_cast<std::uint32_t>(sum >> 32)};
    std::memcpy(bytes.data() + 40, halves, 8);
  };
  if (patch_checksum && bytes.size() >= eg::image_file_header_bytes && bytes.size() % 4 == 0)
    sign();
  const auto image = eg::parse_image_file<expect>({bytes.data(), bytes.size()}, "fuzz input");
  if (!image) return 0;
  if (!eg::validate_image(image->ref())) std::abort();
  // What the current version writes for it: a version 1 input, upgraded and signed again.
  if (bytes[8] == std::byte{1}) {
    bytes[8] = std::byte{static_cast<unsigned char>(eg::image_file_version)};
    sign();
  }
  const auto again = eg::serialize_image<expect>(image->ref());
  if (!again || again->size() != bytes.size() ||
      std::memcmp(again->data(), bytes.data(), bytes.size()) != 0)
    std::abort();
  return 0;
}
