// SPDX-License-Identifier: Apache-2.0
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch.hpp>

#include <vyre/egraph.hpp>

namespace eg = vyre::egraph;
using expect = vyre::on_error::return_expected;

TEST_CASE("snapshot: op registry interns names densely in first-seen order", "[egraph][snapshot]") {
  eg::snapshot snap;
  CHECK(snap.intern_op("lit") == 0u);
  CHECK(snap.intern_op("add") == 1u);
  CHECK(snap.intern_op("lit") == 0u);
  CHECK(snap.op_count() == 2);
  CHECK(snap.op_name(1) == "add");
  CHECK(snap.find_op("add") == std::optional<std::uint32_t>(1));
  CHECK_FALSE(snap.find_op("mul").has_value());
  const auto missing = snap.op_name<expect>(2);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code() == vyre::errc::not_found);
  CHECK(missing.error().value_or("op", 0) == 2);
  CHECK_THROWS_AS(snap.op_name(5), vyre::error_exception);
}

TEST_CASE("snapshot: add_row appends rows and children", "[egraph][snapshot]") {
  eg::snapshot snap;
  const auto lit = snap.intern_op("lit");
  const auto add = snap.intern_op("add");
  CHECK(snap.add_row(2, lit) == 0u);
  CHECK(snap.add_row(1, lit, {}) == 1u);
  const std::vector<std::uint32_t> kids{1, 2};
  CHECK(snap.add_row(2, add, {kids.data(), kids.size()}) == 2u);
  REQUIRE(snap.row_count() == 3);
  CHECK(snap.rows()[2] == eg::row{2, add, 0, 2});
  CHECK(snap.child_count() == 2);
  CHECK(snap.children_of(snap.rows()[2])[1] == 2u);
  snap.validate();
}

TEST_CASE("snapshot: add_row rejects an op id that is not interned, appending nothing",
          "[egraph][snapshot]") {
  eg::snapshot snap;
  const auto result = snap.add_row<expect>(0, 3, {1u, 2u});
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == vyre::errc::invalid_argument);
  CHECK(result.error().value_or("op", 0) == 3);
  CHECK(snap.row_count() == 0);
  CHECK(snap.child_count() == 0);
}

TEST_CASE("snapshot: build from literals and from tuples agree", "[egraph][snapshot]") {
  const auto a = eg::snapshot::build({{2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}});
  std::vector<std::tuple<std::uint32_t, std::string, std::vector<std::uint32_t>>> nodes{
      {2, "lit", {}}, {1, "lit", {}}, {2, "add", {1, 2}}};
  const auto b = eg::snapshot::from_tuples(nodes);
  REQUIRE(a.row_count() == b.row_count());
  for (std::size_t i = 0; i < a.row_count(); ++i) CHECK(a.rows()[i] == b.rows()[i]);
  CHECK(a.op_name(1) == "add");
  CHECK(b.op_name(1) == "add");
}

namespace {
vyre::error validate_error(const eg::snapshot& snap, const eg::snapshot_limits& limits = {}) {
  const auto result = snap.validate<expect>(limits);
  REQUIRE_FALSE(result.has_value());
  return result.error();
}
}  // namespace

TEST_CASE("snapshot::validate: each failure is its own error naming row and value",
          "[egraph][snapshot][validate]") {
  SECTION("unknown op id") {
    eg::snapshot snap;
    snap.intern_op("lit");
    snap.add_raw_row({0, 0, 0, 0});
    snap.add_raw_row({1, 9, 0, 0});
    const auto err = validate_error(snap);
    CHECK(err.code() == vyre::errc::invalid_argument);
    CHECK(err.value_or("row", 99) == 1);
    CHECK(err.value_or("op", 0) == 9);
    CHECK_THAT(err.message(), Catch::Contains("unknown op id") && Catch::Contains("Fix:"));
    CHECK_THROWS_AS(snap.validate(), vyre::error_exception);
  }
  SECTION("children offset + length overflows u32") {
    eg::snapshot snap;
    snap.intern_op("f");
    snap.add_raw_row({0, 0, 0xFFFFFFF0u, 0x20u});
    const auto err = validate_error(snap);
    CHECK(err.code() == vyre::errc::overflow);
    CHECK(err.value_or("row", 99) == 0);
    CHECK(err.value_or("children_offset", 0) == 0xFFFFFFF0u);
  }
  SECTION("children range ends past the column") {
    eg::snapshot snap;
    snap.intern_op("f");
    const std::uint32_t kids[] = {0};
    snap.append_children(kids);
    snap.add_raw_row({0, 0, 0, 2});
    const auto err = validate_error(snap);
    CHECK(err.code() == vyre::errc::out_of_range);
    CHECK(err.value_or("children_end", 0) == 2);
    CHECK(err.value_or("child_entries", 0) == 1);
  }
  SECTION("a child names an e-class with no row") {
    const auto snap = eg::snapshot::build({{0, "lit", {}}, {1, "f", {0, 7}}});
    const auto err = validate_error(snap);
    CHECK(err.code() == vyre::errc::not_found);
    CHECK(err.value_or("row", 99) == 1);
    CHECK(err.value_or("child_eclass", 0) == 7);
    CHECK(err.value_or("child_entry", 0) == 1);
  }
  SECTION("a child names an e-class with no row, sparse ids") {
    const auto snap = eg::snapshot::build({{0, "lit", {}}, {4000000000u, "f", {0, 3999999999u}}});
    const auto err = validate_error(snap);
    CHECK(err.code() == vyre::errc::not_found);
    CHECK(err.value_or("child_eclass", 0) == 3999999999u);
  }
  SECTION("u32 ABI: each limit, named with the count that passes it") {
    using limits_type = eg::snapshot_limits;
    const auto three_rows = eg::snapshot::build({{0, "a", {}}, {1, "a", {}}, {2, "a", {}}});
    const auto three_children = eg::snapshot::build({{0, "a", {}}, {1, "f", {0, 0, 0}}});
    const auto two_ops = eg::snapshot::build({{0, "a", {}}, {1, "b", {}}});
    const struct {
      const eg::snapshot* snap;
      std::uint64_t limits_type::*limit;
      std::uint64_t at_most;
      const char* key;
      std::uint64_t count;
    } cases[] = {{&three_rows, &limits_type::max_rows, 2, "rows", 3},
                 {&three_children, &limits_type::max_child_entries, 2, "child_entries", 3},
                 {&three_children, &limits_type::max_row_children, 2, "children_length", 3},
                 {&two_ops, &limits_type::max_ops, 1, "ops", 2}};
    for (const auto& c : cases) {
      INFO(c.key);
      limits_type limits;
      limits.*c.limit = c.at_most;
      const auto err = validate_error(*c.snap, limits);
      CHECK(err.code() == vyre::errc::abi_limit);
      CHECK(err.value_or(c.key, 0) == c.count);
    }
    CHECK_THAT(validate_error(three_rows, {.max_rows = 2}).message(), Catch::Contains("shard"));
    CHECK(validate_error(three_children, {.max_row_children = 2}).value_or("row", 99) == 1);
  }
  SECTION("u32 ABI: append_children past u32 entries is refused before allocating") {
    eg::snapshot snap;
    const std::uint32_t one = 0;
    // A span that claims 2^32 entries is never read: the length check comes first.
    const cuda::std::span<const std::uint32_t> huge(&one, std::size_t{1} << 32);
    const auto result = snap.append_children<expect>(huge);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == vyre::errc::abi_limit);
    const auto row_result = snap.add_row<expect>(0, snap.intern_op("f"), huge);
    REQUIRE_FALSE(row_result.has_value());
    CHECK(row_result.error().code() == vyre::errc::abi_limit);
    CHECK(snap.row_count() == 0);
  }
}

TEST_CASE("snapshot::validate: empty snapshot and self loops are valid", "[egraph][snapshot]") {
  eg::snapshot empty;
  CHECK(empty.validate<expect>().has_value());
  CHECK(empty.row_count() == 0);
  // A class whose only node has itself as both children: valid (egg writes such nodes), and
  // the children are kept as given.
  const auto loop = eg::snapshot::build({{5, "f", {5, 5}}});
  CHECK(loop.validate<expect>().has_value());
  REQUIRE(loop.row_count() == 1);
  const auto kids = loop.children_of(loop.rows()[0]);
  REQUIRE(kids.size() == 2);
  CHECK(kids[0] == 5);
  CHECK(kids[1] == 5);
  // The same row with a child class that has no node is not valid: the check above is not
  // vacuous.
  eg::snapshot dangling;
  dangling.intern_op("f");
  const std::uint32_t child = 6;
  const auto offset =
      dangling.append_children<expect>(cuda::std::span<const std::uint32_t>(&child, 1));
  REQUIRE(offset.has_value());
  dangling.add_raw_row({5, 0, *offset, 1});
  const auto refused = dangling.validate<expect>();
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code() == vyre::errc::not_found);
}
