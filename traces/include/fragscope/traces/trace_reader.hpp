// Reads fragscope trace files block by block in constant memory per block. A truncated or corrupt
// file yields every complete, intact block and a warning that names the file and byte offset;
// a file that is not a trace, or of a newer major version, is refused with a TraceError.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/read_limits.hpp"
#include "fragscope/traces/trace_header.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::traces {

// A trace that cannot be read at all. what() names the file and, where it applies, the offset.
class TraceError : public std::runtime_error {
 public:
  TraceError(std::string path, std::uint64_t offset, const std::string& message);
  // A problem of the whole file, at no offset: "PATH: is a directory".
  TraceError(std::string path, const std::string& message);
  const std::string& path() const { return path_; }
  std::uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  std::uint64_t offset_;
};

class TraceReader {
 public:
  // Opens `path` and reads the file header. Throws TraceError.
  explicit TraceReader(const std::string& path);
  // The same, refusing a trace whose blocks hold more events than `limits` allow (their headers
  // are summed when the file is opened, before any block is decoded; see ReadLimits).
  TraceReader(const std::string& path, const ReadLimits& limits);
  // Reads a trace held in memory (`bytes` must outlive the reader); `name` stands for the path in
  // messages. For fuzzing, tests and traces that arrive over a network.
  TraceReader(std::span<const std::uint8_t> bytes, const std::string& name);
  TraceReader(std::span<const std::uint8_t> bytes, const std::string& name, const ReadLimits& limits);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const TraceHeader& header() const;
  std::uint32_t version_major() const;
  std::uint32_t version_minor() const;

  // The next intact block's events (in sequence order), or false at the end of the readable
  // file. Tags of these events are already interned in tags(). A damaged block is skipped with a
  // warning; reading goes on at the next block that can be found.
  bool NextBlock(std::vector<Event>* events);
  // Name of a tag met so far ("" for kNoTag).
  std::string TagName(TagId id) const;
  const std::vector<std::string>& tags() const;  // by id - 1

  // "trace.fst: truncated at byte 1234: 3 complete blocks read, the rest (567 bytes) lost", ...
  const std::vector<std::string>& warnings() const;
  std::uint64_t file_size() const;
  std::uint64_t offset() const;  // bytes consumed so far, for progress bars

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// A whole trace in memory: for tests, small traces and converters.
struct Trace {
  TraceHeader header;
  std::vector<std::string> tags;  // by id - 1
  std::vector<Event> events;
  std::vector<std::string> warnings;
  // Call stacks, where the source has them (importers of PyTorch snapshots): each one stack,
  // frames innermost first, one "file:line:function" per line, deduplicated.
  std::vector<std::string> stacks;
  // Per event (same index as `events`): 0 = no stack, else index + 1 into `stacks`. Empty when
  // the trace has no stacks.
  std::vector<std::uint32_t> event_stacks;

  std::string TagName(TagId id) const {
    return id == kNoTag || id > tags.size() ? std::string() : tags[id - 1];
  }
};

Trace ReadTrace(const std::string& path);
// Reads the rest of `reader` into memory.
Trace ReadTrace(TraceReader& reader);
// Writes `trace` as a fragscope trace file (tags re-interned in the same order).
void WriteTrace(const Trace& trace, const std::string& path, const TraceWriterOptions& options = {});

}  // namespace fragscope::traces
