// External fragmentation over time: the holes of every device followed event by event, and the
// ratio's min/max pyramid over them (timeline_fragmentation.hpp).
#include "timeline_fragmentation.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <utility>

#include "timeline_impl.hpp"

namespace fragscope::analysis::timeline_detail {
namespace {

using traces::EventType;

constexpr std::uint64_t kL1 = std::uint64_t{1} << kL1Shift;
constexpr std::uint64_t kL2 = std::uint64_t{1} << kL2Shift;
constexpr std::uint64_t kMaxU64 = ~std::uint64_t{0};

std::uint16_t Quantize(std::uint64_t largest, std::uint64_t free) {
  return static_cast<std::uint16_t>(std::lround(ExternalFragmentation(largest, free) * kFragmentationScale));
}

// An exact multiset of hole sizes whose largest is read in O(1): the sizes sit in the allocator's
// size classes (powers of two from 256 B, 64 linear sub-classes each; docs/allocator.md), each
// sub-class a short sorted list of (size, count), with two levels of bitmaps over the non-empty ones.
// A std::multiset did the same at a tree walk and a node allocation per change: most of the pass.
class SizeSet {
 public:
  SizeSet() : lists_(kBins * kSubs) {}
  std::uint64_t total() const { return total_; }
  std::uint64_t largest() const {
    if (bin_mask_ == 0) return 0;
    const int bin = 63 - std::countl_zero(bin_mask_);
    const int sub = 63 - std::countl_zero(sub_mask_[bin]);
    return lists_[bin * kSubs + sub].back().first;
  }
  void Insert(std::uint64_t size) {
    if (size == 0) return;
    const auto [bin, sub] = Slot(size);
    auto& list = lists_[bin * kSubs + sub];
    auto it = std::lower_bound(list.begin(), list.end(), size, [](const auto& e, std::uint64_t s) { return e.first < s; });
    if (it != list.end() && it->first == size) {
      ++it->second;
    } else {
      list.insert(it, {size, 1});
    }
    sub_mask_[bin] |= std::uint64_t{1} << sub;
    bin_mask_ |= std::uint64_t{1} << bin;
    total_ += size;
  }
  // `size` must be present (0 is never stored).
  void Erase(std::uint64_t size) {
    if (size == 0) return;
    const auto [bin, sub] = Slot(size);
    auto& list = lists_[bin * kSubs + sub];
    auto it = std::lower_bound(list.begin(), list.end(), size, [](const auto& e, std::uint64_t s) { return e.first < s; });
    if (it == list.end() || it->first != size) return;  // not a hole: cannot happen
    total_ -= size;
    if (--it->second > 0) return;
    list.erase(it);
    if (!list.empty()) return;
    sub_mask_[bin] &= ~(std::uint64_t{1} << sub);
    if (sub_mask_[bin] == 0) bin_mask_ &= ~(std::uint64_t{1} << bin);
  }

 private:
  static constexpr int kBins = 56, kSubBits = 6, kSubs = 1 << kSubBits;
  static std::pair<int, int> Slot(std::uint64_t size) {
    const std::uint64_t units = (size >> 8) | 1;
    const int bin = static_cast<int>(std::bit_width(units)) - 1;
    const int shift = bin > kSubBits ? bin - kSubBits : 0;
    return {bin, static_cast<int>((units >> shift) - (std::uint64_t{1} << (bin - shift)))};
  }
  std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> lists_;
  std::array<std::uint64_t, kBins> sub_mask_{};
  std::uint64_t bin_mask_ = 0;
  std::uint64_t total_ = 0;
};

// Regions (base -> size) as a sorted vector: the pass looks a region up at every allocation and
// free, and a binary search over contiguous pairs is several times faster than a std::map's walk
// over scattered nodes (a paging trace has thousands of mapped pieces); changes (map, unmap) are
// rarer and move a few kilobytes. The same semantics as RegionMap's ApplyReserve / ApplyRelease.
class FlatRegions {
 public:
  using Entry = std::pair<std::uint64_t, std::uint64_t>;
  // The first region that ends after `address` (it may start after it too), or end().
  std::vector<Entry>::const_iterator FirstEndingAfter(std::uint64_t address) const {
    auto it = std::upper_bound(v_.begin(), v_.end(), address, [](std::uint64_t a, const Entry& e) { return a < e.first; });
    if (it != v_.begin() && std::prev(it)->first + std::prev(it)->second > address) --it;
    return it;
  }
  std::vector<Entry>::const_iterator end() const { return v_.end(); }
  // The region holding `address` after Reserve(address, ...).
  Entry Holding(std::uint64_t address) const {
    auto it = std::upper_bound(v_.begin(), v_.end(), address, [](std::uint64_t a, const Entry& e) { return a < e.first; });
    return *std::prev(it);
  }
  void Reserve(std::uint64_t address, std::uint64_t size, bool merge_prev, bool merge_next) {
    auto it = std::lower_bound(v_.begin(), v_.end(), address, [](const Entry& e, std::uint64_t a) { return e.first < a; });
    std::uint64_t bytes = size;
    if (merge_next && it != v_.end() && it->first == address + size) {
      bytes += it->second;
      it = v_.erase(it);
    }
    if (merge_prev && it != v_.begin() && std::prev(it)->first + std::prev(it)->second == address) {
      std::prev(it)->second += bytes;
      return;
    }
    v_.insert(it, {address, bytes});
  }
  void Release(std::uint64_t address, std::uint64_t size) {
    const std::uint64_t end = address + size;
    auto it = FirstEndingAfter(address);
    std::vector<Entry> keep;
    auto first = v_.begin() + (it - v_.cbegin()), last = first;
    for (; last != v_.end() && last->first < end; ++last) {
      if (last->first < address) keep.emplace_back(last->first, address - last->first);
      if (last->first + last->second > end) keep.emplace_back(end, last->first + last->second - end);
    }
    first = v_.erase(first, last);
    v_.insert(first, keep.begin(), keep.end());
  }

 private:
  std::vector<Entry> v_;
};

// One device's free memory: each region (or mapped piece) minus the live chunks, never joined
// across two regions. The holes are not stored: the hole around a free address is bounded by the
// live chunks on either side and its region's ends, so each event changes the size set by the
// holes it splits, joins or takes away, found from its neighbours in the live map.
class Holes {
 public:
  std::uint64_t free() const { return sizes_.total(); }
  std::uint64_t largest() const { return sizes_.largest(); }

  void Alloc(std::uint64_t address, std::uint64_t end) {
    // The new chunk overlaps no live one (the index applied it), so its part in each region lay in
    // one hole, which it splits.
    const PersistentMap::Position at = live_.Locate(address);
    ForEachRegion(address, end, [&](std::uint64_t x, std::uint64_t y, std::uint64_t rb, std::uint64_t re) {
      const auto [lo, hi] = x == address ? Around(at, x, rb, re) : HoleAt(x, rb, re);
      sizes_.Erase(hi - lo);
      sizes_.Insert(x - lo);
      sizes_.Insert(hi - y);
    });
    live_.InsertAt(at, address, end);
  }
  void Free(std::uint64_t address) {
    std::uint64_t end = 0;
    if (!live_.Take(address, &end)) return;  // the index applied no alloc here: cannot happen
    // Its part in each region joins the holes on either side.
    ForEachRegion(address, end, [&](std::uint64_t x, std::uint64_t y, std::uint64_t rb, std::uint64_t re) {
      const auto [lo, hi] = HoleAt(x, rb, re);
      sizes_.Erase(x - lo);
      sizes_.Erase(hi - y);
      sizes_.Insert(hi - lo);
    });
  }
  // region_reserve or map: the range's memory, less any chunk already live there (evidence that
  // recorded an allocation before its segment), is free; a mapped piece that grows its neighbour
  // joins that neighbour's free end.
  void Reserve(std::uint64_t address, std::uint64_t size, bool merge_prev, bool merge_next) {
    regions_.Reserve(address, size, merge_prev, merge_next);
    const std::uint64_t end = address + size;
    const auto [rb, region_size] = regions_.Holding(address);
    const std::uint64_t re = rb + region_size;
    std::uint64_t p = address;
    if (const MapEntry* before = live_.Floor(address); before != nullptr && before->value > p) p = before->value;
    while (p < end) {
      const MapEntry* next = live_.Ceil(p);
      const std::uint64_t stop = next != nullptr && next->key < end ? next->key : end;
      if (stop > p) {
        // [p, stop) is new free memory; the hole around it may take in the old free end of the
        // region before (p == address) or the old free start of the one after (stop == end).
        const auto [lo, hi] = HoleAt(p, rb, re);
        sizes_.Erase(p - lo);
        sizes_.Erase(hi - stop);
        sizes_.Insert(hi - lo);
      }
      if (next == nullptr || next->key >= end) break;
      p = std::max(p, next->value);
    }
  }
  // region_release or unmap: the range is no memory any more (live chunks in it stay live); the
  // holes it cuts keep their parts outside it.
  void Release(std::uint64_t address, std::uint64_t size) {
    const std::uint64_t end = address + size;
    ForEachRegion(address, end, [&](std::uint64_t x, std::uint64_t y, std::uint64_t rb, std::uint64_t re) {
      std::uint64_t p = x;
      while (p < y) {
        if (const MapEntry* covering = live_.Floor(p); covering != nullptr && covering->value > p) {
          p = covering->value;
          continue;
        }
        const auto [lo, hi] = HoleAt(p, rb, re);
        sizes_.Erase(hi - lo);
        sizes_.Insert(x > lo ? x - lo : 0);
        sizes_.Insert(hi > y ? hi - y : 0);
        p = hi;
      }
    });
    regions_.Release(address, size);
  }

 private:
  // The hole holding the free address p of the region [rb, re): from the end of the last live
  // chunk before p (chunks do not overlap, so it ends last) to the start of the next.
  std::pair<std::uint64_t, std::uint64_t> HoleAt(std::uint64_t p, std::uint64_t rb, std::uint64_t re) const {
    return Around(live_.Locate(p), p, rb, re);
  }
  static std::pair<std::uint64_t, std::uint64_t> Around(const PersistentMap::Position& at, std::uint64_t p,
                                                        std::uint64_t rb, std::uint64_t re) {
    std::uint64_t lo = rb, hi = re;
    if (at.floor != nullptr) lo = std::max(lo, std::min(at.floor->value, p));
    if (at.ceil != nullptr) hi = std::min(hi, std::max(at.ceil->key, p));
    return {lo, hi};
  }
  // fn(x, y, region begin, region end) for each region's part [x, y) of [begin, end), by address.
  template <typename Fn>
  void ForEachRegion(std::uint64_t begin, std::uint64_t end, Fn&& fn) const {
    for (auto it = regions_.FirstEndingAfter(begin); it != regions_.end() && it->first < end; ++it) {
      const std::uint64_t rb = it->first, re = it->first + it->second;
      if (re <= begin) continue;
      fn(std::max(begin, rb), std::min(end, re), rb, re);
    }
  }

  FlatRegions regions_;
  PersistentMap live_;  // address -> end
  SizeSet sizes_;
};

struct DevicePass {
  Holes holes;
  std::uint16_t value = 0;
  FragmentationBlock block;
  std::uint64_t block_at = kMaxU64;
};

void Note(FragmentationSummary& s, std::uint64_t event, std::uint64_t largest, std::uint64_t free) {
  if (free == 0) return;
  s.had_free = true;
  const double ratio = ExternalFragmentation(largest, free);
  if (ratio > s.highest) {
    s.highest = ratio;
    s.highest_event = event;
    s.highest_free = free;
    s.highest_largest = largest;
  }
  if (free - largest > s.most_stranded) {
    s.most_stranded = free - largest;
    s.stranded_event = event;
    s.stranded_free = free;
    s.stranded_largest = largest;
  }
}

}  // namespace

std::uint64_t FragmentationData::bytes() const {
  std::uint64_t total = by_event.bytes();
  for (const DeviceFragmentation& d : devices) {
    total += (d.l1.capacity() + d.l2.capacity()) * sizeof(FragmentationBlock);
  }
  return total;
}

void BuildFragmentation(const ModelData& m, FragmentationData* out) {
  const EventStore& store = m.store;
  const std::uint64_t n = store.size();
  std::vector<DevicePass> passes(m.device_data.size());
  out->devices.assign(m.device_data.size(), {});
  std::vector<std::uint16_t> touched;  // devices with events in the current 64-event block
  // Regions of reserved memory given as a total only (SourceFacts::reserved_without_layout) are
  // invented: their holes are none of the evidence's, so such a device has no free memory here.
  std::vector<bool> layout_unknown(m.device_data.size());
  for (std::size_t i = 0; i < m.device_data.size(); ++i) {
    layout_unknown[i] = m.header.source.ReservedWithoutLayout(m.device_data[i].id);
  }
  for (std::uint64_t j = 0; j < n; ++j) {
    const Record& r = store.record(j);
    DevicePass& p = passes[r.device];
    const std::uint64_t block = j >> kL1Shift;
    if (p.block_at != block) {
      // As the byte series: a block's min and max start from the value before it, unless the
      // device's first event in it is the block's first event.
      p.block_at = block;
      touched.push_back(r.device);
      p.block = (j & (kL1 - 1)) == 0 ? FragmentationBlock{0xffff, 0, 0} : FragmentationBlock{p.value, p.value, 0};
    }
    if (r.flags & kApplied) {
      Holes& h = p.holes;
      switch (static_cast<EventType>(r.type)) {
        case EventType::kAlloc: h.Alloc(r.address, r.address + store.EffectiveRounded(j)); break;
        case EventType::kFree: h.Free(r.address); break;
        case EventType::kRegionReserve:
        case EventType::kMap:
          if (!layout_unknown[r.device]) h.Reserve(r.address, r.size, r.flags & kMerge, r.flags & kMergeNext);
          break;
        case EventType::kRegionRelease:
        case EventType::kUnmap:
          if (!layout_unknown[r.device]) h.Release(r.address, r.address + r.size < r.address ? kMaxU64 - r.address : r.size);
          break;
        default: break;
      }
      p.value = Quantize(h.largest(), h.free());
      Note(out->devices[r.device].summary, j, h.largest(), h.free());
    }
    out->by_event.push_back(p.value);
    p.block.min = std::min(p.block.min, p.value);
    p.block.max = std::max(p.block.max, p.value);
    if (((j + 1) & (kL1 - 1)) == 0 || j + 1 == n) {
      for (std::uint16_t i : touched) {
        passes[i].block.end = passes[i].value;
        out->devices[i].l1.push_back(passes[i].block);
      }
      touched.clear();
    }
  }
  // The coarse level, over the same whole 4096-event blocks as the byte series' (Indexer::Finish).
  constexpr unsigned kRatioShift = kL2Shift - kL1Shift;
  for (std::size_t i = 0; i < m.device_data.size(); ++i) {
    const DeviceData& d = m.device_data[i];
    DeviceFragmentation& f = out->devices[i];
    std::size_t k = 0;
    for (const std::uint64_t chunk : d.l2_at) {
      while (k < d.l1_at.size() && (d.l1_at[k] >> kRatioShift) < chunk) ++k;
      FragmentationBlock b{0xffff, 0, 0};
      if (k == d.l1_at.size() || d.l1_at[k] != chunk << kRatioShift) {  // flat before its first stored block
        const std::uint16_t before = k == 0 ? 0 : f.l1[k - 1].end;
        b.min = std::min(b.min, before);
        b.max = std::max(b.max, before);
      }
      for (; k < d.l1_at.size() && (d.l1_at[k] >> kRatioShift) == chunk; ++k) {
        b.min = std::min(b.min, f.l1[k].min);
        b.max = std::max(b.max, f.l1[k].max);
      }
      f.l2.push_back(b);
    }
  }
}

namespace {

struct Range {
  std::uint16_t min = 0xffff, max = 0;
  void Add(std::uint16_t v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
};

// Ascending lookups in a device's stored block numbers (l1_at or l2_at): the position found last is
// where the next search starts, a few linear steps before a binary search, so the columns of a plot
// walk the blocks once instead of searching for each (as the byte series' L1Walk).
class BlockWalk {
 public:
  explicit BlockWalk(const std::vector<std::uint64_t>& at) : at_(at) {}
  // The first stored block at or after `block`.
  std::size_t Seek(std::uint64_t block) {
    if (pos_ < at_.size() && at_[pos_] < block) {
      for (int step = 0; step < 8 && pos_ < at_.size() && at_[pos_] < block; ++step) ++pos_;
      if (pos_ < at_.size() && at_[pos_] < block) {
        pos_ = static_cast<std::size_t>(std::lower_bound(at_.begin() + static_cast<std::ptrdiff_t>(pos_), at_.end(), block) - at_.begin());
      }
    } else if (pos_ > 0 && at_[pos_ - 1] >= block) {
      pos_ = static_cast<std::size_t>(std::lower_bound(at_.begin(), at_.end(), block) - at_.begin());
    }
    return pos_;
  }
  bool Holds(std::size_t pos, std::uint64_t block) const { return pos < at_.size() && at_[pos] == block; }

 private:
  const std::vector<std::uint64_t>& at_;
  std::size_t pos_ = 0;
};

struct Walks {
  const DeviceData& d;
  const DeviceFragmentation& f;
  BlockWalk l1{d.l1_at}, l2{d.l2_at};

  // The value before 64-event block `block`: the end of the device's last stored block before it.
  std::uint16_t Before(std::uint64_t block) {
    const std::size_t pos = l1.Seek(block);
    return pos == 0 ? 0 : f.l1[pos - 1].end;
  }
  // The device's 64-event block, flat at the value before it where the device has no event.
  FragmentationBlock L1(std::uint64_t block) {
    const std::size_t pos = l1.Seek(block);
    if (l1.Holds(pos, block)) return f.l1[pos];
    const std::uint16_t v = pos == 0 ? 0 : f.l1[pos - 1].end;
    return {v, v, v};
  }
  FragmentationBlock L2(std::uint64_t chunk) {
    const std::size_t pos = l2.Seek(chunk);
    if (l2.Holds(pos, chunk)) return f.l2[pos];
    return L1(chunk << (kL2Shift - kL1Shift));  // no event in the chunk: flat
  }
};

// The values after events [begin, end), all inside one 64-event block.
void ScanBlock(const ModelData& m, const FragmentationData& data, Walks& w, std::uint64_t begin, std::uint64_t end,
               Range* out) {
  const std::uint64_t block = begin >> kL1Shift;
  std::uint16_t v = w.Before(block);
  for (std::uint64_t j = block << kL1Shift; j < end; ++j) {
    if (m.store.record(j).device == w.d.index) v = data.by_event[j];
    if (j >= begin) out->Add(v);
  }
}

Range MinMax(const ModelData& m, const FragmentationData& data, Walks& w, std::uint64_t begin, std::uint64_t end) {
  Range out;
  std::uint64_t i = begin;
  while (i < end) {
    if ((i & (kL2 - 1)) == 0 && i + kL2 <= end) {
      const FragmentationBlock b = w.L2(i >> kL2Shift);
      out.Add(b.min);
      out.Add(b.max);
      i += kL2;
    } else if ((i & (kL1 - 1)) == 0 && i + kL1 <= end) {
      const FragmentationBlock b = w.L1(i >> kL1Shift);
      out.Add(b.min);
      out.Add(b.max);
      i += kL1;
    } else {
      const std::uint64_t stop = std::min(end, ((i >> kL1Shift) + 1) << kL1Shift);
      ScanBlock(m, data, w, i, stop, &out);
      i = stop;
    }
  }
  return out;
}

}  // namespace

double FragmentationAt(const ModelData& m, const FragmentationData& data, std::uint32_t device,
                       std::uint64_t index) {
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (d == nullptr || n == 0) return 0.0;
  index = std::min(index, n - 1);
  Range r;
  Walks w{*d, data.devices[d->index]};
  ScanBlock(m, data, w, index, index + 1, &r);
  return r.max / kFragmentationScale;
}

void DownsampleFragmentation(const ModelData& m, const FragmentationData& data, std::uint32_t device,
                             std::uint64_t begin, std::uint64_t end, std::uint32_t columns,
                             std::vector<float>* min, std::vector<float>* max) {
  min->assign(columns, 0.0f);
  max->assign(columns, 0.0f);
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (d == nullptr || n == 0 || columns == 0) return;
  end = std::min(end, n);
  if (begin >= end) {
    const auto v = static_cast<float>(FragmentationAt(m, data, device, begin));
    min->assign(columns, v);
    max->assign(columns, v);
    return;
  }
  Walks w{*d, data.devices[d->index]};  // columns ascend: one walk for all of them
  for (std::uint32_t c = 0; c < columns; ++c) {
    const auto [lo, hi] = TimelineModel::ColumnSlice(begin, end, columns, c);
    const Range r = MinMax(m, data, w, lo, hi);
    (*min)[c] = static_cast<float>(r.min / kFragmentationScale);
    (*max)[c] = static_cast<float>(r.max / kFragmentationScale);
  }
}

const FragmentationData& ModelData::Fragmentation() const {
  std::call_once(fragmentation_once, [this] {
    auto data = std::make_unique<FragmentationData>();
    BuildFragmentation(*this, data.get());
    fragmentation = std::move(data);
    fragmentation_ready.store(true, std::memory_order_release);
  });
  return *fragmentation;
}

}  // namespace fragscope::analysis::timeline_detail
