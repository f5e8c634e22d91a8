// Allocate and free from four threads at once on one allocator (and on two virtual devices over
// one backing). Run under ThreadSanitizer in CI (the tsan preset).
#include <cmath>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "support/recording_sink.hpp"

namespace fragscope {
namespace {

void Churn(DeviceAllocator& allocator, std::uint64_t seed, int operations, std::uint64_t* failures) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(4.0 * MiB));
  std::vector<void*> mine;
  for (int op = 0; op < operations; ++op) {
    if (mine.empty() || (mine.size() < 64 && rng() % 2 == 0)) {
      OomReport report;
      void* ptr = allocator.TryAllocate(static_cast<std::uint64_t>(std::exp(log_size(rng))), {}, &report);
      if (ptr != nullptr) mine.push_back(ptr);
      else ++*failures;
    } else {
      const std::size_t i = rng() % mine.size();
      std::swap(mine[i], mine.back());
      allocator.Free(mine.back());
      mine.pop_back();
    }
  }
  for (void* ptr : mine) allocator.Free(ptr);
}

TEST(Threads, FourThreadsShareOneAllocator) {
  for (const char* conf : {"backing=sim,capacity=8GiB,limit=2GiB", "backing=host,capacity=8GiB,limit=1GiB",
                           "backing=sim,capacity=8GiB,limit=2GiB,expandable=on",
                           "backing=sim,capacity=8GiB,limit=2GiB,passthrough=on"}) {
    SCOPED_TRACE(conf);
    auto system = MemorySystem::Create(ParseAllocConf(conf));
    DeviceAllocator& allocator = system->device(0);
    testing::RecordingSink sink;
    allocator.SetSink(&sink);
    std::vector<std::thread> threads;
    std::vector<std::uint64_t> failures(4, 0);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back(Churn, std::ref(allocator), 100 + t, 20000, &failures[static_cast<std::size_t>(t)]);
    }
    for (auto& thread : threads) thread.join();
    allocator.CheckInvariants();
    const AllocatorStats stats = allocator.Stats();
    EXPECT_EQ(stats.in_use, 0u);
    EXPECT_EQ(stats.allocations, 0u);
    EXPECT_EQ(stats.total_allocs, stats.total_frees);
    // Events carry one global order: sequence numbers are exactly 0..n-1 and each free follows its
    // allocation.
    const auto events = sink.events();
    std::unordered_map<std::uint64_t, std::uint64_t> alloc_seq;
    std::uint64_t allocs = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      ASSERT_EQ(events[i].seq, i);
      if (events[i].type == traces::EventType::kAlloc) {
        alloc_seq[events[i].alloc_id] = events[i].seq;
        ++allocs;
      }
      if (events[i].type == traces::EventType::kFree) {
        ASSERT_TRUE(alloc_seq.count(events[i].alloc_id));
        ASSERT_LT(alloc_seq[events[i].alloc_id], events[i].seq);
      }
    }
    EXPECT_EQ(allocs, stats.total_allocs);
  }
}

TEST(Threads, VirtualDevicesOverOneBacking) {
  auto system = MemorySystem::Create(ParseAllocConf("backing=sim,capacity=8GiB,virtual_devices=1GiB+1GiB+1GiB+1GiB"));
  std::vector<std::thread> threads;
  std::vector<std::uint64_t> failures(4, 0);
  for (std::size_t t = 0; t < 4; ++t) {
    threads.emplace_back(Churn, std::ref(system->device(t)), 7 + t, 20000, &failures[t]);
  }
  for (auto& thread : threads) thread.join();
  std::uint64_t reserved = 0;
  for (std::size_t t = 0; t < 4; ++t) {
    system->device(t).CheckInvariants();
    EXPECT_EQ(system->device(t).Stats().in_use, 0u);
    reserved += system->device(t).Stats().reserved;
  }
  EXPECT_EQ(system->backing().held(), reserved);
}

}  // namespace
}  // namespace fragscope
