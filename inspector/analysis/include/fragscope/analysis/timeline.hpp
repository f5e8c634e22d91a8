// The read-only timeline model of a trace, shared by `fragscope report`, the compare view and every
// panel of the inspector: per-device series of in use, reserved and LOAD; peaks; markers and OOMs;
// and the full memory state (regions, chunks, holes) at any event, from the nearest keyframe plus
// at most `keyframe_interval` events, never a replay from the start.
//
// It reads what the trace recorded (region_reserve/release, alloc/free, oom, marker), so it works
// for any trace whatever allocator wrote it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
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
  Progress progress;                       // (bytes read, total bytes)
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
  const traces::Event& event(std::uint64_t index) const;
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
  void Downsample(std::uint32_t device, Series series, std::uint64_t begin, std::uint64_t end,
                  std::uint32_t columns, std::vector<std::uint64_t>* min,
                  std::vector<std::uint64_t>* max) const;

  // Warnings met while reading (frees of unknown addresses, a truncated file, ...).
  const std::vector<std::string>& warnings() const;

 private:
  TimelineModel();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fragscope::analysis
