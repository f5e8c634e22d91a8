// The allocator conformance suite: every backing that works on this machine (sim, host; cuda, vmm
// and async where a GPU is present) under every policy must pass the same behavioural checks.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "support/device_memory.hpp"
#include "fragscope/allocator/policy.hpp"
#include "policy_cases.hpp"
#include "support/recording_sink.hpp"
#include "support/counting_allocator.hpp"

namespace fragscope {
namespace {

using testing::PolicyCase;

// A policy registered here, at start-up, outside the library (as a program embedding fragscope
// would): it forwards to bfc and counts the allocations it forwards. The tables below list it
// with every other registered policy; PolicyTables checks that they do.
std::atomic<int> toy_allocations{0};

using testing::CountingAllocator;

const bool kToyRegistered = [] {
  Policy toy;
  toy.name = "toy";
  toy.description = "counts the allocations it forwards to bfc (conformance_test)";
  toy.create = [](const PolicyContext& context) -> std::unique_ptr<DeviceAllocator> {
    return std::make_unique<CountingAllocator>(FindPolicy("bfc")->create(context), &toy_allocations);
  };
  RegisterPolicy(std::move(toy));
  return true;
}();

// Every registered policy on every backing (TraitsOf says which can grow in place; the policy's
// own check which combinations it takes), with the variants a policy reacts to.
std::vector<PolicyCase> ConformanceCases() {
  const std::vector<testing::BackingBase> backings = {
      {BackingKind::kSim, "backing=sim,capacity=4GiB", ",limit=1GiB"},
      {BackingKind::kHost, "backing=host,capacity=8GiB", ",limit=1GiB"},
      {BackingKind::kCuda, "backing=cuda", ",limit=1GiB"},
      {BackingKind::kVmm, "backing=vmm", ",limit=1GiB"},
      {BackingKind::kAsync, "backing=async", ",limit=1GiB"},
  };
  const std::vector<testing::Variant> variants = {
      {"growth", ",growth=on"},
      {"growth_off", ",growth=off"},
      {"preallocate", ",preallocate=0.125"},
      {"unmap_eager", ",unmap=eager", true, true},
      {"gc_off", ",gc=off"},
      {"virtual_devices", ",virtual_devices=1GiB+512MiB", false, false, true},
      {"expandable_segments", ",expandable_segments=on", true, true},
  };
  return testing::EnumeratePolicyCases(backings, variants);
}

class Conformance : public ::testing::TestWithParam<PolicyCase> {
 protected:
  void SetUp() override {
    const AllocConf conf = ParseAllocConf(GetParam().conf);
    if (conf.backing == BackingKind::kCuda || conf.backing == BackingKind::kVmm ||
        conf.backing == BackingKind::kAsync) {
      std::string why;
      if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no GPU for " << GetParam().conf << ": " << why;
    }
    system_ = MemorySystem::Create(conf);
  }
  DeviceAllocator& allocator() { return system_->device(0); }
  const BackingInfo& info() { return system_->backing().info(); }

  std::unique_ptr<MemorySystem> system_;
};

TEST_P(Conformance, SizesAreRoundedAndAligned) {
  const std::uint64_t sizes[] = {0, 1, 255, 256, 257, 1000, 4096, MiB + 1, 37 * MiB};
  std::uint64_t rounded_sum = 0, requested_sum = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  for (std::uint64_t size : sizes) {
    void* ptr = allocator().Allocate(size);
    ASSERT_NE(ptr, nullptr);
    const auto address = reinterpret_cast<std::uint64_t>(ptr);
    EXPECT_EQ(address % 256, 0u) << "size " << size;
    spans.emplace_back(address, RoundUp(size));
    rounded_sum += RoundUp(size);
    requested_sum += size;
    allocator().CheckInvariants();
  }
  const AllocatorStats stats = allocator().Stats();
  EXPECT_EQ(stats.allocations, std::size(sizes));
  EXPECT_EQ(stats.live_requested, requested_sum);
  if (!system_->conf().passthrough && system_->conf().policy.empty()) {
    EXPECT_EQ(stats.in_use, rounded_sum);
  } else {
    // passthrough rounds to the backing's granularity; preset=tensorflow hands out a whole chunk
    // below twice the request, as TensorFlow does.
    EXPECT_GE(stats.in_use, rounded_sum);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    EXPECT_LE(spans[i - 1].first + spans[i - 1].second, spans[i].first) << "allocations overlap";
  }
  for (const auto& [address, size] : spans) allocator().Free(reinterpret_cast<void*>(address));
  allocator().CheckInvariants();
}

TEST_P(Conformance, RandomChurnKeepsDataAndNeverOverlaps) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(16.0 * MiB));
  struct Live { std::uint64_t size; std::uint64_t seed; };
  std::map<std::uint64_t, Live> live;  // by address
  for (int op = 0; op < 20000; ++op) {
    const bool allocate = live.size() < 8 || (live.size() < 200 && rng() % 2 == 0);
    if (allocate) {
      const auto size = static_cast<std::uint64_t>(std::exp(log_size(rng)));
      OomReport report;
      void* ptr = allocator().TryAllocate(size, {}, &report);
      if (ptr == nullptr) continue;  // the limit is allowed to bite; the state must stay valid
      const auto address = reinterpret_cast<std::uint64_t>(ptr);
      auto next = live.lower_bound(address);
      if (next != live.end()) {
        ASSERT_LE(address + size, next->first) << "overlaps the next allocation";
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second.size, address) << "overlaps the previous allocation";
      }
      testing::WritePattern(info(), ptr, size, static_cast<std::uint64_t>(op));
      live.emplace(address, Live{size, static_cast<std::uint64_t>(op)});
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      void* ptr = reinterpret_cast<void*>(it->first);
      ASSERT_TRUE(testing::CheckPattern(info(), ptr, it->second.size, it->second.seed))
          << "data of the allocation at " << ptr << " changed";
      allocator().Free(ptr);
      live.erase(it);
    }
    if (op % 97 == 0) allocator().CheckInvariants();
  }
  for (const auto& [address, l] : live) {
    ASSERT_TRUE(testing::CheckPattern(info(), reinterpret_cast<void*>(address), l.size, l.seed));
    allocator().Free(reinterpret_cast<void*>(address));
  }
  allocator().CheckInvariants();
  EXPECT_EQ(allocator().Stats().in_use, 0u);
}

TEST_P(Conformance, StatsTrackCurrentAndPeak) {
  void* a = allocator().Allocate(3 * MiB);
  void* b = allocator().Allocate(1000);
  AllocatorStats stats = allocator().Stats();
  const std::uint64_t both = stats.in_use;
  EXPECT_EQ(stats.live_requested, 3 * MiB + 1000);
  EXPECT_EQ(stats.allocations, 2u);
  EXPECT_GE(stats.reserved, stats.in_use);
  allocator().Free(a);
  stats = allocator().Stats();
  EXPECT_EQ(stats.live_requested, 1000u);
  EXPECT_EQ(stats.peak_live_requested, 3 * MiB + 1000);
  EXPECT_EQ(stats.peak_in_use, both);
  EXPECT_EQ(stats.peak_allocations, 2u);
  EXPECT_EQ(stats.total_allocs, 2u);
  EXPECT_EQ(stats.total_frees, 1u);
  EXPECT_LE(stats.utilization(), 1.0);
  EXPECT_GE(stats.external_fragmentation(), 0.0);
  EXPECT_LT(stats.external_fragmentation(), 1.0);
  allocator().ResetPeaks();
  EXPECT_EQ(allocator().Stats().peak_live_requested, 1000u);
  allocator().Free(b);
  allocator().CheckInvariants();
}

TEST_P(Conformance, LimitIsNeverExceededAndOomLeavesStateUsable) {
  std::vector<void*> held;
  OomReport report;
  for (;;) {
    void* ptr = allocator().TryAllocate(8 * MiB, {}, &report);
    if (ptr == nullptr) break;
    held.push_back(ptr);
    ASSERT_LE(allocator().Stats().reserved, allocator().limit());
    ASSERT_LT(held.size(), 10000u) << "the limit never bit";
  }
  const AllocatorStats stats = allocator().Stats();
  EXPECT_LE(stats.reserved, allocator().limit());
  EXPECT_LE(held.size() * 8 * MiB, allocator().limit());
  // PyTorch packs two 8 MiB blocks per 20 MiB segment and strands the rest, as the real one does
  // (its exact figures: pytorch_preset_test.cpp); every other policy uses the limit to within two
  // requests.
  if (ParseAllocConf(GetParam().conf).policy != "pytorch") {
    EXPECT_GE(held.size() * 8 * MiB + 8 * MiB + 16 * MiB, allocator().limit())
        << "more than two requests' worth of the limit went unused";
  }
  EXPECT_EQ(report.numbers.in_use, stats.in_use);
  EXPECT_EQ(report.numbers.reserved, stats.reserved);
  EXPECT_EQ(report.numbers.limit, allocator().limit());
  EXPECT_TRUE(report.cause() == OomCause::kCapacity || report.cause() == OomCause::kFragmentation)
      << traces::ToString(report.cause());
  EXPECT_FALSE(report.explanation.empty());
  EXPECT_FALSE(report.suggestion.empty());
  ASSERT_TRUE(allocator().LastOom().has_value());
  EXPECT_EQ(allocator().LastOom()->numbers.rounded, 8 * MiB);
  EXPECT_THROW(allocator().Allocate(8 * MiB), OutOfMemory);
  allocator().CheckInvariants();
  // Every live allocation survived; after freeing one, the same request fits again.
  allocator().Free(held.back());
  held.pop_back();
  void* again = allocator().Allocate(8 * MiB);
  held.push_back(again);
  for (void* ptr : held) allocator().Free(ptr);
  allocator().CheckInvariants();
  EXPECT_EQ(allocator().Stats().in_use, 0u);
}

TEST_P(Conformance, InvalidAndDoubleFreeRaiseAndChangeNothing) {
  void* a = allocator().Allocate(4096);
  void* b = allocator().Allocate(4096);
  allocator().Free(a);
  const AllocatorStats before = allocator().Stats();
  EXPECT_THROW(allocator().Free(a), InvalidFree);                       // double free
  EXPECT_THROW(allocator().Free(static_cast<char*>(b) + 256), InvalidFree);  // inside
  EXPECT_THROW(allocator().Free(reinterpret_cast<void*>(0x10)), InvalidFree);
  EXPECT_THROW(allocator().Free(nullptr), InvalidFree);
  try {
    allocator().Free(a);
  } catch (const InvalidFree& error) {
    EXPECT_EQ(error.ptr(), a);
    EXPECT_NE(std::string(error.what()).find("invalid free"), std::string::npos) << error.what();
  }
  const AllocatorStats after = allocator().Stats();
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.reserved, before.reserved);
  EXPECT_EQ(after.allocations, before.allocations);
  allocator().CheckInvariants();
  allocator().Free(b);
}

TEST_P(Conformance, FreeingEverythingAndGcReturnsAllMemory) {
  std::vector<void*> ptrs;
  for (int i = 0; i < 50; ++i) ptrs.push_back(allocator().Allocate((static_cast<std::uint64_t>(i) + 1) * 300 * KiB));
  for (void* ptr : ptrs) allocator().Free(ptr);
  AllocatorStats stats = allocator().Stats();
  EXPECT_EQ(stats.in_use, 0u);
  EXPECT_EQ(stats.live_requested, 0u);
  EXPECT_EQ(stats.allocations, 0u);
  for (const RegionView& region : allocator().Snapshot().regions) {
    if (region.size == 0) continue;  // an expandable region with nothing mapped
    EXPECT_EQ(region.chunks.size(), 1u) << "free chunks of region " << region.address
                                        << " were not coalesced";
  }
  allocator().ReleaseFreeRegions();
  allocator().CheckInvariants();
  stats = allocator().Stats();
  // An expandable region keeps its address space but no mapped page.
  EXPECT_EQ(stats.reserved, 0u);
}

TEST_P(Conformance, EventsDescribeEveryOperation) {
  testing::RecordingSink sink;
  allocator().SetSink(&sink);
  const std::size_t initial = sink.events().size();  // regions that existed before (preallocation)
  const traces::TagId tag = sink.Intern("layer1.conv/activation");
  void* a = allocator().Allocate(1000, {.stream = 7, .tag = tag});
  allocator().Mark("step 0 begin");
  allocator().Free(a);
  allocator().SetSink(nullptr);
  allocator().Allocate(5);  // not recorded

  std::vector<traces::Event> events = sink.events();
  events.erase(events.begin(), events.begin() + static_cast<long>(initial));
  std::vector<traces::Event> allocs, frees, markers;
  for (const auto& e : events) {
    if (e.type == traces::EventType::kAlloc) allocs.push_back(e);
    if (e.type == traces::EventType::kFree) frees.push_back(e);
    if (e.type == traces::EventType::kMarker) markers.push_back(e);
  }
  ASSERT_EQ(allocs.size(), 1u);
  ASSERT_EQ(frees.size(), 1u);
  ASSERT_EQ(markers.size(), 1u);
  EXPECT_EQ(allocs[0].address, reinterpret_cast<std::uint64_t>(a));
  EXPECT_EQ(allocs[0].size, 1000u);
  EXPECT_GE(allocs[0].rounded, 1024u);
  EXPECT_EQ(allocs[0].stream, 7u);
  EXPECT_EQ(sink.Name(allocs[0].tag), "layer1.conv/activation");
  EXPECT_NE(allocs[0].alloc_id, 0u);
  EXPECT_NE(allocs[0].region, 0u);
  EXPECT_EQ(frees[0].alloc_id, allocs[0].alloc_id);
  EXPECT_EQ(frees[0].address, allocs[0].address);
  EXPECT_EQ(sink.Name(markers[0].tag), "step 0 begin");
  EXPECT_LT(allocs[0].seq, markers[0].seq);
  EXPECT_LT(markers[0].seq, frees[0].seq);
  EXPECT_LE(allocs[0].time_ns, frees[0].time_ns);
  // The memory holding the allocation was announced before it: a region, or pages mapped into
  // an expandable region's address range.
  bool announced = false;
  for (const auto& e : sink.events()) {
    if ((e.type == traces::EventType::kRegionReserve || e.type == traces::EventType::kMap) &&
        e.address <= allocs[0].address &&
        allocs[0].address < e.address + e.size && e.seq < allocs[0].seq) {
      announced = true;
    }
  }
  EXPECT_TRUE(announced);
}

TEST_P(Conformance, VirtualDevicesHaveTheirOwnLimits) {
  if (system_->device_count() < 2) GTEST_SKIP() << "one device in " << GetParam().conf;
  DeviceAllocator& second = system_->device(1);
  EXPECT_EQ(second.device(), 1u);
  EXPECT_EQ(second.limit(), 512 * MiB);
  void* big = allocator().Allocate(900 * MiB);  // fits device 0 (1 GiB) only
  EXPECT_THROW(second.Allocate(600 * MiB), OutOfMemory);
  void* small = second.Allocate(400 * MiB);
  EXPECT_EQ(system_->backing().held(), allocator().Stats().reserved + second.Stats().reserved)
      << "both devices take their regions from the one backing";
  EXPECT_EQ(second.Stats().live_requested, 400 * MiB);
  EXPECT_EQ(allocator().Stats().live_requested, 900 * MiB);
  EXPECT_THROW(second.Free(big), InvalidFree);
  second.Free(small);
  allocator().Free(big);
  second.CheckInvariants();
  allocator().CheckInvariants();
}

// Property: sizes at, below and above every power of two up to 2^64 (where rounding to 256 B
// wraps) either succeed with memory no live allocation shares, or fail as an OOM that leaves the
// state untouched; a request above the limit or above kMaxRequestBytes is request-too-large.
TEST_P(Conformance, SizesNearEveryPowerOfTwoNeverOverlap) {
  std::vector<std::uint64_t> sizes;
  for (int k = 0; k < 64; ++k) {
    const std::uint64_t power = std::uint64_t{1} << k;
    sizes.insert(sizes.end(), {power - 1, power, power + 1});
  }
  for (std::uint64_t below : {0u, 1u, 254u, 255u, 256u, 257u}) sizes.push_back(UINT64_MAX - below);
  sizes.insert(sizes.end(), {kMaxRequestBytes - 1, kMaxRequestBytes, kMaxRequestBytes + 1});

  std::map<std::uint64_t, std::uint64_t> live;  // address -> requested
  auto expect_no_overlap = [&](std::uint64_t address, std::uint64_t size, std::uint64_t asked) {
    auto next = live.lower_bound(address);
    if (next != live.end()) {
      EXPECT_LE(address + RoundUp(size), next->first) << "request " << asked << " overlaps";
    }
    if (next != live.begin()) {
      auto prev = std::prev(next);
      EXPECT_LE(prev->first + RoundUp(prev->second), address) << "request " << asked << " overlaps";
    }
  };
  const std::uint64_t limit = allocator().limit();
  for (const std::uint64_t size : sizes) {
    const AllocatorStats before = allocator().Stats();
    OomReport report;
    void* ptr = allocator().TryAllocate(size, {}, &report);
    allocator().CheckInvariants();
    if (ptr == nullptr) {
      const AllocatorStats after = allocator().Stats();
      EXPECT_EQ(after.allocations, before.allocations) << size;
      EXPECT_EQ(after.in_use, before.in_use) << size;
      EXPECT_EQ(after.total_ooms, before.total_ooms + 1) << size;
      EXPECT_EQ(report.numbers.request, size);
      if (size > kMaxRequestBytes || RoundUp(size) > limit) {
        EXPECT_EQ(report.cause(), OomCause::kRequestTooLarge) << size;
      } else {
        EXPECT_NE(report.cause(), OomCause::kRequestTooLarge) << size;
      }
      continue;
    }
    ASSERT_LE(size, limit) << "a request above the limit succeeded";
    const auto address = reinterpret_cast<std::uint64_t>(ptr);
    expect_no_overlap(address, size, size);
    live.emplace(address, size);
    // A small allocation right after must land elsewhere (the wrapped rounding gave it the same
    // address as the 2^64 - 1 request).
    void* probe = allocator().Allocate(4096);
    expect_no_overlap(reinterpret_cast<std::uint64_t>(probe), 4096, 4096);
    allocator().Free(probe);
    allocator().CheckInvariants();
    if (size > 64 * MiB) {  // keep the live set small so the sequence goes on to the huge sizes
      allocator().Free(ptr);
      live.erase(address);
      allocator().CheckInvariants();
    }
  }
  for (const auto& [address, size] : live) allocator().Free(reinterpret_cast<void*>(address));
  allocator().CheckInvariants();
  EXPECT_EQ(allocator().Stats().allocations, 0u);
}

// The table is the registry's: the toy registered above is in it on every backing that takes it,
// with the variants MemorySystem gives every policy; the variants only bfc reacts to are bfc's.
TEST(PolicyTables, EveryRegisteredPolicyOnEveryBackingThatTakesIt) {
  std::vector<std::string> names;
  for (const PolicyCase& c : ConformanceCases()) names.push_back(c.name);
  // bfc on sim, host and vmm is the default, paging with lazy unmapping; on cuda, regions with
  // growth (so no separate growth case there).
  const std::vector<std::string> expected = {
      "sim_bfc", "sim_bfc_growth", "sim_bfc_growth_off", "sim_bfc_preallocate", "sim_bfc_unmap_eager",
      "sim_bfc_gc_off", "sim_bfc_virtual_devices", "sim_passthrough", "sim_passthrough_virtual_devices",
      "sim_tensorflow", "sim_tensorflow_growth_off", "sim_tensorflow_gc_off", "sim_tensorflow_virtual_devices",
      "sim_pytorch", "sim_pytorch_virtual_devices", "sim_pytorch_expandable_segments", "sim_toy", "sim_toy_virtual_devices", "host_bfc", "host_bfc_growth", "host_bfc_growth_off",
      "host_bfc_preallocate", "host_bfc_unmap_eager", "host_bfc_gc_off", "host_bfc_virtual_devices",
      "host_passthrough", "host_passthrough_virtual_devices", "host_tensorflow", "host_tensorflow_growth_off",
      "host_tensorflow_gc_off", "host_tensorflow_virtual_devices", "host_pytorch", "host_pytorch_virtual_devices", "host_pytorch_expandable_segments", "host_toy", "host_toy_virtual_devices",
      "cuda_bfc", "cuda_bfc_growth_off", "cuda_bfc_preallocate", "cuda_bfc_gc_off",
      "cuda_bfc_virtual_devices", "cuda_passthrough", "cuda_passthrough_virtual_devices", "cuda_tensorflow",
      "cuda_tensorflow_growth_off", "cuda_tensorflow_gc_off", "cuda_tensorflow_virtual_devices", "cuda_pytorch", "cuda_pytorch_virtual_devices", "cuda_toy",
      "cuda_toy_virtual_devices", "vmm_bfc", "vmm_bfc_growth", "vmm_bfc_growth_off",
      "vmm_bfc_preallocate", "vmm_bfc_unmap_eager", "vmm_bfc_gc_off", "vmm_bfc_virtual_devices",
      "vmm_passthrough", "vmm_passthrough_virtual_devices", "vmm_tensorflow", "vmm_tensorflow_growth_off",
      "vmm_tensorflow_gc_off", "vmm_tensorflow_virtual_devices", "vmm_pytorch", "vmm_pytorch_virtual_devices", "vmm_pytorch_expandable_segments", "vmm_toy", "vmm_toy_virtual_devices",
      "async_passthrough", "async_passthrough_virtual_devices"};
  EXPECT_EQ(names, expected);

  // MemorySystem builds the toy by name; the allocations go through it.
  const int before = toy_allocations.load();
  auto system = MemorySystem::Create(ParseAllocConf("backing=sim,capacity=1GiB,limit=64MiB,policy=toy"));
  void* ptr = system->device(0).Allocate(4096);
  EXPECT_EQ(toy_allocations.load() - before, 1);
  EXPECT_EQ(system->device(0).Stats().reserved, 2 * MiB) << "bfc underneath: one page mapped";
  system->device(0).Free(ptr);
  system->device(0).CheckInvariants();
}

INSTANTIATE_TEST_SUITE_P(AllBackingsAndPolicies, Conformance, ::testing::ValuesIn(ConformanceCases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace fragscope
