// SPDX-License-Identifier: Apache-2.0
// vyre/detail/prologue.hpp and epilogue.hpp: regions open and close, one after another, as
// consecutive vyre headers use them (a second prologue without an epilogue, or an epilogue
// without a prologue, is an #error). Compiled by the host compiler here and by nvcc as
// prologue_check.cu.
#include "vyre/detail/prologue.hpp"
namespace vyre_prologue_check {
struct first {};
}  // namespace vyre_prologue_check
#include "vyre/detail/epilogue.hpp"

#include "vyre/detail/prologue.hpp"
namespace vyre_prologue_check {
struct second {};
}  // namespace vyre_prologue_check
#include "vyre/detail/epilogue.hpp"
