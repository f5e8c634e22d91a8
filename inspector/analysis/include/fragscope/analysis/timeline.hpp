// The read-only timeline model of a trace, shared by `fragscope report`, the compare view and every
// panel of the inspector: per-device series of in use, reserved and LOAD; peaks; markers and OOMs;
// and the full memory state (regions, chunks, holes) at any event, from the nearest keyframe plus
// at most `keyframe_interval` events, never a replay from the start.
//
// It reads what the trace recorded (region_reserve/release, alloc/free, oom, marker), so it works
// for any trace whatever allocator wrote it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/metrics.hpp"
#include "fragscope/analysis/oom_diagnosis.hpp"
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

enum class Series : std::uint8_t { kInUse, kReserved, kLoad };

struct TimelineOptions {
  std::uint32_t keyframe_interval = 4096;  // K: events between keyframes
  // Called as (events indexed, event count) while the read events are indexed after the read
  // (without expected_events); with it, once at the end: the BlockSource knows the bytes read and
  // can report them itself.
  Progress progress;
  // The source's best guess of the total event count so far (0: none yet), callable on the thread
  // that calls Build while the source reads on its own. Given, each block is indexed as soon as it
  // is stored, while the source reads the next ones (the keyframe budget is spent pro rata over
  // the guess); without it, the index waits for the last block and spends it over the exact count.
  std::function<std::uint64_t()> expected_events;
  // Tag and marker names by id - 1 (e.g. &TraceReader::tags()). Read once, after the last block,
  // so a list that grows while blocks are read is complete by then. nullptr: names are "tag N".
  const std::vector<std::string>* tags = nullptr;
  // Warnings of the source (e.g. &TraceReader::warnings(): a truncated file), read after the last
  // block and listed first in warnings().
  const std::vector<std::string>* source_warnings = nullptr;
  // Most bytes all keyframes together may hold. Spent pro rata over the trace: where keyframes
  // would cost more (a large live set that changes everywhere), they are taken less often, so
  // StateAt replays more events there instead of the model outgrowing memory.
  std::uint64_t keyframe_budget_bytes = std::uint64_t{1} << 30;
};

// What the model holds in memory, for diagnostics and benchmarks.
struct TimelineFootprint {
  std::uint64_t events_bytes = 0;     // compact event records and their side tables
  std::uint64_t series_bytes = 0;     // min/max pyramid of the series
  std::uint64_t keyframe_bytes = 0;   // keyframes (estimated: leaves and lists they keep alive)
  std::uint64_t keyframes = 0;        // keyframes with a state of their own (all devices)
  std::uint64_t other_bytes = 0;      // markers, overrides, warnings
  std::uint64_t total() const { return events_bytes + series_bytes + keyframe_bytes + other_bytes; }
};

struct LiveChunk {
  std::uint64_t address = 0;
  std::uint64_t size = 0;         // rounded
  std::uint64_t requested = 0;
  std::uint64_t alloc_id = 0;
  std::uint64_t alloc_event = 0;  // index of the alloc event (its age)
  std::uint64_t stream = 0;
  traces::TagId tag = traces::kNoTag;
};

struct RegionState {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::vector<LiveChunk> chunks;  // by address
  std::vector<Hole> holes;        // free ranges between chunks, by address
};

// The memory of one device right after event `event_index`.
struct MemoryState {
  std::uint32_t device = 0;
  std::uint64_t event_index = 0;
  std::uint64_t in_use = 0, reserved = 0, live_requested = 0;
  std::uint64_t largest_hole = 0, free_in_regions = 0;
  std::vector<RegionState> regions;  // by address
  std::vector<LiveChunk> outside_regions;  // allocations in no recorded region (imported traces)
};

// External fragmentation (metrics.hpp: 1 - largest hole / free bytes in regions) over one device's
// whole history: the moments that say most about it, with the bytes behind them.
struct FragmentationSummary {
  bool had_free = false;  // some event left free bytes in regions (else every value is 0)
  // The highest ratio after any event (the first event that reached it) and the bytes then. A ratio
  // near 1 over a few free bytes says little: read it with its bytes.
  double highest = 0.0;
  std::uint64_t highest_event = 0, highest_free = 0, highest_largest = 0;
  // The most free bytes outside the largest hole (free in regions - largest hole): memory that no
  // single request larger than the largest hole could use. 0 when the free memory was always one hole.
  std::uint64_t most_stranded = 0;
  std::uint64_t stranded_event = 0, stranded_free = 0, stranded_largest = 0;
};

struct Marker {
  std::uint64_t event_index = 0;
  std::uint32_t device = 0;
  std::string name;
};

class TimelineModel {
 public:
  // Reads every block once. Throws traces::TraceError on an unreadable source.
  static std::unique_ptr<TimelineModel> Build(const traces::TraceHeader& header,
                                              const BlockSource& blocks,
                                              const TimelineOptions& options = {});
  ~TimelineModel();

  const traces::TraceHeader& header() const;
  std::uint64_t event_count() const;
  const std::vector<std::uint32_t>& devices() const;
  // The event as read. By value: events are stored compactly (40 B) and rebuilt on demand.
  // Throws std::out_of_range for index >= event_count().
  traces::Event event(std::uint64_t index) const;
  std::string TagName(traces::TagId id) const;

  DeviceMetrics Metrics(std::uint32_t device) const;
  const std::vector<Marker>& markers() const;
  // OOM events as recorded, with the nearest holes from the state at that moment.
  std::vector<OomDiagnosis> Ooms(std::uint32_t device) const;

  // The state of `device` after event `index` (events of other devices do not change it).
  MemoryState StateAt(std::uint32_t device, std::uint64_t index) const;

  // Value of a series of `device` right after event `index`.
  std::uint64_t ValueAt(std::uint32_t device, Series series, std::uint64_t index) const;
  // Level of detail: min and max of a series over `columns` equal slices of events [begin, end),
  // so a plot of any zoom draws one column per pixel. Both outputs get `columns` entries.
  // Column c covers events [begin + c*n/columns, begin + (c+1)*n/columns), n = end - begin (end is
  // clamped to event_count()); with more columns than events a column shows the event at its
  // start; an empty range gives the value after event `begin` in every column.
  void Downsample(std::uint32_t device, Series series, std::uint64_t begin, std::uint64_t end,
                  std::uint32_t columns, std::vector<std::uint64_t>* min,
                  std::vector<std::uint64_t>* max) const;
  // Downsample of the three series in one walk (a plot draws all three): min[s] and max[s] for
  // Series s (kInUse, kReserved, kLoad), the same numbers as three calls, one pass over the records.
  void DownsampleAll(std::uint32_t device, std::uint64_t begin, std::uint64_t end, std::uint32_t columns,
                     std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]) const;
  // The events [first, second) that Downsample gives column c of `columns` over [begin, end)
  // (begin < end, end already clamped): at least one event.
  static std::pair<std::uint64_t, std::uint64_t> ColumnSlice(std::uint64_t begin, std::uint64_t end,
                                                             std::uint32_t columns, std::uint32_t c);
  // The first event of [begin, end) after which `series` of `device` is at its maximum over the
  // range; with an empty range, `begin` (clamped to the last event). From the same pyramid as
  // Downsample: whole blocks are skipped by their max, at most two 64-event blocks are scanned.
  std::uint64_t ArgMax(std::uint32_t device, Series series, std::uint64_t begin, std::uint64_t end) const;
  // For each address (allocations of `device` live after event `from`, each address once): the
  // first event in (from, to) that frees it, or `to` when none does. One pass over the compact
  // records, ending early once every address is found.
  std::vector<std::uint64_t> FirstFrees(std::uint32_t device, const std::vector<std::uint64_t>& addresses,
                                        std::uint64_t from, std::uint64_t to) const;

  // External fragmentation over time. Not computed by Build: the first call of any of these runs
  // one more pass over the events (about as long as Build's index; thread-safe, the others wait for
  // it), which PrepareFragmentation starts without asking anything, e.g. on a worker thread.
  void PrepareFragmentation() const;
  // Whether that pass has run (then the calls below return at once).
  bool FragmentationReady() const;
  // After event `index` (clamped), to within 1.5e-5 (values are stored as 16-bit fractions).
  double FragmentationAt(std::uint32_t device, std::uint64_t index) const;
  // Min and max over the columns of Downsample (the same slices), as ratios in [0, 1].
  void DownsampleFragmentation(std::uint32_t device, std::uint64_t begin, std::uint64_t end,
                               std::uint32_t columns, std::vector<float>* min, std::vector<float>* max) const;
  FragmentationSummary Fragmentation(std::uint32_t device) const;

  // Warnings met while reading (frees of unknown addresses, a truncated file, ...).
  const std::vector<std::string>& warnings() const;

  TimelineFootprint footprint() const;

 private:
  TimelineModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fragscope::analysis
