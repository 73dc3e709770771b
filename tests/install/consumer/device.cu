// SPDX-License-Identifier: Apache-2.0
// CUDA consumer of the installed package: the everything-header compiles under nvcc and a vyre
// kernel macro declares a kernel. Nothing is launched: the test also runs without a GPU.
#include <vyre/vyre.cuh>

VYRE_KERNEL void consumer_kernel(unsigned* out) {
  const auto sum = vyre::checked_add<unsigned>(40u, 2u, "device sum");
  *out = sum ? *sum : 0u;
}

int device_part() {
  static_assert(vyre::checked_mul<unsigned>(6u, 7u, "constexpr product").value() == 42u);
  return 0;
}
