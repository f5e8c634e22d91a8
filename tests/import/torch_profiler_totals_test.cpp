// torch.profiler memory events with "Total Allocated" and "Total Reserved" (PyTorch >= 1.10): what
// was live before the profiled window becomes allocations at event 0 (the blocks the window frees
// at their addresses, one allocation for the rest), as a PyTorch snapshot lays out its start, and
// the reserved memory follows Total Reserved after every event. Traces without the totals keep the
// window's own numbers (torch_profiler_test.cpp).
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/traces/torch_profiler.hpp"
#include "torch_profiler_fixtures.hpp"

namespace fragscope::traces {
namespace {

using profiler_fixtures::MemoryEvent;
using profiler_fixtures::Totals;

constexpr std::uint64_t kMiB = 1 << 20;

// cuda:0: 3 MiB live before the window — a 1 MiB block at 0x700000 that the window frees, and 2 MiB
// it never touches — in 8 MiB reserved; the window allocates 1 MiB, frees the old block, allocates
// 4 MiB (reserved grows to 12 MiB), frees both (reserved falls to 6 MiB: empty_cache) and allocates
// 512 B. The CPU: 1,000 B before, one 256 B allocation, no reserved memory (Total Reserved 0).
std::string WindowTrace() {
  const auto cuda = [](double ts, std::int64_t bytes, std::uint64_t addr, std::uint64_t allocated, std::uint64_t reserved) {
    return MemoryEvent(ts, bytes, 1, 0, addr, "7", Totals{allocated, reserved});
  };
  return profiler_fixtures::Trace({
      cuda(10, kMiB, 0x100000, 4 * kMiB, 8 * kMiB),
      MemoryEvent(15, 256, 0, -1, 0x9000, "7", Totals{1256, 0}),
      cuda(20, -static_cast<std::int64_t>(kMiB), 0x700000, 3 * kMiB, 8 * kMiB),
      cuda(30, 4 * kMiB, 0x200000, 7 * kMiB, 12 * kMiB),
      cuda(40, -static_cast<std::int64_t>(kMiB), 0x100000, 6 * kMiB, 12 * kMiB),
      cuda(50, -4 * static_cast<std::int64_t>(kMiB), 0x200000, 2 * kMiB, 6 * kMiB),
      cuda(60, 512, 0x300000, 2 * kMiB + 512, 6 * kMiB),
  });
}

std::string Describe(const Trace& t, const Event& e) {
  const std::string tag = t.TagName(e.tag);
  return fmt::format("{} {} {:#x} {}{}", ToString(e.type), e.device, e.address, e.size, tag.empty() ? "" : " " + tag);
}

TEST(TorchProfilerTotals, WhatWasLiveBeforeTheWindowIsAllocatedAtEventZero) {
  const Trace t = ParseTorchProfilerTrace(WindowTrace(), "window.json");
  std::vector<std::string> seen;
  for (const Event& e : t.events) seen.push_back(Describe(t, e));
  const std::vector<std::string> expected = {
      // The start: reserved 8 MiB (the first Total Reserved), the 1 MiB block the window frees at its
      // address, and one allocation for the 2 MiB it never frees; on the CPU, 1,000 B.
      "region_reserve 0 0x8000000000000000 8388608",
      "alloc 0 0x700000 1048576 (allocated before profiling)",
      "alloc 0 0x4000000000000000 2097152 (allocated before profiling)",
      "alloc 1000000 0x4000000000000000 1000 (allocated before profiling)",
      // The window.
      "alloc 0 0x100000 1048576",
      "alloc 1000000 0x9000 256",
      "free 0 0x700000 1048576",
      "region_reserve 0 0x8000000000800000 4194304",  // reserved grows before the allocation
      "alloc 0 0x200000 4194304",
      "free 0 0x100000 1048576",
      "free 0 0x200000 4194304",
      "region_release 0 0x8000000000600000 6291456",  // and falls after the free
      "alloc 0 0x300000 512",
  };
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(t.header.source.reconstructed_events, 4u);
  ASSERT_EQ(t.header.source.before_recording.size(), 2u);
  EXPECT_EQ(t.header.source.before_recording[0], (BlocksBeforeRecording{0, 2, 3 * kMiB, 3 * kMiB, false}));
  EXPECT_EQ(t.header.source.before_recording[1], (BlocksBeforeRecording{1000000, 1, 1000, 1000, false}));
  // Reserved memory only where Total Reserved says some: cuda:0, not the CPU.
  EXPECT_EQ(t.header.source.reserved_without_layout, std::vector<std::uint32_t>{0});
  EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();  // every free pairs; nothing left out
  EXPECT_EQ(t.events[0].time_ns, 0u);
  EXPECT_EQ(t.events[3].time_ns, 0u);
  EXPECT_EQ(t.events[4].time_ns, 0u);      // the first memory event, at ts 10 µs
  EXPECT_EQ(t.events[12].time_ns, 50'000u);  // ts 60 µs
}

// After every memory event, the live bytes are the recorded Total Allocated and the reserved bytes
// the recorded Total Reserved (the region events around an event are applied with it).
TEST(TorchProfilerTotals, LiveAndReservedFollowTheRecordedTotals) {
  const Trace t = ParseTorchProfilerTrace(WindowTrace(), "window.json");
  std::map<std::uint32_t, std::uint64_t> live, reserved;
  std::map<std::uint64_t, std::uint64_t> sizes;  // alloc_id -> size
  std::vector<std::pair<std::uint64_t, std::uint64_t>> after;  // cuda:0 (live, reserved) after each alloc/free
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    switch (e.type) {
      case EventType::kAlloc: live[e.device] += e.size; break;
      case EventType::kFree: live[e.device] -= e.size; break;
      case EventType::kRegionReserve: reserved[e.device] += e.size; break;
      case EventType::kRegionRelease: reserved[e.device] -= e.size; break;
      default: break;
    }
    const bool memory = (e.type == EventType::kAlloc || e.type == EventType::kFree) && i >= 4 && e.device == 0;
    const bool release_follows = i + 1 < t.events.size() && t.events[i + 1].type == EventType::kRegionRelease;
    if (memory && !release_follows) after.emplace_back(live[0], reserved[0]);
    if (e.type == EventType::kRegionRelease) after.emplace_back(live[0], reserved[0]);
  }
  const std::vector<std::pair<std::uint64_t, std::uint64_t>> recorded = {
      {4 * kMiB, 8 * kMiB},  {3 * kMiB, 8 * kMiB},  {7 * kMiB, 12 * kMiB},
      {6 * kMiB, 12 * kMiB}, {2 * kMiB, 6 * kMiB}, {2 * kMiB + 512, 6 * kMiB}};
  EXPECT_EQ(after, recorded);
  EXPECT_EQ(live[1000000], 1256u);
  EXPECT_EQ(reserved.count(1000000), 0u);
}

// The first event is a free of a block from before (p03's shape): what was live before is Total
// Allocated + |Bytes| there, and the freed block is one of those blocks.
TEST(TorchProfilerTotals, AFreeFirstCountsTheFreedBlockAsLiveBefore) {
  const Trace t = ParseTorchProfilerTrace(
      profiler_fixtures::Trace({MemoryEvent(1, -4096, 0, -1, 0x5000, "7", Totals{10000, 0}),
                                MemoryEvent(2, 2048, 0, -1, 0x6000, "7", Totals{12048, 0})}),
      "cpu.json");
  ASSERT_EQ(t.header.source.before_recording.size(), 1u);
  EXPECT_EQ(t.header.source.before_recording[0], (BlocksBeforeRecording{1000000, 2, 14096, 14096, false}));
  std::vector<std::string> seen;
  for (const Event& e : t.events) seen.push_back(Describe(t, e));
  EXPECT_EQ(seen, (std::vector<std::string>{"alloc 1000000 0x5000 4096 (allocated before profiling)",
                                            "alloc 1000000 0x4000000000000000 10000 (allocated before profiling)",
                                            "free 1000000 0x5000 4096",
                                            "alloc 1000000 0x6000 2048"}));
  EXPECT_TRUE(t.header.source.reserved_without_layout.empty());
  EXPECT_TRUE(t.warnings.empty());
}

// Totals that contradict the events' own Bytes are not used to invent memory: a warning says so.
TEST(TorchProfilerTotals, TotalsBelowTheEventsAreNotCounted) {
  const Trace t = ParseTorchProfilerTrace(
      profiler_fixtures::Trace({MemoryEvent(1, 4096, 1, 0, 0x5000, "7", Totals{0, 2 * kMiB}),
                                MemoryEvent(2, -8192, 1, 0, 0x9000, "7", Totals{0, 2 * kMiB})}),
      "odd.json");
  EXPECT_TRUE(t.header.source.before_recording.empty());
  std::string all;
  for (const auto& w : t.warnings) all += w + "\n";
  EXPECT_NE(all.find("odd.json: cuda:0: \"Total Allocated\" says less was live before profiling than the events' "
                     "Bytes do: what was live before is not counted"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("1 frees (8.00 KiB) of memory allocated before profiling started: left out"), std::string::npos)
      << all;
  // Reserved memory is still what Total Reserved says.
  EXPECT_EQ(t.header.source.reserved_without_layout, std::vector<std::uint32_t>{0});
  ASSERT_FALSE(t.events.empty());
  EXPECT_EQ(t.events[0].type, EventType::kRegionReserve);
  EXPECT_EQ(t.events[0].size, 2 * kMiB);
}

}  // namespace
}  // namespace fragscope::traces
