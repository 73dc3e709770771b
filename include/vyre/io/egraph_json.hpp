// SPDX-License-Identifier: Apache-2.0
//! @file
//! Loader for the egraph-serialize JSON format (egg, egglog, extraction-gym) into a
//! `vyre::egraph::snapshot`. Optional: needs simdjson (link `vyre::egraph_json`, which links
//! simdjson when CMake found it). Host translation units only: nvcc cannot compile simdjson.h.
//!
//! Format: `nodes` maps a node id to `{op, cost, eclass, children}`, each child a node id whose
//! `eclass` is the child e-class; `root_eclasses` lists the roots. As in egraph-serialize,
//! `children` defaults to `[]`, `cost` to 1 and `root_eclasses` to `[]` (egglog writes `[]`
//! when it was given no roots); other fields are accepted and ignored: egglog >= 13's
//! `subsumed` and `class_data`, `comment`, ... A field the loader reads (`nodes`,
//! `root_eclasses`, a node's `op`, `eclass`, `cost`, `children`) given twice in one object is
//! refused: JSON readers disagree on which duplicate counts. Primitive values (egglog's `i64`,
//! `String`, ...) are ordinary nodes whose op is the value's text. Ids may be strings or
//! non-negative integers (an integer id is its decimal spelling).
//!
//! Row `i` of the snapshot is the `i`-th node of `nodes` in file order; e-class and op ids are
//! dense u32 in first-seen order.
//!
//! How it reads: slices of a few MiB (the file is read slice by slice, never whole), each its
//! own small document `{"nodes":{` slice `}}`; a slice ends at a `},"` between two nodes, and the
//! parse itself proves the cut was not inside a string (else the slice is parsed again together
//! with the rest of the file). A slice that is valid UTF-8 goes to a scanner that reads the
//! nodes straight into flat records (ids as views into the slice, no tree; see
//! `detail/egraph_json_scan.hpp`); one it declines (an error, a `\u` escape, a long number...)
//! goes to simdjson's DOM parser, which gives the result or the error, so the two agree by
//! construction. One thread reads the next slice while the caller's thread interns the previous
//! one (ids through flat open-addressing tables with short names inline in the slot, no
//! `std::string` per node). Peak memory is the result, the id tables and about 4 slices, not the
//! file. The pieces: `detail/egraph_json_slices.hpp` reads and parses slices,
//! `detail/egraph_json_builder.hpp` interns them and runs the pipeline,
//! `detail/egraph_json_tables.hpp` holds the id tables.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "vyre/core/error.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/egraph.hpp"
#include "vyre/io/detail/egraph_json_builder.hpp"
#include "vyre/io/detail/egraph_json_slices.hpp"
#include "vyre/io/loaded_egraph.hpp"

namespace vyre::io {

//! Parses egraph-serialize JSON text; `source` names it in errors (a file name).
//! @throws vyre::error_exception naming the source and the offending id: `errc::parse`
//!         (malformed JSON, a missing or mistyped field, a cost that is not a finite number),
//!         `errc::duplicate` (a node id twice, a field the loader reads twice in one object:
//!         `nodes`, `root_eclasses`, a node's `op`, `eclass`, `cost`, `children`),
//!         `errc::not_found` (a child naming an unknown node, a root naming an e-class with no
//!         node), `errc::abi_limit`, `errc::out_of_memory`.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> parse_egraph_json(std::string_view json,
                                                   std::string_view source = "JSON text",
                                                   const json_load_options& options = {}) {
  const detail::json_source input(json);
  return apply_error_policy<OnError>(detail::load_slices(input, source, options));
}

//! Loads an egraph-serialize JSON file, slice by slice (the file is never held whole).
//! @throws vyre::error_exception `errc::io` naming the path, or the errors of
//!         `parse_egraph_json`, each naming the path.
template <class OnError = on_error::throw_exception>
result_t<OnError, loaded_egraph> load_egraph_json(const std::filesystem::path& path,
                                                  const json_load_options& options = {}) {
  auto run = [&]() -> expected<loaded_egraph> {
    const std::string name = path.string();
    std::error_code failed;
    const bool regular = std::filesystem::is_regular_file(path, failed);
    const std::uintmax_t size = regular ? std::filesystem::file_size(path, failed) : 0;
    std::FILE* file = regular && !failed ? std::fopen(name.c_str(), "rb") : nullptr;
    if (file == nullptr)
      return fail(detail::json_error(errc::io, "egraph JSON: cannot read the file", name)
                      .fix("check the path and permissions"));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(file, &std::fclose);
    const detail::json_source input(file, size);
    return detail::load_slices(input, name, options);
  };
  return apply_error_policy<OnError>(run());
}

}  // namespace vyre::io
