// SPDX-License-Identifier: Apache-2.0
// The device build's rows kernel (row columns, signatures, children) in variants, timed alone
// on a synthetic e-graph of --rows M Mi rows (cudaEvents, median of 21), each checked against
// the image `algorithms::build` writes:
//   nvcc -std=c++20 -arch=sm_90 --extended-lambda -I include -o rows_kernel_variants \
//        scripts/probes/rows_kernel_variants.cu && ./rows_kernel_variants 16
// Variants:
//   plain:    one thread per row, children loaded and stored one at a time (the pointers may
//             alias, so each load waits for the previous store);
//   batched:  __restrict__ views, children loaded four at a time before they are stored;
//   warp:     a warp copies its 32 rows' children range with coalesced loads and stores, then
//             each thread folds its row's children from the (cached) input.
// `build_rows_kernel` uses the warp copy and loads every input before its first store; the
// timings are in docs/performance.md.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_support.cuh"

using namespace vyre::algorithms;
using egraph::row_signature_begin;
using egraph::row_signature_fold;

namespace {
using probe::check;
using probe::take;

struct outputs {
  std::uint32_t *row_eclass_ids, *row_language_op_ids, *lens, *signatures, *children;
};

__global__ void plain_kernel(raw_rows_ref rows, const std::uint32_t* offsets, outputs out) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < rows.row_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(i);
    const std::uint32_t length = rows.row_children_lens[r];
    const std::uint32_t offset = offsets[r];
    const std::uint32_t row_op = rows.row_language_op_ids[r];
    out.row_eclass_ids[r] = rows.row_eclass_ids[r];
    out.row_language_op_ids[r] = row_op;
    out.lens[r] = length;
    const std::uint32_t* from = rows.children + offset;
    std::uint32_t signature = row_signature_begin(row_op, length);
    for (std::uint32_t k = 0; k < length; ++k) {
      const std::uint32_t child = from[k];
      out.children[offset + k] = child;
      signature = row_signature_fold(signature, child);
    }
    out.signatures[r] = signature;
  }
}

__global__ void batched_kernel(raw_rows_ref rows, const std::uint32_t* __restrict__ offsets,
                               outputs out) {
  const std::uint32_t* __restrict__ in_children = rows.children;
  std::uint32_t* __restrict__ out_children = out.children;
  for (std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; i < rows.row_count;
       i += std::uint64_t{gridDim.x} * blockDim.x) {
    const auto r = static_cast<std::uint32_t>(i);
    const std::uint32_t length = __ldg(rows.row_children_lens + r);
    const std::uint32_t offset = __ldg(offsets + r);
    const std::uint32_t row_op = __ldg(rows.row_language_op_ids + r);
    const std::uint32_t row_eclass = __ldg(rows.row_eclass_ids + r);
    std::uint32_t signature = row_signature_begin(row_op, length);
    for (std::uint32_t k = 0; k < length; k += 4) {
      std::uint32_t child[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (k + j < length) child[j] = __ldg(in_children + offset + k + j);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (k + j < length) {
          out_children[offset + k + j] = child[j];
          signature = row_signature_fold(signature, child[j]);
        }
    }
    out.row_eclass_ids[r] = row_eclass;
    out.row_language_op_ids[r] = row_op;
    out.lens[r] = length;
    out.signatures[r] = signature;
  }
}

// One row per thread, and the warp's children range (contiguous: offsets are prefix sums in
// row order) copied by the whole warp. Needs blockDim a multiple of 32 and no grid stride.
__global__ void warp_kernel(raw_rows_ref rows, const std::uint32_t* __restrict__ offsets,
                            outputs out) {
  const std::uint32_t* __restrict__ in_children = rows.children;
  std::uint32_t* __restrict__ out_children = out.children;
  const std::uint64_t i = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x;
  const unsigned lane = threadIdx.x & 31u;
  const bool live = i < rows.row_count;
  const auto r = static_cast<std::uint32_t>(live ? i : 0);
  const std::uint32_t length = live ? __ldg(rows.row_children_lens + r) : 0;
  const std::uint32_t offset = live ? __ldg(offsets + r) : 0;
  const std::uint32_t row_op = live ? __ldg(rows.row_language_op_ids + r) : 0;
  const std::uint32_t row_eclass = live ? __ldg(rows.row_eclass_ids + r) : 0;
  // The warp's range: from lane 0's offset to the last live lane's end.
  const unsigned live_mask = __ballot_sync(0xFFFFFFFFu, live);
  if (live_mask == 0) return;
  const int last = 31 - __clz(live_mask);
  const std::uint32_t begin = __shfl_sync(0xFFFFFFFFu, offset, 0);
  const std::uint32_t end = __shfl_sync(0xFFFFFFFFu, offset + length, last);
  for (std::uint32_t k = begin + lane; k < end; k += 32) out_children[k] = __ldg(in_children + k);
  if (!live) return;
  std::uint32_t signature = row_signature_begin(row_op, length);
  for (std::uint32_t k = 0; k < length; ++k)
    signature = row_signature_fold(signature, __ldg(in_children + offset + k));
  out.row_eclass_ids[r] = row_eclass;
  out.row_language_op_ids[r] = row_op;
  out.lens[r] = length;
  out.signatures[r] = signature;
}
}  // namespace

int main(int argc, char** argv) {
  probe::name = "rows_kernel_variants";
  const std::uint32_t millions = argc > 1 ? static_cast<std::uint32_t>(std::atoi(argv[1])) : 16;
  cudaStream_t stream;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
  const probe::synthetic_rows on_device(millions, stream);
  const raw_rows_ref& ref = on_device.ref;
  const std::uint32_t R = ref.row_count, C = ref.child_count;
  build_workspace<probe::policies> workspace(probe::gpu(), stream);
  auto reference = take(build(probe::gpu(), ref, workspace, child_check::off), "build");
  const image_layout layout = reference.layout();
  std::vector<std::uint32_t> expected(layout.word_count());
  check(cudaMemcpyAsync(expected.data(), reference.words(), expected.size() * 4,
                        cudaMemcpyDeviceToHost, stream),
        "read");
  const std::uint32_t* offsets =
      reference.words() + layout.offset(vyre::egraph::image_column::row_children_offsets);

  auto scratch = take(vyre::device_array<std::uint32_t>::allocate(
                          probe::gpu().memory_ref(), layout.word_count(), stream, "out"),
                      "out");
  std::uint32_t* base = scratch.get();
  const outputs out{base + layout.offset(vyre::egraph::image_column::row_eclass_ids),
                    base + layout.offset(vyre::egraph::image_column::row_language_op_ids),
                    base + layout.offset(vyre::egraph::image_column::row_children_lens),
                    base + layout.offset(vyre::egraph::image_column::row_signatures),
                    base + layout.offset(vyre::egraph::image_column::children)};
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  const unsigned grid = (R + 255) / 256;
  const double bytes = 8.0 * 4 * R + 8.0 * C;  // 4 columns in + 4 out, children in + out
  std::printf("rows %u children %u groups %u\n", R, C, layout.group_count);
  for (int variant = 0; variant < 3; ++variant) {
    const char* name = variant == 0 ? "plain" : variant == 1 ? "batched" : "warp";
    check(cudaMemsetAsync(base, 0xCD, std::size_t{layout.word_count()} * 4, stream), "poison");
    std::vector<float> times;
    for (int i = 0; i < 21; ++i) {
      check(cudaEventRecord(start, stream), "record");
      if (variant == 0) plain_kernel<<<grid, 256, 0, stream>>>(ref, offsets, out);
      if (variant == 1) batched_kernel<<<grid, 256, 0, stream>>>(ref, offsets, out);
      if (variant == 2) warp_kernel<<<grid, 256, 0, stream>>>(ref, offsets, out);
      check(cudaGetLastError(), "launch");
      check(cudaEventRecord(stop, stream), "record");
      check(cudaEventSynchronize(stop), "sync");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
      times.push_back(ms);
    }
    std::sort(times.begin(), times.end());
    std::vector<std::uint32_t> got(layout.offset(vyre::egraph::image_column::children) + C);
    check(cudaMemcpyAsync(got.data(), base, got.size() * 4, cudaMemcpyDeviceToHost, stream),
          "read");
    check(cudaStreamSynchronize(stream), "sync");
    const bool same = std::equal(got.begin(), got.begin() + 2 * std::size_t{R}, expected.begin()) &&
                      std::equal(got.begin() + 3 * std::size_t{R}, got.end(),
                                 expected.begin() + 3 * std::size_t{R});
    const double us = times[times.size() / 2] * 1000.0;
    std::printf("%-8s median %.1f us  %.2f TB/s  %s\n", name, us, bytes / (us * 1e6),
                same ? "same words" : "WRONG");
  }
  return 0;
}
