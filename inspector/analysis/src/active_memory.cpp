#include "fragscope/analysis/active_memory.hpp"

#include <algorithm>
#include <utility>

namespace fragscope::analysis {
namespace {

// A column's slice of events: [lo, hi); hi == lo means "no event of its own" and shows `shown`.
struct Slice {
  std::uint64_t lo = 0, hi = 0, shown = 0;
};

ActiveMemoryStack Stack(const TimelineModel& model, std::uint32_t device, const std::vector<Slice>& slices,
                        std::uint64_t range_end, std::size_t max_bands) {
  ActiveMemoryStack out;
  const std::uint64_t n = model.event_count();
  if (n == 0 || slices.empty()) return out;
  out.column_event.reserve(slices.size());
  out.column_in_use.reserve(slices.size());
  std::size_t peak_column = 0;
  for (const Slice& s : slices) {
    const std::uint64_t e = s.hi > s.lo ? model.ArgMax(device, Series::kInUse, s.lo, s.hi) : s.shown;
    out.column_event.push_back(e);
    out.column_in_use.push_back(model.ValueAt(device, Series::kInUse, e));
    if (out.column_in_use.back() > out.column_in_use[peak_column]) peak_column = out.column_in_use.size() - 1;
  }
  out.peak_event = out.column_event[peak_column];
  out.peak_in_use = out.column_in_use[peak_column];
  if (max_bands == 0 || out.peak_in_use == 0) return out;

  const MemoryState state = model.StateAt(device, out.peak_event);
  std::vector<LiveChunk> live = state.outside_regions;
  for (const RegionState& region : state.regions) live.insert(live.end(), region.chunks.begin(), region.chunks.end());
  const std::size_t keep = std::min(max_bands, live.size());
  const auto larger = [](const LiveChunk& a, const LiveChunk& b) {
    if (a.size != b.size) return a.size > b.size;
    return a.alloc_event != b.alloc_event ? a.alloc_event < b.alloc_event : a.address < b.address;
  };
  std::partial_sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(keep), live.end(), larger);
  live.resize(keep);
  std::vector<std::uint64_t> addresses;
  addresses.reserve(keep);
  for (const LiveChunk& c : live) addresses.push_back(c.address);
  const std::vector<std::uint64_t> frees = model.FirstFrees(device, addresses, out.peak_event, std::min(range_end, n));
  out.bands.reserve(keep);
  for (std::size_t i = 0; i < keep; ++i) out.bands.push_back({live[i], frees[i]});
  std::sort(out.bands.begin(), out.bands.end(), [](const ActiveBand& a, const ActiveBand& b) {
    return a.chunk.alloc_event != b.chunk.alloc_event ? a.chunk.alloc_event < b.chunk.alloc_event
                                                      : a.chunk.address < b.chunk.address;
  });
  return out;
}

}  // namespace

std::uint64_t ActiveMemoryStack::Rest(std::size_t column) const {
  const std::uint64_t e = column_event[column];
  std::uint64_t banded = 0;
  for (const ActiveBand& band : bands) {
    if (band.LiveAfter(e)) banded += band.chunk.size;
  }
  const std::uint64_t total = column_in_use[column];
  return banded >= total ? 0 : total - banded;
}

int ActiveMemoryStack::BandAt(std::size_t column, std::uint64_t bytes) const {
  std::uint64_t top = Rest(column);
  if (bytes < top) return -1;
  const std::uint64_t e = column_event[column];
  for (std::size_t b = 0; b < bands.size(); ++b) {
    if (!bands[b].LiveAfter(e)) continue;
    top += bands[b].chunk.size;
    if (bytes < top) return static_cast<int>(b);
  }
  return -2;
}

ActiveMemoryStack StackActiveMemory(const TimelineModel& model, std::uint32_t device, std::uint64_t begin,
                                    std::uint64_t end, std::uint32_t columns, std::size_t max_bands) {
  const std::uint64_t n = model.event_count();
  std::vector<Slice> slices;
  if (n == 0 || columns == 0) return {};
  end = std::min(end, n);
  slices.reserve(columns);
  if (begin >= end) {
    const std::uint64_t at = std::min(begin, n - 1);
    slices.assign(columns, Slice{at, at, at});
    return Stack(model, device, slices, at + 1, max_bands);
  }
  for (std::uint32_t c = 0; c < columns; ++c) {
    const auto [lo, hi] = TimelineModel::ColumnSlice(begin, end, columns, c);
    slices.push_back({lo, hi, lo});
  }
  return Stack(model, device, slices, end, max_bands);
}

ActiveMemoryStack StackActiveMemory(const TimelineModel& model, std::uint32_t device,
                                    const std::vector<std::uint64_t>& bounds, std::size_t max_bands) {
  const std::uint64_t n = model.event_count();
  if (n == 0 || bounds.size() < 2) return {};
  std::vector<Slice> slices;
  slices.reserve(bounds.size() - 1);
  for (std::size_t c = 0; c + 1 < bounds.size(); ++c) {
    const std::uint64_t lo = std::min(bounds[c], n), hi = std::min(bounds[c + 1], n);
    slices.push_back({lo, hi, lo == 0 ? 0 : std::min(lo, n) - 1});
  }
  return Stack(model, device, slices, std::min(bounds.back(), n), max_bands);
}

}  // namespace fragscope::analysis
