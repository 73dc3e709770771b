// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: arbitrary bytes as an image file. The reader must refuse or accept, never
// crash; an accepted image must pass validate_image and re-serialize to the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <vyre/egraph.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eg = vyre::egraph;
  using expect = vyre::on_error::return_expected;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  const auto image = eg::parse_image_file<expect>({bytes, size}, "fuzz input");
  if (!image) return 0;
  if (!eg::validate_image(image->ref())) std::abort();
  const auto again = eg::serialize_image<expect>(image->ref());
  if (!again || again->size() != size || std::memcmp(again->data(), data, size) != 0) std::abort();
  return 0;
}
