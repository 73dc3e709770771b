// SPDX-License-Identifier: Apache-2.0
// Must not compile: applying an error policy that is not one.
#include <vyre/core/policies.hpp>
struct not_a_policy {};
int main() {
  vyre::expected<int> value = 1;
  (void)vyre::apply_error_policy<not_a_policy>(std::move(value));
}
