// SPDX-License-Identifier: Apache-2.0
// The caching pool's logic on the host, against a fake CUDA runtime defined in this file (the
// executable's definitions take precedence over libcudart's): thread caches, fences for
// cross-stream reuse, capture safety, the retained cap, thread exit, release and teardown, and
// a multi-thread stress that checks no block is ever handed out twice. Runs in CI without a GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <vyre/runtime/memory.hpp>

namespace {
// Every CUDA entry point this file fakes, each counted on every call.
enum class entry : std::size_t {
  malloc,
  free,
  get_last_error,
  get_device,
  set_device,
  mem_get_info,
  stream_is_capturing,
  event_create,
  event_record,
  event_query,
  event_destroy,
  stream_query,
  count
};
constexpr const char* entry_names[] = {
    "cudaMalloc",      "cudaFree",       "cudaGetLastError",      "cudaGetDevice",
    "cudaSetDevice",   "cudaMemGetInfo", "cudaStreamIsCapturing", "cudaEventCreateWithFlags",
    "cudaEventRecord", "cudaEventQuery", "cudaEventDestroy",      "cudaStreamQuery"};
static_assert(std::size(entry_names) == static_cast<std::size_t>(entry::count));
using call_counts = std::array<int, static_cast<std::size_t>(entry::count)>;

struct fake_runtime {
  std::atomic<int> mallocs{0}, frees{0}, event_records{0};
  //! Event records on the capturing stream (a record there would join the capture): counted
  //! here and checked by the tests, because the pool calls the fake from its callers' threads
  //! and Catch's assertions are not thread-safe.
  std::atomic<int> records_while_capturing{0};
  std::atomic<bool> events_complete{true};
  std::atomic<cudaStream_t> capturing{nullptr};
  std::array<std::atomic<int>, static_cast<std::size_t>(entry::count)> calls{};
  void reset() {
    mallocs = 0;
    frees = 0;
    event_records = 0;
    records_while_capturing = 0;
    events_complete = true;
    capturing = nullptr;
    for (auto& c : calls) c = 0;
  }
  void called(entry e) { calls[static_cast<std::size_t>(e)].fetch_add(1); }
  call_counts counts() const {
    call_counts out{};
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = calls[i].load();
    return out;
  }
};
fake_runtime fake;

// The calls of each kind made since `before`, named, for example "cudaEventQuery x2"; empty
// when none were made.
std::string calls_since(const call_counts& before) {
  const call_counts now = fake.counts();
  std::string out;
  for (std::size_t i = 0; i < now.size(); ++i)
    if (now[i] != before[i])
      out += std::string(out.empty() ? "" : ", ") + entry_names[i] + " x" +
             std::to_string(now[i] - before[i]);
  return out;
}

cudaStream_t stream(std::uintptr_t n) {
  return reinterpret_cast<cudaStream_t>(0x1000 + 64 * n);
}
}  // namespace

extern "C" {
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  fake.called(entry::malloc);
  *ptr = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (*ptr == nullptr) return cudaErrorMemoryAllocation;
  fake.mallocs.fetch_add(1);
  return cudaSuccess;
}
cudaError_t cudaFree(void* ptr) {
  fake.called(entry::free);
  std::free(ptr);
  fake.frees.fetch_add(1);
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) {
  fake.called(entry::get_last_error);
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int* device) {
  fake.called(entry::get_device);
  *device = 0;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) {
  fake.called(entry::set_device);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  fake.called(entry::mem_get_info);
  *free_bytes = *total = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, cudaStreamCaptureStatus* status) {
  fake.called(entry::stream_is_capturing);
  *status =
      s == fake.capturing.load() ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) {
  fake.called(entry::event_create);
  *event = reinterpret_cast<cudaEvent_t>(0x40);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t s) {
  fake.called(entry::event_record);
  if (s == fake.capturing.load()) fake.records_while_capturing.fetch_add(1);
  fake.event_records.fetch_add(1);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) {
  fake.called(entry::event_query);
  return fake.events_complete.load() ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventDestroy(cudaEvent_t) {
  fake.called(entry::event_destroy);
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t) {
  fake.called(entry::stream_query);
  FAIL("the pool must never query a stream (it would invalidate another thread's capture)");
  return cudaSuccess;
}
}

namespace {
constexpr std::size_t MiB = std::size_t{1} << 20;

void* ok(vyre::expected<void*> r) {
  if (!r) FAIL(r.error().message());
  return *r;
}
void ok(const vyre::expected<void>& r) {
  if (!r) FAIL(r.error().message());
}
// A block of a MiB freed on stream 1, then a MiB taken on stream 2, which cannot have that
// block: no fence covers the free yet (stream 1 was asked for one). Returns both blocks.
std::pair<void*, void*> free_then_miss(vyre::caching_pool_resource& pool) {
  void* block = ok(pool.try_allocate(MiB, stream(1)));
  ok(pool.try_deallocate(block, MiB, stream(1)));
  void* fresh = ok(pool.try_allocate(MiB, stream(2)));
  CHECK(fresh != block);
  return {block, fresh};
}

}  // namespace

TEST_CASE("caching pool (fake runtime): a hit reuses the block with no CUDA call",
          "[runtime][memory][caching_pool]") {
  fake.reset();
  vyre::telemetry_counters telemetry;
  {
    vyre::caching_pool_resource pool(0, &telemetry);
    void* first = ok(pool.try_allocate(MiB, stream(1)));
    ok(pool.try_deallocate(first, MiB, stream(1)));
    const call_counts before_hits = fake.counts();
    for (int i = 0; i < 100; ++i) {
      INFO("hit " << i);
      const call_counts before = fake.counts();
      void* again = ok(pool.try_allocate(MiB - 5, stream(1)));
      CHECK(calls_since(before) == "");  // no call of any faked kind on the hit
      CHECK(again == first);
      const call_counts before_free = fake.counts();
      ok(pool.try_deallocate(again, MiB, stream(1)));
      CHECK(calls_since(before_free) == "");  // nor on the free back into the cache
    }
    CHECK(calls_since(before_hits) == "");
    CHECK(fake.mallocs == 1);
    CHECK(fake.event_records == 0);
    const auto s = telemetry.snapshot();
    CHECK(s.pool_misses == 1);
    CHECK(s.pool_hits == 100);
    CHECK(s.allocations == 101);
    CHECK(s.current_device_bytes == MiB);  // the cached block is still held from the device
    CHECK(pool.cached_bytes() == MiB);
    CHECK(pool.live_allocations() == 0);
  }
  CHECK(fake.frees == 1);
  CHECK(telemetry.snapshot().current_device_bytes == 0);
}

TEST_CASE("caching pool (fake runtime): double and foreign frees are errors",
          "[runtime][memory][caching_pool]") {
  fake.reset();
  vyre::caching_pool_resource pool(0, nullptr);
  void* p = ok(pool.try_allocate(4096, stream(1)));
  ok(pool.try_deallocate(p, 4096, stream(1)));
  for (cudaStream_t s : {stream(1), stream(2)}) {
    const auto twice = pool.try_deallocate(p, 4096, s);
    REQUIRE_FALSE(twice.has_value());
    CHECK(twice.error().code() == vyre::errc::invalid_argument);
    CHECK(twice.error().value_or("pointer", 0) == reinterpret_cast<std::uintptr_t>(p));
  }
  int on_stack = 0;
  CHECK_FALSE(pool.try_deallocate(&on_stack, 4, stream(1)).has_value());
  // An uncached size (over the cap) is validated the same way.
  vyre::caching_pool_resource small_cap(0, nullptr, {.retained_cap = MiB});
  void* big = ok(small_cap.try_allocate(4 * MiB, stream(1)));
  ok(small_cap.try_deallocate(big, 4 * MiB, stream(1)));
  CHECK_FALSE(small_cap.try_deallocate(big, 4 * MiB, stream(1)).has_value());
}

TEST_CASE("caching pool (fake runtime): other streams wait for a fence, never a stream query",
          "[runtime][memory][caching_pool]") {
  fake.reset();
  vyre::caching_pool_resource pool(0, nullptr);
  const auto [block, fresh] = free_then_miss(pool);
  CHECK(fake.event_records == 0);
  // The next free on stream 1 records the fence; until it completes nobody else takes it.
  fake.events_complete = false;
  void* tiny = ok(pool.try_allocate(256, stream(1)));
  ok(pool.try_deallocate(tiny, 256, stream(1)));
  CHECK(fake.event_records == 1);
  void* other = ok(pool.try_allocate(MiB, stream(3)));
  CHECK(other != block);
  fake.events_complete = true;
  void* reused = ok(pool.try_allocate(MiB, stream(3)));
  CHECK(reused == block);
  for (void* p : {fresh, other, reused}) ok(pool.try_deallocate(p, MiB, stream(3)));
  CHECK(pool.live_allocations() == 0);
}

TEST_CASE("caching pool (fake runtime): no fence is recorded on a stream being captured",
          "[runtime][memory][caching_pool][graph]") {
  fake.reset();
  vyre::caching_pool_resource pool(0, nullptr);
  const auto [block, fresh] = free_then_miss(pool);
  fake.capturing = stream(1);
  void* inside = ok(pool.try_allocate(MiB, stream(1)));  // a hit inside the capture
  CHECK(inside == block);
  ok(pool.try_deallocate(inside, MiB, stream(1)));  // owes a fence, but stream 1 is capturing
  CHECK(fake.event_records == 0);
  CHECK(fake.records_while_capturing == 0);
  fake.capturing = nullptr;
  void* after = ok(pool.try_allocate(256, stream(1)));
  ok(pool.try_deallocate(after, 256, stream(1)));  // capture over: now the fence is recorded
  CHECK(fake.event_records == 1);
  ok(pool.try_deallocate(fresh, MiB, stream(2)));
}

TEST_CASE("caching pool (fake runtime): the retained cap holds over streams and threads",
          "[runtime][memory][caching_pool]") {
  fake.reset();
  vyre::caching_pool_resource pool(0, nullptr, {.retained_cap = 2 * MiB});
  std::vector<void*> blocks;
  for (std::uintptr_t s = 1; s <= 4; ++s) blocks.push_back(ok(pool.try_allocate(MiB, stream(s))));
  for (std::uintptr_t s = 1; s <= 4; ++s) ok(pool.try_deallocate(blocks[s - 1], MiB, stream(s)));
  CHECK(pool.cached_bytes() == 2 * MiB);
  CHECK(fake.frees == 2);  // the two that did not fit went back to the device
  // Small blocks go to thread caches, which count against the same cap.
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        void* p = ok(pool.try_allocate(64 * 1024, stream(10 + static_cast<std::uintptr_t>(t))));
        ok(pool.try_deallocate(p, 64 * 1024, stream(10 + static_cast<std::uintptr_t>(t))));
      }
    });
  for (auto& t : threads) t.join();
  CHECK(pool.cached_bytes() <= 2 * MiB);
  ok(pool.release_cached());
  CHECK(pool.cached_bytes() == 0);
  CHECK(fake.frees == fake.mallocs);
}

TEST_CASE(
    "caching pool (fake runtime): release_cached drains a live thread's cache, and an "
    "ended thread's cache goes back to the pool",
    "[runtime][memory][caching_pool]") {
  fake.reset();
  vyre::caching_pool_resource pool(0, nullptr);
  std::atomic<int> phase{0};
  std::thread idle([&] {
    void* p = ok(pool.try_allocate(4096, stream(7)));
    ok(pool.try_deallocate(p, 4096, stream(7)));  // into this thread's cache
    phase = 1;
    while (phase.load() != 2) std::this_thread::yield();
    // Its cache was drained meanwhile: the next allocation is a miss, and still correct.
    void* q = ok(pool.try_allocate(4096, stream(7)));
    ok(pool.try_deallocate(q, 4096, stream(7)));
  });
  while (phase.load() != 1) std::this_thread::yield();
  CHECK(pool.cached_bytes() == 4096);
  ok(pool.release_cached());
  CHECK(pool.cached_bytes() == 0);
  CHECK(fake.frees == 1);
  void* live = ok(pool.try_allocate(512, stream(8)));  // one live block: counted exactly
  CHECK(pool.live_allocations() == 1);
  ok(pool.try_deallocate(live, 512, stream(8)));
  CHECK(pool.live_allocations() == 0);
  phase = 2;
  idle.join();  // ends with a block in its cache: handed back to stream 7's lists
  CHECK(fake.mallocs == 3);
  CHECK(pool.cached_bytes() == 4096 + 512);
  CHECK(pool.live_allocations() == 0);
  void* p = ok(pool.try_allocate(4096, stream(7)));  // this thread takes it from the lists
  CHECK(fake.mallocs == 3);
  ok(pool.try_deallocate(p, 4096, stream(7)));
}

TEST_CASE(
    "caching pool (fake runtime): hits in many threads, and in a thread that takes over an "
    "ended thread's cache, are counted exactly",
    "[runtime][memory][caching_pool][telemetry]") {
  fake.reset();
  vyre::telemetry_counters telemetry;
  vyre::caching_pool_resource pool(0, &telemetry);
  constexpr int threads = 4, rounds = 3, hits = 500;
  constexpr std::size_t bytes = 3000;  // class 4096
  // Each round's threads end before the next round's start, whose threads then adopt the
  // ended threads' caches (and their ids may be recycled): the counts must not move with them.
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        for (int i = 0; i < hits; ++i) {
          void* p = ok(pool.try_allocate(bytes, stream(20 + t)));
          ok(pool.try_deallocate(p, bytes, stream(20 + t)));
        }
      });
    for (auto& w : workers) w.join();
  }
  const auto s = telemetry.snapshot();
  const auto total = std::uint64_t{threads} * rounds * hits;
  CHECK(s.pool_hits + s.pool_misses == total);
  CHECK(s.allocations == total);
  CHECK(s.bytes_requested == total * bytes);
  CHECK(s.pool_misses == std::uint64_t(fake.mallocs.load()));
  CHECK(s.pool_misses <= std::uint64_t{threads});  // later rounds reuse the handed-back blocks
  // A snapshot does not disturb the counting thread's local handle.
  void* p = ok(pool.try_allocate(bytes, stream(20)));
  ok(pool.try_deallocate(p, bytes, stream(20)));
  CHECK(telemetry.snapshot().allocations == total + 1);
  CHECK(telemetry.snapshot().bytes_requested == (total + 1) * bytes);
}

TEST_CASE("caching pool (fake runtime): 8 threads never get a block that is still live",
          "[runtime][memory][caching_pool][stress]") {
  fake.reset();
  {
    vyre::caching_pool_resource pool(0, nullptr, {.retained_cap = 8 * MiB});
    std::mutex live_mutex;
    std::set<void*> live;
    std::atomic<int> duplicates{0}, errors{0};
    struct parcel {
      void* ptr;
      std::size_t bytes;
    };
    std::mutex mailbox_mutex;
    std::vector<parcel> mailbox;
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<std::uint32_t>(t));
        for (int i = 0; i < 4000; ++i) {
          const cudaStream_t s = stream(rng() % 6);
          const std::size_t bytes = std::size_t{1} << (8 + rng() % 14);
          auto p = pool.try_allocate(bytes, s);
          if (!p) {
            errors.fetch_add(1);
            continue;
          }
          {
            std::lock_guard lock(live_mutex);
            if (!live.insert(*p).second) duplicates.fetch_add(1);
          }
          // Free either our own block or one another thread left, on a random stream.
          parcel out{*p, bytes};
          {
            std::lock_guard lock(mailbox_mutex);
            mailbox.push_back(out);
            std::swap(mailbox[rng() % mailbox.size()], mailbox.back());
            out = mailbox.back();
            mailbox.pop_back();
          }
          {
            std::lock_guard lock(live_mutex);
            live.erase(out.ptr);
          }
          if (!pool.try_deallocate(out.ptr, out.bytes, stream(rng() % 6))) errors.fetch_add(1);
          if (i % 1000 == 999 && t == 0) (void)pool.release_cached();
        }
      });
    for (auto& t : threads) t.join();
    CHECK(duplicates == 0);
    CHECK(errors == 0);
    CHECK(fake.records_while_capturing == 0);
    CHECK(mailbox.empty());
    CHECK(pool.live_allocations() == 0);
    CHECK(pool.cached_bytes() <= 8 * MiB);
  }
  CHECK(fake.frees == fake.mallocs);  // teardown returned everything
}
