// Internal to the RMM log reader: RMM 0.x's own log (rmm::Logger, printed by `rmm.csv_log()` or
// Logger::to_csv), read by rmm_csv_v0.cpp. ParseRmmCsv hands a text with its header here.
//
//   Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,Location
//   Alloc,0,0x7fae06600000,0,80,0,0,1,1.10549,1.1074,0.00191666,/path/driver.py:683
//   Free,0,0x7fae06600000,0,0,0,0,0,1.10798,1.10921,0.00122238,/path/utils.py:678
//
// (The first 0.x versions print no Location column.) docs/importers.md, "RAPIDS RMM logs", has
// the mapping to events.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces::rmm {

// Whether `line` (trimmed) is the header of an RMM 0.x log: its first column is "Event Type".
bool IsV0Header(std::string_view line);

// The byte offset of the first line of `text` that is an RMM 0.x header, or nullopt.
std::optional<std::size_t> FindV0Header(std::string_view text);

// The RMM 0.x log in `text` (FindV0Header finds its header). Throws TraceError naming the line
// (and the column) of what cannot be read: an unknown column in the header, a row with another
// number of fields, an unknown event type, a number that is none.
Trace ParseV0(std::string_view text, const std::string& name, const ReadLimits& limits);

}  // namespace fragscope::traces::rmm
