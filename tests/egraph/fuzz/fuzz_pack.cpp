// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: an arbitrary (raw, unchecked) snapshot goes through validate and pack; a
// snapshot that validates must pack, and its image must pass validate_image and round-trip
// through the image file format.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <vyre/egraph.hpp>

namespace {
struct reader {
  const std::uint8_t* data;
  std::size_t size;
  std::uint32_t next() {
    std::uint32_t word = 0;
    const std::size_t take = size < 4 ? size : 4;
    std::memcpy(&word, data, take);
    data += take;
    size -= take;
    return word;
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eg = vyre::egraph;
  using expect = vyre::on_error::return_expected;
  if (size < 4) return 0;
  reader in{data, size};
  const std::uint32_t shape = in.next();
  const std::uint32_t ops = 1 + (shape & 7u);
  const std::uint32_t child_entries = (shape >> 3) & 63u;
  // Small id space in half the inputs (dense path), raw u32 ids otherwise (sparse path).
  const bool dense_ids = (shape >> 9) & 1u;
  eg::snapshot snap;
  for (std::uint32_t op = 0; op < ops; ++op) snap.intern_op("op" + std::to_string(op));
  std::uint32_t children[64];
  for (std::uint32_t i = 0; i < child_entries; ++i)
    children[i] = dense_ids ? in.next() % 97u : in.next();
  (void)snap.append_children({children, child_entries});
  while (in.size >= 16) {
    eg::row raw{in.next(), in.next(), in.next(), in.next()};
    if (dense_ids) {
      raw.eclass %= 97u;
      raw.op %= ops + 1;  // sometimes unknown
      raw.children_offset %= child_entries + 2;
      raw.children_length %= 6u;
    }
    (void)snap.add_raw_row(raw);
  }
  const auto valid = snap.validate<expect>();
  auto image = eg::pack<expect>(snap);
  if (valid.has_value() != image.has_value()) std::abort();
  if (!image) return 0;
  if (!eg::validate_image(image->ref())) std::abort();
  const auto bytes = eg::serialize_image<expect>(image->ref());
  if (!bytes) std::abort();
  const auto back = eg::parse_image_file<expect>({bytes->data(), bytes->size()});
  if (!back || back->words().size() != image->words().size() ||
      std::memcmp(back->words().data(), image->words().data(), image->words().size_bytes()) != 0)
    std::abort();
  return 0;
}
