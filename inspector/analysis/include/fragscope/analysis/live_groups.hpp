// The live set at a moment, grouped with totals: by tag, or by the user's frame that made each
// allocation (the innermost frame of its call stack that is the user's own code, as StackView
// shows it). What memory_viz's and Tracy's per-site views answer: who holds the memory right now.
// GUI-free: the inspector's live table draws it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

enum class LiveGroupKey : std::uint8_t { kTag, kFrame };

struct LiveGroup {
  std::string name;             // the tag, or "file:line:function"; see kNoTag / kNoStack
  std::uint64_t allocations = 0;
  std::uint64_t bytes = 0;      // rounded, as the allocator holds them
  std::uint64_t requested = 0;
};

inline constexpr std::string_view kUntagged = "(no tag)";
inline constexpr std::string_view kNoStack = "(no call stack)";

// The call stack of the allocation made at an event index (frames one per line, innermost first),
// or empty when the trace has none.
using StackOf = std::function<std::string_view(std::uint64_t alloc_event)>;

// Groups the live allocations of `state` (in regions and outside) by `key`, largest total bytes
// first (ties by name). `stack_of` is used for kFrame only; without stacks every allocation falls
// in kNoStack. A stack with none of the user's frames is grouped by its innermost frame.
std::vector<LiveGroup> GroupLive(const TimelineModel& model, const MemoryState& state, LiveGroupKey key,
                                 const StackOf& stack_of = {});

}  // namespace fragscope::analysis
