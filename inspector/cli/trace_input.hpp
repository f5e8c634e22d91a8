// Opens a trace of any format fragscope reads, found from the content rather than the extension,
// and hands out its events block by block.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::cli {

class TraceInput {
 public:
  // Throws traces::TraceError naming the file (missing, unreadable, unknown format).
  static std::unique_ptr<TraceInput> Open(const std::string& path);
  virtual ~TraceInput() = default;

  virtual const traces::TraceHeader& header() const = 0;
  // Tag names by id - 1, of the blocks read so far (all of them once NextBlock returned false).
  virtual const std::vector<std::string>& tags() const = 0;
  virtual bool NextBlock(std::vector<traces::Event>* events) = 0;
  virtual const std::vector<std::string>& warnings() const = 0;
  virtual std::uint64_t bytes_total() const = 0;
  virtual std::uint64_t bytes_done() const = 0;
  // Call stacks where the format has them (PyTorch snapshots): each "file:line:function" per line,
  // innermost first; per event index, 0 = none, else index + 1 into stacks(). Empty otherwise.
  virtual const std::vector<std::string>& stacks() const { return kNoStacks; }
  virtual const std::vector<std::uint32_t>& event_stacks() const { return kNoEventStacks; }

  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }  // "fragscope trace", "JSON Lines"

  // Called with each block on the thread that read it, where tags() may be read.
  using BlockObserver = std::function<void(const std::vector<traces::Event>&)>;
  // NextBlock as a BlockSource that reads ahead on a thread of its own (traces::PrefetchedBlocks),
  // so that decoding overlaps with what the caller does with the events. `progress` and
  // `observer` run on that thread. tags(), warnings(), stacks() and the input itself belong to
  // that thread until the source has returned false: read them after that, or in `observer`.
  // The source must not outlive this input.
  analysis::BlockSource Blocks(const analysis::Progress& progress = {},
                               const BlockObserver& observer = {});

 protected:
  static const std::vector<std::string> kNoStacks;
  static const std::vector<std::uint32_t> kNoEventStacks;
  std::string path_;
  std::string format_;
};

}  // namespace fragscope::cli
