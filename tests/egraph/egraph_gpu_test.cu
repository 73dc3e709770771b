// SPDX-License-Identifier: Apache-2.0
// The device-facing half of the host egraph layer: an image packed on the host, planned with
// plan_upload and staged little-endian, is read on the device through a by-value image_ref;
// row_signature and image_layout give the same answers in device code as on the host.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <vector>

#include <vyre/egraph.cuh>

#include "device_buffer.cuh"

namespace egraph_gpu_test {

//! Recomputes each row's signature from the device image and copies its group's e-class id.
VYRE_KERNEL void recompute_signatures(vyre::egraph::image_ref image, std::uint32_t* signatures,
                                      std::uint32_t* group_eclass) {
  namespace eg = vyre::egraph;
  const std::uint32_t r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= image.layout.row_count) return;
  const auto ops = image.column(eg::image_column::row_language_op_ids);
  const auto offsets = image.column(eg::image_column::row_children_offsets);
  const auto lens = image.column(eg::image_column::row_children_lens);
  const auto children = image.column(eg::image_column::children);
  signatures[r] = eg::row_signature(ops[r], children.subspan(offsets[r], lens[r]));
  // group_rows[i] for i in group g: the e-class of group g.
  const auto group_ids = image.column(eg::image_column::group_eclass_ids);
  const auto group_offsets = image.column(eg::image_column::group_offsets);
  const auto group_rows = image.column(eg::image_column::group_rows);
  for (std::uint32_t g = 0; g < image.layout.group_count; ++g)
    for (std::uint32_t i = group_offsets[g]; i < group_offsets[g + 1]; ++i)
      if (group_rows[i] == r) group_eclass[r] = group_ids[g];
}

VYRE_KERNEL void layout_on_device(std::uint64_t* out) {
  constexpr auto layout = vyre::egraph::image_layout::for_counts(3, 2, 2);
  out[0] = layout.offset(vyre::egraph::image_column::group_offsets);
  out[1] = layout.word_count();
  out[2] = layout.column(vyre::egraph::image_column::children).length;
}

}  // namespace egraph_gpu_test

namespace {
using namespace egraph_gpu_test;

using vyre_test::device_buffer;

vyre::egraph::snapshot random_snapshot(std::uint32_t rows, std::uint32_t classes) {
  std::mt19937_64 rng(7);
  vyre::egraph::snapshot snap;
  for (int op = 0; op < 5; ++op) snap.intern_op("op" + std::to_string(op));
  std::vector<std::uint32_t> ids(classes);
  for (auto& id : ids) id = static_cast<std::uint32_t>(rng());  // sparse ids
  std::vector<std::uint32_t> kids;
  for (std::uint32_t r = 0; r < rows; ++r) {
    kids.clear();
    for (std::uint32_t k = static_cast<std::uint32_t>(rng() % 4); k > 0; --k)
      kids.push_back(ids[rng() % classes]);
    snap.add_row(r < classes ? ids[r] : ids[rng() % classes], static_cast<std::uint32_t>(rng() % 5),
                 {kids.data(), kids.size()});
  }
  return snap;
}
}  // namespace

TEST_CASE("egraph image: device reads of an uploaded image match the host", "[egraph][gpu]") {
  namespace eg = vyre::egraph;
  const auto snap = random_snapshot(3000, 700);
  const auto plan = eg::plan_upload(eg::pack(snap));
  const auto words = plan.words();
  std::vector<std::uint32_t> staged(words.size());
  REQUIRE(vyre::staging::stage_words<vyre::staging::little_endian>(words,
                                                                   {staged.data(), staged.size()}));

  device_buffer<std::uint32_t> image_words(words.size());
  REQUIRE(vyre::cuda_check(
      cudaMemcpy(image_words.ptr, staged.data(), plan.total_bytes(), cudaMemcpyHostToDevice),
      "upload image"));
  const std::uint32_t rows = plan.layout().words.row_count;
  device_buffer<std::uint32_t> signatures(rows);
  device_buffer<std::uint32_t> group_eclass(rows);
  REQUIRE(vyre::cuda_check(cudaMemset(signatures.ptr, 0xA5, rows * 4u), "poison signatures"));
  REQUIRE(vyre::cuda_check(cudaMemset(group_eclass.ptr, 0xA5, rows * 4u), "poison groups"));
  // The copy and memsets run on the legacy stream and may return early: wait for them.
  REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "upload and poison"));

  const eg::image_ref host_image{{image_words.ptr, words.size()}, plan.layout().words};
  recompute_signatures<<<(rows + 127) / 128, 128>>>(host_image, signatures.ptr, group_eclass.ptr);
  REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch recompute_signatures"));
  REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "run recompute_signatures"));

  std::vector<std::uint32_t> host_signatures(rows), host_groups(rows);
  REQUIRE(vyre::cuda_check(
      cudaMemcpy(host_signatures.data(), signatures.ptr, rows * 4u, cudaMemcpyDeviceToHost),
      "download signatures"));
  REQUIRE(vyre::cuda_check(
      cudaMemcpy(host_groups.data(), group_eclass.ptr, rows * 4u, cudaMemcpyDeviceToHost),
      "download groups"));
  const auto expected_signatures = plan.image().column(eg::image_column::row_signatures);
  for (std::uint32_t r = 0; r < rows; ++r) {
    INFO("row " << r);
    REQUIRE(host_signatures[r] == expected_signatures[r]);
    REQUIRE(host_groups[r] == snap.rows()[r].eclass);
  }
}

TEST_CASE("egraph image: layout arithmetic is the same in device code", "[egraph][gpu]") {
  device_buffer<std::uint64_t> out(3);
  REQUIRE(vyre::cuda_check(cudaMemset(out.ptr, 0xFF, 3 * sizeof(std::uint64_t)), "poison"));
  layout_on_device<<<1, 1>>>(out.ptr);
  REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch layout_on_device"));
  std::uint64_t host[3] = {};
  REQUIRE(vyre::cuda_check(cudaMemcpy(host, out.ptr, sizeof(host), cudaMemcpyDeviceToHost),
                           "download layout"));
  CHECK(host[0] == 19);  // byte 76
  CHECK(host[1] == 25);
  CHECK(host[2] == 2);
}
