// SPDX-License-Identifier: Apache-2.0
// Must not compile: an error policy passed where the allocation policy goes.
#include <vyre/core/policies.hpp>
int main() {
  vyre::policies<vyre::on_error::throw_exception> bad;
  (void)bad;
}
