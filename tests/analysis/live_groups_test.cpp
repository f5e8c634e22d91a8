// The live set grouped with totals (issue 17: "group the live set by tag and by stack frame"): by
// tag on a hand-made trace with exact numbers, by the user's frame on a real PyTorch snapshot.
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/analysis/live_groups.hpp"
#include "fragscope/analysis/stack_view.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

std::unique_ptr<TimelineModel> ModelOf(const traces::Trace& trace) {
  bool fed = false;
  BlockSource source = [&](std::vector<Event>* out) {
    if (fed) return false;
    *out = trace.events;
    fed = true;
    return true;
  };
  TimelineOptions options;
  options.tags = &trace.tags;
  return TimelineModel::Build(trace.header, source, options);
}

TEST(LiveGroups, ByTagWithExactTotals) {
  traces::Trace trace;
  trace.header.devices = {{0, "gpu 0", "sim", 1 << 30, 1 << 30}};
  trace.tags = {"activations", "weights"};
  const auto add = [&](EventType type, std::uint64_t address, std::uint64_t size, std::uint64_t rounded,
                       traces::TagId tag) {
    Event& e = trace.events.emplace_back();
    e.type = type;
    e.seq = trace.events.size() - 1;
    e.address = address;
    e.size = size;
    e.rounded = rounded;
    e.tag = tag;
    e.region = 0x1000000;
    e.alloc_id = e.seq + 1;
  };
  add(EventType::kRegionReserve, 0x1000000, 64 << 20, 0, 0);
  add(EventType::kAlloc, 0x1000000, 1000, 1024, 1);      // activations
  add(EventType::kAlloc, 0x1100000, 3 << 20, 3 << 20, 2);  // weights
  add(EventType::kAlloc, 0x1400000, 5000, 5120, 1);      // activations
  add(EventType::kAlloc, 0x1500000, 100, 256, 0);        // untagged
  add(EventType::kAlloc, 0x1600000, 200, 256, 1);        // activations, freed below
  add(EventType::kFree, 0x1600000, 0, 0, 0);
  const auto model = ModelOf(trace);
  const MemoryState state = model->StateAt(0, model->event_count() - 1);
  const std::vector<LiveGroup> groups = GroupLive(*model, state, LiveGroupKey::kTag);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].name, "weights");
  EXPECT_EQ(groups[0].allocations, 1u);
  EXPECT_EQ(groups[0].bytes, 3u << 20);
  EXPECT_EQ(groups[1].name, "activations");
  EXPECT_EQ(groups[1].allocations, 2u);
  EXPECT_EQ(groups[1].bytes, 1024u + 5120u);
  EXPECT_EQ(groups[1].requested, 6000u);
  EXPECT_EQ(groups[2].name, kUntagged);
  EXPECT_EQ(groups[2].bytes, 256u);
  // Without stacks, by frame is one group of everything.
  const std::vector<LiveGroup> frames = GroupLive(*model, state, LiveGroupKey::kFrame);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].name, kNoStack);
  EXPECT_EQ(frames[0].allocations, 4u);
  EXPECT_EQ(frames[0].bytes, state.in_use);
}

TEST(LiveGroups, ByTheUsersFrameOnARealSnapshot) {
  const std::string path = std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data/torch/pt_eor_cnn_counterfactuals.pickle";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent: no PyTorch snapshot";
  const traces::Trace trace = traces::ReadPytorchSnapshot(path);
  ASSERT_EQ(trace.event_stacks.size(), trace.events.size());
  const auto model = ModelOf(trace);
  const std::uint32_t device = model->devices().front();
  const MemoryState state = model->StateAt(device, model->event_count() - 1);
  const StackOf stack_of = [&](std::uint64_t event) -> std::string_view {
    const std::uint32_t index = trace.event_stacks[event];
    return index == 0 ? std::string_view() : std::string_view(trace.stacks[index - 1]);
  };
  const std::vector<LiveGroup> groups = GroupLive(*model, state, LiveGroupKey::kFrame, stack_of);
  ASSERT_GT(groups.size(), 1u);
  std::uint64_t allocations = 0, bytes = 0, requested = 0;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    allocations += groups[i].allocations;
    bytes += groups[i].bytes;
    requested += groups[i].requested;
    if (i > 0) {
      EXPECT_GE(groups[i - 1].bytes, groups[i].bytes) << "largest first";
    }
  }
  EXPECT_EQ(bytes, state.in_use) << "every live byte in exactly one group";
  EXPECT_EQ(requested, state.live_requested);
  // The largest holder is named by the user's own code, not by the allocator's C++.
  EXPECT_TRUE(IsUserFrame(groups.front().name) || groups.front().name == kNoStack) << groups.front().name;
  std::size_t user_named = 0;
  for (const LiveGroup& g : groups) user_named += IsUserFrame(g.name);
  EXPECT_GT(user_named, 0u);
  std::uint64_t live = state.outside_regions.size();
  for (const RegionState& region : state.regions) live += region.chunks.size();
  EXPECT_EQ(allocations, live);
}

}  // namespace
}  // namespace fragscope::analysis
