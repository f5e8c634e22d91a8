// The shape of a paging allocator (expandable=on): how much address space it asks for and how
// large its pages are. Public because trace analysis explains a recorded OOM in the same pages the
// allocator mapped (docs/allocator.md, "Paging").
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>

#include "fragscope/traces/byte_math.hpp"

namespace fragscope {

// The address range of a paging region is this many times the limit: address space costs nothing,
// and best fit over it then never runs out on real sequences.
inline constexpr std::uint64_t kPagingRangeFactor = 4;

// The page map holds at most this many pages (a 4 MiB bitmap; 20 KiB for an 80 GiB device). Pages
// are the backing's map granularity (2 MiB) up to a 16 TiB limit; past that (sim devices only, in
// practice) pages grow by powers of two so that the map never grows with an arbitrary limit.
inline constexpr std::uint64_t kMaxTrackedPages = std::uint64_t{1} << 25;

// The page of a paging allocator with `limit` on a backing that maps `granularity` (a power of
// two) at a time.
inline std::uint64_t PagingPageBytes(std::uint64_t granularity, std::uint64_t limit) {
  const std::uint64_t range =
      std::min(traces::CheckedMul(limit, kPagingRangeFactor).value_or(traces::kMaxBytes), traces::kMaxBytes);
  return std::max(granularity, std::bit_ceil((range + kMaxTrackedPages - 1) / kMaxTrackedPages));
}

}  // namespace fragscope
