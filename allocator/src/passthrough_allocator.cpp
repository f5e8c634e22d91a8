#include "passthrough_allocator.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "allocator_events.hpp"
#include "fragscope/allocator/errors.hpp"

namespace fragscope {

PassthroughAllocator::PassthroughAllocator(Backing& backing, std::uint32_t device,
                                           std::uint64_t limit)
    : backing_(backing), device_(device), limit_(limit) {
  stats_.limit = limit;
}

PassthroughAllocator::~PassthroughAllocator() {
  if (!live_.empty()) {
    fragscope::Log().warn("device {}: passthrough allocator destroyed with {} live allocations", device_,
                 live_.size());
  }
  for (const auto& [address, allocation] : live_) {
    try {
      backing_.Release(reinterpret_cast<void*>(address), allocation.size, allocation.stream);
    } catch (const std::exception& error) {
      fragscope::Log().error("device {}: releasing {:#x}: {}", device_, address, error.what());
    }
  }
}

void* PassthroughAllocator::TryAllocate(std::uint64_t bytes, const AllocOptions& options,
                                        OomReport* report) {
  const std::uint64_t granularity = backing_.info().granularity;
  // The one size check (kMaxRequestBytes): a larger request is reported as it is, more than any
  // limit, so request-too-large.
  const std::uint64_t size = bytes > kMaxRequestBytes
                                 ? bytes
                                 : (RoundUp(bytes) + granularity - 1) / granularity * granularity;
  std::lock_guard lock(mutex_);
  void* ptr = nullptr;
  bool backing_refused = false;
  if (size <= limit_ - std::min(limit_, stats_.reserved)) {
    ptr = backing_.Reserve(size, options.stream);
    backing_refused = ptr == nullptr;
  }
  if (ptr == nullptr) {
    traces::OomRecord numbers;
    numbers.request = bytes;
    numbers.rounded = size;
    numbers.limit = limit_;
    numbers.reserved = stats_.reserved;
    numbers.in_use = stats_.in_use;
    numbers.live_requested = stats_.live_requested;
    numbers.headroom = stats_.headroom();
    numbers.chunk_count = numbers.region_count = live_.size();
    OomReport diagnosis = DiagnoseOom(device_, numbers, backing_refused);
    diagnosis.stream = options.stream;
    diagnosis.tag = options.tag;
    ++stats_.total_ooms;
    if (sink_ != nullptr) {
      traces::Event event;
      event.type = traces::EventType::kOom;
      event.device = device_;
      event.time_ns = MonotonicNs();
      event.stream = options.stream;
      event.size = bytes;
      event.rounded = size;
      event.thread = ThreadOrdinal();
      event.tag = options.tag;
      event.oom = diagnosis.numbers;
      sink_->Record(event);
    }
    // info, not warn: the caller gets the report; replays meet thousands.
    fragscope::Log().info("{}", diagnosis.Summary());
    last_oom_ = diagnosis;
    if (report != nullptr) *report = std::move(diagnosis);
    return nullptr;
  }
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  const Allocation& allocation =
      live_.emplace(address, Allocation{size, bytes, next_alloc_id_++, options.stream, options.tag})
          .first->second;
  AllocatorStats& s = stats_;
  s.in_use += size;
  s.reserved += size;
  s.address_space += size;  // every allocation is a region of its own: its address space is its memory
  s.live_requested += bytes;
  ++s.allocations;
  ++s.regions;
  ++s.total_allocs;
  ++s.region_reserves;
  s.peak_in_use = std::max(s.peak_in_use, s.in_use);
  s.peak_reserved = std::max(s.peak_reserved, s.reserved);
  s.peak_address_space = std::max(s.peak_address_space, s.address_space);
  s.peak_live_requested = std::max(s.peak_live_requested, s.live_requested);
  s.peak_allocations = std::max(s.peak_allocations, s.allocations);
  s.peak_regions = std::max(s.peak_regions, s.regions);
  s.peak_high_water = std::max(s.peak_high_water, size);  // each allocation is its own region
  if (sink_ != nullptr) {
    Emit(traces::EventType::kRegionReserve, address, allocation);
    Emit(traces::EventType::kAlloc, address, allocation);
  }
  return ptr;
}

void PassthroughAllocator::Free(void* ptr) {
  const auto address = reinterpret_cast<std::uint64_t>(ptr);
  std::lock_guard lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end()) {
    throw InvalidFree(ptr, fmt::format("device {}: invalid free of {}: not a live allocation of "
                                       "this allocator (double free?)",
                                       device_, ptr));
  }
  const Allocation allocation = it->second;
  backing_.Release(ptr, allocation.size, allocation.stream);
  live_.erase(it);
  if (sink_ != nullptr) {
    Emit(traces::EventType::kFree, address, allocation);
    Emit(traces::EventType::kRegionRelease, address, allocation);
  }
  AllocatorStats& s = stats_;
  s.in_use -= allocation.size;
  s.reserved -= allocation.size;
  s.address_space -= allocation.size;
  s.live_requested -= allocation.requested;
  --s.allocations;
  --s.regions;
  ++s.total_frees;
  ++s.region_releases;
}

AllocatorStats PassthroughAllocator::Stats() const {
  std::lock_guard lock(mutex_);
  AllocatorStats stats = stats_;
  stats.chunks = live_.size();
  return stats;
}

void PassthroughAllocator::ResetPeaks() {
  std::lock_guard lock(mutex_);
  stats_.peak_in_use = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
  stats_.peak_address_space = stats_.address_space;
  stats_.peak_live_requested = stats_.live_requested;
  stats_.peak_allocations = stats_.allocations;
  stats_.peak_regions = stats_.regions;
  stats_.peak_high_water = 0;
  for (const auto& [address, a] : live_) stats_.peak_high_water = std::max(stats_.peak_high_water, a.size);
}

AllocatorSnapshot PassthroughAllocator::Snapshot() const {
  AllocatorSnapshot snapshot;
  snapshot.device = device_;
  snapshot.stats = Stats();
  std::lock_guard lock(mutex_);
  for (const auto& [address, a] : live_) {
    RegionView& region = snapshot.regions.emplace_back();
    region.address = address;
    region.size = region.max_size = a.size;
    region.chunks.push_back(ChunkView{address, a.size, a.requested, a.alloc_id, a.stream, a.tag, true});
  }
  return snapshot;
}

std::optional<OomReport> PassthroughAllocator::LastOom() const {
  std::lock_guard lock(mutex_);
  return last_oom_;
}

void PassthroughAllocator::CheckInvariants() const {
  std::lock_guard lock(mutex_);
  std::uint64_t size = 0, requested = 0, end = 0;
  for (const auto& [address, a] : live_) {
    if (address < end) throw InvariantViolation(fmt::format("device {}: allocations overlap at {:#x}", device_, address));
    end = address + a.size;
    size += a.size;
    requested += a.requested;
  }
  if (size != stats_.in_use || size != stats_.reserved || size != stats_.address_space ||
      requested != stats_.live_requested ||
      live_.size() != stats_.allocations || live_.size() != stats_.regions) {
    throw InvariantViolation(fmt::format("device {}: passthrough stats do not add up", device_));
  }
  if (stats_.reserved > limit_) {
    throw InvariantViolation(fmt::format("device {}: reserved above the limit", device_));
  }
}

void PassthroughAllocator::SetSink(traces::EventSink* sink) {
  std::lock_guard lock(mutex_);
  sink_ = sink;
  if (sink_ == nullptr) return;
  for (const auto& [address, allocation] : live_) {
    Emit(traces::EventType::kRegionReserve, address, allocation);
    Emit(traces::EventType::kAlloc, address, allocation);
  }
}

void PassthroughAllocator::Mark(std::string_view name) {
  std::lock_guard lock(mutex_);
  if (sink_ == nullptr) return;
  traces::Event event = MarkerEvent(device_, sink_->Intern(name));
  sink_->Record(event);
}

void PassthroughAllocator::Emit(traces::EventType type, std::uint64_t address,
                                const Allocation& allocation) {
  traces::Event event;
  event.type = type;
  event.device = device_;
  event.time_ns = MonotonicNs();
  event.address = address;
  event.thread = ThreadOrdinal();
  if (type == traces::EventType::kRegionReserve || type == traces::EventType::kRegionRelease) {
    event.size = allocation.size;
  } else {
    event.stream = allocation.stream;
    event.size = allocation.requested;
    event.rounded = allocation.size;
    event.region = address;
    event.alloc_id = allocation.alloc_id;
    event.tag = allocation.tag;
  }
  sink_->Record(event);
}

}  // namespace fragscope
