// SPDX-License-Identifier: Apache-2.0
// Fused kernels from compile-time plans: on random data, every plan (fuse all, none, some)
// gives the result of applying the stages one after another; materialized boundaries hold the
// partial results; bad buffers are rejected before anything launches.
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <vyre/fusion.cuh>

#include "fusion_chain.cuh"

namespace fused_test {

using vyre::fusion::materialization;
using vyre::fusion::stage;

constexpr std::uint64_t unit = 4096;  // the plan's byte model: one buffer of the chain
constexpr std::uint64_t layout = 0xF10A7;

constexpr std::array<stage, 4> chain(std::uint64_t second_layout, materialization third) {
  return {{{.id = 1, .layout_hash = layout, .input_bytes = unit, .output_bytes = unit},
           {.id = 2, .layout_hash = second_layout, .input_bytes = unit, .output_bytes = unit},
           {.id = 3,
            .layout_hash = second_layout,
            .input_bytes = unit,
            .output_bytes = unit,
            .boundary = third},
           {.id = 4, .layout_hash = second_layout, .input_bytes = unit, .output_bytes = unit}}};
}

// All four in one launch: 2 units for the first stage, one more for each joined output.
constexpr auto fuse_all = vyre::fusion::static_plan(chain(layout, materialization::none), 5 * unit);
// One launch per stage: no second stage fits beside the first.
constexpr auto fuse_none =
    vyre::fusion::static_plan(chain(layout, materialization::none), 2 * unit);
// {1} {2 3 4}: stage 2 changes layout.
constexpr auto fuse_tail =
    vyre::fusion::static_plan(chain(layout + 1, materialization::none), 8 * unit);
// {1 2} {3 4}: stage 3 needs its input on the host.
constexpr auto fuse_pairs =
    vyre::fusion::static_plan(chain(layout, materialization::host), 8 * unit);
static_assert(fuse_all.launch_count() == 1);
static_assert(fuse_none.launch_count() == 4);
static_assert(fuse_tail.launch_count() == 2 && fuse_tail.groups()[1].stage_count == 3);
static_assert(fuse_pairs.launch_count() == 2 && fuse_pairs.groups()[0].stage_count == 2);

}  // namespace fused_test

namespace {
using namespace fused_test;
using namespace fusion_chain;

struct device_floats {
  float* ptr = nullptr;
  std::size_t count = 0;
  explicit device_floats(std::size_t n) : count(n) {
    REQUIRE(
        vyre::cuda_check(cudaMalloc(&ptr, (n == 0 ? 1 : n) * sizeof(float)), "test cudaMalloc"));
  }
  ~device_floats() {
    if (ptr != nullptr) (void)cudaFree(ptr);
  }
  device_floats(const device_floats&) = delete;
  device_floats& operator=(const device_floats&) = delete;
  void poison() const {
    // 0xFF bytes are a NaN: an element nobody writes fails every comparison.
    REQUIRE(vyre::cuda_check(cudaMemset(ptr, 0xFF, count * sizeof(float)), "poison"));
    // Not ordered before the tests' non-blocking streams: wait for it.
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "poison"));
  }
  void upload(const std::vector<float>& host) const {
    REQUIRE(vyre::cuda_check(
        cudaMemcpy(ptr, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
        "upload"));
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "upload"));  // as poison()
  }
  std::vector<float> download(std::size_t offset, std::size_t n) const {
    std::vector<float> host(n);
    REQUIRE(vyre::cuda_check(cudaDeviceSynchronize(), "synchronize before download"));
    REQUIRE(vyre::cuda_check(
        cudaMemcpy(host.data(), ptr + offset, n * sizeof(float), cudaMemcpyDeviceToHost),
        "download"));
    return host;
  }
};

std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  std::uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : values) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    v = static_cast<float>(static_cast<double>(state >> 11) * 0x1.0p-53 * 2.0 - 1.0);  // [-1, 1)
  }
  return values;
}

// The stages applied one after another: what any plan must reproduce. `stages_applied` of 4 is
// the whole chain; fewer gives a materialized boundary's expected content.
std::vector<float> reference(const std::vector<float>& input, int stages_applied) {
  std::vector<float> out(input);
  for (float& v : out) v = fusion_chain::apply(v, stages_applied);
  return out;
}

// Fusion may let the device contract a multiply and an add into one FMA: allow rounding.
void require_close(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  std::size_t bad = 0;
  std::size_t first_bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float tolerance = 1e-5f * (1.0f + std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tolerance)) {
      if (bad++ == 0) first_bad = i;
    }
  }
  INFO("first mismatch at " << first_bad << ": got " << got[first_bad] << ", want "
                            << want[first_bad]);
  REQUIRE(bad == 0);
}

template <auto Plan>
void check_plan_on(std::size_t count, std::size_t offset, std::uint64_t seed) {
  INFO("launches " << Plan.launch_count() << ", count " << count << ", offset " << offset);
  const std::vector<float> input = random_floats(count + offset, seed);
  device_floats in(count + offset);
  device_floats out(count + offset);
  in.upload(input);
  out.poison();
  const pipeline<Plan> fused{stage1, stage2, stage3, stage4};
  // `offset` elements in: pointers that are not 16-byte aligned take the scalar path.
  auto done = fused.run(in.ptr + offset, out.ptr + offset, count, nullptr);
  REQUIRE(done.has_value());
  const std::vector<float> want = reference(
      std::vector<float>(input.begin() + static_cast<std::ptrdiff_t>(offset), input.end()), 4);
  require_close(out.download(offset, count), want);
  // The input is read, never written.
  CHECK(in.download(0, count + offset) == input);
}

}  // namespace

TEST_CASE("fused pipelines equal the stages applied one by one, for every plan shape",
          "[fusion][gpu]") {
  for (const std::size_t count :
       {std::size_t{1}, std::size_t{3}, std::size_t{1000}, std::size_t{(1u << 20) + 5}}) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{1}}) {
      const std::uint64_t seed = count * 31 + offset;
      check_plan_on<fuse_all>(count, offset, seed);
      check_plan_on<fuse_none>(count, offset, seed + 1);
      check_plan_on<fuse_tail>(count, offset, seed + 2);
      check_plan_on<fuse_pairs>(count, offset, seed + 3);
    }
  }
}

TEST_CASE("a fused pipeline runs in place and on a stream", "[fusion][gpu]") {
  constexpr std::size_t count = 100'003;
  const std::vector<float> input = random_floats(count, 77);
  device_floats data(count);
  data.upload(input);
  cudaStream_t stream = nullptr;
  REQUIRE(vyre::cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream"));
  const pipeline<fuse_tail> fused{stage1, stage2, stage3, stage4};
  auto done = fused.run(data.ptr, data.ptr, count, stream);
  const auto synced = vyre::cuda_check(cudaStreamSynchronize(stream), "stream sync");
  (void)cudaStreamDestroy(stream);
  REQUIRE(done.has_value());
  REQUIRE(synced.has_value());
  require_close(data.download(0, count), reference(input, 4));
}

TEST_CASE("materialized boundaries hold each group's result", "[fusion][gpu]") {
  constexpr std::size_t count = 65'537;
  const std::vector<float> input = random_floats(count, 99);
  device_floats in(count);
  device_floats out(count);
  std::array<device_floats, 3> boundaries{device_floats(count), device_floats(count),
                                          device_floats(count)};
  in.upload(input);
  out.poison();
  for (const auto& b : boundaries) b.poison();

  // {1 2} {3 4}: one boundary, after stage 2.
  const pipeline<fuse_pairs> pairs{stage1, stage2, stage3, stage4};
  std::array<float*, 1> one{boundaries[0].ptr};
  REQUIRE(pairs.run(in.ptr, out.ptr, count, cuda::std::span<float* const>(one), nullptr));
  require_close(boundaries[0].download(0, count), reference(input, 2));
  require_close(out.download(0, count), reference(input, 4));

  // One launch per stage: three boundaries, after stages 1, 2 and 3.
  out.poison();
  for (const auto& b : boundaries) b.poison();
  const pipeline<fuse_none> none{stage1, stage2, stage3, stage4};
  std::array<float*, 3> three{boundaries[0].ptr, boundaries[1].ptr, boundaries[2].ptr};
  REQUIRE(none.run(in.ptr, out.ptr, count, cuda::std::span<float* const>(three), nullptr));
  for (int b = 0; b < 3; ++b)
    require_close(boundaries[b].download(0, count), reference(input, b + 1));
  require_close(out.download(0, count), reference(input, 4));
}

TEST_CASE("bad buffers are rejected before any launch", "[fusion][gpu][errors]") {
  constexpr std::size_t count = 1024;
  device_floats in(count * 2);
  device_floats out(count);
  in.upload(random_floats(count * 2, 5));
  out.poison();
  const pipeline<fuse_pairs> fused{stage1, stage2, stage3, stage4};

  auto null_in = fused.run(nullptr, out.ptr, count, nullptr);
  REQUIRE_FALSE(null_in.has_value());
  CHECK(null_in.error().code() == vyre::errc::invalid_argument);
  CHECK_THAT(null_in.error().message(), Catch::Contains("null") && Catch::Contains("input"));
  CHECK_FALSE(fused.run(in.ptr, nullptr, count, nullptr).has_value());

  auto overlap = fused.run(in.ptr, in.ptr + 1, count, nullptr);
  REQUIRE_FALSE(overlap.has_value());
  CHECK(overlap.error().code() == vyre::errc::invalid_argument);
  CHECK_THAT(overlap.error().message(), Catch::Contains("partly overlap"));

  std::array<float*, 2> too_many{out.ptr, out.ptr};
  auto wrong_boundaries =
      fused.run(in.ptr, out.ptr, count, cuda::std::span<float* const>(too_many), nullptr);
  REQUIRE_FALSE(wrong_boundaries.has_value());
  CHECK(wrong_boundaries.error().value_or("expected", 99) == 1);
  std::array<float*, 1> null_boundary{nullptr};
  CHECK_FALSE(
      fused.run(in.ptr, out.ptr, count, cuda::std::span<float* const>(null_boundary), nullptr));

  try {
    fused.run<vyre::on_error::throw_exception>(nullptr, out.ptr, count, nullptr);
    FAIL("expected vyre::error_exception");
  } catch (const vyre::error_exception& e) {
    CHECK(e.code() == vyre::errc::invalid_argument);
  }

  // Nothing launched: the output still holds the poison.
  const auto untouched = out.download(0, count);
  for (const float v : untouched) REQUIRE(std::isnan(v));
  // A zero count is a no-op, null pointers and all.
  CHECK(fused.run(nullptr, nullptr, 0, nullptr).has_value());
}
