// A trace's allocation sequence, compact and ready to replay many times (replay, compare and the
// bisection of min-limit all run it again and again): per event, alloc or free, device, requested
// size, stream, tag, and for a free the index of the allocation it ends. Addresses, rounding and
// regions of the original allocator are dropped: a replay makes its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

// An alloc op whose `allocation` is kNoAllocation is a request that failed in the trace (its oom
// event): a replay asks for it again and, when it succeeds, frees it at once, since the program
// never held that memory.
struct AllocationOp {
  static constexpr std::uint32_t kNoAllocation = 0xffffffffu;
  std::uint64_t size = 0;         // requested bytes (of the allocation it ends, for a free)
  std::uint64_t seq = 0;          // the original event's sequence number
  std::uint32_t allocation = 0;   // index of the allocation this op creates or ends
  std::uint32_t device = 0;
  traces::TagId tag = traces::kNoTag;
  bool is_free = false;
  // Index into AllocationSequence::streams of the stream that asked (of the allocation, for a
  // free): a policy that keeps pools per stream (preset=pytorch) replays them apart. 16 bits keep
  // the op at 32 bytes; a trace with more than 65,535 streams shares the last index among the rest.
  std::uint16_t stream = 0;
};

// A marker of the trace (`step 3 begin`, `backward`), kept at its place in the sequence so that a
// replay that records a trace carries it: it comes before ops[before_op] (ops.size(): after the last).
struct SequenceMarker {
  std::uint64_t before_op = 0;
  std::uint64_t seq = 0;          // the original event's sequence number
  std::uint64_t time_ns = 0;      // the original event's timestamp
  std::uint32_t device = 0;
  traces::TagId tag = traces::kNoTag;  // the marker's name, an id of `tags`
};

// Called with (bytes consumed, total bytes) while reading, for progress bars.
using Progress = std::function<void(std::uint64_t done, std::uint64_t total)>;

struct AllocationSequence {
  traces::TraceHeader header;
  std::vector<std::string> tags;    // by id - 1
  std::vector<AllocationOp> ops;
  std::vector<std::uint64_t> time_ns;  // per op: the original event's timestamp (may be empty)
  std::vector<std::uint32_t> devices;  // devices that appear, ascending
  std::vector<std::uint64_t> streams{0};  // the trace's stream handles, by AllocationOp::stream
  std::vector<SequenceMarker> markers;  // in trace order, on devices that have ops
  std::uint64_t allocations = 0;
  std::uint64_t unmatched_frees = 0;   // frees of blocks allocated before recording started: dropped
  std::uint64_t never_freed = 0;       // allocations still live at the end
  std::uint64_t recorded_ooms = 0;     // oom events of the trace, kept as kNoAllocation ops
  std::uint64_t implicit_frees = 0;    // allocs at the address of a live allocation: the earlier
                                       // one is taken as freed there (a free missing in the trace)
  std::uint64_t alloc_id_mismatches = 0;  // frees matched by address whose alloc_id disagreed
  std::vector<std::string> warnings;
};

// Reads the sequence from a block source (e.g. TraceReader::NextBlock). Frees are matched to
// the live allocation at the same (device, address); where both carry an alloc_id it must agree
// (disagreements are counted, with a warning). Frees of unknown allocations are counted in
// unmatched_frees and dropped, with one warning. Allocation indices are dense, in order of the
// alloc events. `tags` (names by id - 1) is copied into the sequence when given.
using BlockSource = std::function<bool(std::vector<traces::Event>*)>;
AllocationSequence BuildAllocationSequence(const traces::TraceHeader& header,
                                           const BlockSource& blocks,
                                           const std::vector<std::string>* tags = nullptr);

// The same, fed one block at a time: for a reader whose blocks also go elsewhere (the analysis
// context builds the timeline model from the same pass). Finish once, after the last block.
class AllocationSequenceBuilder {
 public:
  explicit AllocationSequenceBuilder(const traces::TraceHeader& header);
  ~AllocationSequenceBuilder();
  AllocationSequenceBuilder(const AllocationSequenceBuilder&) = delete;
  AllocationSequenceBuilder& operator=(const AllocationSequenceBuilder&) = delete;
  void Add(const std::vector<traces::Event>& block);
  AllocationSequence Finish(const std::vector<std::string>* tags = nullptr);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The allocations made while recording only: without the blocks that a snapshot shows live before
// recording started (the header's first source.reconstructed_events events) and without their
// frees, which become unmatched_frees. Allocation indices are renumbered densely. The sequence is
// returned unchanged when the trace reconstructed nothing.
AllocationSequence RecordedWindow(AllocationSequence sequence);

// The sequence without the ops and markers of `devices` (e.g. a profiler trace's host memory,
// traces::IsForeignHostMemory): allocation indices renumbered densely, the counts of what is left.
AllocationSequence WithoutDevices(AllocationSequence sequence, const std::vector<std::uint32_t>& devices);

// Peak live requested bytes (LOAD) of each device of `sequence.devices`, same order, computed from
// the ops alone (a failed request of the trace counts for the moment it is asked): the least
// memory any allocator needs to run the sequence.
std::vector<std::uint64_t> PeakLoadByDevice(const AllocationSequence& sequence);

}  // namespace fragscope::analysis
