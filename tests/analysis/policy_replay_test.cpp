// `fragscope replay --alloc-conf policy=NAME` runs a policy registered at run time: the replay
// builds its allocators through the policy registry like everything else (docs/architecture.md,
// "Adding a policy"). The toy here forwards to bfc and counts what it forwards, so its replay must
// give bfc's numbers exactly and count every allocation of the sequence.
#include <atomic>
#include <random>

#include <gtest/gtest.h>

#include "fragscope/allocator/policy.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/replay.hpp"
#include "support/counting_allocator.hpp"

namespace fragscope::analysis {
namespace {

std::atomic<int> forwarded{0};

using testing::CountingAllocator;

const bool kToyRegistered = [] {
  Policy toy;
  toy.name = "toy";
  toy.description = "counts the allocations it forwards to bfc (policy_replay_test)";
  toy.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    return std::make_unique<CountingAllocator>(FindPolicy("bfc")->create(context), &forwarded);
  };
  RegisterPolicy(std::move(toy));
  return true;
}();

// A seeded training-like sequence: 2000 allocations of 1 KiB to 64 MiB, about half freed soon.
AllocationSequence Sequence() {
  AllocationSequence s;
  std::mt19937_64 rng(77);
  std::vector<std::pair<std::uint32_t, std::uint64_t>> live;
  for (std::uint32_t i = 0; i < 2000; ++i) {
    const std::uint64_t size = 1024 + rng() % (64 * MiB);
    s.ops.push_back({size, s.ops.size(), i, 0, traces::kNoTag, false});
    live.emplace_back(i, size);
    if (live.size() > 40 || rng() % 2 == 0) {
      const std::size_t k = rng() % live.size();
      s.ops.push_back({live[k].second, s.ops.size(), live[k].first, 0, traces::kNoTag, true});
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  s.devices = {0};
  s.allocations = 2000;
  s.never_freed = live.size();
  return s;
}

TEST(PolicyReplay, APolicyRegisteredAtRunTimeReplaysByName) {
  const AllocationSequence sequence = Sequence();
  ReplayOptions bfc;
  bfc.conf = ParseAllocConf("backing=sim,capacity=8GiB,limit=4GiB");
  ReplayOptions toy;
  toy.conf = ParseAllocConf("backing=sim,capacity=8GiB,limit=4GiB,policy=toy");
  EXPECT_EQ(toy.conf.policy, "toy");

  const int before = forwarded.load();
  const ReplayResult with_toy = Replay(sequence, toy);
  EXPECT_EQ(forwarded.load() - before, 2000) << "every allocation went through the toy";
  const ReplayResult with_bfc = Replay(sequence, bfc);
  EXPECT_EQ(forwarded.load() - before, 2000) << "bfc alone does not";

  ASSERT_EQ(with_toy.devices.size(), 1u);
  ASSERT_EQ(with_bfc.devices.size(), 1u);
  const DeviceMetrics& a = with_toy.devices[0].metrics;
  const DeviceMetrics& b = with_bfc.devices[0].metrics;
  EXPECT_FALSE(with_toy.stopped_at_oom);
  EXPECT_EQ(a.allocations, 2000u);
  EXPECT_EQ(a.peak_reserved, b.peak_reserved);
  EXPECT_EQ(a.peak_in_use, b.peak_in_use);
  EXPECT_EQ(a.peak_load, b.peak_load);
  EXPECT_GT(a.peak_reserved, 0u);
  EXPECT_GE(a.peak_reserved, a.peak_load);
}

}  // namespace
}  // namespace fragscope::analysis
