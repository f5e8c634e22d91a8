// The timeline model's index: over the stored events, in order (block by block behind the store while the source reads), it evolves each device's
// state (regions, address ranges, mapped pages, live chunks), decides what applies and what is skipped with a warning (flags in
// the records, so StateAt's replay needs no checks), and writes the series pyramid, the keyframes,
// the peaks, the markers and the warnings.
#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"
#include "timeline_impl.hpp"

namespace fragscope::analysis::timeline_detail {
namespace {

using traces::EventType;

enum Warn : std::size_t {
  kUnknownFree,
  kAllocOverlap,
  kReleaseLive,
  kReserveOverlap,
  kReleaseUnreserved,
  kOutside,
  kEmptyReserve,
  kUnknownType,
  kAllocWraps,
  kEmptyRange,
  kSpaceOverlap,
  kSpaceRelease,
  kMapOverlap,
  kMapOutside,
  kUnmapLive,
  kUnmapUnmapped,
  kWarnKinds,
};

struct WarnCount {
  std::uint64_t count = 0;
  std::uint64_t first_seq = 0;
  std::uint64_t first_address = 0;
};

struct DeviceBuild {
  PersistentMap live;
  RegionMap regions;   // memory: regions and the mapped pieces of address ranges
  RegionMap spaces;    // address ranges reserved with address_reserve (no memory by themselves)
  std::uint64_t value[3] = {0, 0, 0};
  std::uint64_t min[3] = {0, 0, 0};
  std::uint64_t max[3] = {0, 0, 0};
  bool changed = false;
  bool dirty = false;                    // in Indexer::dirty_ (changed since its last keyframe)
  std::uint64_t block = ~std::uint64_t{0};  // the 64-event block that min and max belong to
  bool had_regions = false;
  // Reserved memory the evidence gives as a total only (SourceFacts::reserved_without_layout): its
  // regions are invented, so no allocation is ever in one, and that is no finding.
  bool layout_unknown = false;
  std::shared_ptr<const KeyState> last;
  std::array<WarnCount, kWarnKinds> warn;
};

constexpr std::uint64_t kMaxU64 = ~std::uint64_t{0};

// The address range holding all of [address, address + size), or spaces.end().
RegionMap::const_iterator SpaceHolding(const RegionMap& spaces, std::uint64_t address, std::uint64_t size) {
  auto it = spaces.upper_bound(address);
  if (it == spaces.begin()) return spaces.end();
  --it;
  return address - it->first <= it->second && size <= it->second - (address - it->first) ? it : spaces.end();
}

// Incremental: Advance indexes the records stored so far while the read goes on (the records of
// a block are final once the store has flushed it), Finish after the last.
class Indexer {
 public:
  Indexer(ModelData& model, std::uint64_t budget, Progress progress)
      : m_(model), budget_(budget), progress_(std::move(progress)) {}
  // Indexes records [done, upto). `expected`: the best guess of the trace's final event count,
  // over which the keyframe budget is spent pro rata (the exact count once the read has ended).
  void Advance(std::uint64_t upto, std::uint64_t expected);
  // After Advance(store.size(), store.size()): closes the last block, the coarse pyramid, the
  // marker names (the tag list is complete only now) and the warnings.
  void Finish();

 private:
  void Count(DeviceBuild& b, Warn kind, std::uint64_t index, std::uint64_t address) {
    WarnCount& w = b.warn[kind];
    if (w.count++ == 0) {
      w.first_seq = m_.store.Seq(index);
      w.first_address = address;
    }
  }
  void Alloc(DeviceBuild& b, DeviceData& d, std::uint64_t j, Record& r);
  void Free(DeviceBuild& b, std::uint64_t j, Record& r);
  bool Admit(DeviceBuild& b, std::uint64_t j, const Record& r, const RegionMap& into, Warn empty, Warn overlap);
  void Reserve(DeviceBuild& b, std::uint64_t j, Record& r);
  void Release(DeviceBuild& b, std::uint64_t j, Record& r, Warn live, Warn unreserved);
  void AddressReserve(DeviceBuild& b, std::uint64_t j, Record& r);
  static void NotePage(const DeviceBuild& b, DeviceData& d, const Record& r);
  void AddressRelease(DeviceBuild& b, std::uint64_t j, Record& r);
  void Map(DeviceBuild& b, std::uint64_t j, Record& r);
  void EnterBlock(DeviceBuild& b, std::uint16_t device, std::uint64_t j);
  void EndBlock(std::uint64_t block);
  void Keyframes(std::uint64_t after);
  void AddDevices();

  ModelData& m_;
  std::uint64_t budget_;
  Progress progress_;
  std::uint64_t done_ = 0;  // records indexed
  std::uint64_t n_ = 0;     // the trace's expected event count (at least done_)
  std::vector<DeviceBuild> builds_;
  std::vector<std::uint16_t> touched_;  // devices with events in the current 64-event block
  std::vector<std::uint16_t> dirty_;    // devices changed since their last keyframe
  std::shared_ptr<const KeyState> empty_ = std::make_shared<KeyState>();
  std::vector<traces::TagId> marker_tags_;  // by markers index, named in Finish
};

void Indexer::Alloc(DeviceBuild& b, DeviceData& d, std::uint64_t j, Record& r) {
  ++d.metrics.allocations;
  const std::uint64_t rounded = m_.store.EffectiveRounded(j);
  const std::uint64_t a = r.address;
  if (a + rounded < a) {
    Count(b, kAllocWraps, j, a);
    return;
  }
  const PersistentMap::Position at = b.live.Locate(a);
  if ((at.floor != nullptr && at.floor->key + m_.store.EffectiveRounded(at.floor->value) > a) ||
      (at.ceil != nullptr && at.ceil->key < a + rounded)) {
    Count(b, kAllocOverlap, j, a);
    return;
  }
  b.live.InsertAt(at, a, j);
  r.flags |= kApplied;
  b.changed = true;
  // In use cannot wrap (the live ranges do not overlap and none runs past 2^64), but requested
  // sizes are the evidence's word and may each be up to 4 EiB above their chunk.
  b.value[0] += rounded;
  b.value[2] = traces::AddOrThrow(b.value[2], r.size, "live requested bytes");
  if (b.had_regions && !b.layout_unknown) {
    auto it = b.regions.upper_bound(a);
    if (it == b.regions.begin() || std::prev(it)->first + std::prev(it)->second <= a) {
      Count(b, kOutside, j, a);
    }
  }
}

void Indexer::Free(DeviceBuild& b, std::uint64_t j, Record& r) {
  std::uint64_t alloc = 0;
  if (!b.live.Take(r.address, &alloc)) {
    Count(b, kUnknownFree, j, r.address);
    return;
  }
  const std::uint64_t rounded = m_.store.EffectiveRounded(alloc);
  const std::uint64_t requested = m_.store.record(alloc).size;
  r.flags |= kApplied;
  b.changed = true;
  b.value[0] -= rounded;
  b.value[2] -= requested;
  if (rounded != m_.store.EffectiveRounded(j) || requested != r.size) {
    r.flags |= kOverride;
    m_.overrides.push_back({j, rounded, requested});
  }
}

// A range the evidence adds (a region, an address range, mapped pages) is taken only when it is a
// range at all (not empty, not past 2^64) and overlaps nothing already in `into`; else the warning
// of its kind is counted and the event is left out.
bool Indexer::Admit(DeviceBuild& b, std::uint64_t j, const Record& r, const RegionMap& into, Warn empty,
                    Warn overlap) {
  if (r.size == 0 || r.address + r.size < r.address) {
    Count(b, empty, j, r.address);
    return false;
  }
  if (RegionOverlaps(into, r.address, r.size)) {
    Count(b, overlap, j, r.address);
    return false;
  }
  return true;
}

void Indexer::Reserve(DeviceBuild& b, std::uint64_t j, Record& r) {
  if (!Admit(b, j, r, b.regions, kEmptyReserve, kReserveOverlap)) return;
  // A region of its own, even right after another: memory that grows in place is `map` (1.1).
  ApplyReserve(b.regions, r.address, r.size, false, false);
  r.flags |= kApplied;
  b.changed = true;
  b.had_regions = true;
  b.value[1] += r.size;
}

// Address space only: no memory, no series. It tells which mapped pieces belong together.
void Indexer::AddressReserve(DeviceBuild& b, std::uint64_t j, Record& r) {
  if (!Admit(b, j, r, b.spaces, kEmptyRange, kSpaceOverlap)) return;
  b.spaces.emplace(r.address, r.size);
  r.flags |= kApplied;
}

void Indexer::AddressRelease(DeviceBuild& b, std::uint64_t j, Record& r) {
  const std::uint64_t size = r.address + r.size < r.address ? kMaxU64 - r.address : r.size;
  // Pages still mapped in the range stay counted (the trace says nothing of them going).
  const bool mapped = RegionOverlaps(b.regions, r.address, size);
  const std::uint64_t removed = ApplyRelease(b.spaces, r.address, size);
  if (removed != r.size || mapped) Count(b, kSpaceRelease, j, r.address);
  if (removed != 0) r.flags |= kApplied;
}

// Pages mapped into an address range: reserved grows, and the mapped piece joins the pieces of the
// same range it touches, so a region that grows in place is one region.
void Indexer::Map(DeviceBuild& b, std::uint64_t j, Record& r) {
  if (!Admit(b, j, r, b.regions, kEmptyRange, kMapOverlap)) return;
  const auto space = SpaceHolding(b.spaces, r.address, r.size);
  bool merge_prev = false, merge_next = false;
  if (space == b.spaces.end()) {
    Count(b, kMapOutside, j, r.address);  // counted as memory all the same: a region of its own
  } else {
    const auto prev = RegionEndingAt(b.regions, r.address);
    merge_prev = prev != b.regions.end() && prev->first >= space->first;
    const auto next = b.regions.find(r.address + r.size);
    merge_next = next != b.regions.end() && next->first + next->second <= space->first + space->second;
  }
  ApplyReserve(b.regions, r.address, r.size, merge_prev, merge_next);
  r.flags |= kApplied | (merge_prev ? kMerge : 0) | (merge_next ? kMergeNext : 0);
  b.changed = true;
  b.had_regions = true;
  b.value[1] += r.size;
}

// A map or unmap inside an address range: its offset and size are multiples of the page.
void Indexer::NotePage(const DeviceBuild& b, DeviceData& d, const Record& r) {
  if (!(r.flags & kApplied) || r.size == 0) return;
  const auto space = SpaceHolding(b.spaces, r.address, r.size);
  if (space == b.spaces.end()) return;
  d.map_gcd = std::gcd(std::gcd(d.map_gcd, r.address - space->first), r.size);
}

// region_release and unmap: the memory of [address, address + size) goes back to the device.
void Indexer::Release(DeviceBuild& b, std::uint64_t j, Record& r, Warn live, Warn unreserved) {
  const std::uint64_t size = r.address + r.size < r.address ? kMaxU64 - r.address : r.size;
  const MapEntry* chunk = b.live.Ceil(r.address);
  const MapEntry* before = b.live.Floor(r.address);
  if ((chunk != nullptr && chunk->key < r.address + size) ||
      (before != nullptr && before->key + m_.store.EffectiveRounded(before->value) > r.address)) {
    Count(b, live, j, r.address);
  }
  const std::uint64_t removed = ApplyRelease(b.regions, r.address, size);
  if (removed != r.size) Count(b, unreserved, j, r.address);
  if (removed == 0) return;
  r.flags |= kApplied;
  b.changed = true;
  b.value[1] -= removed;
  if (removed != r.size) {
    r.flags |= kOverride;
    m_.overrides.push_back({j, removed, 0});
  }
}

// At a device's first event in a 64-event block, its min and max start from its value before the
// block, unless that event is the block's first (then that value is not one of the block's).
// Devices without events in a block store nothing for it.
void Indexer::EnterBlock(DeviceBuild& b, std::uint16_t device, std::uint64_t j) {
  const std::uint64_t block = j >> kL1Shift;
  if (b.block == block) return;
  b.block = block;
  touched_.push_back(device);
  for (int s = 0; s < 3; ++s) {
    if ((j & ((std::uint64_t{1} << kL1Shift) - 1)) == 0) {
      b.min[s] = kMaxU64;
      b.max[s] = 0;
    } else {
      b.min[s] = b.max[s] = b.value[s];
    }
  }
}

void Indexer::EndBlock(std::uint64_t block) {
  for (std::uint16_t i : touched_) {
    const DeviceBuild& b = builds_[i];
    L1Block l1;
    for (int s = 0; s < 3; ++s) {
      l1.end[s] = b.value[s];
      l1.min[s] = b.min[s];
      l1.max[s] = b.max[s];
    }
    m_.device_data[i].l1.push_back(l1);
    m_.device_data[i].l1_at.push_back(block);
  }
  touched_.clear();
}

// Devices changed since their last keyframe get a new one while the budget allows; a device that
// did not change keeps its last entry, which stays exact until its next change (Keyframe::until).
void Indexer::Keyframes(std::uint64_t after) {
  const double allowance = static_cast<double>(budget_) * static_cast<double>(after + 1) /
                           static_cast<double>(n_);
  std::size_t kept = 0;
  for (std::uint16_t i : dirty_) {
    DeviceBuild& b = builds_[i];
    DeviceData& d = m_.device_data[i];
    const std::uint64_t cost = sizeof(KeyState) + 32 + b.live.leaf_count() * 16 + b.live.fresh_bytes() +
                               b.regions.size() * 16 + sizeof(Keyframe);
    if (static_cast<double>(m_.keyframe_bytes + cost) <= allowance) {
      auto state = std::make_shared<KeyState>();
      state->regions.assign(b.regions.begin(), b.regions.end());
      state->chunks = b.live.Freeze();
      d.keyframes.push_back({after, kNone, std::move(state)});
      b.changed = false;
      b.dirty = false;
      m_.keyframe_bytes += cost;
      ++m_.keyframe_count;
    } else {
      dirty_[kept++] = i;  // over budget: StateAt replays from its last keyframe
    }
  }
  dirty_.resize(kept);
}

// Devices get their build state when their first event is indexed (the store numbers them in
// order of first appearance).
void Indexer::AddDevices() {
  const auto& ids = m_.store.device_ids();
  for (std::size_t i = builds_.size(); i < ids.size(); ++i) {
    builds_.emplace_back().layout_unknown = m_.header.source.ReservedWithoutLayout(ids[i]);
    DeviceData& d = m_.device_data.emplace_back();
    d.id = ids[i];
    d.index = static_cast<std::uint16_t>(i);
    d.metrics.device = ids[i];
    m_.device_slot.emplace(ids[i], i);
  }
}

void Indexer::Advance(std::uint64_t upto, std::uint64_t expected) {
  EventStore& store = m_.store;
  n_ = std::max(expected, upto);
  AddDevices();
  const std::uint64_t k = std::max<std::uint32_t>(1, m_.keyframe_interval);
  constexpr std::uint64_t kBlock = std::uint64_t{1} << kL1Shift;
  for (std::uint64_t j = done_; j < upto; ++j) {
    Record& r = store.record(j);
    DeviceBuild& b = builds_[r.device];
    DeviceData& d = m_.device_data[r.device];
    EnterBlock(b, r.device, j);
    switch (static_cast<EventType>(r.type)) {
      case EventType::kAlloc: Alloc(b, d, j, r); break;
      case EventType::kFree: Free(b, j, r); break;
      case EventType::kRegionReserve: Reserve(b, j, r); break;
      case EventType::kRegionRelease: Release(b, j, r, kReleaseLive, kReleaseUnreserved); break;
      case EventType::kAddressReserve: AddressReserve(b, j, r); break;
      case EventType::kAddressRelease: AddressRelease(b, j, r); break;
      case EventType::kMap:
        Map(b, j, r);
        NotePage(b, d, r);
        break;
      case EventType::kUnmap:
        Release(b, j, r, kUnmapLive, kUnmapUnmapped);
        NotePage(b, d, r);
        break;
      case EventType::kOom:
        d.oom_events.push_back(j);
        d.oom_spaces.emplace_back(b.spaces.begin(), b.spaces.end());
        ++d.metrics.ooms;
        break;
      case EventType::kMarker:
        m_.markers.push_back({j, d.id, {}});
        marker_tags_.push_back(r.tag);
        break;
      default: Count(b, kUnknownType, j, r.address); break;
    }
    DeviceMetrics& mt = d.metrics;
    const std::uint64_t* v = b.value;
    for (int s = 0; s < 3; ++s) {
      b.min[s] = std::min(b.min[s], v[s]);
      b.max[s] = std::max(b.max[s], v[s]);
    }
    mt.peak_in_use = std::max(mt.peak_in_use, v[0]);
    mt.peak_load = std::max(mt.peak_load, v[2]);
    // The moment of peak reserved: of all events at peak reserved, the one with the most in use
    // (metrics.hpp), the same rule replay uses.
    if (v[1] > mt.peak_reserved || (v[1] == mt.peak_reserved && v[0] > d.in_use_at_peak_reserved)) {
      mt.peak_reserved = v[1];
      d.peak_reserved_event = j;
      d.in_use_at_peak_reserved = v[0];
    }
    mt.peak_internal_waste = std::max(mt.peak_internal_waste, v[0] > v[2] ? v[0] - v[2] : 0);
    if (d.first_event == kNone) {
      // Before its first event a device holds nothing: a keyframe of the empty state, exact until
      // its first change (none needed when that is event 0).
      d.first_event = j;
      if (j > 0 || !b.changed) {
        d.keyframes.push_back({j > 0 && b.changed ? j - 1 : j, kNone, empty_});
        m_.keyframe_bytes += sizeof(Keyframe);
      }
    }
    if (b.changed && !b.dirty) {
      // Its last keyframe held until the event before this one.
      b.dirty = true;
      dirty_.push_back(r.device);
      if (!d.keyframes.empty()) d.keyframes.back().until = j - 1;
    }
    if (((j + 1) & (kBlock - 1)) == 0) EndBlock(j >> kL1Shift);
    if ((j + 1) % k == 0) Keyframes(j);
    if (progress_ && ((j + 1) & ((std::uint64_t{1} << 20) - 1)) == 0) progress_(j + 1, n_);
  }
  done_ = upto;
}


void Indexer::Finish() {
  n_ = done_;
  if ((n_ & ((std::uint64_t{1} << kL1Shift) - 1)) != 0) EndBlock((n_ - 1) >> kL1Shift);  // the last, partial block
  for (std::size_t i = 0; i < m_.markers.size(); ++i) m_.markers[i].name = m_.TagName(marker_tags_[i]);
  // The coarse level of the pyramid: 64 blocks of 64 events, for the whole 4096-event blocks
  // where the device has events. Its blocks without events are flat at the value before them.
  constexpr unsigned kRatioShift = kL2Shift - kL1Shift;
  const std::uint64_t full = n_ >> kL2Shift;
  for (DeviceData& d : m_.device_data) {
    std::size_t i = 0;
    while (i < d.l1_at.size()) {
      const std::uint64_t chunk = d.l1_at[i] >> kRatioShift;
      if (chunk >= full) break;
      L2Block out;
      for (int s = 0; s < 3; ++s) {
        out.min[s] = kMaxU64;
        out.max[s] = 0;
      }
      if (d.l1_at[i] != chunk << kRatioShift) {
        for (int s = 0; s < 3; ++s) {  // flat from the chunk's start to its first stored block
          const std::uint64_t before = i == 0 ? 0 : d.l1[i - 1].end[s];
          out.min[s] = std::min(out.min[s], before);
          out.max[s] = std::max(out.max[s], before);
        }
      }
      for (; i < d.l1_at.size() && (d.l1_at[i] >> kRatioShift) == chunk; ++i) {
        for (int s = 0; s < 3; ++s) {
          out.min[s] = std::min(out.min[s], d.l1[i].min[s]);
          out.max[s] = std::max(out.max[s], d.l1[i].max[s]);
        }
      }
      d.l2.push_back(out);
      d.l2_at.push_back(chunk);
    }
  }

  static constexpr const char* kText[kWarnKinds] = {
      "free(s) of addresses that are not live allocations ignored",
      "allocation(s) overlapping a live allocation ignored",
      "region release(s) with live allocations inside (they stay live, outside any region)",
      "region reserve(s) overlapping a reserved region ignored",
      "region release(s) of ranges (partly) not reserved",
      "allocation(s) outside any recorded region",
      "empty or wrapping region reserve(s) ignored",
      "event(s) of unknown type ignored",
      "allocation(s) past the end of the address space ignored",
      "empty or wrapping address reserve(s) or map(s) ignored",
      "address reserve(s) overlapping reserved address space ignored",
      "address release(s) of ranges (partly) not reserved or with pages still mapped",
      "map(s) overlapping mapped memory or a region ignored",
      "map(s) outside any reserved address range (each counted as a region of its own)",
      "unmap(s) with live allocations inside (they stay live, outside any mapped memory)",
      "unmap(s) of ranges (partly) not mapped",
  };
  for (std::size_t i = 0; i < builds_.size(); ++i) {
    for (std::size_t w = 0; w < kWarnKinds; ++w) {
      const WarnCount& c = builds_[i].warn[w];
      if (c.count == 0) continue;
      m_.warnings.push_back(fmt::format("device {}: {} {} (first: seq {}, address {:#x})",
                                        m_.device_data[i].id, c.count, kText[w], c.first_seq,
                                        c.first_address));
    }
  }
  if (progress_) progress_(n_, n_);
}

}  // namespace

struct StreamingIndex::Impl {
  Indexer indexer;
};

StreamingIndex::StreamingIndex(ModelData& model, std::uint64_t keyframe_budget, Progress progress)
    : impl_(new Impl{Indexer(model, keyframe_budget, std::move(progress))}) {}
StreamingIndex::~StreamingIndex() = default;
void StreamingIndex::Advance(std::uint64_t upto, std::uint64_t expected) { impl_->indexer.Advance(upto, expected); }
void StreamingIndex::Finish() { impl_->indexer.Finish(); }

}  // namespace fragscope::analysis::timeline_detail
