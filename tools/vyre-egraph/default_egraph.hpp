// SPDX-License-Identifier: Apache-2.0
//! @file
//! The e-graph `vyre-egraph` runs on when given no file: egg's `math_simplify_factor` test
//! (142 e-nodes, 20 e-classes, 8 ops; expected root tree cost 7), re-indented one node a line.
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

namespace vyre_tool {

//! The name the default e-graph goes by in output.
inline constexpr const char* default_egraph_name = "(built-in) egg/math_simplify_factor.json";

//! The egraph-serialize JSON text.
inline constexpr const char* default_egraph_json = R"json({"nodes": {
  "0__0": {"op": "+", "cost": 1.0, "eclass": "0", "children": ["0__0", "9__0"]},
  "0__1": {"op": "+", "cost": 1.0, "eclass": "0", "children": ["9__0", "0__0"]},
  "0__2": {"op": "*", "cost": 1.0, "eclass": "0", "children": ["0__0", "3__0"]},
  "0__3": {"op": "*", "cost": 1.0, "eclass": "0", "children": ["3__0", "0__0"]},
  "0__4": {"op": "x", "cost": 1.0, "eclass": "0", "children": []},
  "1__0": {"op": "3", "cost": 1.0, "eclass": "1", "children": []},
  "2__0": {"op": "+", "cost": 1.0, "eclass": "2", "children": ["0__0", "1__0"]},
  "2__1": {"op": "+", "cost": 1.0, "eclass": "2", "children": ["1__0", "0__0"]},
  "2__2": {"op": "+", "cost": 1.0, "eclass": "2", "children": ["2__0", "9__0"]},
  "2__3": {"op": "+", "cost": 1.0, "eclass": "2", "children": ["9__0", "2__0"]},
  "2__4": {"op": "*", "cost": 1.0, "eclass": "2", "children": ["2__0", "3__0"]},
  "2__5": {"op": "*", "cost": 1.0, "eclass": "2", "children": ["3__0", "2__0"]},
  "3__0": {"op": "1", "cost": 1.0, "eclass": "3", "children": []},
  "4__0": {"op": "+", "cost": 1.0, "eclass": "4", "children": ["0__0", "3__0"]},
  "4__1": {"op": "+", "cost": 1.0, "eclass": "4", "children": ["3__0", "0__0"]},
  "4__2": {"op": "+", "cost": 1.0, "eclass": "4", "children": ["4__0", "9__0"]},
  "4__3": {"op": "+", "cost": 1.0, "eclass": "4", "children": ["9__0", "4__0"]},
  "4__4": {"op": "*", "cost": 1.0, "eclass": "4", "children": ["3__0", "4__0"]},
  "4__5": {"op": "*", "cost": 1.0, "eclass": "4", "children": ["4__0", "3__0"]},
  "8__0": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["0__0", "36__0"]},
  "8__1": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["1__0", "34__0"]},
  "8__2": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["2__0", "22__0"]},
  "8__3": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["8__0", "9__0"]},
  "8__4": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["9__0", "8__0"]},
  "8__5": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["22__0", "2__0"]},
  "8__6": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["34__0", "1__0"]},
  "8__7": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["36__0", "0__0"]},
  "8__8": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["44__0", "45__0"]},
  "8__9": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["45__0", "44__0"]},
  "8__10": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["93__0", "118__0"]},
  "8__11": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["94__0", "116__0"]},
  "8__12": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["109__0", "125__0"]},
  "8__13": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["116__0", "94__0"]},
  "8__14": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["118__0", "93__0"]},
  "8__15": {"op": "+", "cost": 1.0, "eclass": "8", "children": ["125__0", "109__0"]},
  "8__16": {"op": "*", "cost": 1.0, "eclass": "8", "children": ["2__0", "4__0"]},
  "8__17": {"op": "*", "cost": 1.0, "eclass": "8", "children": ["3__0", "8__0"]},
  "8__18": {"op": "*", "cost": 1.0, "eclass": "8", "children": ["4__0", "2__0"]},
  "8__19": {"op": "*", "cost": 1.0, "eclass": "8", "children": ["8__0", "3__0"]},
  "9__0": {"op": "0", "cost": 1.0, "eclass": "9", "children": []},
  "22__0": {"op": "+", "cost": 1.0, "eclass": "22", "children": ["9__0", "22__0"]},
  "22__1": {"op": "+", "cost": 1.0, "eclass": "22", "children": ["22__0", "9__0"]},
  "22__2": {"op": "+", "cost": 1.0, "eclass": "22", "children": ["93__0", "94__0"]},
  "22__3": {"op": "+", "cost": 1.0, "eclass": "22", "children": ["94__0", "93__0"]},
  "22__4": {"op": "*", "cost": 1.0, "eclass": "22", "children": ["0__0", "2__0"]},
  "22__5": {"op": "*", "cost": 1.0, "eclass": "22", "children": ["2__0", "0__0"]},
  "22__6": {"op": "*", "cost": 1.0, "eclass": "22", "children": ["3__0", "22__0"]},
  "22__7": {"op": "*", "cost": 1.0, "eclass": "22", "children": ["22__0", "3__0"]},
  "34__0": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["0__0", "22__0"]},
  "34__1": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["9__0", "34__0"]},
  "34__2": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["22__0", "0__0"]},
  "34__3": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["34__0", "9__0"]},
  "34__4": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["44__0", "94__0"]},
  "34__5": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["93__0", "125__0"]},
  "34__6": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["94__0", "44__0"]},
  "34__7": {"op": "+", "cost": 1.0, "eclass": "34", "children": ["125__0", "93__0"]},
  "34__8": {"op": "*", "cost": 1.0, "eclass": "34", "children": ["0__0", "100__0"]},
  "34__9": {"op": "*", "cost": 1.0, "eclass": "34", "children": ["3__0", "34__0"]},
  "34__10": {"op": "*", "cost": 1.0, "eclass": "34", "children": ["34__0", "3__0"]},
  "34__11": {"op": "*", "cost": 1.0, "eclass": "34", "children": ["100__0", "0__0"]},
  "36__0": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["1__0", "22__0"]},
  "36__1": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["9__0", "36__0"]},
  "36__2": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["22__0", "1__0"]},
  "36__3": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["36__0", "9__0"]},
  "36__4": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["45__0", "93__0"]},
  "36__5": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["93__0", "45__0"]},
  "36__6": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["94__0", "109__0"]},
  "36__7": {"op": "+", "cost": 1.0, "eclass": "36", "children": ["109__0", "94__0"]},
  "36__8": {"op": "*", "cost": 1.0, "eclass": "36", "children": ["3__0", "36__0"]},
  "36__9": {"op": "*", "cost": 1.0, "eclass": "36", "children": ["36__0", "3__0"]},
  "44__0": {"op": "+", "cost": 1.0, "eclass": "44", "children": ["0__0", "93__0"]},
  "44__1": {"op": "+", "cost": 1.0, "eclass": "44", "children": ["9__0", "44__0"]},
  "44__2": {"op": "+", "cost": 1.0, "eclass": "44", "children": ["44__0", "9__0"]},
  "44__3": {"op": "+", "cost": 1.0, "eclass": "44", "children": ["93__0", "0__0"]},
  "44__4": {"op": "*", "cost": 1.0, "eclass": "44", "children": ["0__0", "4__0"]},
  "44__5": {"op": "*", "cost": 1.0, "eclass": "44", "children": ["3__0", "44__0"]},
  "44__6": {"op": "*", "cost": 1.0, "eclass": "44", "children": ["4__0", "0__0"]},
  "44__7": {"op": "*", "cost": 1.0, "eclass": "44", "children": ["44__0", "3__0"]},
  "45__0": {"op": "+", "cost": 1.0, "eclass": "45", "children": ["1__0", "94__0"]},
  "45__1": {"op": "+", "cost": 1.0, "eclass": "45", "children": ["9__0", "45__0"]},
  "45__2": {"op": "+", "cost": 1.0, "eclass": "45", "children": ["45__0", "9__0"]},
  "45__3": {"op": "+", "cost": 1.0, "eclass": "45", "children": ["94__0", "1__0"]},
  "45__4": {"op": "*", "cost": 1.0, "eclass": "45", "children": ["1__0", "4__0"]},
  "45__5": {"op": "*", "cost": 1.0, "eclass": "45", "children": ["3__0", "45__0"]},
  "45__6": {"op": "*", "cost": 1.0, "eclass": "45", "children": ["4__0", "1__0"]},
  "45__7": {"op": "*", "cost": 1.0, "eclass": "45", "children": ["45__0", "3__0"]},
  "93__0": {"op": "+", "cost": 1.0, "eclass": "93", "children": ["9__0", "93__0"]},
  "93__1": {"op": "+", "cost": 1.0, "eclass": "93", "children": ["93__0", "9__0"]},
  "93__2": {"op": "*", "cost": 1.0, "eclass": "93", "children": ["0__0", "0__0"]},
  "93__3": {"op": "*", "cost": 1.0, "eclass": "93", "children": ["3__0", "93__0"]},
  "93__4": {"op": "*", "cost": 1.0, "eclass": "93", "children": ["93__0", "3__0"]},
  "94__0": {"op": "+", "cost": 1.0, "eclass": "94", "children": ["9__0", "94__0"]},
  "94__1": {"op": "+", "cost": 1.0, "eclass": "94", "children": ["94__0", "9__0"]},
  "94__2": {"op": "*", "cost": 1.0, "eclass": "94", "children": ["0__0", "1__0"]},
  "94__3": {"op": "*", "cost": 1.0, "eclass": "94", "children": ["1__0", "0__0"]},
  "94__4": {"op": "*", "cost": 1.0, "eclass": "94", "children": ["3__0", "94__0"]},
  "94__5": {"op": "*", "cost": 1.0, "eclass": "94", "children": ["94__0", "3__0"]},
  "100__0": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["0__0", "195__0"]},
  "100__1": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["1__0", "4__0"]},
  "100__2": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["2__0", "3__0"]},
  "100__3": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["3__0", "2__0"]},
  "100__4": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["4__0", "1__0"]},
  "100__5": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["9__0", "100__0"]},
  "100__6": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["100__0", "9__0"]},
  "100__7": {"op": "+", "cost": 1.0, "eclass": "100", "children": ["195__0", "0__0"]},
  "100__8": {"op": "*", "cost": 1.0, "eclass": "100", "children": ["3__0", "100__0"]},
  "100__9": {"op": "*", "cost": 1.0, "eclass": "100", "children": ["100__0", "3__0"]},
  "109__0": {"op": "+", "cost": 1.0, "eclass": "109", "children": ["1__0", "93__0"]},
  "109__1": {"op": "+", "cost": 1.0, "eclass": "109", "children": ["9__0", "109__0"]},
  "109__2": {"op": "+", "cost": 1.0, "eclass": "109", "children": ["93__0", "1__0"]},
  "109__3": {"op": "+", "cost": 1.0, "eclass": "109", "children": ["109__0", "9__0"]},
  "109__4": {"op": "*", "cost": 1.0, "eclass": "109", "children": ["3__0", "109__0"]},
  "109__5": {"op": "*", "cost": 1.0, "eclass": "109", "children": ["109__0", "3__0"]},
  "116__0": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["0__0", "109__0"]},
  "116__1": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["1__0", "44__0"]},
  "116__2": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["2__0", "93__0"]},
  "116__3": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["9__0", "116__0"]},
  "116__4": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["44__0", "1__0"]},
  "116__5": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["93__0", "2__0"]},
  "116__6": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["109__0", "0__0"]},
  "116__7": {"op": "+", "cost": 1.0, "eclass": "116", "children": ["116__0", "9__0"]},
  "116__8": {"op": "*", "cost": 1.0, "eclass": "116", "children": ["3__0", "116__0"]},
  "116__9": {"op": "*", "cost": 1.0, "eclass": "116", "children": ["116__0", "3__0"]},
  "118__0": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["0__0", "45__0"]},
  "118__1": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["1__0", "125__0"]},
  "118__2": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["2__0", "94__0"]},
  "118__3": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["9__0", "118__0"]},
  "118__4": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["45__0", "0__0"]},
  "118__5": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["94__0", "2__0"]},
  "118__6": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["118__0", "9__0"]},
  "118__7": {"op": "+", "cost": 1.0, "eclass": "118", "children": ["125__0", "1__0"]},
  "118__8": {"op": "*", "cost": 1.0, "eclass": "118", "children": ["3__0", "118__0"]},
  "118__9": {"op": "*", "cost": 1.0, "eclass": "118", "children": ["118__0", "3__0"]},
  "125__0": {"op": "+", "cost": 1.0, "eclass": "125", "children": ["0__0", "94__0"]},
  "125__1": {"op": "+", "cost": 1.0, "eclass": "125", "children": ["9__0", "125__0"]},
  "125__2": {"op": "+", "cost": 1.0, "eclass": "125", "children": ["94__0", "0__0"]},
  "125__3": {"op": "+", "cost": 1.0, "eclass": "125", "children": ["125__0", "9__0"]},
  "125__4": {"op": "*", "cost": 1.0, "eclass": "125", "children": ["0__0", "195__0"]},
  "125__5": {"op": "*", "cost": 1.0, "eclass": "125", "children": ["3__0", "125__0"]},
  "125__6": {"op": "*", "cost": 1.0, "eclass": "125", "children": ["125__0", "3__0"]},
  "125__7": {"op": "*", "cost": 1.0, "eclass": "125", "children": ["195__0", "0__0"]},
  "195__0": {"op": "4", "cost": 1.0, "eclass": "195", "children": []}
}, "comment": "# generated by egg 0.9.4", "root_eclasses": ["8"]})json";

}  // namespace vyre_tool
