// SPDX-License-Identifier: Apache-2.0
//! @file
//! Opens the diagnostic region of a vyre header; `vyre/detail/epilogue.hpp` closes it (the
//! CCCL `__cccl/prologue.h` / `epilogue.h` pattern). A header that needs it includes the
//! prologue after its last `#include` and the epilogue as its last line:
//!
//!     #include "vyre/detail/prologue.hpp"  // after the last #include
//!     ...                                  // the header's declarations
//!     #include "vyre/detail/epilogue.hpp"  // last line
//!
//! Inside the region, under nvcc only:
//! - warnings 20011 and 20013 are off. nvcc (C++20) infers `__host__ __device__` for the
//!   implicit special members of a host-only aggregate (one with `std::vector` or
//!   `device_buffer` members) held in `cuda::std::expected`, whose members are host-device, and
//!   then warns that they call host-only members. They only ever run on the host. A class that
//!   is not an aggregate needs no region: `VYRE_HOST_SPECIAL_MEMBERS` declares its special
//!   members and `..._DEFAULTED` defaults them out of line, host-only
//!   (`vyre/detail/host_special_members.hpp`); an aggregate cannot declare constructors and stay
//!   one.
//!
//! No include guard and no `#pragma once`, by design: the file is included once per header
//! that uses it and must take effect every time. The regions do not nest (each header opens
//! its own after its includes, so the headers it includes have closed theirs); opening one
//! twice or closing one that is not open is a compile error, with g++ as with nvcc.

#if defined(VYRE_DETAIL_PROLOGUE_OPEN)
#error \
    "vyre/detail/prologue.hpp: region already open (epilogue missing, or prologue before an #include)"
#endif
#define VYRE_DETAIL_PROLOGUE_OPEN

#if defined(__NVCC__)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20011, 20013
#endif
