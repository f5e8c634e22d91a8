// The active-memory timeline: what memory_viz's "Active Memory Timeline" shows, at any zoom of any
// trace. The live allocations are stacked over time, the largest ones as bands of their own and the
// rest as one band, so the peak's makers can be seen and named.
//
// Which allocations get a band: the largest ones live at the in-use peak of the range drawn (the
// moment that decides whether a run fits). memory_viz picks the largest allocations of the whole
// snapshot, which on a training run are often one step's activations repeated every step; the
// ones live at the peak are those that made it. Zoom in on another stretch and its own peak's
// makers get the bands.
//
// Level of detail: each column shows the live set after one event, the one where in use is highest
// in that column, so the top of the stack is the in-use curve's maximum, and the peak column shows
// the peak's live set exactly. GUI-free: the inspector's timeline draws it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

struct ActiveBand {
  LiveChunk chunk;                 // as live at the peak
  std::uint64_t free_event = 0;    // the first free after the peak, or the range's end when none
  // Live after event e (alloc_event <= e < free_event).
  bool LiveAfter(std::uint64_t event) const { return chunk.alloc_event <= event && event < free_event; }
};

struct ActiveMemoryStack {
  std::uint64_t peak_event = 0;    // where in use is highest in the range (the first such event)
  std::uint64_t peak_in_use = 0;
  std::vector<ActiveBand> bands;   // bottom up: oldest allocation first (long-lived memory low)
  std::vector<std::uint64_t> column_event;   // per column: the event it shows
  std::vector<std::uint64_t> column_in_use;  // per column: in use after that event
  // Bytes of column c in no band: in use minus the bands live there.
  std::uint64_t Rest(std::size_t column) const;
  // The band index drawn at byte height `bytes` (from 0 at the bottom, rest first) of column c, or
  // -1 for the rest band, -2 above the top.
  int BandAt(std::size_t column, std::uint64_t bytes) const;
};

// One column per equal slice of events [begin, end), sliced as Downsample slices them.
ActiveMemoryStack StackActiveMemory(const TimelineModel& model, std::uint32_t device, std::uint64_t begin,
                                    std::uint64_t end, std::uint32_t columns, std::size_t max_bands);
// One column per [bounds[c], bounds[c+1]) (ColumnsByTime); an empty slice shows the event before it,
// as DownsampleRanges does.
ActiveMemoryStack StackActiveMemory(const TimelineModel& model, std::uint32_t device,
                                    const std::vector<std::uint64_t>& bounds, std::size_t max_bands);

}  // namespace fragscope::analysis
