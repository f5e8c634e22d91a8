// Shared by the timeline model's tests: building a model from events block by block, hand-made
// events, and runs of the real allocator with its snapshot after every operation.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis::timeline_fixtures {

using traces::Event;
using traces::EventType;

inline std::unique_ptr<TimelineModel> BuildModel(const std::vector<Event>& events, std::uint32_t k,
                                          const traces::TraceHeader& header = {},
                                          const std::vector<std::string>* tags = nullptr,
                                          std::uint64_t keyframe_budget = std::uint64_t{1} << 30) {
  std::size_t pos = 0;
  BlockSource source = [&](std::vector<Event>* out) {
    if (pos >= events.size()) return false;
    const std::size_t n = std::min<std::size_t>(events.size() - pos, 1 + pos % 37);
    out->assign(events.begin() + static_cast<std::ptrdiff_t>(pos),
                events.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
    return true;
  };
  TimelineOptions options;
  options.keyframe_interval = k;
  options.tags = tags;
  options.keyframe_budget_bytes = keyframe_budget;
  const std::vector<std::string> source_warnings = {"trace.fst: truncated at byte 99"};
  if (header.producer == "truncated") options.source_warnings = &source_warnings;
  return TimelineModel::Build(header, source, options);
}

inline Event Ev(EventType type, std::uint64_t address, std::uint64_t size, std::uint64_t rounded = 0,
         std::uint32_t device = 0) {
  Event e;
  e.type = type;
  e.address = address;
  e.size = size;
  e.rounded = rounded;
  e.device = device;
  return e;
}
inline std::vector<Event> Numbered(std::vector<Event> events) {
  for (std::size_t i = 0; i < events.size(); ++i) events[i].seq = events[i].time_ns = i;
  return events;
}

// RecordingSink plus an event count (its events() copies them all).
class CountingSink : public traces::EventSink {
 public:
  void Record(Event& event) override { inner.Record(event), ++count; }
  traces::TagId Intern(std::string_view text) override { return inner.Intern(text); }
  testing::RecordingSink inner;
  std::size_t count = 0;
};

// A run of the real allocator with a recording sink, and its snapshots after every operation.
struct TraceRun {
  std::vector<Event> events;
  std::vector<std::string> tags;
  traces::TraceHeader header;
  std::vector<std::pair<std::uint64_t, AllocatorSnapshot>> checkpoints;  // (events so far, snap)
  std::vector<AllocatorStats> final_stats;
};

inline TraceRun RandomRun(const std::string& conf, int ops, std::uint32_t seed, std::size_t max_live = 60) {
  TraceRun run;
  auto system = MemorySystem::Create(ParseAllocConf(conf));
  CountingSink sink;
  system->SetSink(&sink);
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::size_t, void*>> live;
  std::size_t recorded = 0;
  auto checkpoint = [&] {
    const std::size_t now = sink.count;
    if (now == recorded) return;
    recorded = now;
    for (std::size_t d = 0; d < system->device_count(); ++d) {
      run.checkpoints.emplace_back(now, system->device(d).Snapshot());
    }
  };
  for (int op = 0; op < ops; ++op) {
    const std::size_t dev = rng() % system->device_count();
    DeviceAllocator& a = system->device(dev);
    if (op % 53 == 52) {
      a.ReleaseFreeRegions();
    } else if (op % 97 == 96 && max_live <= 60) {  // the end of a step: most of the live set goes
      for (std::size_t i = live.size(); i-- > 0;) {
        if (rng() % 4 == 0) continue;
        system->device(live[i].first).Free(live[i].second);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
    } else if (op % 41 == 40) {
      a.Mark(fmt::format("step {}", op / 41));
    } else if (!live.empty() && (live.size() > max_live || rng() % 100 < (max_live > 60 ? 40 : 45))) {
      const std::size_t i = rng() % live.size();
      system->device(live[i].first).Free(live[i].second);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      const int kind = static_cast<int>(rng() % 100);
      const double hi = kind < 60 ? 18 : kind < 90 ? 22 : 25;
      const double lo = kind < 60 ? 0 : kind < 90 ? 18 : 22;
      const auto bytes = static_cast<std::uint64_t>(std::exp2(lo + (hi - lo) * static_cast<double>(rng() % 1000) / 1000.0));
      AllocOptions options;
      options.stream = rng() % 3;
      options.tag = sink.Intern(fmt::format("t{}", rng() % 5));
      OomReport report;
      if (void* p = a.TryAllocate(bytes, options, &report)) live.emplace_back(dev, p);
    }
    checkpoint();
  }
  run.events = sink.inner.events();
  try {
    for (traces::TagId id = 1;; ++id) run.tags.push_back(sink.inner.Name(id));
  } catch (const std::out_of_range&) {  // past the last interned name
  }
  run.header = system->MakeTraceHeader("timeline_test");
  for (std::size_t d = 0; d < system->device_count(); ++d) run.final_stats.push_back(system->device(d).Stats());
  for (auto& [dev, p] : live) system->device(dev).Free(p);
  return run;
}


}  // namespace fragscope::analysis::timeline_fixtures
