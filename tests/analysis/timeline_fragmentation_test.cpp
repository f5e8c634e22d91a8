// External fragmentation over time (TimelineModel::FragmentationAt, DownsampleFragmentation,
// Fragmentation): against the model's own state at every event (whose holes are checked against
// the allocator's snapshots in timeline_test), by hand on small traces, and on messy input.
#include <algorithm>
#include <cmath>
#include <random>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "fragscope/traces/pytorch_snapshot.hpp"
#include "timeline_fixtures.hpp"

namespace fragscope::analysis {
namespace {

using namespace timeline_fixtures;
constexpr double kResolution = 1.0 / 65535;

// The ratio after every event of `device`, from StateAt: exact, and as the model stores it.
struct Brute {
  std::vector<double> exact;
  std::vector<std::uint16_t> stored;
  std::vector<std::uint64_t> largest, free;
};
Brute BruteForce(const TimelineModel& model, std::uint32_t device) {
  Brute b;
  for (std::uint64_t i = 0; i < model.event_count(); ++i) {
    const MemoryState st = model.StateAt(device, i);
    b.exact.push_back(ExternalFragmentation(st.largest_hole, st.free_in_regions));
    b.stored.push_back(static_cast<std::uint16_t>(std::lround(b.exact.back() * 65535)));
    b.largest.push_back(st.largest_hole);
    b.free.push_back(st.free_in_regions);
  }
  return b;
}

void CheckAgainstState(const TimelineModel& model) {
  for (std::uint32_t device : model.devices()) {
    const Brute b = BruteForce(model, device);
    const std::uint64_t n = model.event_count();
    FragmentationSummary want;
    for (std::uint64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(model.FragmentationAt(device, i), b.exact[i], kResolution) << "device " << device << " event " << i;
      if (b.free[i] == 0) continue;
      want.had_free = true;
      if (b.exact[i] > want.highest) {
        want.highest = b.exact[i];
        want.highest_event = i;
        want.highest_free = b.free[i];
        want.highest_largest = b.largest[i];
      }
      if (b.free[i] - b.largest[i] > want.most_stranded) {
        want.most_stranded = b.free[i] - b.largest[i];
        want.stranded_event = i;
        want.stranded_free = b.free[i];
        want.stranded_largest = b.largest[i];
      }
    }
    const FragmentationSummary got = model.Fragmentation(device);
    EXPECT_EQ(got.had_free, want.had_free);
    EXPECT_DOUBLE_EQ(got.highest, want.highest);
    EXPECT_EQ(got.highest_event, want.highest_event);
    EXPECT_EQ(got.highest_free, want.highest_free);
    EXPECT_EQ(got.highest_largest, want.highest_largest);
    EXPECT_EQ(got.most_stranded, want.most_stranded);
    EXPECT_EQ(got.stranded_event, want.stranded_event);
    EXPECT_EQ(got.stranded_free, want.stranded_free);
    EXPECT_EQ(got.stranded_largest, want.stranded_largest);

    // Downsampling at several zooms: each column's min and max are those of its events.
    std::vector<float> mn, mx;
    const std::uint64_t ranges[][2] = {{0, n}, {n / 3, n / 3 + 200}, {n / 2, n / 2 + 1}, {5, n - 5}, {0, 5000}};
    for (const auto& range : ranges) {
      const std::uint64_t begin = std::min(range[0], n - 1), end = std::min(range[1], n);
      for (std::uint32_t columns : {1u, 7u, 64u, 1280u}) {
        model.DownsampleFragmentation(device, begin, end, columns, &mn, &mx);
        ASSERT_EQ(mn.size(), columns);
        for (std::uint32_t c = 0; c < columns; ++c) {
          const auto [lo, hi] = TimelineModel::ColumnSlice(begin, end, columns, c);
          const auto first = b.stored.begin() + static_cast<std::ptrdiff_t>(lo);
          const auto last = b.stored.begin() + static_cast<std::ptrdiff_t>(std::min(hi, n));
          ASSERT_FLOAT_EQ(mn[c], static_cast<float>(*std::min_element(first, last) / 65535.0))
              << begin << ".." << end << " column " << c << "/" << columns;
          ASSERT_FLOAT_EQ(mx[c], static_cast<float>(*std::max_element(first, last) / 65535.0))
              << begin << ".." << end << " column " << c << "/" << columns;
        }
      }
    }
  }
}

class FragmentationRuns : public ::testing::TestWithParam<const char*> {};

TEST_P(FragmentationRuns, EveryEventMatchesTheStateAtThatEvent) {
  const TraceRun run = RandomRun(GetParam(), 900, 17);
  ASSERT_GT(run.events.size(), 600u);
  const auto model = BuildModel(run.events, 64, run.header, &run.tags);
  CheckAgainstState(*model);
  // Something happened: holes came and went, so the series is not flat zero.
  bool varied = false;
  for (std::uint32_t device : model->devices()) varied |= model->Fragmentation(device).highest > 0.1;
  EXPECT_TRUE(varied);
}

INSTANTIATE_TEST_SUITE_P(Policies, FragmentationRuns,
                         ::testing::Values("backing=sim,capacity=1GiB",
                                           "backing=sim,capacity=1GiB,growth=on",
                                           "backing=sim,capacity=1GiB,growth=off",
                                           "backing=sim,capacity=1GiB,unmap=eager",
                                           "backing=sim,capacity=1GiB,limit=40MiB",
                                           "backing=sim,capacity=1GiB,virtual_devices=32MiB+512MiB"));

TEST(TimelineFragmentation, LongTraceAcrossManyBlocks) {
  const TraceRun run = RandomRun("backing=sim,capacity=1GiB,growth=off", 9000, 13, 700);
  ASSERT_GT(run.events.size(), 2 * 4096u);
  CheckAgainstState(*BuildModel(run.events, 4096, run.header, &run.tags));
}

TEST(TimelineFragmentation, HandBuiltRegionsAndMappedPieces) {
  const std::vector<Event> events = Numbered({
      Ev(EventType::kRegionReserve, 0x10000, 0x1000),  // 0: one hole of 4096
      Ev(EventType::kAlloc, 0x10400, 1024, 1024),       // 1: holes 1024 + 2048
      Ev(EventType::kRegionReserve, 0x11000, 0x1000),   // 2: right after it, but a region of its own
      Ev(EventType::kAlloc, 0x11000, 512, 512),         // 3: 1024 + 2048 + 3584
      Ev(EventType::kFree, 0x10400, 1024, 1024),        // 4: 4096 + 3584 (no join across regions)
      Ev(EventType::kAddressReserve, 0x100000, 0x10000),
      Ev(EventType::kMap, 0x100000, 0x2000),            // 6: + 8192
      Ev(EventType::kAlloc, 0x101000, 256, 256),        // 7: 4096 + 3584 + 4096 + 3840
      Ev(EventType::kMap, 0x102000, 0x2000),            // 8: the piece grows: 3840 + 8192 join
      Ev(EventType::kUnmap, 0x100000, 0x1000),          // 9: its free first page goes
      Ev(EventType::kFree, 0x101000, 256, 256),         // 10: 4096 + 3584 + 12288
  });
  const auto model = BuildModel(events, 3);
  const auto frag = [](std::uint64_t largest, std::uint64_t free) { return 1.0 - static_cast<double>(largest) / static_cast<double>(free); };
  EXPECT_EQ(model->FragmentationAt(0, 0), 0.0);
  EXPECT_NEAR(model->FragmentationAt(0, 1), frag(2048, 3072), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 2), frag(4096, 7168), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 3), frag(3584, 6656), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 4), frag(4096, 7680), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 6), frag(8192, 15872), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 7), frag(4096, 15616), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 8), frag(12032, 23808), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 9), frag(12032, 19712), kResolution);
  EXPECT_NEAR(model->FragmentationAt(0, 10), frag(12288, 19968), kResolution);
  const FragmentationSummary s = model->Fragmentation(0);
  EXPECT_TRUE(s.had_free);
  EXPECT_EQ(s.highest_event, 7u);  // 1 - 4096/15616 = 0.738
  EXPECT_EQ(s.highest_largest, 4096u);
  EXPECT_EQ(s.highest_free, 15616u);
  EXPECT_EQ(s.most_stranded, 23808u - 12032u);  // more bytes, a lower ratio (0.495)
  EXPECT_EQ(s.stranded_event, 8u);
  CheckAgainstState(*model);
}

TEST(TimelineFragmentation, NoFreeMemoryIsZeroAndUnknownDevicesAreEmpty) {
  const auto model = BuildModel(Numbered({Ev(EventType::kAlloc, 0x1000, 256, 256), Ev(EventType::kFree, 0x1000, 256, 256)}), 4);
  EXPECT_EQ(model->FragmentationAt(0, 1), 0.0);
  EXPECT_FALSE(model->Fragmentation(0).had_free);
  EXPECT_FALSE(model->Fragmentation(7).had_free);
  std::vector<float> mn, mx;
  model->DownsampleFragmentation(7, 0, 2, 3, &mn, &mx);
  EXPECT_EQ(mn, std::vector<float>(3, 0.0f));
  const auto empty = BuildModel({}, 4);
  EXPECT_EQ(empty->FragmentationAt(0, 0), 0.0);
}

TEST(TimelineFragmentation, MessyInputStaysConsistentWithTheState) {
  std::mt19937_64 rng(23);
  std::vector<Event> events;
  for (int i = 0; i < 2500; ++i) {
    static constexpr EventType kTypes[] = {EventType::kAlloc, EventType::kAlloc, EventType::kFree, EventType::kFree,
                                           EventType::kRegionReserve, EventType::kRegionRelease, EventType::kAddressReserve,
                                           EventType::kMap, EventType::kUnmap};
    const EventType type = kTypes[rng() % std::size(kTypes)];
    Event e = Ev(type, 0x100000 + (rng() % 64) * 0x400, 1 + rng() % 3000, 0, static_cast<std::uint32_t>(rng() % 2));
    if (type != EventType::kAlloc && type != EventType::kFree) e.size = (1 + rng() % 8) * 0x2000;
    if (type == EventType::kAddressReserve) e.address = 0x100000 + (rng() % 4) * 0x10000, e.size = 0x10000;
    events.push_back(e);
  }
  CheckAgainstState(*BuildModel(Numbered(events), 5));
}

// Real evidence: PyTorch snapshots (hundreds of segments, expandable segments mapped piece by piece,
// blocks live before recording, a state) give the state's fragmentation after every event.
TEST(TimelineFragmentation, RealPytorchSnapshotsMatchTheStateAtEveryEvent) {
  const std::string dir = std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data/torch/";
  int read = 0;
  for (const char* name : {"pt_linear_grad_tiny.pickle", "pt_eor_cnn_counterfactuals.pickle",
                           "pt_cs336_lm_ctx128_forward.pickle", "pt_flexgen_opt_oom_state.pickle"}) {
    if (!std::filesystem::exists(dir + name)) continue;
    SCOPED_TRACE(name);
    const traces::Trace trace = traces::ReadPytorchSnapshot(dir + name);
    CheckAgainstState(*BuildModel(trace.events, 4096, trace.header, &trace.tags));
    ++read;
  }
  if (read == 0) GTEST_SKIP() << dir << " is absent: no PyTorch snapshot (the shared data lives next to the project)";
}

TEST(TimelineFragmentation, ConcurrentFirstQueriesBuildItOnce) {
  const TraceRun run = RandomRun("backing=sim,capacity=1GiB", 600, 3);
  const auto model = BuildModel(run.events, 64, run.header, &run.tags);
  const std::uint64_t last = model->event_count() - 1;
  double a = -1, b = -1;
  std::thread one([&] { a = model->FragmentationAt(0, last); });
  std::thread two([&] { b = model->Fragmentation(0).highest; });
  one.join();
  two.join();
  const MemoryState st = model->StateAt(0, last);
  EXPECT_NEAR(a, ExternalFragmentation(st.largest_hole, st.free_in_regions), kResolution);
  EXPECT_GE(b, a - kResolution);
}

}  // namespace
}  // namespace fragscope::analysis
