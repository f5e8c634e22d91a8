// The timeline model's public face. The work is in the private helpers:
//   timeline_store.*  compact event records (40 B per event), rebuilt into traces::Event on demand
//   timeline_pmap.*   the copy-on-write chunk map that keyframes share
//   timeline_build.cpp the indexing pass: state, series pyramid, keyframes, peaks, warnings
//   timeline_state.cpp StateAt: nearest keyframe + replay of at most K events
//   timeline_series.cpp ValueAt and Downsample over the min/max pyramid
//   timeline_fragmentation.* external fragmentation over time: its own pass (on first use) and pyramid
// See timeline_impl.hpp for the memory layout and the keyframe policy.
#include "fragscope/analysis/timeline.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "fragscope/traces/byte_math.hpp"

#include "recorded_pages.hpp"
#include "snapshot_oom.hpp"
#include "timeline_impl.hpp"

namespace fragscope::analysis {

using namespace timeline_detail;

struct TimelineModel::Impl : ModelData {};

TimelineModel::TimelineModel() : impl_(std::make_unique<Impl>()) {}
TimelineModel::~TimelineModel() = default;

std::unique_ptr<TimelineModel> TimelineModel::Build(const traces::TraceHeader& header,
                                                    const BlockSource& blocks,
                                                    const TimelineOptions& options) {
  std::unique_ptr<TimelineModel> model(new TimelineModel());
  Impl& m = *model->impl_;
  m.header = header;
  m.keyframe_interval = std::max<std::uint32_t>(1, options.keyframe_interval);

  // Every block once, into compact records; with a guess of the event count, the index follows
  // each block while the source reads the next (two threads busy instead of one after the other).
  const bool streaming = static_cast<bool>(options.expected_events);
  StreamingIndex index(m, options.keyframe_budget_bytes, streaming ? Progress{} : options.progress);
  std::vector<traces::Event> block;
  while (blocks(&block)) {
    for (const traces::Event& event : block) m.store.Append(event);
    block.clear();
    if (streaming) index.Advance(m.store.flushed(), options.expected_events());
  }
  m.store.Finish();
  index.Advance(m.store.size(), m.store.size());
  if (options.tags != nullptr) m.tags = *options.tags;
  if (options.source_warnings != nullptr) m.warnings = *options.source_warnings;
  index.Finish();
  if (streaming && options.progress) options.progress(m.store.size(), m.store.size());

  // Devices: those with events and those the header describes.
  for (std::uint32_t id : m.store.device_ids()) m.devices.push_back(id);
  for (const auto& d : header.devices) m.devices.push_back(d.index);
  std::sort(m.devices.begin(), m.devices.end());
  m.devices.erase(std::unique(m.devices.begin(), m.devices.end()), m.devices.end());

  // Utilization and fragmentation at the first event where reserved reached its peak.
  for (DeviceData& d : m.device_data) {
    if (d.peak_reserved_event == kNone) continue;
    const MemoryState state = timeline_detail::StateAt(m, d.id, d.peak_reserved_event);
    d.metrics.utilization_at_peak = Utilization(d.in_use_at_peak_reserved, d.metrics.peak_reserved);
    // Where the evidence gives reserved memory as a total only, the holes are unknown: NaN, which
    // reports print as "-" and JSON as null (metrics.hpp).
    d.metrics.fragmentation_at_peak = header.source.ReservedWithoutLayout(d.id)
                                          ? std::numeric_limits<double>::quiet_NaN()
                                          : ExternalFragmentation(state.largest_hole, state.free_in_regions);
  }
  return model;
}

const traces::TraceHeader& TimelineModel::header() const { return impl_->header; }
std::uint64_t TimelineModel::event_count() const { return impl_->store.size(); }
const std::vector<std::uint32_t>& TimelineModel::devices() const { return impl_->devices; }

traces::Event TimelineModel::event(std::uint64_t index) const {
  if (index >= impl_->store.size()) {
    throw std::out_of_range(fmt::format("event {} of a trace of {} events", index, impl_->store.size()));
  }
  return impl_->store.Get(index);
}

std::string TimelineModel::TagName(traces::TagId id) const { return impl_->TagName(id); }

DeviceMetrics TimelineModel::Metrics(std::uint32_t device) const {
  const DeviceData* d = impl_->Find(device);
  if (d == nullptr) {
    DeviceMetrics none;
    none.device = device;
    return none;
  }
  return d->metrics;
}

const std::vector<Marker>& TimelineModel::markers() const { return impl_->markers; }

namespace {

// What an OOM of unknown cause does say: the request, and what the evidence lacks.
std::string UnknownCauseExplanation(const traces::OomRecord& numbers) {
  // TensorFlow's "RESOURCE_EXHAUSTED: failed to allocate memory" gives no size: what the limit and
  // the bytes in use say is the size from which on it would be capacity.
  if (!numbers.Has(traces::kOomRequest)) {
    if (numbers.Has(traces::kOomLimit | traces::kOomInUse) && numbers.limit > 0 && numbers.in_use <= numbers.limit)
      return fmt::format("a request of unknown size failed (the evidence does not give it) with {} in use of the {} "
                         "limit: a request above the {} left is capacity, a smaller one {}",
                         traces::FormatBytes(numbers.in_use), traces::FormatBytes(numbers.limit),
                         traces::FormatBytes(numbers.limit - numbers.in_use),
                         // Regions that fill the limit leave no room for a new one: nothing to refuse.
                         numbers.Has(traces::kOomReserved) && numbers.reserved >= numbers.limit
                             ? "fragmentation (the regions already fill the limit)"
                             : "a device that refused more memory or fragmentation");
    return "a request of unknown size failed (the evidence does not give it), so its cause cannot be told";
  }
  const std::string request = traces::FormatBytes(numbers.rounded != 0 ? numbers.rounded : numbers.request);
  if ((!numbers.Has(traces::kOomInUse) || numbers.in_use == 0) &&
      (!numbers.Has(traces::kOomReserved) || numbers.reserved == 0)) {
    return fmt::format("a request of {} failed; the evidence keeps no limit and no state of the "
                       "memory (only the request survived), so capacity and fragmentation cannot be "
                       "told apart",
                       request);
  }
  // The limit and the bytes in use rule capacity out; without the reserved bytes, a device that
  // refused a new region and fragmentation look alike.
  if (numbers.Has(traces::kOomLimit | traces::kOomInUse | traces::kOomRounded) && numbers.limit > 0 &&
      !numbers.Has(traces::kOomReserved) && numbers.rounded <= numbers.limit &&
      numbers.in_use <= numbers.limit - numbers.rounded) {
    return fmt::format("a request of {} failed with {} in use, within the limit of {}; the evidence gives no "
                       "reserved bytes, so a device that refused more memory (backing) and fragmentation cannot "
                       "be told apart",
                       request, traces::FormatBytes(numbers.in_use), traces::FormatBytes(numbers.limit));
  }
  return fmt::format("a request of {} failed with {} in use; the evidence gives {}, so capacity and "
                     "fragmentation cannot be told apart",
                     request, traces::FormatBytes(numbers.in_use),
                     !numbers.Has(traces::kOomLimit) || numbers.limit == 0 ? "no limit" : "no free space");
}

}  // namespace

std::vector<OomDiagnosis> TimelineModel::Ooms(std::uint32_t device) const {
  std::vector<OomDiagnosis> out;
  const DeviceData* d = impl_->Find(device);
  if (d == nullptr) return out;
  const bool fragscope_trace = impl_->header.source_format == "fragscope";
  for (std::size_t i = 0; i < d->oom_events.size(); ++i) {
    const std::uint64_t index = d->oom_events[i];
    const traces::Event e = impl_->store.Get(index);
    OomDiagnosis& diagnosis = out.emplace_back();
    diagnosis.seq = e.seq;
    diagnosis.event_index = index;
    const traces::OomCause recorded = e.oom.cause;
    const MemoryState state = timeline_detail::StateAt(*impl_, device, index);
    const std::uint64_t want = e.oom.rounded != 0 ? e.oom.rounded : e.oom.request;
    // A paging allocator's fragmentation is memory stranded in partly used pages: say it in pages,
    // as the allocator did when it failed.
    std::optional<PageFacts> pages;
    if (recorded == traces::OomCause::kFragmentation && i < d->oom_spaces.size()) {
      pages = PageFactsAt(state, d->oom_spaces[i],
                          RecordedPageBytes(d->map_gcd, fragscope_trace, e.oom.Has(traces::kOomLimit) ? e.oom.limit : 0),
                          want);
    }
    // A PyTorch snapshot's OOM is said in PyTorch's terms: its segment sizes, streams and pools.
    const bool in_pytorch_terms = impl_->header.source_format == "pytorch-snapshot" &&
                                  ExplainSnapshotOom(impl_->header, device, e, state, diagnosis);
    if (!in_pytorch_terms) {
      diagnosis.report = DiagnoseOom(device, e.oom, recorded == traces::OomCause::kBacking, pages ? &*pages : nullptr);
    }
    if (in_pytorch_terms) {
      // ExplainSnapshotOom kept the recorded cause and gave the words.
    } else if (recorded == traces::OomCause::kUnknown) {
      // Evidence that lacks what would decide (no limit, no free space): say so, never guess.
      diagnosis.report.numbers.cause = recorded;
      diagnosis.report.explanation = UnknownCauseExplanation(e.oom);
      // A state (one moment) cannot be replayed: what decides it there is a fuller dump.
      diagnosis.report.suggestion =
          !e.oom.Has(traces::kOomRequest)
              ? "find the size of the failed request (the \"ran out of memory trying to allocate\" line TensorFlow "
                "prints before its dump, or the tensor shape of the failing op): with it these numbers decide the "
                "cause"
          : impl_->header.kind == traces::EvidenceKind::kState && e.oom.Has(traces::kOomLimit)
              ? "find the whole dump (its chunk list uncut) or one that prints the reserved bytes (the pool "
                "line's \"Total bytes in pool\", TensorFlow 2.x's Stats Reserved): with them the cause follows"
          : impl_->header.kind == traces::EvidenceKind::kState
              ? "find the limit the run had (TensorFlow prints it in the Stats block of a full dump, "
                "XLA in its memory statistics): with the limit and the chunk list the cause follows"
              : "give the limit the run had to decide it: replay the trace under it (fragscope replay "
                "TRACE --alloc-conf limit=SIZE), which explains the first OOM it meets";
    } else if (diagnosis.report.numbers.cause != recorded) {
      // Keep what the allocator said; note what the numbers alone say.
      diagnosis.report.explanation = fmt::format(
          "recorded as {} (by its numbers alone: {}: {})", traces::ToString(recorded),
          traces::ToString(diagnosis.report.numbers.cause), diagnosis.report.explanation);
      diagnosis.report.numbers.cause = recorded;
    }
    diagnosis.report.stream = e.stream;
    diagnosis.report.tag = e.tag;
    if (diagnosis.framework_advice.empty()) {
      diagnosis.framework_advice = AdviceInFrameworkTerms(impl_->header, diagnosis.report.numbers.cause);
    }

    // A state whose layout is incomplete (a cut dump) has ranges its listing left out: not known
    // to be free, so no hole is named (the state summary of the moment says whether it is whole).
    const traces::StateSummary* moment = nullptr;
    for (const traces::StateSummary& s : impl_->header.source.states) {
      if (s.device == device && s.at_seq >= e.seq) {
        moment = &s;
        break;
      }
    }
    // Reserved memory known only as a running total (torch.profiler) lies at invented addresses:
    // its regions' free ranges are no holes either.
    const bool no_layout = impl_->header.source.ReservedWithoutLayout(device);
    std::vector<Hole> holes;
    for (const RegionState& region : state.regions) {
      if (no_layout || (moment != nullptr && !moment->layout_complete)) break;
      holes.insert(holes.end(), region.holes.begin(), region.holes.end());
    }
    auto distance = [want](const Hole& h) { return h.size > want ? h.size - want : want - h.size; };
    auto nearer = [&](const Hole& a, const Hole& b) {
      if (distance(a) != distance(b)) return distance(a) < distance(b);
      if (a.size != b.size) return a.size > b.size;
      return a.address < b.address;
    };
    const std::size_t keep = std::min<std::size_t>(5, holes.size());
    std::partial_sort(holes.begin(), holes.begin() + static_cast<std::ptrdiff_t>(keep), holes.end(), nearer);
    holes.resize(keep);
    std::sort(holes.begin(), holes.end(), [](const Hole& a, const Hole& b) {
      return a.size != b.size ? a.size > b.size : a.address < b.address;
    });
    diagnosis.nearest_holes = std::move(holes);
  }
  return out;
}

MemoryState TimelineModel::StateAt(std::uint32_t device, std::uint64_t index) const {
  return timeline_detail::StateAt(*impl_, device, index);
}

std::uint64_t TimelineModel::ValueAt(std::uint32_t device, Series series, std::uint64_t index) const {
  return timeline_detail::ValueAt(*impl_, device, series, index);
}

void TimelineModel::Downsample(std::uint32_t device, Series series, std::uint64_t begin,
                               std::uint64_t end, std::uint32_t columns,
                               std::vector<std::uint64_t>* min,
                               std::vector<std::uint64_t>* max) const {
  timeline_detail::Downsample(*impl_, device, series, begin, end, columns, min, max);
}

void TimelineModel::DownsampleAll(std::uint32_t device, std::uint64_t begin, std::uint64_t end, std::uint32_t columns,
                                  std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]) const {
  timeline_detail::DownsampleAll(*impl_, device, begin, end, columns, min, max);
}

std::pair<std::uint64_t, std::uint64_t> TimelineModel::ColumnSlice(std::uint64_t begin, std::uint64_t end,
                                                                    std::uint32_t columns, std::uint32_t c) {
  __extension__ using U128 = unsigned __int128;
  const std::uint64_t width = end - begin;
  const auto lo = begin + static_cast<std::uint64_t>(U128{c} * width / columns);
  auto hi = begin + static_cast<std::uint64_t>(U128{c + std::uint64_t{1}} * width / columns);
  if (hi <= lo) hi = lo + 1;  // more columns than events: a column shows the event at its start
  return {lo, hi};
}

std::uint64_t TimelineModel::ArgMax(std::uint32_t device, Series series, std::uint64_t begin,
                                    std::uint64_t end) const {
  return timeline_detail::ArgMax(*impl_, device, series, begin, end);
}

std::vector<std::uint64_t> TimelineModel::FirstFrees(std::uint32_t device, const std::vector<std::uint64_t>& addresses,
                                                     std::uint64_t from, std::uint64_t to) const {
  std::vector<std::uint64_t> out(addresses.size(), to);
  const DeviceData* d = impl_->Find(device);
  to = std::min(to, impl_->store.size());
  if (d == nullptr || addresses.empty()) return out;
  std::unordered_map<std::uint64_t, std::size_t> wanted;
  wanted.reserve(addresses.size());
  for (std::size_t i = 0; i < addresses.size(); ++i) wanted.emplace(addresses[i], i);
  std::size_t left = wanted.size();
  for (std::uint64_t j = from + 1; j < to && left > 0; ++j) {
    const timeline_detail::Record& r = impl_->store.record(j);
    if (r.device != d->index || r.type != static_cast<std::uint8_t>(traces::EventType::kFree) ||
        !(r.flags & timeline_detail::kApplied)) {
      continue;
    }
    if (const auto it = wanted.find(r.address); it != wanted.end()) {
      out[it->second] = j;
      wanted.erase(it);
      --left;
    }
  }
  return out;
}

void TimelineModel::PrepareFragmentation() const { impl_->Fragmentation(); }
bool TimelineModel::FragmentationReady() const { return impl_->fragmentation_ready.load(std::memory_order_acquire); }

double TimelineModel::FragmentationAt(std::uint32_t device, std::uint64_t index) const {
  return timeline_detail::FragmentationAt(*impl_, impl_->Fragmentation(), device, index);
}

void TimelineModel::DownsampleFragmentation(std::uint32_t device, std::uint64_t begin, std::uint64_t end,
                                            std::uint32_t columns, std::vector<float>* min,
                                            std::vector<float>* max) const {
  timeline_detail::DownsampleFragmentation(*impl_, impl_->Fragmentation(), device, begin, end, columns, min, max);
}

FragmentationSummary TimelineModel::Fragmentation(std::uint32_t device) const {
  const FragmentationData& data = impl_->Fragmentation();
  const auto it = impl_->device_slot.find(device);
  return it == impl_->device_slot.end() ? FragmentationSummary{} : data.devices[it->second].summary;
}

const std::vector<std::string>& TimelineModel::warnings() const { return impl_->warnings; }

TimelineFootprint TimelineModel::footprint() const {
  const Impl& m = *impl_;
  TimelineFootprint f;
  f.events_bytes = m.store.bytes();
  for (const DeviceData& d : m.device_data) {
    f.series_bytes += d.l1.capacity() * sizeof(L1Block) + d.l2.capacity() * sizeof(L2Block) +
                      (d.l1_at.capacity() + d.l2_at.capacity()) * sizeof(std::uint64_t);
  }
  f.keyframe_bytes = m.keyframe_bytes;
  f.keyframes = m.keyframe_count;
  f.other_bytes = m.overrides.capacity() * sizeof(Override) + m.markers.capacity() * sizeof(Marker);
  for (const Marker& marker : m.markers) f.other_bytes += marker.name.capacity() > 15 ? marker.name.capacity() : 0;
  for (const std::string& w : m.warnings) f.other_bytes += w.capacity() + sizeof(std::string);
  return f;
}

}  // namespace fragscope::analysis
