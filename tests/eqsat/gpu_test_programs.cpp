// SPDX-License-Identifier: Apache-2.0
#include "gpu_test_programs.hpp"

#include <deque>
#include <stdexcept>
#include <utility>

namespace eqsat_test {
const vyre::eqsat::program& read_test_program(const std::string& text) {
  static std::deque<vyre::eqsat::program> kept;
  auto prog = vyre::eqsat::read_program(text, "t.egg");
  if (!prog) throw std::runtime_error(vyre::eqsat::diagnostic("t.egg", prog.error()));
  kept.push_back(std::move(*prog));
  return kept.back();
}
}  // namespace eqsat_test
