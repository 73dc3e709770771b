// SPDX-License-Identifier: Apache-2.0
// Reading test programs in a host translation unit, which also owns them: in an nvcc
// translation unit `program`'s implicit destructor would be host-device (inferred through
// `expected<program>` in program.hpp) and warn.
#pragma once

#include <string>

#include <vyre/eqsat/program.hpp>

namespace eqsat_test {
//! The program of `text` (kept until the process ends); throws std::runtime_error with the
//! diagnostic when it is bad.
const vyre::eqsat::program& read_test_program(const std::string& text);
}  // namespace eqsat_test
