// Exports a trace as Chrome trace-event JSON, for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
// One process per device (pid = device index, named after the device); counters ("ph":"C")
// "in use", "reserved" and "live requested" in bytes, written whenever they change; instant
// events ("ph":"i") for markers and OOMs (with the OOM's numbers as args). Timestamps are
// microseconds from the trace's first time_ns; when every time_ns is 0 the event's index stands
// for the time (1 us per event). docs/importers.md, "Chrome trace export", has the details.
#pragma once

#include <iosfwd>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

void WriteChromeTrace(const Trace& trace, std::ostream& out);

}  // namespace fragscope::traces
