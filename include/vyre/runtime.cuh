// SPDX-License-Identifier: Apache-2.0
//! @file
//! The runtime: `vyre::backend<Policies>` and what it owns.
//!
//! | header                          | what                                                    |
//! |---------------------------------|---------------------------------------------------------|
//! | runtime/backend.cuh             | `backend<P>`: acquire, warmup, cleanup, boundary calls   |
//! | runtime/device.hpp              | `device_caps`, `query_device`                            |
//! | runtime/memory.hpp              | the three allocation-policy resources, `device_buffer`   |
//! | runtime/pinned.hpp              | pinned host pool and `pinned_lease`                      |
//! | runtime/streams.hpp             | stream and event pools, `stream_lease`, `event_lease`     |
//! | runtime/resident.hpp            | `resident_store`, `resident_handle`                      |
//! | runtime/telemetry.hpp           | counters, snapshot, Prometheus exposition (host-only)    |
//! | runtime/modules.hpp             | PTX/cubin loading, NVRTC, `module_cache`                 |
//! | runtime/module_disk_cache.hpp   | cache directory resolution, atomic entries (host-only)   |
//! | runtime/driver.hpp              | driver entry points, `cuda_driver_check`, `VYRE_CU_TRY`  |
//! | runtime/launch_plan.hpp         | `plan_grid`, waves (host-only, constexpr)                |
//! | runtime/launch.cuh              | checked launches, occupancy, cooperative launches        |
#pragma once

#include "vyre/core.hpp"
#include "vyre/runtime/backend.cuh"
