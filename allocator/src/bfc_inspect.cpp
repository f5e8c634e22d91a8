// Reading the BFC allocator: stats, snapshots, the invariant checker, and event emission.
#include <array>

#include <fmt/format.h>

#include "bfc_allocator.hpp"
#include "allocator_events.hpp"

namespace fragscope::bfc {

AllocatorStats BfcAllocator::Stats() const {
  std::lock_guard guard(lock_);
  AllocatorStats stats = stats_;
  stats.chunks = chunk_count_;
  stats.free_chunks = bins_.free_chunks();
  const Chunk* largest = bins_.Largest();
  stats.largest_free = largest != nullptr ? largest->size : 0;
  if (paging_) {
    // A free chunk of a paging region spans unmapped address space: the largest free extent of
    // memory is measured over mapped pages, and its peak is the largest seen by a read.
    stats.largest_free = LargestMappedFree();
    stats.peak_largest_free = std::max(stats.peak_largest_free, stats.largest_free);
  }
  return stats;
}

void BfcAllocator::ResetPeaks() {
  std::lock_guard guard(lock_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
  stats_.peak_address_space = stats_.address_space;
  stats_.peak_live_requested = stats_.live_requested;
  stats_.peak_allocations = stats_.allocations;
  stats_.peak_regions = stats_.regions;
  stats_.peak_high_water = 0;
  for (const auto& [base, region] : regions_) {
    for (const Chunk* chunk = region->first; chunk != nullptr; chunk = chunk->next) {
      if (chunk->in_use()) stats_.peak_high_water = std::max(stats_.peak_high_water, chunk->address + chunk->size - base);
    }
  }
  const Chunk* largest = bins_.Largest();
  stats_.peak_largest_free = paging_ ? LargestMappedFree() : largest != nullptr ? largest->size : 0;
}

std::optional<OomReport> BfcAllocator::LastOom() const {
  std::lock_guard guard(lock_);
  return last_oom_;
}

AllocatorSnapshot BfcAllocator::Snapshot() const {
  AllocatorSnapshot snapshot;
  snapshot.stats = Stats();
  snapshot.device = options_.device;
  std::lock_guard guard(lock_);
  snapshot.regions.reserve(regions_.size());
  for (const auto& [base, region] : regions_) {
    RegionView& view = snapshot.regions.emplace_back();
    view.address = base;
    view.size = region->size;
    view.max_size = region->max_size;
    if (region->expandable) {
      view.paging = true;
      const std::uint64_t page = pages_.page_bytes();
      pages_.ForEachRun(0, pages_.high_water(), true, [&](std::uint64_t a, std::uint64_t b) {
        view.mapped.push_back(MappedRange{pages_.AddressOf(a), (b - a) * page});
      });
    }
    for (const Chunk* chunk = region->first; chunk != nullptr; chunk = chunk->next) {
      view.chunks.push_back(ChunkView{chunk->address, chunk->size, chunk->requested,
                                      chunk->alloc_id, chunk->stream, chunk->tag,
                                      chunk->in_use()});
    }
  }
  return snapshot;
}

void BfcAllocator::CheckInvariants() const {
  std::lock_guard guard(lock_);
  CheckInvariantsLocked();
}

namespace {

template <typename... Args>
[[noreturn]] void Violation(std::uint32_t device, fmt::format_string<Args...> format,
                            Args&&... args) {
  throw InvariantViolation(fmt::format("device {}: invariant violated: {}", device,
                                       fmt::format(format, std::forward<Args>(args)...)));
}

}  // namespace

// Checks, in this order: chunks tile every region; no two free neighbours; the bins hold exactly
// the free chunks (every binned chunk is free and belongs to a region, and the bins hold as many
// chunks as the regions have free ones; a set holds no duplicates), each in its size class; the pointer table holds exactly the live chunks; every
// counter in the stats equals the sum it stands for.
void BfcAllocator::CheckInvariantsLocked() const {
  const std::uint32_t dev = options_.device;
  std::uint64_t reserved = 0, address_space = 0, in_use = 0, requested = 0, live = 0, chunks = 0, free_chunks = 0;
  std::uint64_t largest_free = 0;
  std::uint64_t previous_end = 0;
  for (const auto& [base, region] : regions_) {
    if (region->base != base) Violation(dev, "region keyed {:#x} has base {:#x}", base, region->base);
    if (base < previous_end) Violation(dev, "region {:#x} overlaps the previous one", base);
    previous_end = base + region->max_size;
    // Chunks tile every region whole; a paging region's memory is its mapped pages (CheckPagesLocked).
    if (region->size != region->max_size) {
      Violation(dev, "region {:#x} has size {} != max size {}", base, region->size, region->max_size);
    }
    if (region->expandable != (region.get() == expandable_region_)) {
      Violation(dev, "region {:#x} expandable flag disagrees with the allocator", base);
    }
    reserved += region->expandable ? pages_.mapped_bytes() : region->size;
    address_space += region->max_size;
    std::uint64_t cursor = base;
    std::uint64_t region_live = 0;
    const Chunk* prev = nullptr;
    for (const Chunk* chunk = region->first; chunk != nullptr; chunk = chunk->next) {
      ++chunks;
      if (chunk->region != region.get()) Violation(dev, "chunk {:#x} points to another region", chunk->address);
      if (chunk->prev != prev) Violation(dev, "chunk {:#x} has a wrong prev link", chunk->address);
      if (chunk->address != cursor) {
        Violation(dev, "chunks of region {:#x} do not tile it: gap or overlap at {:#x} (chunk at {:#x})",
                  base, cursor, chunk->address);
      }
      if (chunk->size == 0 || chunk->size % kRoundingUnit != 0) {
        Violation(dev, "chunk {:#x} has size {}, not a positive multiple of 256", chunk->address, chunk->size);
      }
      if (chunk->in_use()) {
        if (chunk->end() > base + region->size || chunk->end() < chunk->address) {
          Violation(dev, "live chunk {:#x} ({} bytes) runs past region {:#x}", chunk->address, chunk->size, base);
        }
        ++live;
        ++region_live;
        in_use += chunk->size;
        requested += chunk->requested;
        if (RoundUp(chunk->requested) > chunk->size) {
          Violation(dev, "chunk {:#x} holds {} bytes for a request of {}", chunk->address, chunk->size, chunk->requested);
        }
        if (live_.Find(chunk->address) != chunk) {
          Violation(dev, "live chunk {:#x} is missing from the pointer table", chunk->address);
        }
        if (chunk->end() - base > stats_.peak_high_water) {
          Violation(dev, "live chunk {:#x} reaches past the peak high water {}", chunk->address, stats_.peak_high_water);
        }
      } else {
        ++free_chunks;
        largest_free = std::max(largest_free, chunk->size);
        if (chunk->requested != 0) Violation(dev, "free chunk {:#x} keeps a requested size", chunk->address);
        if (prev != nullptr && !prev->in_use()) {
          Violation(dev, "free chunks {:#x} and {:#x} are neighbours: not coalesced", prev->address, chunk->address);
        }
      }
      cursor = chunk->end();
      prev = chunk;
    }
    if (region->last != prev) Violation(dev, "region {:#x} has a wrong last chunk", base);
    if (cursor != base + region->size) {
      Violation(dev, "chunks of region {:#x} end at {:#x}, the region at {:#x}", base, cursor, base + region->size);
    }
    if (region_live != region->live_chunks) {
      Violation(dev, "region {:#x} counts {} live chunks, holds {}", base, region->live_chunks, region_live);
    }
  }

  std::uint64_t binned = 0;
  std::uint64_t nonempty = 0;
  std::array<std::uint64_t, BestFitBins::kBinCount> nonempty_subs{};
  const Chunk* previous = nullptr;
  // Sub-classes partition the sizes in order, so the whole visit is ascending by (size, address).
  bins_.ForEach([&](int bin, int sub, const Chunk& chunk) {
    ++binned;
    nonempty |= std::uint64_t{1} << bin;
    nonempty_subs[static_cast<std::size_t>(bin)] |= std::uint64_t{1} << sub;
    if (chunk.in_use()) Violation(dev, "bin {} holds live chunk {:#x}", bin, chunk.address);
    if (BestFitBins::BinIndex(chunk.size) != bin || BestFitBins::SubIndex(chunk.size, bin) != sub) {
      Violation(dev, "chunk {:#x} of {} bytes is in class ({}, {})", chunk.address, chunk.size, bin, sub);
    }
    if (chunk.bin_class != bin || chunk.bin_sub != sub) {
      Violation(dev, "chunk {:#x} is in class ({}, {}) but records ({}, {})", chunk.address, bin, sub,
                chunk.bin_class, chunk.bin_sub);
    }
    if (previous != nullptr &&
        !(previous->size < chunk.size || (previous->size == chunk.size && previous->address < chunk.address))) {
      Violation(dev, "bins are not ordered by (size, address) at {:#x}", chunk.address);
    }
    auto it = regions_.find(chunk.region != nullptr ? chunk.region->base : 0);
    if (it == regions_.end() || it->second.get() != chunk.region) {
      Violation(dev, "binned chunk {:#x} belongs to no region", chunk.address);
    }
    previous = &chunk;
  });
  for (int bin = 0; bin < BestFitBins::kBinCount; ++bin) {
    if (nonempty_subs[static_cast<std::size_t>(bin)] != bins_.nonempty_subs(bin)) {
      Violation(dev, "sub-class bitmap of bin {} is {:#x}, holds {:#x}", bin, bins_.nonempty_subs(bin),
                nonempty_subs[static_cast<std::size_t>(bin)]);
    }
  }
  if (binned != free_chunks) Violation(dev, "bins hold {} chunks, regions {} free chunks", binned, free_chunks);
  if (binned != bins_.free_chunks()) Violation(dev, "bins count {} chunks, hold {}", bins_.free_chunks(), binned);
  if (nonempty != bins_.nonempty_mask()) Violation(dev, "bin bitmap {:#x} != non-empty bins {:#x}", bins_.nonempty_mask(), nonempty);
  const Chunk* largest = bins_.Largest();
  if ((largest != nullptr ? largest->size : 0) != largest_free) Violation(dev, "largest free chunk is wrong");

  if (live_.size() != live) Violation(dev, "pointer table holds {} entries, {} live chunks", live_.size(), live);
  live_.ForEach([&](const Chunk& chunk) {
    if (!chunk.in_use()) Violation(dev, "pointer table holds free chunk {:#x}", chunk.address);
  });

  const AllocatorStats& s = stats_;
  if (s.reserved != reserved) Violation(dev, "stats.reserved {} != sum of regions {}", s.reserved, reserved);
  if (s.address_space != address_space) {
    Violation(dev, "stats.address_space {} != sum of region ranges {}", s.address_space, address_space);
  }
  // Mapped bytes lie inside reserved address space (each region's size <= max_size, checked above).
  if (s.reserved > s.address_space) Violation(dev, "reserved {} above the address space {}", s.reserved, s.address_space);
  if (s.in_use != in_use) Violation(dev, "stats.in_use {} != sum of live chunks {}", s.in_use, in_use);
  if (s.live_requested != requested) Violation(dev, "stats.live_requested {} != {}", s.live_requested, requested);
  if (s.allocations != live) Violation(dev, "stats.allocations {} != {}", s.allocations, live);
  if (s.regions != regions_.size()) Violation(dev, "stats.regions {} != {}", s.regions, regions_.size());
  if (chunk_count_ != chunks) Violation(dev, "chunk count {} != {}", chunk_count_, chunks);
  if (s.reserved > options_.limit) Violation(dev, "reserved {} above the limit {}", s.reserved, options_.limit);
  if (s.peak_in_use < s.in_use || s.peak_reserved < s.reserved ||
      s.peak_live_requested < s.live_requested || s.peak_allocations < s.allocations ||
      s.peak_regions < s.regions || (!paging_ && s.peak_largest_free < largest_free) ||
      s.peak_address_space < s.address_space) {
    Violation(dev, "a peak is below its current value");
  }
  if (s.total_allocs - s.total_frees != s.allocations) {
    Violation(dev, "{} allocations minus {} frees != {} live", s.total_allocs, s.total_frees, s.allocations);
  }
  if (paging_) CheckPagesLocked();
}

void BfcAllocator::SetSink(traces::EventSink* sink) {
  std::lock_guard guard(lock_);
  sink_ = sink;
  if (sink_ == nullptr) return;
  // A trace must stand on its own: record what exists before the first new event.
  for (const auto& [base, region] : regions_) {
    if (region->expandable) {
      // The address range, then the pages mapped in it now.
      EmitRegion(traces::EventType::kAddressReserve, base, region->max_size);
      const std::uint64_t page = pages_.page_bytes();
      pages_.ForEachRun(0, pages_.high_water(), true, [&](std::uint64_t a, std::uint64_t b) {
        EmitRegion(traces::EventType::kMap, pages_.AddressOf(a), (b - a) * page);
      });
    } else if (region->size > 0) {
      EmitRegion(traces::EventType::kRegionReserve, base, region->size);
    }
  }
  for (const auto& [base, region] : regions_) {
    for (const Chunk* chunk = region->first; chunk != nullptr; chunk = chunk->next) {
      if (chunk->in_use()) EmitChunk(traces::EventType::kAlloc, *chunk);
    }
  }
}

void BfcAllocator::Mark(std::string_view name) {
  std::lock_guard guard(lock_);
  if (sink_ == nullptr) return;
  traces::Event event = MarkerEvent(options_.device, sink_->Intern(name));
  sink_->Record(event);
}

void BfcAllocator::EmitChunk(traces::EventType type, const Chunk& chunk) {
  traces::Event event = AllocationEvent(type, options_.device,
                                        {chunk.stream, chunk.address, chunk.requested, chunk.size,
                                         chunk.region->base, chunk.alloc_id, chunk.tag});
  sink_->Record(event);
}

void BfcAllocator::EmitRegion(traces::EventType type, std::uint64_t address, std::uint64_t size) {
  traces::Event event = RangeEvent(type, options_.device, address, size);
  sink_->Record(event);
}

void BfcAllocator::EmitOom(const OomReport& report) {
  traces::Event event = OomEvent(options_.device, report);
  sink_->Record(event);
}

}  // namespace fragscope::bfc
