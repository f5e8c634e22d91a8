// The timeline model against the allocator that wrote the trace (its own snapshots at every
// operation), against brute force (series, peaks, downsampling), and on messy input.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "support/recording_sink.hpp"
#include "timeline_fixtures.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;
using namespace timeline_fixtures;
constexpr std::uint64_t kMiB = 1 << 20;
constexpr Series kAllSeries[] = {Series::kInUse, Series::kReserved, Series::kLoad};


// "" when the model's state after `index` is the allocator's snapshot, else the first difference.
// A paging region as memory: one region per mapped run, holding the live chunks on it and the
// parts of free chunks that lie on it. The timeline model sees exactly that from map/unmap events.
std::vector<RegionView> MemoryOf(const RegionView& region) {
  if (!region.paging) return {region};
  std::vector<RegionView> out;
  for (const MappedRange& m : region.mapped) {
    RegionView& piece = out.emplace_back();
    piece.address = m.address;
    piece.size = piece.max_size = m.size;
    for (const ChunkView& c : region.chunks) {
      const std::uint64_t from = std::max(c.address, m.address);
      const std::uint64_t to = std::min(c.address + c.size, m.address + m.size);
      if (to <= from) continue;
      ChunkView part = c;
      if (!c.in_use) {
        part.address = from;
        part.size = to - from;
      }
      piece.chunks.push_back(part);
    }
  }
  return out;
}

std::string Diff(const TimelineModel& model, std::uint64_t index, const AllocatorSnapshot& snap) {
  const MemoryState st = model.StateAt(snap.device, index);
  std::vector<RegionView> memory;
  for (const RegionView& r : snap.regions) {
    for (RegionView& piece : MemoryOf(r)) memory.push_back(std::move(piece));
  }
  std::vector<const RegionView*> regions;
  for (const RegionView& r : memory) if (r.size > 0) regions.push_back(&r);
  if (st.regions.size() != regions.size()) return fmt::format("{} regions, snapshot {}", st.regions.size(), regions.size());
  if (!st.outside_regions.empty()) return "chunks outside regions";
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const RegionView& want = *regions[k];
    const RegionState& got = st.regions[k];
    if (got.address != want.address || got.size != want.size) {
      return fmt::format("region {:#x}+{} vs {:#x}+{}", got.address, got.size, want.address, want.size);
    }
    std::vector<ChunkView> used, free;
    for (const ChunkView& c : want.chunks) (c.in_use ? used : free).push_back(c);
    if (got.chunks.size() != used.size() || got.holes.size() != free.size()) {
      return fmt::format("region {:#x}: {} chunks {} holes, snapshot {} {}", got.address,
                         got.chunks.size(), got.holes.size(), used.size(), free.size());
    }
    for (std::size_t i = 0; i < used.size(); ++i) {
      const LiveChunk& c = got.chunks[i];
      const ChunkView& w = used[i];
      if (c.address != w.address || c.size != w.size || c.requested != w.requested ||
          c.alloc_id != w.alloc_id || c.stream != w.stream || c.tag != w.tag) {
        return fmt::format("chunk {:#x}+{} vs {:#x}+{}", c.address, c.size, w.address, w.size);
      }
      if (model.event(c.alloc_event).address != c.address) return "alloc_event does not point to the alloc";
    }
    for (std::size_t i = 0; i < free.size(); ++i) {
      if (got.holes[i].address != free[i].address || got.holes[i].size != free[i].size) {
        return fmt::format("hole {:#x}+{} vs free chunk {:#x}+{}", got.holes[i].address,
                           got.holes[i].size, free[i].address, free[i].size);
      }
    }
  }
  const AllocatorStats& s = snap.stats;
  if (st.in_use != s.in_use || st.reserved != s.reserved || st.live_requested != s.live_requested ||
      st.largest_hole != s.largest_free || st.free_in_regions != s.free_in_regions()) {
    return fmt::format("totals {} {} {} {} {} vs {} {} {} {} {}", st.in_use, st.reserved,
                       st.live_requested, st.largest_hole, st.free_in_regions, s.in_use,
                       s.reserved, s.live_requested, s.largest_free, s.free_in_regions());
  }
  const std::uint64_t series[] = {s.in_use, s.reserved, s.live_requested};
  for (int i = 0; i < 3; ++i) {
    if (model.ValueAt(snap.device, kAllSeries[i], index) != series[i]) return fmt::format("series {} differs", i);
  }
  return "";
}

// Series of every device after every event, by brute force (consistent traces only).
using Values = std::array<std::uint64_t, 3>;
std::map<std::uint32_t, std::vector<Values>> BruteSeries(const std::vector<Event>& events) {
  std::map<std::uint32_t, std::vector<Values>> out;
  for (const Event& e : events) out[e.device];
  std::map<std::uint32_t, Values> now;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::pair<std::uint64_t, std::uint64_t>> live;
  for (const Event& e : events) {
    Values& v = now[e.device];
    const std::uint64_t rounded = e.rounded != 0 ? e.rounded : RoundUp(e.size);
    if (e.type == EventType::kAlloc) {
      live[{e.device, e.address}] = {rounded, e.size};
      v[0] += rounded;
      v[2] += e.size;
    } else if (e.type == EventType::kFree) {
      auto it = live.find({e.device, e.address});
      v[0] -= it->second.first;
      v[2] -= it->second.second;
      live.erase(it);
    } else if (e.type == EventType::kRegionReserve || e.type == EventType::kMap) {
      v[1] += e.size;  // mapped pages are reserved memory, as regions are
    } else if (e.type == EventType::kRegionRelease || e.type == EventType::kUnmap) {
      v[1] -= e.size;
    }
    for (auto& [device, series] : out) series.push_back(now[device]);
  }
  return out;
}

class AllocatorRuns : public ::testing::TestWithParam<const char*> {};

TEST_P(AllocatorRuns, StateAtEveryOperationEqualsTheAllocatorsSnapshot) {
  const TraceRun run = RandomRun(GetParam(), 700, 7);
  ASSERT_GT(run.events.size(), 500u);
  for (std::uint32_t k : {1u, 4u, 5u, 4096u}) {
    const auto model = BuildModel(run.events, k, run.header, &run.tags);
    ASSERT_EQ(model->event_count(), run.events.size());
    for (const auto& [count, snap] : run.checkpoints) {
      ASSERT_EQ(Diff(*model, count - 1, snap), "") << "K=" << k << " after event " << count - 1;
    }
    EXPECT_TRUE(model->warnings().empty()) << model->warnings().front();
  }
}

void CheckAgainstBruteForce(const TraceRun& run, const TimelineModel* model) {
  const auto brute = BruteSeries(run.events);
  const std::uint64_t n = run.events.size();
  for (const auto& [device, series] : brute) {
    DeviceMetrics want;
    std::uint64_t peak_at = 0, allocations = 0, ooms = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      for (int s = 0; s < 3; ++s) ASSERT_EQ(model->ValueAt(device, kAllSeries[s], i), series[i][s]) << i;
      want.peak_in_use = std::max(want.peak_in_use, series[i][0]);
      want.peak_load = std::max(want.peak_load, series[i][2]);
      want.peak_internal_waste = std::max(want.peak_internal_waste, series[i][0] - series[i][2]);
      // The moment of peak reserved: the event at peak reserved with the most in use.
      if (series[i][1] > want.peak_reserved ||
          (series[i][1] == want.peak_reserved && series[i][0] > series[peak_at][0])) {
        want.peak_reserved = series[i][1];
        peak_at = i;
      }
      allocations += run.events[i].device == device && run.events[i].type == EventType::kAlloc;
      ooms += run.events[i].device == device && run.events[i].type == EventType::kOom;
    }
    const DeviceMetrics got = model->Metrics(device);
    EXPECT_EQ(got.peak_in_use, want.peak_in_use);
    EXPECT_EQ(got.peak_load, want.peak_load);
    EXPECT_EQ(got.peak_reserved, want.peak_reserved);
    EXPECT_EQ(got.peak_internal_waste, want.peak_internal_waste);
    EXPECT_EQ(got.allocations, allocations);
    EXPECT_EQ(got.ooms, ooms);
    EXPECT_EQ(got.peak_in_use, run.final_stats[device].peak_in_use);
    EXPECT_EQ(got.peak_reserved, run.final_stats[device].peak_reserved);
    EXPECT_EQ(got.peak_load, run.final_stats[device].peak_live_requested);
    EXPECT_DOUBLE_EQ(got.utilization_at_peak, Utilization(series[peak_at][0], want.peak_reserved));
    const MemoryState at_peak = model->StateAt(device, peak_at);
    EXPECT_DOUBLE_EQ(got.fragmentation_at_peak, ExternalFragmentation(at_peak.largest_hole, at_peak.free_in_regions));

    std::mt19937_64 rng(device);
    std::vector<std::uint64_t> mn, mx;
    for (int trial = 0; trial < 300; ++trial) {
      std::uint64_t begin = rng() % n, end = rng() % (n + 20);
      if (trial % 3 == 0) end = begin + rng() % 300;
      auto columns = static_cast<std::uint32_t>(1 + rng() % (trial % 2 ? 40 : 2000));
      if (trial % 5 == 4) {  // slices on block boundaries, where the pyramid answers alone
        const std::uint64_t w = std::min<std::uint64_t>(64 * (1 + rng() % 150), n / 64 * 64);
        columns = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(n / std::max<std::uint64_t>(w, 1), 1, 8));
        begin = rng() % ((n - columns * w) / 64 + 1) * 64;
        end = begin + columns * w;
      }
      model->Downsample(device, kAllSeries[trial % 3], begin, end, columns, &mn, &mx);
      ASSERT_EQ(mn.size(), columns);
      // The three series in one walk: the same numbers as three Downsample calls.
      std::vector<std::uint64_t> all_min[3], all_max[3];
      model->DownsampleAll(device, begin, end, columns, all_min, all_max);
      for (int s = 0; s < 3; ++s) {
        std::vector<std::uint64_t> one_min, one_max;
        model->Downsample(device, kAllSeries[s], begin, end, columns, &one_min, &one_max);
        ASSERT_EQ(all_min[s], one_min) << "series " << s << ", " << begin << ".." << end << " in " << columns;
        ASSERT_EQ(all_max[s], one_max) << "series " << s << ", " << begin << ".." << end << " in " << columns;
      }
      end = std::min(end, n);
      const int s = trial % 3;
      for (std::uint32_t c = 0; c < columns; ++c) {
        std::uint64_t lo = begin, hi = begin + 1;
        if (begin < end) {
          lo = begin + c * (end - begin) / columns;
          hi = std::max(lo + 1, begin + (c + 1) * (end - begin) / columns);
        }
        std::uint64_t want_min = ~0ull, want_max = 0;
        for (std::uint64_t i = lo; i < hi; ++i) {
          want_min = std::min(want_min, series[std::min(i, n - 1)][s]);
          want_max = std::max(want_max, series[std::min(i, n - 1)][s]);
        }
        ASSERT_EQ(mn[c], want_min) << begin << ".." << end << " col " << c << "/" << columns;
        ASSERT_EQ(mx[c], want_max) << begin << ".." << end << " col " << c << "/" << columns;
      }
    }
  }
}

TEST_P(AllocatorRuns, SeriesPeaksAndDownsampleMatchBruteForce) {
  const TraceRun run = RandomRun(GetParam(), 700, 11);
  CheckAgainstBruteForce(run, BuildModel(run.events, 16, run.header, &run.tags).get());
}

INSTANTIATE_TEST_SUITE_P(Policies, AllocatorRuns,
                         ::testing::Values("backing=sim,capacity=1GiB",
                                           "backing=sim,capacity=1GiB,growth=off",
                                           "backing=sim,capacity=1GiB,expandable=on",
                                           "backing=sim,capacity=1GiB,passthrough=on",
                                           "backing=sim,capacity=1GiB,limit=40MiB",
                                           "backing=sim,capacity=1GiB,virtual_devices=32MiB+512MiB"));

TEST(Timeline, LongTraceWithManyLiveChunks) {
  const TraceRun run = RandomRun("backing=sim,capacity=1GiB,growth=off", 14000, 13, 700);
  ASSERT_GT(run.events.size(), 3 * 4096u);
  for (std::uint32_t k : {7u, 4096u}) {
    const auto model = BuildModel(run.events, k, run.header, &run.tags);
    for (std::size_t c = 0; c < run.checkpoints.size(); c += (k == 7 ? 1 : 5)) {
      const auto& [count, snap] = run.checkpoints[c];
      ASSERT_EQ(Diff(*model, count - 1, snap), "") << "K=" << k << " after event " << count - 1;
    }
    CheckAgainstBruteForce(run, model.get());
  }
}

TEST(Timeline, DownsampleOnEveryBlockBoundaryOfAMonotonicSeries) {
  // 9000 allocations of 256 B then 9000 frees: in use after event i has a closed form.
  std::vector<Event> events;
  for (std::uint64_t i = 0; i < 9000; ++i) events.push_back(Ev(EventType::kAlloc, 0x100000 + i * 256, 256));
  for (std::uint64_t i = 0; i < 9000; ++i) events.push_back(Ev(EventType::kFree, 0x100000 + i * 256, 256));
  const auto model = BuildModel(Numbered(events), 4096);
  auto value = [](std::uint64_t i) { return 256 * (i < 9000 ? i + 1 : 17999 - i); };
  std::vector<std::uint64_t> mn, mx;
  for (std::uint64_t begin = 0; begin < 18000; begin += 64 * 7) {
    for (std::uint64_t end = begin + 64; end <= 18000; end += 64) {
      model->Downsample(0, Series::kInUse, begin, end, 1, &mn, &mx);
      const std::uint64_t a = value(begin), b = value(end - 1);
      const std::uint64_t top = begin < 9000 && end > 9000 ? value(8999) : std::max(a, b);
      ASSERT_EQ(mx[0], top) << begin << ".." << end;
      ASSERT_EQ(mn[0], std::min(a, b)) << begin << ".." << end;
    }
  }
  EXPECT_EQ(model->ValueAt(0, Series::kInUse, 4095), value(4095));
  EXPECT_EQ(model->ValueAt(0, Series::kLoad, 17999), 0u);
}

TEST(Timeline, DevicesInterleaveAndStayFlatAcrossOtherDevices) {
  const TraceRun run = RandomRun("backing=sim,capacity=1GiB,virtual_devices=256MiB+256MiB", 400, 3);
  const auto model = BuildModel(run.events, 8, run.header, &run.tags);
  EXPECT_EQ(model->devices(), (std::vector<std::uint32_t>{0, 1}));
  for (std::uint64_t i = 1; i < run.events.size(); ++i) {
    const std::uint32_t other = 1 - run.events[i].device;
    for (Series s : kAllSeries) ASSERT_EQ(model->ValueAt(other, s, i), model->ValueAt(other, s, i - 1));
  }
}

TEST(Timeline, HandBuiltTraceWithMarkersTagsAndHoles) {
  std::vector<Event> events = Numbered({
      Ev(EventType::kRegionReserve, 0x10000, 0x1000),
      Ev(EventType::kAlloc, 0x10000, 100),            // 256 (rounded 0: rounded up)
      Ev(EventType::kAlloc, 0x10400, 1000, 1024),
      Ev(EventType::kMarker, 0, 0),
      Ev(EventType::kFree, 0x10000, 100),
  });
  events[3].tag = 2;
  events[2].tag = 1;
  const std::vector<std::string> tags = {"conv1.weight", "step 1 begin"};
  const auto model = BuildModel(events, 2, {}, &tags);
  ASSERT_EQ(model->markers().size(), 1u);
  EXPECT_EQ(model->markers()[0].name, "step 1 begin");
  EXPECT_EQ(model->markers()[0].event_index, 3u);
  EXPECT_EQ(model->TagName(1), "conv1.weight");
  EXPECT_EQ(model->TagName(0), "");
  MemoryState st = model->StateAt(0, 3);
  ASSERT_EQ(st.regions.size(), 1u);
  ASSERT_EQ(st.regions[0].chunks.size(), 2u);
  EXPECT_EQ(st.regions[0].chunks[0].size, 256u);
  EXPECT_EQ(st.regions[0].chunks[1].tag, 1u);
  ASSERT_EQ(st.regions[0].holes.size(), 2u);  // [0x10100, 0x10400) and [0x10800, 0x11000)
  EXPECT_EQ(st.regions[0].holes[0].address, 0x10100u);
  EXPECT_EQ(st.largest_hole, 0x800u);
  EXPECT_EQ(st.free_in_regions, 0x1000u - 256 - 1024);
  st = model->StateAt(0, 99);  // clamped to the last event
  EXPECT_EQ(st.event_index, 4u);
  ASSERT_EQ(st.regions[0].holes.size(), 2u);
  EXPECT_EQ(st.regions[0].holes[0].size, 0x400u);
  EXPECT_EQ(model->ValueAt(0, Series::kLoad, 4), 1000u);
  for (std::uint64_t i = 0; i < events.size(); ++i) EXPECT_EQ(model->event(i).address, events[i].address);
}

TEST(Timeline, RecordedOomKeepsItsCauseAndListsTheNearestHoles) {
  auto system = MemorySystem::Create(ParseAllocConf("backing=sim,capacity=1GiB,limit=64MiB,growth=off,gc=off"));
  testing::RecordingSink sink;
  system->SetSink(&sink);
  DeviceAllocator& a = system->device(0);
  std::vector<void*> blocks;
  for (int i = 0; i < 32; ++i) blocks.push_back(a.Allocate(2 * kMiB - 512 * (i % 3)));
  for (int i = 0; i < 32; i += 2) a.Free(blocks[static_cast<std::size_t>(i)]);
  OomReport report;
  ASSERT_EQ(a.TryAllocate(4 * kMiB, {}, &report), nullptr);
  const AllocatorSnapshot snap = a.Snapshot();
  const auto model = BuildModel(sink.events(), 4);
  const std::vector<OomDiagnosis> ooms = model->Ooms(0);
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0].report.cause(), report.cause());
  EXPECT_EQ(ooms[0].report.cause(), OomCause::kFragmentation);
  EXPECT_EQ(ooms[0].report.explanation, report.explanation);
  EXPECT_EQ(ooms[0].event_index, sink.events().size() - 1);
  EXPECT_EQ(ooms[0].seq, sink.events().back().seq);
  EXPECT_EQ(model->Metrics(0).ooms, 1u);
  std::vector<Hole> want;
  for (const RegionView& r : snap.regions)
    for (const ChunkView& c : r.chunks) if (!c.in_use) want.push_back({c.address, c.size});
  auto distance = [](const Hole& h) { return h.size > 4 * kMiB ? h.size - 4 * kMiB : 4 * kMiB - h.size; };
  std::stable_sort(want.begin(), want.end(), [&](const Hole& x, const Hole& y) {
    return distance(x) != distance(y) ? distance(x) < distance(y) : x.size > y.size;
  });
  want.resize(5);
  std::stable_sort(want.begin(), want.end(), [](const Hole& x, const Hole& y) { return x.size > y.size; });
  ASSERT_EQ(ooms[0].nearest_holes.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ooms[0].nearest_holes[i].address, want[i].address);
    EXPECT_EQ(ooms[0].nearest_holes[i].size, want[i].size);
  }
  for (std::size_t i = 1; i < blocks.size(); i += 2) a.Free(blocks[i]);
}

TEST(Timeline, RecordedCauseWinsOverTheNumbers) {
  Event oom = Ev(EventType::kOom, 0, 3 * kMiB);
  oom.oom = {3 * kMiB, 3 * kMiB, 16 * kMiB, 16 * kMiB, 8 * kMiB, 8 * kMiB, 8 * kMiB, 2 * kMiB, 0, 9, 4, OomCause::kBacking};
  Event other = oom;
  other.oom.cause = OomCause::kCapacity;  // the numbers say fragmentation
  const auto model = BuildModel(Numbered({oom, other}), 4);
  const auto ooms = model->Ooms(0);
  ASSERT_EQ(ooms.size(), 2u);
  EXPECT_EQ(ooms[0].report.cause(), OomCause::kBacking);
  EXPECT_EQ(ooms[1].report.cause(), OomCause::kCapacity);
  EXPECT_NE(ooms[1].report.explanation.find("recorded as capacity"), std::string::npos);
  EXPECT_TRUE(ooms[0].nearest_holes.empty());
}

TEST(Timeline, InconsistentInputWarnsAndNeverCrashes) {
  std::vector<Event> events = Numbered({
      Ev(EventType::kFree, 0x5000, 10),                  // unknown free
      Ev(EventType::kAlloc, 0x9000, 10),                 // outside: no regions yet (no warning)
      Ev(EventType::kRegionReserve, 0x10000, 0x10000),
      Ev(EventType::kAlloc, 0x10000, 512),
      Ev(EventType::kAlloc, 0x10100, 512),               // overlaps the live chunk at 0x10000
      Ev(EventType::kRegionReserve, 0x18000, 0x1000),    // overlaps the region
      Ev(EventType::kRegionReserve, 0x40000, 0),         // empty
      Ev(EventType::kAlloc, 0x90000, 300),               // outside every region
      Ev(EventType::kRegionRelease, 0x10000, 0x10000),   // with a live chunk inside
      Ev(EventType::kRegionRelease, 0x70000, 0x1000),    // never reserved
      Ev(static_cast<EventType>(42), 0, 0),              // unknown type
      Ev(EventType::kFree, 0x10000, 999),                // sizes disagree with the chunk
      Ev(EventType::kFree, 0x10000, 512),                // double free
      Ev(EventType::kAlloc, ~0ull - 100, 512),           // wraps past 2^64
  });
  const auto model = BuildModel(events, 2);
  const std::vector<std::string>& w = model->warnings();
  const char* expected[] = {"2 free(s) of addresses", "1 allocation(s) overlapping", "1 region release(s) with live",
                            "1 region reserve(s) overlapping", "1 region release(s) of ranges", "1 allocation(s) outside",
                            "1 empty or wrapping", "1 event(s) of unknown type", "1 allocation(s) past the end"};
  for (const char* text : expected) {
    EXPECT_TRUE(std::any_of(w.begin(), w.end(), [&](const std::string& s) { return s.find(text) != std::string::npos; }))
        << text;
  }
  for (std::uint32_t k : {1u, 3u, 100u}) {
    const auto m = BuildModel(events, k);
    for (std::uint64_t i = 0; i < events.size(); ++i) {
      const MemoryState st = m->StateAt(0, i);
      EXPECT_EQ(st.in_use, m->ValueAt(0, Series::kInUse, i)) << i;
      EXPECT_EQ(st.reserved, m->ValueAt(0, Series::kReserved, i)) << i;
      EXPECT_EQ(st.live_requested, m->ValueAt(0, Series::kLoad, i)) << i;
    }
  }
  const MemoryState st = model->StateAt(0, 9);
  EXPECT_TRUE(st.regions.empty());
  EXPECT_EQ(st.outside_regions.size(), 3u);
  EXPECT_EQ(model->StateAt(0, 12).in_use, 256u + 512u);
}

TEST(Timeline, RandomChaosIsSelfConsistentForEveryKeyframeInterval) {
  std::mt19937_64 rng(5);
  std::vector<Event> events;
  for (int i = 0; i < 3000; ++i) {
    const auto type = static_cast<EventType>(1 + rng() % 6);
    Event e = Ev(type, 0x100000 + (rng() % 64) * 0x400, 1 + rng() % 3000, 0, static_cast<std::uint32_t>(rng() % 2));
    if (type == EventType::kRegionReserve || type == EventType::kRegionRelease) e.size = (1 + rng() % 8) * 0x2000;
    events.push_back(e);
  }
  events = Numbered(events);
  const auto reference = BuildModel(events, 1);
  const auto sparse = BuildModel(events, 777);
  const auto none = BuildModel(events, 4, {}, nullptr, 0);  // no budget: no keyframe at all
  EXPECT_EQ(none->footprint().keyframes, 0u);
  EXPECT_GT(reference->footprint().keyframes, 500u);  // one per changed device and event
  for (std::uint64_t i = 0; i < events.size(); i += 7) {
    for (std::uint32_t d : {0u, 1u}) {
      const MemoryState a = reference->StateAt(d, i), b = (i % 2 ? sparse : none)->StateAt(d, i);
      ASSERT_EQ(a.regions.size(), b.regions.size());
      for (std::size_t r = 0; r < a.regions.size(); ++r) {
        ASSERT_EQ(a.regions[r].chunks.size(), b.regions[r].chunks.size());
        ASSERT_EQ(a.regions[r].holes.size(), b.regions[r].holes.size());
      }
      ASSERT_EQ(a.outside_regions.size(), b.outside_regions.size());
      ASSERT_EQ(a.in_use, sparse->ValueAt(d, Series::kInUse, i));
      ASSERT_EQ(a.reserved, sparse->ValueAt(d, Series::kReserved, i));
      ASSERT_EQ(a.live_requested, sparse->ValueAt(d, Series::kLoad, i));
      ASSERT_EQ(a.largest_hole, b.largest_hole);
    }
  }
}

TEST(Timeline, EventsRoundTripExactlyWhateverTheirFields) {
  std::mt19937_64 rng(9);
  std::vector<Event> events;
  for (int i = 0; i < 5000; ++i) {
    Event e = Ev(static_cast<EventType>(1 + rng() % 6), rng(), rng() % 4 == 0 ? rng() : rng() % 5000);
    e.device = static_cast<std::uint32_t>(rng() % 3 * 1000);
    e.seq = i < 2500 ? 100 + static_cast<std::uint64_t>(i) : rng();
    e.time_ns = i % 300 == 0 ? rng() : 1'000'000'000ull + static_cast<std::uint64_t>(i) * 1000 + rng() % 5000;
    e.stream = rng() % 400;
    e.thread = static_cast<std::uint32_t>(rng() % 300);
    e.rounded = rng() % 3 == 0 ? 0 : rng() % 2 ? e.size + rng() % 512 : rng();
    e.region = rng() % 4 == 0 ? e.address : rng() % 2 ? rng() % 80000 : 0;
    e.alloc_id = rng() % 5 == 0 ? 0 : rng() % 2 ? 1000 + static_cast<std::uint64_t>(i) : rng();
    e.tag = static_cast<traces::TagId>(rng() % 7);
    if (e.type == EventType::kOom || rng() % 50 == 0) e.oom = {rng(), rng(), 3, 4, 5, 6, 7, 8, 9, 10, 11, OomCause::kFragmentation};
    if (e.type == EventType::kOom && rng() % 2) e.alloc_id = 0;
    events.push_back(e);
  }
  const auto model = BuildModel(events, 64);
  ASSERT_EQ(model->event_count(), events.size());
  EXPECT_EQ(model->devices(), (std::vector<std::uint32_t>{0, 1000, 2000}));
  for (std::uint64_t i = 0; i < events.size(); ++i) {
    const Event got = model->event(i);
    const Event& e = events[i];
    ASSERT_TRUE(got.type == e.type && got.device == e.device && got.seq == e.seq && got.time_ns == e.time_ns &&
                got.stream == e.stream && got.address == e.address && got.size == e.size &&
                got.rounded == e.rounded && got.region == e.region && got.alloc_id == e.alloc_id &&
                got.thread == e.thread && got.tag == e.tag && got.oom.request == e.oom.request &&
                got.oom.rounded == e.oom.rounded && got.oom.region_count == e.oom.region_count &&
                got.oom.cause == e.oom.cause)
        << "event " << i;
  }
  EXPECT_THROW(model->event(events.size()), std::out_of_range);
}

TEST(Timeline, EmptyTraceAndUnknownDevices) {
  traces::TraceHeader header;
  header.producer = "truncated";
  header.devices.push_back({3, "sim", "sim", kMiB, kMiB});
  const auto model = BuildModel({}, 4, header);
  EXPECT_EQ(model->warnings(), std::vector<std::string>{"trace.fst: truncated at byte 99"});
  EXPECT_EQ(model->TagName(5), "tag 5");
  EXPECT_EQ(model->event_count(), 0u);
  EXPECT_EQ(model->devices(), std::vector<std::uint32_t>{3});
  EXPECT_EQ(model->StateAt(3, 10).regions.size(), 0u);
  EXPECT_EQ(model->Metrics(3).peak_reserved, 0u);
  std::vector<std::uint64_t> mn, mx;
  model->Downsample(3, Series::kInUse, 0, 100, 8, &mn, &mx);
  EXPECT_EQ(mn, std::vector<std::uint64_t>(8, 0));
  EXPECT_TRUE(model->Ooms(3).empty());
}

}  // namespace
}  // namespace fragscope::analysis
