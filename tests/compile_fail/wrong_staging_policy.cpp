// SPDX-License-Identifier: Apache-2.0
// Must not compile: `void*` is not a staging policy.
#include <vyre/core/policies.hpp>
int main() {
  vyre::policies<vyre::alloc::caching_pool, void*> bad;
  (void)bad;
}
