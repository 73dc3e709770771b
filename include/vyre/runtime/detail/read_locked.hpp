// SPDX-License-Identifier: Apache-2.0
//! @file
//! `read_locked`: a copy of a value taken under its mutex, for the counters and gauges that the
//! runtime's pools and stores report. Host-only.
#pragma once

#include <mutex>

namespace vyre::detail {

//! `value`, copied while `mutex` is held.
template <class Mutex, class T>
T read_locked(Mutex& mutex, const T& value) {
  std::lock_guard lock(mutex);
  return value;
}

}  // namespace vyre::detail
