// What the inspector's panels draw, computed without a window: the memory-map layout (with the rule
// that no free hole is lost to pixel rounding), the free-size histogram, cursor seeking by step and
// by OOM, the visible range of the timeline (zoom, pan), columns by time, the live-allocation rows
// (filter, sort) and a replay recorded into a timeline (the compare view). No ImGui here: the GUI
// (inspector/gui/) draws these, the tests check them.
#pragma once

#include <cstdint>
#include <utility>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

// ------------------------------------------------------------------------------- memory map

// The regions of one MemoryState laid end to end on one byte axis (in address order, no gaps
// between regions), then allocations outside any region. Each chunk and hole is an item. A range
// of a region that no listed chunk covers, in a state whose listing is cut, is kUnlisted: not
// known to be free (MapOptions::holes_unlisted).
enum class MapItemKind : std::uint8_t { kChunk, kHole, kUnlisted };
struct MapItem {
  std::uint64_t offset = 0;   // on the layout's byte axis
  std::uint64_t address = 0;
  std::uint64_t size = 0;
  std::uint32_t region = 0;   // index in MemoryState::regions; regions.size() for outside chunks
  std::uint32_t index = 0;    // into that region's chunks or holes (or outside_regions)
  MapItemKind kind = MapItemKind::kChunk;
};

enum class CellKind : std::uint8_t { kEmpty, kUsed, kFree, kUnlisted };
struct MapCell {
  static constexpr std::uint32_t kNoItem = 0xffffffffu;
  CellKind kind = CellKind::kEmpty;   // kEmpty: past the end of the laid-out bytes
  std::uint32_t item = kNoItem;       // the item the cell shows (index into MapLayout::items)
};

struct MapLayout {
  std::uint64_t total_bytes = 0;               // the byte axis: the items', or MapOptions::min_bytes
  std::uint64_t laid_out_bytes = 0;            // the items' bytes on it (cells past them are kEmpty)
  std::vector<MapItem> items;                  // by offset
  std::vector<std::uint64_t> region_offsets;   // where each region starts on the byte axis
  std::vector<MapCell> cells;
  // Cell c covers bytes [CellBegin(c), CellBegin(c + 1)).
  std::uint64_t CellBegin(std::uint64_t cell) const;
  // The cell that holds byte `offset` (offset < total_bytes).
  std::uint32_t CellOf(std::uint64_t offset) const;
};

struct MapOptions {
  // The state's listing is cut (a TensorFlow dump whose chunk list is not all in the log,
  // StateFindings::layout_complete false): its holes are ranges the dump left out, items and cells
  // of kind kUnlisted, never kFree.
  bool holes_unlisted = false;
  // The byte axis spans at least this many bytes; the cells past the items stay kEmpty. Evidence
  // without regions (an RMM log) has its allocations end to end and nothing else: on an axis of
  // their own bytes alone, one 256 B allocation filled the whole map as if it were a full device.
  std::uint64_t min_bytes = 0;
};

// Lays `state` out over `cells` cells (a panel draws them row by row). Each cell shows the item
// with the most bytes in it (a hole on a tie), except that every hole gets at least one free cell
// among the cells it overlaps: the cell where it has the most bytes is made free when none is.
// So a hole of any size stays visible; small chunks may vanish between holes, holes never do.
// Unlisted ranges (options.holes_unlisted) are kept visible the same way.
MapLayout LayoutMemoryMap(const MemoryState& state, std::uint32_t cells, const MapOptions& options = {});

// The smallest byte axis for a map of evidence without regions (MapOptions::min_bytes): the most
// ever in use on the device (so the map keeps one scale as the cursor moves), and at least
// kMinCellBytes per cell, the allocator's granularity: a cell of less says nothing.
inline constexpr std::uint64_t kMinCellBytes = 256;
std::uint64_t AxisWithoutRegions(std::uint64_t peak_in_use, std::uint32_t cells);

// ------------------------------------------------------------------------------- histogram

// Free holes by size class: bucket k holds holes of [256 B << k, 256 B << (k+1)) (bucket 0 also
// the smaller ones), the allocator's bins. Buckets up to the largest hole; none when no holes.
struct SizeBucket {
  std::uint64_t lower = 0, upper = 0;  // [lower, upper)
  std::uint64_t count = 0, bytes = 0;
};
std::vector<SizeBucket> FreeSizeHistogram(const MemoryState& state);

// ------------------------------------------------------------------------------- cursor

// Where the cursor can jump: step begins (markers named "step N begin", or any "step..." marker
// when none says begin) and OOM events, as event indices, ascending.
class CursorIndex {
 public:
  CursorIndex() = default;
  // Steps numbered 0, 1, 2, ... in event order.
  CursorIndex(std::vector<std::uint64_t> steps, std::vector<std::uint64_t> ooms);
  // Steps as (event index, the step's own number), e.g. from "step 3 begin" markers.
  CursorIndex(std::vector<std::pair<std::uint64_t, std::uint64_t>> numbered_steps, std::vector<std::uint64_t> ooms);
  static CursorIndex FromModel(const TimelineModel& model, const std::vector<std::uint64_t>& oom_events);

  // The first step / OOM strictly after `from`, or `from` when there is none.
  std::uint64_t NextStep(std::uint64_t from) const;
  std::uint64_t PrevStep(std::uint64_t from) const;  // strictly before
  std::uint64_t NextOom(std::uint64_t from) const;   // wraps to the first OOM after the last
  std::uint64_t PrevOom(std::uint64_t from) const;
  // The number of the step whose begin is the last one at or before `event` ("step 3 begin" makes
  // 3); empty before the first step.
  std::optional<std::uint64_t> StepAt(std::uint64_t event) const;
  const std::vector<std::uint64_t>& steps() const { return steps_; }
  const std::vector<std::uint64_t>& ooms() const { return ooms_; }

 private:
  std::vector<std::uint64_t> steps_, ooms_;
  std::vector<std::uint64_t> step_numbers_;  // parallel to steps_
};

// A cursor move by keys, clamped to [0, count): events ±1, pages ±page, Home/End.
std::uint64_t MoveCursor(std::uint64_t cursor, std::int64_t delta, std::uint64_t count);

// ------------------------------------------------------------------------------- timeline view

// The visible part of an axis of `total` units (events or nanoseconds): [begin, end).
struct ViewRange {
  double begin = 0, end = 1;
  double span() const { return end - begin; }
  // Zooms by `factor` (< 1 in, > 1 out) keeping `anchor` (an axis position) where it is on screen;
  // the span stays within [min_span, total]; the range stays inside [0, total].
  void Zoom(double anchor, double factor, double min_span, double total);
  void Pan(double delta, double total);  // moves by delta axis units, clamped
  void Clamp(double total);
  // Axis position at fraction x in [0, 1] of the width, and back.
  double At(double x) const { return begin + x * span(); }
  double Fraction(double position) const { return span() <= 0 ? 0 : (position - begin) / span(); }
};

// Event index boundaries of `columns` equal time slices of [t0, t1): entry c is the first event
// with time >= t0 + c*(t1-t0)/columns (columns + 1 entries). Needs non-decreasing timestamps.
std::vector<std::uint64_t> ColumnsByTime(const TimelineModel& model, double t0, double t1,
                                         std::uint32_t columns);
// The first event with time_ns >= t (event_count() when none).
std::uint64_t EventAtTime(const TimelineModel& model, double t);
// Min and max of a series over each [bounds[c], bounds[c+1]) (an empty slice: the value after the
// event before it, or after event 0). Like Downsample, one entry per column.
void DownsampleRanges(const TimelineModel& model, std::uint32_t device, Series series,
                      const std::vector<std::uint64_t>& bounds, std::vector<std::uint64_t>* min,
                      std::vector<std::uint64_t>* max);
// The same for the three series at once (min[s], max[s] for Series s), one walk per slice.
void DownsampleRangesAll(const TimelineModel& model, std::uint32_t device, const std::vector<std::uint64_t>& bounds,
                         std::vector<std::uint64_t> min[3], std::vector<std::uint64_t> max[3]);

// ------------------------------------------------------------------------------- live table

struct LiveRow {
  LiveChunk chunk;
  std::string tag;
  std::uint64_t age = 0;  // events since its alloc, at the cursor
};
enum class LiveSortKey : std::uint8_t { kAddress, kSize, kRequested, kAge, kTag };
// The live allocations of `state` (in regions and outside), those whose tag contains `filter`
// (case-insensitive; empty: all), sorted by `key` (ties by address).
std::vector<LiveRow> LiveRows(const TimelineModel& model, const MemoryState& state,
                              const std::string& filter, LiveSortKey key, bool descending);

// The free event of the allocation at `address` on `device` live after event `from`: the first
// free of that address after `from`, looking at most `max_events` events ahead. Empty when none was
// found there (`*searched_to` says how far it looked: event_count() means the end of the trace).
std::optional<std::uint64_t> FindFreeEvent(const TimelineModel& model, std::uint32_t device,
                                           std::uint64_t address, std::uint64_t from,
                                           std::uint64_t max_events, std::uint64_t* searched_to = nullptr);

// ------------------------------------------------------------------------------- compare

// One replay of a trace recorded into a timeline model, for the compare view.
struct ReplayTimeline {
  ReplayResult result;
  std::unique_ptr<TimelineModel> model;
  // Per event of `model`: the seq of the original trace's event whose op caused it (ascending).
  std::vector<std::uint64_t> source_seq;
  // The replay's event that shows the original trace as of its event `seq`: the last one caused by
  // an op at or before it (0 when none was). By sequence number, not by time: timestamps tie, and
  // a cursor chosen by time was one event off (issue 17, item 8).
  std::uint64_t SideCursor(std::uint64_t seq) const;
};
// Replays `sequence` under `options` (continuing past OOMs) recording every event, and builds the
// timeline of what was recorded. Throws ConfigError as Replay does.
ReplayTimeline ReplayToTimeline(const AllocationSequence& sequence, ReplayOptions options);

}  // namespace fragscope::analysis
