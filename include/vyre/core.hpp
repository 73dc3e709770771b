// SPDX-License-Identifier: Apache-2.0
//! @file
//! The core: configuration macros, errors, policies, the CPU/GPU choice, checked arithmetic,
//! fallible reservation, endian staging and CUDA call checking.
#pragma once

#include "vyre/core/byte_order.hpp"
#include "vyre/core/checked.hpp"
#include "vyre/core/config.hpp"
#include "vyre/core/cuda_check.hpp"
#include "vyre/core/device_choice.hpp"
#include "vyre/core/error.hpp"
#include "vyre/core/fault_injection.hpp"
#include "vyre/core/policies.hpp"
#include "vyre/core/reserve.hpp"
#include "vyre/core/union_find.hpp"
