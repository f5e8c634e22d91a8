// The timeline model's state at any event: region bookkeeping, the nearest keyframe plus a replay of
// at most K events (of one device) into a small overlay, merged with the keyframe's chunks.
#include <algorithm>
#include <unordered_map>

#include "timeline_impl.hpp"

namespace fragscope::analysis::timeline_detail {

using traces::EventType;

const DeviceData* ModelData::Find(std::uint32_t device) const {
  const auto it = device_slot.find(device);
  return it == device_slot.end() ? nullptr : &device_data[it->second];
}

std::string ModelData::TagName(traces::TagId id) const {
  if (id == traces::kNoTag) return {};
  if (id <= tags.size()) return tags[id - 1];
  return "tag " + std::to_string(id);
}

const Override* ModelData::FindOverride(std::uint64_t index) const {
  auto it = std::lower_bound(overrides.begin(), overrides.end(), index,
                             [](const Override& o, std::uint64_t i) { return o.event < i; });
  return it != overrides.end() && it->event == index ? &*it : nullptr;
}

std::uint64_t ModelData::DeltaSlow(std::uint64_t index, Series series) const {
  const Record& r = store.record(index);
  const Override* o = FindOverride(index);
  switch (static_cast<EventType>(r.type)) {
    case EventType::kFree:
      return series == Series::kInUse ? 0 - o->rounded : series == Series::kLoad ? 0 - o->requested : 0;
    case EventType::kRegionRelease:
    case EventType::kUnmap: return series == Series::kReserved ? 0 - o->rounded : 0;
    default: return 0;
  }
}

bool RegionOverlaps(const RegionMap& regions, std::uint64_t address, std::uint64_t size) {
  auto it = regions.lower_bound(address);
  if (it != regions.end() && it->first < address + size) return true;
  if (it != regions.begin()) {
    --it;
    if (it->first + it->second > address) return true;
  }
  return false;
}

RegionMap::iterator RegionEndingAt(RegionMap& regions, std::uint64_t address) {
  auto it = regions.lower_bound(address);
  if (it == regions.begin()) return regions.end();
  --it;
  return it->first + it->second == address ? it : regions.end();
}

void ApplyReserve(RegionMap& regions, std::uint64_t address, std::uint64_t size, bool merge_prev,
                  bool merge_next) {
  std::uint64_t base = address, bytes = size;
  if (merge_next) {
    if (auto next = regions.find(address + size); next != regions.end()) {
      bytes += next->second;
      regions.erase(next);
    }
  }
  if (merge_prev) {
    if (auto prev = RegionEndingAt(regions, address); prev != regions.end()) {
      prev->second += bytes;
      return;
    }
  }
  regions.emplace(base, bytes);
}

std::uint64_t ApplyRelease(RegionMap& regions, std::uint64_t address, std::uint64_t size) {
  const std::uint64_t end = address + size;
  auto it = regions.upper_bound(address);
  if (it != regions.begin()) --it;
  std::uint64_t removed = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keep;
  while (it != regions.end() && it->first < end) {
    const std::uint64_t base = it->first, region_end = it->first + it->second;
    if (region_end <= address) {
      ++it;
      continue;
    }
    const std::uint64_t cut_begin = std::max(base, address), cut_end = std::min(region_end, end);
    removed += cut_end - cut_begin;
    if (base < cut_begin) keep.emplace_back(base, cut_begin - base);
    if (cut_end < region_end) keep.emplace_back(cut_end, region_end - cut_end);
    it = regions.erase(it);
  }
  for (const auto& [base, bytes] : keep) regions.emplace(base, bytes);
  return removed;
}

namespace {

LiveChunk MakeChunk(const EventStore& store, std::uint64_t address, std::uint64_t alloc_event) {
  LiveChunk c;
  c.address = address;
  c.size = store.EffectiveRounded(alloc_event);
  c.requested = store.record(alloc_event).size;
  c.alloc_id = store.AllocId(alloc_event);
  c.alloc_event = alloc_event;
  c.stream = store.Stream(alloc_event);
  c.tag = store.record(alloc_event).tag;
  return c;
}

// Places the live chunks (by address) into the regions (by base), computes the holes and totals.
void Compose(const EventStore& store, const RegionMap& regions,
             const std::vector<MapEntry>& chunks, MemoryState* out) {
  out->regions.reserve(regions.size());
  for (const auto& [base, size] : regions) {
    RegionState& r = out->regions.emplace_back();
    r.address = base;
    r.size = size;
    out->reserved += size;
  }
  std::size_t r = 0;
  bool open = false;
  std::uint64_t cursor = 0, max_end = 0;
  auto open_region = [&] {
    const RegionState& region = out->regions[r];
    cursor = std::clamp(max_end, region.address, region.address + region.size);
    open = true;
  };
  auto add_hole = [&](std::uint64_t begin, std::uint64_t end) {
    out->regions[r].holes.push_back(Hole{begin, end - begin});
    out->free_in_regions += end - begin;
    out->largest_hole = std::max(out->largest_hole, end - begin);
  };
  auto close_region = [&] {
    if (!open) open_region();
    const std::uint64_t end = out->regions[r].address + out->regions[r].size;
    if (cursor < end) add_hole(cursor, end);
    ++r;
    open = false;
  };
  constexpr std::size_t kAhead = 16;
  for (std::size_t k = 0; k < std::min(kAhead, chunks.size()); ++k) store.Prefetch(chunks[k].value);
  for (std::size_t k = 0; k < chunks.size(); ++k) {
    if (k + kAhead < chunks.size()) store.Prefetch(chunks[k + kAhead].value);
    const MapEntry& entry = chunks[k];
    LiveChunk c = MakeChunk(store, entry.key, entry.value);
    out->in_use += c.size;
    out->live_requested += c.requested;
    while (r < out->regions.size() &&
           out->regions[r].address + out->regions[r].size <= c.address) {
      close_region();
    }
    const std::uint64_t c_end = c.address + c.size;
    if (r < out->regions.size() && out->regions[r].address <= c.address) {
      if (!open) open_region();
      RegionState& region = out->regions[r];
      if (c.address > cursor) add_hole(cursor, c.address);
      cursor = std::max(cursor, std::min(c_end, region.address + region.size));
      region.chunks.push_back(c);
    } else {
      out->outside_regions.push_back(c);
    }
    max_end = std::max(max_end, c_end);
  }
  while (r < out->regions.size()) close_region();
}

}  // namespace

MemoryState StateAt(const ModelData& model, std::uint32_t device, std::uint64_t index) {
  MemoryState out;
  out.device = device;
  out.event_index = index;
  const DeviceData* dev = model.Find(device);
  const std::uint64_t n = model.store.size();
  if (dev == nullptr || n == 0) return out;
  index = std::min(index, n - 1);
  out.event_index = index;

  auto kf = std::upper_bound(dev->keyframes.begin(), dev->keyframes.end(), index,
                             [](std::uint64_t i, const Keyframe& k) { return i < k.after; });
  const KeyState* key = nullptr;
  std::uint64_t from = dev->first_event;  // before it, the device holds nothing
  if (kf != dev->keyframes.begin()) {
    --kf;
    key = kf->state.get();
    // The keyframe's state holds through kf->until: replay only the events after that.
    from = index <= kf->until ? index + 1 : kf->until + 1;
  }

  RegionMap regions;
  if (key != nullptr) regions.insert(key->regions.begin(), key->regions.end());
  std::unordered_map<std::uint64_t, std::uint64_t> added;  // address -> alloc event
  std::vector<std::uint64_t> erased;                        // keyframe chunks freed since
  const EventStore& store = model.store;
  for (std::uint64_t j = from; j <= index; ++j) {
    const Record& rec = store.record(j);
    if (rec.device != dev->index || !(rec.flags & kApplied)) continue;
    switch (static_cast<EventType>(rec.type)) {
      case EventType::kAlloc: added[rec.address] = j; break;
      case EventType::kFree:
        if (added.erase(rec.address) == 0) erased.push_back(rec.address);
        break;
      case EventType::kRegionReserve:
      case EventType::kMap:
        ApplyReserve(regions, rec.address, rec.size, rec.flags & kMerge, rec.flags & kMergeNext);
        break;
      case EventType::kRegionRelease:
      case EventType::kUnmap: ApplyRelease(regions, rec.address, rec.size); break;
      default: break;
    }
  }
  std::sort(erased.begin(), erased.end());
  std::vector<MapEntry> fresh;
  fresh.reserve(added.size());
  for (const auto& [address, event] : added) fresh.push_back({address, event});
  std::sort(fresh.begin(), fresh.end(), [](const MapEntry& a, const MapEntry& b) { return a.key < b.key; });

  // Merge the keyframe's chunks (minus the erased ones) with the fresh ones, by address.
  std::vector<MapEntry> chunks;
  std::size_t total = fresh.size();
  if (key != nullptr) {
    for (const auto& leaf : key->chunks) total += leaf->count;
  }
  chunks.reserve(total);
  std::size_t e = 0, f = 0;
  if (key != nullptr) {
    for (const auto& leaf : key->chunks) {
      for (std::uint32_t i = 0; i < leaf->count; ++i) {
        const MapEntry& entry = leaf->entries[i];
        while (e < erased.size() && erased[e] < entry.key) ++e;
        if (e < erased.size() && erased[e] == entry.key) {
          ++e;
          continue;
        }
        while (f < fresh.size() && fresh[f].key < entry.key) chunks.push_back(fresh[f++]);
        chunks.push_back(entry);
      }
    }
  }
  while (f < fresh.size()) chunks.push_back(fresh[f++]);
  Compose(store, regions, chunks, &out);
  return out;
}

}  // namespace fragscope::analysis::timeline_detail
