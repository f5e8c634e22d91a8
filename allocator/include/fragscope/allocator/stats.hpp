// Allocator statistics, current and peak. Definitions are those of docs/allocator.md, "Statistics", and the only
// ones used anywhere in fragscope.
#pragma once

#include <cstdint>
#include <string>

namespace fragscope {

struct AllocatorStats {
  // Current values.
  std::uint64_t in_use = 0;          // sum of rounded sizes of live chunks
  std::uint64_t reserved = 0;        // sum of region sizes (mapped bytes for an expandable region)
  // Address space held: region sizes plus the whole reserved range of an expandable (paging)
  // region, mapped or not. Costs no memory; >= reserved (as mimalloc's reserved >= committed).
  std::uint64_t address_space = 0;
  std::uint64_t live_requested = 0;  // sum of requested sizes of live allocations (LOAD)
  std::uint64_t allocations = 0;     // live allocations
  std::uint64_t regions = 0;
  std::uint64_t chunks = 0;          // chunks, free and in use
  std::uint64_t free_chunks = 0;
  std::uint64_t largest_free = 0;    // largest free chunk inside the regions
  std::uint64_t limit = 0;

  // Peaks since construction (or ResetPeaks).
  std::uint64_t peak_in_use = 0;
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_live_requested = 0;
  std::uint64_t peak_allocations = 0;
  std::uint64_t peak_regions = 0;
  std::uint64_t peak_largest_free = 0;
  std::uint64_t peak_address_space = 0;
  // The furthest any in-use chunk has reached into its region: max over time of (chunk end -
  // region base). With one region (growth=off in TensorFlow's BFC) it is the memory the run
  // needed of that region, TensorFlow's "high water".
  std::uint64_t peak_high_water = 0;

  // Counters.
  std::uint64_t total_allocs = 0;
  std::uint64_t total_frees = 0;
  std::uint64_t total_ooms = 0;
  std::uint64_t region_reserves = 0;
  std::uint64_t region_releases = 0;
  std::uint64_t maps = 0;            // page mappings into an expandable region's address space
  std::uint64_t unmaps = 0;
  std::uint64_t gc_runs = 0;

  std::uint64_t free_in_regions() const { return reserved - in_use; }
  std::uint64_t internal_waste() const { return in_use - live_requested; }
  std::uint64_t headroom() const { return limit > reserved ? limit - reserved : 0; }
  // 1 - largest_free / free_in_regions; 0 when nothing is free.
  double external_fragmentation() const;
  // in_use / reserved; 1 when nothing is reserved.
  double utilization() const;

  std::string Describe() const;  // aligned table for people
};

double ExternalFragmentation(std::uint64_t largest_free, std::uint64_t free_total);
double Utilization(std::uint64_t in_use, std::uint64_t reserved);

}  // namespace fragscope
