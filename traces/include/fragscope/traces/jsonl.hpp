// JSON Lines: one JSON object per line, for reading traces with jq and editing them by hand.
//
//   {"type":"header","producer":...,"source_format":...,"alloc_conf":...,"devices":[...],
//    "created_unix_ns":...,"metadata":[["key","value"],...]}
//   {"type":"alloc","seq":0,"time_ns":...,"device":0,"stream":0,"address":...,"size":...,
//    "rounded":...,"region":...,"tag":"conv1.weight","thread":0,"alloc_id":1}
//   {"type":"free","seq":1,...,"address":...,"size":...,"rounded":...,"alloc_id":1}
//   {"type":"oom",...,"oom":{"request":...,...,"region_count":...,"cause":"fragmentation"}}
//
// Every event line has type, seq, time_ns and device, then the fields its type uses (see
// event.hpp), then any other field that is not zero. Tags are written as their names ("" for no
// tag). docs/trace-format.md, "JSON Lines", has the details.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

void WriteJsonl(const Trace& trace, std::ostream& out);
// Streams the rest of `reader`, one block in memory at a time.
void WriteJsonl(TraceReader& reader, std::ostream& out);

// Reads JSON Lines written by WriteJsonl (or by hand). Strict: an unknown key, a value of the
// wrong type or an unknown event type is a TraceError naming the file and the line. Tags are
// interned in order of first appearance.
// At most `limits.max_events` events and `limits.max_devices` devices (header and events), else a
// TraceError naming the line.
Trace ReadJsonl(const std::string& path, const ReadLimits& limits = {});
// The same from text in memory; `name` stands for the path in messages.
Trace ParseJsonl(std::string_view text, const std::string& name, const ReadLimits& limits = {});

}  // namespace fragscope::traces
