#include "fragscope/analysis/view_model.hpp"

#include <algorithm>
#include <bit>
#include <cctype>

#include "fragscope/traces/tag_table.hpp"

namespace fragscope::analysis {
namespace {

__extension__ using U128 = unsigned __int128;

std::string Lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

}  // namespace

// ------------------------------------------------------------------------------- memory map

std::uint64_t MapLayout::CellBegin(std::uint64_t cell) const {
  if (cells.empty()) return 0;
  return static_cast<std::uint64_t>(static_cast<U128>(cell) * total_bytes / cells.size());
}

std::uint32_t MapLayout::CellOf(std::uint64_t offset) const {
  if (cells.empty() || total_bytes == 0) return 0;
  const std::uint64_t n = cells.size();
  std::uint64_t c = static_cast<std::uint64_t>(static_cast<U128>(offset) * n / total_bytes);
  if (c >= n) c = n - 1;
  while (c + 1 < n && CellBegin(c + 1) <= offset) ++c;
  while (c > 0 && CellBegin(c) > offset) --c;
  return static_cast<std::uint32_t>(c);
}

std::uint64_t AxisWithoutRegions(std::uint64_t peak_in_use, std::uint32_t cells) {
  return std::max(peak_in_use, std::uint64_t{cells} * kMinCellBytes);
}

MapLayout LayoutMemoryMap(const MemoryState& state, std::uint32_t cells, const MapOptions& options) {
  const MapItemKind hole_kind = options.holes_unlisted ? MapItemKind::kUnlisted : MapItemKind::kHole;
  const CellKind hole_cell = options.holes_unlisted ? CellKind::kUnlisted : CellKind::kFree;
  MapLayout layout;
  std::uint64_t offset = 0;
  for (std::uint32_t r = 0; r < state.regions.size(); ++r) {
    const RegionState& region = state.regions[r];
    layout.region_offsets.push_back(offset);
    std::size_t c = 0, h = 0;
    while (c < region.chunks.size() || h < region.holes.size()) {
      const bool take_chunk = h >= region.holes.size() ||
                              (c < region.chunks.size() && region.chunks[c].address < region.holes[h].address);
      MapItem item;
      item.region = r;
      if (take_chunk) {
        item.kind = MapItemKind::kChunk;
        item.address = region.chunks[c].address;
        item.size = region.chunks[c].size;
        item.index = static_cast<std::uint32_t>(c++);
      } else {
        item.kind = hole_kind;
        item.address = region.holes[h].address;
        item.size = region.holes[h].size;
        item.index = static_cast<std::uint32_t>(h++);
      }
      item.offset = offset + (item.address - region.address);
      if (item.size > 0) layout.items.push_back(item);
    }
    offset += region.size;
  }
  const auto outside_region = static_cast<std::uint32_t>(state.regions.size());
  for (std::uint32_t i = 0; i < state.outside_regions.size(); ++i) {
    const LiveChunk& chunk = state.outside_regions[i];
    if (chunk.size == 0) continue;
    layout.items.push_back({offset, chunk.address, chunk.size, outside_region, i, MapItemKind::kChunk});
    offset += chunk.size;
  }
  layout.laid_out_bytes = offset;
  layout.total_bytes = std::max(offset, options.min_bytes);
  layout.cells.assign(cells, MapCell{});
  if (cells == 0 || offset == 0 || layout.items.empty()) return layout;

  // Pass 1: each cell shows the item with the most bytes in it (a hole on a tie).
  const auto& items = layout.items;
  std::size_t first = 0;
  for (std::uint64_t c = 0; c < cells; ++c) {
    const std::uint64_t a = layout.CellBegin(c);
    if (a >= layout.total_bytes) break;
    const std::uint64_t b = std::max(layout.CellBegin(c + 1), a + 1);
    while (first < items.size() && items[first].offset + items[first].size <= a) ++first;
    std::uint64_t best_bytes = 0;
    std::uint32_t best = MapCell::kNoItem;
    for (std::size_t j = first; j < items.size() && items[j].offset < b; ++j) {
      const std::uint64_t overlap =
          std::min(items[j].offset + items[j].size, b) - std::max(items[j].offset, a);
      const bool hole = items[j].kind != MapItemKind::kChunk;
      if (overlap > best_bytes || (overlap == best_bytes && overlap > 0 && hole)) {
        best_bytes = overlap;
        best = static_cast<std::uint32_t>(j);
      }
    }
    if (best == MapCell::kNoItem) continue;  // bytes between items (should not happen: chunks tile)
    layout.cells[c].item = best;
    layout.cells[c].kind = items[best].kind == MapItemKind::kChunk ? CellKind::kUsed : hole_cell;
  }

  // Pass 2: a hole that won no cell takes the cell where it has the most bytes. Only used cells
  // turn free, so no hole loses the free cell it had.
  for (std::uint32_t j = 0; j < items.size(); ++j) {
    const MapItem& hole = items[j];
    if (hole.kind == MapItemKind::kChunk) continue;
    const std::uint64_t end = hole.offset + hole.size;
    std::uint64_t best_bytes = 0;
    std::uint32_t best_cell = layout.CellOf(hole.offset);
    bool visible = false;
    for (std::uint64_t c = layout.CellOf(hole.offset); c < cells && layout.CellBegin(c) < end; ++c) {
      if (layout.cells[c].kind == hole_cell) {
        visible = true;
        break;
      }
      const std::uint64_t a = layout.CellBegin(c);
      const std::uint64_t b = std::max(layout.CellBegin(c + 1), a + 1);
      const std::uint64_t overlap = std::min(end, b) - std::max(hole.offset, a);
      if (overlap > best_bytes) {
        best_bytes = overlap;
        best_cell = static_cast<std::uint32_t>(c);
      }
    }
    if (!visible) layout.cells[best_cell] = {hole_cell, j};
  }
  return layout;
}

// ------------------------------------------------------------------------------- histogram

std::vector<SizeBucket> FreeSizeHistogram(const MemoryState& state) {
  std::vector<SizeBucket> buckets;
  auto bucket_of = [](std::uint64_t size) -> std::size_t {
    const std::uint64_t units = size / 256;
    return units == 0 ? 0 : static_cast<std::size_t>(std::bit_width(units) - 1);
  };
  for (const RegionState& region : state.regions) {
    for (const Hole& hole : region.holes) {
      if (hole.size == 0) continue;
      const std::size_t k = bucket_of(hole.size);
      while (buckets.size() <= k) {
        const std::size_t i = buckets.size();
        buckets.push_back({std::uint64_t{256} << i, std::uint64_t{256} << (i + 1), 0, 0});
      }
      buckets[k].count += 1;
      buckets[k].bytes += hole.size;
    }
  }
  if (!buckets.empty()) buckets.front().lower = 0;
  return buckets;
}

// ------------------------------------------------------------------------------- cursor

CursorIndex::CursorIndex(std::vector<std::uint64_t> steps, std::vector<std::uint64_t> ooms)
    : steps_(std::move(steps)), ooms_(std::move(ooms)) {
  for (auto* list : {&steps_, &ooms_}) {
    std::sort(list->begin(), list->end());
    list->erase(std::unique(list->begin(), list->end()), list->end());
  }
  for (std::uint64_t i = 0; i < steps_.size(); ++i) step_numbers_.push_back(i);
}

CursorIndex::CursorIndex(std::vector<std::pair<std::uint64_t, std::uint64_t>> numbered_steps,
                         std::vector<std::uint64_t> ooms)
    : CursorIndex(std::vector<std::uint64_t>{}, std::move(ooms)) {
  std::sort(numbered_steps.begin(), numbered_steps.end());
  for (const auto& [event, number] : numbered_steps) {
    if (!steps_.empty() && steps_.back() == event) continue;
    steps_.push_back(event);
    step_numbers_.push_back(number);
  }
}

namespace {

// N of "step N ..." (after "step" and white space); empty when no number follows.
std::optional<std::uint64_t> StepNumber(std::string_view name) {
  std::size_t p = 4;  // after "step"
  while (p < name.size() && name[p] == ' ') ++p;
  std::uint64_t n = 0;
  const std::size_t digits = p;
  while (p < name.size() && name[p] >= '0' && name[p] <= '9' && p - digits < 18) n = n * 10 + (name[p++] - '0');
  if (p == digits) return std::nullopt;
  return n;
}

}  // namespace

CursorIndex CursorIndex::FromModel(const TimelineModel& model, const std::vector<std::uint64_t>& oom_events) {
  // Every device of a data-parallel run marks each step: a step is where its first begin is, and
  // is known by the number its marker gives (counting markers made step 3 on two devices "step 8").
  std::vector<std::pair<std::uint64_t, std::optional<std::uint64_t>>> begins, any;
  for (const Marker& marker : model.markers()) {
    const std::string name = Lower(marker.name);
    if (name.rfind("step", 0) != 0) continue;
    any.emplace_back(marker.event_index, StepNumber(name));
    if (name.find("begin") != std::string::npos) begins.emplace_back(marker.event_index, StepNumber(name));
  }
  auto& chosen = begins.empty() ? any : begins;
  std::sort(chosen.begin(), chosen.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> numbered;
  std::vector<std::uint64_t> seen;
  for (const auto& [event, number] : chosen) {
    // Unnumbered markers count in order; a number met again (another device's) is the same step.
    const std::uint64_t n = number.value_or(numbered.size());
    if (number && std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    numbered.emplace_back(event, n);
  }
  return CursorIndex(std::move(numbered), oom_events);
}

std::uint64_t CursorIndex::NextStep(std::uint64_t from) const {
  const auto it = std::upper_bound(steps_.begin(), steps_.end(), from);
  return it == steps_.end() ? from : *it;
}

std::uint64_t CursorIndex::PrevStep(std::uint64_t from) const {
  const auto it = std::lower_bound(steps_.begin(), steps_.end(), from);
  return it == steps_.begin() ? from : *(it - 1);
}

std::uint64_t CursorIndex::NextOom(std::uint64_t from) const {
  if (ooms_.empty()) return from;
  const auto it = std::upper_bound(ooms_.begin(), ooms_.end(), from);
  return it == ooms_.end() ? ooms_.front() : *it;
}

std::uint64_t CursorIndex::PrevOom(std::uint64_t from) const {
  if (ooms_.empty()) return from;
  const auto it = std::lower_bound(ooms_.begin(), ooms_.end(), from);
  return it == ooms_.begin() ? ooms_.back() : *(it - 1);
}

std::optional<std::uint64_t> CursorIndex::StepAt(std::uint64_t event) const {
  const auto after = std::upper_bound(steps_.begin(), steps_.end(), event);
  if (after == steps_.begin()) return std::nullopt;
  return step_numbers_[static_cast<std::size_t>(after - steps_.begin() - 1)];
}

std::uint64_t MoveCursor(std::uint64_t cursor, std::int64_t delta, std::uint64_t count) {
  if (count == 0) return 0;
  if (delta < 0) {
    const auto back = static_cast<std::uint64_t>(-(delta + 1)) + 1;
    cursor = back > cursor ? 0 : cursor - back;
  } else {
    const auto forward = static_cast<std::uint64_t>(delta);
    cursor = forward > count ? count : cursor + forward;
  }
  return std::min(cursor, count - 1);
}

// ------------------------------------------------------------------------------- timeline view

void ViewRange::Clamp(double total) {
  if (total <= 0) {
    begin = 0;
    end = 1;
    return;
  }
  double s = span();
  if (!(s > 0) || s > total) s = total;
  if (begin < 0) begin = 0;
  if (begin + s > total) begin = total - s;
  end = begin + s;
}

void ViewRange::Zoom(double anchor, double factor, double min_span, double total) {
  const double old_span = span();
  const double new_span = std::clamp(old_span * factor, std::min(min_span, total), total);
  const double f = old_span > 0 ? (anchor - begin) / old_span : 0.5;
  begin = anchor - f * new_span;
  end = begin + new_span;
  Clamp(total);
}

void ViewRange::Pan(double delta, double total) {
  begin += delta;
  end += delta;
  Clamp(total);
}

std::uint64_t EventAtTime(const TimelineModel& model, double t) {
  std::uint64_t lo = 0, hi = model.event_count();
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (static_cast<double>(model.event(mid).time_ns) < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::vector<std::uint64_t> ColumnsByTime(const TimelineModel& model, double t0, double t1,
                                         std::uint32_t columns) {
  std::vector<std::uint64_t> bounds(columns + std::size_t{1});
  for (std::uint32_t c = 0; c <= columns; ++c) {
    bounds[c] = EventAtTime(model, t0 + (t1 - t0) * c / std::max<std::uint32_t>(columns, 1));
  }
  return bounds;
}

void DownsampleRanges(const TimelineModel& model, std::uint32_t device, Series series,
                      const std::vector<std::uint64_t>& bounds, std::vector<std::uint64_t>* min,
                      std::vector<std::uint64_t>* max) {
  const std::size_t columns = bounds.empty() ? 0 : bounds.size() - 1;
  min->assign(columns, 0);
  max->assign(columns, 0);
  if (model.event_count() == 0) return;
  std::vector<std::uint64_t> lo, hi;
  for (std::size_t c = 0; c < columns; ++c) {
    if (bounds[c + 1] > bounds[c]) {
      model.Downsample(device, series, bounds[c], bounds[c + 1], 1, &lo, &hi);
      (*min)[c] = lo[0];
      (*max)[c] = hi[0];
    } else {
      const std::uint64_t at = std::min(bounds[c] == 0 ? 0 : bounds[c] - 1, model.event_count() - 1);
      (*min)[c] = (*max)[c] = model.ValueAt(device, series, at);
    }
  }
}

void DownsampleRangesAll(const TimelineModel& model, std::uint32_t device, const std::vector<std::uint64_t>& bounds,
                         std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]) {
  const std::size_t columns = bounds.empty() ? 0 : bounds.size() - 1;
  for (int s = 0; s < 3; ++s) {
    min[s].assign(columns, 0);
    max[s].assign(columns, 0);
  }
  if (model.event_count() == 0) return;
  std::vector<std::uint64_t> lo[3], hi[3];
  for (std::size_t c = 0; c < columns; ++c) {
    if (bounds[c + 1] > bounds[c]) {
      model.DownsampleAll(device, bounds[c], bounds[c + 1], 1, lo, hi);
      for (int s = 0; s < 3; ++s) min[s][c] = lo[s][0], max[s][c] = hi[s][0];
    } else {
      const std::uint64_t at = std::min(bounds[c] == 0 ? 0 : bounds[c] - 1, model.event_count() - 1);
      for (int s = 0; s < 3; ++s) min[s][c] = max[s][c] = model.ValueAt(device, static_cast<Series>(s), at);
    }
  }
}

// ------------------------------------------------------------------------------- live table

std::vector<LiveRow> LiveRows(const TimelineModel& model, const MemoryState& state,
                              const std::string& filter, LiveSortKey key, bool descending) {
  std::vector<LiveRow> rows;
  const std::string needle = Lower(filter);
  auto add = [&](const LiveChunk& chunk) {
    std::string tag = chunk.tag == traces::kNoTag ? std::string() : model.TagName(chunk.tag);
    if (!needle.empty() && Lower(tag).find(needle) == std::string::npos) return;
    const std::uint64_t age = state.event_index >= chunk.alloc_event ? state.event_index - chunk.alloc_event : 0;
    rows.push_back({chunk, std::move(tag), age});
  };
  for (const RegionState& region : state.regions) {
    for (const LiveChunk& chunk : region.chunks) add(chunk);
  }
  for (const LiveChunk& chunk : state.outside_regions) add(chunk);
  auto less = [key](const LiveRow& a, const LiveRow& b) {
    switch (key) {
      case LiveSortKey::kSize:
        if (a.chunk.size != b.chunk.size) return a.chunk.size < b.chunk.size;
        break;
      case LiveSortKey::kRequested:
        if (a.chunk.requested != b.chunk.requested) return a.chunk.requested < b.chunk.requested;
        break;
      case LiveSortKey::kAge:
        if (a.age != b.age) return a.age < b.age;
        break;
      case LiveSortKey::kTag:
        if (a.tag != b.tag) return a.tag < b.tag;
        break;
      case LiveSortKey::kAddress:
        break;
    }
    return a.chunk.address < b.chunk.address;
  };
  if (descending) {
    std::stable_sort(rows.begin(), rows.end(), [&](const LiveRow& a, const LiveRow& b) { return less(b, a); });
  } else {
    std::stable_sort(rows.begin(), rows.end(), less);
  }
  return rows;
}

std::optional<std::uint64_t> FindFreeEvent(const TimelineModel& model, std::uint32_t device,
                                           std::uint64_t address, std::uint64_t from,
                                           std::uint64_t max_events, std::uint64_t* searched_to) {
  const std::uint64_t n = model.event_count();
  const std::uint64_t end = max_events >= n ? n : std::min(n, from + 1 + max_events);
  for (std::uint64_t i = from + 1; i < end; ++i) {
    const traces::Event e = model.event(i);
    if (e.type == traces::EventType::kFree && e.device == device && e.address == address) {
      if (searched_to != nullptr) *searched_to = i;
      return i;
    }
  }
  if (searched_to != nullptr) *searched_to = end;
  return std::nullopt;
}

// ------------------------------------------------------------------------------- compare

namespace {

class VectorSink final : public traces::EventSink {
 public:
  void Record(traces::Event& event) override {
    event.seq = events_.size();
    events_.push_back(event);
  }
  traces::TagId Intern(std::string_view text) override { return tags_.Intern(text); }
  std::vector<traces::Event>& events() { return events_; }
  std::vector<std::string> names() const { return tags_.Names(); }

 private:
  std::vector<traces::Event> events_;
  traces::TagTable tags_;
};

}  // namespace

ReplayTimeline ReplayToTimeline(const AllocationSequence& sequence, ReplayOptions options) {
  VectorSink sink;
  options.continue_past_oom = true;
  options.record = &sink;
  ReplayTimeline out;
  options.record_source_seq = &out.source_seq;
  out.result = Replay(sequence, options);
  const std::vector<std::string> names = sink.names();
  std::vector<traces::Event>& events = sink.events();
  bool done = false;
  BlockSource source = [&](std::vector<traces::Event>* block) {
    if (done) return false;
    block->swap(events);
    done = true;
    return true;
  };
  TimelineOptions timeline_options;
  timeline_options.tags = &names;
  out.model = TimelineModel::Build(out.result.header, source, timeline_options);
  // The model keeps every event the replay recorded, in order; were that ever not so, SideCursor
  // would point at the wrong event, so it falls back to none rather than guess.
  if (out.source_seq.size() != out.model->event_count() ||
      !std::is_sorted(out.source_seq.begin(), out.source_seq.end())) {
    out.source_seq.clear();
  }
  return out;
}

std::uint64_t ReplayTimeline::SideCursor(std::uint64_t seq) const {
  const auto after = std::upper_bound(source_seq.begin(), source_seq.end(), seq);
  return after == source_seq.begin() ? 0 : static_cast<std::uint64_t>(after - source_seq.begin()) - 1;
}

}  // namespace fragscope::analysis
