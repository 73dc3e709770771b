// SPDX-License-Identifier: Apache-2.0
// Host-only consumer of the installed package: plain C++ compiler, umbrella header.
#include <cstdio>

#include <vyre/vyre.hpp>

int device_part();  // device.cu

int main() {
  using checked_policy = vyre::policies<vyre::alloc::direct, vyre::staging::little_endian,
                                        vyre::on_error::return_expected>;
  const auto sum = vyre::checked_add<unsigned>(40u, 2u, "consumer sum");
  const checked_policy::result<unsigned> boundary = sum;
  if (!boundary || *boundary != 42u) return 1;
  const auto overflow = vyre::checked_add<unsigned>(~0u, 1u, "consumer overflow");
  if (overflow || overflow.error().code() != vyre::errc::overflow) return 2;
  if (device_part() != 0) return 3;
  std::printf("vyre %d.%d.%d consumer: ok\n", VYRE_VERSION_MAJOR, VYRE_VERSION_MINOR,
              VYRE_VERSION_PATCH);
  return 0;
}
