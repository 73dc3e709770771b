// SPDX-License-Identifier: Apache-2.0
//! @file
//! The staging planner of resident uploads: how a pageable upload (or a `fill` callback) is cut
//! into chunks, on how many host lanes, with how many pinned staging slots (`plan_staging`).
//! Constexpr and host-only; `resident_store::upload` follows the plan. Byte order is
//! core/byte_order.hpp's business, not this file's.
#pragma once

#include <bit>
#include <cstddef>
#include <thread>

namespace vyre {

//! Staging options of an upload. Zero means "choose from the size" (see `plan_staging`).
struct upload_options {
  //! Bytes per staging chunk; 0: `auto_chunk_bytes`. Lanes take chunks in order of their
  //! offsets; a fill callback sees chunk offsets that are multiples of the chunk size.
  std::size_t chunk_bytes = 0;
  //! Host threads filling staging chunks at once (at most `max_host_lanes`); 0: automatic.
  //! One host thread copies pageable memory at a fraction of the DMA rate, so uploads split
  //! the chunks over several lanes. More than one lane calls `fill` concurrently for disjoint
  //! chunks: for `upload_with` automatic means 1 (set more only when the fill is safe for
  //! that); for `upload` (a plain copy) it means `auto_host_lanes`.
  std::size_t host_lanes = 0;
};

//! Most host lanes of one upload (the calling thread plus persistent helpers).
inline constexpr std::size_t max_host_lanes = 16;
//! Staging buffers per lane at most.
inline constexpr std::size_t max_staging_slots_per_lane = 8;
//! Uploads up to this size get a staging buffer for every chunk, so no chunk waits for an
//! earlier copy to finish; larger ones double-buffer each lane.
inline constexpr std::size_t staging_ring_bytes = std::size_t{4} << 20;
//! Bounds of the automatic chunk size. Below 256 KiB the per-copy API cost outweighs the
//! overlap it buys. The sweep behind them (bench/resident/upload_sweep.cu) and its results:
//! docs/bench/upload-chunking.md.
inline constexpr std::size_t min_auto_chunk_bytes = std::size_t{256} << 10;
inline constexpr std::size_t max_auto_chunk_bytes = std::size_t{4} << 20;
//! Automatic lanes: one per this many bytes, at most `max_auto_host_lanes`. Lanes take chunks
//! from a shared counter, so a helper that wakes late only takes fewer chunks: the caller
//! never waits for one to start.
inline constexpr std::size_t bytes_per_auto_lane = std::size_t{256} << 10;
inline constexpr std::size_t max_auto_host_lanes = 4;
//! Automatic chunks per lane: enough that each lane's host copy of one chunk overlaps the DMA
//! of its previous one, few enough that the per-copy cost (a few microseconds of API time)
//! stays small against the chunk's own copy time.
inline constexpr std::size_t auto_chunks_per_lane = 2;

//! `host_lanes` for a plain copy of `bytes`: one lane per 256 KiB, at most 4, within the
//! machine's hardware threads (so 4 from 1 MiB up).
inline std::size_t auto_host_lanes(std::size_t bytes) noexcept {
  const std::size_t hardware = std::thread::hardware_concurrency();
  std::size_t lanes = bytes / bytes_per_auto_lane;
  if (lanes > max_auto_host_lanes) lanes = max_auto_host_lanes;
  if (hardware != 0 && lanes > hardware) lanes = hardware;
  return lanes == 0 ? 1 : lanes;
}

//! `chunk_bytes` for `bytes` over `lanes` lanes: `auto_chunks_per_lane` chunks per lane,
//! rounded down to a power of two, within [256 KiB, 4 MiB]. So 1 and 2 MiB over 4 lanes stage
//! 256 KiB chunks, 4 MiB 512 KiB chunks, 8 MiB 1 MiB chunks, 32 MiB and up 4 MiB.
constexpr std::size_t auto_chunk_bytes(std::size_t bytes, std::size_t lanes) noexcept {
  if (lanes == 0) lanes = 1;
  const std::size_t per_chunk = bytes / lanes / auto_chunks_per_lane;
  if (per_chunk <= min_auto_chunk_bytes) return min_auto_chunk_bytes;
  if (per_chunk >= max_auto_chunk_bytes) return max_auto_chunk_bytes;
  return std::bit_floor(per_chunk);
}

//! How an upload of `bytes` bytes is staged.
struct staging_plan {
  std::size_t chunk_bytes = 0;     //!< bytes per chunk (the last may be shorter)
  std::size_t chunks = 0;          //!< chunk copies
  std::size_t lanes = 1;           //!< host threads filling chunks (the caller included)
  std::size_t slots_per_lane = 1;  //!< staging buffers per lane
  //! Whether a staging buffer is refilled during the upload (then each copy out of it records
  //! an event to wait on); false when every chunk has its own buffer.
  constexpr bool reuses_slots() const noexcept { return chunks > lanes * slots_per_lane; }
  //! Pinned staging bytes the upload holds.
  constexpr std::size_t staging_bytes() const noexcept {
    return lanes * slots_per_lane * chunk_bytes;
  }
  friend constexpr bool operator==(const staging_plan&, const staging_plan&) = default;
};

//! The staging of `bytes` bytes under `options`, `default_lanes` standing for an automatic
//! `host_lanes` (`auto_host_lanes(bytes)` for a plain copy, 1 for a fill callback):
//! - lanes: `options.host_lanes`, or `default_lanes`, at most `max_host_lanes`;
//! - chunk: `options.chunk_bytes`, or `auto_chunk_bytes(bytes, lanes)`, at most `bytes`;
//! - lanes at most the chunk count; staging: a slot for every chunk when that stays within
//!   `staging_ring_bytes` and `max_staging_slots_per_lane` slots per lane (nothing waits for
//!   an earlier copy then), else two slots per lane (double buffering).
//! Zero bytes: no chunks.
constexpr staging_plan plan_staging(std::size_t bytes, const upload_options& options,
                                    std::size_t default_lanes) noexcept {
  staging_plan plan;
  if (bytes == 0) return plan;
  std::size_t lanes = options.host_lanes != 0 ? options.host_lanes : default_lanes;
  if (lanes == 0) lanes = 1;
  if (lanes > max_host_lanes) lanes = max_host_lanes;
  std::size_t chunk =
      options.chunk_bytes != 0 ? options.chunk_bytes : auto_chunk_bytes(bytes, lanes);
  if (chunk > bytes) chunk = bytes;
  plan.chunk_bytes = chunk;
  plan.chunks = bytes / chunk + (bytes % chunk != 0 ? 1 : 0);
  plan.lanes = lanes < plan.chunks ? lanes : plan.chunks;
  const std::size_t per_lane = (plan.chunks + plan.lanes - 1) / plan.lanes;
  const bool every_chunk_its_slot =
      per_lane <= max_staging_slots_per_lane && per_lane * plan.lanes <= staging_ring_bytes / chunk;
  plan.slots_per_lane = every_chunk_its_slot || per_lane < 2 ? per_lane : 2;
  return plan;
}

}  // namespace vyre
