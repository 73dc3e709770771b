// SPDX-License-Identifier: Apache-2.0
//! @file
//! The e-graph on the host: `snapshot` -> `pack` -> `host_image` -> `plan_upload`, plus image
//! files. Host-only (`.hpp`): compiles with any C++20 compiler given the CCCL include path.
//!
//! # The packed image
//!
//! A snapshot is rows (e-nodes) and a flat children column. A row is
//! (e-class id, op id, children offset, children length), all u32; ops are interned names with
//! dense ids in first-seen order; children are e-class ids. `pack` turns it into one u32 slab
//! holding nine columns, in this order (R rows, C children entries, G distinct e-classes):
//!
//! | # | column (`image_layout` member) | words | contents                                   |
//! |---|--------------------------------|-------|--------------------------------------------|
//! | 1 | `row_eclass_ids`               | R     | e-class of each row                        |
//! | 2 | `row_language_op_ids`          | R     | op id of each row                          |
//! | 3 | `row_children_offsets`         | R     | first child of each row in `children`      |
//! | 4 | `row_children_lens`            | R     | number of children of each row            |
//! | 5 | `row_signatures`               | R     | `row_signature(op, children)`              |
//! | 6 | `children`                     | C     | child e-class ids, as in the snapshot      |
//! | 7 | `group_eclass_ids`             | G     | distinct e-class ids, strictly ascending   |
//! | 8 | `group_offsets`                | G + 1 | prefix offsets into `group_rows`, last = R |
//! | 9 | `group_rows`                   | R     | row indices by e-class, ascending in group |
//!
//! 6R + C + 2G + 1 words in all; on the device every span is the word span times 4 bytes
//! (`plan_upload`, checked). Example: rows (2, lit, []), (1, lit, []), (2, add, [1, 2]) pack to
//! eclass [2,1,2] ops [0,0,1] offsets [0,0,0] lens [0,0,2]
//! signatures [1959786413, 1959786413, 2225812561] children [1,2] group ids [1,2]
//! group offsets [0,1,3] group rows [1,0,2]; `group_offsets` starts at word 19, byte 76. The format
//! is stable and bit-compatible with the Rust vyre-foundation packer.
//!
//! Every image from `pack` satisfies: row children ranges lie inside `children`; every child
//! names an e-class that has a group; signatures recompute; `group_rows` is a permutation of
//! the rows. `validate_image` checks all of it for images that come from elsewhere (files).
//!
//! # Files and loaders
//!
//! `write_image_file` / `read_image_file` (and `serialize_image` / `parse_image_file` on bytes)
//! store an image with a magic, a version, the counts and a checksum; the reader refuses
//! truncated, corrupt, wrong-version and inconsistent files with an error naming the file
//! (see `vyre/egraph/image_file.hpp`). The egraph-serialize JSON loader (egg, egglog,
//! extraction-gym) is the optional header `vyre/io/egraph_json.hpp` (target
//! `vyre::egraph_json`, needs simdjson).
//!
//! E-class ids may be any u32: grouping uses a counting sort when the ids are dense enough
//! (their range is at most about four times the row count) and an LSD radix sort otherwise,
//! so nothing is ever allocated per id value.
//!
//! # Errors
//!
//! Internals return `vyre::expected<T>`. Every public function and member that can fail takes
//! the error policy as its first template parameter, defaulting to
//! `vyre::on_error::throw_exception`:
//!
//!     auto image = vyre::egraph::pack(snap);                                  // throws
//!     auto maybe = vyre::egraph::pack<vyre::on_error::return_expected>(snap); // expected
//!
//! # Typical use
//!
//!     auto snap = vyre::egraph::snapshot::build({{2, "lit", {}}, {1, "lit", {}},
//!                                                {2, "add", {1, 2}}});
//!     auto prepared = vyre::egraph::prepare_pack(snap);          // validate + group once
//!     const vyre::egraph::image_layout layout = prepared.layout();
//!     std::vector<std::uint32_t> staging(prepared.word_count());  // or pinned memory
//!     std::move(prepared).write_into(staging);
//!     auto plan = vyre::egraph::plan_upload(vyre::egraph::image_ref{staging, layout});
//!     // plan.layout().offset(image_column::group_offsets) == 76 (bytes), plan.bytes() go to the
//!     device
#pragma once

#include "vyre/egraph/image.hpp"
#include "vyre/egraph/image_file.hpp"
#include "vyre/egraph/layout.hpp"
#include "vyre/egraph/pack.hpp"
#include "vyre/egraph/row.hpp"
#include "vyre/egraph/signature.hpp"
#include "vyre/egraph/snapshot.hpp"
#include "vyre/egraph/upload_plan.hpp"
