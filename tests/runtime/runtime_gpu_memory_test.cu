// SPDX-License-Identifier: Apache-2.0
// GPU tests of the runtime's memory: the conformance suite instantiated for every allocation
// policy, a 16-thread stress test, device memory back to baseline after destruction, the
// resident store (round trips, handle checks, in-use refusal, budget) and stream/event leases.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <vyre/runtime.cuh>

#include "require_error.hpp"
#include "require_ok.cuh"
#include "stamp.cuh"

namespace runtime_gpu_memory_test {

// Spins for about `cycles` clock cycles: keeps a stream busy so "pending work" is real.
VYRE_KERNEL void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

using vyre_test::stamp;

}  // namespace runtime_gpu_memory_test

namespace {
using namespace runtime_gpu_memory_test;

template <class Alloc>
using backend_for = vyre::backend<
    vyre::policies<Alloc, vyre::staging::little_endian, vyre::on_error::return_expected>>;

constexpr long long spin_cycles = 200'000'000;  // ~0.1 s at ~2 GHz

// A positive integer from the environment, or `fallback` when unset or not positive.
int positive_env_or(const char* name, int fallback) {
  const char* text = std::getenv(name);
  const int value = text != nullptr ? std::atoi(text) : 0;
  return value > 0 ? value : fallback;
}

using vyre_test::acquire_or_fail;
using vyre_test::acquire_stream_or_fail;
using vyre_test::require_each_ok;

// What the telemetry gauge holds with no live allocation: the caching pool's free blocks.
template <class Backend>
std::uint64_t gauge_when_idle(Backend& gpu) {
  if constexpr (std::is_same_v<std::remove_cvref_t<decltype(gpu.memory())>,
                               vyre::caching_pool_resource>)
    return gpu.memory().cached_bytes();
  else
    return 0;
}

std::size_t device_free_bytes() {
  std::size_t free_bytes = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_bytes, &total) == cudaSuccess);
  return free_bytes;
}

std::vector<std::byte> pattern_bytes(std::size_t n, std::uint32_t seed) {
  std::vector<std::byte> bytes(n);
  std::mt19937 rng(seed);
  for (auto& b : bytes) b = static_cast<std::byte>(rng() & 0xFF);
  return bytes;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conformance suite: every allocation policy.

TEMPLATE_TEST_CASE("allocations are distinct, aligned and hold their full size",
                   "[runtime][gpu][memory]", vyre::alloc::caching_pool, vyre::alloc::stream_ordered,
                   vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  auto stream = acquire_stream_or_fail(gpu);
  const std::size_t sizes[] = {
      1,         3, 255, 256, 257, 1000, 4096, 4097, 65536, (1u << 20) + 3, (3u << 20) + 5,
      300u << 20};  // the last exceeds the retained cap
  std::vector<vyre::device_buffer> buffers;
  for (const std::size_t n : sizes) {
    auto b = gpu.allocate(n, stream->get());
    REQUIRE_OK(b);
    CHECK(b->size() == n);
    CHECK(reinterpret_cast<std::uintptr_t>(b->get()) % vyre::device_alignment == 0);
    buffers.push_back(std::move(*b));
  }
  // No two allocations overlap.
  std::vector<std::pair<std::uintptr_t, std::size_t>> ranges;
  for (const auto& b : buffers)
    ranges.emplace_back(reinterpret_cast<std::uintptr_t>(b.get()), b.size());
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    CHECK(ranges[i - 1].first + ranges[i - 1].second <= ranges[i].first);
  // Every byte is writable and keeps what was written (a distinct value per buffer).
  for (std::size_t i = 0; i < buffers.size(); ++i)
    REQUIRE(cudaMemsetAsync(buffers[i].get(), static_cast<int>(0x11 * (i + 1)), buffers[i].size(),
                            stream->get()) == cudaSuccess);
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    std::vector<unsigned char> host(buffers[i].size(), 0);
    REQUIRE(cudaMemcpyAsync(host.data(), buffers[i].get(), host.size(), cudaMemcpyDeviceToHost,
                            stream->get()) == cudaSuccess);
    REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
    const auto expected_byte = static_cast<unsigned char>(0x11 * (i + 1));
    CHECK(std::count(host.begin(), host.end(), expected_byte) ==
          static_cast<std::ptrdiff_t>(host.size()));
  }
  CHECK(gpu.memory().live_allocations() == buffers.size());
  buffers.clear();
  CHECK(gpu.memory().live_allocations() == 0);
  CHECK(gpu.telemetry().snapshot().current_device_bytes == gauge_when_idle(gpu));
}

TEMPLATE_TEST_CASE("a zero-byte request is an invalid-argument error", "[runtime][gpu][memory]",
                   vyre::alloc::caching_pool, vyre::alloc::stream_ordered, vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  const auto b = gpu.allocate(0);
  REQUIRE_ERROR(b, vyre::errc::invalid_argument);
  CHECK(b.error().value_or("bytes", 1) == 0);
  CHECK(b.error().message().find("zero-byte") != std::string::npos);
  const auto resident = gpu.allocate_resident(0);
  REQUIRE_ERROR(resident, vyre::errc::invalid_argument);
}

TEMPLATE_TEST_CASE("exhaustion is an out-of-memory error naming the bytes and the policy",
                   "[runtime][gpu][memory]", vyre::alloc::caching_pool, vyre::alloc::stream_ordered,
                   vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  const std::size_t too_many = gpu.caps().total_memory * 2;
  auto stream = acquire_stream_or_fail(gpu);
  const auto b = gpu.allocate(too_many, stream->get());
  REQUIRE_ERROR(b, vyre::errc::out_of_memory);
  CHECK(b.error().value_or("bytes", 0) == too_many);
  const std::string message = b.error().message();
  CHECK(message.find(gpu.allocation_policy_name()) != std::string::npos);
  CHECK(message.find("bytes=" + std::to_string(too_many)) != std::string::npos);
  // The failure leaves the backend usable.
  auto small_again = gpu.allocate(4096, stream->get());
  REQUIRE_OK(small_again);
  CHECK(gpu.memory().live_allocations() == 1);
}

TEMPLATE_TEST_CASE("device free memory returns to its baseline after the backend is destroyed",
                   "[runtime][gpu][memory]", vyre::alloc::caching_pool, vyre::alloc::stream_ordered,
                   vyre::alloc::direct) {
  { auto warm = acquire_or_fail<backend_for<TestType>>(); }  // context and pools initialised
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const std::size_t baseline = device_free_bytes();
  {
    auto gpu = acquire_or_fail<backend_for<TestType>>();
    REQUIRE_OK(gpu.warmup());
    auto stream = acquire_stream_or_fail(gpu);
    auto kept =
        require_each_ok(8, [&] { return gpu.allocate(std::size_t{32} << 20, stream->get()); });
    kept.resize(4);  // four go back to the pool (cached, for the caching policies)
    // One allocation is released from its RAII owner: only the backend can return it now.
    (void)kept.back().release();
    kept.pop_back();
    auto resident = gpu.allocate_resident(std::size_t{64} << 20, stream->get());
    REQUIRE_OK(resident);
    auto pinned = gpu.acquire_pinned(std::size_t{8} << 20);
    REQUIRE_OK(pinned);
    REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
    // 4 x 32 MiB live (one released) + 64 MiB resident at least; the caching policies also
    // keep the 4 freed blocks.
    CHECK(device_free_bytes() + (std::size_t{160} << 20) <= baseline);
  }
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  // Under compute-sanitizer the tool's own shadow allocations move cudaMemGetInfo; the
  // sanitizer scripts set VYRE_TEST_SKIP_MEMINFO (the pool counters are checked regardless).
  if (const char* skip = std::getenv("VYRE_TEST_SKIP_MEMINFO"); skip != nullptr && *skip == '1')
    return;
  const std::size_t after = device_free_bytes();
  const std::size_t tolerance = std::size_t{8} << 20;
  CHECK(after + tolerance >= baseline);
  CHECK(after <= baseline + tolerance);
}

TEMPLATE_TEST_CASE("telemetry counts every allocation as a hit or a miss",
                   "[runtime][gpu][memory][telemetry]", vyre::alloc::caching_pool,
                   vyre::alloc::stream_ordered, vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  auto stream = acquire_stream_or_fail(gpu);
  gpu.telemetry().reset();
  std::uint64_t requested = 0;
  void* first = nullptr;
  for (int round = 0; round < 5; ++round) {
    auto b = gpu.allocate(100'000, stream->get());
    REQUIRE_OK(b);
    requested += 100'000;
    if (round == 0) first = b->get();
    if constexpr (std::is_same_v<TestType, vyre::alloc::caching_pool>) CHECK(b->get() == first);
  }
  const auto s = gpu.telemetry().snapshot();
  CHECK(s.allocations == 5);
  CHECK(s.bytes_requested == requested);
  CHECK(s.pool_hits + s.pool_misses == 5);
  CHECK(s.current_device_bytes == gauge_when_idle(gpu));
  CHECK(s.peak_device_bytes >= 100'000);
  if constexpr (std::is_same_v<TestType, vyre::alloc::direct>) CHECK(s.pool_misses == 5);
  if constexpr (std::is_same_v<TestType, vyre::alloc::caching_pool>) {
    CHECK(s.pool_misses == 1);
    CHECK(s.pool_hits == 4);
    CHECK(s.peak_device_bytes == 131072);  // one 128 KiB class at a time
  }
  if constexpr (std::is_same_v<TestType, vyre::alloc::stream_ordered>) CHECK(s.pool_hits >= 3);
}

TEST_CASE("caching pool: another stream reuses a block only after a fence on its stream completed",
          "[runtime][gpu][memory][caching_pool]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto& pool = gpu.memory();
  auto busy = gpu.acquire_stream();
  auto other = gpu.acquire_stream();
  auto third = gpu.acquire_stream();
  REQUIRE_OK(busy);
  REQUIRE_OK(other);
  REQUIRE_OK(third);
  constexpr std::size_t bytes = std::size_t{1} << 20;

  // A block whose last use is still running on `busy` when it is freed there.
  auto block = pool.try_allocate(bytes, busy->get());
  REQUIRE_OK(block);
  spin<<<1, 1, 0, busy->get()>>>(spin_cycles);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE_OK(pool.try_deallocate(*block, bytes, busy->get()));

  // Nothing fences it yet: another stream must get fresh memory (and asks for a fence).
  auto fresh = pool.try_allocate(bytes, other->get());
  REQUIRE_OK(fresh);
  CHECK(*fresh != *block);
  // The next free on `busy` records the fence, but the spin has not finished behind it.
  auto tiny = pool.try_allocate(256, busy->get());
  REQUIRE_OK(tiny);
  REQUIRE_OK(pool.try_deallocate(*tiny, 256, busy->get()));
  auto still_busy = pool.try_allocate(bytes, third->get());
  REQUIRE_OK(still_busy);
  CHECK(*still_busy != *block);
  CHECK(cudaStreamQuery(busy->get()) == cudaErrorNotReady);  // the spin really is pending

  // Once the fence completed, a third stream takes the block as a hit.
  REQUIRE(cudaStreamSynchronize(busy->get()) == cudaSuccess);
  const auto before = gpu.telemetry().snapshot();
  auto reused = pool.try_allocate(bytes, third->get());
  REQUIRE_OK(reused);
  CHECK(*reused == *block);
  const auto after = gpu.telemetry().snapshot();
  CHECK(after.pool_hits - before.pool_hits == 1);
  CHECK(after.pool_misses == before.pool_misses);
  for (void* p : {*fresh, *still_busy, *reused})
    REQUIRE_OK(pool.try_deallocate(p, bytes, third->get()));
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(pool.live_allocations() == 0);
}

TEST_CASE("caching pool: the retained cap holds across streams and comes back from idle shares",
          "[runtime][gpu][memory][caching_pool]") {
  constexpr std::size_t cap = std::size_t{2} << 20;
  vyre::backend_options options;
  options.memory.retained_cap = cap;
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>(options);
  auto& pool = gpu.memory();
  std::vector<vyre::stream_lease> streams;
  for (int i = 0; i < 4; ++i) {
    auto s = gpu.acquire_stream();
    REQUIRE_OK(s);
    streams.push_back(std::move(*s));
  }
  constexpr std::size_t bytes = std::size_t{1} << 20;
  std::vector<void*> blocks;
  for (auto& s : streams) {
    auto b = pool.try_allocate(bytes, s.get());
    REQUIRE_OK(b);
    blocks.push_back(*b);
  }
  // Four 1 MiB frees on four streams: only two fit under the 2 MiB cap.
  for (std::size_t i = 0; i < blocks.size(); ++i)
    REQUIRE_OK(pool.try_deallocate(blocks[i], bytes, streams[i].get()));
  CHECK(pool.cached_bytes() == cap);
  CHECK(pool.live_allocations() == 0);
  // Streams 0 and 1 hold the shares; their blocks go back into use, and a free on stream 3
  // then takes over the idle share instead of being refused.
  auto again0 = pool.try_allocate(bytes, streams[0].get());
  auto again1 = pool.try_allocate(bytes, streams[1].get());
  REQUIRE_OK(again0);
  REQUIRE_OK(again1);
  CHECK(*again0 == blocks[0]);
  CHECK(*again1 == blocks[1]);
  CHECK(pool.cached_bytes() == 0);
  REQUIRE_OK(pool.try_deallocate(*again0, bytes, streams[3].get()));
  REQUIRE_OK(pool.try_deallocate(*again1, bytes, streams[3].get()));
  CHECK(pool.cached_bytes() == cap);
  REQUIRE_OK(pool.release_cached());
  CHECK(pool.cached_bytes() == 0);
}

TEST_CASE("caching pool: cross-stream reuse never disturbs a capture in another thread",
          "[runtime][gpu][memory][caching_pool][graph]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto& pool = gpu.memory();
  auto captured = gpu.acquire_stream();
  REQUIRE_OK(captured);
  constexpr std::size_t bytes = 4096;
  // The capturing stream's shared lists hold a block that other streams keep asking to fence:
  // freed here (into this thread's cache), then moved there by a miss on another stream.
  auto seed = pool.try_allocate(bytes, captured->get());
  REQUIRE_OK(seed);
  REQUIRE_OK(pool.try_deallocate(*seed, bytes, captured->get()));
  {
    auto elsewhere = gpu.acquire_stream();
    REQUIRE_OK(elsewhere);
    auto flushing = pool.try_allocate(bytes, elsewhere->get());
    REQUIRE_OK(flushing);
    REQUIRE_OK(pool.try_deallocate(*flushing, bytes, elsewhere->get()));
    REQUIRE(cudaStreamSynchronize(elsewhere->get()) == cudaSuccess);
  }

  std::atomic<bool> stop{false};
  std::atomic<int> capture_failures{0}, pool_failures{0}, captures{0};
  std::string first_capture_failure;
  std::thread capturer([&] {
    for (int i = 0; i < 400; ++i) {
      cudaGraph_t graph = nullptr;
      if (cudaStreamBeginCapture(captured->get(), cudaStreamCaptureModeThreadLocal) !=
          cudaSuccess) {
        capture_failures.fetch_add(1);
        break;
      }
      // A hit inside the capture: its free is where a fence could be asked for.
      auto p = pool.try_allocate(bytes, captured->get());
      if (p) {
        stamp<<<1, 32, 0, captured->get()>>>(static_cast<std::uint32_t*>(*p), 32, 7u);
        (void)pool.try_deallocate(*p, bytes, captured->get());
      }
      const cudaError_t ended = cudaStreamEndCapture(captured->get(), &graph);
      if (!p || ended != cudaSuccess) {
        if (capture_failures.fetch_add(1) == 0)
          first_capture_failure = p ? cudaGetErrorString(ended) : p.error().message();
        (void)cudaGetLastError();
      } else {
        captures.fetch_add(1);
      }
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
    }
    stop.store(true);
  });
  std::thread thief([&] {
    auto a = gpu.acquire_stream();
    auto b = gpu.acquire_stream();
    if (!a || !b) {
      pool_failures.fetch_add(1);
      return;
    }
    // Allocate on one stream, free on the other: every allocation on `a` misses its own lists
    // and scans the others, the capturing stream's included.
    while (!stop.load()) {
      auto p = pool.try_allocate(bytes, a->get());
      if (!p || !pool.try_deallocate(*p, bytes, b->get())) pool_failures.fetch_add(1);
      auto q = pool.try_allocate(bytes, b->get());
      if (!q || !pool.try_deallocate(*q, bytes, a->get())) pool_failures.fetch_add(1);
    }
  });
  capturer.join();
  thief.join();
  INFO(first_capture_failure);
  CHECK(capture_failures.load() == 0);
  CHECK(captures.load() == 400);
  CHECK(pool_failures.load() == 0);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(pool.live_allocations() == 0);
}

TEMPLATE_TEST_CASE("16 threads allocate, write, hand over and free across streams",
                   "[runtime][gpu][memory][stress]", vyre::alloc::caching_pool,
                   vyre::alloc::stream_ordered, vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  // VYRE_RUNTIME_STRESS_ITERATIONS shortens the run under compute-sanitizer, which serialises
  // and instruments every one of the threads' kernels; VYRE_RUNTIME_STRESS_THREADS (default 16)
  // changes the thread count (docs/sanitizers.md: racecheck and many launching threads).
  const int threads = positive_env_or("VYRE_RUNTIME_STRESS_THREADS", 16);
  const int iterations = positive_env_or("VYRE_RUNTIME_STRESS_ITERATIONS",
                                         std::is_same_v<TestType, vyre::alloc::direct> ? 30 : 120);
  struct parcel {
    vyre::device_buffer buffer;
    std::uint32_t tag;
  };
  vyre_test::stamp_mailbox<parcel> mailbox;
  vyre_test::stamp_tally tally;
  std::atomic<int>& failures = tally.failures;

  // Checks that a buffer still holds its stamp (nobody else was handed its memory).
  auto verify = [&](const vyre::device_buffer& b, std::uint32_t tag, cudaStream_t s) {
    tally.check(b.as<std::uint32_t>(), b.size() / 4, tag, s);
  };

  vyre_test::on_threads(threads, [&](int t) {
    auto stream = gpu.streams().acquire();
    if (!stream) {
      failures.fetch_add(1000);
      return;
    }
    std::mt19937 rng(static_cast<std::uint32_t>(t * 7919 + 1));
    for (int i = 0; i < iterations; ++i) {
      const std::size_t words = 1 + rng() % (1u << 16);
      auto b = gpu.memory().try_allocate(words * 4, stream->get());
      if (!b) {
        failures.fetch_add(1);
        continue;
      }
      vyre::device_buffer buffer(gpu.memory_ref(), *b, words * 4, stream->get());
      const std::uint32_t tag = static_cast<std::uint32_t>(t) << 24 | static_cast<std::uint32_t>(i);
      stamp<<<64, 256, 0, stream->get()>>>(buffer.as<std::uint32_t>(), words, tag);
      if (cudaGetLastError() != cudaSuccess) failures.fetch_add(1);
      // Hand the buffer to whoever comes next; free (on its allocation stream) one left by
      // another thread after checking it was not overwritten.
      for (auto& p : mailbox.post(parcel{std::move(buffer), tag}, rng)) {
        // The stamp was queued on another stream: wait for it, then read on ours.
        if (cudaStreamSynchronize(p.buffer.stream()) != cudaSuccess) failures.fetch_add(1);
        verify(p.buffer, p.tag, stream->get());
      }
    }
  });
  for (auto& p : mailbox.parcels) {
    REQUIRE(cudaStreamSynchronize(p.buffer.stream()) == cudaSuccess);
    verify(p.buffer, p.tag, p.buffer.stream());
  }
  mailbox.parcels.clear();
  CHECK(failures.load() == 0);
  CHECK(tally.verified.load() == threads * iterations);
  CHECK(gpu.memory().live_allocations() == 0);
  const auto s = gpu.telemetry().snapshot();
  CHECK(s.allocations == static_cast<std::uint64_t>(threads * iterations));
  CHECK(s.current_device_bytes == gauge_when_idle(gpu));
}

// ---------------------------------------------------------------------------------------------
// Resident store.

TEMPLATE_TEST_CASE("resident buffers round-trip pageable and pinned uploads as one operation",
                   "[runtime][gpu][resident]", vyre::alloc::caching_pool,
                   vyre::alloc::stream_ordered, vyre::alloc::direct) {
  auto gpu = acquire_or_fail<backend_for<TestType>>();
  auto stream = acquire_stream_or_fail(gpu);
  const std::size_t n = (std::size_t{10} << 20) + 3;
  const auto source = pattern_bytes(n, 42);
  auto h = gpu.allocate_resident(n, stream->get());
  REQUIRE_OK(h);
  auto span = gpu.resident_buffer(*h);
  REQUIRE_OK(span);
  CHECK(span->bytes == n);
  CHECK(span->data != nullptr);
  REQUIRE(cudaMemsetAsync(span->data, 0xEE, n, stream->get()) == cudaSuccess);  // poison

  gpu.telemetry().reset();
  // Pageable source, staged in 1 MiB chunks: 11 copies, one upload operation.
  REQUIRE_OK(gpu.resident().upload(*h, source, 0, stream->get(), {.chunk_bytes = 1u << 20}));
  auto s = gpu.telemetry().snapshot();
  CHECK(s.h2d_operations == 1);
  CHECK(s.h2d_bytes == n);
  std::vector<std::byte> back(n, std::byte{0});
  REQUIRE_OK(gpu.download(*h, back, 0, stream->get()));
  CHECK(back == source);
  CHECK(gpu.telemetry().snapshot().d2h_operations == 1);

  // Pinned source: copied directly; a sub-range at an offset.
  const std::size_t part = 4097, offset = 1234567;
  auto pinned = gpu.acquire_pinned(part);
  REQUIRE_OK(pinned);
  const auto fresh = pattern_bytes(part, 7);
  std::memcpy(pinned->data(), fresh.data(), part);
  REQUIRE_OK(
      gpu.upload(*h, std::span<const std::byte>(pinned->data(), part), offset, stream->get()));
  REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
  CHECK(gpu.telemetry().snapshot().h2d_operations == 2);
  std::vector<std::byte> window(part);
  REQUIRE_OK(gpu.download(*h, window, offset, stream->get()));
  CHECK(window == fresh);
  // Bytes around the window kept the first upload.
  std::vector<std::byte> before(16);
  REQUIRE_OK(gpu.download(*h, before, offset - 16, stream->get()));
  CHECK(std::equal(before.begin(), before.end(), source.begin() + (offset - 16)));

  REQUIRE_OK(gpu.free_resident(*h));
  CHECK(gpu.resident().live_buffers() == 0);
  CHECK(gpu.resident().bytes_in_use() == 0);
}

TEST_CASE("allocate_filled stages a callback's chunks and releases the buffer on failure",
          "[runtime][gpu][resident]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto stream = acquire_stream_or_fail(gpu);
  const std::size_t words = 3'000'001;
  auto fill = [](std::size_t at, std::span<std::byte> chunk) {
    // Word w holds w * 2654435761 (chunks are word-aligned: 64 KiB chunks).
    for (std::size_t i = 0; i < chunk.size() / 4; ++i) {
      const auto w = static_cast<std::uint32_t>((at / 4 + i) * 2654435761u);
      std::memcpy(chunk.data() + 4 * i, &w, 4);
    }
  };
  gpu.telemetry().reset();
  auto h =
      gpu.resident().allocate_filled(words * 4, stream->get(), fill, {.chunk_bytes = 1u << 16});
  REQUIRE_OK(h);
  CHECK(gpu.telemetry().snapshot().h2d_operations == 1);
  std::vector<std::uint32_t> back(words, 0);
  REQUIRE_OK(
      gpu.resident().download(*h, std::as_writable_bytes(std::span(back)), 0, stream->get()));
  for (std::size_t w = 0; w < words; ++w)
    if (back[w] != static_cast<std::uint32_t>(w * 2654435761u)) FAIL("word " << w << " differs");

  // A fill that fails half-way: error returned, nothing left allocated.
  int calls = 0;
  auto failing = [&calls](std::size_t, std::span<std::byte> chunk) -> vyre::expected<void> {
    std::memset(chunk.data(), 0, chunk.size());
    if (++calls == 3) return vyre::fail(vyre::error(vyre::errc::corrupt_data, "test: bad chunk"));
    return {};
  };
  const std::size_t live_before = gpu.resident().live_buffers();
  const std::size_t bytes_before = gpu.resident().bytes_in_use();
  auto bad = gpu.resident().allocate_filled(std::size_t{1} << 20, stream->get(), failing,
                                            {.chunk_bytes = 1u << 16});
  REQUIRE_ERROR(bad, vyre::errc::corrupt_data);
  CHECK(calls == 3);
  CHECK(gpu.resident().live_buffers() == live_before);
  CHECK(gpu.resident().bytes_in_use() == bytes_before);
}

TEST_CASE("resident handles from another backend, freed or stale are rejected",
          "[runtime][gpu][resident]") {
  auto a = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto b = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  CHECK(a.id() != b.id());
  CHECK(a.id() != 0);
  auto ha = a.allocate_resident(1024);
  REQUIRE_OK(ha);
  CHECK(ha->backend_id == a.id());

  const auto foreign = b.resident_buffer(*ha);
  REQUIRE_ERROR_WITH(foreign, vyre::errc::invalid_handle, "another backend");
  CHECK(foreign.error().value_or("handle_backend", 0) == a.id());

  const auto empty = a.resident_buffer(vyre::resident_handle{});
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().message().find("empty") != std::string::npos);

  const auto nonsense = a.resident_buffer(vyre::resident_handle{a.id(), 999, 1});
  REQUIRE_ERROR(nonsense, vyre::errc::invalid_handle);

  REQUIRE_OK(a.free_resident(*ha));
  const auto freed = a.resident_buffer(*ha);
  REQUIRE_ERROR_WITH(freed, vyre::errc::invalid_handle, "was freed");
  const auto double_free = a.free_resident(*ha);
  REQUIRE_ERROR(double_free, vyre::errc::invalid_handle);

  auto reused = a.allocate_resident(2048);  // takes the freed slot, next generation
  REQUIRE_OK(reused);
  CHECK(reused->slot == ha->slot);
  CHECK(reused->generation != ha->generation);
  const auto stale = a.resident_buffer(*ha);
  REQUIRE_FALSE(stale.has_value());
  CHECK(stale.error().message().find("stale") != std::string::npos);
  CHECK(stale.error().value_or("handle_generation", 0) == ha->generation);

  const auto device_source =
      a.upload(*reused, std::span<const std::byte>(
                            static_cast<const std::byte*>(a.resident_buffer(*reused)->data), 16));
  REQUIRE_ERROR(device_source, vyre::errc::invalid_argument);

  std::vector<std::byte> too_big(4096);
  const auto overflow = a.download(*reused, too_big);
  REQUIRE_ERROR(overflow, vyre::errc::out_of_range);
  CHECK(overflow.error().value_or("buffer_bytes", 0) == 2048);
  const auto past_end = a.upload(*reused, std::span<const std::byte>(too_big.data(), 16), 2040);
  REQUIRE_ERROR(past_end, vyre::errc::out_of_range);
}

TEST_CASE("free is refused while a pending launch uses the buffer", "[runtime][gpu][resident]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto stream = acquire_stream_or_fail(gpu);
  auto h = gpu.allocate_resident(4096, stream->get());
  REQUIRE_OK(h);
  spin<<<1, 1, 0, stream->get()>>>(spin_cycles);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE_OK(gpu.mark_in_use(*h, stream->get()));
  auto busy = gpu.resident().in_use(*h);
  REQUIRE_OK(busy);
  CHECK(*busy);
  const auto refused = gpu.free_resident(*h);
  REQUIRE_ERROR(refused, vyre::errc::in_use);
  CHECK(refused.error().value_or("pending_launches", 0) == 1);
  CHECK(gpu.resident().live_buffers() == 1);  // nothing was freed
  REQUIRE(cudaStreamSynchronize(stream->get()) == cudaSuccess);
  CHECK_FALSE(*gpu.resident().in_use(*h));
  REQUIRE_OK(gpu.free_resident(*h));
}

TEST_CASE("clear waits for pending work, frees everything and invalidates handles",
          "[runtime][gpu][resident]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::stream_ordered>>();
  auto stream = acquire_stream_or_fail(gpu);
  const auto handles = require_each_ok(
      3, [&] { return gpu.allocate_resident(std::size_t{1} << 20, stream->get()); });
  spin<<<1, 1, 0, stream->get()>>>(spin_cycles / 4);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE_OK(gpu.mark_in_use(handles[1], stream->get()));
  auto spun = gpu.acquire_event();
  REQUIRE_OK(spun);
  REQUIRE(cudaEventRecord(spun->get(), stream->get()) == cudaSuccess);
  CHECK(cudaEventQuery(spun->get()) == cudaErrorNotReady);
  (void)cudaGetLastError();
  REQUIRE_OK(gpu.clear_resident());
  CHECK(cudaEventQuery(spun->get()) == cudaSuccess);  // clear waited for the spin
  CHECK(gpu.resident().live_buffers() == 0);
  CHECK(gpu.resident().bytes_in_use() == 0);
  for (const auto& h : handles) CHECK_FALSE(gpu.resident_buffer(h).has_value());
}

TEST_CASE("the resident budget is 90% of device memory and its error says what is in use",
          "[runtime][gpu][resident]") {
  {
    auto gpu = acquire_or_fail<backend_for<vyre::alloc::direct>>();
    CHECK(gpu.resident().budget() == gpu.caps().total_memory / 10 * 9);
    const auto over = gpu.allocate_resident(gpu.caps().total_memory);
    REQUIRE_ERROR(over, vyre::errc::out_of_memory);
    CHECK(over.error().value_or("budget_bytes", 0) == gpu.caps().total_memory / 10 * 9);
  }
  vyre::backend_options options;
  options.resident_budget = 1'000'000;
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>(options);
  auto first = gpu.allocate_resident(600'000);
  REQUIRE_OK(first);
  const auto second = gpu.allocate_resident(600'000);
  REQUIRE_ERROR(second, vyre::errc::out_of_memory);
  CHECK(second.error().value_or("requested_bytes", 0) == 600'000);
  CHECK(second.error().value_or("bytes_in_use", 0) == 600'000);
  CHECK(second.error().value_or("budget_bytes", 0) == 1'000'000);
  CHECK(second.error().message().find("bytes_in_use=600000") != std::string::npos);
  REQUIRE_OK(gpu.free_resident(*first));
  REQUIRE_OK(gpu.allocate_resident(600'000));
}

// ---------------------------------------------------------------------------------------------
// Streams, events, pinned memory.

TEST_CASE("stream leases are non-blocking, synchronised on return and capped",
          "[runtime][gpu][streams]") {
  vyre::backend_options options;
  options.stream_cap = 4;
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>(options);
  cudaStream_t first_stream = nullptr;
  {
    auto lease = gpu.acquire_stream();
    REQUIRE_OK(lease);
    first_stream = lease->get();
    unsigned int flags = 0;
    REQUIRE(cudaStreamGetFlags(first_stream, &flags) == cudaSuccess);
    CHECK(flags == cudaStreamNonBlocking);
    spin<<<1, 1, 0, first_stream>>>(spin_cycles / 4);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    const auto syncs = gpu.telemetry().snapshot().sync_points;
    REQUIRE_OK(lease->reset());  // returns only once the spin finished
    CHECK(cudaStreamQuery(first_stream) == cudaSuccess);
    CHECK(gpu.telemetry().snapshot().sync_points == syncs + 1);
  }
  auto again = gpu.acquire_stream();
  REQUIRE_OK(again);
  CHECK(again->get() == first_stream);  // the idle stream was recycled
  std::vector<vyre::stream_lease> held;
  for (int i = 0; i < 3; ++i) {
    auto l = gpu.acquire_stream();
    REQUIRE_OK(l);
    held.push_back(std::move(*l));
  }
  const auto over = gpu.acquire_stream();
  REQUIRE_ERROR(over, vyre::errc::invalid_state);
  CHECK(over.error().value_or("cap", 0) == 4);
  held.pop_back();
  REQUIRE_OK(gpu.acquire_stream());
  CHECK(gpu.streams().created() == 4);
}

TEST_CASE("event leases are recycled after synchronisation", "[runtime][gpu][streams]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  auto stream = acquire_stream_or_fail(gpu);
  cudaEvent_t first = nullptr;
  {
    auto event = gpu.acquire_event();
    REQUIRE_OK(event);
    first = event->get();
    spin<<<1, 1, 0, stream->get()>>>(spin_cycles / 4);
    REQUIRE(cudaGetLastError() == cudaSuccess);
    REQUIRE(cudaEventRecord(first, stream->get()) == cudaSuccess);
  }  // the lease waits for the event before returning it
  CHECK(cudaEventQuery(first) == cudaSuccess);
  auto again = gpu.acquire_event();
  REQUIRE_OK(again);
  CHECK(again->get() == first);
  CHECK(gpu.events().created() == 1);
}

TEST_CASE("pinned leases are pinned, sized by class and reused", "[runtime][gpu][pinned]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  std::byte* first = nullptr;
  {
    auto lease = gpu.acquire_pinned(1000);
    REQUIRE_OK(lease);
    CHECK(lease->size() == 1000);
    CHECK(lease->capacity() == 4096);
    first = lease->data();
    cudaPointerAttributes attributes{};
    REQUIRE(cudaPointerGetAttributes(&attributes, first) == cudaSuccess);
    CHECK(attributes.type == cudaMemoryTypeHost);
  }
  CHECK(gpu.pinned().cached_bytes() == 4096);
  auto again = gpu.acquire_pinned(4000);
  REQUIRE_OK(again);
  CHECK(again->data() == first);
  CHECK(gpu.pinned().hits() == 1);
  CHECK(gpu.pinned().misses() == 1);
}

TEST_CASE("warmup fills the pools and cleanup returns everything", "[runtime][gpu][backend]") {
  auto gpu = acquire_or_fail<backend_for<vyre::alloc::caching_pool>>();
  REQUIRE_OK(gpu.warmup());
  CHECK(gpu.memory().cached_bytes() >= (std::size_t{1} << 20));
  CHECK(gpu.pinned().cached_bytes() >= (std::size_t{1} << 20));
  CHECK(gpu.streams().idle() == 1);
  REQUIRE_OK(gpu.allocate_resident(4096));
  REQUIRE_OK(gpu.cleanup());
  CHECK(gpu.memory().cached_bytes() == 0);
  CHECK(gpu.pinned().cached_bytes() == 0);
  CHECK(gpu.resident().live_buffers() == 0);
  CHECK(gpu.streams().created() == 0);
  CHECK(gpu.events().created() == 0);
}

TEST_CASE("acquire names a bad ordinal; the throwing policy throws", "[runtime][gpu][backend]") {
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  const auto bad = backend_for<vyre::alloc::direct>::acquire(count);
  REQUIRE_ERROR(bad, vyre::errc::invalid_argument);
  CHECK(bad.error().value_or("device_count", 0) == static_cast<std::uint64_t>(count));
  CHECK_THROWS_AS(vyre::backend<>::acquire(count), vyre::error_exception);
  auto gpu = vyre::backend<>::acquire(0);  // throwing policy: a plain backend
  // The capabilities are device 0's, as the runtime's own property query reports them.
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  const vyre::device_caps& caps = gpu.caps();
  CHECK(caps.ordinal == 0);
  CHECK(std::string(caps.name) == std::string(prop.name));
  CHECK(caps.compute_major == prop.major);
  CHECK(caps.compute_minor == prop.minor);
  CHECK(caps.sm_count == prop.multiProcessorCount);
  CHECK(caps.total_memory == prop.totalGlobalMem);
  CHECK(caps.free_memory_at_acquire <= prop.totalGlobalMem);
  CHECK(caps.l2_bytes == prop.l2CacheSize);
  CHECK(caps.warp_size == prop.warpSize);
  CHECK(caps.max_threads_per_block == prop.maxThreadsPerBlock);
  CHECK(caps.max_threads_per_sm == prop.maxThreadsPerMultiProcessor);
  CHECK(caps.max_grid_x == prop.maxGridSize[0]);
  CHECK(caps.shared_memory_per_block == prop.sharedMemPerBlock);
  CHECK(caps.shared_memory_per_block_optin == prop.sharedMemPerBlockOptin);
  CHECK(caps.shared_memory_per_sm == prop.sharedMemPerMultiprocessor);
  CHECK(caps.cooperative_launch == (prop.cooperativeLaunch != 0));
  CHECK(caps.memory_pools == (prop.memoryPoolsSupported != 0));
  vyre::backend<> moved = std::move(gpu);
  CHECK(moved.id() != 0);
  CHECK(gpu.id() == 0);
}
