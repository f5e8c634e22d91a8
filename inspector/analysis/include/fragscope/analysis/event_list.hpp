// The events around a moment, in words: what memory_viz's "allocator state history" lists, for the
// inspector's event list. Each row says what the event did and what it left (in use and reserved
// after it), so the cursor can be read against its neighbours. GUI-free: the inspector draws it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

struct EventRow {
  std::uint64_t index = 0;   // event index in the model
  traces::Event event;
  std::string what;          // "alloc 1.00 MiB (rounded 2.00 MiB) at 0x7f.., tag weights"
  std::uint64_t in_use = 0;  // of the event's device, after it
  std::uint64_t reserved = 0;
};

// The events of `device` around `cursor`: up to `before` of them before it, the cursor's own event
// when it is the device's, and up to `after` after it, in order. At most `max_scan` events are
// looked at on each side (a device with few events in a long multi-device trace), so the call is
// bounded whatever the trace.
std::vector<EventRow> EventsAround(const TimelineModel& model, std::uint32_t device, std::uint64_t cursor,
                                   std::size_t before, std::size_t after, std::uint64_t max_scan = 1000000);

// What an event did, in one line: sizes in binary units, addresses in hex, tags and marker names by
// name, an OOM's request and cause.
std::string DescribeEvent(const TimelineModel& model, const traces::Event& event);

}  // namespace fragscope::analysis
