// SPDX-License-Identifier: Apache-2.0
// The public device pieces of vyre::eqsat, each alone against a host oracle: the lock-free
// union-find under many concurrent unites, e-matching of a pattern with a repeated variable, a
// nested constructor and a literal against brute force, the hash-cons under overlapping inserts
// (one class per distinct row, lookups, a full table, class ids run out), and the rebuild passes
// against a host congruence closure.
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/eqsat.cuh>
#include <vyre/runtime.cuh>

#include "device_copy.cuh"
#include "loop_drivers.hpp"
#include "require_ok.cuh"

namespace eq = vyre::eqsat;
namespace dev = vyre::eqsat::device;
using u32 = std::uint32_t;

namespace {

vyre::backend<>& test_gpu() {
  static vyre::backend<> gpu = vyre::backend<>::acquire(0);  // throws on failure
  return gpu;
}

template <class T>
vyre::device_array<T> make_array(std::size_t count, cudaStream_t stream) {
  auto a = vyre::device_array<T>::allocate(test_gpu().memory_ref(),
                                           (std::max)(count, std::size_t{1}), stream, "test array");
  REQUIRE_OK(a);
  return std::move(*a);
}

//! A copy of `host` on the device (allocated on `stream`, copied when it returns).
template <class T>
vyre::device_array<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  if (host.empty()) return make_array<T>(1, stream);
  return vyre_test::upload(test_gpu().memory_ref(), host, stream);
}
using vyre_test::download;

//! The host oracle's union-find: the representative of a class is its smallest id.
struct host_union_find {
  std::vector<u32> parent;
  explicit host_union_find(u32 n) : parent(n) { std::iota(parent.begin(), parent.end(), 0u); }
  u32 find(u32 x) const {
    while (parent[x] != x) x = parent[x];
    return x;
  }
  bool unite(u32 a, u32 b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent[(std::max)(a, b)] = (std::min)(a, b);
    return true;
  }
};

// --- user kernels: the pieces called from an engine author's own code ---------------------

__global__ void unite_pairs_kernel(dev::union_find_ref uf, const u32* a, const u32* b, u32 pairs,
                                   unsigned long long* merges) {
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < pairs; i += gridDim.x * blockDim.x)
    if (uf.unite(a[i], b[i])) atomicAdd(merges, 1ull);
}

__global__ void find_kernel(dev::union_find_ref uf, u32* roots) {
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < uf.size; i += gridDim.x * blockDim.x)
    roots[i] = uf.find(i);
}

//! Thread i: `lookup_or_insert` (or `lookup` when `look_only`) of row `rows[i % distinct]`.
__global__ void hashcons_kernel(dev::hashcons_ref h, const u32* rows, u32 distinct, u32 threads,
                                bool look_only, u32* classes, u32* statuses) {
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < threads; i += gridDim.x * blockDim.x) {
    const u32* args = rows + std::size_t{i % distinct} * h.arity;
    const dev::hashcons_result r = look_only ? h.lookup(args) : h.lookup_or_insert(args);
    classes[i] = r.eclass;
    statuses[i] = static_cast<u32>(r.status);
  }
}

__global__ void hashcons_insert_kernel(dev::hashcons_ref h, const u32* rows, u32 count,
                                       u32* statuses) {
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += gridDim.x * blockDim.x)
    statuses[i] = static_cast<u32>(h.insert(rows + std::size_t{i} * h.arity, 1000 + i).status);
}

//! A union-find of `ids` classes on the device after the unions (ua[i], ub[i]), made by a
//! kernel as an engine's apply makes them.
vyre::device_array<u32> united_classes(u32 ids, const std::vector<u32>& ua,
                                       const std::vector<u32>& ub, cudaStream_t s) {
  auto parent = make_array<u32>(ids, s);
  const dev::union_find_ref uf{parent.get(), ids};
  REQUIRE_OK(dev::init_classes(uf, 0, ids, s));
  auto da = upload(ua, s), db = upload(ub, s);
  auto merges = upload(std::vector<unsigned long long>{0}, s);
  unite_pairs_kernel<<<1, 64, 0, s>>>(uf, da.get(), db.get(), static_cast<u32>(ua.size()),
                                      merges.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);  // before the inputs are freed
  return parent;
}

constexpr unsigned blocks = 120;
constexpr unsigned threads_per_block = 256;

//! Rows of `width` sorted lexicographically (the arguments first, then the class).
std::vector<u32> sorted_rows(std::vector<u32> cells, u32 width) {
  std::vector<std::vector<u32>> rows;
  for (std::size_t r = 0; r < cells.size() / width; ++r)
    rows.emplace_back(cells.begin() + r * width, cells.begin() + (r + 1) * width);
  std::sort(rows.begin(), rows.end());
  std::vector<u32> out;
  for (const auto& row : rows) out.insert(out.end(), row.begin(), row.end());
  return out;
}

}  // namespace

TEST_CASE("eqsat device union_find: concurrent unites equal a host union-find",
          "[eqsat][gpu][pieces]") {
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  constexpr u32 ids = 100000;
  std::mt19937 rng(7);
  // Random pairs (a forest of random merges) and a shuffled chain over a tenth of the ids (long
  // paths, every union contending with its neighbours).
  std::vector<u32> a, b;
  std::uniform_int_distribution<u32> any(0, ids - 1);
  for (u32 i = 0; i < 60000; ++i) {
    a.push_back(any(rng));
    b.push_back(any(rng));
  }
  std::vector<u32> chain(ids / 10);
  std::iota(chain.begin(), chain.end(), 0u);
  std::shuffle(chain.begin(), chain.end(), rng);
  for (u32 i = 0; i + 1 < chain.size(); ++i) {
    a.push_back(chain[i] * 10 + 3);
    b.push_back(chain[i + 1] * 10 + 3);
  }
  host_union_find want(ids);
  std::uint64_t want_merges = 0;
  for (std::size_t i = 0; i < a.size(); ++i) want_merges += want.unite(a[i], b[i]) ? 1 : 0;

  auto parent = make_array<u32>(ids, s);
  const dev::union_find_ref uf{parent.get(), ids};
  REQUIRE_OK(dev::init_classes(uf, 0, ids, s));
  auto da = upload(a, s), db = upload(b, s);
  auto merges = upload(std::vector<unsigned long long>{0}, s);
  unite_pairs_kernel<<<blocks, threads_per_block, 0, s>>>(uf, da.get(), db.get(),
                                                          static_cast<u32>(a.size()), merges.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  auto found = make_array<u32>(ids, s);
  find_kernel<<<blocks, threads_per_block, 0, s>>>(uf, found.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  REQUIRE_OK(dev::compress(uf, s));
  auto roots = upload(std::vector<unsigned long long>{0, 0}, s);
  REQUIRE_OK(dev::count_roots(uf, ids / 2, roots.get(), s));

  const std::vector<u32> got_parent = download(parent.get(), ids, s);
  const std::vector<u32> got_found = download(found.get(), ids, s);
  u32 classes = 0, old_classes = 0, wrong = 0;
  for (u32 x = 0; x < ids; ++x) {
    const u32 r = want.find(x);  // the smallest id of x's class
    wrong += got_parent[x] != r || got_found[x] != r ? 1 : 0;
    classes += r == x ? 1 : 0;
    old_classes += r == x && x < ids / 2 ? 1 : 0;
  }
  CHECK(wrong == 0);
  // Every successful CAS merged two classes: as many as the host's merges.
  CHECK(download(merges.get(), 1, s)[0] == want_merges);
  CHECK(want_merges == ids - classes);
  const std::vector<unsigned long long> got_roots = download(roots.get(), 2, s);
  CHECK(got_roots[0] == classes);
  CHECK(got_roots[1] == old_classes);
}

TEST_CASE("eqsat device ematch: matches equal a brute-force enumeration", "[eqsat][gpu][pieces]") {
  // x repeated, Mul nested, the literal 2: `Add(x, Mul(x, Num(2)))`, planned from the rule a
  // session compiled (`device::plan_rule`).
  eq::session program;
  REQUIRE(program.run_text(R"((datatype M (Add M M) (Mul M M) (Num i64))
(rewrite (Add x (Mul x (Num 2))) (Mul x (Num 3))))",
                           "t.egg"));
  const eq::declarations& decl = program.decl();
  REQUIRE(decl.rules.size() == 1);
  auto planned = dev::plan_rule(decl, program.db(), decl.rules[0]);
  REQUIRE_OK(planned);
  const dev::rule_plan& plan = *planned;
  const auto add = static_cast<u32>(decl.find_function("Add"));
  const auto mul = static_cast<u32>(decl.find_function("Mul"));
  const auto num = static_cast<u32>(decl.find_function("Num"));
  REQUIRE(decl.functions.size() == 3);
  // Saved in the order the head reads them: x (the set's key), then the root (its value).
  const auto add_atom = std::find_if(plan.atoms.begin(), plan.atoms.end(),
                                     [&](const dev::plan_atom& a) { return a.table == add; });
  REQUIRE(add_atom != plan.atoms.end());
  REQUIRE(plan.saved == std::vector<u32>{add_atom->columns[0].value, add_atom->columns[2].value});
  REQUIRE(plan.sets.size() == 1);
  REQUIRE(plan.unites.empty());
  const u32 two = 2;         // i64 2 is its own encoding
  constexpr u32 values = 8;  // the Num rows hold values below it

  // A small random e-graph: 24 classes, rows with distinct arguments per table, sorted by them.
  // Skewed: most Mul rows in class 0 and most Add rows take class 0 as their second argument,
  // so one key holds most of the join's candidates.
  constexpr u32 classes = 24;
  const bool skewed = GENERATE(false, true);
  CAPTURE(skewed);
  std::mt19937 rng(11);
  std::uniform_int_distribution<u32> cls(0, classes - 1);
  std::bernoulli_distribution heavy(skewed ? 0.8 : 0.0);
  std::vector<std::vector<u32>> cells(3);
  std::set<std::vector<u32>> seen;
  for (u32 i = 0; i < 900; ++i) {
    const u32 t = i % 2 == 0 ? add : mul;
    const u32 second = t == add && heavy(rng) ? 0u : cls(rng);
    std::vector<u32> key{t, cls(rng), second};
    if (!seen.insert(key).second) continue;
    cells[t].insert(cells[t].end(), {key[1], key[2], t == mul && heavy(rng) ? 0u : cls(rng)});
  }
  for (u32 c = 0; c < classes; c += 2)  // Num rows: i64 values, several per class
    cells[num].insert(cells[num].end(), {c % 4 == 0 ? two : (c / 2) % values, c});
  u32 widths[3] = {};
  widths[add] = 3;
  widths[mul] = 3;
  widths[num] = 2;
  for (u32 t = 0; t < 3; ++t) cells[t] = sorted_rows(cells[t], widths[t]);

  // Brute force: every (Add row, Mul row, Num row) triple that satisfies the pattern.
  std::vector<std::vector<u32>> want;
  for (std::size_t i = 0; i < cells[add].size(); i += 3)
    for (std::size_t j = 0; j < cells[mul].size(); j += 3)
      for (std::size_t k = 0; k < cells[num].size(); k += 2) {
        const u32 x = cells[add][i], m = cells[add][i + 1], root = cells[add][i + 2];
        if (cells[mul][j + 2] != m || cells[mul][j] != x) continue;
        if (cells[num][k + 1] != cells[mul][j + 1] || cells[num][k] != two) continue;
        want.push_back({x, root});
      }
  REQUIRE(want.size() > 10);

  // At a capacity: every table gets 37 padding rows past its rows in use (copies of its first
  // rows, which would match), and the rows in use on the device (`live`), as in a captured
  // iteration; the matches must not change.
  const bool at_capacity = GENERATE(false, true);
  CAPTURE(at_capacity);
  constexpr u32 padding = 37;
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  std::vector<u32> in_use(3);
  for (u32 t = 0; t < 3; ++t) in_use[t] = static_cast<u32>(cells[t].size() / widths[t]);
  auto live = upload(in_use, s);
  std::vector<vyre::device_array<u32>> device_cells, scratch;
  std::vector<dev::table_ref> tables;
  for (u32 t = 0; t < 3; ++t) {
    std::vector<u32> held = cells[t];
    if (at_capacity)
      for (u32 i = 0; i < padding * widths[t]; ++i) held.push_back(cells[t][i % cells[t].size()]);
    device_cells.push_back(upload(held, s));
    const u32 mask = t == num ? 0b10u : 0b111u;
    tables.push_back({device_cells.back().get(), static_cast<u32>(held.size() / widths[t]),
                      widths[t], mask, at_capacity ? live.get() + t : nullptr});
    scratch.push_back(make_array<u32>(6 * std::size_t{tables.back().rows}, s));
  }
  const dev::key_bits bits{classes, values};
  std::vector<dev::column_index> indexes;  // keeps them for the checks below
  // Indexes by a pair of columns where the plan has a second known column (the Mul atom's x,
  // the Num atom's literal), the table itself where it is sorted that way.
  CHECK(std::any_of(plan.atoms.begin() + 1, plan.atoms.end(),
                    [](const dev::plan_atom& a) { return a.key_column2 != dev::no_column; }));
  const auto index_of = [&](u32 f, u32 column, u32 column2) -> vyre::expected<dev::column_index> {
    const int b = bits.of(tables[f], column);
    if (column2 != dev::no_column) {
      if (column == 0 && column2 == 1 && tables[f].width > 2)
        return dev::sorted_pair_index(tables[f]);
      return dev::build_pair_index(test_gpu().memory_ref(), tables[f], column, column2, b,
                                   scratch[f].get(), s);
    }
    if (column == 0) return dev::sorted_index(tables[f]);
    return dev::build_index(test_gpu().memory_ref(), tables[f], column, b, scratch[f].get(), s);
  };
  auto q = dev::flatten(plan, std::span<const dev::table_ref>(tables), index_of);
  REQUIRE_OK(q);
  dev::join_search search(test_gpu().memory_ref(), s);
  REQUIRE_OK(search.add(*q));
  const auto searched = search.run();
  REQUIRE_OK(searched);
  CHECK(*searched);  // no budget: every level runs
  const u32 total = search.matches(0);
  CHECK(total == want.size());
  auto out = make_array<u32>(std::size_t{total} * 2, s);
  REQUIRE_OK(search.write(0, out.get()));
  const std::vector<u32> flat = download(out.get(), std::size_t{total} * 2, s);
  std::vector<std::vector<u32>> got;
  for (u32 m = 0; m < total; ++m) got.push_back({flat[2 * m], flat[2 * m + 1]});
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  CHECK(got == want);

  // Every step a launch of its own (no batched launches) and every write at once: the same
  // matches in the same order.
  dev::join_search unbatched(test_gpu().memory_ref(), s);
  unbatched.batch_limit(0);
  REQUIRE_OK(unbatched.add(*q));
  REQUIRE_OK(unbatched.run());
  REQUIRE(unbatched.matches(0) == total);
  auto unbatched_out = make_array<u32>(std::size_t{total} * 2, s);
  std::uint32_t* const unbatched_outs[] = {unbatched_out.get()};
  REQUIRE_OK(unbatched.write_all(unbatched_outs));
  CHECK(download(unbatched_out.get(), std::size_t{total} * 2, s) == flat);

  // Two queries in one search, each with its own levels: both find every match, and query
  // `which`'s come out as the search above wrote them.
  const auto check_pair = [&](dev::join_search& pair, std::size_t which) {
    REQUIRE_OK(pair.run());
    REQUIRE(pair.matches(0) == total);
    REQUIRE(pair.matches(1) == total);
    auto written = make_array<u32>(std::size_t{total} * 2, s);
    REQUIRE_OK(pair.write(which, written.get()));
    CHECK(download(written.get(), std::size_t{total} * 2, s) == flat);
    // Both at once (the batched write): each as the search above wrote it.
    auto both = make_array<u32>(std::size_t{total} * 4, s);
    std::uint32_t* const outs[] = {both.get(), both.get() + std::size_t{total} * 2};
    REQUIRE_OK(pair.write_all(outs));
    const std::vector<u32> together = download(both.get(), std::size_t{total} * 4, s);
    CHECK(std::vector<u32>(together.begin(), together.begin() + std::size_t{total} * 2) == flat);
    CHECK(std::vector<u32>(together.begin() + std::size_t{total} * 2, together.end()) == flat);
    std::uint32_t* const too_few[] = {both.get()};
    CHECK_FALSE(pair.write_all(too_few));
  };
  // The same query twice.
  dev::join_search twice(test_gpu().memory_ref(), s);
  REQUIRE_OK(twice.add(*q));
  REQUIRE_OK(twice.add(*q));
  check_pair(twice, 1);
  // The query in the wide class (its kernels read it from device memory) beside the narrow
  // one: the same matches in the same order.
  std::vector<dev::wide_flat_query> wide(1);
  REQUIRE_OK(dev::flatten_into(wide[0], plan, std::span<const dev::table_ref>(tables), index_of));
  dev::join_search mixed(test_gpu().memory_ref(), s);
  REQUIRE_OK(mixed.add(wide[0]));
  REQUIRE_OK(mixed.add(*q));
  wide[0] = dev::wide_flat_query{};  // the search keeps its own copy
  check_pair(mixed, 0);

  // A budget below a level's candidates stops the search there (false); a large one does not.
  dev::join_search budgeted(test_gpu().memory_ref(), s);
  REQUIRE_OK(budgeted.add(*q));
  const auto over = budgeted.run(1);
  REQUIRE_OK(over);
  CHECK_FALSE(*over);
  dev::join_search roomy(test_gpu().memory_ref(), s);
  REQUIRE_OK(roomy.add(*q));
  REQUIRE_OK(roomy.add(*q));
  const auto fits = roomy.run(dev::join_search::no_budget - 1);
  REQUIRE_OK(fits);
  CHECK(*fits);
  CHECK(roomy.matches(1) == total);

  // A plan beyond the narrow class's arrays is refused there, not in the wide class; one
  // beyond the wide class's is refused there, with the counts named.
  dev::rule_plan big = plan;
  big.atoms.resize(dev::narrow_limits::atoms + 1, plan.atoms.back());
  CHECK_FALSE(dev::fits(big).has_value());
  CHECK_FALSE(big.query_fits<dev::narrow_limits>());
  CHECK(dev::fits<dev::wide_limits>(big).has_value());
  big.atoms.resize(dev::wide_limits::atoms + 1, plan.atoms.back());
  const auto refused = dev::fits<dev::wide_limits>(big);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message(), Catch::Contains("max_atoms=128"));
}

TEST_CASE("eqsat device ematch: the batched scan equals a host scan at every step boundary",
          "[eqsat][gpu][pieces]") {
  // A block scans 8 values a thread a step (2,048 a step): arrays of no value, one, around a
  // step and several steps, in one launch, each against std::exclusive_scan / inclusive_scan.
  const bool inclusive = GENERATE(false, true);
  CAPTURE(inclusive);
  const std::vector<u32> sizes{0, 1, 2047, 2048, 2049, 5000, 32768};
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  std::mt19937 rng(5);
  std::uniform_int_distribution<u32> value(0, 40);
  std::vector<std::vector<u32>> host(sizes.size());
  std::vector<vyre::device_array<u32>> arrays;
  std::vector<dev::detail::scan_batch_item> items;
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    host[a].resize(sizes[a]);
    for (u32& v : host[a]) v = value(rng);
    arrays.push_back(upload(host[a], s));
    items.push_back({arrays.back().get(), sizes[a]});
  }
  auto on_device = upload(items, s);
  dev::detail::scan_batch_kernel<>
      <<<static_cast<unsigned>(items.size()), dev::detail::block, 0, s>>>(on_device.get(),
                                                                          inclusive);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  for (std::size_t a = 0; a < sizes.size(); ++a) {
    CAPTURE(sizes[a]);
    std::vector<u32> want(sizes[a]);
    if (inclusive)
      std::inclusive_scan(host[a].begin(), host[a].end(), want.begin());
    else
      std::exclusive_scan(host[a].begin(), host[a].end(), want.begin(), 0u);
    if (sizes[a] != 0) CHECK(download(arrays[a].get(), sizes[a], s) == want);
  }
}

TEST_CASE("eqsat device hashcons: overlapping inserts give one class per distinct row",
          "[eqsat][gpu][pieces]") {
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  constexpr u32 distinct = 1000, threads = 1 << 16, first_class = 500;
  std::vector<u32> rows;
  for (u32 r = 0; r < distinct; ++r) rows.insert(rows.end(), {r % 37, r / 37 * 3 + 1});
  auto device_rows = upload(rows, s);
  auto hc = dev::hashcons::create(test_gpu().memory_ref(), 2, 4 * distinct, s, first_class);
  REQUIRE_OK(hc);
  CHECK(hc->capacity() == 4096);
  auto classes = make_array<u32>(threads, s), statuses = make_array<u32>(threads, s);
  hashcons_kernel<<<blocks, threads_per_block, 0, s>>>(
      hc->ref(), device_rows.get(), distinct, threads, false, classes.get(), statuses.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<u32> cls = download(classes.get(), threads, s);
  const std::vector<u32> st = download(statuses.get(), threads, s);
  std::vector<u32> class_of(distinct, dev::hashcons_ref::no_class);
  u32 inserted = 0, bad = 0, split = 0;
  for (u32 i = 0; i < threads; ++i) {
    const auto status = static_cast<dev::hashcons_status>(st[i]);
    inserted += status == dev::hashcons_status::inserted ? 1 : 0;
    bad += status != dev::hashcons_status::inserted && status != dev::hashcons_status::found;
    u32& c = class_of[i % distinct];
    if (c == dev::hashcons_ref::no_class) c = cls[i];
    split += c != cls[i] ? 1 : 0;
  }
  CHECK(inserted == distinct);
  CHECK(bad == 0);
  CHECK(split == 0);  // every thread of a row got the same class
  std::vector<u32> sorted = class_of;
  std::sort(sorted.begin(), sorted.end());
  std::vector<u32> dense(distinct);
  std::iota(dense.begin(), dense.end(), first_class);
  CHECK(sorted == dense);  // distinct rows, distinct classes, the fresh ids in order
  auto counted = hc->counts(s);
  REQUIRE_OK(counted);
  CHECK(counted->rows == distinct);
  CHECK(counted->next_class == first_class + distinct);

  // Lookups find every row with its class; a row never inserted is missing.
  hashcons_kernel<<<blocks, threads_per_block, 0, s>>>(
      hc->ref(), device_rows.get(), distinct, distinct, true, classes.get(), statuses.get());
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<u32> looked = download(classes.get(), distinct, s);
  const std::vector<u32> look_st = download(statuses.get(), distinct, s);
  CHECK(looked == class_of);
  CHECK(std::all_of(look_st.begin(), look_st.end(),
                    [](u32 v) { return v == static_cast<u32>(dev::hashcons_status::found); }));
  auto absent = upload(std::vector<u32>{99, 99}, s);
  hashcons_kernel<<<1, 1, 0, s>>>(hc->ref(), absent.get(), 1, 1, true, classes.get(),
                                  statuses.get());
  CHECK(download(statuses.get(), 1, s)[0] == static_cast<u32>(dev::hashcons_status::missing));

  // Cleared: empty, ids from the new first class.
  REQUIRE_OK(hc->clear(s, 7));
  auto after = hc->counts(s);
  REQUIRE_OK(after);
  CHECK(after->rows == 0);
  CHECK(after->next_class == 7);
}

TEST_CASE("eqsat device hashcons: a full table and exhausted class ids are reported",
          "[eqsat][gpu][pieces]") {
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  constexpr u32 distinct = 100;
  std::vector<u32> rows;
  for (u32 r = 0; r < distinct; ++r) rows.insert(rows.end(), {r, 3 * r});
  auto device_rows = upload(rows, s);
  auto classes = make_array<u32>(4 * distinct, s), statuses = make_array<u32>(4 * distinct, s);
  const auto count_status = [&](u32 n, dev::hashcons_status want) {
    const std::vector<u32> st = download(statuses.get(), n, s);
    return static_cast<u32>(std::count(st.begin(), st.end(), static_cast<u32>(want)));
  };

  SECTION("64 slots, 100 distinct rows from 400 threads") {
    auto hc = dev::hashcons::create(test_gpu().memory_ref(), 2, 64, s);
    REQUIRE_OK(hc);
    hashcons_kernel<<<2, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct, 4 * distinct, false,
                                      classes.get(), statuses.get());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    CHECK(count_status(4 * distinct, dev::hashcons_status::inserted) == 64);
    const auto ok = count_status(4 * distinct, dev::hashcons_status::inserted) +
                    count_status(4 * distinct, dev::hashcons_status::found);
    const auto full = count_status(4 * distinct, dev::hashcons_status::full);
    CHECK(ok + full == 4 * distinct);
    CHECK(full >= 4 * (distinct - 64));  // no thread of a row left out may claim success
    auto size = hc->size(s);
    REQUIRE_OK(size);
    CHECK(*size == 64);
    // Every row reported inserted or found is there; the others are not (never dropped
    // silently: their inserts said `full`).
    const std::vector<u32> st = download(statuses.get(), 4 * distinct, s);
    hashcons_kernel<<<1, distinct, 0, s>>>(hc->ref(), device_rows.get(), distinct, distinct, true,
                                           classes.get(), statuses.get());
    const std::vector<u32> look = download(statuses.get(), distinct, s);
    u32 mismatched = 0;
    for (u32 r = 0; r < distinct; ++r) {
      const bool stored = look[r] == static_cast<u32>(dev::hashcons_status::found);
      for (u32 t = r; t < 4 * distinct; t += distinct)
        mismatched += stored != (st[t] != static_cast<u32>(dev::hashcons_status::full)) ? 1 : 0;
    }
    CHECK(mismatched == 0);
  }

  SECTION("class ids [10, 20) for 100 rows") {
    auto hc = dev::hashcons::create(test_gpu().memory_ref(), 2, 256, s, 10, 20);
    REQUIRE_OK(hc);
    hashcons_kernel<<<1, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct, distinct, false,
                                      classes.get(), statuses.get());
    REQUIRE(cudaGetLastError() == cudaSuccess);
    CHECK(count_status(distinct, dev::hashcons_status::inserted) == 10);
    CHECK(count_status(distinct, dev::hashcons_status::out_of_classes) == 90);
    // A row whose insert ran out stays reported so by lookups.
    hashcons_kernel<<<1, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct, distinct, true,
                                      classes.get(), statuses.get());
    CHECK(count_status(distinct, dev::hashcons_status::found) == 10);
    CHECK(count_status(distinct, dev::hashcons_status::out_of_classes) == 90);
  }

  SECTION("rows inserted with their own classes, twice") {
    auto hc = dev::hashcons::create(test_gpu().memory_ref(), 2, 256, s);
    REQUIRE_OK(hc);
    hashcons_insert_kernel<<<1, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct,
                                             statuses.get());
    CHECK(count_status(distinct, dev::hashcons_status::inserted) == distinct);
    hashcons_insert_kernel<<<1, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct,
                                             statuses.get());
    CHECK(count_status(distinct, dev::hashcons_status::found) == distinct);
    hashcons_kernel<<<1, 256, 0, s>>>(hc->ref(), device_rows.get(), distinct, distinct, true,
                                      classes.get(), statuses.get());
    std::vector<u32> want(distinct);
    std::iota(want.begin(), want.end(), 1000u);
    CHECK(download(classes.get(), distinct, s) == want);
    auto counted = hc->counts(s);
    REQUIRE_OK(counted);
    CHECK(counted->rows == distinct);
    CHECK(counted->next_class == 0);  // given classes take no fresh id
  }

  CHECK_FALSE(dev::hashcons::create(test_gpu().memory_ref(), 2, 0, s).has_value());
  CHECK_FALSE(dev::hashcons::create(test_gpu().memory_ref(), 2, 16, s, 30, 20).has_value());
}

TEST_CASE("eqsat device rebuild: congruence closure equals a host closure",
          "[eqsat][gpu][pieces]") {
  // F(M) and G(M, M) over 300 classes. Random: random rows, then random unions that make some
  // rows congruent (and those, through their classes, others). Every row moves: G(a_i, a_i) =
  // u_i, G(b_i, b_i) = v_i, G(c_i, c_i) = t_i with a_i, b_i, c_i united, so the first round
  // unites u_i, v_i and t_i (the smallest) after F's turn, and every row F(u_i), F(v_i) moves
  // in the second: more than the slots' room at F's exact rows, so a third round clears them
  // and inserts every row again.
  // Large: random as above, 30,000 and 60,000 rows over 20,000 classes, 8,000 unions: many
  // rounds in which rows move away from slots they took.
  enum class shape { random, every_row_moves, large };
  const shape input = GENERATE(shape::random, shape::every_row_moves, shape::large);
  const bool every_row_moves = input == shape::every_row_moves;
  const u32 ids = input == shape::large ? 20000 : 300;
  INFO((every_row_moves ? "every row of F moves" : input == shape::large ? "large" : "random"));
  std::mt19937 rng(5);
  std::uniform_int_distribution<u32> cls(0, ids - 1);
  std::vector<u32> f, g;
  std::vector<u32> ua, ub;
  if (!every_row_moves) {
    const u32 scale = input == shape::large ? 100 : 1;
    const u32 unions = input == shape::large ? 8000 : 40;
    for (u32 i = 0; i < 250 * scale; ++i) f.insert(f.end(), {cls(rng), cls(rng)});
    for (u32 i = 0; i < 600 * scale; ++i) g.insert(g.end(), {cls(rng), cls(rng), cls(rng)});
    for (u32 i = 0; i < unions; ++i) {
      ua.push_back(cls(rng));
      ub.push_back(cls(rng));
    }
  } else {
    constexpr u32 n = 40;  // t_i = i, u_i = 40 + i, v_i = 80 + i, a/b/c_i = 120/160/200 + i
    for (u32 i = 0; i < n; ++i) {
      f.insert(f.end(), {40 + i, 240 + i % 30, 80 + i, 270 + i % 30});
      g.insert(g.end(), {120 + i, 120 + i, 40 + i, 160 + i, 160 + i, 80 + i, 200 + i, 200 + i, i});
      ua.insert(ua.end(), {120 + i, 120 + i});
      ub.insert(ub.end(), {160 + i, 200 + i});
    }
  }

  // Host: unions, then rounds of canonicalize + unite equal arguments, then dedupe.
  host_union_find want(ids);
  for (std::size_t i = 0; i < ua.size(); ++i) want.unite(ua[i], ub[i]);
  std::vector<u32>* tables[2] = {&f, &g};
  const u32 widths[2] = {2, 3};
  // Table t's rows by their canonical arguments (the first row's class kept); `unite`: also
  // unites the class of every later row with equal arguments with it (true when one merged).
  const auto canonical = [&](u32 t, bool unite, bool& changed) {
    std::map<std::vector<u32>, u32> by_args;
    const std::vector<u32>& cells = *tables[t];
    for (std::size_t r = 0; r < cells.size(); r += widths[t]) {
      std::vector<u32> args;
      for (u32 c = 0; c + 1 < widths[t]; ++c) args.push_back(want.find(cells[r + c]));
      const u32 self = want.find(cells[r + widths[t] - 1]);
      auto [it, fresh] = by_args.emplace(args, self);
      if (unite && !fresh && want.unite(it->second, self)) changed = true;
    }
    return by_args;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (u32 t = 0; t < 2; ++t) (void)canonical(t, true, changed);
  }
  std::vector<std::vector<u32>> want_cells(2);
  for (u32 t = 0; t < 2; ++t) {
    bool unused = false;
    for (const auto& [args, self] : canonical(t, false, unused)) {
      want_cells[t].insert(want_cells[t].end(), args.begin(), args.end());
      want_cells[t].push_back(want.find(self));
    }
  }

  // Device: the same unions from a kernel, then the passes, either launched as rebuild.cuh's
  // snippet runs them, or as gpu_engine runs them: tables viewed at a capacity past their rows
  // (padding full of junk, the rows in use on the device), in one captured fixpoint graph
  // with the dedupe as its suffix and CUB's scratch from one block.
  // Captured unless a sanitizer cannot follow CUB's sorts in the conditional loop.
  const bool captured = GENERATE(false, true);
  if (captured && !vyre_test::capture_loops()) return;
  INFO((captured ? "captured at a capacity" : "launched"));
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const cudaStream_t s = stream.get();
  auto parent = united_classes(ids, ua, ub, s);
  const dev::union_find_ref uf{parent.get(), ids};
  constexpr u32 padding = 37;
  std::vector<u32> live_rows;
  for (u32 t = 0; t < 2; ++t) live_rows.push_back(static_cast<u32>(tables[t]->size() / widths[t]));
  auto live = upload(live_rows, s);
  std::vector<vyre::device_array<u32>> device_cells;
  std::vector<dev::table_ref> views;
  for (u32 t = 0; t < 2; ++t) {
    std::vector<u32> cells = *tables[t];
    const u32 rows = live_rows[t] + (captured ? padding : 0);
    for (u32 junk = 0; cells.size() < std::size_t{rows} * widths[t]; ++junk)
      cells.push_back(junk % 3 == 0 ? ~0u : 0xdead0000u + junk);  // never a class: never read
    device_cells.push_back(upload(cells, s));
    views.push_back({device_cells.back().get(), rows, widths[t], (1u << widths[t]) - 1,
                     captured ? live.get() + t : nullptr});
  }
  auto scratch = make_array<u32>(4 * (std::max(views[0].rows, views[1].rows) + padding), s);
  auto kept = make_array<u32>(2, s);
  const dev::key_bits bits{ids, 0};
  // Each table's congruence index, at its view's rows, and their control words.
  auto index_block = make_array<u32>(
      dev::congruence_words(views[0].rows) + dev::congruence_words(views[1].rows), s);
  auto index_control = make_array<u32>(2 * dev::congruence_control_words, s);
  const dev::congruence_ref index[2] = {
      dev::congruence_at(index_block.get(), views[0].rows, index_control.get()),
      dev::congruence_at(index_block.get() + dev::congruence_words(views[0].rows), views[1].rows,
                         index_control.get() + dev::congruence_control_words)};
  const auto sort_and_dedupe = [&](vyre::device_resource_ref memory,
                                   cudaStream_t on) -> vyre::expected<void> {
    for (u32 t = 0; t < 2; ++t) {
      VYRE_TRY(dev::sort_rows(memory, views[t], bits, scratch.get(), on));
      VYRE_TRY(dev::drop_duplicates(memory, views[t], scratch.get(), kept.get() + t, on));
    }
    return {};
  };
  REQUIRE_OK(dev::congruence_start(index_control.get(), 2, s));
  if (!captured) {
    auto merged = make_array<u32>(1, s);
    int rounds = 0;
    for (;; ++rounds) {
      REQUIRE(rounds < 100);
      REQUIRE_OK(dev::compress(uf, s));
      REQUIRE(cudaMemsetAsync(merged.get(), 0, sizeof(u32), s) == cudaSuccess);
      for (u32 t = 0; t < 2; ++t)
        REQUIRE_OK(dev::congruence_round(views[t], uf, index[t], merged.get(), s));
      if (download(merged.get(), 1, s)[0] == 0) break;
    }
    CHECK(rounds >= 1);  // the unions made rows congruent: at least one round merged
    // Every row of F moving in the second round passes the slots' room (rows + moved rows
    // > three quarters of 2 rows + 1): the third round inserts every row again and unites.
    if (every_row_moves) CHECK(rounds >= 3);
    REQUIRE_OK(sort_and_dedupe(test_gpu().memory_ref(), s));
  } else {
    std::size_t bytes = 1;
    for (const dev::table_ref& t : views) {
      auto need = dev::rebuild_cub_bytes(t, bits);
      REQUIRE_OK(need);
      bytes = (std::max)(bytes, *need);
    }
    auto block = make_array<unsigned char>(bytes, s);
    vyre::scratch_block_resource scratch_block(block.get(), bytes);
    const vyre::device_resource_ref memory(scratch_block);
    auto control = make_array<vyre::graph::fixpoint_control>(1, s);
    auto* merged = reinterpret_cast<u32*>(&control.get()->changed);
    auto round = [&](cudaStream_t on) -> vyre::expected<void> {
      VYRE_TRY(dev::compress(uf, on));
      for (u32 t = 0; t < 2; ++t)
        VYRE_TRY(dev::congruence_round(views[t], uf, index[t], merged, on));
      return {};
    };
    auto dedupe = [&](cudaStream_t on) { return sort_and_dedupe(memory, on); };
    auto graph = vyre::graph::build_fixpoint_graph<vyre::on_error::return_expected>(
        s, control.get(), 100u, round, dedupe);
    REQUIRE_OK(graph);
    REQUIRE_OK(graph->launch(s));
    const auto first = download(control.get(), 1, s)[0];
    CHECK(first.converged == 1u);
    CHECK(first.rounds >= (every_row_moves ? 3u : 2u));  // merged, and the last one did not
    // Replayed on its own output with the kept rows in use: one round, nothing changes.
    REQUIRE(cudaMemcpyAsync(live.get(), kept.get(), 2 * sizeof(u32), cudaMemcpyDeviceToDevice, s) ==
            cudaSuccess);
    REQUIRE_OK(dev::congruence_start(index_control.get(), 2, s));
    REQUIRE_OK(graph->launch(s));
    const auto again = download(control.get(), 1, s)[0];
    CHECK(again.converged == 1u);
    CHECK(again.rounds == 1u);
  }
  const std::vector<u32> rows_kept = download(kept.get(), 2, s);
  for (u32 t = 0; t < 2; ++t) {
    INFO("table " << t);
    REQUIRE(rows_kept[t] == want_cells[t].size() / widths[t]);
    // Sorted by arguments, canonical, one row per argument tuple: the host's map order.
    CHECK(download(views[t].cells, want_cells[t].size(), s) == want_cells[t]);
  }
  // The last round's compress left every id pointing at its root, the host's (smallest id).
  const std::vector<u32> got_parent = download(parent.get(), ids, s);
  u32 wrong = 0;
  for (u32 x = 0; x < ids; ++x) wrong += got_parent[x] != want.find(x) ? 1 : 0;
  CHECK(wrong == 0);
}

TEST_CASE(
    "eqsat device rebuild: a function's rows of one key fold by its merge, with the "
    "timestamps the CPU engine gives",
    "[eqsat][gpu][pieces]") {
  // Rows (key, value) of a one-key function, the table's rows first and the iteration's
  // appended ones after, each with its timestamp; the iteration's is 9.
  struct row {
    u32 key, value, stamp;
  };
  struct want {
    u32 key, value, stamp;
  };
  const u32 now = 9;
  const auto fold = [&](dev::device_merge merge, const std::vector<row>& rows, u32& folded,
                        u32& conflict) {
    vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
    const cudaStream_t s = stream.get();
    std::vector<u32> cells, stamps;
    for (const row& r : rows) {
      cells.insert(cells.end(), {r.key, r.value});
      stamps.push_back(r.stamp);
    }
    auto d_cells = upload(cells, s), d_stamps = upload(stamps, s);
    auto d_now = upload(std::vector<u32>{now}, s);
    auto flags = upload(std::vector<u32>{0, 0}, s);
    const auto n = static_cast<u32>(rows.size());
    dev::table_ref t{d_cells.get(), n, 2, 0, nullptr, merge, d_stamps.get(), d_now.get()};
    auto scratch = make_array<u32>(4 * n, s);
    auto kept = make_array<u32>(1, s);
    REQUIRE_OK(dev::sort_rows(test_gpu().memory_ref(), t, dev::key_bits{1, 100}, scratch.get(), s));
    REQUIRE_OK(dev::drop_duplicates(test_gpu().memory_ref(), t, scratch.get(), kept.get(), s,
                                    flags.get(), flags.get() + 1));
    const u32 k = download(kept.get(), 1, s)[0];
    const std::vector<u32> out = download(d_cells.get(), 2 * k, s);
    const std::vector<u32> out_stamps = download(d_stamps.get(), k, s);
    const std::vector<u32> f = download(flags.get(), 2, s);
    folded = f[0];
    conflict = f[1];
    std::vector<want> got;
    for (u32 i = 0; i < k; ++i) got.push_back({out[2 * i], out[2 * i + 1], out_stamps[i]});
    return got;
  };
  const auto check_rows = [](const std::vector<want>& got, const std::vector<want>& expect) {
    REQUIRE(got.size() == expect.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("key " << expect[i].key);
      CHECK(got[i].key == expect[i].key);
      CHECK(got[i].value == expect[i].value);
      CHECK(got[i].stamp == expect[i].stamp);
    }
  };
  u32 folded = 0, conflict = 0;
  SECTION("new: the value written last; a row the merge left keeps its timestamp") {
    const auto got = fold(
        dev::device_merge::replace,
        {{4, 8, now}, {1, 10, 3}, {2, 5, 4}, {3, 7, 2}, {1, 20, now}, {2, 5, now}, {1, 30, now}},
        folded, conflict);
    check_rows(got, {{1, 30, now}, {2, 5, 4}, {3, 7, 2}, {4, 8, now}});
    CHECK(folded == 1);  // key 1's value changed
    CHECK(conflict == 0);
  }
  SECTION("min: the smallest value, new only where it changed") {
    const auto got = fold(dev::device_merge::min,
                          {{1, 10, 3}, {2, 10, 3}, {1, 12, now}, {2, 4, now}}, folded, conflict);
    check_rows(got, {{1, 10, 3}, {2, 4, now}});
    CHECK(folded == 1);
  }
  SECTION(":no-merge: one value is kept as it was; two are a conflict") {
    const auto same = fold(dev::device_merge::none, {{1, 5, 3}, {1, 5, now}}, folded, conflict);
    check_rows(same, {{1, 5, 3}});
    CHECK(conflict == 0);
    (void)fold(dev::device_merge::none, {{1, 5, 3}, {1, 6, now}}, folded, conflict);
    CHECK(conflict == 1);
  }
}

TEST_CASE("eqsat device rebuild: the batched passes over small tables equal the per-table passes",
          "[eqsat][gpu][pieces]") {
  // Tables of every kind the engine keeps, at most small_table_rows rows each: constructors
  // (narrow, and wide past narrow_limits::width), functions merged by min, max, replace and
  // none, with and without timestamps, of 0, 1, 2, 300 and small_table_rows rows. Random
  // classes below 3,000 with 1,500 unions, so rows become congruent over several rounds.
  // Both ways run the closure to its fixpoint and then the dedupe; everything must agree: the
  // partition, every table's kept rows, their timestamps, and the folded / conflict flags.
  // `repeats`: the functions' keys repeat (folds change values, a :no-merge key meets two
  // values); else every function key is distinct, and neither flag may be set. `live`: the
  // views cover a capacity past their rows (junk padding) with the rows in use on the device.
  const bool repeats = GENERATE(false, true);
  const bool live = GENERATE(false, true);
  INFO((repeats ? "keys repeat" : "distinct keys") << (live ? ", rows in use on the device" : ""));
  constexpr u32 ids = 3000, now = 9;
  struct spec {
    u32 width, class_mask;
    dev::device_merge merge;
    bool stamps;
    u32 rows;
  };
  const u32 most = dev::small_table_rows;
  const std::vector<spec> specs = {
      {3, 0b111, dev::device_merge::unite, true, most},
      {2, 0b11, dev::device_merge::unite, false, 300},
      {10, 0x3ff, dev::device_merge::unite, true, 300},
      {1, 0b1, dev::device_merge::unite, false, 2},
      {3, 0b111, dev::device_merge::unite, true, 1},
      {2, 0b11, dev::device_merge::unite, true, 0},
      {2, 0b01, dev::device_merge::min, true, 300},
      {10, 0x1ff, dev::device_merge::max, false, 300},
      {3, 0b011, dev::device_merge::replace, true, 300},
      {2, 0b01, dev::device_merge::replace, false, 300},
      {2, 0b01, dev::device_merge::none, true, 300},
  };
  std::mt19937 rng(11);
  std::uniform_int_distribution<u32> cls(0, ids - 1), base(0, 99), coin(0, 1);
  std::vector<std::vector<u32>> cells(specs.size()), stamps(specs.size());
  std::vector<u32> used(specs.size()), capacity(specs.size());
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const spec& sp = specs[t];
    used[t] = live && sp.rows > 2 ? sp.rows - 96 : sp.rows;
    capacity[t] = sp.rows;
    const bool function = sp.merge != dev::device_merge::unite;
    for (u32 r = 0; r < capacity[t]; ++r) {
      const bool junk = r >= used[t];
      // A function's first key column: classes 0..39 (keys repeat, also through unions), or
      // a class of its own per row, past every union (keys stay distinct).
      for (u32 c = 0; c < sp.width; ++c) {
        u32 v = ((sp.class_mask >> c) & 1u) != 0 ? cls(rng) : base(rng);
        if (function && c == 0) v = repeats ? cls(rng) % 40 : ids + r;
        cells[t].push_back(junk ? 0xdead0000u + r : v);
      }
      if (sp.merge == dev::device_merge::none && repeats && !junk) {
        // one value per key, but key 7 meets two
        const u32 key = cells[t][std::size_t{r} * sp.width];
        cells[t].back() = key == 7 && r % 2 == 0 ? 1000 : key * 3;
      }
      if (sp.stamps) stamps[t].push_back(coin(rng) != 0 ? now : 3);
    }
  }
  std::vector<u32> ua, ub;
  for (u32 i = 0; i < 1500; ++i) {
    ua.push_back(cls(rng));
    ub.push_back(cls(rng));
  }

  struct outcome {
    std::vector<u32> roots, kept, flags;
    std::vector<std::vector<u32>> cells, stamps;
    int rounds = 0;
  };
  const auto run = [&](bool batched) {
    vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
    const cudaStream_t s = stream.get();
    const u32 id_count = ids + most;  // the distinct keys' classes too
    auto parent = united_classes(id_count, ua, ub, s);
    const dev::union_find_ref uf{parent.get(), id_count};
    auto d_now = upload(std::vector<u32>{now}, s);
    auto d_live = upload(used, s);
    std::vector<vyre::device_array<u32>> d_cells, d_stamps;
    std::vector<dev::table_ref> views;
    std::size_t index_words = 0;
    for (std::size_t t = 0; t < specs.size(); ++t) {
      d_cells.push_back(upload(cells[t], s));
      d_stamps.push_back(upload(stamps[t], s));
      const spec& sp = specs[t];
      views.push_back({d_cells.back().get(), capacity[t], sp.width, sp.class_mask,
                       live ? d_live.get() + t : nullptr, sp.merge,
                       sp.stamps ? d_stamps.back().get() : nullptr, d_now.get()});
      index_words += dev::congruence_words(capacity[t]);
    }
    auto index_block = make_array<u32>(index_words, s);
    auto index_control = make_array<u32>(specs.size() * dev::congruence_control_words, s);
    std::vector<dev::congruence_ref> index;
    for (std::size_t t = 0, at = 0; t < specs.size(); at += dev::congruence_words(capacity[t++]))
      index.push_back(dev::congruence_at(index_block.get() + at, capacity[t],
                                         index_control.get() + t * dev::congruence_control_words));
    REQUIRE_OK(dev::congruence_start(index_control.get(), specs.size(), s));
    auto merged = make_array<u32>(1, s);
    outcome out;
    for (;; ++out.rounds) {
      REQUIRE(out.rounds < 100);
      REQUIRE_OK(dev::compress(uf, s));
      REQUIRE(cudaMemsetAsync(merged.get(), 0, sizeof(u32), s) == cudaSuccess);
      if (batched) {
        REQUIRE_OK(dev::congruence_round_small(views, index, uf, merged.get(), s));
      } else {
        for (std::size_t t = 0; t < specs.size(); ++t)
          REQUIRE_OK(dev::congruence_round(views[t], uf, index[t], merged.get(), s));
      }
      if (download(merged.get(), 1, s)[0] == 0) break;
    }
    auto kept = make_array<u32>(specs.size(), s);
    auto flags = upload(std::vector<u32>{0, 0}, s);
    if (batched) {
      std::vector<u32*> kept_at;
      for (std::size_t t = 0; t < specs.size(); ++t) kept_at.push_back(kept.get() + t);
      REQUIRE_OK(dev::sort_and_dedupe_small(views, kept_at, s, flags.get(), flags.get() + 1));
    } else {
      auto scratch = make_array<u32>(4 * most, s);
      for (std::size_t t = 0; t < specs.size(); ++t) {
        REQUIRE_OK(dev::sort_rows(test_gpu().memory_ref(), views[t], dev::key_bits{id_count, 100},
                                  scratch.get(), s));
        REQUIRE_OK(dev::drop_duplicates(test_gpu().memory_ref(), views[t], scratch.get(),
                                        kept.get() + t, s, flags.get(), flags.get() + 1));
      }
    }
    out.kept = download(kept.get(), specs.size(), s);
    out.flags = download(flags.get(), 2, s);
    const std::vector<u32> p = download(parent.get(), id_count, s);
    for (u32 x = 0; x < id_count; ++x) {
      u32 r = x;
      while (p[r] != r) r = p[r];
      out.roots.push_back(r);
    }
    for (std::size_t t = 0; t < specs.size(); ++t) {
      out.cells.push_back(download(d_cells[t].get(), std::size_t{out.kept[t]} * specs[t].width, s));
      out.stamps.push_back(specs[t].stamps ? download(d_stamps[t].get(), out.kept[t], s)
                                           : std::vector<u32>{});
    }
    return out;
  };
  const outcome each = run(false), batched = run(true);
  CHECK(each.rounds >= 2);  // the unions made rows congruent
  CHECK(batched.rounds >= 2);
  CHECK(batched.roots == each.roots);
  CHECK(batched.kept == each.kept);
  CHECK(batched.flags == each.flags);
  CHECK(each.flags == (repeats ? std::vector<u32>{1, 1} : std::vector<u32>{0, 0}));
  for (std::size_t t = 0; t < specs.size(); ++t) {
    INFO("table " << t << " of width " << specs[t].width);
    CHECK(each.kept[t] <= used[t]);
    CHECK(batched.cells[t] == each.cells[t]);
    CHECK(batched.stamps[t] == each.stamps[t]);
  }
  CHECK(each.kept[0] < used[0]);  // congruent rows met in the largest constructor

  // A table past the limit is refused, naming it.
  vyre::stream_lease stream = test_gpu().acquire_stream();  // throws on failure
  const dev::table_ref large{nullptr, most + 1, 2, 0b11};
  u32* nowhere = nullptr;
  const auto refused = dev::sort_and_dedupe_small({&large, 1}, {&nowhere, 1}, stream.get());
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == vyre::errc::invalid_argument);
}
