// SPDX-License-Identifier: Apache-2.0
// Policies: one piece of e-graph code, compiled four ways.
//
// vyre decides three things at compile time, each with a tag type:
//
//   allocation  vyre::alloc::caching_pool | stream_ordered | direct   where device memory comes
//   from staging     vyre::staging::native | little_endian                 how host words reach the
//   device errors      vyre::on_error::throw_exception | return_expected     what a failing call
//   does
//
// `vyre::policies<Alloc, Staging, OnError>` bundles them and `vyre::backend<Policies>` is built
// from the bundle. Internally every vyre call returns `vyre::expected<T>`; only the public
// boundary applies your error policy: under `throw_exception` a failure throws
// `vyre::error_exception`, under `return_expected` the call returns
// `cuda::std::expected<T, vyre::error>` and never throws. Either way the error says what
// happened, with the numbers, and how to fix it.
//
// This example packs a small e-graph, uploads it, counts its rows per op in a kernel, then
// deliberately asks for a view of an image it already freed, to show how each error policy
// reports the refusal. It runs that under {caching_pool, stream_ordered} x {throw, expected}.
#include <cstdint>
#include <cstdio>
#include <vector>

#include <vyre/egraph.cuh>

namespace policies_example {

namespace eg = vyre::egraph;

// One thread per row: count the rows of each op through the checked view.
VYRE_KERNEL void count_ops(eg::kernel_view view, std::uint32_t* per_op) {
  const std::uint32_t row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row < view.row_count()) atomicAdd(&per_op[view.op(row)], 1u);
}

// (a + b) and (b + a) in one e-class, plus their leaves: 3 e-classes, 2 ops that matter.
eg::snapshot make_snapshot() {
  return eg::snapshot::build({{0, "a", {}}, {1, "b", {}}, {2, "+", {0, 1}}, {2, "+", {1, 0}}});
}

// ---- Error policy 1: exceptions ----------------------------------------------------------------
// Calls return plain values; a failure throws vyre::error_exception (e.what() is the message,
// e.error() the structured vyre::error). The happy path reads like ordinary C++.
template <class Alloc>
void run_with_exceptions(const eg::snapshot& snap) {
  using P = vyre::policies<Alloc, vyre::staging::native, vyre::on_error::throw_exception>;
  auto gpu = vyre::backend<P>::acquire(0);
  const eg::host_image image = eg::pack(snap);  // host-side calls default to throwing too
  const eg::resident_image resident = gpu.upload(image);
  const eg::kernel_view view = gpu.kernel_view(resident);

  // Scratch memory comes from the allocation policy and returns to it when `counts` dies.
  const std::size_t ops = snap.op_count();
  auto counts = gpu.allocate(ops * sizeof(std::uint32_t));
  vyre::cuda_check(cudaMemset(counts.get(), 0, ops * sizeof(std::uint32_t)), "memset").value();
  count_ops<<<1, 128>>>(view, counts.template as<std::uint32_t>());
  vyre::cuda_check(cudaGetLastError(), "launch count_ops").value();
  std::vector<std::uint32_t> host(ops);
  vyre::cuda_check(
      cudaMemcpy(host.data(), counts.get(), ops * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
      "download counts")
      .value();
  eg::check_view_faults(gpu, resident);  // throws if a checked accessor went out of bounds
  std::printf("  [throw,    %-14s] rows of '+': %u\n", vyre::backend<P>::allocation_policy_name(),
              host[*snap.find_op("+")]);

  // The mistake: free the image, then ask for a view of it. The stale handle is refused.
  gpu.free_resident(resident.handle());
  try {
    (void)gpu.kernel_view(resident);
    std::printf("  stale view accepted (unexpected!)\n");
  } catch (const vyre::error_exception& e) {
    std::printf("  [throw,    %-14s] refused as expected: %s\n",
                vyre::backend<P>::allocation_policy_name(), vyre::errc_name(e.code()));
  }
}

// ---- Error policy 2: expected values
// -------------------------------------------------------------- The same steps; each call returns
// cuda::std::expected<T, vyre::error>. VYRE_TRY_ASSIGN unwraps a value or returns the error to our
// caller, so failures propagate without exceptions (code built with -fno-exceptions can use vyre
// this way).
template <class Alloc>
vyre::expected<std::uint32_t> count_additions(const eg::snapshot& snap) {
  using P = vyre::policies<Alloc, vyre::staging::native, vyre::on_error::return_expected>;
  VYRE_TRY_ASSIGN(auto gpu, vyre::backend<P>::acquire(0));
  VYRE_TRY_ASSIGN(const eg::host_image image, eg::pack<vyre::on_error::return_expected>(snap));
  VYRE_TRY_ASSIGN(const eg::resident_image resident, gpu.upload(image));
  VYRE_TRY_ASSIGN(const eg::kernel_view view, gpu.kernel_view(resident));

  const std::size_t ops = snap.op_count();
  VYRE_TRY_ASSIGN(auto counts, gpu.allocate(ops * sizeof(std::uint32_t)));
  VYRE_CUDA_TRY(cudaMemset(counts.get(), 0, ops * sizeof(std::uint32_t)), "memset");
  count_ops<<<1, 128>>>(view, counts.template as<std::uint32_t>());
  VYRE_CUDA_TRY(cudaGetLastError(), "launch count_ops");
  std::vector<std::uint32_t> host(ops);
  VYRE_CUDA_TRY(
      cudaMemcpy(host.data(), counts.get(), ops * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
      "download counts");
  VYRE_TRY(eg::check_view_faults(gpu, resident));

  // The same mistake: this time the refusal is a value to inspect, not an exception.
  VYRE_TRY(gpu.free_resident(resident.handle()));
  const auto stale = gpu.kernel_view(resident);
  std::printf("  [expected, %-14s] stale view refused: %s\n",
              vyre::backend<P>::allocation_policy_name(),
              stale ? "no (unexpected!)" : vyre::errc_name(stale.error().code()));
  return host[*snap.find_op("+")];
}

template <class Alloc>
bool run_with_expected(const eg::snapshot& snap) {
  const vyre::expected<std::uint32_t> additions = count_additions<Alloc>(snap);
  if (!additions) {
    std::printf("  failed: %s\n", additions.error().message().c_str());
    return false;
  }
  std::printf("  [expected, %-14s] rows of '+': %u\n",
              vyre::backend<vyre::policies<Alloc>>::allocation_policy_name(), *additions);
  return true;
}

}  // namespace policies_example

int main() {
  namespace eg = vyre::egraph;
  using namespace policies_example;
  const eg::snapshot snap = make_snapshot();

  // Host calls follow the same rule, no GPU needed: a child naming an e-class without rows.
  eg::snapshot broken = eg::snapshot::build({{0, "f", {7}}});
  const auto refused = eg::pack<vyre::on_error::return_expected>(broken);
  std::printf("pack of a broken snapshot -> %s\n  %s\n",
              refused ? "accepted (unexpected!)" : "an error value:",
              refused ? "" : refused.error().message().c_str());
  try {
    (void)eg::pack(broken);  // default policy: throw_exception
  } catch (const vyre::error_exception& e) {
    std::printf("the same under throw_exception -> vyre::error_exception (%s)\n",
                vyre::errc_name(e.code()));
  }

  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "policies: no CUDA device here; stopping before the GPU part.\n");
    return 0;
  }
  try {
    run_with_exceptions<vyre::alloc::caching_pool>(snap);
    run_with_exceptions<vyre::alloc::stream_ordered>(snap);
  } catch (const vyre::error_exception& e) {
    std::fprintf(stderr, "policies: %s\n", e.what());
    return 1;
  }
  const bool ok = run_with_expected<vyre::alloc::caching_pool>(snap) &&
                  run_with_expected<vyre::alloc::stream_ordered>(snap);
  return ok ? 0 : 1;
}
