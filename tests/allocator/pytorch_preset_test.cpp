// preset=pytorch: PyTorch's CUDA caching allocator. Each rule of c10/cuda/CUDACachingAllocator.cpp
// the preset reproduces, with exact numbers: rounding, pools and segment sizes, best fit per
// stream, the split rules, oversize blocks, release and retry before an OOM, the garbage
// collection threshold and expandable segments; and its settings in the configuration string.
// The figures PyTorch itself recorded on real snapshots are asserted in tests/cli/cli_test.cpp
// (Cli.PytorchPresetReproducesPytorchsFigures).
#include <array>
#include <random>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/allocator/pytorch_sizes.hpp"

namespace fragscope {
namespace {

std::unique_ptr<MemorySystem> Make(const std::string& conf) {
  return MemorySystem::Create(ParseAllocConf("preset=pytorch,backing=sim,capacity=8GiB," + conf));
}

std::vector<std::uint64_t> RegionSizes(const DeviceAllocator& allocator) {
  std::vector<std::uint64_t> sizes;
  for (const RegionView& region : allocator.Snapshot().regions) sizes.push_back(region.size);
  return sizes;
}

std::uint64_t Addr(void* p) { return reinterpret_cast<std::uint64_t>(p); }

TEST(PytorchPreset, RoundsTo512BytesOrToPowerOfTwoDivisions) {
  PytorchSettings plain;
  EXPECT_EQ(pytorch::RoundSize(0, plain), 512u);
  EXPECT_EQ(pytorch::RoundSize(1, plain), 512u);
  EXPECT_EQ(pytorch::RoundSize(512, plain), 512u);
  EXPECT_EQ(pytorch::RoundSize(513, plain), 1024u);
  EXPECT_EQ(pytorch::RoundSize(5 * MiB + 1, plain), 5 * MiB + 512);
  // Four divisions: 5 MiB + 1 lies between 4 and 8 MiB, whose quarters are 4, 5, 6, 7 MiB.
  PytorchSettings four;
  four.roundup_power2_divisions.fill(4);
  EXPECT_EQ(pytorch::RoundSize(5 * MiB + 1, four), 6 * MiB);
  EXPECT_EQ(pytorch::RoundSize(5 * MiB, four), 5 * MiB);
  EXPECT_EQ(pytorch::RoundSize(8 * MiB, four), 8 * MiB) << "a power of two stays";
  EXPECT_EQ(pytorch::RoundSize(1200, four), 1536u) << "at most 512 x divisions: 512-byte rounding";
  // Per interval: [0] is everything below 2 MiB, [2] sizes from 4 to 8 MiB.
  PytorchSettings only_4_to_8;
  only_4_to_8.roundup_power2_divisions[2] = 2;
  EXPECT_EQ(pytorch::RoundSize(5 * MiB + 1, only_4_to_8), 6 * MiB);
  EXPECT_EQ(pytorch::RoundSize(9 * MiB + 1, only_4_to_8), 9 * MiB + 512);
}

TEST(PytorchPreset, SegmentSizesFollowTheRequest) {
  EXPECT_EQ(pytorch::AllocationSize(512), 2 * MiB);
  EXPECT_EQ(pytorch::AllocationSize(MiB), 2 * MiB) << "1 MiB is still the small pool";
  EXPECT_EQ(pytorch::AllocationSize(MiB + 512), 20 * MiB);
  EXPECT_EQ(pytorch::AllocationSize(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(pytorch::AllocationSize(10 * MiB), 10 * MiB);
  EXPECT_EQ(pytorch::AllocationSize(11 * MiB + 512), 12 * MiB);
}

// Small requests share 2 MiB segments; 1-10 MiB requests share 20 MiB ones; the pools never mix.
TEST(PytorchPreset, SmallAndLargePoolsPackIntoTheirOwnSegments) {
  auto system = Make("limit=1GiB");
  DeviceAllocator& a = system->device(0);
  std::vector<void*> small;
  for (int i = 0; i < 20; ++i) small.push_back(a.Allocate(100 * KiB));  // 20 x 100 KiB < 2 MiB
  EXPECT_EQ(RegionSizes(a), std::vector<std::uint64_t>{2 * MiB});
  std::vector<void*> large;
  for (int i = 0; i < 4; ++i) large.push_back(a.Allocate(5 * MiB));  // exactly one 20 MiB segment
  a.CheckInvariants();
  EXPECT_EQ(a.Stats().reserved, 22 * MiB);
  EXPECT_EQ(a.Stats().regions, 2u);
  EXPECT_EQ(Addr(large[1]), Addr(large[0]) + 5 * MiB) << "split from the front, in address order";
  large.push_back(a.Allocate(5 * MiB));
  EXPECT_EQ(a.Stats().reserved, 42 * MiB) << "a fifth 5 MiB block needs a second 20 MiB segment";
  void* big = a.Allocate(33 * MiB);  // >= 10 MiB: its own segment, rounded up to 2 MiB
  EXPECT_EQ(a.Stats().reserved, 42 * MiB + 34 * MiB);
  // The small pool does not serve a large request even when it has room: 1 MiB + 512 B is large,
  // and goes to the free 15 MiB of the second large segment.
  for (void* p : small) a.Free(p);
  void* mib = a.Allocate(MiB + 512);
  EXPECT_EQ(Addr(mib), Addr(large[4]) + 5 * MiB);
  EXPECT_EQ(a.Stats().reserved, 76 * MiB);
  a.Free(mib);
  a.Free(big);
  for (void* p : large) a.Free(p);
  a.CheckInvariants();
  EXPECT_EQ(a.Stats().in_use, 0u);
  EXPECT_EQ(a.Stats().reserved, 76 * MiB) << "all cached";
  EXPECT_EQ(a.ReleaseFreeRegions(), 76 * MiB) << "empty_cache gives every whole cached segment back";
  EXPECT_EQ(a.Stats().reserved, 0u);
}

// Large pool: split only when more than 1 MiB remains (else the caller gets the whole block);
// small pool: when at least 512 B remain.
TEST(PytorchPreset, SplitsLargeBlocksOnlyAboveOneMebibyteOfRemainder) {
  auto system = Make("limit=1GiB");
  DeviceAllocator& a = system->device(0);
  void* hole = a.Allocate(12 * MiB);  // a 12 MiB segment
  a.Free(hole);
  void* p = a.Allocate(11 * MiB + 512);  // remainder 512 KiB: whole block
  EXPECT_EQ(p, hole);
  EXPECT_EQ(a.Stats().in_use, 12 * MiB);
  a.Free(p);
  p = a.Allocate(10 * MiB);  // remainder 2 MiB: split
  EXPECT_EQ(a.Stats().in_use, 10 * MiB);
  EXPECT_EQ(a.Stats().regions, 1u);
  a.Free(p);
  void* s = a.Allocate(2 * MiB - 512);  // small pool? no: 2 MiB - 512 B is large (> 1 MiB)
  EXPECT_EQ(a.Stats().regions, 1u) << "served from the cached 12 MiB segment";
  EXPECT_EQ(a.Stats().in_use, 2 * MiB - 512);
  a.Free(s);
  void* tiny = a.Allocate(MiB);  // small pool, 2 MiB segment, remainder 1 MiB: split
  void* tiny2 = a.Allocate(MiB - 512);  // remainder 512 B >= 512: split
  void* tiny3 = a.Allocate(1);
  EXPECT_EQ(a.Stats().regions, 2u);
  EXPECT_EQ(Addr(tiny3), Addr(tiny2) + MiB - 512);
  for (void* q : {tiny, tiny2, tiny3}) a.Free(q);
  a.CheckInvariants();
}

// Best fit is per stream: a block cached by one stream is not handed to another.
TEST(PytorchPreset, BestFitIsPerStream) {
  auto system = Make("limit=1GiB");
  DeviceAllocator& a = system->device(0);
  void* p = a.Allocate(100 * KiB, {.stream = 1});
  a.Free(p);
  void* q = a.Allocate(100 * KiB, {.stream = 2});
  EXPECT_NE(q, p);
  EXPECT_EQ(a.Stats().regions, 2u) << "stream 2 gets its own 2 MiB segment";
  void* r = a.Allocate(100 * KiB, {.stream = 1});
  EXPECT_EQ(r, p) << "stream 1 reuses its cached block";
  a.Free(q);
  a.Free(r);
  a.CheckInvariants();
}

// Before an OOM, every cached segment that is one free block goes back and the request is
// retried: a 16 MiB request under a 20 MiB limit fits after the cached 12 MiB segment is freed.
TEST(PytorchPreset, ReleasesCachedSegmentsAndRetriesBeforeAnOom) {
  auto system = Make("limit=20MiB");
  DeviceAllocator& a = system->device(0);
  a.Free(a.Allocate(12 * MiB));
  EXPECT_EQ(a.Stats().reserved, 12 * MiB);
  void* p = a.Allocate(16 * MiB);
  const AllocatorStats stats = a.Stats();
  EXPECT_EQ(stats.reserved, 16 * MiB);
  EXPECT_EQ(stats.region_releases, 1u);
  EXPECT_EQ(stats.gc_runs, 1u);
  a.Free(p);
  a.CheckInvariants();
}

// 8 MiB requests get 20 MiB segments, two blocks each, 4 MiB stranded per segment: under a 1 GiB
// limit PyTorch serves 102 of them in 51 segments and fails the 103rd with 204 MiB free.
TEST(PytorchPreset, StrandsTheTailOfEachTwentyMebibyteSegment) {
  auto system = Make("limit=1GiB");
  DeviceAllocator& a = system->device(0);
  std::vector<void*> held;
  OomReport report;
  while (void* p = a.TryAllocate(8 * MiB, {}, &report)) held.push_back(p);
  EXPECT_EQ(held.size(), 102u);
  EXPECT_EQ(a.Stats().regions, 51u);
  EXPECT_EQ(report.cause(), OomCause::kFragmentation);
  EXPECT_EQ(report.numbers.free_in_regions, 204 * MiB);
  EXPECT_EQ(report.numbers.largest_free, 4 * MiB);
  EXPECT_EQ(report.numbers.headroom, 4 * MiB);
  EXPECT_NE(report.suggestion.find("expandable_segments"), std::string::npos) << report.suggestion;
  a.CheckInvariants();
  for (void* p : held) a.Free(p);
}

// max_split_size_mb: blocks from there up are never split and serve only requests of their own
// kind, within 20 MiB of their size; before an OOM the oversize cached blocks go first.
TEST(PytorchPreset, MaxSplitSizeKeepsOversizeBlocksWhole) {
  auto system = Make("limit=1GiB,max_split_size_mb=32");
  DeviceAllocator& a = system->device(0);
  void* big = a.Allocate(40 * MiB);
  a.Free(big);
  void* p = a.Allocate(30 * MiB);  // below max_split: an oversize block is not for it
  EXPECT_NE(p, big);
  EXPECT_EQ(a.Stats().regions, 2u);
  a.Free(p);
  void* q = a.Allocate(36 * MiB);  // oversize request: the 40 MiB block, unsplit
  EXPECT_EQ(q, big);
  EXPECT_EQ(a.Stats().in_use, 40 * MiB);
  a.Free(q);
  void* r = a.Allocate(100 * MiB);  // 40 MiB cached is not within 20 MiB of it: a new segment
  EXPECT_NE(r, big);
  a.Free(r);
  a.CheckInvariants();
  // Without max_split_size the 30 MiB request splits the cached 40 MiB segment.
  auto plain = Make("limit=1GiB");
  void* b = plain->device(0).Allocate(40 * MiB);
  plain->device(0).Free(b);
  EXPECT_EQ(plain->device(0).Allocate(30 * MiB), b);
}

TEST(PytorchPreset, ReleasesOversizeBlocksBeforeEverythingElse) {
  auto system = Make("limit=90MiB,max_split_size_mb=32");
  DeviceAllocator& a = system->device(0);
  void* keep = a.Allocate(16 * MiB);  // a 16 MiB segment, in use
  a.Free(a.Allocate(40 * MiB));       // an oversize cached segment
  a.Free(a.Allocate(12 * MiB));       // a 12 MiB cached segment
  EXPECT_EQ(a.Stats().reserved, 68 * MiB);
  // 68 + 30 > 90: release_available_cached_blocks frees the oversize 40 MiB segment only.
  void* p = a.Allocate(30 * MiB);
  EXPECT_EQ(a.Stats().reserved, 58 * MiB);
  EXPECT_EQ(a.Stats().region_releases, 1u);
  EXPECT_EQ(a.Stats().gc_runs, 0u) << "the full release was not needed";
  a.Free(p);
  a.Free(keep);
  a.CheckInvariants();
}

// garbage_collection_threshold: when reserved is above that fraction of the limit and a new
// segment is needed, cached whole segments of the large pool unused for at least the average
// number of lookups are released first (all of them here: they aged alike).
TEST(PytorchPreset, GarbageCollectionThresholdReleasesAgedSegments) {
  auto system = Make("limit=100MiB,garbage_collection_threshold=0.5");
  DeviceAllocator& a = system->device(0);
  std::vector<void*> ptrs;
  for (int i = 0; i < 5; ++i) ptrs.push_back(a.Allocate(12 * MiB));  // 60 MiB in 5 segments
  for (void* p : ptrs) a.Free(p);
  void* bigger = a.Allocate(14 * MiB);  // no cached block fits, 60 MiB > 50 MiB: gc first
  AllocatorStats stats = a.Stats();
  EXPECT_EQ(stats.reserved, 14 * MiB);
  EXPECT_EQ(stats.region_releases, 5u);
  EXPECT_EQ(stats.gc_runs, 0u) << "gc by threshold is not the release before an OOM";
  a.Free(bigger);
  // Below the threshold nothing is released: 14 + 12 MiB.
  a.Free(a.Allocate(16 * MiB));
  EXPECT_EQ(a.Stats().reserved, 30 * MiB);
  // Without the threshold nothing is released until the limit bites.
  auto plain = Make("limit=100MiB");
  std::vector<void*> more;
  for (int i = 0; i < 5; ++i) more.push_back(plain->device(0).Allocate(12 * MiB));
  for (void* p : more) plain->device(0).Free(p);
  plain->device(0).Free(plain->device(0).Allocate(14 * MiB));
  EXPECT_EQ(plain->device(0).Stats().reserved, 74 * MiB);
}

// expandable_segments: one address range per stream and pool; 20 MiB pages for the large pool
// and 2 MiB for the small, mapped at the lowest address that fits; free pages unmapped only when
// memory is needed, so the 8 MiB sequence that strands 4 MiB per segment now fills the limit.
TEST(PytorchPreset, ExpandableSegmentsMapPagesAndFillTheLimit) {
  auto system = Make("limit=1GiB,expandable_segments=on");
  DeviceAllocator& a = system->device(0);
  void* first = a.Allocate(5 * MiB);
  AllocatorStats stats = a.Stats();
  EXPECT_EQ(stats.reserved, 20 * MiB) << "one large page";
  EXPECT_EQ(stats.maps, 1u);
  EXPECT_EQ(stats.address_space, (8 * GiB + GiB) / (20 * MiB) * (20 * MiB) + 20 * MiB)
      << "1 1/8 of the device, in whole pages";
  void* second = a.Allocate(5 * MiB);
  EXPECT_EQ(Addr(second), Addr(first) + 5 * MiB);
  void* tiny = a.Allocate(4 * KiB);
  EXPECT_EQ(a.Stats().reserved, 22 * MiB) << "the small pool's own range, one 2 MiB page";
  a.Free(tiny);
  a.Free(second);
  a.Free(first);
  a.CheckInvariants();
  EXPECT_EQ(a.ReleaseFreeRegions(), 22 * MiB);
  EXPECT_EQ(a.Stats().reserved, 0u);
  EXPECT_EQ(a.Stats().address_space, 0u) << "a range with nothing mapped is given back";

  std::vector<void*> held;
  OomReport report;
  while (void* p = a.TryAllocate(8 * MiB, {}, &report)) {
    held.push_back(p);
    ASSERT_LE(a.Stats().reserved, GiB);
  }
  EXPECT_EQ(held.size(), 127u) << "1020 MiB of 20 MiB pages hold 127 blocks of 8 MiB";
  EXPECT_EQ(report.cause(), OomCause::kFragmentation) << "4 MiB stranded on the last page";
  a.CheckInvariants();
  // 8 MiB holes between live blocks strand their pages: a hole never holds a whole 20 MiB page.
  // Two runs of 10 free blocks (80 MiB, 4 whole pages each) do: a 120 MiB request fits in no free
  // block and not under the limit, so the free pages are unmapped (two ranges) and 6 pages are
  // mapped at the lowest address where free and unmapped space in a row hold it: after the last
  // live block, whose page's free 4 MiB it absorbs.
  const std::uint64_t unmaps_before = a.Stats().unmaps;
  for (std::size_t i = 0; i < 10; ++i) a.Free(held[i]);
  for (std::size_t i = 40; i < 50; ++i) a.Free(held[i]);
  void* big = a.Allocate(120 * MiB);
  EXPECT_EQ(Addr(big), Addr(held.back()) + 8 * MiB);
  EXPECT_EQ(a.Stats().unmaps - unmaps_before, 2u);
  EXPECT_EQ(a.Stats().reserved, 1020 * MiB - 160 * MiB + 120 * MiB);
  a.CheckInvariants();
  // Unmapped space is mapped again where it lies: a 40 MiB request goes to the range's start.
  void* again = a.Allocate(40 * MiB);
  EXPECT_EQ(again, held[0]);
  EXPECT_EQ(a.Stats().reserved, 1020 * MiB - 160 * MiB + 120 * MiB + 40 * MiB);
  a.Free(again);
  a.Free(big);
  for (std::size_t i = 10; i < held.size(); ++i) {
    if (i < 40 || i >= 50) a.Free(held[i]);
  }
  a.CheckInvariants();
}

TEST(PytorchPreset, EveryOperationKeepsTheInvariants) {
  for (const char* conf : {"limit=256MiB", "limit=256MiB,expandable_segments=on",
                           "limit=256MiB,max_split_size_mb=24,garbage_collection_threshold=0.6",
                           "limit=256MiB,roundup_power2_divisions=[1:4,2:2,>:8]"}) {
    SCOPED_TRACE(conf);
    auto system = Make(conf);
    DeviceAllocator& a = system->device(0);
    std::mt19937_64 rng(42);
    std::vector<void*> live;
    std::uint64_t ooms = 0;
    for (int op = 0; op < 6000; ++op) {
      if (!live.empty() && rng() % 100 < 45) {
        const std::size_t victim = rng() % live.size();
        a.Free(live[victim]);
        live[victim] = live.back();
        live.pop_back();
      } else {
        const int kind = static_cast<int>(rng() % 3);
        const std::uint64_t size = kind == 0   ? 1 + rng() % MiB
                                   : kind == 1 ? MiB + rng() % (9 * MiB)
                                               : 10 * MiB + rng() % (40 * MiB);
        if (void* p = a.TryAllocate(size, {.stream = rng() % 2}, nullptr)) live.push_back(p);
        else ++ooms;
      }
      a.CheckInvariants();
    }
    EXPECT_GT(ooms, 0u) << "the limit bit";
    for (void* p : live) a.Free(p);
    a.ReleaseFreeRegions();
    a.CheckInvariants();
    EXPECT_EQ(a.Stats().reserved, 0u);
  }
}

TEST(PytorchPreset, SettingsReadAndPrintUnderPytorchsNames) {
  const AllocConf conf = ParseAllocConf(
      "preset=pytorch,expandable_segments=True,max_split_size_mb=128,garbage_collection_threshold=0.6,"
      "roundup_power2_divisions=[256:1,512:2,1024:4,>:8]");
  EXPECT_EQ(conf.policy, "pytorch");
  EXPECT_TRUE(conf.pytorch.expandable_segments);
  EXPECT_EQ(conf.pytorch.max_split_size, 128 * MiB);
  EXPECT_DOUBLE_EQ(conf.pytorch.garbage_collection_threshold, 0.6);
  // As PyTorch's parser: the first interval's value also covers every smaller size, '>' every
  // larger one.
  const std::array<std::uint32_t, 16> divisions = {1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8};
  EXPECT_EQ(conf.pytorch.roundup_power2_divisions, divisions);
  EXPECT_FALSE(conf.Paging()) << "PyTorch's own paging, not fragscope's";
  EXPECT_EQ(ParseAllocConf(conf.ToString()), conf) << conf.ToString();
  // The canonical form writes the list as short as PyTorch's own notation.
  EXPECT_NE(conf.ToString().find(",roundup_power2_divisions=[256:1,512:2,1024:4,>:8]"), std::string::npos)
      << conf.ToString();
  for (const char* list : {"[1:4,2:2,>:8]", "[32768:2]", "[1:0,2:4]", "[64:2,128:0,256:2,>:0]", "[256:1,>:1]"}) {
    const AllocConf listed = ParseAllocConf(std::string("preset=pytorch,roundup_power2_divisions=") + list);
    EXPECT_EQ(ParseAllocConf(listed.ToString()), listed) << list << " -> " << listed.ToString();
  }
  EXPECT_NE(ParseAllocConf("preset=pytorch,roundup_power2_divisions=[1:4,2:2,>:8]").ToString().find(
                "roundup_power2_divisions=[1:4,2:2,>:8]"),
            std::string::npos);
  const AllocConf single = ParseAllocConf("preset=pytorch,roundup_power2_divisions=4");
  EXPECT_NE(single.ToString().find("roundup_power2_divisions=4"), std::string::npos) << single.ToString();
  EXPECT_EQ(ParseAllocConf(single.ToString()), single);
  EXPECT_EQ(ParseAllocConf("preset=pytorch").ToString().find("max_split_size_mb"), std::string::npos);
}

TEST(PytorchPreset, BadSettingsNameTheKey) {
  struct Case {
    const char* conf;
    const char* key;
    const char* says;
  };
  for (const Case& c : {
           Case{"preset=pytorch,max_split_size_mb=10", "max_split_size_mb", "at least 20"},
           Case{"preset=pytorch,max_split_size_mb=1GiB", "max_split_size_mb", "whole number of MiB"},
           Case{"preset=pytorch,garbage_collection_threshold=1", "garbage_collection_threshold", "between 0 and 1"},
           Case{"preset=pytorch,garbage_collection_threshold=0", "garbage_collection_threshold", "between 0 and 1"},
           Case{"preset=pytorch,roundup_power2_divisions=3", "roundup_power2_divisions", "power of two"},
           Case{"preset=pytorch,roundup_power2_divisions=[256:3]", "roundup_power2_divisions", "power of two"},
           Case{"preset=pytorch,roundup_power2_divisions=[300:2]", "roundup_power2_divisions", "power of two"},
           Case{"preset=pytorch,roundup_power2_divisions=[256:2", "roundup_power2_divisions", "list"},
           Case{"preset=pytorch,roundup_power2_divisions=[]", "roundup_power2_divisions", "list"},
           Case{"max_split_size_mb=128", "max_split_size_mb", "preset=pytorch"},
           Case{"preset=tensorflow,expandable_segments=on", "expandable_segments", "preset=pytorch"},
           Case{"preset=pytorch,expandable=on", "expandable", "expandable_segments=on"},
           Case{"preset=pytorch,growth=off", "growth", "no growth setting"},
           Case{"preset=pytorch,gc=off", "gc", "always releases"},
           Case{"preset=pytorch,preallocate=0.5", "preallocate", "no preallocation"},
           Case{"preset=pytorch,backing=cuda,expandable_segments=on", "expandable_segments", "backing sim, host or vmm"},
       }) {
    SCOPED_TRACE(c.conf);
    try {
      ParseAllocConf(c.conf);
      ADD_FAILURE() << "accepted";
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.key(), c.key) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace fragscope
