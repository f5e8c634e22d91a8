// The timeline model's speed on 10 million events: build time, memory, StateAt and Downsample
// latency percentiles. Not a test of behaviour (no timed assertions): disabled, run by hand and
// recorded in docs/performance.md:
//   timeline_perf_test --gtest_also_run_disabled_tests [FRAGSCOPE_PERF_EVENTS=N FRAGSCOPE_PERF_LIVE=M]
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {
namespace {

using traces::Event;
using traces::EventType;

constexpr std::uint64_t kMiB = 1 << 20;
constexpr Series kAllSeries[] = {Series::kInUse, Series::kReserved, Series::kLoad};

class StreamSink : public traces::EventSink {
 public:
  std::vector<Event>* out = nullptr;
  std::uint64_t seq = 0;
  void Record(Event& e) override {
    e.seq = seq++;
    out->push_back(e);
  }
  traces::TagId Intern(std::string_view text) override {
    return text.empty() ? 0 : static_cast<traces::TagId>(1 + text.size() % 7);
  }
};

std::uint64_t RssBytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0, rss = 0;
  statm >> pages >> rss;
  return rss * 4096;
}

std::uint64_t EnvOr(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr ? std::strtoull(text, nullptr, 10) : fallback;
}

double CpuUs() {  // this thread's CPU time: latency without preemption by other processes
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

struct Percentiles {
  std::vector<double> wall, cpu;
  template <typename F>
  void Time(F&& f) {
    const auto t = std::chrono::steady_clock::now();
    const double c = CpuUs();
    f();
    cpu.push_back(CpuUs() - c);
    wall.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }
  static std::string Line(std::vector<double> us) {
    std::sort(us.begin(), us.end());
    auto at = [&](double q) { return us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))]; };
    return fmt::format("p50 {:.1f}, p90 {:.1f}, p99 {:.1f}, max {:.1f} us", at(0.5), at(0.9), at(0.99), us.back());
  }
  std::string Line() const { return "wall " + Line(wall) + "; cpu " + Line(cpu); }
};

TEST(TimelinePerformance, DISABLED_TenMillionEvents) {
  using Clock = std::chrono::steady_clock;
  auto us_since = [](Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); };
  const std::uint64_t target = EnvOr("FRAGSCOPE_PERF_EVENTS", 10'000'000);
  const std::uint64_t live_target = EnvOr("FRAGSCOPE_PERF_LIVE", 4000);
  const std::uint64_t capacity_gib = std::max<std::uint64_t>(80, live_target / 256);  // ~4 MiB per live
  auto system = MemorySystem::Create(ParseAllocConf(fmt::format("backing=sim,capacity={}GiB", capacity_gib)));
  DeviceAllocator& a = system->device(0);
  StreamSink sink;
  std::vector<Event> first;
  sink.out = &first;
  system->SetSink(&sink);
  std::mt19937_64 rng(1);
  std::vector<void*> live;
  std::uint64_t produced = 0, ops = 0;
  double generate_us = 0;
  BlockSource source = [&](std::vector<Event>* out) {
    if (produced >= target) return false;
    const auto t = Clock::now();
    out->clear();
    sink.out = out;
    while (out->size() < 4096 && produced + out->size() < target) {
      ++ops;
      if (ops % 1000 == 0) a.Mark("step");
      if (ops % 200'000 == 0) a.ReleaseFreeRegions();
      if (live.size() < live_target / 2 || (live.size() < live_target && rng() % 100 < 55)) {
        const auto bytes = static_cast<std::uint64_t>(std::exp2(8 + 16 * static_cast<double>(rng() % 1000) / 1000.0));
        live.push_back(a.Allocate(bytes, {rng() % 2, static_cast<traces::TagId>(rng() % 7)}));
      } else {
        const std::size_t i = rng() % live.size();
        a.Free(live[i]);
        live[i] = live.back();
        live.pop_back();
      }
    }
    produced += out->size();
    generate_us += us_since(t);
    return true;
  };
  const std::uint64_t rss_before = RssBytes();
  const auto t0 = Clock::now();
  const auto model = TimelineModel::Build(system->MakeTraceHeader("perf"), source);
  const double total_us = us_since(t0);
  const std::uint64_t rss_after = RssBytes();
  const std::uint64_t n = model->event_count();
  const TimelineFootprint f = model->footprint();
  fmt::print("events {} (live target {}, peak in use {:.2f} GiB, peak reserved {:.2f} GiB)\n", n, live_target,
             static_cast<double>(model->Metrics(0).peak_in_use) / (1 << 30),
             static_cast<double>(model->Metrics(0).peak_reserved) / (1 << 30));
  fmt::print("build: {:.2f} s total, {:.2f} s generating events (allocator), {:.2f} s model\n",
             total_us / 1e6, generate_us / 1e6, (total_us - generate_us) / 1e6);
  auto mib = [](std::uint64_t bytes) { return static_cast<double>(bytes) / kMiB; };
  fmt::print("memory: rss +{:.1f} MiB ({:.1f} B/event); footprint: events {:.1f} MiB, series {:.1f} MiB, "
             "keyframes {:.1f} MiB in {} keyframes, other {:.1f} MiB; total {:.1f} B/event\n",
             mib(rss_after - rss_before), static_cast<double>(rss_after - rss_before) / static_cast<double>(n),
             mib(f.events_bytes), mib(f.series_bytes), mib(f.keyframe_bytes), f.keyframes, mib(f.other_bytes),
             static_cast<double>(f.total()) / static_cast<double>(n));
  Percentiles state;
  std::uint64_t chunks = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t index = rng() % n;
    MemoryState st;
    state.Time([&] { st = model->StateAt(0, index); });
    for (const RegionState& r : st.regions) chunks += r.chunks.size();
  }
  fmt::print("StateAt (2000 random events, {} live chunks on average): {}\n", chunks / 2000, state.Line());
  Percentiles zoom;
  std::vector<std::uint64_t> mn, mx;
  for (int i = 0; i < 2000; ++i) {
    const auto width = static_cast<std::uint64_t>(std::exp2(11 + (std::log2(static_cast<double>(n)) - 11) * static_cast<double>(rng() % 1000) / 999.0));
    const std::uint64_t begin = rng() % (n - std::min(n, width) + 1);
    zoom.Time([&] { model->Downsample(0, kAllSeries[i % 3], begin, begin + width, 2000, &mn, &mx); });
  }
  fmt::print("Downsample, 2000 columns, 2000 random zooms of 2k..{} events: {}\n", n, zoom.Line());
  Percentiles full;
  for (int i = 0; i < 50; ++i) full.Time([&] { model->Downsample(0, Series::kInUse, 0, n, 2000, &mn, &mx); });
  fmt::print("Downsample, 2000 columns, whole trace: {}\n", full.Line());
  Percentiles value;
  std::uint64_t sum = 0;
  for (int i = 0; i < 20000; ++i) value.Time([&] { sum += model->ValueAt(0, Series::kLoad, rng() % n); });
  fmt::print("ValueAt: {} (checksum {})\n", value.Line(), sum % 10);
  // Fragmentation over time: its pass (on first use), then its level of detail.
  const auto frag_t = Clock::now();
  const double frag_cpu = CpuUs();
  model->PrepareFragmentation();
  fmt::print("fragmentation pass: {:.2f} s wall, {:.2f} s cpu ({:.0f} ns/event); highest {:.3f}, most stranded {:.1f} MiB\n",
             us_since(frag_t) / 1e6, (CpuUs() - frag_cpu) / 1e6, (CpuUs() - frag_cpu) * 1e3 / static_cast<double>(n),
             model->Fragmentation(0).highest, mib(model->Fragmentation(0).most_stranded));
  Percentiles frag_zoom;
  std::vector<float> fmn, fmx;
  for (int i = 0; i < 2000; ++i) {
    const auto width = static_cast<std::uint64_t>(std::exp2(11 + (std::log2(static_cast<double>(n)) - 11) * static_cast<double>(rng() % 1000) / 999.0));
    const std::uint64_t begin = rng() % (n - std::min(n, width) + 1);
    frag_zoom.Time([&] { model->DownsampleFragmentation(0, begin, begin + width, 2000, &fmn, &fmx); });
  }
  fmt::print("DownsampleFragmentation, 2000 columns, 2000 random zooms: {}\n", frag_zoom.Line());
  system->SetSink(nullptr);
  for (void* p : live) a.Free(p);
}

}  // namespace
}  // namespace fragscope::analysis
