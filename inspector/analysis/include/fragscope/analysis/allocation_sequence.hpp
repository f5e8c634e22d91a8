// A trace's allocation sequence, compact and ready to replay many times (replay, compare and the
// bisection of min-limit all run it again and again): per event, alloc or free, device, requested
// size, stream, tag, and for a free the index of the allocation it ends. Addresses, rounding and
// regions of the original allocator are dropped: a replay makes its own.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

struct AllocationOp {
  static constexpr std::uint32_t kNoAllocation = 0xffffffffu;
  std::uint64_t size = 0;         // requested bytes (alloc only)
  std::uint64_t seq = 0;          // the original event's sequence number
  std::uint32_t allocation = 0;   // index of the allocation this op creates or ends
  std::uint32_t device = 0;
  traces::TagId tag = traces::kNoTag;
  bool is_free = false;
};

// Called with (bytes consumed, total bytes) while reading, for progress bars.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

struct AllocationSequence {
  traces::TraceHeader header;
  std::vector<std::string> tags;    // by id - 1
  std::vector<AllocationOp> ops;
  std::vector<std::uint32_t> devices;  // devices that appear, ascending
  std::uint64_t allocations = 0;
  std::uint64_t unmatched_frees = 0;   // frees of blocks allocated before recording started: dropped
  std::uint64_t never_freed = 0;       // allocations still live at the end
  std::vector<std::string> warnings;
};

// Reads the sequence from a block source (e.g. TraceReader::NextBlock). Frees are matched to
// allocations by (device, address), or by alloc_id where the trace has one.
using BlockSource = std::function<bool(std::vector<traces::Event>*)>;
AllocationSequence BuildAllocationSequence(const traces::TraceHeader& header,
                                           const BlockSource& blocks,
                                           const std::vector<std::string>* tags = nullptr);

}  // namespace fragscope::analysis
