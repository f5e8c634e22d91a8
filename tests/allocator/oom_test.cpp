// Each OOM cause made to happen deterministically, classified correctly, and survived.
#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/traces/byte_math.hpp"
#include "support/capped_backing.hpp"
#include "support/recording_sink.hpp"

namespace fragscope {
namespace {

std::unique_ptr<MemorySystem> Make(const char* conf) { return MemorySystem::Create(ParseAllocConf(conf)); }

using testing::CappedBacking;

TEST(Oom, RequestTooLarge) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB");
  OomReport report;
  EXPECT_EQ(system->device(0).TryAllocate(65 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kRequestTooLarge);
  EXPECT_EQ(report.numbers.request, 65 * MiB);
  EXPECT_EQ(report.numbers.rounded, 65 * MiB);
  EXPECT_EQ(report.numbers.limit, 64 * MiB);
  EXPECT_EQ(report.explanation, "one request of 65.00 MiB alone exceeds the limit of 64.00 MiB");
  EXPECT_EQ(report.Summary(), "out of memory on device 0: request-too-large: one request of 65.00 MiB "
                              "alone exceeds the limit of 64.00 MiB");
}

TEST(Oom, Capacity) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB");
  DeviceAllocator& allocator = system->device(0);
  void* live = allocator.Allocate(48 * MiB);
  try {
    allocator.Allocate(20 * MiB);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& oom) {
    const OomReport& report = oom.report();
    EXPECT_EQ(report.cause(), OomCause::kCapacity);
    EXPECT_EQ(report.numbers.in_use, 48 * MiB);
    EXPECT_EQ(report.explanation,
              "live data (48.00 MiB in use) plus the request (20.00 MiB) exceed the limit of "
              "64.00 MiB by 4.00 MiB");
    EXPECT_NE(report.suggestion.find("68.00 MiB"), std::string::npos) << report.suggestion;
  }
  // The live allocation is intact and the allocator still serves what fits.
  EXPECT_EQ(allocator.Stats().live_requested, 48 * MiB);
  void* fits = allocator.Allocate(16 * MiB);
  allocator.CheckInvariants();
  allocator.Free(fits);
  allocator.Free(live);
}

// One preallocated 64 MiB region, every other 4 MiB chunk freed: 32 MiB free in 4 MiB holes.
TEST(Oom, Fragmentation) {
  auto system = Make("backing=sim,capacity=64MiB,preallocate=1.0");
  DeviceAllocator& allocator = system->device(0);
  std::vector<void*> chunks;
  for (int i = 0; i < 16; ++i) chunks.push_back(allocator.Allocate(4 * MiB));
  for (int i = 0; i < 16; i += 2) allocator.Free(chunks[i]);
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(8 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kFragmentation);
  EXPECT_EQ(report.numbers.free_in_regions, 32 * MiB);
  EXPECT_EQ(report.numbers.largest_free, 4 * MiB);
  EXPECT_EQ(report.numbers.headroom, 0u);
  EXPECT_EQ(report.numbers.region_count, 1u);
  EXPECT_EQ(report.numbers.chunk_count, 16u);
  EXPECT_EQ(report.explanation,
            "32.00 MiB are free (32.00 MiB inside 1 regions, 0 B headroom below the limit) but the "
            "largest contiguous range is 4.00 MiB, less than the request of 8.00 MiB");
  EXPECT_TRUE(report.gc_ran);
  EXPECT_EQ(report.gc_released, 0u) << "a region with live chunks must not be released";
  // Every live chunk is still there and the 4 MiB holes still serve 4 MiB requests.
  EXPECT_EQ(allocator.Stats().allocations, 8u);
  void* hole = allocator.Allocate(4 * MiB);
  EXPECT_EQ(hole, chunks[0]) << "best fit, lowest address first";
  allocator.CheckInvariants();
}

TEST(Oom, GcReleasesEmptyRegionsAndTheRetrySucceeds) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB,growth=off");
  DeviceAllocator& allocator = system->device(0);
  std::vector<void*> chunks;
  for (int i = 0; i < 16; ++i) chunks.push_back(allocator.Allocate(4 * MiB));  // 16 regions
  EXPECT_EQ(allocator.Stats().regions, 16u);
  for (int i = 1; i < 16; i += 2) allocator.Free(chunks[i]);  // 8 regions now empty
  void* big = allocator.Allocate(8 * MiB);
  const AllocatorStats stats = allocator.Stats();
  EXPECT_EQ(stats.gc_runs, 1u);
  EXPECT_EQ(stats.region_releases, 8u);
  EXPECT_EQ(stats.regions, 9u);
  EXPECT_EQ(stats.reserved, 40 * MiB);
  EXPECT_EQ(stats.total_ooms, 0u);
  allocator.CheckInvariants();
  allocator.Free(big);
}

TEST(Oom, WithoutGcEmptyRegionsStrandMemoryAndTheReportSaysSo) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB,growth=off,gc=off");
  DeviceAllocator& allocator = system->device(0);
  std::vector<void*> chunks;
  for (int i = 0; i < 16; ++i) chunks.push_back(allocator.Allocate(4 * MiB));
  for (int i = 1; i < 16; i += 2) allocator.Free(chunks[i]);
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(8 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kFragmentation);
  EXPECT_FALSE(report.gc_ran);
  EXPECT_EQ(report.suggestion.rfind("turn gc on (gc=on)", 0), 0u) << report.suggestion;
  allocator.CheckInvariants();
}

TEST(Oom, BackingRefusesBelowTheLimit) {
  const AllocConf conf = ParseAllocConf("backing=sim,capacity=1GiB,limit=512MiB,growth=on");
  // Another process holds all but 100 MiB of the device.
  auto system = MemorySystem::Create(conf, std::make_unique<CappedBacking>(MakeBacking(conf), 100 * MiB));
  DeviceAllocator& allocator = system->device(0);
  void* first = allocator.Allocate(64 * MiB);
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(64 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kBacking);
  EXPECT_EQ(report.numbers.limit, 512 * MiB);
  EXPECT_NE(report.explanation.find("another process"), std::string::npos) << report.explanation;
  // A region does not grow in place: what the device must have free is a new region for the whole
  // request, not the request less the largest free hole.
  EXPECT_NE(report.suggestion.find("regions do not grow in place, so the device must have at least 64.00 MiB free "
                                   "for a new region that holds the request"),
            std::string::npos)
      << report.suggestion;
  EXPECT_EQ(report.suggestion.find("more must be available"), std::string::npos) << report.suggestion;
  // The halving retry still serves requests that fit what the device has left.
  void* small = allocator.Allocate(30 * MiB);
  allocator.CheckInvariants();
  allocator.Free(small);
  allocator.Free(first);
}

TEST(Oom, ExpandableGrowsInPlaceWhereRegionsWouldStrandMemory) {
  // The same sequence under growth=off strands 4 MiB holes in separate regions; one expandable
  // region coalesces the freed tail with new pages.
  const char* sequence_conf[] = {"backing=sim,capacity=64MiB,growth=off,gc=off",
                                 "backing=sim,capacity=64MiB,expandable=on,gc=off"};
  std::vector<OomCause> causes;
  for (const char* conf : sequence_conf) {
    auto system = Make(conf);
    DeviceAllocator& allocator = system->device(0);
    std::vector<void*> chunks;
    for (int i = 0; i < 15; ++i) chunks.push_back(allocator.Allocate(4 * MiB));
    allocator.Free(chunks.back());  // 4 MiB free at the end, 4 MiB headroom
    OomReport report;
    void* ptr = allocator.TryAllocate(8 * MiB, {}, &report);
    causes.push_back(ptr == nullptr ? report.cause() : OomCause{});
    allocator.CheckInvariants();
  }
  EXPECT_EQ(causes[0], OomCause::kFragmentation);
  EXPECT_EQ(causes[1], OomCause{}) << "expandable should have fit the request";
}

TEST(Oom, PassthroughClassifiesToo) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB,passthrough=on");
  DeviceAllocator& allocator = system->device(0);
  void* live = allocator.Allocate(60 * MiB);
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(8 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kCapacity);
  EXPECT_EQ(allocator.TryAllocate(100 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kRequestTooLarge);
  allocator.Free(live);
}

TEST(Oom, OomIsRecordedAsAnEvent) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB");
  testing::RecordingSink sink;
  system->SetSink(&sink);
  OomReport report;
  const traces::TagId tag = sink.Intern("fc/weight");
  EXPECT_EQ(system->device(0).TryAllocate(100 * MiB, {.stream = 3, .tag = tag}, &report), nullptr);
  const auto events = sink.events();
  ASSERT_FALSE(events.empty());
  const traces::Event& oom = events.back();
  EXPECT_EQ(oom.type, traces::EventType::kOom);
  EXPECT_EQ(oom.oom.cause, OomCause::kRequestTooLarge);
  EXPECT_EQ(oom.oom.request, 100 * MiB);
  EXPECT_EQ(oom.oom.limit, 64 * MiB);
  EXPECT_EQ(oom.stream, 3u);
  EXPECT_EQ(sink.Name(oom.tag), "fc/weight");
}

TEST(Oom, ClassificationRulesInOrder) {
  traces::OomRecord n;
  n.limit = 100;
  n.rounded = 101;
  EXPECT_EQ(ClassifyOom(n, true), OomCause::kRequestTooLarge);
  n.rounded = 50;
  n.in_use = 60;
  EXPECT_EQ(ClassifyOom(n, true), OomCause::kCapacity);
  n.in_use = 50;
  EXPECT_EQ(ClassifyOom(n, true), OomCause::kBacking);
  EXPECT_EQ(ClassifyOom(n, false), OomCause::kFragmentation);
}

TEST(Oom, AbsentNumbersAreNeitherUsedNorPrinted) {
  // What an RMM allocate failure gives: the request and the live bytes, no limit, no pool.
  traces::OomRecord n;
  n.request = 3000;
  n.rounded = 3072;
  n.in_use = 5 * MiB;
  n.live_requested = 5 * MiB;
  n.present = traces::kOomRequest | traces::kOomRounded | traces::kOomInUse | traces::kOomLiveRequested;
  EXPECT_EQ(ClassifyOom(n, false), OomCause::kUnknown) << "no limit: capacity and fragmentation cannot be told apart";
  n.rounded = traces::kMaxBytes + 256;
  EXPECT_EQ(ClassifyOom(n, false), OomCause::kRequestTooLarge) << "above 4 EiB whatever the limit";
  n.rounded = 3072;

  const OomReport report = DiagnoseOom(2, n, false);
  EXPECT_EQ(report.cause(), OomCause::kUnknown);
  const std::string text = report.Describe();
  EXPECT_NE(text.find("in use"), std::string::npos) << text;
  EXPECT_EQ(text.find("\n  limit "), std::string::npos) << "no \"limit 0 B\" for an unknown limit:\n" << text;
  EXPECT_EQ(text.find("\n  headroom "), std::string::npos) << text;
  EXPECT_EQ(text.find("\n  regions "), std::string::npos) << text;
  EXPECT_NE(text.find("\n  in use "), std::string::npos) << text;
  const std::string json = ToJson(report);
  EXPECT_NE(json.find(R"("limit":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("headroom":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("chunk_count":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("in_use":5242880)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("request":3000)"), std::string::npos) << json;
  // fragscope's allocators give every number.
  EXPECT_EQ(traces::OomRecord{}.present, traces::kOomAllFields);
}

}  // namespace
}  // namespace fragscope
