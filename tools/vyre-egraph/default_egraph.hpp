// SPDX-License-Identifier: Apache-2.0
//! @file
//! The e-graph `vyre-egraph` runs on when given no file: egg's `math_simplify_factor` test
//! (142 e-nodes, 20 e-classes, 8 ops; expected root tree cost 7), re-indented one node a line
//! (the JSON text lies beside this header, in `default_egraph.json`).
//!
//! Source: extraction-gym's data set, file data/egg/math_simplify_factor.json (in vyre's shared
//! data folder as egg/math_simplify_factor.json). That data set is under the MIT licence:
//!
//!   Copyright 2019 Max Willsey
//!
//!   Permission is hereby granted, free of charge, to any person obtaining a copy of this
//!   software and associated documentation files (the "Software"), to deal in the Software
//!   without restriction, including without limitation the rights to use, copy, modify, merge,
//!   publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
//!   to whom the Software is furnished to do so, subject to the following conditions:
//!
//!   The above copyright notice and this permission notice shall be included in all copies or
//!   substantial portions of the Software.
//!
//!   THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
//!   INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR
//!   PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE
//!   FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
//!   OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
//!   DEALINGS IN THE SOFTWARE.
#pragma once

// `default_egraph_json`, the egraph-serialize JSON text: default_egraph.json, embedded by CMake
// at configure time.
#include "default_egraph_json.hpp"

namespace vyre_tool {

//! The name the default e-graph goes by in output.
inline constexpr const char* default_egraph_name = "(built-in) egg/math_simplify_factor.json";

}  // namespace vyre_tool
