// SPDX-License-Identifier: Apache-2.0
// Standard and CUDA headers a user's translation unit would already have included before a
// late <windows.h>-style header defined min/max/small. Only these may precede the hostile macros.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <limits>
#include <list>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <optional>
#include <queue>
#include <random>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cuda/std/bit>
#include <cuda/std/expected>
#include <cuda/std/limits>
#include <cuda/std/span>
#include <cuda/std/utility>
#include <cuda/stream_ref>
#if defined(__linux__)
#include <sys/mman.h>
#endif
// The optional egraph-serialize JSON loader's dependency (host TUs only: nvcc cannot compile it).
#if __has_include(<simdjson.h>) && !defined(__CUDACC__)
#include <simdjson.h>
#endif
#if __has_include(<Cbc_C_Interface.h>) && !defined(__CUDACC__)
#include <Cbc_C_Interface.h>
#endif
#if defined(__CUDACC__)
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <cuda/atomic>
#include <cuda/functional>
#include <cuda/memory_resource>
#include <cuda/std/array>
#include <cuda/std/atomic>
#include <cuda/std/functional>
#include <cuda/std/tuple>
#endif
