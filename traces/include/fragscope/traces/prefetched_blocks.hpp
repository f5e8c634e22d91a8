#pragma once
// Reads a trace's blocks on a thread of its own, a few blocks ahead of whoever uses them.
//
// Why: reading a block (CRC, zstd, varint decoding, tag interning) and using it (the inspector's
// timeline index, a replay's allocation sequence) are each about half the time of loading a
// large trace, and they do not depend on each other within a block. With two cores they overlap.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::traces {

// Fills *events with the next block's events and returns true, or returns false at the end
// (the shape of TraceReader::NextBlock).
using BlockFunction = std::function<bool(std::vector<Event>*)>;

class PrefetchedBlocks {
 public:
  // `upstream` is called on the prefetching thread only, one call at a time, never after it
  // returned false or threw; at most `depth` blocks wait read ahead. Whatever upstream touches
  // (a reader's tags, a progress bar) is written by that thread: read it after Next returned
  // false, which happens after upstream's last call.
  explicit PrefetchedBlocks(BlockFunction upstream, std::size_t depth = 4);
  // Stops reading ahead (after the block being read, if any) and joins the thread.
  ~PrefetchedBlocks();
  PrefetchedBlocks(const PrefetchedBlocks&) = delete;
  PrefetchedBlocks& operator=(const PrefetchedBlocks&) = delete;

  // Upstream's blocks in upstream's order. What upstream threw is thrown here, after the blocks
  // it read before. The thread starts at the first call.
  bool Next(std::vector<Event>* events);
  // Next as a BlockFunction (refers to this object, which must outlive it).
  BlockFunction AsFunction() {
    return [this](std::vector<Event>* events) { return Next(events); };
  }

 private:
  void ReadAhead();

  BlockFunction upstream_;
  const std::size_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<Event>> ready_;   // read, not yet handed out
  std::vector<std::vector<Event>> spare_;  // handed back, their capacity reused
  bool finished_ = false;                  // upstream returned false or threw
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace fragscope::traces
