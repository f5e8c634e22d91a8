// The PyTorch snapshot's content, taken out of the pickle value tree into plain structs
// (pytorch_model.cpp), and the stack/tag table built from its frames (pytorch_frames.cpp).
// Internal to the PyTorch importer (pytorch_snapshot.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "pickle_reader.hpp"

namespace fragscope::traces::pytorch_import {

enum class Action : std::uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  kOther,  // an action this importer does not know: kept as a marker with its name
};

struct SourceEvent {
  Action action = Action::kOther;
  std::string action_name;            // as in the file
  std::uint32_t device = 0;
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::uint64_t device_free = 0;      // oom only
  std::optional<std::uint64_t> time_us;
  const pickle::Value* frames = nullptr;
};

struct SourceBlock {
  std::uint64_t address = 0;
  std::uint64_t size = 0;             // rounded bytes the block holds
  std::uint64_t requested = 0;
  bool live = false;                  // active_allocated or active_pending_free
  const pickle::Value* frames = nullptr;
};

struct SourceSegment {
  std::uint32_t device = 0;
  std::uint64_t address = 0;
  std::uint64_t total_size = 0;
  std::uint64_t allocated_size = 0;
  std::uint64_t requested_size = 0;
  std::uint64_t stream = 0;
  bool expandable = false;
  std::vector<SourceBlock> blocks;
};

struct Annotation {
  std::uint32_t device = 0;
  std::optional<std::uint64_t> time_us;
  std::string name;
};

struct SourceSnapshot {
  std::vector<SourceSegment> segments;
  std::vector<std::vector<SourceEvent>> device_traces;  // by device index
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<Annotation> annotations;
  bool block_history_format = false;  // torch 2.0: blocks carry `history`, not `address`
};

// A document that is no snapshot, or a value it needs that is malformed. offset(): the byte offset
// of the offending value in the pickle, nullopt where unknown (a snapshot saved as JSON).
class MalformedSnapshot : public std::runtime_error {
 public:
  MalformedSnapshot(std::optional<std::uint64_t> offset, const std::string& message)
      : std::runtime_error(message), offset_(offset) {}
  std::optional<std::uint64_t> offset() const { return offset_; }

 private:
  std::optional<std::uint64_t> offset_;
};

// Throws MalformedSnapshot when the document is no snapshot or a value it needs is malformed
// (an address or size that is no non-negative 64-bit integer, for instance). Oddities that can
// be read around go to `warnings`.
SourceSnapshot ExtractSnapshot(const pickle::Document& doc, std::vector<std::string>* warnings);

// Tags and stacks from frame lists, cached per frame list (pickles share them through the memo).
class FrameTable {
 public:
  explicit FrameTable(const pickle::Document& doc) : doc_(doc) {}
  // Index + 1 into stacks() of the stack `frames` (a list of {filename, line, name} dicts), or 0
  // when there are no frames.
  std::uint32_t Stack(const pickle::Value* frames);
  // "file:line:function" of the innermost useful frame (see docs/importers.md), "" when none.
  std::string Tag(const pickle::Value* frames);
  std::vector<std::string> TakeStacks() { return std::move(stacks_); }

 private:
  struct Frame {
    std::string file;
    std::int64_t line = 0;
    std::string function;
  };
  std::vector<Frame> Frames(const pickle::Value& frames) const;

  const pickle::Document& doc_;
  std::vector<std::string> stacks_;
  std::unordered_map<std::string, std::uint32_t> stack_index_;
  std::unordered_map<pickle::ValueId, std::uint32_t> stack_cache_;
  std::unordered_map<pickle::ValueId, std::string> tag_cache_;
};

}  // namespace fragscope::traces::pytorch_import

namespace fragscope::traces::pytorch_import {

// Address ranges of one device (segments, or mapped pieces of expandable segments), by start.
using RangeMap = std::map<std::uint64_t, std::uint64_t>;  // start -> size

// True when [address, address + size) overlaps a range of `ranges`.
bool Overlaps(const RangeMap& ranges, std::uint64_t address, std::uint64_t size);
// Removes [address, address + size) from `ranges`, splitting ranges it cuts; returns the bytes
// that were covered.
std::uint64_t Carve(RangeMap& ranges, std::uint64_t address, std::uint64_t size);
// The range holding `address`, or ranges.end().
RangeMap::const_iterator Containing(const RangeMap& ranges, std::uint64_t address);

// PyTorch rounds block sizes up to 512 bytes (kMinBlockSize); used where a block's real size is
// not in the file.
std::uint64_t RoundBlock(std::uint64_t bytes);

// A block live at the start of recording.
struct StartBlock {
  std::uint64_t rounded = 0;
  std::uint64_t requested = 0;
  std::uint64_t stream = 0;
  const pickle::Value* frames = nullptr;
};

// One device at the start of recording, rebuilt from the final segments by undoing its trace
// from the last event to the first; plus the rounded size of each alloc event, from the block it
// created where that block is known.
struct DeviceStart {
  RangeMap regions;
  std::map<std::uint64_t, StartBlock> blocks;  // by address
  std::vector<std::uint64_t> alloc_rounded;    // per trace event (0 for non-alloc events)
};

// Collects warnings per kind: the first few of each kind verbatim, then one count.
class WarningLog {
 public:
  explicit WarningLog(std::string prefix) : prefix_(std::move(prefix)) {}
  void Add(const std::string& kind, const std::string& message);
  std::vector<std::string> Finish();

 private:
  std::string prefix_;
  std::vector<std::string> lines_;
  std::map<std::string, std::uint64_t> counts_;
};

DeviceStart RebuildStart(std::uint32_t device, const SourceSnapshot& snapshot, WarningLog& log);

// The address space of a device's expandable segments. PyTorch reserves one virtual range per
// expandable segment and maps pages into it; a snapshot names only the mapped pieces (`segments`
// entries with is_expandable) and its trace the pieces mapped and unmapped (segment_map,
// segment_unmap), never the range itself. So the extent of a range is the hull of the pieces seen
// on one stream, over the final segments and the whole trace; hulls that overlap are one range. A
// hull that would cover an ordinary segment (segment_alloc, or a final segment that is not
// expandable) is dropped with a warning: its pieces are then read as ordinary regions.
RangeMap ExpandableSpaces(std::uint32_t device, const SourceSnapshot& snapshot, WarningLog& log);

}  // namespace fragscope::traces::pytorch_import
