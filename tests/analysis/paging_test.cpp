// Paging regions in the timeline model (trace format 1.1): address ranges hold no memory, pages
// mapped into them are reserved memory, and mapped pieces of one range join into one region. The
// model reads that from the events alone: no lookahead, no configuration text.
#include <algorithm>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;
constexpr std::uint64_t kMiB = 1 << 20;

std::unique_ptr<TimelineModel> Build(const std::vector<Event>& events, std::uint32_t k,
                                     const traces::TraceHeader& header = {}) {
  std::size_t pos = 0;
  BlockSource source = [&](std::vector<Event>* out) {
    if (pos >= events.size()) return false;
    const std::size_t n = std::min<std::size_t>(events.size() - pos, 1 + pos % 29);
    out->assign(events.begin() + static_cast<std::ptrdiff_t>(pos), events.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
    return true;
  };
  TimelineOptions options;
  options.keyframe_interval = k;
  return TimelineModel::Build(header, source, options);
}

Event Ev(EventType type, std::uint64_t address, std::uint64_t size, std::uint64_t region = 0) {
  Event e;
  e.type = type;
  e.address = address;
  e.size = size;
  e.rounded = type == EventType::kAlloc || type == EventType::kFree ? size : 0;
  e.region = region;
  return e;
}

std::vector<Event> Numbered(std::vector<Event> events) {
  for (std::size_t i = 0; i < events.size(); ++i) events[i].seq = events[i].time_ns = i;
  return events;
}

constexpr std::uint64_t kBase = 0x100000000;

TEST(Paging, MapsGrowTheRegionOfTheirAddressRangeAndRegionsNeverMerge) {
  const std::vector<Event> events = Numbered({
      Ev(EventType::kAddressReserve, kBase, 64 * kMiB),            // 0: no memory yet
      Ev(EventType::kMap, kBase, 2 * kMiB),                        // 1: the region: 2 MiB
      Ev(EventType::kAlloc, kBase, kMiB, kBase),                   // 2
      Ev(EventType::kMap, kBase + 2 * kMiB, 2 * kMiB),             // 3: grows it to 4 MiB
      Ev(EventType::kAlloc, kBase + kMiB, 2 * kMiB, kBase),        // 4: spans the old end
      Ev(EventType::kRegionReserve, kBase + 64 * kMiB, 2 * kMiB),  // 5: adjacent to the range: its own
      Ev(EventType::kMap, kBase + 6 * kMiB, 2 * kMiB),             // 6: a piece apart from the first
      Ev(EventType::kMap, kBase + 4 * kMiB, 2 * kMiB),             // 7: fills the gap: joins both
      Ev(EventType::kFree, kBase + kMiB, 2 * kMiB, kBase),         // 8
      Ev(EventType::kUnmap, kBase + 2 * kMiB, 2 * kMiB),           // 9: splits the region in two
      Ev(EventType::kRegionReserve, kBase + 66 * kMiB, 2 * kMiB),  // 10: adjacent to a region: its own
  });
  for (std::uint32_t k : {1u, 2u, 3u, 4096u}) {
    const auto model = Build(events, k);
    EXPECT_TRUE(model->warnings().empty()) << model->warnings().front();
    const std::uint64_t reserved[] = {0, 2, 2, 4, 4, 6, 8, 10, 10, 8, 10};
    for (std::uint64_t i = 0; i < events.size(); ++i) {
      EXPECT_EQ(model->ValueAt(0, Series::kReserved, i), reserved[i] * kMiB) << "K=" << k << " event " << i;
    }
    MemoryState st = model->StateAt(0, 0);
    EXPECT_TRUE(st.regions.empty()) << "an address range with nothing mapped holds no memory";
    EXPECT_EQ(st.reserved, 0u);

    st = model->StateAt(0, 4);
    ASSERT_EQ(st.regions.size(), 1u);
    EXPECT_EQ(st.regions[0].size, 4 * kMiB);
    EXPECT_EQ(st.regions[0].chunks.size(), 2u);
    ASSERT_EQ(st.regions[0].holes.size(), 1u);
    EXPECT_EQ(st.regions[0].holes[0].size, kMiB);  // [3 MiB, 4 MiB): one hole across the growth

    st = model->StateAt(0, 7);
    ASSERT_EQ(st.regions.size(), 2u);
    EXPECT_EQ(st.regions[0].address, kBase);
    EXPECT_EQ(st.regions[0].size, 8 * kMiB);
    EXPECT_EQ(st.regions[1].address, kBase + 64 * kMiB);
    EXPECT_EQ(st.largest_hole, 5 * kMiB) << "[3 MiB, 8 MiB): one hole across three maps";

    st = model->StateAt(0, 10);
    ASSERT_EQ(st.regions.size(), 4u);
    EXPECT_EQ(st.regions[0].size, 2 * kMiB);
    EXPECT_EQ(st.regions[1].address, kBase + 4 * kMiB);
    EXPECT_EQ(st.regions[1].size, 4 * kMiB);
    EXPECT_EQ(st.regions[2].size, 2 * kMiB);
    EXPECT_EQ(st.regions[3].address, kBase + 66 * kMiB);
    EXPECT_EQ(st.reserved, 10 * kMiB);
    EXPECT_EQ(model->Metrics(0).peak_reserved, 10 * kMiB);
  }
}

TEST(Paging, InconsistentPagingEventsWarnAndCountWhatTheEvidenceSays) {
  const std::vector<Event> events = Numbered({
      Ev(EventType::kMap, kBase, 2 * kMiB),                     // outside any range: a region of its own
      Ev(EventType::kAddressReserve, kBase + 4 * kMiB, 8 * kMiB),
      Ev(EventType::kAddressReserve, kBase + 8 * kMiB, 8 * kMiB),  // overlaps: ignored
      Ev(EventType::kMap, kBase + 4 * kMiB, 0),                 // empty: ignored
      Ev(EventType::kMap, kBase + 4 * kMiB, 2 * kMiB),
      Ev(EventType::kMap, kBase + 5 * kMiB, 2 * kMiB),          // overlaps mapped pages: ignored
      Ev(EventType::kAlloc, kBase + 4 * kMiB, kMiB, kBase + 4 * kMiB),
      Ev(EventType::kUnmap, kBase + 4 * kMiB, 2 * kMiB),        // with a live allocation inside
      Ev(EventType::kUnmap, kBase + 10 * kMiB, 2 * kMiB),       // never mapped
      Ev(EventType::kAddressRelease, kBase + 20 * kMiB, kMiB),  // never reserved
  });
  const auto model = Build(events, 2);
  const std::vector<std::string>& w = model->warnings();
  for (const char* text : {"1 map(s) outside any reserved address range", "1 address reserve(s) overlapping",
                           "1 empty or wrapping address reserve(s) or map(s)", "1 map(s) overlapping mapped memory",
                           "1 unmap(s) with live allocations", "1 unmap(s) of ranges (partly) not mapped",
                           "1 address release(s) of ranges"}) {
    EXPECT_TRUE(std::any_of(w.begin(), w.end(), [&](const std::string& s) { return s.find(text) != std::string::npos; }))
        << text;
  }
  EXPECT_EQ(model->ValueAt(0, Series::kReserved, 0), 2 * kMiB) << "mapped memory counts even outside a range";
  EXPECT_EQ(model->ValueAt(0, Series::kReserved, 6), 4 * kMiB);
  EXPECT_EQ(model->ValueAt(0, Series::kReserved, 9), 2 * kMiB);
}

// A 1.0 trace of an expandable region (growth recorded as region_reserve next to the region) keeps
// its reserved series; its growth shows as separate adjacent regions (docs/trace-format.md).
TEST(Paging, GrowthRecordedAsAdjacentRegionsStaysSeparateRegions) {
  const std::vector<Event> events = Numbered({
      Ev(EventType::kRegionReserve, kBase, 2 * kMiB),
      Ev(EventType::kAlloc, kBase, kMiB, kBase),
      Ev(EventType::kRegionReserve, kBase + 2 * kMiB, 2 * kMiB),
      Ev(EventType::kAlloc, kBase + 2 * kMiB, kMiB, kBase),
  });
  traces::TraceHeader header;
  header.source_format = "fragscope";
  header.alloc_conf = "backing=sim,expandable=on";  // the configuration text decides nothing now
  const auto model = Build(events, 1, header);
  EXPECT_EQ(model->ValueAt(0, Series::kReserved, 3), 4 * kMiB);
  const MemoryState st = model->StateAt(0, 3);
  ASSERT_EQ(st.regions.size(), 2u);
  EXPECT_EQ(st.regions[0].size, 2 * kMiB);
  EXPECT_EQ(st.regions[1].size, 2 * kMiB);
}

// Counts the events it passes to the trace writer, so a checkpoint knows how many came before it.
class CountingWriter : public traces::EventSink {
 public:
  explicit CountingWriter(traces::TraceWriter& writer) : writer_(writer) {}
  void Record(Event& event) override { writer_.Record(event), ++count; }
  traces::TagId Intern(std::string_view text) override { return writer_.Intern(text); }
  std::size_t count = 0;

 private:
  traces::TraceWriter& writer_;
};

// Runs `body` on device 0 of `system` with every event recorded to a temporary .fst file (the sink
// tells body how many events came so far), and returns the trace read back.
traces::Trace RecordToTrace(MemorySystem& system,
                            const std::function<void(DeviceAllocator&, const CountingWriter&)>& body) {
  const std::string path = (std::filesystem::path(::testing::TempDir()) /
                            ("paging_" + std::to_string(::getpid()) + ".fst")).string();
  {
    traces::TraceWriter writer(path, system.MakeTraceHeader("paging_test"));
    CountingWriter sink(writer);
    system.SetSink(&sink);
    body(system.device(0), sink);
    system.SetSink(nullptr);
    writer.Close();
  }
  traces::Trace trace = traces::ReadTrace(path);
  std::filesystem::remove(path);
  return trace;
}

// The acceptance test of paging traces: a run of the allocator with expandable=on (both unmap
// modes), recorded to an .fst file, read back and modelled, has the allocator's own reserved bytes
// at every step, one region per mapped extent, and records its pages as map/unmap inside one
// address range.
class RecordedPaging : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedPaging, HasTheAllocatorsReservedBytesAtEveryStep) {
  auto system = MemorySystem::Create(ParseAllocConf(
      std::string("backing=sim,capacity=1GiB,limit=512MiB,expandable=on,gc=on,unmap=") + GetParam()));
  struct Step {
    std::size_t events;
    AllocatorStats stats;
    std::size_t mapped_runs;
  };
  std::vector<Step> steps;
  const traces::Trace trace = RecordToTrace(*system, [&](DeviceAllocator& a, const CountingWriter& sink) {
    std::mt19937_64 rng(20240611);
    std::vector<void*> live;
    for (int op = 0; op < 3000; ++op) {
      const std::uint64_t r = rng() % 100;
      if (op % 200 == 199) {
        a.ReleaseFreeRegions();  // unmaps the whole free pages
      } else if (!live.empty() && (r < 45 || live.size() > 80)) {
        const std::size_t i = rng() % live.size();
        a.Free(live[i]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        const std::uint64_t bytes = 256 + rng() % (r < 90 ? kMiB : 24 * kMiB);
        if (void* p = a.TryAllocate(bytes, {}, nullptr)) live.push_back(p);
      }
      a.CheckInvariants();
      steps.push_back({sink.count, a.Stats(), a.Snapshot().regions.at(0).mapped.size()});
    }
    for (void* p : live) a.Free(p);
    steps.push_back({sink.count, a.Stats(), a.Snapshot().regions.at(0).mapped.size()});
  });
  ASSERT_EQ(trace.events.size(), steps.back().events);
  std::size_t spaces = 0, maps = 0, unmaps = 0, regions = 0;
  for (const Event& e : trace.events) {
    spaces += e.type == EventType::kAddressReserve;
    maps += e.type == EventType::kMap;
    unmaps += e.type == EventType::kUnmap;
    regions += e.type == EventType::kRegionReserve || e.type == EventType::kRegionRelease;
  }
  EXPECT_EQ(spaces, 1u);
  EXPECT_EQ(regions, 0u);
  EXPECT_GT(maps, 5u);
  EXPECT_GT(unmaps, 2u);
  EXPECT_EQ(maps, steps.back().stats.maps);
  EXPECT_EQ(unmaps, steps.back().stats.unmaps);

  const auto model = Build(trace.events, 64, trace.header);
  EXPECT_TRUE(model->warnings().empty()) << model->warnings().front();
  std::uint64_t peak = 0;
  for (const Step& step : steps) {
    if (step.events == 0) continue;
    const std::uint64_t index = step.events - 1;
    ASSERT_EQ(model->ValueAt(0, Series::kReserved, index), step.stats.reserved) << "event " << index;
    ASSERT_EQ(model->ValueAt(0, Series::kInUse, index), step.stats.in_use) << "event " << index;
    const MemoryState st = model->StateAt(0, index);
    ASSERT_EQ(st.regions.size(), step.mapped_runs) << "one region per mapped extent, event " << index;
    ASSERT_EQ(st.largest_hole, step.stats.largest_free) << "event " << index;
    peak = std::max(peak, step.stats.reserved);
  }
  EXPECT_EQ(model->Metrics(0).peak_reserved, peak);
  EXPECT_EQ(peak, steps.back().stats.peak_reserved);
  EXPECT_EQ(steps.back().stats.peak_address_space, 4 * 512 * kMiB) << "the whole range, mapped or not";
}

INSTANTIATE_TEST_SUITE_P(Unmap, RecordedPaging, ::testing::Values("eager", "lazy"));

// A recorded paging OOM reads as the allocator said it: `fragscope report` rebuilds the page facts
// (stranded bytes in partly used pages, new pages needed, an exhausted address space) from the
// trace's state at the oom event. Every OOM of a random run, both unmap modes, two limits.
class RecordedPagingOoms : public ::testing::TestWithParam<const char*> {};

TEST_P(RecordedPagingOoms, AreExplainedInPagesAsTheAllocatorExplainedThem) {
  for (const char* limit : {"24MiB", "96MiB"}) {
    SCOPED_TRACE(limit);
    auto system = MemorySystem::Create(ParseAllocConf(
        std::string("backing=sim,capacity=1GiB,limit=") + limit + ",unmap=" + GetParam()));
    std::vector<OomReport> reports;
    const traces::Trace trace = RecordToTrace(*system, [&](DeviceAllocator& a, const CountingWriter&) {
      std::mt19937_64 rng(20261124);
      std::vector<void*> live;
      for (int op = 0; op < 4000; ++op) {
        const std::uint64_t r = rng() % 100;
        if (!live.empty() && r < 40) {
          const std::size_t i = rng() % live.size();
          a.Free(live[i]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          // Small and odd sizes share pages with large ones: what strands memory under paging.
          const std::uint64_t bytes = r < 75 ? 256 + rng() % (3 * kMiB / 2) : kMiB + rng() % (12 * kMiB);
          OomReport report;
          if (void* p = a.TryAllocate(bytes, {}, &report)) live.push_back(p);
          else reports.push_back(report);
        }
      }
      for (void* p : live) a.Free(p);
    });
    const auto model = Build(trace.events, 64, trace.header);
    const std::vector<OomDiagnosis> ooms = model->Ooms(0);
    ASSERT_EQ(ooms.size(), reports.size());
    std::size_t paged = 0;
    for (std::size_t i = 0; i < ooms.size(); ++i) {
      const OomReport& live = reports[i];
      const OomReport& recorded = ooms[i].report;
      ASSERT_EQ(recorded.cause(), live.cause()) << "OOM " << i;
      EXPECT_EQ(recorded.explanation, live.explanation) << "OOM " << i;
      EXPECT_EQ(recorded.suggestion, live.suggestion) << "OOM " << i;
      if (live.cause() != OomCause::kFragmentation) continue;
      ++paged;
      ASSERT_TRUE(recorded.pages.on()) << "OOM " << i;
      EXPECT_EQ(recorded.pages.page_bytes, live.pages.page_bytes) << "OOM " << i;
      EXPECT_EQ(recorded.pages.stranded_bytes, live.pages.stranded_bytes) << "OOM " << i;
      EXPECT_EQ(recorded.pages.partly_used_pages, live.pages.partly_used_pages) << "OOM " << i;
      EXPECT_EQ(recorded.pages.new_pages_needed, live.pages.new_pages_needed) << "OOM " << i;
      EXPECT_EQ(recorded.pages.address_space_exhausted, live.pages.address_space_exhausted) << "OOM " << i;
    }
    EXPECT_GE(paged, 3u) << "the run must meet fragmentation OOMs to test anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Unmap, RecordedPagingOoms, ::testing::Values("eager", "lazy"));

}  // namespace
}  // namespace fragscope::analysis
