// The paging model (expandable=on, the default on sim/host/vmm): address space apart from mapped
// pages. Holes between live chunks strand no memory; what strands memory is the free part of pages
// that live chunks share, and that is what a fragmentation OOM then says. Numbers are exact.
#include <cstring>
#include <fstream>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "support/capped_backing.hpp"
#include "support/recording_sink.hpp"

namespace fragscope {
namespace {

std::unique_ptr<MemorySystem> Make(const std::string& conf) {
  return MemorySystem::Create(ParseAllocConf(conf));
}

// Fills a 64 MiB limit with sixteen 4 MiB blocks and frees every other one: 32 MiB free in eight
// 4 MiB holes, no headroom. Returns the blocks still live.
std::vector<void*> Checkerboard(DeviceAllocator& allocator) {
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i) blocks.push_back(allocator.Allocate(4 * MiB));
  std::vector<void*> live;
  for (int i = 0; i < 16; ++i) {
    if (i % 2 == 1) allocator.Free(blocks[i]);
    else live.push_back(blocks[i]);
    allocator.CheckInvariants();
  }
  return live;
}

// Eight 1 MiB blocks in four 2 MiB pages, every other one freed: each page holds one live block and
// 1 MiB free. Returns all eight (the even ones are live).
std::vector<void*> HalfUsedPages(DeviceAllocator& allocator) {
  std::vector<void*> blocks;
  for (int i = 0; i < 8; ++i) blocks.push_back(allocator.Allocate(MiB));
  for (int i = 1; i < 8; i += 2) allocator.Free(blocks[i]);
  return blocks;
}

// A 512 MiB limit on a 1 GiB sim device of which another process leaves only `cap` bytes: the
// device refuses a map past them.
struct CappedSystem {
  std::unique_ptr<MemorySystem> system;
  testing::CappedBacking* device = nullptr;
};
CappedSystem MakeCapped(std::uint64_t cap) {
  const AllocConf conf = ParseAllocConf("backing=sim,capacity=1GiB,limit=512MiB");
  auto capped = std::make_unique<testing::CappedBacking>(MakeBacking(conf), cap);
  CappedSystem out;
  out.device = capped.get();
  out.system = MemorySystem::Create(conf, std::move(capped));
  return out;
}

// The hand-built sequence of the paging issue: holes strand memory in regions but not in pages.
TEST(Paging, HolesBetweenLiveChunksStrandNothing) {
  for (const char* regions : {"growth=off,gc=off", "growth=on,gc=off"}) {
    auto system = Make(std::string("backing=sim,capacity=1GiB,limit=64MiB,") + regions);
    DeviceAllocator& allocator = system->device(0);
    std::vector<void*> live = Checkerboard(allocator);
    OomReport report;
    EXPECT_EQ(allocator.TryAllocate(8 * MiB, {}, &report), nullptr) << regions;
    EXPECT_EQ(report.cause(), OomCause::kFragmentation) << regions;
    EXPECT_EQ(report.numbers.free_in_regions + report.numbers.headroom, 32 * MiB) << regions;
    EXPECT_EQ(report.numbers.largest_free, 4 * MiB) << regions;
    for (void* p : live) allocator.Free(p);
  }
  for (const char* unmap : {"lazy", "eager"}) {
    SCOPED_TRACE(unmap);
    auto system = Make(std::string("backing=sim,capacity=1GiB,limit=64MiB,unmap=") + unmap);
    DeviceAllocator& allocator = system->device(0);
    std::vector<void*> live = Checkerboard(allocator);
    const bool eager = std::string(unmap) == "eager";
    // eager gave the holes' pages back at once; lazy keeps them until they are needed elsewhere.
    EXPECT_EQ(allocator.Stats().reserved, eager ? 32 * MiB : 64 * MiB);
    // Four 8 MiB requests: each goes to fresh address space; lazy recycles the holes' pages.
    for (int i = 0; i < 4; ++i) {
      void* p = allocator.Allocate(8 * MiB);
      live.push_back(p);
      allocator.CheckInvariants();
      const AllocatorStats s = allocator.Stats();
      EXPECT_EQ(s.in_use, 32 * MiB + (i + 1) * 8 * MiB);
      EXPECT_EQ(s.reserved, eager ? s.in_use : 64 * MiB) << "request " << i;
      EXPECT_LE(s.reserved, 64 * MiB);
    }
    const AllocatorStats s = allocator.Stats();
    EXPECT_EQ(s.in_use, 64 * MiB) << "the whole limit is live data";
    EXPECT_EQ(s.reserved, 64 * MiB);
    EXPECT_EQ(s.address_space, 4 * 64 * MiB) << "a range of four times the limit";
    // eager: one unmap per freed block. lazy: the first request lands on the last hole, merged
    // with fresh address space, and recycles one hole; each other one recycles two.
    EXPECT_EQ(s.unmaps, eager ? 8u : 7u);
    OomReport report;
    EXPECT_EQ(allocator.TryAllocate(256, {}, &report), nullptr);
    EXPECT_EQ(report.cause(), OomCause::kCapacity);
    for (void* p : live) allocator.Free(p);
    allocator.CheckInvariants();
    EXPECT_EQ(allocator.Stats().reserved, eager ? 0u : 64 * MiB);
    EXPECT_EQ(allocator.ReleaseFreeRegions(), eager ? 0u : 64 * MiB);
    EXPECT_EQ(allocator.Stats().reserved, 0u);
  }
}

// Under paging, fragmentation is memory stranded in partly used pages: four 2 MiB pages each hold
// one live 1 MiB block and 1 MiB free. Nothing else is free, so a 2 MiB request needs a new page
// and there is no headroom for it.
TEST(Paging, FragmentationIsMemoryStrandedInPartlyUsedPages) {
  for (const char* unmap : {"lazy", "eager"}) {
    SCOPED_TRACE(unmap);
    auto system = Make(std::string("backing=sim,capacity=1GiB,limit=8MiB,unmap=") + unmap);
    DeviceAllocator& allocator = system->device(0);
    std::vector<void*> blocks = HalfUsedPages(allocator);
    allocator.CheckInvariants();
    EXPECT_EQ(allocator.Stats().reserved, 8 * MiB) << "every page still holds a live block";
    OomReport report;
    EXPECT_EQ(allocator.TryAllocate(2 * MiB, {}, &report), nullptr);
    EXPECT_EQ(report.cause(), OomCause::kFragmentation);
    EXPECT_EQ(report.numbers.in_use, 4 * MiB);
    EXPECT_EQ(report.numbers.reserved, 8 * MiB);
    EXPECT_EQ(report.numbers.free_in_regions, 4 * MiB);
    EXPECT_EQ(report.numbers.headroom, 0u);
    EXPECT_EQ(report.numbers.largest_free, MiB) << "the largest free extent of memory";
    ASSERT_TRUE(report.pages.on());
    EXPECT_EQ(report.pages.page_bytes, 2 * MiB);
    EXPECT_EQ(report.pages.stranded_bytes, 4 * MiB);
    EXPECT_EQ(report.pages.partly_used_pages, 4u);
    EXPECT_EQ(report.pages.new_pages_needed, 1u);
    EXPECT_FALSE(report.pages.address_space_exhausted);
    EXPECT_EQ(report.explanation,
              "4.00 MiB are free below the limit (0 B headroom, 4.00 MiB inside mapped pages) but "
              "4.00 MiB of them are stranded in 4 partly used 2.00 MiB pages; the request of "
              "2.00 MiB needs 1 new page (2.00 MiB) wherever it goes, more than the headroom");
    EXPECT_NE(report.suggestion.find("raise the limit by 2.00 MiB"), std::string::npos) << report.suggestion;
    // A request that fits a stranded piece is served from it, without a page.
    void* small = allocator.Allocate(MiB);
    EXPECT_EQ(allocator.Stats().reserved, 8 * MiB);
    allocator.Free(small);
    for (int i = 0; i < 8; i += 2) allocator.Free(blocks[i]);
    allocator.CheckInvariants();
  }
}

// Under paging, giving back free pages is what the slow path does in gc's place, whatever gc says:
// the report says gc ran only when it did, with the bytes it gave back, and never advises gc=on.
TEST(Paging, GcInAReportMeansFreePagesWereGivenBack) {
  {
    // Too large for the limit: nothing is tried.
    auto system = Make("backing=sim,capacity=1GiB,limit=8MiB");
    OomReport report;
    EXPECT_EQ(system->device(0).TryAllocate(16 * MiB, {}, &report), nullptr);
    EXPECT_EQ(report.cause(), OomCause::kRequestTooLarge);
    EXPECT_FALSE(report.gc_ran);
    EXPECT_EQ(report.Describe().find("gc ran"), std::string::npos) << report.Describe();
    EXPECT_EQ(system->device(0).Stats().gc_runs, 0u);
  }
  {
    // lazy keeps 4 MiB of free pages; a 6 MiB request gives them back, then still does not fit.
    auto system = Make("backing=sim,capacity=1GiB,limit=8MiB");
    DeviceAllocator& allocator = system->device(0);
    void* a = allocator.Allocate(4 * MiB);
    allocator.Free(allocator.Allocate(4 * MiB));
    EXPECT_EQ(allocator.Stats().reserved, 8 * MiB);
    OomReport report;
    EXPECT_EQ(allocator.TryAllocate(6 * MiB, {}, &report), nullptr);
    EXPECT_EQ(report.cause(), OomCause::kCapacity);
    EXPECT_TRUE(report.gc_ran);
    EXPECT_EQ(report.gc_released, 4 * MiB);
    EXPECT_NE(report.Describe().find("gc ran and released 4.00 MiB"), std::string::npos) << report.Describe();
    EXPECT_EQ(allocator.Stats().reserved, 4 * MiB);
    allocator.Free(a);
  }
  for (const char* gc : {"on", "off"}) {
    SCOPED_TRACE(gc);
    // Stranded in partly used pages (as above): gc=off changes nothing, and the advice says so by
    // not mentioning it.
    auto system = Make(std::string("backing=sim,capacity=1GiB,limit=8MiB,gc=") + gc);
    DeviceAllocator& allocator = system->device(0);
    std::vector<void*> blocks = HalfUsedPages(allocator);
    OomReport report;
    EXPECT_EQ(allocator.TryAllocate(2 * MiB, {}, &report), nullptr);
    EXPECT_EQ(report.cause(), OomCause::kFragmentation);
    EXPECT_TRUE(report.gc_ran);
    EXPECT_EQ(report.gc_released, 0u);
    EXPECT_EQ(report.suggestion.rfind("raise the limit by 2.00 MiB", 0), 0u) << report.suggestion;
    for (int i = 0; i < 8; i += 2) allocator.Free(blocks[i]);
  }
}

// Memory comes in whole pages: a limit of less than one page could serve nothing, and is refused
// when the allocator is made, by name, instead of failing every request as "fragmentation".
TEST(Paging, ALimitOfLessThanOnePageIsRefused) {
  try {
    Make("backing=sim,capacity=1GiB,limit=1MiB");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "limit");
    EXPECT_NE(std::string(error.what()).find("limit=1.00 MiB is less than one page of the sim backing (2.00 MiB)"),
              std::string::npos) << error.what();
  }
  // The region model has no pages: the same limit serves what fits.
  auto regions = Make("backing=sim,capacity=1GiB,limit=1MiB,growth=on");
  void* p = regions->device(0).Allocate(512 * 1024);
  EXPECT_NE(p, nullptr);
  regions->device(0).Free(p);
}

// A device that another process fills: the map call is refused below the limit. Lazy mode first
// gives back its own free pages, then reports `backing`.
TEST(Paging, BackingRefusesAMapBelowTheLimit) {
  auto [system, device] = MakeCapped(100 * MiB);
  DeviceAllocator& allocator = system->device(0);
  void* first = allocator.Allocate(64 * MiB);
  void* cached = allocator.Allocate(30 * MiB);
  allocator.Free(cached);  // lazy: 30 MiB of pages stay mapped
  EXPECT_EQ(allocator.Stats().reserved, 94 * MiB);
  void* again = allocator.Allocate(34 * MiB);  // needs 2 new pages beyond the cached ones
  EXPECT_NE(again, nullptr);
  EXPECT_LE(allocator.Stats().reserved, 100 * MiB);
  allocator.CheckInvariants();
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(64 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kBacking);
  EXPECT_NE(report.explanation.find("another process"), std::string::npos) << report.explanation;
  EXPECT_GT(device->maps, 0u);
  allocator.CheckInvariants();
  allocator.Free(again);
  allocator.Free(first);
}

// A request over two unmapped runs with a cached page between them, where the device takes the
// first run and refuses the second: the first is given back (all or nothing), so the device and the
// page map still agree, and the retries after gc end in a `backing` OOM with nothing leaked.
TEST(Paging, ARefusedSecondRunGivesTheFirstBack) {
  auto [system, device] = MakeCapped(10 * MiB);
  DeviceAllocator& allocator = system->device(0);
  // Pages 0-3, one chunk each; reserved peaks at 8 MiB.
  void* a = allocator.Allocate(2 * MiB);
  void* b = allocator.Allocate(2 * MiB);
  void* c = allocator.Allocate(2 * MiB);
  void* d = allocator.Allocate(2 * MiB);
  allocator.Free(d);  // page 3 cached
  allocator.Free(b);  // page 1 cached
  // 4 MiB at page 3 needs page 4: at the peak, lazy recycles a cached page first (page 1).
  void* f = allocator.Allocate(4 * MiB);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(f), reinterpret_cast<std::uintptr_t>(a) + 6 * MiB);
  EXPECT_EQ(allocator.Stats().reserved, 8 * MiB);
  allocator.Free(c);
  allocator.Free(f);  // one free chunk from page 1: page 1 unmapped, pages 2-4 cached, 5+ unmapped
  EXPECT_EQ(allocator.Stats().reserved, 8 * MiB);
  EXPECT_EQ(device->held(), 8 * MiB);
  allocator.CheckInvariants();

  // 10 MiB at page 1 spans pages 1-5: runs {1} and {5}. The device (10 MiB cap) maps page 1 and
  // refuses page 5.
  OomReport report;
  EXPECT_EQ(allocator.TryAllocate(10 * MiB, {}, &report), nullptr);
  EXPECT_EQ(report.cause(), OomCause::kBacking);
  EXPECT_EQ(report.pages.new_pages_needed, 5u) << "after gc, every page of the request is new";
  EXPECT_EQ(report.explanation,
            "the device refused to map 5 new pages (10.00 MiB) for the request of 10.00 MiB "
            "although 2.00 MiB of the 512.00 MiB limit are mapped: the device has less free memory "
            "than the limit assumes (another process holds it)");
  EXPECT_NE(report.suggestion.find("at least 10.00 MiB more"), std::string::npos) << report.suggestion;
  EXPECT_GT(device->unmaps, 0u);
  // gc gave back the cached pages; only page 0 (chunk a) is mapped, on the device as in the map.
  EXPECT_EQ(allocator.Stats().reserved, 2 * MiB);
  EXPECT_EQ(device->held(), 2 * MiB);
  allocator.CheckInvariants();
  // The page the refused call had mapped is unmapped again: mapping it now succeeds.
  void* g = allocator.Allocate(8 * MiB);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(g), reinterpret_cast<std::uintptr_t>(a) + 2 * MiB);
  EXPECT_EQ(device->held(), 10 * MiB);
  allocator.CheckInvariants();
  allocator.Free(g);
  allocator.Free(a);
}

// Map and unmap are trace events (address, size) inside one address_reserve, in order.
TEST(Paging, MapsAndUnmapsAreRecorded) {
  auto system = Make("backing=sim,capacity=1GiB,limit=64MiB,unmap=eager");
  testing::RecordingSink sink;
  system->SetSink(&sink);
  DeviceAllocator& allocator = system->device(0);
  void* p = allocator.Allocate(5 * MiB);
  allocator.Free(p);
  const auto events = sink.events();
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].type, traces::EventType::kAddressReserve);
  EXPECT_EQ(events[0].size, 256 * MiB);
  EXPECT_EQ(events[1].type, traces::EventType::kMap);
  EXPECT_EQ(events[1].address, events[0].address);
  EXPECT_EQ(events[1].size, 6 * MiB) << "three 2 MiB pages under 5 MiB";
  EXPECT_EQ(events[2].type, traces::EventType::kAlloc);
  EXPECT_EQ(events[3].type, traces::EventType::kFree);
  EXPECT_EQ(events[4].type, traces::EventType::kUnmap);
  EXPECT_EQ(events[4].size, 6 * MiB);
}

// host paging with real memory: resident memory falls when the pages under a large free are
// unmapped (madvise(MADV_DONTNEED)).
std::uint64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(Paging, HostResidentMemoryFallsWhenPagesAreUnmapped) {
  for (const char* unmap : {"eager", "lazy"}) {
    SCOPED_TRACE(unmap);
    auto system = Make(std::string("backing=host,limit=1GiB,unmap=") + unmap);
    DeviceAllocator& allocator = system->device(0);
    constexpr std::uint64_t kBytes = 256 * MiB;
    const std::uint64_t before = ResidentBytes();
    void* p = allocator.Allocate(kBytes);
    std::memset(p, 0x5a, kBytes);  // touch every page: now it is resident
    const std::uint64_t touched = ResidentBytes();
    EXPECT_GE(touched, before + kBytes - 16 * MiB);
    allocator.Free(p);
    if (std::string(unmap) == "lazy") {
      EXPECT_GE(ResidentBytes(), touched - 16 * MiB) << "lazy keeps the pages until asked";
      EXPECT_EQ(allocator.ReleaseFreeRegions(), kBytes);
    }
    const std::uint64_t after = ResidentBytes();
    EXPECT_LE(after, touched - kBytes + 16 * MiB) << "before " << before << " touched " << touched;
    EXPECT_EQ(allocator.Stats().reserved, 0u);
    allocator.CheckInvariants();
  }
}

// The page map never grows with an arbitrary limit (a 4 EiB sim device once asked for a 256 GiB
// bitmap): pages stay 2 MiB up to a 16 TiB limit, and past that grow so that the range holds at
// most 2^25 of them.
TEST(Paging, PagesGrowPastASixteenTebibyteLimitSoThePageMapStaysSmall) {
  struct Case {
    const char* conf;
    std::uint64_t page;
    std::uint64_t address_space;
  };
  const std::uint64_t TiB = 1024 * GiB;
  for (const Case& c : {Case{"backing=sim,capacity=80GiB,limit=80GiB", 2 * MiB, 320 * GiB},
                        Case{"backing=sim,capacity=16TiB,limit=16TiB", 2 * MiB, 64 * TiB},
                        Case{"backing=sim,capacity=32TiB,limit=32TiB", 4 * MiB, 128 * TiB},
                        Case{"backing=sim,capacity=4EiB,limit=4EiB", std::uint64_t{1} << 37,
                             std::uint64_t{1} << 62}}) {
    SCOPED_TRACE(c.conf);
    auto system = Make(c.conf);
    DeviceAllocator& allocator = system->device(0);
    void* p = allocator.Allocate(256);
    allocator.CheckInvariants();
    const AllocatorStats s = allocator.Stats();
    EXPECT_EQ(s.reserved, c.page) << "one page mapped under the first chunk";
    EXPECT_EQ(s.address_space, c.address_space);
    EXPECT_LE(s.address_space / c.page, std::uint64_t{1} << 25);
    allocator.Free(p);
    allocator.CheckInvariants();
  }
}

}  // namespace
}  // namespace fragscope
