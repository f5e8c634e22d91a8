// preset=pytorch: statistics, snapshots, the invariant checker and events.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "allocator_events.hpp"
#include "pytorch_caching_allocator.hpp"

namespace fragscope::pytorch {
namespace {

template <typename... Args>
[[noreturn]] void Violation(std::uint32_t device, fmt::format_string<Args...> format, Args&&... args) {
  throw InvariantViolation(fmt::format("device {} (preset=pytorch): {}", device,
                                       fmt::format(format, std::forward<Args>(args)...)));
}

}  // namespace

std::vector<const PytorchCachingAllocator::Block*> PytorchCachingAllocator::AllBlocksLocked() const {
  std::vector<const Block*> blocks;
  blocks.reserve(live_.size() + small_.blocks.size() + large_.blocks.size());
  for (const Pool* pool : {&small_, &large_}) {
    blocks.insert(blocks.end(), pool->blocks.begin(), pool->blocks.end());
    blocks.insert(blocks.end(), pool->unmapped.begin(), pool->unmapped.end());
  }
  for (const auto& [address, block] : live_) blocks.push_back(block);
  std::sort(blocks.begin(), blocks.end(), [](const Block* a, const Block* b) { return a->address < b->address; });
  return blocks;
}

AllocatorStats PytorchCachingAllocator::Stats() const {
  std::lock_guard lock(mutex_);
  AllocatorStats stats = stats_;
  stats.chunks = block_count_;
  stats.free_chunks = block_count_ - live_.size();
  stats.largest_free = LargestFreeLocked();
  stats.peak_largest_free = std::max(stats.peak_largest_free, stats.largest_free);
  return stats;
}

void PytorchCachingAllocator::ResetPeaks() {
  std::lock_guard lock(mutex_);
  AllocatorStats& s = stats_;
  s.peak_in_use = s.in_use;
  s.peak_reserved = s.reserved;
  s.peak_address_space = s.address_space;
  s.peak_live_requested = s.live_requested;
  s.peak_allocations = s.allocations;
  s.peak_regions = s.regions;
  s.peak_largest_free = LargestFreeLocked();
  s.peak_high_water = 0;
  for (const auto& [address, block] : live_) {
    s.peak_high_water = std::max(s.peak_high_water, block->address + block->size - block->segment->base);
  }
}

AllocatorSnapshot PytorchCachingAllocator::Snapshot() const {
  AllocatorSnapshot snapshot;
  snapshot.device = options_.device;
  snapshot.stats = Stats();
  std::lock_guard lock(mutex_);
  std::map<std::uint64_t, RegionView> regions;
  for (const auto& segment : segments_) {
    RegionView& region = regions[segment->base];
    region.address = segment->base;
    region.size = region.max_size = segment->size;
    region.paging = segment->expandable;
  }
  for (const Block* block : AllBlocksLocked()) {
    RegionView& region = regions.at(block->segment->base);
    // Chunks say what is free or in use; `mapped` says which pages hold memory. A free block and
    // the unmapped range beside it are one free chunk, as in every paging region.
    if (!block->allocated && !region.chunks.empty() && !region.chunks.back().in_use) {
      region.chunks.back().size += block->size;
    } else {
      region.chunks.push_back(ChunkView{block->address, block->size, block->requested, block->alloc_id,
                                        block->stream, block->tag, block->allocated});
    }
    if (!region.paging || !block->mapped) continue;
    if (!region.mapped.empty() && region.mapped.back().address + region.mapped.back().size == block->address) {
      region.mapped.back().size += block->size;
    } else {
      region.mapped.push_back(MappedRange{block->address, block->size});
    }
  }
  for (auto& [base, region] : regions) snapshot.regions.push_back(std::move(region));
  return snapshot;
}

std::optional<OomReport> PytorchCachingAllocator::LastOom() const {
  std::lock_guard lock(mutex_);
  return last_oom_;
}

std::uint64_t PytorchCachingAllocator::ReleaseFreeRegions() {
  std::lock_guard lock(mutex_);
  const std::uint64_t before = stats_.reserved;
  ReleaseCachedBlocks();
  return before - stats_.reserved;
}

void PytorchCachingAllocator::CheckInvariants() const {
  std::lock_guard lock(mutex_);
  CheckInvariantsLocked();
}

void PytorchCachingAllocator::CheckInvariantsLocked() const {
  const std::uint32_t dev = options_.device;
  // Every record is in exactly one place: the live table, its pool's free set, or its pool's
  // unmapped set, as its state says.
  for (const Pool* pool : {&small_, &large_}) {
    for (const Block* block : pool->blocks) {
      if (block->allocated || !block->mapped || block->pool != pool) {
        Violation(dev, "the free set holds the block at {:#x}, which is not a free mapped block of its pool",
                  block->address);
      }
    }
    for (const Block* block : pool->unmapped) {
      if (block->allocated || block->mapped || block->pool != pool) {
        Violation(dev, "the unmapped set holds the block at {:#x}, which is not unmapped", block->address);
      }
    }
  }
  for (const auto& [address, block] : live_) {
    if (!block->allocated || !block->mapped || block->address != address) {
      Violation(dev, "the live table holds {:#x}, which is not an allocated block there", address);
    }
  }
  const std::vector<const Block*> blocks = AllBlocksLocked();
  std::map<const Segment*, std::uint64_t> tiled;  // bytes of each segment covered by its blocks
  std::uint64_t in_use = 0, requested = 0, mapped_blocks = 0, reserved = 0, address_space = 0;
  std::uint64_t expandable_mapped = 0;
  for (const Block* block : blocks) {
    const Segment* segment = block->segment;
    if (segment == nullptr || block->pool != segment->pool || block->stream != segment->stream ||
        block->registration != segment->registration) {
      Violation(dev, "the block at {:#x} disagrees with its segment (pool, stream or age)", block->address);
    }
    if (block->size == 0 || block->address < segment->base ||
        block->address + block->size > segment->base + segment->size) {
      Violation(dev, "the block at {:#x} ({} bytes) lies outside its segment", block->address, block->size);
    }
    const bool first = block->address == segment->base;
    if (first != (block->prev == nullptr)) {
      Violation(dev, "the block at {:#x} {} its segment's first block but has {} previous block",
                block->address, first ? "is" : "is not", first ? "a" : "no");
    }
    if (block->next != nullptr) {
      if (block->next->address != block->address + block->size || block->next->prev != block) {
        Violation(dev, "the blocks of the segment at {:#x} do not tile it after {:#x}", segment->base,
                  block->address);
      }
      if (!block->allocated && !block->next->allocated && block->mapped == block->next->mapped) {
        Violation(dev, "two free {} neighbours at {:#x} and {:#x} were not merged",
                  block->mapped ? "mapped" : "unmapped", block->address, block->next->address);
      }
    } else if (block->address + block->size != segment->base + segment->size) {
      Violation(dev, "the last block of the segment at {:#x} ends before the segment", segment->base);
    }
    if (!segment->expandable && !block->mapped) {
      Violation(dev, "the block at {:#x} is unmapped in a segment that does not page", block->address);
    }
    if (segment->expandable && !block->mapped &&
        ((block->address - segment->base) % segment->page != 0 || block->size % segment->page != 0)) {
      Violation(dev, "the unmapped block at {:#x} is not whole pages", block->address);
    }
    if (block->mapped) ++mapped_blocks;
    if (block->allocated) {
      in_use += block->size;
      requested += block->requested;
    }
    if (segment->expandable && block->mapped) {
      reserved += block->size;
      expandable_mapped += block->size;
    }
    tiled[segment] += block->size;
  }
  for (const auto& segment : segments_) {
    if (tiled[segment.get()] != segment->size) {
      Violation(dev, "the blocks of the segment at {:#x} cover {} of its {} bytes", segment->base,
                tiled[segment.get()], segment->size);
    }
    address_space += segment->size;
    if (!segment->expandable) reserved += segment->size;
  }
  std::uint64_t segment_mapped = 0;
  for (const auto& segment : segments_) segment_mapped += segment->expandable ? segment->mapped : 0;
  const AllocatorStats& s = stats_;
  if (s.in_use != in_use || s.live_requested != requested || s.allocations != live_.size()) {
    Violation(dev, "in use {} / requested {} / {} allocations, but the blocks say {} / {} / {}", s.in_use,
              s.live_requested, s.allocations, in_use, requested, live_.size());
  }
  if (s.reserved != reserved || s.address_space != address_space || s.regions != segments_.size() ||
      block_count_ != mapped_blocks) {
    Violation(dev, "reserved {} / address space {} / {} segments / {} blocks, but the segments say {} / {} / {} / {}",
              s.reserved, s.address_space, s.regions, block_count_, reserved, address_space,
              segments_.size(), mapped_blocks);
  }
  if (expandable_mapped != segment_mapped) {
    Violation(dev, "expandable segments count {} mapped bytes, but their mapped blocks hold {}",
              segment_mapped, expandable_mapped);
  }
  if (s.reserved > options_.limit) Violation(dev, "reserved {} is above the limit {}", s.reserved, options_.limit);
  if (s.total_allocs - s.total_frees != s.allocations) {
    Violation(dev, "{} allocations minus {} frees != {} live", s.total_allocs, s.total_frees, s.allocations);
  }
}

void PytorchCachingAllocator::SetSink(traces::EventSink* sink) {
  std::lock_guard lock(mutex_);
  sink_ = sink;
  if (sink_ == nullptr) return;
  // A trace must stand on its own: what exists now, before the first new event.
  const std::vector<const Block*> blocks = AllBlocksLocked();
  for (const auto& segment : segments_) {
    if (!segment->expandable) {
      EmitRange(traces::EventType::kRegionReserve, segment->base, segment->size);
      continue;
    }
    EmitRange(traces::EventType::kAddressReserve, segment->base, segment->size);
    std::uint64_t start = 0, end = 0;
    for (const Block* block : blocks) {
      if (block->segment != segment.get() || !block->mapped) continue;
      if (end != block->address) {
        if (end > start) EmitRange(traces::EventType::kMap, start, end - start);
        start = block->address;
      }
      end = block->address + block->size;
    }
    if (end > start) EmitRange(traces::EventType::kMap, start, end - start);
  }
  for (const Block* block : blocks) {
    if (block->allocated) EmitBlock(traces::EventType::kAlloc, *block);
  }
}

void PytorchCachingAllocator::Mark(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (sink_ == nullptr) return;
  traces::Event event = MarkerEvent(options_.device, sink_->Intern(name));
  sink_->Record(event);
}

void PytorchCachingAllocator::EmitBlock(traces::EventType type, const Block& block) {
  traces::Event event = AllocationEvent(type, options_.device,
                                        {block.stream, block.address, block.requested, block.size,
                                         block.segment->base, block.alloc_id, block.tag});
  sink_->Record(event);
}

void PytorchCachingAllocator::EmitRange(traces::EventType type, std::uint64_t address, std::uint64_t size) {
  traces::Event event = RangeEvent(type, options_.device, address, size);
  sink_->Record(event);
}

void PytorchCachingAllocator::EmitOom(const OomReport& report) {
  traces::Event event = OomEvent(options_.device, report);
  sink_->Record(event);
}

}  // namespace fragscope::pytorch
