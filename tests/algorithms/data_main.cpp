// SPDX-License-Identifier: Apache-2.0
// main() of the host tests on the real e-graphs: reports SKIPPED (exit VYRE_TEST_SKIP_CODE)
// when VYRE_EGRAPH_DATA_DIR holds no expected_tree_cost.tsv, else runs the Catch session.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>

int main(int argc, char* argv[]) {
  const std::filesystem::path data_dir{VYRE_EGRAPH_DATA_DIR};
  if (!std::filesystem::exists(data_dir / "expected_tree_cost.tsv")) {
    std::printf("SKIPPED: no e-graph data in %s (set VYRE_EGRAPH_DATA_DIR).\n",
                data_dir.string().c_str());
    return VYRE_TEST_SKIP_CODE;
  }
  return Catch::Session().run(argc, argv);
}
