// SPDX-License-Identifier: Apache-2.0
// Runtime pieces that need no GPU: policy plumbing, cuda::mr conformance, RAII ownership with
// a fake resource, handle values, argument errors that precede any CUDA call, and the
// behaviour of device queries on whatever machine runs the test.
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <type_traits>

#include <vyre/runtime/device.hpp>
#include <vyre/runtime/driver.hpp>
#include <vyre/runtime/memory.hpp>
#include <vyre/runtime/pinned.hpp>
#include <vyre/runtime/resident.hpp>

namespace {
static_assert(VYRE_HAS_CUDA_MR == 1);
static_assert(
    std::is_same_v<vyre::resource_for_t<vyre::alloc::caching_pool>, vyre::caching_pool_resource>);
static_assert(std::is_same_v<vyre::resource_for_t<vyre::alloc::stream_ordered>,
                             vyre::stream_ordered_resource>);
static_assert(std::is_same_v<vyre::resource_for_t<vyre::alloc::direct>, vyre::direct_resource>);
static_assert(std::is_same_v<vyre::caching_pool_resource::policy, vyre::alloc::caching_pool>);
static_assert(
    cuda::mr::async_resource_with<vyre::caching_pool_resource, cuda::mr::device_accessible>);
static_assert(
    cuda::mr::async_resource_with<vyre::stream_ordered_resource, cuda::mr::device_accessible>);
static_assert(cuda::mr::async_resource_with<vyre::direct_resource, cuda::mr::device_accessible>);
static_assert(!cuda::mr::resource_with<vyre::direct_resource, cuda::mr::host_accessible>);
static_assert(std::is_trivially_copyable_v<vyre::resident_handle>);
static_assert(std::is_trivially_copyable_v<vyre::device_resource_ref>);
static_assert(!std::is_copy_constructible_v<vyre::device_buffer>);
static_assert(std::is_nothrow_move_constructible_v<vyre::device_buffer>);
static_assert(!std::is_copy_constructible_v<vyre::pinned_lease>);
static_assert(!std::is_copy_constructible_v<vyre::stream_lease>);

// A host-memory resource with the vyre resource interface: counts what it hands out.
struct fake_resource {
  static constexpr const char* policy_name = "fake";
  std::set<void*> live;
  int frees = 0;
  vyre::expected<void*> try_allocate(std::size_t bytes, cudaStream_t) noexcept {
    void* p = std::malloc(bytes);
    live.insert(p);
    return p;
  }
  vyre::expected<void> try_deallocate(void* p, std::size_t, cudaStream_t) noexcept {
    if (live.erase(p) == 0)
      return vyre::fail(vyre::error(vyre::errc::invalid_argument, "fake: unknown pointer"));
    std::free(p);
    ++frees;
    return {};
  }
};
}  // namespace

TEST_CASE("device_buffer returns its memory exactly once, across moves", "[runtime][memory]") {
  fake_resource fake;
  vyre::device_resource_ref ref(fake);
  CHECK(std::string(ref.policy_name()) == "fake");
  {
    auto p = ref.try_allocate(64, nullptr);
    REQUIRE(p.has_value());
    vyre::device_buffer a(ref, *p, 64, nullptr);
    CHECK(a.size() == 64);
    vyre::device_buffer b(std::move(a));
    CHECK_FALSE(a);
    CHECK(b.get() == *p);
    vyre::device_buffer c;
    c = std::move(b);
    CHECK(c.size() == 64);
    CHECK(fake.frees == 0);
  }
  CHECK(fake.frees == 1);
  CHECK(fake.live.empty());
}

TEST_CASE("device_buffer::reset frees now and release gives ownership away", "[runtime][memory]") {
  fake_resource fake;
  vyre::device_resource_ref ref(fake);
  vyre::device_buffer a(ref, *ref.try_allocate(8, nullptr), 8, nullptr);
  REQUIRE(a.reset().has_value());
  CHECK(fake.frees == 1);
  CHECK_FALSE(a);
  REQUIRE(a.reset().has_value());  // idempotent
  void* raw = *ref.try_allocate(8, nullptr);
  vyre::device_buffer b(ref, raw, 8, nullptr);
  CHECK(b.release() == raw);
  CHECK_FALSE(b);
  REQUIRE(ref.try_deallocate(raw, 8, nullptr).has_value());
  CHECK(fake.frees == 2);
  vyre::device_buffer empty;
  CHECK(empty.reset().has_value());
}

TEST_CASE("zero-byte requests fail before any CUDA call, naming the policy", "[runtime][memory]") {
  vyre::caching_pool_resource caching(0, nullptr);
  vyre::direct_resource direct(0, nullptr);
  for (auto result : {caching.try_allocate(0, nullptr), direct.try_allocate(0, nullptr)}) {
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == vyre::errc::invalid_argument);
    CHECK(result.error().value_or("bytes", 1) == 0);
  }
  CHECK(std::string(caching.try_allocate(0, nullptr).error().context()).find("caching_pool") !=
        std::string::npos);
  CHECK(std::string(direct.try_allocate(0, nullptr).error().context()).find("alloc::direct") !=
        std::string::npos);
  vyre::pinned_pool pinned;
  auto lease = pinned.acquire(0);
  REQUIRE_FALSE(lease.has_value());
  CHECK(lease.error().code() == vyre::errc::invalid_argument);
}

TEST_CASE("the cuda::mr interface rejects a bad alignment with an exception", "[runtime][memory]") {
  vyre::caching_pool_resource caching(0, nullptr);
  try {
    (void)caching.allocate(256, 3);
    FAIL("expected an exception");
  } catch (const vyre::error_exception& e) {
    CHECK(e.code() == vyre::errc::invalid_argument);
    CHECK(e.error().value_or("alignment", 0) == 3);
  }
  CHECK_THROWS_AS(caching.allocate(256, 512), vyre::error_exception);
  // Resources are stateful, so equality is identity: two cuda::mr references to one resource
  // compare equal, references to two resources of the same type do not, and vyre's own
  // type-erased reference agrees.
  vyre::caching_pool_resource other(0, nullptr);
  using device_ref = cuda::mr::async_resource_ref<cuda::mr::device_accessible>;
  const device_ref first{caching}, second{caching}, elsewhere{other};
  CHECK(first == second);
  CHECK(first != elsewhere);
  CHECK_FALSE(first == elsewhere);
  CHECK(caching != other);
  CHECK_FALSE(caching == other);
  CHECK(vyre::device_resource_ref(caching) == vyre::device_resource_ref(caching));
  CHECK_FALSE(vyre::device_resource_ref(caching) == vyre::device_resource_ref(other));
}

TEST_CASE("caching pool size classes: powers of two from 256 up to the retained cap",
          "[runtime][memory]") {
  vyre::caching_pool_resource pool(0, nullptr, {.retained_cap = std::size_t{1} << 20});
  CHECK(pool.held_bytes(1) == 256);
  CHECK(pool.held_bytes(256) == 256);
  CHECK(pool.held_bytes(257) == 512);
  CHECK(pool.held_bytes(3000) == 4096);
  CHECK(pool.held_bytes(std::size_t{1} << 20) == (std::size_t{1} << 20));
  // Above the cap a class could never be retained: exact size rounded to 256, uncached.
  CHECK(pool.held_bytes((std::size_t{1} << 20) + 1) == (std::size_t{1} << 20) + 256);
  CHECK(pool.cached_bytes() == 0);
  CHECK(pool.live_allocations() == 0);
}

TEST_CASE("resident handles: empty by default, compared by value", "[runtime][resident]") {
  constexpr vyre::resident_handle none{};
  static_assert(none.empty());
  constexpr vyre::resident_handle a{3, 1, 7};
  static_assert(!a.empty());
  static_assert(a == vyre::resident_handle{3, 1, 7});
  static_assert(a != vyre::resident_handle{3, 1, 8});
  static_assert(a != vyre::resident_handle{4, 1, 7});
}

TEST_CASE("driver errors carry the driver status", "[runtime][driver]") {
  const auto err = vyre::cuda_driver_error(CUDA_ERROR_INVALID_VALUE, "test: cuModuleLoadData");
  CHECK(err.code() == vyre::errc::cuda_driver);
  CHECK(err.cuda_source() == vyre::status_source::cuda_driver);
  CHECK(err.cuda_status() == static_cast<int>(CUDA_ERROR_INVALID_VALUE));
  CHECK(err.message().find("[CUDA driver: ") != std::string::npos);
  // With a driver the name comes from cuGetErrorName; without one it is unknown.
  if (vyre::driver_api::get().has_value())
    CHECK(std::string(err.cuda_status_name()) == "CUDA_ERROR_INVALID_VALUE");
  CHECK(vyre::cuda_driver_check(CUDA_SUCCESS, "ok").has_value());
  CHECK(vyre::cuda_driver_error(CUDA_ERROR_OUT_OF_MEMORY, "x").code() == vyre::errc::out_of_memory);
}

TEST_CASE("query_device: no device is unsupported, a bad ordinal names the count",
          "[runtime][device]") {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  const auto negative = vyre::query_device(-1);
  REQUIRE_FALSE(negative.has_value());
  if (status != cudaSuccess || count == 0) {
    CHECK(negative.error().code() == vyre::errc::unsupported);
    CHECK(negative.error().message().find("Fix:") != std::string::npos);
  } else {
    CHECK(negative.error().code() == vyre::errc::invalid_argument);
    const auto past_end = vyre::query_device(count);
    REQUIRE_FALSE(past_end.has_value());
    CHECK(past_end.error().value_or("ordinal", 0) == static_cast<std::uint64_t>(count));
    CHECK(past_end.error().value_or("device_count", 0) == static_cast<std::uint64_t>(count));
  }
}
