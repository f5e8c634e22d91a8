// preset=tensorflow: TensorFlow's BFC allocator on fragscope's BFC core. Its split rule, its growth
// (allow_growth on: regions doubling from 2 MiB, an oversized request raising the size once; off:
// one region of the whole limit at the first request) and its configuration, with exact numbers.
// The figures TensorFlow's allocator itself produced on real sequences are asserted in
// tests/cli/cli_test.cpp (Cli.TensorflowPresetReproducesTensorflowsFigures).
#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/policy.hpp"
#include "fragscope/allocator/size.hpp"

namespace fragscope {
namespace {

std::unique_ptr<MemorySystem> Make(const std::string& conf) {
  return MemorySystem::Create(ParseAllocConf(conf));
}

std::vector<std::uint64_t> RegionSizes(const DeviceAllocator& allocator) {
  std::vector<std::uint64_t> sizes;
  for (const RegionView& region : allocator.Snapshot().regions) sizes.push_back(region.size);
  return sizes;
}

// TensorFlow splits a best-fit chunk only when it is at least twice the request or the remainder
// is at least 128 MiB; otherwise the caller gets the whole chunk (internal waste, counted in use).
TEST(TensorflowPreset, SplitsOnlyAtTwiceTheRequestOrA128MiBRemainder) {
  struct Case {
    std::uint64_t hole, request, in_use_after;  // in_use_after: the hole's part in use
  };
  for (const Case& c : {Case{5 * MiB, 3 * MiB, 5 * MiB},        // remainder 2 MiB < 3 MiB: whole chunk
                        Case{5 * MiB, 2 * MiB + 512 * KiB, 2 * MiB + 512 * KiB},  // exactly twice: split
                        Case{5 * MiB, 2 * MiB, 2 * MiB},        // more than twice: split
                        Case{300 * MiB, 160 * MiB, 160 * MiB},  // remainder 140 MiB >= 128 MiB: split
                        Case{250 * MiB, 160 * MiB, 250 * MiB}}) {  // 90 MiB: neither, whole chunk
    SCOPED_TRACE(testing::Message() << FormatBytes(c.request) << " from a hole of " << FormatBytes(c.hole));
    for (const char* preset : {"preset=tensorflow,", ""}) {
      auto system = Make(std::string(preset) + "backing=sim,capacity=2GiB,limit=1GiB,growth=off,gc=off");
      DeviceAllocator& a = system->device(0);
      void* hole = a.Allocate(c.hole);
      void* wall = a.Allocate(MiB);  // keeps the hole from merging with the rest of the region
      a.Free(hole);
      void* p = a.Allocate(c.request);
      a.CheckInvariants();
      EXPECT_EQ(p, hole) << "best fit: the hole, at its start";
      const bool tf = *preset != '\0';
      EXPECT_EQ(a.Stats().in_use, MiB + (tf ? c.in_use_after : c.request)) << (tf ? "tensorflow" : "bfc");
      a.Free(p);
      a.Free(wall);
      a.CheckInvariants();
    }
  }
}

// allow_growth: 2 MiB, then each region doubles; a request larger than the next region raises the
// size to the power of two that fits it, and that region does not double the size again: the next
// region is the same size, and doubling resumes after it (tsl's Extend, increased_allocation).
TEST(TensorflowPreset, GrowthDoublesFromTwoMebibytesAndPausesAfterAnOversizedRequest) {
  auto system = Make("preset=tensorflow,backing=sim,capacity=4GiB,gc=off");
  DeviceAllocator& a = system->device(0);
  std::vector<void*> live;
  for (std::uint64_t bytes : {MiB, 3 * MiB / 2, 7 * MiB / 2, 100 * MiB, 100 * MiB, 100 * MiB}) {
    live.push_back(a.Allocate(bytes));
    a.CheckInvariants();
  }
  EXPECT_EQ(RegionSizes(a), (std::vector<std::uint64_t>{2 * MiB, 4 * MiB, 8 * MiB, 128 * MiB, 128 * MiB, 256 * MiB}));
  EXPECT_EQ(a.Stats().reserved, 526 * MiB);
  for (void* p : live) a.Free(p);
}

// allow_growth off: the first request reserves the whole limit, and nothing more is ever reserved.
TEST(TensorflowPreset, WithoutGrowthTheFirstRequestReservesTheWholeLimit) {
  auto system = Make("preset=tensorflow,growth=off,backing=sim,capacity=4GiB,limit=3GiB");
  DeviceAllocator& a = system->device(0);
  EXPECT_EQ(a.Stats().reserved, 0u) << "nothing before the first request";
  void* p = a.Allocate(256);
  EXPECT_EQ(RegionSizes(a), (std::vector<std::uint64_t>{3 * GiB}));
  void* q = a.Allocate(GiB);
  EXPECT_EQ(a.Stats().reserved, 3 * GiB);
  EXPECT_EQ(a.Stats().peak_high_water, GiB + 256) << "the furthest a live chunk reached into the region";
  OomReport report;
  EXPECT_EQ(a.TryAllocate(2 * GiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kCapacity);
  a.Free(p);
  a.Free(q);
  a.CheckInvariants();
}

TEST(TensorflowPreset, Configuration) {
  const AllocConf conf = ParseAllocConf("preset=tensorflow");
  EXPECT_EQ(conf.policy, "tensorflow");
  EXPECT_FALSE(conf.Paging()) << "TensorFlow's allocator reserves regions";
  EXPECT_EQ(conf.ToString(),
            "backing=sim,device=0,external_use=0,growth=on,preallocate=off,gc=on,expandable=off,"
            "passthrough=off,policy=tensorflow");
  EXPECT_EQ(ParseAllocConf(conf.ToString()), conf);
  EXPECT_EQ(ParseAllocConf("policy=tensorflow"), conf);
  EXPECT_EQ(PolicyOf(conf).name, "tensorflow");
  const auto key_of = [](const char* text) {
    try {
      auto system = Make(text);
    } catch (const ConfigError& error) {
      return error.key();
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(key_of("preset=tensorflow,expandable=on"), "expandable");
  EXPECT_EQ(key_of("preset=tensorflow,preallocate=0.5"), "preallocate");
  EXPECT_EQ(key_of("preset=tensorflow,unmap=eager"), "unmap");
  EXPECT_EQ(key_of("preset=tensorflow,passthrough=on"), "policy");
  EXPECT_EQ(key_of("preset=bfc"), "preset") << "a policy that is not a preset";
  EXPECT_EQ(key_of("preset=mxnet"), "preset");
  EXPECT_EQ(key_of("policy=passthrough,preset=tensorflow"), "preset");
  try {
    ParseAllocConf("preset=mxnet");
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("a preset: tensorflow"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace fragscope
