// SPDX-License-Identifier: Apache-2.0
//! @file
//! The four-stage elementwise chain that the fused-pipeline tests (tests/fusion) and the fusion
//! benchmark (bench/fusion) both run: scale by 1.75, shift by -0.375, square, clamp to [-1, 1].
//! The functors are `__host__ __device__` so that the host reference runs the same code as the
//! fused kernels; they are kernel arguments, so trivially copyable.
#pragma once

#include <vyre/fusion.cuh>

namespace fusion_chain {

struct scale {
  float factor;
  __host__ __device__ float operator()(float v) const { return v * factor; }
};
struct shift {
  float offset;
  __host__ __device__ float operator()(float v) const { return v + offset; }
};
struct square {
  __host__ __device__ float operator()(float v) const { return v * v; }
};
struct clamp_unit {
  __host__ __device__ float operator()(float v) const {
    return v < -1.0f ? -1.0f : (v > 1.0f ? 1.0f : v);
  }
};

//! The chain's stages, in order, with the constants both the tests and the benchmark use.
inline constexpr scale stage1{1.75f};
inline constexpr shift stage2{-0.375f};
inline constexpr square stage3{};
inline constexpr clamp_unit stage4{};

//! The chain as a fused pipeline run by `Plan` (a `vyre::fusion::static_plan` of four stages).
template <auto Plan>
using pipeline = vyre::fusion::fused_pipeline<Plan, float, scale, shift, square, clamp_unit>;

//! The first `stages_applied` stages (0 to 4) applied to `v` one after another, on the host:
//! what every plan must reproduce (4 is the whole chain; fewer gives what a materialized
//! boundary holds).
inline float apply(float v, int stages_applied = 4) {
  if (stages_applied > 0) v = stage1(v);
  if (stages_applied > 1) v = stage2(v);
  if (stages_applied > 2) v = stage3(v);
  if (stages_applied > 3) v = stage4(v);
  return v;
}

}  // namespace fusion_chain
