#include "fragscope/analysis/live_groups.hpp"

#include <algorithm>
#include <unordered_map>

#include "fragscope/analysis/stack_view.hpp"

namespace fragscope::analysis {

std::vector<LiveGroup> GroupLive(const TimelineModel& model, const MemoryState& state, LiveGroupKey key,
                                 const StackOf& stack_of) {
  std::unordered_map<std::string, LiveGroup> groups;
  // Allocations from one site share a stack: name each distinct stack once.
  std::unordered_map<std::string_view, std::string> frame_of_stack;
  auto name_of = [&](const LiveChunk& chunk) -> std::string {
    if (key == LiveGroupKey::kTag) {
      return chunk.tag == traces::kNoTag ? std::string(kUntagged) : model.TagName(chunk.tag);
    }
    const std::string_view stack = stack_of ? stack_of(chunk.alloc_event) : std::string_view();
    if (stack.empty()) return std::string(kNoStack);
    auto [it, added] = frame_of_stack.try_emplace(stack);
    if (added) {
      const StackView view = ViewStack(stack, false, 1);
      it->second = view.frames.empty() ? std::string(kNoStack) : view.frames.front();
    }
    return it->second;
  };
  auto add = [&](const LiveChunk& chunk) {
    std::string name = name_of(chunk);
    LiveGroup& group = groups[name];
    if (group.allocations == 0) group.name = std::move(name);
    ++group.allocations;
    group.bytes += chunk.size;
    group.requested += chunk.requested;
  };
  for (const RegionState& region : state.regions) {
    for (const LiveChunk& chunk : region.chunks) add(chunk);
  }
  for (const LiveChunk& chunk : state.outside_regions) add(chunk);
  std::vector<LiveGroup> out;
  out.reserve(groups.size());
  for (auto& [name, group] : groups) out.push_back(std::move(group));
  std::sort(out.begin(), out.end(), [](const LiveGroup& a, const LiveGroup& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
  });
  return out;
}

}  // namespace fragscope::analysis
