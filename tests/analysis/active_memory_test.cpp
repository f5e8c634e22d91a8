// The active-memory timeline (issue 17: memory_viz parity): the largest allocations live at the
// peak as bands, the rest as one band. Exact on a hand-made trace; on a synthetic multi-device trace
// the pyramid queries it stands on (ArgMax, FirstFrees) agree with a brute-force scan; on a real
// PyTorch snapshot the stack adds up to the in-use curve in every column.
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/analysis/active_memory.hpp"
#include "fragscope/analysis/synth.hpp"
#include "fragscope/analysis/view_model.hpp"
#include "fragscope/traces/pytorch_snapshot.hpp"
#include "support/model_of.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

using testing::ModelOf;

struct HandTrace {
  traces::TraceHeader header;
  std::vector<Event> events;
  void Add(EventType type, std::uint64_t address, std::uint64_t size) {
    Event& e = events.emplace_back();
    e.type = type;
    e.seq = events.size() - 1;
    e.time_ns = e.seq * 10;
    e.address = address;
    e.size = size;
    e.rounded = size;
    e.region = 0x10000000;
    e.alloc_id = e.seq + 1;
  }
};

constexpr std::uint64_t kMiB = 1 << 20;

TEST(ActiveMemory, LargestAtThePeakAsBandsTheRestAsOne) {
  HandTrace t;
  t.header.devices = {{0, "gpu 0", "sim", 1ull << 30, 1ull << 30}};
  const std::uint64_t base = 0x10000000;
  t.Add(EventType::kRegionReserve, base, 512 * kMiB);          // 0
  t.Add(EventType::kAlloc, base, 100 * kMiB);                  // 1 weights: live to the end
  t.Add(EventType::kAlloc, base + 100 * kMiB, 8 * kMiB);       // 2 small, freed at 7
  t.Add(EventType::kAlloc, base + 108 * kMiB, 60 * kMiB);      // 3 activation, freed at 6
  t.Add(EventType::kAlloc, base + 168 * kMiB, 2 * kMiB);       // 4 small, live to the end
  t.Add(EventType::kAlloc, base + 170 * kMiB, 200 * kMiB);     // 5 the biggest: peak 370 MiB here
  t.Add(EventType::kFree, base + 108 * kMiB, 0);               // 6
  t.Add(EventType::kFree, base + 100 * kMiB, 0);               // 7
  t.Add(EventType::kFree, base + 170 * kMiB, 0);               // 8
  t.Add(EventType::kAlloc, base + 170 * kMiB, 300 * kMiB);     // 9 the largest, at the peak of the whole trace (402 MiB)
  const auto model = ModelOf(t.header, t.events);
  ASSERT_EQ(model->event_count(), 10u);
  // The peak is event 9 (100 + 2 + 300 = 402 MiB > 370 MiB at event 5).
  EXPECT_EQ(model->ArgMax(0, Series::kInUse, 0, 10), 9u);
  EXPECT_EQ(model->ArgMax(0, Series::kInUse, 0, 9), 5u);
  EXPECT_EQ(model->ArgMax(0, Series::kInUse, 6, 9), 6u) << "310 MiB at 6, 302 at 7, 102 at 8";

  // One column per event, two bands: the peak (event 9) holds 300 MiB and 100 MiB as the largest.
  ActiveMemoryStack stack = StackActiveMemory(*model, 0, 0, 10, 10, 2);
  EXPECT_EQ(stack.peak_event, 9u);
  EXPECT_EQ(stack.peak_in_use, 402 * kMiB);
  ASSERT_EQ(stack.bands.size(), 2u);
  EXPECT_EQ(stack.bands[0].chunk.size, 100 * kMiB) << "oldest at the bottom";
  EXPECT_EQ(stack.bands[0].chunk.alloc_event, 1u);
  EXPECT_EQ(stack.bands[0].free_event, 10u) << "never freed: live to the range's end";
  EXPECT_EQ(stack.bands[1].chunk.size, 300 * kMiB);
  EXPECT_EQ(stack.bands[1].chunk.alloc_event, 9u);
  ASSERT_EQ(stack.column_event.size(), 10u);
  for (std::uint64_t c = 0; c < 10; ++c) EXPECT_EQ(stack.column_event[c], c);
  // Rest: in use minus the bands live there.
  EXPECT_EQ(stack.Rest(1), 0u);                  // only the weights
  EXPECT_EQ(stack.Rest(5), 270 * kMiB);          // 8 + 60 + 2 + 200, the weights banded
  EXPECT_EQ(stack.Rest(9), 2 * kMiB);
  EXPECT_EQ(stack.BandAt(5, 0), -1);
  EXPECT_EQ(stack.BandAt(5, 270 * kMiB), 0);
  EXPECT_EQ(stack.BandAt(5, 370 * kMiB), -2);
  EXPECT_EQ(stack.BandAt(9, 2 * kMiB + 100 * kMiB), 1);

  // Zoomed on events [0, 9): the peak there is event 5; its largest are 200 and 100 MiB, and the
  // 200 MiB one ends at its free (event 8).
  stack = StackActiveMemory(*model, 0, 0, 9, 9, 2);
  EXPECT_EQ(stack.peak_event, 5u);
  EXPECT_EQ(stack.peak_in_use, 370 * kMiB);
  ASSERT_EQ(stack.bands.size(), 2u);
  EXPECT_EQ(stack.bands[0].chunk.size, 100 * kMiB);
  EXPECT_EQ(stack.bands[1].chunk.size, 200 * kMiB);
  EXPECT_EQ(stack.bands[1].free_event, 8u);
  EXPECT_TRUE(stack.bands[1].LiveAfter(7));
  EXPECT_FALSE(stack.bands[1].LiveAfter(8));

  // Two columns over ten events: each shows its own maximum (event 5, then event 9).
  stack = StackActiveMemory(*model, 0, 0, 10, 2, 1);
  ASSERT_EQ(stack.column_event.size(), 2u);
  EXPECT_EQ(stack.column_event[0], 4u) << "events 0-4: in use peaks at 4 (170 MiB)";
  EXPECT_EQ(stack.column_event[1], 9u);
  EXPECT_EQ(stack.column_in_use[0], 170 * kMiB);
  ASSERT_EQ(stack.bands.size(), 1u);
  EXPECT_EQ(stack.bands[0].chunk.size, 300 * kMiB);
  EXPECT_EQ(stack.Rest(0), 170 * kMiB) << "the 300 MiB band is not live yet";

  // By time bounds, an empty slice shows the event before it.
  const std::vector<std::uint64_t> bounds = {0, 5, 5, 10};
  stack = StackActiveMemory(*model, 0, bounds, 0);
  ASSERT_EQ(stack.column_event.size(), 3u);
  EXPECT_EQ(stack.column_event[0], 4u);
  EXPECT_EQ(stack.column_event[1], 4u);
  EXPECT_EQ(stack.column_event[2], 9u);
  EXPECT_TRUE(stack.bands.empty()) << "max_bands 0: everything is the rest";
  EXPECT_EQ(stack.Rest(2), 402 * kMiB);
}

TEST(ActiveMemory, PyramidQueriesAgreeWithAScanOnASyntheticMultiDeviceTrace) {
  SynthOptions options;
  options.events = 30000;
  options.seed = 7;
  options.devices = 2;
  testing::RecordingSink sink;
  const traces::TraceHeader header = Synthesize(options, sink);
  const std::vector<std::string> tags = sink.Names();
  const auto model = ModelOf(header, sink.events(), &tags);
  const std::uint64_t n = model->event_count();
  ASSERT_GT(n, 20000u);
  std::mt19937_64 rng(42);
  for (const std::uint32_t device : model->devices()) {
    std::vector<std::uint64_t> value(n);
    for (std::uint64_t i = 0; i < n; ++i) value[i] = model->ValueAt(device, Series::kInUse, i);
    for (int trial = 0; trial < 300; ++trial) {
      std::uint64_t a = rng() % n, b = rng() % n;
      if (trial % 3 == 0) b = a + rng() % 200;  // short ranges: partial blocks
      if (a > b) std::swap(a, b);
      b = std::min(b + 1, n);
      std::uint64_t best = a;
      for (std::uint64_t i = a; i < b; ++i) {
        if (value[i] > value[best]) best = i;
      }
      ASSERT_EQ(model->ArgMax(device, Series::kInUse, a, b), best) << "device " << device << " [" << a << ", " << b << ")";
    }
    // FirstFrees against FindFreeEvent for the live set at a few moments.
    for (const std::uint64_t at : {n / 5, n / 2, n - 2}) {
      const MemoryState state = model->StateAt(device, at);
      std::vector<std::uint64_t> addresses;
      for (const RegionState& r : state.regions) {
        for (const LiveChunk& c : r.chunks) addresses.push_back(c.address);
      }
      ASSERT_FALSE(addresses.empty());
      const std::vector<std::uint64_t> frees = model->FirstFrees(device, addresses, at, n);
      for (std::size_t i = 0; i < addresses.size(); ++i) {
        const auto found = FindFreeEvent(*model, device, addresses[i], at, n);
        ASSERT_EQ(frees[i], found ? *found : n) << "address " << addresses[i] << " after event " << at;
      }
    }
    // The stack adds up: rest + live bands = in use, in every column, and its top is the in-use max.
    const ActiveMemoryStack stack = StackActiveMemory(*model, device, 0, n, 300, 12);
    std::vector<std::uint64_t> lo, hi;
    model->Downsample(device, Series::kInUse, 0, n, 300, &lo, &hi);
    ASSERT_EQ(stack.bands.size(), 12u);
    for (std::size_t c = 0; c < 300; ++c) {
      std::uint64_t banded = 0;
      for (const ActiveBand& band : stack.bands) banded += band.LiveAfter(stack.column_event[c]) ? band.chunk.size : 0;
      ASSERT_EQ(stack.column_in_use[c], hi[c]) << "column " << c;
      ASSERT_EQ(stack.Rest(c) + banded, stack.column_in_use[c]) << "column " << c;
    }
  }
}

TEST(ActiveMemory, StackAddsUpOnARealSnapshot) {
  const std::string path = std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data/torch/pt_cs336_lm_ctx128_forward.pickle";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is absent: no PyTorch snapshot";
  const traces::Trace trace = traces::ReadPytorchSnapshot(path);
  const auto model = ModelOf(trace.header, trace.events, &trace.tags);
  const std::uint32_t device = model->devices().front();
  const std::uint64_t n = model->event_count();
  const ActiveMemoryStack stack = StackActiveMemory(*model, device, 0, n, 1280, 16);
  EXPECT_EQ(stack.peak_in_use, model->Metrics(device).peak_in_use);
  ASSERT_EQ(stack.bands.size(), 16u);
  // The bands are the largest allocations live at the peak.
  const MemoryState at_peak = model->StateAt(device, stack.peak_event);
  std::vector<std::uint64_t> sizes;
  for (const RegionState& r : at_peak.regions) {
    for (const LiveChunk& c : r.chunks) sizes.push_back(c.size);
  }
  for (const LiveChunk& c : at_peak.outside_regions) sizes.push_back(c.size);
  std::sort(sizes.rbegin(), sizes.rend());
  std::vector<std::uint64_t> band_sizes;
  for (const ActiveBand& band : stack.bands) band_sizes.push_back(band.chunk.size);
  std::sort(band_sizes.rbegin(), band_sizes.rend());
  EXPECT_EQ(band_sizes, std::vector<std::uint64_t>(sizes.begin(), sizes.begin() + 16));
  std::vector<std::uint64_t> lo, hi;
  model->Downsample(device, Series::kInUse, 0, n, 1280, &lo, &hi);
  for (std::size_t c = 0; c < 1280; ++c) {
    std::uint64_t banded = 0;
    for (const ActiveBand& band : stack.bands) banded += band.LiveAfter(stack.column_event[c]) ? band.chunk.size : 0;
    ASSERT_EQ(stack.column_in_use[c], hi[c]) << "column " << c;
    ASSERT_EQ(stack.Rest(c) + banded, hi[c]) << "column " << c;
  }
}

}  // namespace
}  // namespace fragscope::analysis
