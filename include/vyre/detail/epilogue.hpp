// SPDX-License-Identifier: Apache-2.0
//! @file
//! Closes the diagnostic region opened by `vyre/detail/prologue.hpp` (see there). No include
//! guard and no `#pragma once`, by design: it must take effect at the end of every header that
//! opened a region.

#if !defined(VYRE_DETAIL_PROLOGUE_OPEN)
#error "vyre/detail/epilogue.hpp: no region open (include vyre/detail/prologue.hpp first)"
#endif
#undef VYRE_DETAIL_PROLOGUE_OPEN

#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
