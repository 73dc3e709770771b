// SPDX-License-Identifier: Apache-2.0
//! @file
//! The row signature the algorithms use: DESIGN.md's, exactly `vyre::egraph::row_signature`.
#pragma once

#include "vyre/egraph/signature.hpp"

namespace vyre::algorithms::detail {

using vyre::egraph::row_signature;

}  // namespace vyre::algorithms::detail
