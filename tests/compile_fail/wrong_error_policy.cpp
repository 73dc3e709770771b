// SPDX-License-Identifier: Apache-2.0
// Must not compile: `int` is not an error policy.
#include <vyre/core/policies.hpp>
int main() {
  vyre::policies<vyre::alloc::direct, vyre::staging::little_endian, int> bad;
  (void)bad;
}
