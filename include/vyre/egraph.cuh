// SPDX-License-Identifier: Apache-2.0
//! @file
//! The e-graph on the GPU: everything of `vyre/egraph.hpp` plus the owning device image, the
//! resident image and the checked kernel view.
//!
//!     auto gpu = vyre::backend<vyre::policies<>>::acquire(0);
//!     auto image = vyre::egraph::pack(snapshot);
//!     vyre::egraph::resident_image resident = gpu.upload(image);   // one allocation, one copy
//!     vyre::egraph::kernel_view view = gpu.kernel_view(resident);  // checked once, here
//!     my_kernel<<<blocks, 256>>>(view, ...);                        // by value
//!     vyre::egraph::check_view_faults(gpu, resident);               // any checked-access fault?
#pragma once

#include "vyre/egraph.hpp"
#include "vyre/egraph/device_image.hpp"
#include "vyre/egraph/kernel_view.cuh"
#include "vyre/egraph/resident.cuh"
#include "vyre/runtime.cuh"
