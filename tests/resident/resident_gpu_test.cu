// SPDX-License-Identifier: Apache-2.0
// The resident e-graph image: one-copy upload (pageable, pinned, byte-swapped), byte-identical
// round trips, user kernels over the checked kernel view, and every rejection path.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <vyre/egraph.cuh>

#include "require_ok.cuh"

namespace eg = vyre::egraph;

using default_policies = vyre::policies<>;
using swapped_policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::forced_swap>;
using expected_policies = vyre::policies<vyre::alloc::direct, vyre::staging::little_endian,
                                         vyre::on_error::return_expected>;

namespace resident_gpu_test {

// Per op: rows with that op. Per row: device-recomputed signature, whether the row's group
// (found through find_group on its own e-class) lists it, and the children sum.
VYRE_KERNEL void inspect_rows(eg::kernel_view view, std::uint32_t* per_op,
                              std::uint32_t* signatures, std::uint32_t* in_own_group) {
  for (std::uint32_t row = blockIdx.x * blockDim.x + threadIdx.x; row < view.row_count();
       row += gridDim.x * blockDim.x) {
    atomicAdd(&per_op[view.op(row)], 1u);
    signatures[row] = eg::row_signature(view.op(row), view.children(row));
    const std::uint32_t group = view.find_group(view.eclass(row));
    std::uint32_t found = 0;
    if (group != eg::invalid_id) {
      const eg::group_entry entry = view.group(group);
      for (std::uint32_t member : entry.rows) found |= member == row ? 1u : 0u;
      found &= entry.eclass == view.eclass(row) ? 1u : 0u;
    }
    in_own_group[row] = found;
  }
}

// Every group's rows carry the group's e-class; ids strictly ascend.
VYRE_KERNEL void inspect_groups(eg::kernel_view view, std::uint32_t* bad_groups) {
  for (std::uint32_t g = blockIdx.x * blockDim.x + threadIdx.x; g < view.group_count();
       g += gridDim.x * blockDim.x) {
    const eg::group_entry entry = view.group_nocheck(g);
    bool ok = entry.eclass == view.group(g).eclass;
    for (std::uint32_t row : entry.rows) ok = ok && view.eclass_nocheck(row) == entry.eclass;
    if (g > 0) ok = ok && view.group_nocheck(g - 1).eclass < entry.eclass;
    if (!ok) atomicAdd(bad_groups, 1u);
  }
}

// Deliberately out of bounds: checked accessors must return neutral values and record.
VYRE_KERNEL void misuse(eg::kernel_view view, std::uint32_t* out) {
  out[0] = view.eclass(view.row_count());
  out[1] = view.group(view.group_count() + 5).eclass;
  out[2] = static_cast<std::uint32_t>(view.children(view.row_count() + 1).size());
  out[3] = view.find_group(0xFFFFFFFEu);
}

}  // namespace resident_gpu_test

namespace {

using vyre_test::acquire_or_fail;

struct random_graph {
  eg::snapshot snapshot;
  std::uint32_t op_count = 0;
};

// `rows` rows over `classes` e-classes whose ids are spread over `id_space`; children name
// existing classes. Deterministic per seed.
random_graph make_graph(std::uint32_t seed, std::uint32_t rows, std::uint32_t classes,
                        std::uint32_t id_space) {
  std::mt19937 rng(seed);
  random_graph graph;
  graph.op_count = 1 + seed % 7;
  for (std::uint32_t op = 0; op < graph.op_count; ++op)
    graph.snapshot.intern_op("op" + std::to_string(op));
  std::vector<std::uint32_t> ids(classes);
  std::uniform_int_distribution<std::uint32_t> any_id(0, id_space - 1);
  for (auto& id : ids) id = any_id(rng);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::uniform_int_distribution<std::size_t> pick(0, ids.size() - 1);
  std::uniform_int_distribution<std::uint32_t> arity(0, 4);
  // Every class gets a row first, so every child names a class that has a row.
  for (std::uint32_t r = 0; r < rows; ++r) {
    const std::uint32_t eclass = r < ids.size() ? ids[r] : ids[pick(rng)];
    std::vector<std::uint32_t> children(arity(rng));
    for (auto& child : children) child = ids[pick(rng)];
    graph.snapshot.add_row(eclass, static_cast<std::uint32_t>(rng() % graph.op_count),
                           cuda::std::span<const std::uint32_t>(children.data(), children.size()));
  }
  return graph;
}

template <class T>
struct device_array {
  T* ptr = nullptr;
  std::size_t count = 0;
  explicit device_array(std::size_t n) : count(n) {
    REQUIRE(vyre::cuda_check(cudaMalloc(&ptr, std::max<std::size_t>(n, 1) * sizeof(T)), "alloc"));
    REQUIRE(
        vyre::cuda_check(cudaMemset(ptr, 0xCD, std::max<std::size_t>(n, 1) * sizeof(T)), "poison"));
    // cudaMemset is not ordered before the tests' non-blocking streams: wait for it.
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "poison"));
  }
  ~device_array() { cudaFree(ptr); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  void zero() {
    REQUIRE(vyre::cuda_check(cudaMemset(ptr, 0, count * sizeof(T)), "zero"));
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "zero"));  // as the constructor's poison
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count);
    REQUIRE(vyre::cuda_check(
        cudaMemcpy(host.data(), ptr, count * sizeof(T), cudaMemcpyDeviceToHost), "download"));
    return host;
  }
};

// make_graph(seed, rows, classes, id_space) packed, and uploaded to `gpu` (errors as values;
// a failed upload fails the test).
struct uploaded_graph {
  eg::host_image image;
  eg::resident_image resident;
};
template <class Backend>
uploaded_graph upload_graph(Backend& gpu, std::uint32_t seed, std::uint32_t rows,
                            std::uint32_t classes, std::uint32_t id_space) {
  eg::host_image image = eg::pack(make_graph(seed, rows, classes, id_space).snapshot);
  auto resident = gpu.upload(image);
  REQUIRE(resident.has_value());
  return {std::move(image), std::move(*resident)};
}

bool same_words(const eg::host_image& a, const eg::host_image& b) {
  const auto x = a.words();
  const auto y = b.words();
  return a.layout() == b.layout() && x.size() == y.size() &&
         (x.empty() || std::memcmp(x.data(), y.data(), x.size_bytes()) == 0);
}

}  // namespace

TEST_CASE("upload then download is byte-identical on many random images", "[resident][gpu]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  const auto before = gpu.telemetry().snapshot();
  std::uint64_t uploads = 0;
  for (std::uint32_t seed = 0; seed < 40; ++seed) {
    const std::uint32_t rows = seed == 0 ? 0 : (seed * 997u) % 20000u + 1u;
    const std::uint32_t classes = std::max(1u, rows / (1 + seed % 4));
    const std::uint32_t space = seed % 2 == 0 ? classes * 2 : 0xFFFFFFF0u;
    auto graph = make_graph(seed, rows, classes, space);
    const eg::host_image image = eg::pack(graph.snapshot);
    const std::size_t live_before = gpu.resident().live_buffers();
    const eg::resident_image resident = gpu.upload(image);
    ++uploads;
    CHECK(gpu.resident().live_buffers() == live_before + 1);
    CHECK(resident.byte_length() == image.words().size_bytes());
    CHECK(resident.word_count() == image.words().size());
    CHECK(resident.layout().offset(eg::image_column::group_offsets) ==
          image.layout().offset(eg::image_column::group_offsets) * 4);
    const eg::host_image back = eg::download(gpu, resident);
    CHECK(same_words(image, back));
    gpu.free_resident(resident.handle());
  }
  const auto after = gpu.telemetry().snapshot();
  // Exactly one host-to-device operation per upload, whatever the chunking.
  CHECK(after.h2d_operations - before.h2d_operations == uploads);
}

// docs/image_format.md, "Worked example" and "Device allocation".
TEST_CASE("the worked example lands at the documented byte offsets", "[resident][gpu]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  auto snap = eg::snapshot::build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}});
  const eg::host_image image = eg::pack(snap);
  const eg::resident_image resident = gpu.upload(image);
  CHECK(resident.layout().offset(eg::image_column::group_offsets) == 76);
  const vyre::resident_span buffer = gpu.resident_buffer(resident.handle());
  std::uint32_t offsets[3] = {9, 9, 9};
  REQUIRE(vyre::cuda_check(cudaMemcpy(offsets, buffer.data + 76, 12, cudaMemcpyDeviceToHost),
                           "read group offsets"));
  CHECK(offsets[0] == 0);
  CHECK(offsets[1] == 1);
  CHECK(offsets[2] == 3);
}

TEST_CASE("a pinned source is copied without staging; a big pageable one is staged in chunks",
          "[resident][gpu]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  auto graph = make_graph(7, 300000, 100000, 200000);  // several MiB: more than one chunk
  auto prepared = eg::prepare_pack(graph.snapshot);
  const std::uint64_t words = prepared.word_count();
  REQUIRE(words * 4 > (std::uint64_t{4} << 20));
  const eg::image_layout layout = prepared.layout();

  vyre::pinned_lease pinned = gpu.acquire_pinned(static_cast<std::size_t>(words * 4));
  auto* pinned_words = reinterpret_cast<std::uint32_t*>(pinned.data());
  std::move(prepared).write_into(cuda::std::span<std::uint32_t>(pinned_words, words));
  const eg::image_ref pinned_image{
      cuda::std::span<const std::uint32_t>(pinned_words, static_cast<std::size_t>(words)), layout};

  const auto before = gpu.telemetry().snapshot();
  const eg::resident_image from_pinned = gpu.upload(pinned_image);
  const auto middle = gpu.telemetry().snapshot();
  CHECK(middle.h2d_operations - before.h2d_operations == 1);
  CHECK(middle.h2d_bytes - before.h2d_bytes == words * 4);

  const eg::host_image pageable = eg::pack(graph.snapshot);
  const eg::resident_image from_pageable = gpu.upload(pageable);
  const auto after = gpu.telemetry().snapshot();
  CHECK(after.h2d_operations - middle.h2d_operations == 1);

  CHECK(same_words(eg::download(gpu, from_pinned), pageable));
  CHECK(same_words(eg::download(gpu, from_pageable), pageable));
}

TEST_CASE("forced_swap staging puts byte-swapped words on the device and reads them back",
          "[resident][gpu]") {
  auto gpu = vyre::backend<swapped_policies>::acquire(0);
  auto graph = make_graph(11, 50000, 20000, 1u << 30);
  const eg::host_image image = eg::pack(graph.snapshot);
  const eg::resident_image resident = gpu.upload(image);
  // Raw device bytes are the swapped words (what a big-endian host would have produced).
  const vyre::resident_span buffer = gpu.resident_buffer(resident.handle());
  std::vector<std::uint32_t> raw(image.words().size());
  REQUIRE(vyre::cuda_check(
      cudaMemcpy(raw.data(), buffer.data, raw.size() * 4, cudaMemcpyDeviceToHost), "raw download"));
  for (std::size_t i = 0; i < raw.size(); ++i)
    REQUIRE(raw[i] == cuda::std::byteswap(image.words()[i]));
  // The download swaps back.
  CHECK(same_words(eg::download(gpu, resident), image));
}

TEST_CASE("a user kernel over the view agrees with the host on every row and group",
          "[resident][gpu]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  for (std::uint32_t seed : {1u, 2u, 3u, 4u}) {
    auto graph = make_graph(100 + seed, 5000 * seed, 1200 * seed, seed % 2 ? 0xFFFFFF00u : 9000u);
    const eg::host_image image = eg::pack(graph.snapshot);
    const eg::resident_image resident = gpu.upload(image);
    const eg::kernel_view view = gpu.kernel_view(resident);
    REQUIRE(view.row_count() == image.layout().row_count);
    REQUIRE(view.group_count() == image.layout().group_count);

    device_array<std::uint32_t> per_op(graph.op_count);
    per_op.zero();
    device_array<std::uint32_t> signatures(view.row_count());
    device_array<std::uint32_t> in_group(view.row_count());
    device_array<std::uint32_t> bad_groups(1);
    bad_groups.zero();
    resident_gpu_test::inspect_rows<<<64, 256>>>(view, per_op.ptr, signatures.ptr, in_group.ptr);
    REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch inspect_rows"));
    resident_gpu_test::inspect_groups<<<64, 256>>>(view, bad_groups.ptr);
    REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch inspect_groups"));
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "sync"));

    std::vector<std::uint32_t> host_per_op(graph.op_count, 0);
    const auto ops = image.column(eg::image_column::row_language_op_ids);
    for (std::uint32_t op : ops) ++host_per_op[op];
    CHECK(per_op.to_host() == host_per_op);
    const auto host_signatures = image.column(eg::image_column::row_signatures);
    CHECK(signatures.to_host() ==
          std::vector<std::uint32_t>(host_signatures.begin(), host_signatures.end()));
    const auto in_group_host = in_group.to_host();
    CHECK(std::all_of(in_group_host.begin(), in_group_host.end(),
                      [](std::uint32_t v) { return v == 1u; }));
    CHECK(bad_groups.to_host()[0] == 0u);
    CHECK_NOTHROW(eg::check_view_faults(gpu, resident));  // correct kernels record nothing
    gpu.free_resident(resident.handle());
  }
}

TEST_CASE("checked accessors never read out of bounds and report the first fault",
          "[resident][gpu]") {
  auto gpu = acquire_or_fail<vyre::backend<expected_policies>>();
  const auto [image, resident] = upload_graph(gpu, 5, 1000, 300, 5000);
  auto view = gpu.kernel_view(resident);
  REQUIRE(view.has_value());
  device_array<std::uint32_t> out(4);
  resident_gpu_test::misuse<<<1, 1>>>(*view, out.ptr);
  REQUIRE(vyre::cuda_check(cudaGetLastError(), "launch misuse"));
  REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "sync misuse"));
  const auto values = out.to_host();
  CHECK(values[0] == eg::invalid_id);
  CHECK(values[1] == eg::invalid_id);
  CHECK(values[2] == 0u);
  CHECK(values[3] == eg::invalid_id);  // absent e-class: a normal answer, not a fault

  const auto faults = eg::check_view_faults(gpu, resident);
  REQUIRE_FALSE(faults.has_value());
  CHECK(faults.error().code() == vyre::errc::out_of_range);
  CHECK(faults.error().subject() == "eclass(row)");  // the first of the three
  CHECK(faults.error().value_or("index", 0) == 1000);
  CHECK(faults.error().value_or("bound", 0) == 1000);
  CHECK(faults.error().value_or("faults", 0) == 3);
  CHECK(eg::check_view_faults(gpu, resident).has_value());  // cleared
  // The image itself is untouched by the misuse.
  const auto back = eg::download(gpu, resident);
  REQUIRE(back.has_value());
  CHECK(same_words(*back, image));
}

TEST_CASE("a malformed layout is rejected when the view is built, naming the column",
          "[resident][gpu]") {
  auto gpu = acquire_or_fail<vyre::backend<expected_policies>>();
  const auto [image, resident] = upload_graph(gpu, 9, 2000, 500, 4000);

  eg::upload_layout longer = resident.layout();
  longer.byte_spans[eg::column_index(eg::image_column::children)].length += 4;
  auto too_long = gpu.kernel_view(eg::resident_image(resident.handle(), longer));
  REQUIRE_FALSE(too_long.has_value());
  CHECK(too_long.error().code() == vyre::errc::invalid_layout);
  CHECK(too_long.error().subject() == "children");

  eg::upload_layout shifted = resident.layout();
  shifted.byte_spans[eg::column_index(eg::image_column::group_rows)].offset =
      shifted.total_bytes;  // past the image
  auto outside = gpu.kernel_view(eg::resident_image(resident.handle(), shifted));
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().code() == vyre::errc::invalid_layout);
  CHECK(outside.error().subject() == "group_rows");
  CHECK(outside.error().value_or("offset", 0) == shifted.total_bytes);

  eg::upload_layout unaligned = resident.layout();
  unaligned.byte_spans[eg::column_index(eg::image_column::row_signatures)].offset += 2;
  auto misaligned = gpu.kernel_view(eg::resident_image(resident.handle(), unaligned));
  REQUIRE_FALSE(misaligned.has_value());
  CHECK(misaligned.error().subject() == "row_signatures");

  eg::upload_layout bigger = resident.layout();
  bigger.total_bytes += 1024;  // claims more bytes than the buffer holds
  auto overrun = gpu.kernel_view(eg::resident_image(resident.handle(), bigger));
  REQUIRE_FALSE(overrun.has_value());
  CHECK(overrun.error().code() == vyre::errc::invalid_layout);
}

TEST_CASE("a foreign or freed image is rejected", "[resident][gpu]") {
  auto first = vyre::backend<expected_policies>::acquire(0);
  auto second = vyre::backend<expected_policies>::acquire(0);
  REQUIRE(first.has_value());
  REQUIRE(second.has_value());
  const auto [image, resident] = upload_graph(*first, 3, 100, 40, 100);

  auto foreign = second->kernel_view(resident);
  REQUIRE_FALSE(foreign.has_value());
  CHECK(foreign.error().code() == vyre::errc::invalid_handle);
  CHECK_FALSE(eg::download(*second, resident).has_value());

  REQUIRE(first->free_resident(resident.handle()).has_value());
  auto freed = first->kernel_view(resident);
  REQUIRE_FALSE(freed.has_value());
  CHECK(freed.error().code() == vyre::errc::invalid_handle);
  CHECK_FALSE(eg::download(*first, resident).has_value());

  // Throwing policy: the same rejection as an exception.
  auto throwing = vyre::backend<default_policies>::acquire(0);
  CHECK_THROWS_AS(throwing.kernel_view(resident), vyre::error_exception);
}

TEST_CASE("a failed upload releases what it took", "[resident][gpu]") {
  vyre::backend_options options;
  options.resident_budget = std::size_t{1} << 20;  // 1 MiB
  auto gpu = vyre::backend<expected_policies>::acquire(0, options);
  REQUIRE(gpu.has_value());
  auto graph = make_graph(13, 200000, 50000, 100000);  // several MiB
  const eg::host_image image = eg::pack(graph.snapshot);
  const std::size_t in_use = gpu->resident().bytes_in_use();
  const std::size_t live = gpu->resident().live_buffers();
  auto refused = gpu->upload(image);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == vyre::errc::out_of_memory);
  CHECK(gpu->resident().bytes_in_use() == in_use);
  CHECK(gpu->resident().live_buffers() == live);

  // A layout that does not fit its words is refused before anything is allocated.
  eg::image_layout wrong = image.layout();
  wrong.spans[eg::column_index(eg::image_column::children)].length += 1000000;
  auto bad = gpu->upload(eg::image_ref{image.words(), wrong});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == vyre::errc::invalid_layout);
  CHECK(gpu->resident().live_buffers() == live);
}

namespace {
// Raw device words of a resident image (no validation: the words need not form an e-graph).
std::vector<std::uint32_t> raw_words(vyre::resident_span buffer, std::size_t words) {
  std::vector<std::uint32_t> out(words);
  REQUIRE(vyre::cuda_check(cudaMemcpy(out.data(), buffer.data, words * 4, cudaMemcpyDeviceToHost),
                           "raw download"));
  return out;
}
}  // namespace

TEST_CASE("large pageable uploads are split over host lanes and land exactly", "[resident][gpu]") {
  constexpr std::size_t words = (std::size_t{40} << 20) / 4;  // 40 MiB: several lanes
  REQUIRE(vyre::auto_host_lanes(words * 4) > 1);
  std::vector<std::uint32_t> source(words);
  std::mt19937 rng(77);
  for (auto& word : source) word = static_cast<std::uint32_t>(rng());
  // Upload moves bytes whatever they say: a layout whose children column holds all but one word.
  const eg::image_ref image{
      cuda::std::span<const std::uint32_t>(source.data(), words),
      eg::image_layout::for_counts(0, static_cast<std::uint32_t>(words - 1), 0)};

  auto plain = vyre::backend<default_policies>::acquire(0);
  const auto before = plain.telemetry().snapshot();
  const eg::resident_image resident = plain.upload(image);
  CHECK(plain.telemetry().snapshot().h2d_operations - before.h2d_operations == 1);
  CHECK(raw_words(plain.resident_buffer(resident.handle()), words) == source);

  auto swapped = vyre::backend<swapped_policies>::acquire(0);
  const eg::resident_image swapped_resident = swapped.upload(image);
  const auto device_words = raw_words(swapped.resident_buffer(swapped_resident.handle()), words);
  for (std::size_t i = 0; i < words; ++i)
    REQUIRE(device_words[i] == cuda::std::byteswap(source[i]));
}

namespace {
std::vector<std::byte> random_bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> bytes(n);
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFFu);
  return bytes;
}
}  // namespace

TEST_CASE("staged uploads land exactly for every plan shape, with one upload operation each",
          "[resident][gpu][staging]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  auto stream = gpu.acquire_stream();
  // Sizes around the plan's boundaries: one chunk, 64 KiB chunks, the 4 MiB staging ring.
  const std::size_t sizes[] = {1,
                               4095,
                               (std::size_t{64} << 10) + 3,
                               std::size_t{1} << 20,
                               (std::size_t{2} << 20) + 5,
                               std::size_t{4} << 20,
                               (std::size_t{4} << 20) + 4,
                               (std::size_t{9} << 20) + 1};
  struct setting {
    std::size_t chunk_bytes, host_lanes;
  };
  const setting settings[] = {{0, 0},         {0, 1},        {0, 3},      {4096, 5},
                              {1000, 2},      {65536, 1},    {65536, 16}, {1 << 20, 4},
                              {128 << 10, 2}, {256 << 10, 8}};
  std::uint32_t seed = 1;
  for (const std::size_t bytes : sizes) {
    const auto source = random_bytes(bytes, seed++);
    const vyre::resident_handle h = gpu.allocate_resident(bytes, stream.get());
    const vyre::resident_span buffer = gpu.resident_buffer(h);
    for (const setting& s : settings) {
      INFO("bytes " << bytes << " chunk " << s.chunk_bytes << " lanes " << s.host_lanes);
      REQUIRE(cudaMemsetAsync(buffer.data, 0xEE, bytes, stream.get()) == cudaSuccess);  // poison
      vyre::upload_options options;
      options.chunk_bytes = s.chunk_bytes;
      options.host_lanes = s.host_lanes;
      const auto before = gpu.telemetry().snapshot();
      REQUIRE(gpu.resident().upload(h, source, 0, stream.get(), options).has_value());
      const auto after = gpu.telemetry().snapshot();
      CHECK(after.h2d_operations - before.h2d_operations == 1);
      CHECK(after.h2d_bytes - before.h2d_bytes == bytes);
      std::vector<std::byte> back(bytes, std::byte{0});
      REQUIRE(cudaMemcpy(back.data(), buffer.data, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
      REQUIRE(back == source);
      // Staging went back to the pool: no copy reads it any more.
      CHECK(gpu.pinned().leased_blocks() == 0);
    }
    gpu.free_resident(h);
  }
  // A lane count past max_host_lanes is refused, naming it.
  const vyre::resident_handle h = gpu.allocate_resident(1 << 20, stream.get());
  vyre::upload_options too_many;
  too_many.host_lanes = vyre::max_host_lanes + 1;
  const auto refused =
      gpu.resident().upload(h, random_bytes(1 << 20, 99), 0, stream.get(), too_many);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == vyre::errc::invalid_argument);
  gpu.free_resident(h);
}

TEST_CASE("host-lane helpers persist across uploads and are joined by cleanup",
          "[resident][gpu][staging]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  auto stream = gpu.acquire_stream();
  CHECK(gpu.resident().host_lane_helpers() == 0);
  const auto source = random_bytes(std::size_t{8} << 20, 5);
  vyre::upload_options options;
  options.host_lanes = 4;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 3; ++i) {
      const vyre::resident_handle h =
          gpu.resident().allocate_copy(source, stream.get(), options).value();
      CHECK(gpu.resident().host_lane_helpers() == 3);  // started once, kept
      std::vector<std::byte> back(source.size());
      gpu.download(h, back, 0, stream.get());
      CHECK(back == source);
      gpu.free_resident(h);
    }
    gpu.cleanup();
    CHECK(gpu.resident().host_lane_helpers() == 0);
  }
}

TEST_CASE("a fill failing on any lane stops the upload and releases everything",
          "[resident][gpu][staging]") {
  auto gpu = acquire_or_fail<vyre::backend<expected_policies>>();
  auto stream = gpu.acquire_stream();
  REQUIRE(stream.has_value());
  constexpr std::size_t bytes = std::size_t{6} << 20;
  for (const std::size_t lanes : {std::size_t{1}, std::size_t{2}, std::size_t{4}})
    for (const std::size_t failing_chunk : {std::size_t{0}, std::size_t{5}, std::size_t{23}}) {
      INFO("lanes " << lanes << " failing chunk " << failing_chunk);
      std::atomic<int> calls{0};
      auto fill = [&](std::size_t at, std::span<std::byte> chunk) noexcept -> vyre::expected<void> {
        calls.fetch_add(1);
        std::memset(chunk.data(), 0x11, chunk.size());
        if (at / (std::size_t{256} << 10) == failing_chunk)
          return vyre::fail(vyre::error(vyre::errc::corrupt_data, "test: bad chunk"));
        return {};
      };
      vyre::upload_options options;
      options.chunk_bytes = std::size_t{256} << 10;  // 24 chunks
      options.host_lanes = lanes;
      const std::size_t live = gpu.resident().live_buffers();
      const std::size_t in_use = gpu.resident().bytes_in_use();
      auto filled = gpu.resident().allocate_filled(bytes, stream->get(), fill, options);
      REQUIRE_FALSE(filled.has_value());
      CHECK(filled.error().code() == vyre::errc::corrupt_data);
      CHECK(calls.load() >= static_cast<int>(failing_chunk) + 1);
      CHECK(calls.load() <= 24);
      CHECK(gpu.resident().live_buffers() == live);
      CHECK(gpu.resident().bytes_in_use() == in_use);
      CHECK(gpu.pinned().leased_blocks() == 0);
    }
}

TEST_CASE("concurrent pageable uploads share the helpers and land exactly",
          "[resident][gpu][staging]") {
  auto gpu = vyre::backend<default_policies>::acquire(0);
  constexpr int threads = 4;
  constexpr int uploads = 12;
  std::vector<std::vector<std::byte>> sources;
  for (int t = 0; t < threads; ++t)
    sources.push_back(random_bytes((std::size_t{1} << 20) + 4096 * static_cast<std::size_t>(t),
                                   100 + static_cast<std::uint32_t>(t)));
  std::atomic<int> wrong{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      auto stream = gpu.streams().acquire();
      if (!stream) return (void)failed.fetch_add(1);
      for (int i = 0; i < uploads; ++i) {
        auto h = gpu.resident().allocate_copy(sources[static_cast<std::size_t>(t)], stream->get());
        if (!h) return (void)failed.fetch_add(1);
        std::vector<std::byte> back(sources[static_cast<std::size_t>(t)].size());
        if (!gpu.resident().download(*h, back, 0, stream->get())) failed.fetch_add(1);
        if (back != sources[static_cast<std::size_t>(t)]) wrong.fetch_add(1);
        if (!gpu.resident().free(*h)) failed.fetch_add(1);
      }
    });
  for (auto& worker : workers) worker.join();
  CHECK(failed.load() == 0);
  CHECK(wrong.load() == 0);
  CHECK(gpu.resident().live_buffers() == 0);
  CHECK(gpu.pinned().leased_blocks() == 0);
}
