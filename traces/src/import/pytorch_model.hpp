// The PyTorch snapshot's content, taken out of the pickle value tree into plain structs
// (pytorch_model.cpp), and the stack/tag table built from its frames (pytorch_frames.cpp).
// Internal to the PyTorch importer (pytorch_snapshot.cpp).
#pragma once

#include <cstdint>
#include <optional>
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

// Throws std::runtime_error when the document is no snapshot or a value it needs is malformed
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
