// The model indexed block by block while the source reads (TimelineOptions::expected_events)
// against the model indexed after the last block: the same series, states, metrics, markers and
// warnings whatever the guess of the event count and however the blocks are cut.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

constexpr Series kAllSeries[] = {Series::kInUse, Series::kReserved, Series::kLoad};

// Blocks of 1 to `max_block` events (seeded), as a reader hands them out.
BlockSource Blocks(const std::vector<Event>& events, std::size_t max_block, std::uint64_t seed,
                   std::size_t* pos) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [&events, max_block, rng, pos](std::vector<Event>* out) {
    if (*pos >= events.size()) return false;
    const std::size_t n = std::min<std::size_t>(events.size() - *pos, 1 + (*rng)() % max_block);
    out->assign(events.begin() + static_cast<std::ptrdiff_t>(*pos),
                events.begin() + static_cast<std::ptrdiff_t>(*pos + n));
    *pos += n;
    return true;
  };
}

// Messy evidence on three devices, the third appearing only in the second half: allocations,
// frees (some of unknown addresses), regions, address ranges with maps and unmaps, markers, OOMs.
std::vector<Event> Chaos(std::uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::vector<Event> events;
  for (int i = 0; i < count; ++i) {
    Event e;
    const int kind = static_cast<int>(rng() % 20);
    e.device = static_cast<std::uint32_t>(rng() % (i < count / 2 ? 2 : 3)) * 7;
    e.address = 0x100000 + (rng() % 96) * 0x400;
    e.size = 1 + rng() % 3000;
    if (kind < 8) {
      e.type = EventType::kAlloc;
    } else if (kind < 15) {
      e.type = EventType::kFree;
    } else if (kind < 17) {
      e.type = rng() % 2 ? EventType::kRegionReserve : EventType::kRegionRelease;
      e.size = (1 + rng() % 8) * 0x2000;
    } else if (kind == 17) {
      e.type = rng() % 3 == 0 ? EventType::kAddressReserve : (rng() % 2 ? EventType::kMap : EventType::kUnmap);
      e.address = 0x4000000 + (rng() % 16) * 0x200000;
      e.size = (1 + rng() % 3) * 0x200000;
    } else if (kind == 18) {
      e.type = EventType::kMarker;
      e.tag = static_cast<traces::TagId>(1 + rng() % 3);
    } else {
      e.type = EventType::kOom;
      e.oom.request = e.size;
      e.oom.rounded = e.size;
    }
    e.seq = static_cast<std::uint64_t>(i);
    e.time_ns = 1000 * static_cast<std::uint64_t>(i);
    events.push_back(e);
  }
  return events;
}

struct Built {
  std::unique_ptr<TimelineModel> model;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> progress;
};

Built Build(const std::vector<Event>& events, const std::vector<std::string>& tags, std::uint32_t k,
            std::uint64_t budget, std::size_t max_block, std::function<std::uint64_t(std::uint64_t)> guess) {
  std::size_t pos = 0;
  Built out;
  TimelineOptions options;
  options.keyframe_interval = k;
  options.keyframe_budget_bytes = budget;
  options.tags = &tags;
  options.progress = [&out](std::uint64_t done, std::uint64_t total) { out.progress.emplace_back(done, total); };
  if (guess) options.expected_events = [&pos, guess] { return guess(pos); };
  out.model = TimelineModel::Build({}, Blocks(events, max_block, 3, &pos), options);
  return out;
}

void ExpectSameModel(const TimelineModel& a, const TimelineModel& b, std::uint64_t stride) {
  ASSERT_EQ(a.event_count(), b.event_count());
  ASSERT_EQ(a.devices(), b.devices());
  EXPECT_EQ(a.warnings(), b.warnings());
  ASSERT_EQ(a.markers().size(), b.markers().size());
  for (std::size_t i = 0; i < a.markers().size(); ++i) {
    EXPECT_EQ(a.markers()[i].event_index, b.markers()[i].event_index);
    EXPECT_EQ(a.markers()[i].device, b.markers()[i].device);
    EXPECT_EQ(a.markers()[i].name, b.markers()[i].name);
  }
  for (std::uint32_t d : a.devices()) {
    const DeviceMetrics ma = a.Metrics(d), mb = b.Metrics(d);
    EXPECT_EQ(ma.peak_in_use, mb.peak_in_use) << d;
    EXPECT_EQ(ma.peak_reserved, mb.peak_reserved) << d;
    EXPECT_EQ(ma.peak_load, mb.peak_load) << d;
    EXPECT_EQ(ma.allocations, mb.allocations) << d;
    EXPECT_EQ(ma.ooms, mb.ooms) << d;
    EXPECT_EQ(ma.fragmentation_at_peak, mb.fragmentation_at_peak) << d;
    ASSERT_EQ(a.Ooms(d).size(), b.Ooms(d).size()) << d;
    for (std::uint64_t i = 0; i < a.event_count(); ++i) {
      for (Series s : kAllSeries) ASSERT_EQ(a.ValueAt(d, s, i), b.ValueAt(d, s, i)) << d << " " << i;
    }
    std::vector<std::uint64_t> min_a, max_a, min_b, max_b;
    for (Series s : kAllSeries) {
      a.Downsample(d, s, 0, a.event_count(), 97, &min_a, &max_a);
      b.Downsample(d, s, 0, b.event_count(), 97, &min_b, &max_b);
      EXPECT_EQ(min_a, min_b);
      EXPECT_EQ(max_a, max_b);
    }
    for (std::uint64_t i = 0; i < a.event_count(); i += stride) {
      const MemoryState sa = a.StateAt(d, i), sb = b.StateAt(d, i);
      ASSERT_EQ(sa.regions.size(), sb.regions.size()) << d << " " << i;
      for (std::size_t r = 0; r < sa.regions.size(); ++r) {
        ASSERT_EQ(sa.regions[r].chunks.size(), sb.regions[r].chunks.size());
        ASSERT_EQ(sa.regions[r].holes.size(), sb.regions[r].holes.size());
      }
      ASSERT_EQ(sa.outside_regions.size(), sb.outside_regions.size());
      ASSERT_EQ(sa.in_use, sb.in_use);
      ASSERT_EQ(sa.largest_hole, sb.largest_hole);
    }
  }
}

const std::vector<std::string> kTags = {"tag one", "step begin", "step end"};

TEST(TimelineStreaming, SameModelWhateverTheGuessAndTheBlocks) {
  const std::vector<Event> events = Chaos(17, 6000);
  const Built after = Build(events, kTags, 64, std::uint64_t{1} << 30, 300, nullptr);
  ASSERT_GT(after.model->markers().size(), 100u);
  ASSERT_FALSE(after.model->warnings().empty());
  ASSERT_EQ(after.model->devices().size(), 3u);
  // Exact, far too low (nothing read yet counts), far too high, and a guess that moves.
  const std::function<std::uint64_t(std::uint64_t)> guesses[] = {
      [](std::uint64_t) { return 6000; },
      [](std::uint64_t) { return 0; },
      [](std::uint64_t) { return 1'000'000; },
      [](std::uint64_t read) { return read * 2; },
  };
  for (std::size_t g = 0; g < std::size(guesses); ++g) {
    for (std::size_t max_block : {1, 63, 64, 65, 4096}) {
      SCOPED_TRACE(testing::Message() << "guess " << g << ", blocks up to " << max_block);
      const Built streamed = Build(events, kTags, 64, std::uint64_t{1} << 30, max_block, guesses[g]);
      ExpectSameModel(*after.model, *streamed.model, 13);
      // Streaming reports the index once, at its end (the source reports the bytes as it reads).
      ASSERT_EQ(streamed.progress.size(), 1u);
      EXPECT_EQ(streamed.progress[0], std::make_pair(std::uint64_t{6000}, std::uint64_t{6000}));
    }
  }
}

TEST(TimelineStreaming, ExactGuessSpendsTheKeyframeBudgetAsTheTwoPassBuild) {
  const std::vector<Event> events = Chaos(23, 8000);
  // A budget that binds: keyframes are skipped where they would cost more than their share.
  const std::uint64_t budget = 60'000;
  const Built after = Build(events, kTags, 16, budget, 200, nullptr);
  const Built streamed = Build(events, kTags, 16, budget, 200, [](std::uint64_t) { return 8000; });
  const Built unlimited = Build(events, kTags, 16, std::uint64_t{1} << 30, 200, nullptr);
  ASSERT_LT(after.model->footprint().keyframes, unlimited.model->footprint().keyframes);
  EXPECT_EQ(streamed.model->footprint().keyframes, after.model->footprint().keyframes);
  EXPECT_EQ(streamed.model->footprint().keyframe_bytes, after.model->footprint().keyframe_bytes);
  EXPECT_LE(streamed.model->footprint().keyframe_bytes, budget);
  ExpectSameModel(*after.model, *streamed.model, 7);
  // A guess far too low spends the budget early, never more than the budget.
  const Built early = Build(events, kTags, 16, budget, 200, [](std::uint64_t) { return 0; });
  EXPECT_LE(early.model->footprint().keyframe_bytes, budget);
  ExpectSameModel(*after.model, *early.model, 7);
}

TEST(TimelineStreaming, EmptySourceAndOneEvent) {
  const std::vector<Event> none;
  const Built empty = Build(none, kTags, 64, std::uint64_t{1} << 30, 10, [](std::uint64_t) { return 0; });
  EXPECT_EQ(empty.model->event_count(), 0u);
  EXPECT_TRUE(empty.model->devices().empty());
  std::vector<Event> one = Chaos(5, 1);
  one[0].type = EventType::kAlloc;
  const Built single = Build(one, kTags, 64, std::uint64_t{1} << 30, 10, [](std::uint64_t) { return 1; });
  ASSERT_EQ(single.model->event_count(), 1u);
  EXPECT_EQ(single.model->ValueAt(one[0].device, Series::kLoad, 0), one[0].size);
}

}  // namespace
}  // namespace fragscope::analysis
