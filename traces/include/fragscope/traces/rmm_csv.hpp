// RAPIDS RMM logging_resource_adaptor CSV logs: reading them as traces and writing traces in the
// same format (so that RMM's replay benchmark can read what fragscope writes).
//
//   Thread,Time,Action,Pointer,Size,Stream
//   139872551270208,14:02:11.123456,allocate,0x7f2c4c000000,4096,0x0
//   139872551270208,14:02:11.123470,free,0x7f2c4c000000,4096,0x0
//   139872551270208,14:02:11.123480,allocate failure,0x0,99999999999,0x0
//
// Thread: the OS thread id (decimal). Time: wall clock HH:MM:SS.microseconds (or, as RMM's
// documentation shows it, seconds since the epoch, "1634567890.123456"). Pointer and Stream:
// hexadecimal, with "0x" (RMM <= 24.x, fmt) or without (newer RMM, printf "%llx"). Size: bytes.
// The action "deallocate" (RMM's documentation) is a free. RMM 0.x's own log (rmm::Logger's
// csv_log: "Event Type,Device ID,Address,…") is read too. docs/importers.md, "RAPIDS RMM logs", has
// the mapping to events.
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>

#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

// Reads an RMM log. A log that starts with the header is strict: a short row, a bad number or an
// unknown action is a TraceError naming the file and line — but for a last line without its end
// (the log was cut while it was written), which is left out with a warning. Rows without the
// header, or inside other log output (spark.rapids.memory.gpu.debug), are read from any text: lines
// that are no row are skipped (counted in a warning), a broken row (an RMM action in its third
// field) is still an error. A zero-size allocation with a null pointer (and its free) is no event.
// A free of a pointer that the log never allocated is a warning (the allocation predates the log).
Trace ReadRmmCsv(const std::string& path, const ReadLimits& limits = {});
// The same from text in memory; `name` stands for the path in messages.
Trace ParseRmmCsv(std::string_view text, const std::string& name, const ReadLimits& limits = {});

// Whether the start of a file is an RMM log: the CSV header as a line (the first, or any), a line
// that is a row, or RMM 0.x's header.
bool LooksLikeRmmCsv(std::string_view head);

// Writes alloc, free and oom events (of every device: RMM logs have no device column) as an RMM
// log; other events have no RMM form and are left out. Times: time_ns as the time of day.
void WriteRmmCsv(const Trace& trace, std::ostream& out);

}  // namespace fragscope::traces
