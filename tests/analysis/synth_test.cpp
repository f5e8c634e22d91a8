// The synthetic training workload: deterministic per seed, shaped like training (markers, tags,
// weights that stay, activations that come and go), sized to fit the default device, and honest
// about OOMs under a small limit.
#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/synth.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis {
namespace {

using testing::RecordingSink;
using traces::Event;
using traces::EventType;

struct SynthRun {
  traces::TraceHeader header;
  std::vector<Event> events;
  std::vector<std::string> tags;  // by id - 1
};

SynthRun RunSynth(const SynthOptions& options) {
  RecordingSink sink;
  SynthRun run;
  run.header = Synthesize(options, sink);
  run.events = sink.events();
  run.tags = sink.Names();
  return run;
}

auto Fields(const Event& e) {
  const traces::OomRecord& o = e.oom;
  return std::tuple(e.type, e.device, e.seq, e.time_ns, e.stream, e.address, e.size, e.rounded,
                    e.region, e.alloc_id, e.thread, e.tag, o.request, o.rounded, o.limit,
                    o.reserved, o.in_use, o.live_requested, o.free_in_regions, o.largest_free,
                    o.headroom, o.chunk_count, o.region_count, o.cause);
}

bool SameEvents(const std::vector<Event>& a, const std::vector<Event>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Event& x, const Event& y) { return Fields(x) == Fields(y); });
}

// Counts events and interns names; measures synth itself rather than a sink.
class CountingSink : public traces::EventSink {
 public:
  void Record(Event& event) override { event.seq = count++; }
  traces::TagId Intern(std::string_view text) override {
    auto [it, inserted] = ids.emplace(std::string(text), static_cast<traces::TagId>(ids.size() + 1));
    return it->second;
  }
  std::uint64_t count = 0;
  std::map<std::string, traces::TagId, std::less<>> ids;
};

std::uint64_t CountOps(const std::vector<Event>& events) {
  return static_cast<std::uint64_t>(std::count_if(events.begin(), events.end(), [](const Event& e) {
    return e.type == EventType::kAlloc || e.type == EventType::kFree || e.type == EventType::kOom;
  }));
}

TEST(Synth, SameSeedGivesIdenticalEvents) {
  SynthOptions options;
  options.events = 30000;
  options.seed = 7;
  const SynthRun a = RunSynth(options);
  const SynthRun b = RunSynth(options);
  ASSERT_EQ(a.events.size(), b.events.size());
  EXPECT_TRUE(SameEvents(a.events, b.events));
  EXPECT_EQ(a.tags, b.tags);
  EXPECT_EQ(a.header.alloc_conf, b.header.alloc_conf);
  EXPECT_EQ(a.header.created_unix_ns, b.header.created_unix_ns);
  EXPECT_EQ(a.header.metadata, b.header.metadata);
  ASSERT_EQ(a.header.devices.size(), b.header.devices.size());
  EXPECT_EQ(a.header.devices[0].capacity, b.header.devices[0].capacity);
}

TEST(Synth, DifferentSeedGivesDifferentEvents) {
  SynthOptions options;
  options.events = 30000;
  options.seed = 7;
  const SynthRun a = RunSynth(options);
  options.seed = 8;
  const SynthRun b = RunSynth(options);
  EXPECT_FALSE(SameEvents(a.events, b.events));
}

TEST(Synth, ProducesExactlyTheRequestedOps) {
  for (std::uint64_t events : {0, 1, 777, 25000}) {
    SynthOptions options;
    options.events = events;
    EXPECT_EQ(CountOps(RunSynth(options).events), events) << events;
  }
}

TEST(Synth, LooksLikeTraining) {
  SynthOptions options;
  options.events = 40000;
  const SynthRun run = RunSynth(options);

  std::set<std::string> markers;
  std::map<std::uint64_t, const Event*> live;  // address -> alloc
  std::set<std::string> alloc_tags;
  std::uint64_t odd = 0, allocs = 0, frees = 0, load = 0, peak_load = 0;
  std::uint64_t last_time = 0;
  for (const Event& e : run.events) {
    EXPECT_GT(e.time_ns, last_time);
    last_time = e.time_ns;
    switch (e.type) {
      case EventType::kMarker:
        markers.insert(run.tags.at(e.tag - 1));
        break;
      case EventType::kAlloc:
        ++allocs;
        ASSERT_NE(e.tag, traces::kNoTag);
        alloc_tags.insert(run.tags.at(e.tag - 1));
        ASSERT_TRUE(live.emplace(e.address, &e).second) << "address handed out twice";
        if (e.size % 256 != 0) ++odd;
        load += e.size;
        peak_load = std::max(peak_load, load);
        break;
      case EventType::kFree: {
        ++frees;
        auto it = live.find(e.address);
        ASSERT_NE(it, live.end()) << "free of an address never allocated, seq " << e.seq;
        EXPECT_EQ(it->second->alloc_id, e.alloc_id);
        load -= it->second->size;
        live.erase(it);
        break;
      }
      case EventType::kOom:
        ADD_FAILURE() << "no OOM expected under the default configuration";
        break;
      default:
        break;
    }
  }
  for (const char* name : {"init", "step 0 begin", "forward", "backward", "optimizer", "step 0 end",
                           "step 1 begin"}) {
    EXPECT_TRUE(markers.count(name)) << name;
  }
  for (const char* tag : {"layer0.conv/activation", "layer0.conv/weight", "layer0.conv/workspace",
                          "layer1.bn/weight", "layer0.conv/weight_grad", "layer0.conv/momentum",
                          "data/input", "pinned/metrics"}) {
    EXPECT_TRUE(alloc_tags.count(tag)) << tag;
  }
  EXPECT_GT(odd, allocs / 2) << "sizes should mostly not be multiples of 256";
  EXPECT_GT(frees, allocs / 2);
  // Weights stay live to the end.
  const auto weight_live = std::count_if(live.begin(), live.end(), [&](const auto& entry) {
    const std::string& tag = run.tags.at(entry.second->tag - 1);
    return tag.ends_with("/weight");
  });
  EXPECT_GT(weight_live, 8);
  // A few GiB: fits the default 80 GiB device with room, but is not a toy.
  EXPECT_GT(peak_load, 1 * GiB);
  EXPECT_LT(peak_load, 8 * GiB);

  EXPECT_EQ(run.header.producer, "fragscope synth 0.1.0");
  EXPECT_EQ(run.header.alloc_conf, ParseAllocConf(options.alloc_conf).ToString());
  ASSERT_EQ(run.header.devices.size(), 1u);
  EXPECT_EQ(run.header.devices[0].capacity, 80 * GiB);
}

TEST(Synth, RecordsOomsUnderASmallLimitAndCarriesOn) {
  SynthOptions options;
  options.events = 20000;
  options.alloc_conf = "backing=sim,capacity=80GiB,limit=768MiB";
  const SynthRun run = RunSynth(options);
  EXPECT_EQ(CountOps(run.events), options.events);
  std::uint64_t ooms = 0, allocs_after_first_oom = 0;
  std::map<std::uint64_t, std::uint64_t> live;
  for (const Event& e : run.events) {
    if (e.type == EventType::kOom) {
      ++ooms;
      EXPECT_EQ(e.oom.limit, 768 * MiB);
      EXPECT_GT(e.oom.request, 0u);
    } else if (e.type == EventType::kAlloc) {
      if (ooms > 0) ++allocs_after_first_oom;
      live[e.address] = e.size;
    } else if (e.type == EventType::kFree) {
      ASSERT_EQ(live.erase(e.address), 1u);
    }
  }
  EXPECT_GT(ooms, 1u);
  EXPECT_GT(allocs_after_first_oom, 1000u) << "the workload goes on with the next step";
}

TEST(Synth, SeveralDevicesInterleave) {
  SynthOptions options;
  options.events = 20000;
  options.devices = 2;
  const SynthRun run = RunSynth(options);
  ASSERT_EQ(run.header.devices.size(), 2u);
  EXPECT_EQ(run.header.devices[0].index, 0u);
  EXPECT_EQ(run.header.devices[1].index, 1u);
  std::map<std::uint32_t, std::uint64_t> per_device;
  std::uint64_t switches = 0;
  std::uint32_t last = 0;
  for (const Event& e : run.events) {
    if (e.type != EventType::kAlloc) continue;
    ++per_device[e.device];
    if (e.device != last) ++switches;
    last = e.device;
  }
  EXPECT_EQ(per_device.size(), 2u);
  EXPECT_GT(switches, 100u) << "devices interleave layer by layer";
}

TEST(Synth, VirtualDevices) {
  SynthOptions options;
  options.events = 10000;
  options.devices = 2;
  options.alloc_conf = "backing=sim,capacity=32GiB,virtual_devices=16GiB+16GiB";
  const SynthRun run = RunSynth(options);
  ASSERT_EQ(run.header.devices.size(), 2u);
  EXPECT_EQ(run.header.devices[1].limit, 16 * GiB);
  std::set<std::uint32_t> devices;
  for (const Event& e : run.events) {
    if (e.type == EventType::kAlloc) devices.insert(e.device);
    EXPECT_NE(e.type, EventType::kOom);
  }
  EXPECT_EQ(devices, (std::set<std::uint32_t>{0, 1}));

  options.devices = 3;
  RecordingSink sink;
  EXPECT_THROW(Synthesize(options, sink), ConfigError);
}

TEST(Synth, HeaderUpFrontAndProgress) {
  SynthOptions options;
  options.events = 3000000;
  options.devices = 2;
  std::vector<std::uint64_t> done;
  options.progress = [&](std::uint64_t n, std::uint64_t total) {
    EXPECT_EQ(total, 3000000u);
    done.push_back(n);
  };
  const traces::TraceHeader before = SynthHeader(options);
  CountingSink sink;
  const traces::TraceHeader after = Synthesize(options, sink);
  EXPECT_EQ(before.producer, after.producer);
  EXPECT_EQ(before.alloc_conf, after.alloc_conf);
  EXPECT_EQ(before.metadata, after.metadata);
  ASSERT_EQ(before.devices.size(), 2u);
  ASSERT_EQ(after.devices.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(before.devices[i].index, after.devices[i].index);
    EXPECT_EQ(before.devices[i].limit, after.devices[i].limit);
  }
  ASSERT_GE(done.size(), 3u);
  EXPECT_TRUE(std::is_sorted(done.begin(), done.end()));
  EXPECT_EQ(done.back(), 3000000u);
}

TEST(Synth, BadConfigurationIsAConfigError) {
  SynthOptions options;
  options.alloc_conf = "growth=sometimes";
  RecordingSink sink;
  try {
    Synthesize(options, sink);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "growth");
  }
}

// Not a pass/fail test: prints how fast synth runs.
void MeasureSpeed(std::uint64_t events) {
  SynthOptions options;
  options.events = events;
  CountingSink sink;
  const auto start = std::chrono::steady_clock::now();
  Synthesize(options, sink);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("synth: %llu ops (%llu events) in %.3f s = %.2f M ops/s\n",
              static_cast<unsigned long long>(options.events),
              static_cast<unsigned long long>(sink.count), seconds,
              static_cast<double>(options.events) / seconds / 1e6);
  EXPECT_GE(sink.count, events);
}

TEST(SynthSpeed, OneMillionOps) { MeasureSpeed(1000000); }

// Run by hand: synth_test --gtest_also_run_disabled_tests --gtest_filter='*TenMillion*'
TEST(SynthSpeed, DISABLED_TenMillionOps) { MeasureSpeed(10000000); }

}  // namespace
}  // namespace fragscope::analysis
