// The timeline model's second pass: over the stored events, in order, it evolves each device's
// state (regions, live chunks), decides what applies and what is skipped with a warning (flags in
// the records, so StateAt's replay needs no checks), and writes the series pyramid, the keyframes,
// the peaks, the markers and the warnings.
#include <algorithm>
#include <array>

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
  kWarnKinds,
};

struct WarnCount {
  std::uint64_t count = 0;
  std::uint64_t first_seq = 0;
  std::uint64_t first_address = 0;
};

struct DeviceBuild {
  PersistentMap live;
  RegionMap regions;
  std::uint64_t value[3] = {0, 0, 0};
  std::uint64_t min[3] = {0, 0, 0};
  std::uint64_t max[3] = {0, 0, 0};
  bool changed = false;
  bool had_regions = false;
  bool has_region_field = false;  // some alloc of this device names its region
  std::shared_ptr<const KeyState> last;
  std::array<WarnCount, kWarnKinds> warn;
};

constexpr std::uint64_t kMaxU64 = ~std::uint64_t{0};

bool ExpandableConf(const traces::TraceHeader& header) {
  return header.alloc_conf.find("expandable=on") != std::string::npos ||
         header.alloc_conf.find("expandable=true") != std::string::npos;
}

class Indexer {
 public:
  Indexer(ModelData& model, std::uint64_t budget) : m_(model), budget_(budget) {}
  void Run(const Progress& progress);

 private:
  void Count(DeviceBuild& b, Warn kind, std::uint64_t index, std::uint64_t address) {
    WarnCount& w = b.warn[kind];
    if (w.count++ == 0) {
      w.first_seq = m_.store.Seq(index);
      w.first_address = address;
    }
  }
  bool GrowsRegion(const DeviceBuild& b, std::uint64_t j, const Record& r) const;
  void Alloc(DeviceBuild& b, DeviceData& d, std::uint64_t j, Record& r);
  void Free(DeviceBuild& b, std::uint64_t j, Record& r);
  void Reserve(DeviceBuild& b, std::uint64_t j, Record& r);
  void Release(DeviceBuild& b, std::uint64_t j, Record& r);
  void StartBlock(std::uint16_t first_device);
  void EndBlock();
  void Keyframes(std::uint64_t after);
  void Finish();

  ModelData& m_;
  std::uint64_t budget_;
  std::uint64_t n_ = 0;
  std::vector<DeviceBuild> builds_;
  std::shared_ptr<const KeyState> empty_ = std::make_shared<KeyState>();
};

void Indexer::Alloc(DeviceBuild& b, DeviceData& d, std::uint64_t j, Record& r) {
  ++d.metrics.allocations;
  const std::uint64_t rounded = m_.store.EffectiveRounded(j);
  const std::uint64_t a = r.address;
  if (a + rounded < a) {
    Count(b, kAllocWraps, j, a);
    return;
  }
  const MapEntry* before = b.live.Floor(a);
  const MapEntry* after = b.live.Ceil(a);
  if ((before != nullptr && before->key + m_.store.EffectiveRounded(before->value) > a) ||
      (after != nullptr && after->key < a + rounded)) {
    Count(b, kAllocOverlap, j, a);
    return;
  }
  b.live.Insert(a, j);
  r.flags |= kApplied;
  b.changed = true;
  // In use cannot wrap (the live ranges do not overlap and none runs past 2^64), but requested
  // sizes are the evidence's word and may each be up to 4 EiB above their chunk.
  b.value[0] += rounded;
  b.value[2] = traces::AddOrThrow(b.value[2], r.size, "live requested bytes");
  if (b.had_regions) {
    auto it = b.regions.upper_bound(a);
    if (it == b.regions.begin() || std::prev(it)->first + std::prev(it)->second <= a) {
      Count(b, kOutside, j, a);
    }
  }
}

void Indexer::Free(DeviceBuild& b, std::uint64_t j, Record& r) {
  const MapEntry* chunk = b.live.Find(r.address);
  if (chunk == nullptr) {
    Count(b, kUnknownFree, j, r.address);
    return;
  }
  const std::uint64_t alloc = chunk->value;
  const std::uint64_t rounded = m_.store.EffectiveRounded(alloc);
  const std::uint64_t requested = m_.store.record(alloc).size;
  b.live.Erase(r.address);
  r.flags |= kApplied;
  b.changed = true;
  b.value[0] -= rounded;
  b.value[2] -= requested;
  if (rounded != m_.store.EffectiveRounded(j) || requested != r.size) {
    r.flags |= kOverride;
    m_.overrides.push_back({j, rounded, requested});
  }
}

// A reserve of a range that starts where a region ends: does it grow that region (expandable
// segments) or start a region of its own? The first later allocation overlapping it tells: it
// names the range's own address as its region, or the grown region's base. Without one (within
// kLookahead events), or in a trace whose allocations name no region, the configuration decides.
bool Indexer::GrowsRegion(const DeviceBuild& b, std::uint64_t j, const Record& r) const {
  constexpr std::uint64_t kLookahead = 1 << 16;
  if (b.has_region_field) {
    for (std::uint64_t k = j + 1; k < n_ && k <= j + kLookahead; ++k) {
      const Record& next = m_.store.record(k);
      if (next.device != r.device || static_cast<EventType>(next.type) != EventType::kAlloc) continue;
      // The allocation that overlaps the range first (it may start in the old free tail).
      if (next.address < r.address + r.size && next.address + m_.store.EffectiveRounded(k) > r.address) {
        const std::uint64_t region = m_.store.Region(k);
        return region != 0 && region != r.address;
      }
    }
    return false;
  }
  return ExpandableConf(m_.header);
}

void Indexer::Reserve(DeviceBuild& b, std::uint64_t j, Record& r) {
  if (r.size == 0 || r.address + r.size < r.address) {
    Count(b, kEmptyReserve, j, r.address);
    return;
  }
  if (RegionOverlaps(b.regions, r.address, r.size)) {
    Count(b, kReserveOverlap, j, r.address);
    return;
  }
  const bool merge = RegionEndingAt(b.regions, r.address) != b.regions.end() && GrowsRegion(b, j, r);
  ApplyReserve(b.regions, r.address, r.size, merge);
  r.flags |= kApplied | (merge ? kMerge : 0);
  b.changed = true;
  b.had_regions = true;
  b.value[1] += r.size;
}

void Indexer::Release(DeviceBuild& b, std::uint64_t j, Record& r) {
  const std::uint64_t size = r.address + r.size < r.address ? kMaxU64 - r.address : r.size;
  const MapEntry* chunk = b.live.Ceil(r.address);
  const MapEntry* before = b.live.Floor(r.address);
  if ((chunk != nullptr && chunk->key < r.address + size) ||
      (before != nullptr && before->key + m_.store.EffectiveRounded(before->value) > r.address)) {
    Count(b, kReleaseLive, j, r.address);
  }
  const std::uint64_t removed = ApplyRelease(b.regions, r.address, size);
  if (removed != r.size) Count(b, kReleaseUnreserved, j, r.address);
  if (removed == 0) return;
  r.flags |= kApplied;
  b.changed = true;
  b.value[1] -= removed;
  if (removed != r.size) {
    r.flags |= kOverride;
    m_.overrides.push_back({j, removed, 0});
  }
}

// At the start of a 64-event block, each device's min and max start from its value before the
// block, unless the block's first event is its own (then that value is not one of the block's).
void Indexer::StartBlock(std::uint16_t first_device) {
  for (std::size_t i = 0; i < builds_.size(); ++i) {
    DeviceBuild& b = builds_[i];
    for (int s = 0; s < 3; ++s) {
      if (i == first_device) {
        b.min[s] = kMaxU64;
        b.max[s] = 0;
      } else {
        b.min[s] = b.max[s] = b.value[s];
      }
    }
  }
}

void Indexer::EndBlock() {
  for (std::size_t i = 0; i < builds_.size(); ++i) {
    const DeviceBuild& b = builds_[i];
    L1Block block;
    for (int s = 0; s < 3; ++s) {
      block.end[s] = b.value[s];
      block.min[s] = b.min[s];
      block.max[s] = b.max[s];
    }
    m_.device_data[i].l1.push_back(block);
  }
}

void Indexer::Keyframes(std::uint64_t after) {
  const double allowance = static_cast<double>(budget_) * static_cast<double>(after + 1) /
                           static_cast<double>(n_);
  for (std::size_t i = 0; i < builds_.size(); ++i) {
    DeviceBuild& b = builds_[i];
    DeviceData& d = m_.device_data[i];
    if (b.changed) {
      const std::uint64_t cost = sizeof(KeyState) + 32 + b.live.leaf_count() * 16 +
                                 b.live.fresh_bytes() + b.regions.size() * 16;
      if (static_cast<double>(m_.keyframe_bytes + cost) <= allowance) {
        auto state = std::make_shared<KeyState>();
        state->regions.assign(b.regions.begin(), b.regions.end());
        state->chunks = b.live.Freeze();
        b.last = std::move(state);
        b.changed = false;
        m_.keyframe_bytes += cost;
        ++m_.keyframe_count;
      }
    }
    // An unchanged device (or one over budget) gets an entry sharing its latest state only when
    // that state is exact here, so that StateAt never scans more than K events from it.
    if (!b.changed) {
      d.keyframes.push_back({after, b.last ? b.last : empty_});
      m_.keyframe_bytes += sizeof(Keyframe);
    }
  }
}

void Indexer::Run(const Progress& progress) {
  EventStore& store = m_.store;
  n_ = store.size();
  const auto& ids = store.device_ids();
  builds_.resize(ids.size());
  m_.device_data.resize(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    m_.device_data[i].id = ids[i];
    m_.device_data[i].index = static_cast<std::uint16_t>(i);
    m_.device_data[i].metrics.device = ids[i];
  }
  for (std::uint64_t j = 0; j < n_; ++j) {
    const Record& r = store.record(j);
    if (static_cast<EventType>(r.type) == EventType::kAlloc && store.Region(j) != 0) {
      builds_[r.device].has_region_field = true;
    }
  }

  const std::uint64_t k = std::max<std::uint32_t>(1, m_.keyframe_interval);
  constexpr std::uint64_t kBlock = std::uint64_t{1} << kL1Shift;
  for (std::uint64_t j = 0; j < n_; ++j) {
    Record& r = store.record(j);
    if ((j & (kBlock - 1)) == 0) StartBlock(r.device);
    DeviceBuild& b = builds_[r.device];
    DeviceData& d = m_.device_data[r.device];
    switch (static_cast<EventType>(r.type)) {
      case EventType::kAlloc: Alloc(b, d, j, r); break;
      case EventType::kFree: Free(b, j, r); break;
      case EventType::kRegionReserve: Reserve(b, j, r); break;
      case EventType::kRegionRelease: Release(b, j, r); break;
      case EventType::kOom:
        d.oom_events.push_back(j);
        ++d.metrics.ooms;
        break;
      case EventType::kMarker: m_.markers.push_back({j, d.id, m_.TagName(r.tag)}); break;
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
    if (((j + 1) & (kBlock - 1)) == 0 || j + 1 == n_) EndBlock();
    if ((j + 1) % k == 0) Keyframes(j);
    if (progress && ((j + 1) & ((std::uint64_t{1} << 20) - 1)) == 0) progress(j + 1, n_);
  }
  Finish();
  if (progress) progress(n_, n_);
}

void Indexer::Finish() {
  // The coarse level of the pyramid: 64 blocks of 64 events.
  constexpr std::uint64_t kRatio = std::uint64_t{1} << (kL2Shift - kL1Shift);
  for (DeviceData& d : m_.device_data) {
    const std::uint64_t full = d.l1.size() / kRatio;
    d.l2.resize(full);
    for (std::uint64_t c = 0; c < full; ++c) {
      L2Block& out = d.l2[c];
      for (int s = 0; s < 3; ++s) {
        out.min[s] = kMaxU64;
        out.max[s] = 0;
      }
      for (std::uint64_t i = c * kRatio; i < (c + 1) * kRatio; ++i) {
        for (int s = 0; s < 3; ++s) {
          out.min[s] = std::min(out.min[s], d.l1[i].min[s]);
          out.max[s] = std::max(out.max[s], d.l1[i].max[s]);
        }
      }
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
}

}  // namespace

void Index(ModelData& model, std::uint64_t keyframe_budget, const Progress& progress) {
  Indexer(model, keyframe_budget).Run(progress);
}

}  // namespace fragscope::analysis::timeline_detail
