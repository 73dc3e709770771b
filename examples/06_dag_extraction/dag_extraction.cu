// SPDX-License-Identifier: Apache-2.0
// DAG-cost extraction: pay every chosen e-node once, however many parents share it.
//
//   dag_extraction
//
// The e-graph (e-class: its e-nodes, each with its cost):
//   x:    x                      1
//   s:    s(x)                   5     a sub-term worth sharing
//   a:    a1(x) 4    a2(s) 1
//   b:    b1(x) 4    b2(s) 1
//   c:    c1(x) 4    c2(s) 1
//   root: triple(a, b, c)        1
// Tree cost takes a1, b1 and c1 (tree cost 5 each against 7 through s): DAG cost 1 + 3 * 4 + 1 =
// 14. Sharing s makes a2, b2 and c2 cheaper together: 1 + 3 * 1 + 5 + 1 = 10, the optimum.
//
// 1. `extract_dag` on the CPU's cores: a deterministic local search from greedy and tree starts.
//    Every result carries a cheap lower bound (here 6: it cannot see this sharing) and whether
//    the selection meets it (`optimal`).
// 2. `extract_dag(gpu, ...)`: the same searches on the GPU, one thread block each, the same
//    selection for the same options.
// 3. `extract_dag_ilp` (where vyre was built with COIN-OR CBC): extraction-gym's ILP,
//    warm-started from step 1, proves 10 optimal.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/algorithms.cuh>
#if VYRE_HAVE_CBC
#include <vyre/algorithms/dag_ilp.hpp>
#endif

namespace {

namespace alg = vyre::algorithms;
using throwing = vyre::on_error::throw_exception;

// The e-graph above as raw rows: one row per e-node, its e-class, an op id, its children's
// e-classes. The algorithms take these (or a packed image's columns) as they are.
struct small_egraph {
  std::vector<std::uint32_t> eclass, op, lens, children;
  std::vector<double> cost;

  void add(std::uint32_t row_class, std::vector<std::uint32_t> kids, double row_cost) {
    eclass.push_back(row_class);
    op.push_back(static_cast<std::uint32_t>(op.size()));
    lens.push_back(static_cast<std::uint32_t>(kids.size()));
    children.insert(children.end(), kids.begin(), kids.end());
    cost.push_back(row_cost);
  }
  alg::raw_rows_ref rows() const {
    return {eclass.data(),
            op.data(),
            lens.data(),
            children.data(),
            static_cast<std::uint32_t>(eclass.size()),
            static_cast<std::uint32_t>(children.size())};
  }
};

enum : std::uint32_t { x, s, a, b, c, root };

void print(const char* who, const alg::dag_extraction_result& found) {
  std::printf("%-12s DAG cost %g (the tree selection's: %g), %u e-nodes, lower bound %g%s\n", who,
              found.dag_cost, found.tree_selection_dag_cost, found.selected_rows, found.lower_bound,
              found.optimal ? ", optimal" : "");
}

int run() {
  small_egraph g;
  g.add(x, {}, 1);
  g.add(s, {x}, 5);
  for (const std::uint32_t user : {a, b, c}) {
    g.add(user, {x}, 4);
    g.add(user, {s}, 1);
  }
  g.add(root, {a, b, c}, 1);
  const std::vector<std::uint32_t> roots{root};
  const alg::raw_rows_ref rows = g.rows();
  const cuda::std::span<const double> costs(g.cost.data(), g.cost.size());
  const cuda::std::span<const std::uint32_t> root_span(roots.data(), roots.size());

  // 1. On the CPU (`vyre::expected`; the boundary applies the throwing policy).
  alg::dag_options options;  // 4 searches, the default kicks, seed 1
  const alg::dag_extraction_result on_cpu =
      vyre::apply_error_policy<throwing>(alg::extract_dag(rows, costs, root_span, options));
  print("CPU engine:", on_cpu);
  bool ok = on_cpu.dag_cost == 10 && on_cpu.tree_selection_dag_cost == 14;

  // 2. On the GPU, when there is one.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device here: the GPU step is skipped\n");
  } else {
    auto gpu = vyre::backend<vyre::policies<>>::acquire(0);
    const alg::dag_extraction_result on_gpu =
        alg::extract_dag(gpu, rows, costs, root_span, options);
    print("GPU engine:", on_gpu);
    const bool same = on_gpu.choice == on_cpu.choice && on_gpu.dag_cost == on_cpu.dag_cost;
    std::printf("same selection on both: %s\n", same ? "yes" : "NO");
    ok = ok && same;
  }

  // 3. The exact answer, and its proof.
#if VYRE_HAVE_CBC
  alg::dag_ilp_options exact;
  exact.time_limit_seconds = 5;
  const alg::dag_ilp_result proven =
      vyre::apply_error_policy<throwing>(alg::extract_dag_ilp(rows, costs, root_span, exact));
  std::printf("CBC (ILP):   DAG cost %g, %s (lower bound %g)\n", proven.selection.dag_cost,
              proven.optimal ? "proven optimal" : "not proven optimal", proven.lower_bound);
  ok = ok && proven.optimal && proven.selection.dag_cost == 10;
#else
  std::printf("built without COIN-OR CBC: the ILP step is skipped\n");
#endif
  return ok ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const vyre::error_exception& e) {
    std::fprintf(stderr, "dag_extraction: %s\n", e.what());
    return 2;
  }
}
