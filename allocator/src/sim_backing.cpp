#include "sim_backing.hpp"

#include <algorithm>
#include <iterator>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include "fragscope/log.hpp"

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace detail {

// Insert and Erase change the intervals they touch in place: an end moves by assignment, a start
// by re-keying the node (extract, then insert at the same position). Mapping and unmapping a page
// run next to a mapped one, the paging slow path's usual calls, then allocate and free no tree node
// (erase plus emplace did: about 600 instructions a call, most of a sim Map or Unmap).
void IntervalSet::Insert(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end) return;
  total_ += end - begin;
  const auto next = intervals_.lower_bound(begin);
  // Merge with the interval that ends where this one begins, and the one that begins where it ends,
  // so that freed neighbours coalesce into one range that a larger request can use.
  const bool joins_next = next != intervals_.end() && next->first == end;
  if (next != intervals_.begin()) {
    if (const auto prev = std::prev(next); prev->second == begin) {
      if (joins_next) {
        prev->second = next->second;
        intervals_.erase(next);
      } else {
        prev->second = end;
      }
      return;
    }
  }
  if (joins_next) {
    Rekey(next, begin);
    return;
  }
  intervals_.emplace_hint(next, begin, end);
}

void IntervalSet::Erase(std::uint64_t begin, std::uint64_t end) {
  if (begin >= end) return;
  auto it = intervals_.upper_bound(begin);
  if (it == intervals_.begin()) return;
  --it;
  const std::uint64_t outer_begin = it->first;
  const std::uint64_t outer_end = it->second;
  if (outer_end < end) return;  // not contained: the precondition is the caller's to check
  total_ -= end - begin;
  if (outer_begin < begin) {
    it->second = begin;  // the front stays
    if (end < outer_end) intervals_.emplace_hint(std::next(it), end, outer_end);
  } else if (end < outer_end) {
    Rekey(it, end);  // only the back stays
  } else {
    intervals_.erase(it);
  }
}

// Moves interval `it`'s start to `begin`, which must keep it between its neighbours.
void IntervalSet::Rekey(std::map<std::uint64_t, std::uint64_t>::iterator it, std::uint64_t begin) {
  const auto position = std::next(it);
  auto node = intervals_.extract(it);
  node.key() = begin;
  intervals_.insert(position, std::move(node));
}

bool IntervalSet::Intersects(std::uint64_t begin, std::uint64_t end) const {
  if (begin >= end) return false;
  // Only the last interval that starts before `end` can reach past `begin`: the ones before it end
  // before it starts.
  auto it = intervals_.lower_bound(end);
  if (it == intervals_.begin()) return false;
  --it;
  return it->second > begin;
}

bool IntervalSet::Contains(std::uint64_t begin, std::uint64_t end) const {
  if (begin >= end) return true;
  auto it = intervals_.upper_bound(begin);
  if (it == intervals_.begin()) return false;
  --it;
  return it->second >= end;
}

std::optional<std::uint64_t> IntervalSet::FirstFit(std::uint64_t bytes,
                                                   std::uint64_t alignment) const {
  for (const auto& [begin, end] : intervals_) {
    const std::uint64_t start = RoundUp(begin, alignment);
    if (start < end && end - start >= bytes) return start;
  }
  return std::nullopt;
}

}  // namespace detail

namespace {

constexpr std::uint64_t kDefaultSimCapacity = 80 * GiB;
constexpr std::uint64_t kMinAddressSpace = 64ULL << 40;  // 64 TiB
constexpr std::uint64_t kMaxAddressSpace = 1ULL << 62;

// Room for the regions plus expandable ranges: each range reserves address space for up to its
// maximum size without counting against capacity, and several allocators (virtual devices) may each
// hold one, so the space is a generous multiple of the capacity.
std::uint64_t AddressSpaceFor(std::uint64_t capacity) {
  if (capacity >= kMaxAddressSpace / 4) return kMaxAddressSpace;
  return std::max(kMinAddressSpace, detail::RoundUp(capacity * 4, SimBacking::kMapGranularity));
}

std::uint64_t Addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

SimBacking::SimBacking(const AllocConf& conf) {
  const std::uint64_t capacity = conf.capacity.value_or(kDefaultSimCapacity);
  if (capacity == 0) throw ConfigError("capacity", "capacity must be more than 0 bytes");
  if (conf.external_use >= capacity) {
    throw ConfigError("external_use",
                      fmt::format("external_use={} leaves nothing of the sim device's {} "
                                  "capacity; it must be less than capacity",
                                  FormatBytes(conf.external_use), FormatBytes(capacity)));
  }
  info_.kind = BackingKind::kSim;
  info_.device_name = "simulated device";
  info_.device_ordinal = 0;
  info_.capacity = capacity;
  info_.granularity = kRegionGranularity;
  info_.host_accessible = false;
  available_ = capacity - conf.external_use;
  address_space_ = AddressSpaceFor(capacity);
  free_.Insert(kBaseAddress, kBaseAddress + address_space_);
}

SimBacking::~SimBacking() {
  // Nothing to free: a leftover block only means an owner did not give it back.
  if (!live_.empty()) {
    fragscope::Log().debug("sim backing destroyed with {} blocks still held ({})", live_.size(),
                  FormatBytes(held_));
  }
}

std::uint64_t SimBacking::held() const {
  std::lock_guard lock(mu_);
  return held_;
}

std::uint64_t SimBacking::TakeAddressSpace(std::uint64_t footprint) {
  if (footprint == 0 || footprint > address_space_) return 0;
  // First fit from the lowest address: released ranges are reused before fresh space, as a driver
  // reuses its address space, and the map stays compact.
  const auto start = free_.FirstFit(footprint, kMapGranularity);
  if (!start) return 0;
  free_.Erase(*start, *start + footprint);
  return *start;
}

SimBacking::Block& SimBacking::FindBlock(const void* base, bool want_range, const char* what) {
  const std::uint64_t addr = Addr(base);
  if (addr % kMapGranularity != 0) {
    throw BackingError(fmt::format(
        "sim backing: {}({:#x}): misaligned address; every block this backing hands out starts "
        "on a 2 MiB boundary",
        what, addr));
  }
  auto it = live_.find(addr);
  if (it == live_.end()) {
    throw BackingError(fmt::format(
        "sim backing: {}({:#x}): not a block of this backing (never reserved, or already released)",
        what, addr));
  }
  if (it->second.is_range != want_range) {
    throw BackingError(fmt::format(
        "sim backing: {}({:#x}): the address is {}", what, addr,
        it->second.is_range ? "an expandable range (use ReleaseRange)"
                            : "a region, not an expandable range (use Release)"));
  }
  return it->second;
}

void* SimBacking::Reserve(std::uint64_t bytes, std::uint64_t /*stream*/) {
  if (bytes == 0 || bytes % kRegionGranularity != 0) {
    throw BackingError(fmt::format(
        "sim backing: Reserve({} bytes): the size must be a non-zero multiple of {} bytes", bytes,
        kRegionGranularity));
  }
  std::lock_guard lock(mu_);
  if (bytes > available_ - held_ || bytes > address_space_) return nullptr;
  // Regions start on 2 MiB boundaries like large cudaMalloc allocations; the tail of the last 2 MiB
  // is address space only and is not counted as held.
  const std::uint64_t footprint = detail::RoundUp(bytes, kMapGranularity);
  const std::uint64_t base = TakeAddressSpace(footprint);
  if (base == 0) return nullptr;
  live_.emplace(base, Block{bytes, footprint, false, {}});
  held_ += bytes;
  return reinterpret_cast<void*>(base);
}

void SimBacking::Release(void* base, std::uint64_t bytes, std::uint64_t /*stream*/) {
  std::lock_guard lock(mu_);
  Block& block = FindBlock(base, /*want_range=*/false, "Release");
  if (block.bytes != bytes) {
    throw BackingError(fmt::format(
        "sim backing: Release({:#x}, {} bytes): the region was reserved with {} bytes", Addr(base),
        bytes, block.bytes));
  }
  const std::uint64_t addr = Addr(base);
  free_.Insert(addr, addr + block.footprint);
  held_ -= block.bytes;
  live_.erase(addr);
}

void* SimBacking::ReserveRange(std::uint64_t max_bytes) {
  if (max_bytes == 0 || max_bytes % kMapGranularity != 0) {
    throw BackingError(fmt::format(
        "sim backing: ReserveRange({} bytes): the size must be a non-zero multiple of {}",
        max_bytes, FormatBytes(kMapGranularity)));
  }
  std::lock_guard lock(mu_);
  // Address space only: nothing counts against capacity until pages are mapped.
  const std::uint64_t base = TakeAddressSpace(max_bytes);
  if (base == 0) return nullptr;
  live_.emplace(base, Block{max_bytes, max_bytes, true, {}});
  return reinterpret_cast<void*>(base);
}

SimBacking::Block& SimBacking::CheckPages(const void* base, std::uint64_t offset,
                                          std::uint64_t bytes, const char* what) {
  Block& block = FindBlock(base, /*want_range=*/true, what);
  if (bytes == 0 || offset % kMapGranularity != 0 || bytes % kMapGranularity != 0) {
    throw BackingError(fmt::format(
        "sim backing: {}({:#x}, offset {}, {} bytes): offset and size must be multiples of {} and "
        "the size non-zero",
        what, Addr(base), offset, bytes, FormatBytes(kMapGranularity)));
  }
  if (offset > block.bytes || bytes > block.bytes - offset) {
    throw BackingError(fmt::format(
        "sim backing: {}({:#x}, offset {}, {} bytes): past the end of the {} range", what,
        Addr(base), offset, bytes, FormatBytes(block.bytes)));
  }
  return block;
}

bool SimBacking::Map(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Block& block = CheckPages(base, offset, bytes, "Map");
  if (block.mapped.Intersects(offset, offset + bytes)) {
    throw BackingError(fmt::format(
        "sim backing: Map({:#x}, offset {}, {} bytes): part of the range is already mapped",
        Addr(base), offset, bytes));
  }
  if (bytes > available_ - held_) return false;
  block.mapped.Insert(offset, offset + bytes);
  held_ += bytes;
  return true;
}

void SimBacking::Unmap(void* base, std::uint64_t offset, std::uint64_t bytes) {
  std::lock_guard lock(mu_);
  Block& block = CheckPages(base, offset, bytes, "Unmap");
  if (!block.mapped.Contains(offset, offset + bytes)) {
    throw BackingError(fmt::format(
        "sim backing: Unmap({:#x}, offset {}, {} bytes): part of the range is not mapped",
        Addr(base), offset, bytes));
  }
  block.mapped.Erase(offset, offset + bytes);
  held_ -= bytes;
}

void SimBacking::ReleaseRange(void* base, std::uint64_t max_bytes) {
  std::lock_guard lock(mu_);
  Block& block = FindBlock(base, /*want_range=*/true, "ReleaseRange");
  if (block.bytes != max_bytes) {
    throw BackingError(fmt::format(
        "sim backing: ReleaseRange({:#x}, {} bytes): the range was reserved with {} bytes",
        Addr(base), max_bytes, block.bytes));
  }
  if (!block.mapped.empty()) {
    throw BackingError(fmt::format(
        "sim backing: ReleaseRange({:#x}): {} are still mapped; unmap every page first",
        Addr(base), FormatBytes(block.mapped.total())));
  }
  const std::uint64_t addr = Addr(base);
  free_.Insert(addr, addr + block.footprint);
  live_.erase(addr);
}

}  // namespace fragscope
