// SPDX-License-Identifier: Apache-2.0
//! @file
//! The consumer side of the egraph-serialize JSON loader (`vyre/io/egraph_json.hpp`): slices
//! interned in file order into the snapshot, its costs and names, and the two-slice pipeline
//! that parses the next slice on a second thread meanwhile. Host only.
#pragma once

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "vyre/core/error.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/egraph.hpp"
#include "vyre/io/detail/egraph_json_slices.hpp"
#include "vyre/io/detail/egraph_json_tables.hpp"
#include "vyre/io/loaded_egraph.hpp"

namespace vyre::io::detail {

//! Interns slices in file order and builds the result (the consumer side of the pipeline).
class egraph_builder {
 public:
  explicit egraph_builder(std::string_view source) : source_(source) {}

  expected<void> add(const slice_records& in, std::uint64_t file_bytes, std::uint64_t slice_bytes) {
    const std::size_t count = in.nodes.size();
    if (!estimated_ && count > 0 && slice_bytes > 0) {
      // Reserve once, from the density of the first slice (+10 %).
      estimated_ = true;
      const double per_byte = static_cast<double>(count) / static_cast<double>(slice_bytes);
      const auto nodes =
          static_cast<std::size_t>(1.1 * per_byte * static_cast<double>(file_bytes)) + 16;
      const double children_per_node =
          static_cast<double>(in.children.size()) / static_cast<double>(count);
      const auto children =
          static_cast<std::size_t>(1.1 * children_per_node * static_cast<double>(nodes)) + 16;
      VYRE_TRY(nodes_.reserve(nodes, "egraph JSON: node ids"));
      {
        interner distinct;  // e-classes per node in this slice, for the e-class table
        for (const node_record& node : in.nodes)
          VYRE_TRY(distinct.intern(node.eclass, "egraph JSON: e-classes"));
        // The first slice overstates it where a file starts with one node per e-class (egglog's
        // math-11: 1.0 there, 0.42 overall, which made the table twice too large): at most half
        // a class per node up front, the table grows past that.
        const double ratio = (std::min)(
            0.5, static_cast<double>(distinct.names.size()) / static_cast<double>(count));
        VYRE_TRY(
            eclasses_.reserve(static_cast<std::size_t>(ratio * static_cast<double>(nodes)) + 16,
                              "egraph JSON: e-class ids"));
      }
      VYRE_TRY(try_reserve(defined_, nodes / 64 + 1, "egraph JSON: node rows"));
      VYRE_TRY(try_reserve(symbol_of_row_, nodes, "egraph JSON: node rows"));
      VYRE_TRY(try_reserve(result_.node_costs, nodes, "egraph JSON: node costs"));
      VYRE_TRY(try_reserve(child_symbols_, children, "egraph JSON: children"));
      VYRE_TRY(result_.graph.reserve<on_error::return_expected>(nodes, children));
      // Fresh 4 KiB pages cost more than the parse here: ask for huge pages before the first touch.
      advise_huge_pages(symbol_of_row_);
      advise_huge_pages(result_.node_costs);
      advise_huge_pages(child_symbols_);
      advise_huge_pages(result_.graph.rows().data(), nodes * sizeof(egraph::row));
      advise_huge_pages(result_.graph.children().data(), children * sizeof(std::uint32_t));
    }
    std::size_t child = 0;
    for (std::size_t first = 0; first < count; first += batch) {
      const std::size_t last = (std::min)(count, first + batch);
      touch(in, first, last, child);
      VYRE_TRY(add_nodes(in, first, last, child));
    }
    for (const std::string_view root : in.roots) VYRE_TRY(push(root_texts_, std::string(root)));
    return {};
  }

 private:
  //! Makes room in `defined_` for a new node symbol.
  expected<void> add_symbol(std::uint32_t symbol) {
    if (symbol % 64 == 0) VYRE_TRY(push(defined_, std::uint64_t{0}));
    return {};
  }

  //! Nodes whose look-ups `touch` loads together.
  static constexpr std::size_t batch = 64;

  //! Loads the first slot of every look-up of nodes [first, last) (children from `child` on).
  //! The look-ups are random accesses into tables larger than the caches; loads in a tight loop
  //! overlap their misses, where a software prefetch per look-up ahead of the work did not help
  //! (measured: the look-ups stalled on the slot all the same).
  void touch(const slice_records& in, std::size_t first, std::size_t last, std::size_t child) {
    std::uint32_t sink = 0;
    std::size_t child_end = child;
    for (std::size_t n = first; n < last; ++n) {
      sink += nodes_.first_tag(in.nodes[n].key_hash) + eclasses_.first_tag(in.nodes[n].eclass_hash);
      child_end += in.nodes[n].child_count;
    }
    for (std::size_t c = child; c < child_end; ++c) sink += nodes_.first_tag(in.children[c].hash);
    touched_ += sink;  // keeps the loads
  }

  //! Interns nodes [first, last) of `in` (children from `child` on, which it advances).
  expected<void> add_nodes(const slice_records& in, std::size_t first, std::size_t last,
                           std::size_t& child) {
    for (std::size_t n = first; n < last; ++n) {
      const node_record& record = in.nodes[n];
      VYRE_TRY_ASSIGN(const auto node,
                      nodes_.intern(record.key, record.key_hash,
                                    "egraph JSON: too many nodes for u32 row ids"));
      if (node.second) VYRE_TRY(add_symbol(node.first));
      std::uint64_t& word = defined_[node.first / 64];
      const std::uint64_t bit = std::uint64_t{1} << (node.first % 64);
      if ((word & bit) != 0)
        return fail(json_error(errc::duplicate, "egraph JSON: duplicate node id", source_, "node",
                               record.key)
                        .fix("give every node a unique id"));
      word |= bit;
      VYRE_TRY(push(symbol_of_row_, node.first));
      VYRE_TRY_ASSIGN(const auto eclass,
                      eclasses_.intern(record.eclass, record.eclass_hash,
                                       "egraph JSON: too many e-classes for u32 ids"));
      // Nodes come in runs of one op (egglog writes them by function): the last op first.
      if (record.op.size() != last_op_.size() ||
          !same_text(record.op.data(), last_op_.data(), record.op.size()) || ops_.names.empty()) {
        VYRE_TRY_ASSIGN(const auto op,
                        ops_.intern(record.op, "egraph JSON: too many ops for u32 ids"));
        if (op.second) VYRE_TRY(result_.graph.intern_op<on_error::return_expected>(record.op));
        last_op_ = ops_.names[op.first];
        last_op_id_ = op.first;
      }
      const std::uint32_t children = record.child_count;
      const auto offset = child_symbols_.size();
      if (offset + children > egraph::snapshot_limits::u32_max)
        return fail(error(errc::abi_limit, "egraph JSON: children column too long for u32 offsets")
                        .with("child_entries", offset)
                        .fix(egraph::shard_hint)
                        .about(source_));
      for (std::uint32_t c = 0; c < children; ++c, ++child) {
        VYRE_TRY_ASSIGN(const auto target,
                        nodes_.intern(in.children[child].text, in.children[child].hash,
                                      "egraph JSON: too many nodes for u32 row ids"));
        if (target.second) VYRE_TRY(add_symbol(target.first));
        VYRE_TRY(push(child_symbols_, target.first));
      }
      VYRE_TRY(push(result_.node_costs, record.cost));
      VYRE_TRY(result_.graph.add_raw_row<on_error::return_expected>(
          egraph::row{eclass.first, last_op_id_, static_cast<std::uint32_t>(offset), children}));
    }
    return {};
  }

 public:
  expected<loaded_egraph> finish() && {
    // Children: node symbol -> row -> that row's e-class.
    nodes_.drop_index();
    defined_ = {};
    std::vector<std::uint32_t> row_of_symbol;  // row of node symbol s, or no_row
    VYRE_TRY(try_reserve(row_of_symbol, nodes_.names.size(), "egraph JSON: node rows"));
    advise_huge_pages(row_of_symbol);
    row_of_symbol.resize(nodes_.names.size());
    std::fill(row_of_symbol.begin(), row_of_symbol.end(), no_row);
    for (std::size_t r = 0; r < symbol_of_row_.size(); ++r)
      row_of_symbol[symbol_of_row_[r]] = static_cast<std::uint32_t>(r);
    const auto rows = result_.graph.rows();
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::uint32_t c = 0; c < rows[r].children_length; ++c) {
        std::uint32_t& entry = child_symbols_[rows[r].children_offset + c];
        const std::uint32_t row = row_of_symbol[entry];
        if (row == no_row)
          return fail(json_error(errc::not_found, "egraph JSON: a child names an unknown node",
                                 source_, "child", nodes_.names[entry])
                          .with("row", r)
                          .fix("every child must be a key of \"nodes\""));
        entry = rows[row].eclass;
      }
    }
    VYRE_TRY(result_.graph.append_children<on_error::return_expected>(
        {child_symbols_.data(), child_symbols_.size()}));
    child_symbols_ = {};
    row_of_symbol = {};
    for (const std::string& root : root_texts_) {
      const auto found = eclasses_.find(root);
      if (!found)
        return fail(json_error(errc::not_found,
                               "egraph JSON: a root names an e-class that has no node", source_,
                               "root", root)
                        .fix("every root must be the \"eclass\" of some node"));
      VYRE_TRY(push(result_.root_eclasses, *found));
    }
    VYRE_TRY_ASSIGN(result_.node_ids, std::move(nodes_.names).take_reordered(symbol_of_row_));
    eclasses_.drop_index();
    result_.eclass_ids = std::move(eclasses_.names);
    return std::move(result_);
  }

 private:
  static constexpr std::uint32_t no_row = 0xffffffffu;

  template <class T>
  static expected<void> push(std::vector<T>& out, T value) {
    if (out.size() == out.capacity())
      VYRE_TRY(try_reserve(out, 2 * out.size() + 64, "egraph JSON: loader tables"));
    out.push_back(std::move(value));
    return {};
  }

  std::string_view source_;
  loaded_egraph result_;
  interner nodes_;  //!< node ids, defined (keys) or referenced (children) first
  interner eclasses_;
  interner ops_;
  std::string_view last_op_;  //!< the op of the last node (in `ops_.names`)
  std::uint32_t last_op_id_ = 0;
  std::vector<std::uint64_t> defined_;  //!< bit s: node symbol s is a key seen so far
  std::vector<std::uint32_t> symbol_of_row_;
  std::vector<std::uint32_t> child_symbols_;  //!< children as node symbols, then e-classes
  std::vector<std::string> root_texts_;
  std::uint32_t touched_ = 0;
  bool estimated_ = false;
};

//! Reads, parses and interns every slice: a second thread parses slice k + 1 while this one
//! interns slice k (two slices in flight).
inline expected<loaded_egraph> load_slices(const json_source& input, std::string_view source,
                                           const json_load_options& options) {
  slice_reader reader(input, source, options);
  VYRE_TRY(reader.start());
  egraph_builder builder(source);
  std::array<json_slice, 2> slices;
  const bool threaded = options.threads && input.size() > 2 * options.slice_bytes &&
                        std::thread::hardware_concurrency() > 1;
  if (!threaded) {
    for (;;) {
      json_slice& slice = slices[0];
      VYRE_TRY(reader.next(slice));
      if (slice.done) break;
      VYRE_TRY(builder.add(slice.records, input.size(),
                           slice.last ? input.size() - slice.file_offset : options.slice_bytes));
    }
    return std::move(builder).finish();
  }
  // Producer: fills slices[k % 2] when it is free. Consumer (here): interns them in order.
  std::mutex mutex;
  std::condition_variable changed;
  std::array<bool, 2> ready{false, false};
  std::array<std::optional<error>, 2> failure;
  bool stop = false;
  std::thread producer([&] {
    for (std::size_t k = 0;; ++k) {
      const std::size_t s = k % 2;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !ready[s] || stop; });
        if (stop) return;
      }
      auto parsed = reader.next(slices[s]);
      const bool done = !parsed || slices[s].done;
      {
        std::lock_guard lock(mutex);
        if (!parsed) failure[s] = parsed.error();
        ready[s] = true;
      }
      changed.notify_all();
      if (done) return;
    }
  });
  expected<void> outcome;
  for (std::size_t k = 0;; ++k) {
    const std::size_t s = k % 2;
    {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return ready[s]; });
    }
    if (failure[s]) {
      outcome = fail(*failure[s]);
      break;
    }
    if (slices[s].done) break;
    outcome =
        builder.add(slices[s].records, input.size(),
                    slices[s].last ? input.size() - slices[s].file_offset : options.slice_bytes);
    if (!outcome) break;
    {
      std::lock_guard lock(mutex);
      ready[s] = false;
    }
    changed.notify_all();
  }
  {
    std::lock_guard lock(mutex);
    stop = true;
  }
  changed.notify_all();
  producer.join();
  if (!outcome) return fail(outcome.error());
  return std::move(builder).finish();
}

}  // namespace vyre::io::detail
