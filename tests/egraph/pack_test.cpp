// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/egraph.hpp>

namespace eg = vyre::egraph;
using expect = vyre::on_error::return_expected;

namespace {
std::vector<std::uint32_t> to_vector(cuda::std::span<const std::uint32_t> words) {
  return {words.begin(), words.end()};
}
eg::snapshot design_example() {
  return eg::snapshot::build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}});
}
}  // namespace

// The layout is a constant expression.
static_assert(eg::image_layout::for_counts(3, 2, 2).offset(eg::image_column::group_offsets) * 4 ==
              76);
static_assert(eg::image_layout::for_counts(3, 2, 2).word_count() == 6 * 3 + 2 + 2 * 2 + 1);
static_assert(eg::image_layout::for_counts(0, 0, 0).word_count() == 1);
static_assert(std::is_trivially_copyable_v<eg::image_layout>);
static_assert(std::is_trivially_copyable_v<eg::image_ref>);
static_assert(std::is_trivially_copyable_v<eg::row>);

TEST_CASE("pack: the format worked example, exact words and byte offset 76", "[egraph][pack]") {
  const auto image = eg::pack(design_example());
  const auto& layout = image.layout();
  CHECK(layout.row_count == 3);
  CHECK(layout.child_count == 2);
  CHECK(layout.group_count == 2);
  using W = std::vector<std::uint32_t>;
  CHECK(to_vector(image.column(eg::image_column::row_eclass_ids)) == W{2, 1, 2});
  CHECK(to_vector(image.column(eg::image_column::row_language_op_ids)) == W{0, 0, 1});
  CHECK(to_vector(image.column(eg::image_column::row_children_offsets)) == W{0, 0, 0});
  CHECK(to_vector(image.column(eg::image_column::row_children_lens)) == W{0, 0, 2});
  CHECK(to_vector(image.column(eg::image_column::row_signatures)) ==
        W{1959786413u, 1959786413u, 2225812561u});
  CHECK(to_vector(image.column(eg::image_column::children)) == W{1, 2});
  CHECK(to_vector(image.column(eg::image_column::group_eclass_ids)) == W{1, 2});
  CHECK(to_vector(image.column(eg::image_column::group_offsets)) == W{0, 1, 3});
  CHECK(to_vector(image.column(eg::image_column::group_rows)) == W{1, 0, 2});
  CHECK(to_vector(image.words()) == W{2, 1, 2, 0,           0,           1,           0, 0, 0,
                                      0, 0, 2, 1959786413u, 1959786413u, 2225812561u, 1, 2, 1,
                                      2, 0, 1, 3,           1,           0,           2});
  CHECK(layout.column(eg::image_column::group_offsets) == eg::column_span{19, 3});
  CHECK(layout.column(eg::image_column::children).is_empty() == false);

  const auto plan = eg::plan_upload(image);
  CHECK(plan.layout().offset(eg::image_column::group_offsets) == 76);
  CHECK(plan.layout().column(eg::image_column::group_offsets).length == 12);
  CHECK(plan.total_bytes() == 25 * 4);
  CHECK(plan.bytes().size() == 100);
  CHECK(plan.words().data() == image.words().data());  // borrowed: no copy
}

TEST_CASE("pack: empty snapshot packs to the single group-offset word", "[egraph][pack]") {
  const auto image = eg::pack(eg::snapshot{});
  CHECK(to_vector(image.words()) == std::vector<std::uint32_t>{0});
  CHECK(image.layout().column(eg::image_column::row_eclass_ids).is_empty());
  CHECK(image.layout().column(eg::image_column::group_offsets) == eg::column_span{0, 1});
  CHECK(eg::validate_image(image.ref()).has_value());
}

TEST_CASE("pack_into: caller memory, exact size, too small is an error", "[egraph][pack]") {
  const auto snap = design_example();
  REQUIRE(eg::packed_word_count(snap) == 25u);
  std::vector<std::uint32_t> buffer(30, 0xDEADBEEFu);
  const auto layout =
      eg::pack_into(snap, cuda::std::span<std::uint32_t>(buffer.data(), buffer.size()));
  CHECK(layout == eg::pack(snap).layout());
  CHECK(std::equal(buffer.begin(), buffer.begin() + 25, eg::pack(snap).words().begin()));
  CHECK(buffer[25] == 0xDEADBEEFu);  // nothing past the image is touched

  std::vector<std::uint32_t> tiny(24, 0xDEADBEEFu);
  const auto result =
      eg::pack_into<expect>(snap, cuda::std::span<std::uint32_t>(tiny.data(), tiny.size()));
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::invalid_argument);
  CHECK(result.error().value_or("destination_words", 0) == 24);
  CHECK(result.error().value_or("image_words", 0) == 25);
  CHECK(std::all_of(tiny.begin(), tiny.end(), [](std::uint32_t w) { return w == 0xDEADBEEFu; }));
  CHECK_THROWS_AS(eg::pack_into(snap, cuda::std::span<std::uint32_t>(tiny.data(), tiny.size())),
                  vyre::error_exception);
}

TEST_CASE("prepare_pack: size first, write once", "[egraph][pack]") {
  const auto snap = design_example();
  auto prepared = eg::prepare_pack(snap);
  CHECK(prepared.word_count() == 25);
  std::vector<std::uint32_t> buffer(prepared.word_count());
  std::move(prepared).write_into(cuda::std::span<std::uint32_t>(buffer.data(), buffer.size()));
  CHECK(std::equal(buffer.begin(), buffer.end(), eg::pack(snap).words().begin()));
  // NOLINTNEXTLINE(bugprone-use-after-move): writing twice is the error under test.
  const auto again = std::move(prepared).write_into<expect>(
      cuda::std::span<std::uint32_t>(buffer.data(), buffer.size()));
  REQUIRE_FALSE(again.has_value());
  CHECK(again.error().code() == vyre::errc::invalid_state);
}

TEST_CASE("pack: invalid snapshots are refused with the validate error", "[egraph][pack]") {
  const auto snap = eg::snapshot::build({{0, "f", {3}}});
  const auto result = eg::pack<expect>(snap);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::not_found);
  CHECK_THROWS_AS(eg::pack(snap), vyre::error_exception);
  CHECK_FALSE(eg::packed_word_count<expect>(snap).has_value());
}

TEST_CASE("plan_upload: owning plan holds the image, bad layouts name the column",
          "[egraph][upload]") {
  auto image = eg::pack(design_example());
  const auto* words = image.words().data();
  const auto owning = eg::plan_upload(std::move(image));
  CHECK(owning.words().data() == words);  // moved in, not copied
  CHECK(owning.layout().column(eg::image_column::children) == eg::column_span{15 * 4, 8});
  CHECK(owning.ref().bytes().size() == 100);

  // A layout whose column leaves the words.
  auto layout = owning.layout().words;
  layout.spans[eg::column_index(eg::image_column::group_rows)].length = 4;
  const auto leaves = eg::plan_upload<expect>(eg::image_ref{owning.words(), layout});
  REQUIRE_FALSE(leaves.has_value());
  CHECK(leaves.error().code() == vyre::errc::invalid_layout);
  CHECK(leaves.error().subject() == "group_rows");

  // Offsets so large that word-to-byte conversion overflows u64 (a forged layout).
  eg::image_layout forged{};
  forged.spans[eg::column_index(eg::image_column::children)] =
      eg::column_span{std::uint64_t{1} << 62, 1};
  const std::vector<std::uint32_t> no_words;
  const cuda::std::span<const std::uint32_t> fake(
      no_words.data(), static_cast<std::size_t>((std::uint64_t{1} << 62) + 1));
  const auto overflow = eg::plan_upload<expect>(eg::image_ref{fake, forged});
  REQUIRE_FALSE(overflow.has_value());
  CHECK(overflow.error().code() == vyre::errc::overflow);
  CHECK(overflow.error().subject() == "children");
  CHECK_THROWS_AS(eg::plan_upload(eg::image_ref{fake, forged}), vyre::error_exception);
}

// ----- property tests -------------------------------------------------------------------------

namespace {
struct random_snapshot {
  eg::snapshot snap;
  std::vector<std::uint32_t> classes;
};

//! A valid random snapshot: `rows` rows over `classes` distinct ids drawn from `id_space`.
random_snapshot make_random(std::mt19937_64& rng, std::uint32_t rows, std::uint32_t classes,
                            std::uint64_t id_space) {
  random_snapshot out;
  std::uniform_int_distribution<std::uint64_t> any_id(0, id_space - 1);
  while (out.classes.size() < classes)
    out.classes.push_back(static_cast<std::uint32_t>(any_id(rng)));
  std::sort(out.classes.begin(), out.classes.end());
  out.classes.erase(std::unique(out.classes.begin(), out.classes.end()), out.classes.end());
  std::shuffle(out.classes.begin(), out.classes.end(), rng);
  for (int op = 0; op < 7; ++op) out.snap.intern_op("op" + std::to_string(op));
  std::uniform_int_distribution<std::size_t> pick(0, out.classes.size() - 1);
  std::uniform_int_distribution<std::uint32_t> arity(0, 4);
  std::uniform_int_distribution<std::uint32_t> op(0, 6);
  std::vector<std::uint32_t> kids;
  for (std::uint32_t r = 0; r < rows; ++r) {
    // Every class gets at least one row (the first |classes| rows), then random ones.
    const std::uint32_t eclass = r < out.classes.size() ? out.classes[r] : out.classes[pick(rng)];
    kids.clear();
    for (std::uint32_t k = arity(rng); k > 0; --k) kids.push_back(out.classes[pick(rng)]);
    out.snap.add_row(eclass, op(rng), {kids.data(), kids.size()});
  }
  return out;
}

void check_invariants(const eg::snapshot& snap, const eg::host_image& image) {
  const auto& layout = image.layout();
  const auto rows = snap.rows();
  REQUIRE(layout.row_count == rows.size());
  REQUIRE(layout.child_count == snap.child_count());
  REQUIRE(image.words().size() == layout.word_count());
  // Columns are contiguous, in order, ending at the word count.
  std::uint64_t at = 0;
  for (std::size_t c = 0; c < eg::image_column_count; ++c) {
    const auto span = layout.column(static_cast<eg::image_column>(c));
    REQUIRE(span.offset == at);
    at = span.end();
  }
  REQUIRE(at == image.words().size());
  const auto eclass = image.column(eg::image_column::row_eclass_ids);
  const auto ops = image.column(eg::image_column::row_language_op_ids);
  const auto offsets = image.column(eg::image_column::row_children_offsets);
  const auto lens = image.column(eg::image_column::row_children_lens);
  const auto sigs = image.column(eg::image_column::row_signatures);
  const auto children = image.column(eg::image_column::children);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    REQUIRE(eclass[r] == rows[r].eclass);
    REQUIRE(ops[r] == rows[r].op);
    REQUIRE(offsets[r] == rows[r].children_offset);
    REQUIRE(lens[r] == rows[r].children_length);
    REQUIRE(sigs[r] == eg::row_signature(ops[r], children.subspan(offsets[r], lens[r])));
  }
  REQUIRE(std::equal(children.begin(), children.end(), snap.children().begin()));
  const auto ids = image.column(eg::image_column::group_eclass_ids);
  const auto goff = image.column(eg::image_column::group_offsets);
  const auto grows = image.column(eg::image_column::group_rows);
  // Groups sorted strictly, offsets monotone from 0 to R, rows a permutation.
  REQUIRE(std::adjacent_find(ids.begin(), ids.end(),
                             [](std::uint32_t a, std::uint32_t b) { return a >= b; }) == ids.end());
  REQUIRE(goff[0] == 0);
  REQUIRE(goff[ids.size()] == rows.size());
  REQUIRE(std::is_sorted(goff.begin(), goff.end()));
  std::vector<std::uint32_t> permutation(grows.begin(), grows.end());
  std::sort(permutation.begin(), permutation.end());
  for (std::size_t i = 0; i < permutation.size(); ++i) REQUIRE(permutation[i] == i);
  for (std::size_t g = 0; g < ids.size(); ++g)
    for (std::uint32_t i = goff[g]; i < goff[g + 1]; ++i) {
      REQUIRE(eclass[grows[i]] == ids[g]);
      if (i > goff[g]) REQUIRE(grows[i] > grows[i - 1]);
    }
  // Independent reference for the grouping: std::stable_sort.
  std::vector<std::uint32_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return rows[a].eclass < rows[b].eclass;
  });
  REQUIRE(std::equal(order.begin(), order.end(), grows.begin()));
  REQUIRE(eg::validate_image(image.ref()).has_value());
  // Deterministic, and pack_into agrees.
  std::vector<std::uint32_t> again(image.words().size());
  eg::pack_into(snap, cuda::std::span<std::uint32_t>(again.data(), again.size()));
  REQUIRE(std::equal(again.begin(), again.end(), image.words().begin()));
}
}  // namespace

TEST_CASE("pack: property, random valid snapshots satisfy every layout invariant",
          "[egraph][pack][property]") {
  std::mt19937_64 rng(0x5EED0001u);
  struct shape {
    std::uint32_t rows, classes;
    std::uint64_t id_space;
  };
  // Dense (counting sort), sparse (radix), full u32 range, single class, tiny.
  const shape shapes[] = {{1, 1, 1},
                          {10, 3, 4},
                          {1000, 300, 400},
                          {5000, 1000, 1u << 30},
                          {5000, 4000, 1ull << 32},
                          {3000, 1, 1ull << 32},
                          {20000, 20000, 20000},
                          {2000, 700, 3000000}};
  for (const auto& s : shapes)
    for (int trial = 0; trial < 4; ++trial) {
      INFO("rows=" << s.rows << " classes=" << s.classes << " id_space=" << s.id_space);
      const auto generated = make_random(rng, s.rows, s.classes, s.id_space);
      check_invariants(generated.snap, eg::pack(generated.snap));
    }
}

TEST_CASE("validate_image: corrupted images are refused, each with its own message",
          "[egraph][image]") {
  const auto image = eg::pack(design_example());
  const auto base = to_vector(image.words());
  const auto layout = image.layout();
  const auto refuse = [&](std::vector<std::uint32_t> words, const char* needle) {
    const auto result = eg::validate_image(eg::image_ref{{words.data(), words.size()}, layout});
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == vyre::errc::corrupt_data);
    CHECK_THAT(result.error().message(), Catch::Contains(needle));
  };
  auto words = base;
  words[layout.offset(eg::image_column::row_children_lens) + 2] = 3;  // range leaves children
  refuse(words, "children range");
  words = base;
  words[layout.offset(eg::image_column::row_signatures)] ^= 1;
  refuse(words, "signature");
  words = base;
  std::swap(words[layout.offset(eg::image_column::group_eclass_ids)],
            words[layout.offset(eg::image_column::group_eclass_ids) + 1]);
  refuse(words, "not ascending");
  words = base;
  words[layout.offset(eg::image_column::group_offsets) + 2] = 2;
  refuse(words, "start at 0 and end");
  words = base;
  words[layout.offset(eg::image_column::group_offsets) + 1] = 0;
  refuse(words, "must increase");
  words = base;
  std::swap(words[layout.offset(eg::image_column::group_rows) + 1],
            words[layout.offset(eg::image_column::group_rows) + 2]);
  refuse(words, "grouped row");
  words = base;
  words[layout.offset(eg::image_column::children)] = 9;
  words[layout.offset(eg::image_column::row_signatures) + 2] =
      eg::row_signature(1, words.data() + layout.offset(eg::image_column::children), 2);
  refuse(words, "no group");
  // Both ways of finding a child's group: a bit per id (dense ids) and a binary search (ids too
  // sparse for the bits to fit in the image's size).
  const auto child_without_group = [&](const eg::snapshot& snap, std::uint32_t child) {
    const auto packed = eg::pack(snap);
    auto corrupt = to_vector(packed.words());
    const auto at = packed.layout();
    corrupt[at.offset(eg::image_column::children)] = child;
    corrupt[at.offset(eg::image_column::row_signatures) + 2] =
        eg::row_signature(1, corrupt.data() + at.offset(eg::image_column::children), 2);
    const auto result = eg::validate_image(eg::image_ref{{corrupt.data(), corrupt.size()}, at});
    REQUIRE_FALSE(result.has_value());
    CHECK_THAT(result.error().message(), Catch::Contains("no group"));
    CHECK(eg::validate_image(packed.ref()).has_value());
  };
  child_without_group(design_example(), 0);  // below the smallest id, inside the bits
  child_without_group(
      eg::snapshot::build({{2, "lit", {}}, {1u << 30, "lit", {}}, {2, "add", {1u << 30, 2}}}), 1);

  // Layout errors: spans that do not add up, word count that differs.
  auto bad_layout = layout;
  bad_layout.spans[eg::column_index(eg::image_column::children)].length = 1;
  const auto spans = eg::validate_image(eg::image_ref{{base.data(), base.size()}, bad_layout});
  REQUIRE_FALSE(spans.has_value());
  CHECK(spans.error().code() == vyre::errc::invalid_layout);
  CHECK(spans.error().subject() == "children");
  const auto short_words =
      eg::validate_image(eg::image_ref{{base.data(), base.size() - 1}, layout});
  REQUIRE_FALSE(short_words.has_value());
  CHECK(short_words.error().code() == vyre::errc::invalid_layout);

  const auto copy = eg::host_image::from_words<expect>({base.data(), base.size()}, layout);
  REQUIRE(copy.has_value());
  CHECK(to_vector(copy->words()) == base);
  const auto cloned = copy->clone();
  CHECK(to_vector(cloned.words()) == base);
}

TEST_CASE("pack: extreme e-class ids on both grouping paths", "[egraph][pack]") {
  constexpr std::uint32_t top = 0xFFFFFFFFu;
  SECTION("dense path near the top of u32") {
    const auto snap =
        eg::snapshot::build({{top, "a", {top - 1}}, {top - 1, "b", {top}}, {top, "c", {}}});
    const auto image = eg::pack(snap);
    CHECK(to_vector(image.column(eg::image_column::group_eclass_ids)) ==
          std::vector<std::uint32_t>{top - 1, top});
    CHECK(to_vector(image.column(eg::image_column::group_rows)) ==
          std::vector<std::uint32_t>{1, 0, 2});
  }
  SECTION("sparse path with 0 and 0xFFFFFFFF (the id set's empty-slot value)") {
    std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes;
    for (std::uint32_t i = 0; i < 64; ++i) nodes.push_back({i * 60000000u, "x", {top, 0}});
    nodes.push_back({top, "y", {0}});
    const auto snap = eg::snapshot::from_tuples(nodes);
    const auto image = eg::pack(snap);
    const auto ids = image.column(eg::image_column::group_eclass_ids);
    CHECK(ids.size() == 65);
    CHECK(ids[0] == 0);
    CHECK(ids[64] == top);
    CHECK(eg::validate_image(image.ref()).has_value());
    // A dangling child next to the extreme ids is still found.
    nodes.push_back({5, "z", {top - 1}});
    const auto bad = eg::pack<expect>(eg::snapshot::from_tuples(nodes));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().value_or("child_eclass", 0) == top - 1);
    CHECK(bad.error().value_or("row", 0) == 65);
  }
  SECTION("sparse path without 0xFFFFFFFF: a child naming it is dangling") {
    std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes;
    for (std::uint32_t i = 0; i < 40; ++i) nodes.push_back({i * 100000000u, "x", {}});
    nodes.push_back({7, "f", {top}});
    const auto bad = eg::pack<expect>(eg::snapshot::from_tuples(nodes));
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().value_or("child_eclass", 0) == top);
  }
}

TEST_CASE("pack: counting sort and radix sort agree around the density threshold",
          "[egraph][pack]") {
  // 100 rows: the counting path takes id ranges up to 4 * 100 + 65536 ids.
  for (const std::uint32_t range : {65936u, 65937u, 70000u}) {
    std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes;
    for (std::uint32_t i = 0; i < 100; ++i) {
      const std::uint32_t id = i == 99 ? range - 1 : (i * 7919u) % (range - 1);
      nodes.push_back({id, "op", {}});
    }
    const auto snap = eg::snapshot::from_tuples(nodes);
    const auto image = eg::pack(snap);
    REQUIRE(eg::validate_image(image.ref()).has_value());
    const auto grows = image.column(eg::image_column::group_rows);
    std::vector<std::uint32_t> order(100);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      return snap.rows()[a].eclass < snap.rows()[b].eclass;
    });
    CHECK(std::equal(order.begin(), order.end(), grows.begin()));
  }
}

TEST_CASE("pack: sparse ids with many children (sorted children check) find a dangling child",
          "[egraph][pack]") {
  constexpr std::uint32_t top = 0xFFFFFFFFu;
  std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes;
  std::mt19937_64 rng(99);
  std::vector<std::uint32_t> ids{0, top};
  for (int i = 0; i < 3000; ++i) ids.push_back(static_cast<std::uint32_t>(rng()));
  for (const std::uint32_t id : ids)
    nodes.push_back({id, "f", {ids[rng() % ids.size()], ids[rng() % ids.size()], top, 0}});
  const auto good = eg::snapshot::from_tuples(nodes);
  REQUIRE(good.child_count() > 4096);
  const auto image = eg::pack(good);
  CHECK(eg::validate_image(image.ref()).has_value());
  // One dangling child, in the middle of the column.
  std::get<2>(nodes[1500])[1] = top - 3;
  const auto bad = eg::pack<expect>(eg::snapshot::from_tuples(nodes));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().code() == vyre::errc::not_found);
  CHECK(bad.error().value_or("child_eclass", 0) == top - 3);
  CHECK(bad.error().value_or("row", 0) == 1500);
  CHECK(bad.error().value_or("child_entry", 0) == 1500 * 4 + 1);
}
