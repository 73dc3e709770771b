// SPDX-License-Identifier: Apache-2.0
// What the probes that use vyre share: exit-on-error helpers and a synthetic e-graph's raw rows
// on the device. Probes are single-file programs built by hand (see each one's header), so this
// is included by path, not installed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "vyre/algorithms.cuh"

namespace probe {

inline const char* name = "probe";  // set by main(): prefixes every failure message

inline void check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", name, what, cudaGetErrorString(status));
  std::exit(1);
}
template <class T>
T take(vyre::expected<T>&& value, const char* what) {
  if (!value) {
    std::fprintf(stderr, "%s: %s: %s\n", name, what, value.error().message().c_str());
    std::exit(1);
  }
  return std::move(*value);
}
//! The probes' backend: the caching pool keeping everything freed, errors as values.
using policies = vyre::policies<vyre::alloc::caching_pool, vyre::staging::little_endian,
                                vyre::on_error::return_expected>;
inline vyre::backend<policies>& gpu() {
  static vyre::backend<policies>* const instance = [] {
    vyre::backend_options options;
    options.memory.retained_cap = SIZE_MAX;
    return new vyre::backend<policies>(
        take(vyre::backend<policies>::acquire(0, options), "acquire"));
  }();
  return *instance;
}

template <class T>
vyre::device_array<T> upload(const std::vector<T>& host, cudaStream_t stream) {
  auto buffer = take(
      vyre::device_array<T>::allocate(gpu().memory_ref(), host.size(), stream, "upload"), "upload");
  check(cudaMemcpyAsync(buffer.get(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice,
                        stream),
        "upload");
  return buffer;
}

//! The synthetic e-graph of `millions` Mi rows (seed 42), its raw rows on the device.
struct synthetic_rows {
  vyre::device_array<std::uint32_t> eclass, op, lens, children;
  vyre::algorithms::raw_rows_ref ref;

  synthetic_rows(std::uint32_t millions, cudaStream_t stream) {
    vyre::algorithms::synthetic_options options;
    options.rows = millions << 20;
    options.seed = 42;
    const auto graph = take(vyre::algorithms::make_synthetic_egraph(options), "generator");
    const vyre::algorithms::raw_rows& rows = graph.rows;
    eclass = upload(rows.row_eclass_ids, stream);
    op = upload(rows.row_language_op_ids, stream);
    lens = upload(rows.row_children_lens, stream);
    children = upload(rows.children, stream);
    ref = {eclass.get(),   op.get(),         lens.get(),
           children.get(), rows.row_count(), static_cast<std::uint32_t>(rows.children.size())};
    check(cudaStreamSynchronize(stream), "upload");  // `graph` (the host rows) goes out of scope
  }
};

}  // namespace probe
