// SPDX-License-Identifier: Apache-2.0
// The device algorithms against the CPU references: build byte-identical to pack_reference,
// congruence partition / merges / rebuilt image equal to congruence_reference, extraction
// costs and choices equal to extract_reference, on hand-made cases, synthetic e-graphs with
// planted congruences and every real e-graph of VYRE_EGRAPH_DATA_DIR. Memory handed out by the
// stream-ordered pool is poisoned first, so a column the device forgets to write shows up.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_engine_support.hpp"
#include "device_copy.cuh"
#include "egraph_pack_support.hpp"
#include "loop_drivers.hpp"
#include "reference_support.hpp"
#include "vyre/algorithms.cuh"

#if VYRE_HAVE_SIMDJSON
#include "egraph_json.hpp"
#endif

using namespace vyre::algorithms;
using vyre::device_choice;
using vyre::errc;
using vyre_test::add_row;
using vyre_test::design_example;
using vyre_test::gap_rows;
using vyre_test::wide_id_rows;

// Named namespace: kernels instantiated with it need external linkage.
namespace vyre_test {
// A bucketing hash that makes every row with the same op collide: only full-row comparison
// keeps different rows apart.
struct op_only_signature {
  __host__ __device__ std::uint32_t operator()(std::uint32_t op, const std::uint32_t*,
                                               std::uint32_t) const noexcept {
    return op;
  }
};

}  // namespace vyre_test

namespace {

// One backend for the whole test program: a dedicated stream-ordered pool that keeps what is
// freed (so the poison below stays in it), errors returned as values.
using test_policies = vyre::policies<vyre::alloc::stream_ordered, vyre::staging::little_endian,
                                     vyre::on_error::return_expected>;
using test_backend = vyre::backend<test_policies>;

test_backend& test_gpu() {
  // A function-local static, destroyed at exit before the CUDA runtime's own teardown (that
  // was registered earlier, by the acquire inside its initialiser): its pools go back, so
  // memcheck's leak check sees nothing left over.
  static test_backend instance = [] {
    vyre::backend_options options;
    options.memory.retained_cap = std::size_t{1} << 40;
    auto acquired = test_backend::acquire(0, options);
    REQUIRE(acquired.has_value());
    return std::move(*acquired);
  }();
  return instance;
}

// The value of a call that must succeed.
template <class Result>
auto made(Result&& result) {
  if (!result) FAIL(result.error().message());
  return std::move(*result);
}

template <class Signature>
void check_congruence_with(const raw_rows& rows, loop_driver driver, Signature signature,
                           bool on_default_stream = false);
raw_rows diamond_rows(std::uint32_t pairs);

struct stream_guard {
  cudaStream_t stream = nullptr;
  stream_guard() {
    REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    // Poison the backend's pool: allocate, fill with 0xA5 and free a block, so later
    // allocations (which reuse it: the pool keeps freed memory) hand out poisoned memory.
    constexpr std::size_t poison_bytes = std::size_t{256} << 20;
    auto block = test_gpu().memory().try_allocate(poison_bytes, stream);
    REQUIRE(block.has_value());
    REQUIRE(cudaMemsetAsync(*block, 0xA5, poison_bytes, stream) == cudaSuccess);
    REQUIRE(test_gpu().memory().try_deallocate(*block, poison_bytes, stream).has_value());
  }
  ~stream_guard() {
    (void)cudaStreamSynchronize(stream);
    (void)cudaStreamDestroy(stream);
  }
};

template <class T>
vyre::device_array<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  return vyre_test::upload(test_gpu().memory_ref(), host, stream);
}
using vyre_test::download;

struct device_rows {
  vyre::device_array<std::uint32_t> eclass, op, lens, children;
  raw_rows_ref view;
  device_rows(const raw_rows& rows, cudaStream_t stream)
      : eclass(upload(rows.row_eclass_ids, stream)),
        op(upload(rows.row_language_op_ids, stream)),
        lens(upload(rows.row_children_lens, stream)),
        children(upload(rows.children, stream)) {
    view = {eclass.get(),   op.get(),         lens.get(),
            children.get(), rows.row_count(), static_cast<std::uint32_t>(rows.children.size())};
  }
};

vyre::egraph::device_image build_on_device(const raw_rows& rows, cudaStream_t stream) {
  device_rows on_device(rows, stream);
  auto image = build(test_gpu(), on_device.view, stream);
  if (!image) FAIL(image.error().message());
  return std::move(*image);
}

void check_build(const raw_rows& rows) {
  stream_guard s;
  auto expected_image = pack_reference(rows.ref());
  REQUIRE(expected_image.has_value());
  const vyre::egraph::device_image image = build_on_device(rows, s.stream);
  CHECK(image.layout() == expected_image->layout());
  const auto words =
      download(image.words(), static_cast<std::size_t>(image.word_count()), s.stream);
  CHECK(words == vyre_test::words_of(*expected_image));
  CHECK(words == vyre_test::egraph_pack_words(rows));  // the egraph layer's host pack
}

// Both loop drivers, unless a sanitizer cannot follow the captured one (`capture_loops`).
std::vector<loop_driver> loop_drivers() {
  if (!vyre_test::capture_loops()) return {loop_driver::flag_readback};
  return {loop_driver::flag_readback, loop_driver::conditional_graph};
}

template <class Signature = image_row_signature>
void check_congruence(const raw_rows& rows, Signature signature = {}) {
  for (const loop_driver driver : loop_drivers()) {
    INFO("driver " << (driver == loop_driver::flag_readback ? "flag_readback"
                                                            : "conditional_graph"));
    check_congruence_with(rows, driver, signature);
  }
}

void check_extract(const raw_rows& rows, const std::vector<double>& cost,
                   const std::vector<std::uint32_t>& roots) {
  auto cpu =
      extract_reference(rows.ref(), {cost.data(), cost.size()}, {roots.data(), roots.size()});
  REQUIRE(cpu.has_value());
  for (const std::uint32_t single_block_max : {0u, 1u << 30}) {
    INFO("single_block_max_groups = " << single_block_max);
    stream_guard s;
    const vyre::egraph::device_image image = build_on_device(rows, s.stream);
    const vyre::device_array<double> device_cost = upload(cost, s.stream);
    auto gpu = extract(test_gpu(), image.columns(), device_cost.get(), {roots.data(), roots.size()},
                       s.stream, extract_options{single_block_max, single_block_max});
    if (!gpu) FAIL(gpu.error().message());
    const std::size_t G = cpu->eclass_ids.size();
    const auto costs = download(gpu->cost.get(), G, s.stream);
    for (std::size_t g = 0; g < G; ++g) {
      if (std::isinf(cpu->cost[g])) {
        CHECK(std::isinf(costs[g]));
      } else {
        CHECK(std::abs(costs[g] - cpu->cost[g]) <= 1e-9 * (std::max)(1.0, std::abs(cpu->cost[g])));
      }
    }
    CHECK(download(gpu->choice.get(), G, s.stream) == cpu->choice);
    if (std::isinf(cpu->root_cost)) {
      CHECK(std::isinf(gpu->root_cost));
    } else {
      CHECK(std::abs(gpu->root_cost - cpu->root_cost) <=
            1e-9 * (std::max)(1.0, std::abs(cpu->root_cost)));
    }
  }
}

template <class Signature>
void check_congruence_with(const raw_rows& rows, loop_driver driver, Signature signature,
                           bool on_default_stream) {
  stream_guard s;
  const cudaStream_t stream = on_default_stream ? cudaStream_t{} : s.stream;
  auto cpu = congruence_reference(rows.ref());
  REQUIRE(cpu.has_value());
  const vyre::egraph::device_image image = build_on_device(rows, stream);
  auto gpu = congruence(test_gpu(), image.columns(), stream, driver, signature);
  if (!gpu) FAIL(gpu.error().message());
  const std::size_t G = cpu->eclass_ids.size();
  CHECK(download(gpu->eclass_ids.get(), G, stream) == cpu->eclass_ids);
  // Both pick the smallest id of each set, so the canonical relabelling is the identity.
  CHECK(download(gpu->representative.get(), G, stream) == cpu->representative);
  CHECK(gpu->merges == cpu->merges);
  CHECK(gpu->rounds >= (rows.row_count() != 0 ? 1u : 0u));
  const std::uint32_t K = gpu->rebuilt.layout().row_count;
  REQUIRE(K == cpu->kept_rows.size());
  CHECK(download(gpu->kept_rows.get(), K, stream) == cpu->kept_rows);
  auto expected_rebuilt = pack_reference(cpu->rebuilt.ref());
  REQUIRE(expected_rebuilt.has_value());
  CHECK(gpu->rebuilt.layout() == expected_rebuilt->layout());
  CHECK(download(gpu->rebuilt.words(), static_cast<std::size_t>(gpu->rebuilt.word_count()),
                 stream) == vyre_test::words_of(*expected_rebuilt));
}

synthetic_egraph synthetic(std::uint32_t rows, std::uint64_t seed, bool sparse,
                           std::uint32_t window = 64, std::uint32_t ops = 8) {
  synthetic_options options;
  options.rows = rows;
  options.seed = seed;
  options.sparse_ids = sparse;
  options.window = window;
  options.op_count = ops;
  auto graph = make_synthetic_egraph(options);
  REQUIRE(graph.has_value());
  return std::move(*graph);
}

}  // namespace

TEST_CASE("device build is byte-identical to the host pack", "[gpu][build]") {
  check_build(design_example());
  raw_rows single;
  add_row(single, 0, 3, {});
  check_build(single);
  check_build(wide_id_rows());
  check_build(gap_rows());
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    check_build(synthetic(20000, seed, seed % 2 == 0).rows);
  }
  check_build(synthetic(1u << 20, 99, true).rows);
}

TEST_CASE("device build of an empty table is the one-word image", "[gpu][build]") {
  stream_guard s;
  auto image = build(test_gpu(), raw_rows_ref{}, s.stream);
  REQUIRE(image.has_value());
  CHECK(download(image->words(), 1, s.stream) == std::vector<std::uint32_t>{0});
}

TEST_CASE("device build rejects bad rows with the values named", "[gpu][build][errors]") {
  stream_guard s;
  raw_rows rows;
  add_row(rows, 1, 0, {7});
  device_rows missing(rows, s.stream);
  auto no_class = build(test_gpu(), missing.view, s.stream);
  REQUIRE_FALSE(no_class.has_value());
  CHECK(no_class.error().code() == errc::not_found);
  CHECK(no_class.error().value_or("child_entry", 9) == 0);
  CHECK(build(test_gpu(), missing.view, s.stream, child_check::off).has_value());

  // A child inside the id range that has no row (dense ids: a clear bit in the presence
  // bitmap), and one past a sparse id range (binary search): the first bad entry is named.
  raw_rows hole;
  add_row(hole, 0, 0, {});
  add_row(hole, 5, 1, {0, 3, 5, 2});
  device_rows hole_rows(hole, s.stream);
  auto in_hole = build(test_gpu(), hole_rows.view, s.stream);
  REQUIRE_FALSE(in_hole.has_value());
  CHECK(in_hole.error().code() == errc::not_found);
  CHECK(in_hole.error().value_or("child_entry", 9) == 1);
  raw_rows sparse_hole;
  add_row(sparse_hole, 0xFFFFFFF0u, 0, {});
  add_row(sparse_hole, 7, 1, {7, 0xFFFFFFF0u, 0xFFFFFFF1u});
  device_rows sparse_rows(sparse_hole, s.stream);
  auto past_sparse = build(test_gpu(), sparse_rows.view, s.stream);
  REQUIRE_FALSE(past_sparse.has_value());
  CHECK(past_sparse.error().code() == errc::not_found);
  CHECK(past_sparse.error().value_or("child_entry", 9) == 2);

  raw_rows_ref short_children = missing.view;
  short_children.child_count = 0;
  auto overrun = build(test_gpu(), short_children, s.stream);
  REQUIRE_FALSE(overrun.has_value());
  CHECK(overrun.error().code() == errc::out_of_range);
  CHECK(overrun.error().value_or("row", 9) == 0);

  raw_rows_ref no_rows{};
  no_rows.child_count = 3;
  CHECK(build(test_gpu(), no_rows, s.stream).error().code() == errc::invalid_argument);
}

TEST_CASE("device congruence equals the CPU reference on hand-made cases", "[gpu][congruence]") {
  SECTION("chain where each merge enables the next") {
    raw_rows rows;
    add_row(rows, 0, 9, {});
    add_row(rows, 1000, 9, {});
    for (std::uint32_t i = 1; i <= 200; ++i) {
      add_row(rows, 1000 + i, 1, {1000 + i - 1});
      add_row(rows, i, 1, {i - 1});
    }
    check_congruence(rows);
  }
  SECTION("diamond, self-loops, many children, sparse ids") {
    check_congruence(diamond_rows(500));
  }
  SECTION("no rows, and rows with nothing to merge") {
    check_congruence(raw_rows{});
    check_congruence(design_example());
  }
  SECTION("a real 32-bit signature collision") {
    check_congruence(vyre_test::collision_rows(vyre_test::colliding_children(4), 4));
  }
}

TEST_CASE("device congruence equals the CPU reference on synthetic e-graphs", "[gpu][congruence]") {
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    INFO("seed " << seed);
    check_congruence(
        synthetic(30000, seed, seed % 2 == 0, seed <= 4 ? 2 : 64, seed % 3 == 0 ? 1 : 8).rows);
  }
  check_congruence(synthetic(1u << 20, 7, true).rows);
}

TEST_CASE("device congruence runs on the legacy default stream with either driver",
          "[gpu][congruence]") {
  // The WHILE graph is captured on the work stream, except on the legacy default stream,
  // which cannot be captured: there a leased stream captures it.
  for (const loop_driver driver : loop_drivers())
    check_congruence_with(synthetic(30000, 3, false).rows, driver, image_row_signature{}, true);
}

TEST_CASE("device congruence never merges on a signature collision alone", "[gpu][congruence]") {
  // Every row collides with every other row of its op; the partition must not change.
  check_congruence(synthetic(4000, 5, true, 4, 3).rows, vyre_test::op_only_signature{});
}

TEST_CASE("the algorithms allocate from the backend and count into its telemetry",
          "[gpu][runtime]") {
  stream_guard s;
  const auto graph = synthetic(20000, 3, true);
  device_rows on_device(graph.rows, s.stream);
  const vyre::device_array<double> cost = upload(graph.cost, s.stream);
  REQUIRE(cudaStreamSynchronize(s.stream) == cudaSuccess);
  test_backend& gpu = test_gpu();
  const std::size_t live_before = gpu.memory().live_allocations();
  const vyre::telemetry_snapshot before = gpu.telemetry().snapshot();
  {
    auto image = build(gpu, on_device.view, s.stream);
    REQUIRE(image.has_value());
    CHECK(gpu.memory().live_allocations() == live_before + 1);  // the image, from the pool
    auto merged = congruence(gpu, image->columns(), s.stream);
    REQUIRE(merged.has_value());
    auto best = extract(gpu, image->columns(), cost.get(), {graph.roots.data(), graph.roots.size()},
                        s.stream);
    REQUIRE(best.has_value());
    const vyre::telemetry_snapshot after = gpu.telemetry().snapshot();
    // Every temporary and result came from the backend's resource; host waits are counted.
    CHECK(after.allocations > before.allocations + 20);
    CHECK(after.sync_points > before.sync_points + merged->rounds);
    CHECK(after.d2h_bytes > before.d2h_bytes);
    REQUIRE(cudaStreamSynchronize(s.stream) == cudaSuccess);
  }
  REQUIRE(cudaStreamSynchronize(s.stream) == cudaSuccess);
  CHECK(gpu.memory().live_allocations() == live_before);  // results and temporaries returned
}

TEST_CASE("device congruence rejects a child without rows", "[gpu][congruence][errors]") {
  stream_guard s;
  raw_rows rows;
  add_row(rows, 1, 0, {7});
  device_rows on_device(rows, s.stream);
  auto image = build(test_gpu(), on_device.view, s.stream, child_check::off);
  REQUIRE(image.has_value());
  auto result = congruence(test_gpu(), image->columns(), s.stream);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == errc::not_found);
}

TEST_CASE("device extraction equals the CPU reference", "[gpu][extract]") {
  SECTION("ties, repeated children, cycles") {
    const auto ties = vyre_test::ties_and_cycles();
    check_extract(ties.rows, ties.cost, ties.roots);
  }
  SECTION("a deep chain in reverse row order") {
    raw_rows rows;
    for (std::uint32_t i = 3000; i > 0; --i) add_row(rows, i, 1, {i - 1});
    add_row(rows, 0, 0, {});
    check_extract(rows, std::vector<double>(rows.row_count(), 1.5), {3000});
  }
  SECTION("synthetic e-graphs") {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      const auto graph = synthetic(40000, seed, seed % 2 == 1);
      check_extract(graph.rows, graph.cost, graph.roots);
    }
  }
}

// The errors every device extraction gives on vyre_test::two_class_cycle(): `run(cost, roots)`
// extracts from its image with those costs and roots.
template <class Run>
void check_extract_errors(const Run& run) {
  auto negative = run({-3, 1, 0}, {1});
  REQUIRE_FALSE(negative.has_value());
  CHECK(negative.error().code() == errc::invalid_argument);
  CHECK(negative.error().value_or("classes", 0) == 2);
  auto fine = run({-3, 4, 0}, {1});
  REQUIRE(fine.has_value());
  CHECK(fine->root_cost == -3.0);
  auto nan_cost = run({1, std::nan(""), 1}, {1});
  REQUIRE_FALSE(nan_cost.has_value());
  CHECK(nan_cost.error().value_or("row", 9) == 1);
  auto bad_root = run({1, 1, 1}, {1, 99});
  REQUIRE_FALSE(bad_root.has_value());
  CHECK(bad_root.error().code() == errc::not_found);
  CHECK(bad_root.error().value_or("eclass", 0) == 99);
}

TEST_CASE("device extraction errors", "[gpu][extract][errors]") {
  const raw_rows rows = vyre_test::two_class_cycle();
  for (const std::uint32_t single_block_max : {0u, 1u << 30}) {
    stream_guard s;
    const vyre::egraph::device_image image = build_on_device(rows, s.stream);
    check_extract_errors(
        [&](const std::vector<double>& cost, const std::vector<std::uint32_t>& roots) {
          const vyre::device_array<double> device_cost = upload(cost, s.stream);
          return extract(test_gpu(), image.columns(), device_cost.get(),
                         {roots.data(), roots.size()}, s.stream, extract_options{single_block_max});
        });
  }
}

#if VYRE_HAVE_SIMDJSON
TEST_CASE("every real e-graph: device congruence and extraction equal the CPU", "[gpu][data]") {
  const std::filesystem::path dir{VYRE_EGRAPH_DATA_DIR};
  if (!std::filesystem::exists(dir / "expected_tree_cost.tsv"))
    FAIL("no e-graph data in " << dir << ". Fix: set VYRE_EGRAPH_DATA_DIR, or filter out ~[data]");
  const auto expected = vyre_test::load_expected_costs((dir / "expected_tree_cost.tsv").string());
  REQUIRE(expected.size() > 10);
  for (const auto& entry : expected) {
    INFO(entry.file);
    const auto graph = vyre_test::load_egraph_json((dir / entry.file).string());
    check_build(graph.rows);
    check_congruence(graph.rows);
    check_extract(graph.rows, graph.cost, graph.roots);
    stream_guard s;
    const vyre::egraph::device_image image = build_on_device(graph.rows, s.stream);
    const vyre::device_array<double> cost = upload(graph.cost, s.stream);
    auto gpu = extract(test_gpu(), image.columns(), cost.get(),
                       {graph.roots.data(), graph.roots.size()}, s.stream);
    REQUIRE(gpu.has_value());
    CHECK(std::abs(gpu->root_cost - entry.root_tree_cost) <=
          1e-9 * (std::max)(1.0, std::abs(entry.root_tree_cost)));
  }
}
#endif

// ---- plans: repeated runs, growth, errors, dispatch -----------------------------------------

namespace {

raw_rows chain_rows(std::uint32_t length) {
  raw_rows rows;
  add_row(rows, 0, 9, {});
  add_row(rows, 1000000, 9, {});
  for (std::uint32_t i = 1; i <= length; ++i) {
    add_row(rows, 1000000 + i, 1, {1000000 + i - 1});
    add_row(rows, i, 1, {i - 1});
  }
  return rows;
}

// A diamond, self-loops, sparse ids and two congruent rows with `pairs` children each.
raw_rows diamond_rows(std::uint32_t pairs) {
  raw_rows rows;
  add_row(rows, 1, 0, {});
  add_row(rows, 2, 0, {});
  add_row(rows, 3, 1, {1});
  add_row(rows, 4, 2, {2});
  add_row(rows, 5, 3, {3, 4});
  add_row(rows, 6, 3, {3, 4});
  add_row(rows, 7, 1, {2});
  add_row(rows, 10, 1, {10});
  add_row(rows, 20, 1, {20});
  add_row(rows, 10, 2, {});
  add_row(rows, 20, 2, {});
  add_row(rows, 0xFFFFFFFFu, 4, {});
  add_row(rows, 0x80000000u, 4, {});
  add_row(rows, 0xFFFFFFFEu, 1, {0x80000000u, 0xFFFFFFFFu});
  add_row(rows, 0x7FFFFFFFu, 1, {0xFFFFFFFFu, 0xFFFFFFFFu});
  std::vector<std::uint32_t> left, right;
  for (std::uint32_t i = 0; i < pairs; ++i) {
    add_row(rows, 100000 + 2 * i, 7, {});
    add_row(rows, 100000 + 2 * i + 1, 7, {});
    left.push_back(100000 + 2 * i);
    right.push_back(100000 + 2 * i + 1);
  }
  add_row(rows, 900000, 8, left);
  add_row(rows, 900001, 8, right);
  return rows;
}

// The plan's view against the CPU reference and the one-shot device function.
template <class Signature>
void check_plan_congruence(congruence_plan<test_policies, Signature>& plan, const raw_rows& rows,
                           cudaStream_t stream) {
  auto cpu = congruence_reference(rows.ref());
  REQUIRE(cpu.has_value());
  const vyre::egraph::device_image image = build_on_device(rows, stream);
  auto view = plan.run(image.columns());
  if (!view) FAIL(view.error().message());
  const std::size_t G = cpu->eclass_ids.size();
  REQUIRE(view->class_count == G);
  CHECK(download(view->eclass_ids, G, stream) == cpu->eclass_ids);
  CHECK(download(view->representative, G, stream) == cpu->representative);
  CHECK(view->merges == cpu->merges);
  const std::uint32_t K = view->rebuilt.row_count();
  REQUIRE(K == cpu->kept_rows.size());
  CHECK(download(view->kept_rows, K, stream) == cpu->kept_rows);
  auto expected_rebuilt = pack_reference(cpu->rebuilt.ref());
  REQUIRE(expected_rebuilt.has_value());
  CHECK(image_layout::for_counts(view->rebuilt.counts) == expected_rebuilt->layout());
  auto copy = plan.copy_rebuilt_image(*view);
  REQUIRE(copy.has_value());
  CHECK(download(copy->words(), static_cast<std::size_t>(copy->word_count()), stream) ==
        vyre_test::words_of(*expected_rebuilt));
  // Same rounds as the one-shot function (the partition after each round is deterministic).
  auto once =
      congruence(test_gpu(), image.columns(), stream, loop_driver::flag_readback, Signature{});
  REQUIRE(once.has_value());
  CHECK(view->rounds == once->rounds);
}

void check_plan_extract(extract_plan<test_policies>& plan, const raw_rows& rows,
                        const std::vector<double>& cost, const std::vector<std::uint32_t>& roots,
                        cudaStream_t stream) {
  auto cpu =
      extract_reference(rows.ref(), {cost.data(), cost.size()}, {roots.data(), roots.size()});
  REQUIRE(cpu.has_value());
  const vyre::egraph::device_image image = build_on_device(rows, stream);
  const vyre::device_array<double> device_cost = upload(cost, stream);
  auto view = plan.run(image.columns(), device_cost.get(), {roots.data(), roots.size()});
  if (!view) FAIL(view.error().message());
  const std::size_t G = cpu->eclass_ids.size();
  REQUIRE(view->class_count == G);
  // Children are summed in the reference's order: the doubles are bit-identical.
  CHECK(download(view->cost, G, stream) == cpu->cost);
  CHECK(download(view->choice, G, stream) == cpu->choice);
  if (std::isinf(cpu->root_cost)) {
    CHECK(std::isinf(view->root_cost));
  } else {
    CHECK(view->root_cost == cpu->root_cost);
  }
}

}  // namespace

TEST_CASE("congruence_plan runs inputs of varying sizes in sequence, growing past its capacity",
          "[gpu][plan][congruence][sort_in_while]") {
  stream_guard s;
  auto plan = made(
      congruence_plan<test_policies>::create(test_gpu(), s.stream, {.rows = 16, .children = 16}));
  const plan_capacity first = plan.capacity();
  CHECK(first.rows == 1024);
  check_plan_congruence(plan, design_example(), s.stream);
  check_plan_congruence(plan, raw_rows{}, s.stream);
  check_plan_congruence(plan, chain_rows(200), s.stream);
  check_plan_congruence(plan, diamond_rows(300), s.stream);
  check_plan_congruence(plan, synthetic(30000, 3, true, 2, 8).rows, s.stream);  // grows
  CHECK(plan.capacity().rows == 32768);
  check_plan_congruence(plan, design_example(), s.stream);  // smaller bucket after growth
  check_plan_congruence(plan, chain_rows(511), s.stream);   // exactly a full 1024-row bucket
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    check_plan_congruence(plan,
                          synthetic(5000 * static_cast<std::uint32_t>(seed), seed, seed % 2 == 0,
                                    seed <= 2 ? 2 : 64, seed == 3 ? 1 : 8)
                              .rows,
                          s.stream);
  }
  // The same input twice: the replay starts from a clean state.
  const raw_rows again = synthetic(20000, 11, false, 2, 8).rows;
  check_plan_congruence(plan, again, s.stream);
  check_plan_congruence(plan, again, s.stream);
}

TEST_CASE("congruence_plan never merges on a signature collision alone",
          "[gpu][plan][congruence][sort_in_while]") {
  stream_guard s;
  auto plan = made(
      congruence_plan<test_policies, vyre_test::op_only_signature>::create(test_gpu(), s.stream));
  check_plan_congruence(plan, synthetic(4000, 5, true, 4, 3).rows, s.stream);
  const raw_rows rows = vyre_test::collision_rows(vyre_test::colliding_children(4), 4);
  auto design = made(congruence_plan<test_policies>::create(test_gpu(), s.stream));
  check_plan_congruence(design, rows, s.stream);
}

TEST_CASE("congruence_plan errors name the values and leave the plan usable",
          "[gpu][plan][congruence][errors][sort_in_while]") {
  stream_guard s;
  auto plan = made(congruence_plan<test_policies>::create(
      test_gpu(), s.stream, {.rows = 1024, .children = 4096}, plan_growth::fail));
  raw_rows missing;
  add_row(missing, 1, 0, {7});
  device_rows on_device(missing, s.stream);
  auto broken = build(test_gpu(), on_device.view, s.stream, child_check::off);
  REQUIRE(broken.has_value());
  auto bad_child = plan.run(broken->columns());
  REQUIRE_FALSE(bad_child.has_value());
  CHECK(bad_child.error().code() == errc::not_found);
  CHECK(bad_child.error().value_or("child_entry", 9) == 0);
  check_plan_congruence(plan, diamond_rows(300), s.stream);  // reuse after an input error

  const raw_rows big = synthetic(3000, 2, false).rows;
  const vyre::egraph::device_image image = build_on_device(big, s.stream);
  auto too_big = plan.run(image.columns());
  REQUIRE_FALSE(too_big.has_value());
  CHECK(too_big.error().code() == errc::out_of_range);
  CHECK(too_big.error().value_or("rows", 0) == big.row_count());
  CHECK(too_big.error().value_or("capacity_rows", 0) == 1024);
  check_plan_congruence(plan, chain_rows(100), s.stream);  // still usable at its capacity
  REQUIRE(plan.reserve({.rows = big.row_count(), .children = 1u << 16}).has_value());
  CHECK(plan.capacity().rows >= big.row_count());
  check_plan_congruence(plan, big, s.stream);
}

namespace {

// The sides `run_host` may pick; and a device run with its host copies on 1, 3 and every thread.
constexpr dispatch_options every_side[] = {
    {device_choice::gpu}, {device_choice::cpu}, {device_choice::automatic}};
constexpr dispatch_options host_copy_threads[] = {{device_choice::gpu, default_crossover, 1},
                                                  {device_choice::gpu, default_crossover, 3},
                                                  {device_choice::gpu, default_crossover, 0}};

//! `run_host(side)` on each of `sides` against the CPU reference's result `cpu`, by `difference`
//! (`cpu_engine_support.hpp`: the first field that differs, "" when none; costs bit for bit).
template <class RunHost, class Want, class Difference>
void check_each_side(std::span<const dispatch_options> sides, RunHost run_host, const Want& cpu,
                     Difference difference) {
  for (const dispatch_options& side : sides) {
    INFO("dispatch " << static_cast<int>(side.where) << ", host threads " << side.host_threads);
    const auto got = run_host(side);
    if (!got) FAIL(got.error().message());
    CHECK(difference(*got, cpu) == "");
  }
}

//! `plan.run_host` on `rows` against the CPU reference, on each of `sides`.
void check_run_host(congruence_plan<test_policies>& plan, const raw_rows& rows,
                    std::span<const dispatch_options> sides) {
  auto image = pack_reference(rows.ref());
  REQUIRE(image.has_value());
  auto cpu = congruence_reference(image->columns());
  REQUIRE(cpu.has_value());
  check_each_side(
      sides, [&](const dispatch_options& side) { return plan.run_host(image->columns(), side); },
      *cpu, vyre_test::congruence_difference);
}

//! `plan.run_host` on `graph` against the CPU reference, on each of `sides`; refused with one
//! cost short.
void check_run_host(extract_plan<test_policies>& plan, const synthetic_egraph& graph,
                    std::span<const dispatch_options> sides) {
  auto image = pack_reference(graph.rows.ref());
  REQUIRE(image.has_value());
  const cuda::std::span<const double> cost{graph.cost.data(), graph.cost.size()};
  const cuda::std::span<const std::uint32_t> roots{graph.roots.data(), graph.roots.size()};
  auto cpu = extract_reference(image->columns(), cost, roots);
  REQUIRE(cpu.has_value());
  check_each_side(
      sides,
      [&](const dispatch_options& side) {
        return plan.run_host(image->columns(), cost, roots, side);
      },
      *cpu, vyre_test::extraction_difference);
  auto wrong = plan.run_host(image->columns(), cost.subspan(1), roots, {device_choice::gpu});
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().code() == errc::invalid_argument);
}

}  // namespace

TEST_CASE("congruence_plan::run_host gives the CPU result on either side",
          "[gpu][plan][dispatch][sort_in_while]") {
  stream_guard s;
  auto plan = made(congruence_plan<test_policies>::create(test_gpu(), s.stream));
  for (const raw_rows& rows : {design_example(), chain_rows(300), diamond_rows(300),
                               synthetic(20000, 4, true, 2, 8).rows}) {
    INFO("rows " << rows.row_count());
    check_run_host(plan, rows, every_side);
  }
  // Large enough (about 60 MB staged) that the staging and the result's vectors are filled by
  // several threads, split by bytes across the columns.
  check_run_host(plan, synthetic(1u << 20, 4, true, 2, 8).rows, host_copy_threads);
}

TEST_CASE("extract_plan runs inputs of varying sizes in sequence", "[gpu][plan][extract]") {
  for (const std::uint32_t single_block_max : {0u, 1u << 30}) {
    INFO("single_block_max_groups = " << single_block_max);
    stream_guard s;
    auto plan = made(
        extract_plan<test_policies>::create(test_gpu(), s.stream, {}, plan_growth::reallocate,
                                            extract_options{single_block_max, single_block_max}));
    const auto ties = vyre_test::ties_and_cycles();
    check_plan_extract(plan, ties.rows, ties.cost, ties.roots, s.stream);
    raw_rows deep;
    for (std::uint32_t i = 3000; i > 0; --i) add_row(deep, i, 1, {i - 1});
    add_row(deep, 0, 0, {});
    check_plan_extract(plan, deep, std::vector<double>(deep.row_count(), 1.5), {3000}, s.stream);
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto graph = synthetic(10000 * static_cast<std::uint32_t>(seed), seed, seed % 2 == 1);
      check_plan_extract(plan, graph.rows, graph.cost, graph.roots, s.stream);
    }
    check_plan_extract(plan, ties.rows, ties.cost, ties.roots, s.stream);
    check_plan_extract(plan, raw_rows{}, {}, {}, s.stream);
  }
}

TEST_CASE("extract_plan errors name the values and leave the plan usable",
          "[gpu][plan][extract][errors]") {
  const raw_rows rows = vyre_test::two_class_cycle();
  for (const std::uint32_t single_block_max : {0u, 1u << 30}) {
    stream_guard s;
    auto plan = made(extract_plan<test_policies>::create(
        test_gpu(), s.stream, {.rows = 1024, .children = 1024}, plan_growth::fail,
        extract_options{single_block_max, single_block_max}));
    const vyre::egraph::device_image image = build_on_device(rows, s.stream);
    check_extract_errors(
        [&](const std::vector<double>& cost, const std::vector<std::uint32_t>& roots) {
          const vyre::device_array<double> device_cost = upload(cost, s.stream);
          return plan.run(image.columns(), device_cost.get(), {roots.data(), roots.size()});
        });
    const auto big = synthetic(5000, 1, false);
    const vyre::egraph::device_image big_image = build_on_device(big.rows, s.stream);
    const vyre::device_array<double> big_cost = upload(big.cost, s.stream);
    auto too_big =
        plan.run(big_image.columns(), big_cost.get(), {big.roots.data(), big.roots.size()});
    REQUIRE_FALSE(too_big.has_value());
    CHECK(too_big.error().code() == errc::out_of_range);
    CHECK(too_big.error().value_or("rows", 0) == big.rows.row_count());
    check_plan_extract(plan, rows, {1, 1, 1}, {1, 2}, s.stream);  // usable after the errors
  }
}

TEST_CASE("extract_plan::run_host gives the CPU result on either side", "[gpu][plan][dispatch]") {
  stream_guard s;
  auto plan = made(extract_plan<test_policies>::create(test_gpu(), s.stream));
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    INFO("seed " << seed);
    check_run_host(plan, synthetic(seed == 1 ? 100 : 20000, seed, seed % 2 == 1), every_side);
  }
  // Large enough that the staging (image and costs) and the result are split across threads.
  check_run_host(plan, synthetic(1u << 20, 5, true), host_copy_threads);
}

#if VYRE_HAVE_SIMDJSON
TEST_CASE("every real e-graph: plans in sequence and dispatch equal the CPU",
          "[gpu][plan][data][sort_in_while]") {
  const std::filesystem::path dir{VYRE_EGRAPH_DATA_DIR};
  if (!std::filesystem::exists(dir / "expected_tree_cost.tsv"))
    FAIL("no e-graph data in " << dir << ". Fix: set VYRE_EGRAPH_DATA_DIR, or filter out ~[data]");
  stream_guard s;
  auto closure = made(congruence_plan<test_policies>::create(test_gpu(), s.stream));
  auto best = made(extract_plan<test_policies>::create(test_gpu(), s.stream));
  for (const auto& entry :
       vyre_test::load_expected_costs((dir / "expected_tree_cost.tsv").string())) {
    INFO(entry.file);
    const auto graph = vyre_test::load_egraph_json((dir / entry.file).string());
    check_plan_congruence(closure, graph.rows, s.stream);
    check_plan_extract(best, graph.rows, graph.cost, graph.roots, s.stream);
    auto image = pack_reference(graph.rows.ref());
    REQUIRE(image.has_value());
    for (const device_choice where : {device_choice::gpu, device_choice::automatic}) {
      auto merged = closure.run_host(image->columns(), {where});
      REQUIRE(merged.has_value());
      auto cpu = congruence_reference(image->columns());
      REQUIRE(cpu.has_value());
      CHECK(merged->representative == cpu->representative);
      CHECK(merged->kept_rows == cpu->kept_rows);
      auto cheapest = best.run_host(image->columns(), {graph.cost.data(), graph.cost.size()},
                                    {graph.roots.data(), graph.roots.size()}, {where});
      REQUIRE(cheapest.has_value());
      CHECK(std::abs(cheapest->root_cost - entry.root_tree_cost) <=
            1e-9 * (std::max)(1.0, std::abs(entry.root_tree_cost)));
    }
  }
}
#endif

TEST_CASE("a build_workspace builds inputs of varying sizes in sequence", "[gpu][build]") {
  stream_guard s;
  build_workspace<test_policies> workspace(test_gpu(), s.stream);
  REQUIRE(workspace.reserve(16).has_value());
  CHECK(workspace.capacity() >= 16u);
  CHECK(workspace.reserve(0x80000000u).error().code() == errc::abi_limit);
  const auto check_with = [&](const raw_rows& rows) {
    auto expected_image = pack_reference(rows.ref());
    REQUIRE(expected_image.has_value());
    device_rows on_device(rows, s.stream);
    auto image = build(test_gpu(), on_device.view, workspace);
    if (!image) FAIL(image.error().message());
    CHECK(image->layout() == expected_image->layout());
    CHECK(download(image->words(), static_cast<std::size_t>(image->word_count()), s.stream) ==
          vyre_test::words_of(*expected_image));
  };
  check_with(design_example());
  check_with(synthetic(20000, 1, true).rows);  // grows
  CHECK(workspace.capacity() >= 19000u);
  check_with(design_example());  // a small input in a large workspace
  check_with(diamond_rows(300));
  check_with(chain_rows(300));
  check_with(synthetic(50000, 2, false).rows);  // grows again
  check_with(synthetic(50000, 2, false).rows);  // the same input twice

  // Errors leave the workspace usable.
  raw_rows missing;
  add_row(missing, 1, 0, {7});
  device_rows bad(missing, s.stream);
  auto no_class = build(test_gpu(), bad.view, workspace);
  REQUIRE_FALSE(no_class.has_value());
  CHECK(no_class.error().code() == errc::not_found);
  CHECK(no_class.error().value_or("child_entry", 9) == 0);
  raw_rows_ref short_children = bad.view;
  short_children.child_count = 0;
  auto overrun = build(test_gpu(), short_children, workspace);
  REQUIRE_FALSE(overrun.has_value());
  CHECK(overrun.error().code() == errc::out_of_range);
  CHECK(overrun.error().value_or("row", 9) == 0);
  CHECK(overrun.error().value_or("length_sum", 0) == 1);
  check_with(synthetic(1000, 3, true).rows);
}

TEST_CASE("a build_workspace build without the child check is byte-identical to the host packs",
          "[gpu][build]") {
  stream_guard s;
  build_workspace<test_policies> workspace(test_gpu(), s.stream);
  const auto check_with = [&](const raw_rows& rows) {
    INFO(rows.row_count() << " rows");
    auto expected_image = pack_reference(rows.ref());
    REQUIRE(expected_image.has_value());
    device_rows on_device(rows, s.stream);
    auto image = build(test_gpu(), on_device.view, workspace, child_check::off);
    if (!image) FAIL(image.error().message());
    CHECK(image->layout() == expected_image->layout());
    const auto words =
        download(image->words(), static_cast<std::size_t>(image->word_count()), s.stream);
    CHECK(words == vyre_test::words_of(*expected_image));
    CHECK(words == vyre_test::egraph_pack_words(rows));  // the egraph layer's host pack
  };
  check_with(raw_rows{});
  check_with(design_example());
  check_with(wide_id_rows());
  check_with(gap_rows());
  check_with(diamond_rows(300));
  check_with(chain_rows(300));
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    check_with(synthetic(20000 * static_cast<std::uint32_t>(seed), seed, seed % 2 == 0).rows);
  }
  check_with(design_example());  // a small input in the grown workspace
}

TEST_CASE("device build names the first row whose children run past the column",
          "[gpu][build][errors]") {
  stream_guard s;
  raw_rows rows;
  add_row(rows, 1, 0, {1});
  add_row(rows, 2, 0, {1, 2});
  add_row(rows, 3, 0, {1});
  rows.children.insert(rows.children.end(), {1, 1, 1, 1, 1});  // 9 readable child entries
  device_rows on_device(rows, s.stream);
  raw_rows_ref view = on_device.view;
  view.child_count = 2;  // row 1's range [1, 3) runs past 2
  auto past = build(test_gpu(), view, s.stream);
  REQUIRE_FALSE(past.has_value());
  CHECK(past.error().code() == errc::out_of_range);
  CHECK(past.error().value_or("row", 9) == 1);
  view.child_count = 9;  // the lengths fall short: the last row is named
  auto short_sum = build(test_gpu(), view, s.stream);
  REQUIRE_FALSE(short_sum.has_value());
  CHECK(short_sum.error().value_or("row", 9) == 2);
  CHECK(short_sum.error().value_or("length_sum", 0) == 4);

  // Lengths whose u32 sum wraps around to child_count: the u64 sum is what counts.
  raw_rows wrapping;
  add_row(wrapping, 1, 0, {1});
  add_row(wrapping, 2, 0, {1, 2});
  wrapping.row_children_lens[0] = 0xFFFFFFFFu;  // 0xFFFFFFFF + 2 = 1 (mod 2^32)
  device_rows wrapping_on_device(wrapping, s.stream);
  raw_rows_ref wrapping_view = wrapping_on_device.view;
  wrapping_view.child_count = 1;
  for (const child_check check : {child_check::on, child_check::off}) {
    auto wrapped = build(test_gpu(), wrapping_view, s.stream, check);
    REQUIRE_FALSE(wrapped.has_value());
    CHECK(wrapped.error().code() == errc::out_of_range);
    CHECK(wrapped.error().value_or("row", 9) == 0);
    CHECK(wrapped.error().value_or("length_sum", 0) == 0x100000001ull);
  }
}
