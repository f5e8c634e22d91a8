// Records events to a fragscope trace file (".fst"): binary, versioned, in self-contained blocks,
// each checksummed and zstd-compressed. docs/trace-format.md gives every byte.
//
// Record() only copies the event into the current block's buffer; a full block is encoded,
// compressed and written by a background thread, so the allocator's lock is held for a copy. A
// process killed at any moment leaves a file whose complete blocks all read back.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/tag_table.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::traces {

struct TraceWriterOptions {
  std::uint32_t block_events = 65536;  // events per block: the most a crash can lose
  int compression_level = 3;           // zstd level
  bool background = true;              // encode and write blocks on a background thread
  std::vector<std::string> inputs{};   // files being read: the trace must not replace one
};

class TraceWriter final : public EventSink {
 public:
  // Writes to "<path>.<pid>.partial" beside `path` (AtomicFile), which Close renames to `path`;
  // a process killed before that leaves the .partial file, whose complete blocks all read back.
  // Throws TraceError naming the path when the file cannot be created or `path` is one of
  // options.inputs.
  TraceWriter(const std::string& path, const TraceHeader& header,
              const TraceWriterOptions& options = {});
  ~TraceWriter() override;  // Close(); errors are logged, not thrown
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // EventSink: assigns `event.seq` (one counter for every allocator writing here) and buffers it.
  void Record(Event& event) override;
  TagId Intern(std::string_view text) override;
  // Buffers `event` keeping its own seq, for converters that copy a trace (WriteTrace); the next
  // Record continues from event.seq + 1. Tags must come from this writer's Intern.
  void Append(const Event& event);

  // Writes the current partial block and waits until every block is on disk (fflush).
  void Flush();
  // Flush, close and move into place; further Record calls are ignored. Throws TraceError on a
  // write error: then `path` is left as it was, and the blocks written so far stay in the
  // .partial file that the error names.
  void Close();

  std::uint64_t events_written() const;  // events in blocks already on disk
  std::uint64_t bytes_written() const;   // file size so far
  const std::string& path() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fragscope::traces
