// Series queries over the min/max pyramid: a value is the checkpoint at the end of the previous
// 64-event block plus the deltas of at most 63 records; a range's min and max come from whole
// 4096-event blocks, whole 64-event blocks and at most two partial 64-event scans.
#include <algorithm>

#include "timeline_impl.hpp"

namespace fragscope::analysis::timeline_detail {
namespace {

constexpr std::uint64_t kL1 = std::uint64_t{1} << kL1Shift;
constexpr std::uint64_t kL2 = std::uint64_t{1} << kL2Shift;

struct Range {
  std::uint64_t min = ~std::uint64_t{0};
  std::uint64_t max = 0;
  void Add(std::uint64_t v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
};

// The device's 64-event block `block`: stored where the device has events; elsewhere flat at its
// value at the end of its previous stored block (0 before the first).
L1Block L1At(const DeviceData& d, std::uint64_t block) {
  const auto it = std::lower_bound(d.l1_at.begin(), d.l1_at.end(), block);
  const auto pos = static_cast<std::size_t>(it - d.l1_at.begin());
  if (it != d.l1_at.end() && *it == block) return d.l1[pos];
  L1Block flat{};
  for (int s = 0; s < 3; ++s) flat.end[s] = flat.min[s] = flat.max[s] = pos == 0 ? 0 : d.l1[pos - 1].end[s];
  return flat;
}

// The same for a whole 4096-event block `chunk`.
L2Block L2At(const DeviceData& d, std::uint64_t chunk) {
  const auto it = std::lower_bound(d.l2_at.begin(), d.l2_at.end(), chunk);
  if (it != d.l2_at.end() && *it == chunk) return d.l2[static_cast<std::size_t>(it - d.l2_at.begin())];
  const L1Block before = L1At(d, chunk << (kL2Shift - kL1Shift));  // no event in the chunk: flat
  L2Block flat{};
  for (int s = 0; s < 3; ++s) flat.min[s] = flat.max[s] = before.min[s];
  return flat;
}

// Value of the series before event `block * 64`.
std::uint64_t BlockStart(const DeviceData& d, int s, std::uint64_t block) {
  if (block == 0) return 0;
  const auto it = std::lower_bound(d.l1_at.begin(), d.l1_at.end(), block);
  return it == d.l1_at.begin() ? 0 : d.l1[static_cast<std::size_t>(it - d.l1_at.begin()) - 1].end[s];
}

// Min and max over the values after events [begin, end), all inside one 64-event block, from
// whichever end of the block is nearer: forwards from the value before the block, or backwards
// from the value after it (undoing deltas).
void ScanBlock(const ModelData& m, const DeviceData& d, Series series, std::uint64_t begin,
               std::uint64_t end, Range* out) {
  const int s = static_cast<int>(series);
  const std::uint64_t block = begin >> kL1Shift;
  const std::uint64_t block_begin = block << kL1Shift;
  const std::uint64_t block_end = std::min(block_begin + kL1, m.store.size());
  if (end - block_begin <= block_end - begin) {
    std::uint64_t v = BlockStart(d, s, block);
    for (std::uint64_t j = block_begin; j < end; ++j) {
      if (m.store.record(j).device == d.index) v += m.Delta(j, series);
      if (j >= begin) out->Add(v);
    }
  } else {
    std::uint64_t v = L1At(d, block).end[s];
    for (std::uint64_t j = block_end; j-- > begin;) {
      if (j < end) out->Add(v);  // v is the value after event j
      if (m.store.record(j).device == d.index) v -= m.Delta(j, series);
    }
  }
}

// L1At for ascending blocks: the position found last time is where the next search starts, so a
// walk over a range's 64-event blocks costs a step each instead of a binary search each (a
// zoomed-out column of a 10 M-event trace walks up to 126 of them, for each of 1,280 columns).
class L1Walk {
 public:
  explicit L1Walk(const DeviceData& d) : d_(d) {}
  L1Block At(std::uint64_t block) {
    Seek(block);
    const auto& at = d_.l1_at;
    if (pos_ < at.size() && at[pos_] == block) return d_.l1[pos_];
    L1Block flat{};
    for (int s = 0; s < 3; ++s) flat.end[s] = flat.min[s] = flat.max[s] = pos_ == 0 ? 0 : d_.l1[pos_ - 1].end[s];
    return flat;
  }
  // The series' values before `block` (BlockStart for the three at once): the end of the last
  // stored block before it, or zeros.
  void Before(std::uint64_t block, std::uint64_t v[3]) {
    Seek(block);
    for (int s = 0; s < 3; ++s) v[s] = pos_ == 0 ? 0 : d_.l1[pos_ - 1].end[s];
  }

 private:
  // pos_ = the first stored block at or after `block`.
  void Seek(std::uint64_t block) {
    const auto& at = d_.l1_at;
    if (pos_ < at.size() && at[pos_] < block) {
      // Gallop: a few steps ahead linearly, else a binary search of what is left.
      std::size_t step = 0;
      while (pos_ < at.size() && at[pos_] < block && step < 8) ++pos_, ++step;
      if (pos_ < at.size() && at[pos_] < block) {
        pos_ = static_cast<std::size_t>(std::lower_bound(at.begin() + static_cast<std::ptrdiff_t>(pos_), at.end(), block) - at.begin());
      }
    } else if (pos_ > 0 && at[pos_ - 1] >= block) {
      pos_ = static_cast<std::size_t>(std::lower_bound(at.begin(), at.end(), block) - at.begin());  // went back
    }
  }

  const DeviceData& d_;
  std::size_t pos_ = 0;
};

// Min and max over the values after each event of [begin, end) (non-empty, end <= event count).
Range MinMax(const ModelData& m, const DeviceData& d, Series series, std::uint64_t begin,
             std::uint64_t end) {
  const int s = static_cast<int>(series);
  Range out;
  L1Walk l1(d);
  std::uint64_t i = begin;
  while (i < end) {
    if ((i & (kL2 - 1)) == 0 && i + kL2 <= end) {
      const L2Block b = L2At(d, i >> kL2Shift);
      out.Add(b.min[s]);
      out.Add(b.max[s]);
      i += kL2;
    } else if ((i & (kL1 - 1)) == 0 && i + kL1 <= end) {
      const L1Block b = l1.At(i >> kL1Shift);
      out.Add(b.min[s]);
      out.Add(b.max[s]);
      i += kL1;
    } else {
      const std::uint64_t stop = std::min(end, ((i >> kL1Shift) + 1) << kL1Shift);
      ScanBlock(m, d, series, i, stop, &out);
      i = stop;
    }
  }
  return out;
}

// ScanBlock for the three series at once: one pass over the records instead of three, and the
// block's checkpoints from the walk (a step) instead of a binary search per series.
void ScanBlockAll(const ModelData& m, const DeviceData& d, L1Walk& l1, std::uint64_t begin, std::uint64_t end,
                  Range out[3]) {
  constexpr Series kAll[3] = {Series::kInUse, Series::kReserved, Series::kLoad};  // by Series value
  const std::uint64_t block = begin >> kL1Shift;
  const std::uint64_t block_begin = block << kL1Shift;
  const std::uint64_t block_end = std::min(block_begin + kL1, m.store.size());
  std::uint64_t v[3];
  if (end - block_begin <= block_end - begin) {
    l1.Before(block, v);
    for (std::uint64_t j = block_begin; j < end; ++j) {
      if (m.store.record(j).device == d.index) {
        for (int s = 0; s < 3; ++s) v[s] += m.Delta(j, kAll[s]);
      }
      if (j >= begin) {
        for (int s = 0; s < 3; ++s) out[s].Add(v[s]);
      }
    }
  } else {
    const L1Block after = l1.At(block);
    for (int s = 0; s < 3; ++s) v[s] = after.end[s];
    for (std::uint64_t j = block_end; j-- > begin;) {
      if (j < end) {
        for (int s = 0; s < 3; ++s) out[s].Add(v[s]);
      }
      if (m.store.record(j).device == d.index) {
        for (int s = 0; s < 3; ++s) v[s] -= m.Delta(j, kAll[s]);
      }
    }
  }
}

// MinMax for the three series at once (indexed by Series).
// `l1`: a walk at or before begin's block (DownsampleAll's columns share one).
void MinMaxAll(const ModelData& m, const DeviceData& d, L1Walk& l1, std::uint64_t begin, std::uint64_t end,
               Range out[3]) {
  std::uint64_t i = begin;
  while (i < end) {
    if ((i & (kL2 - 1)) == 0 && i + kL2 <= end) {
      const L2Block b = L2At(d, i >> kL2Shift);
      for (int s = 0; s < 3; ++s) out[s].Add(b.min[s]), out[s].Add(b.max[s]);
      i += kL2;
    } else if ((i & (kL1 - 1)) == 0 && i + kL1 <= end) {
      const L1Block b = l1.At(i >> kL1Shift);
      for (int s = 0; s < 3; ++s) out[s].Add(b.min[s]), out[s].Add(b.max[s]);
      i += kL1;
    } else {
      const std::uint64_t stop = std::min(end, ((i >> kL1Shift) + 1) << kL1Shift);
      ScanBlockAll(m, d, l1, i, stop, out);
      i = stop;
    }
  }
}

// The first event of [begin, end), all inside one 64-event block, after which the series equals
// `target`; `end` when none does.
std::uint64_t FindInBlock(const ModelData& m, const DeviceData& d, Series series, std::uint64_t begin,
                          std::uint64_t end, std::uint64_t target) {
  const int s = static_cast<int>(series);
  const std::uint64_t block = begin >> kL1Shift;
  std::uint64_t v = BlockStart(d, s, block);
  for (std::uint64_t j = block << kL1Shift; j < end; ++j) {
    if (m.store.record(j).device == d.index) v += m.Delta(j, series);
    if (j >= begin && v == target) return j;
  }
  return end;
}

}  // namespace

std::uint64_t ArgMax(const ModelData& m, std::uint32_t device, Series series, std::uint64_t begin,
                     std::uint64_t end) {
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (n == 0) return 0;
  end = std::min(end, n);
  if (d == nullptr || begin >= end) return std::min(begin, n - 1);
  const int s = static_cast<int>(series);
  const std::uint64_t target = MinMax(m, *d, series, begin, end).max;
  // The same walk as MinMax; the first piece whose max is the target holds the answer.
  std::uint64_t i = begin;
  while (i < end) {
    if ((i & (kL2 - 1)) == 0 && i + kL2 <= end) {
      if (L2At(*d, i >> kL2Shift).max[s] == target) {
        for (std::uint64_t b = i; b < i + kL2; b += kL1) {
          if (L1At(*d, b >> kL1Shift).max[s] == target) return FindInBlock(m, *d, series, b, b + kL1, target);
        }
      }
      i += kL2;
    } else if ((i & (kL1 - 1)) == 0 && i + kL1 <= end) {
      if (L1At(*d, i >> kL1Shift).max[s] == target) return FindInBlock(m, *d, series, i, i + kL1, target);
      i += kL1;
    } else {
      const std::uint64_t stop = std::min(end, ((i >> kL1Shift) + 1) << kL1Shift);
      const std::uint64_t at = FindInBlock(m, *d, series, i, stop, target);
      if (at < stop) return at;
      i = stop;
    }
  }
  return begin;  // not reached: the max is some event's value
}

void DownsampleAll(const ModelData& m, std::uint32_t device, std::uint64_t begin, std::uint64_t end,
                   std::uint32_t columns, std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]) {
  for (int s = 0; s < 3; ++s) {
    min[s].assign(columns, 0);
    max[s].assign(columns, 0);
  }
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (d == nullptr || n == 0 || columns == 0) return;
  end = std::min(end, n);
  if (begin >= end) {
    for (int s = 0; s < 3; ++s) {
      const std::uint64_t v = ValueAt(m, device, static_cast<Series>(s), std::min(begin, n - 1));
      min[s].assign(columns, v);
      max[s].assign(columns, v);
    }
    return;
  }
  L1Walk l1(*d);  // columns ascend: one walk for all of them
  for (std::uint32_t c = 0; c < columns; ++c) {
    const auto [lo, hi] = TimelineModel::ColumnSlice(begin, end, columns, c);
    Range r[3];
    MinMaxAll(m, *d, l1, lo, hi, r);
    for (int s = 0; s < 3; ++s) {
      min[s][c] = r[s].min;
      max[s][c] = r[s].max;
    }
  }
}

std::uint64_t ValueAt(const ModelData& m, std::uint32_t device, Series series, std::uint64_t index) {
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (d == nullptr || n == 0) return 0;
  index = std::min(index, n - 1);
  Range r;
  ScanBlock(m, *d, series, index, index + 1, &r);
  return r.max;
}

void Downsample(const ModelData& m, std::uint32_t device, Series series, std::uint64_t begin,
                std::uint64_t end, std::uint32_t columns, std::vector<std::uint64_t>* min,
                std::vector<std::uint64_t>* max) {
  min->assign(columns, 0);
  max->assign(columns, 0);
  const DeviceData* d = m.Find(device);
  const std::uint64_t n = m.store.size();
  if (d == nullptr || n == 0 || columns == 0) return;
  end = std::min(end, n);
  if (begin >= end) {
    const std::uint64_t v = ValueAt(m, device, series, std::min(begin, n - 1));
    min->assign(columns, v);
    max->assign(columns, v);
    return;
  }
  for (std::uint32_t c = 0; c < columns; ++c) {
    const auto [lo, hi] = TimelineModel::ColumnSlice(begin, end, columns, c);
    const Range r = MinMax(m, *d, series, lo, hi);
    (*min)[c] = r.min;
    (*max)[c] = r.max;
  }
}

}  // namespace fragscope::analysis::timeline_detail
