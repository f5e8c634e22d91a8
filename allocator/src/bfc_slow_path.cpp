// The BFC allocator's slow path: construction and preallocation, extension (a new region under the
// growth policy, or in-place growth of the expandable region), gc, and the OOM diagnosis. Runs under
// the allocator's lock, only when the bins hold no chunk that fits.
#include <bit>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "bfc_allocator.hpp"
#include "invalid_free.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope::bfc {
namespace {

std::uint64_t RoundUpTo(std::uint64_t bytes, std::uint64_t unit) {
  return (bytes + unit - 1) / unit * unit;
}
std::uint64_t RoundDownTo(std::uint64_t bytes, std::uint64_t unit) { return bytes / unit * unit; }

}  // namespace

BfcAllocator::BfcAllocator(Backing& backing, const BfcOptions& options)
    : backing_(backing), options_(options) {
  stats_.limit = options_.limit;
  if (options_.first_region_bytes != 0) next_region_bytes_ = options_.first_region_bytes;
  pool_.Refill();
  if (options_.expandable) {
    InitPaging();
  } else if (options_.preallocate_bytes > 0) {
    const std::uint64_t bytes = RoundDownTo(options_.preallocate_bytes, backing_.info().granularity);
    void* base = bytes > 0 ? backing_.Reserve(bytes, 0) : nullptr;
    if (base == nullptr) {
      throw BackingError(fmt::format("device {}: preallocation of {} refused by the {} backing",
                                     options_.device, FormatBytes(bytes),
                                     ToString(backing_.info().kind)));
    }
    AddRegion(reinterpret_cast<std::uint64_t>(base), bytes);
  }
}

BfcAllocator::~BfcAllocator() {
  if (stats_.allocations > 0) {
    fragscope::Log().warn("device {}: allocator destroyed with {} live allocations ({}) still held",
                 options_.device, stats_.allocations, FormatBytes(stats_.in_use));
  }
  bins_.Clear();
  ReleasePaging();
  for (auto& [base, region] : regions_) {
    if (region->expandable) continue;  // ReleasePaging gave it back
    try {
      backing_.Release(reinterpret_cast<void*>(base), region->size, 0);
    } catch (const std::exception& error) {  // a destructor must not throw; say what leaked
      fragscope::Log().error("device {}: releasing region {:#x}: {}", options_.device, base, error.what());
    }
  }
}

// A request above kMaxRequestBytes cannot be rounded: it is reported as it is (its "rounded" size
// is the request), which is more than any limit, so the cause is request-too-large.
void* BfcAllocator::RefuseUnrepresentable(std::uint64_t requested, const AllocOptions& options,
                                          OomReport* report) {
  std::lock_guard guard(lock_);
  return AllocateSlow(requested, requested, options, report);
}

void* BfcAllocator::AllocateSlow(std::uint64_t rounded, std::uint64_t requested,
                                 const AllocOptions& options, OomReport* report) {
  if (paging_) return AllocateOnPages(rounded, requested, options, report);
  bool backing_refused = false;
  std::uint64_t gc_released = 0;
  if (rounded > options_.limit) {  // no region and no gc can serve it: straight to the report
    return ReportOom(Diagnose(rounded, requested, options, false, false, 0), report);
  }
  if (Extend(rounded, &backing_refused)) {
    return Carve(bins_.FindBestFit(rounded), rounded, requested, options);
  }
  if (options_.gc) {
    ++stats_.gc_runs;
    gc_released = ReleaseFreeRegionsLocked();
    if (gc_released > 0) {
      backing_refused = false;
      if (Extend(rounded, &backing_refused)) {
        return Carve(bins_.FindBestFit(rounded), rounded, requested, options);
      }
    }
  }
  return ReportOom(Diagnose(rounded, requested, options, backing_refused, options_.gc, gc_released), report);
}

void* BfcAllocator::ReportOom(OomReport diagnosis, OomReport* report) {
  ++stats_.total_ooms;
  if (sink_ != nullptr) EmitOom(diagnosis);
  // info, not warn: the caller gets the report; replays meet thousands.
  fragscope::Log().info("{}", diagnosis.Summary());
  last_oom_ = diagnosis;
  if (report != nullptr) *report = std::move(diagnosis);
  return nullptr;
}

bool BfcAllocator::Extend(std::uint64_t rounded, bool* backing_refused) {
  return ExtendWithRegion(rounded, backing_refused);
}

std::uint64_t BfcAllocator::NextRegionBytes(std::uint64_t rounded) const {
  if (options_.growth) return std::max(next_region_bytes_, std::bit_ceil(rounded));
  return RoundUpTo(rounded, kRegionRoundingBytes);
}

// A new region: the growth policy's size, capped at the headroom; when the backing refuses, halve
// down to what the request needs (as TensorFlow's BFC does), so a nearly full device still serves.
bool BfcAllocator::ExtendWithRegion(std::uint64_t rounded, bool* backing_refused) {
  const std::uint64_t granularity = backing_.info().granularity;
  const std::uint64_t headroom = stats_.headroom();
  const std::uint64_t need = RoundUpTo(rounded, granularity);
  if (need > headroom) return false;
  std::uint64_t size = std::max(need, std::min(NextRegionBytes(rounded), RoundDownTo(headroom, granularity)));
  // TensorFlow's rule: a request larger than the next region raises the region size to fit it, and
  // that size is not doubled again afterwards. Doubling past an oversized request would start a run
  // of ever larger regions (16 MiB ... 4 GiB, 8 GiB) that the sequence never needs.
  const bool raised = options_.growth && std::bit_ceil(rounded) > next_region_bytes_;
  for (;;) {
    if (void* base = backing_.Reserve(size, 0)) {
      AddRegion(reinterpret_cast<std::uint64_t>(base), size);
      if (options_.growth) {
        next_region_bytes_ = std::max(next_region_bytes_, raised ? size : size * 2);
      }
      return true;
    }
    if (size == need) {
      *backing_refused = true;
      return false;
    }
    size = std::max(need, RoundUpTo(size / 2, granularity));
  }
}

Region* BfcAllocator::AddRegion(std::uint64_t base, std::uint64_t size) {
  if (pool_.Empty()) pool_.Refill();
  auto owned = std::make_unique<Region>();
  Region* region = owned.get();
  region->base = base;
  region->size = region->max_size = size;
  Chunk* chunk = pool_.Take();
  chunk->address = base;
  chunk->size = size;
  chunk->region = region;
  region->first = region->last = chunk;
  regions_.emplace(base, std::move(owned));
  ++chunk_count_;
  bins_.Insert(chunk);

  stats_.reserved += size;
  stats_.address_space += size;  // an ordinary region's address space is its memory
  ++stats_.regions;
  ++stats_.region_reserves;
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  stats_.peak_address_space = std::max(stats_.peak_address_space, stats_.address_space);
  stats_.peak_regions = std::max(stats_.peak_regions, stats_.regions);
  stats_.peak_largest_free = std::max(stats_.peak_largest_free, size);
  if (sink_ != nullptr) EmitRegion(traces::EventType::kRegionReserve, base, size);
  return region;
}

std::uint64_t BfcAllocator::ReleaseFreeRegions() {
  std::lock_guard guard(lock_);
  return ReleaseFreeRegionsLocked();
}

std::uint64_t BfcAllocator::ReleaseFreeRegionsLocked() {
  std::uint64_t released = 0;
  for (auto it = regions_.begin(); it != regions_.end();) {
    Region* region = it->second.get();
    if (region->expandable || region->live_chunks != 0) {
      ++it;
      continue;
    }
    // With no live chunk, coalescing has left exactly one free chunk covering the region.
    Chunk* chunk = region->first;
    bins_.Erase(chunk);
    ReleaseChunkRecord(chunk);
    backing_.Release(reinterpret_cast<void*>(region->base), region->size, 0);
    stats_.reserved -= region->size;
    stats_.address_space -= region->size;
    --stats_.regions;
    ++stats_.region_releases;
    released += region->size;
    if (sink_ != nullptr) EmitRegion(traces::EventType::kRegionRelease, region->base, region->size);
    it = regions_.erase(it);
  }
  // The doubling restarts from what is still reserved, so a long run does not ratchet up to
  // regions bigger than the limit allows.
  if (released > 0 && options_.growth && options_.restart_growth_after_gc) {
    next_region_bytes_ = std::max(kFirstRegionBytes, std::bit_floor(std::max<std::uint64_t>(stats_.reserved, 1)));
  }
  // A paging region gives back the whole pages that no live chunk touches.
  return released + (paging_ ? UnmapFreePages() : 0);
}

OomReport BfcAllocator::Diagnose(std::uint64_t rounded, std::uint64_t requested,
                                 const AllocOptions& options, bool backing_refused, bool gc_ran,
                                 std::uint64_t gc_released) const {
  traces::OomRecord numbers;
  numbers.request = requested;
  numbers.rounded = rounded;
  numbers.limit = options_.limit;
  numbers.reserved = stats_.reserved;
  numbers.in_use = stats_.in_use;
  numbers.live_requested = stats_.live_requested;
  numbers.free_in_regions = stats_.free_in_regions();
  const Chunk* largest = bins_.Largest();
  numbers.largest_free = paging_ ? LargestMappedFree() : largest != nullptr ? largest->size : 0;
  numbers.headroom = stats_.headroom();
  numbers.chunk_count = chunk_count_;
  numbers.region_count = stats_.regions;
  PageFacts pages;
  if (paging_) pages = StrandedPages(rounded);
  OomReport report = DiagnoseOom(options_.device, numbers, backing_refused, paging_ ? &pages : nullptr);
  report.stream = options.stream;
  report.tag = options.tag;
  report.gc_ran = gc_ran;
  report.gc_released = gc_released;
  AddPolicyAdvice(report, PolicyFacts{options_.gc, options_.expandable, backing_.expandable() != nullptr});
  return report;
}

void BfcAllocator::ThrowInvalidFree(void* ptr) const {
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  std::optional<FreedPlace> place;
  if (ptr != nullptr) {
    if (auto it = regions_.upper_bound(address); it != regions_.begin()) {
      const Region& region = *std::prev(it)->second;
      if (address < region.base + region.size) {
        for (const Chunk* chunk = region.first; chunk != nullptr; chunk = chunk->next) {
          if (address < chunk->address || address >= chunk->end()) continue;
          // A live chunk's start would have been found in the pointer table.
          place = FreedPlace{chunk->address, chunk->in_use()};
          break;
        }
      }
    }
  }
  fragscope::ThrowInvalidFree(options_.device, ptr, place);
}

}  // namespace fragscope::bfc
