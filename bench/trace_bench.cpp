// Trace recording and storage costs (Google Benchmark).
//
//   Record/NoopSink          the same loop into a sink that only numbers events: the baseline
//   Record/TraceWriter/...   Record() into a .fst file, background (default) or foreground writer;
//                            a tight loop, so this includes waiting for the writer thread when
//                            it falls behind
//   RecordWithWork/...       ~300 ns of other work between events (an allocator call): the cost
//                            of recording when the writer thread keeps up
//   Encode                   what the writer thread spends per event (encode + zstd + write)
//   Read                     TraceReader, events per second
//
// Counters: bytes_per_event is the file size over the event count, for two event streams:
//   churn     allocations and frees with log-uniform sizes (256 B .. 64 MiB) placed by a best-fit
//             allocator with coalescing over 2 GiB regions, 300 tags, a marker every ~100 events
//   training  the same allocator under a repeating step schedule (forward allocations, backward
//             frees in reverse, optimizer), as a training loop produces
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::traces {
namespace {

// A best-fit allocator with coalescing, enough to place addresses the way a BFC allocator does.
class BestFit {
 public:
  explicit BestFit(std::vector<Event>* events) : events_(events) {}

  std::uint64_t Allocate(std::uint64_t size, TagId tag, std::uint64_t* rounded, std::uint64_t* region) {
    *rounded = (size + 255) & ~std::uint64_t{255};
    auto it = by_size_.lower_bound({*rounded, 0});
    if (it == by_size_.end()) {
      AddRegion(std::max<std::uint64_t>(kRegion, *rounded));
      it = by_size_.lower_bound({*rounded, 0});
    }
    const auto [chunk_size, address] = *it;
    by_size_.erase(it);
    free_.erase(address);
    if (chunk_size > *rounded) Insert(address + *rounded, chunk_size - *rounded);
    *region = RegionOf(address);
    (void)tag;
    return address;
  }
  void Free(std::uint64_t address, std::uint64_t rounded) {
    std::uint64_t start = address;
    std::uint64_t size = rounded;
    auto next = free_.find(address + rounded);
    if (next != free_.end() && RegionOf(next->first) == RegionOf(address)) {
      size += next->second;
      Erase(next->first);
    }
    auto prev = free_.lower_bound(address);
    if (prev != free_.begin()) {
      --prev;
      if (prev->first + prev->second == address && RegionOf(prev->first) == RegionOf(address)) {
        start = prev->first;
        size += prev->second;
        Erase(prev->first);
      }
    }
    Insert(start, size);
  }

 private:
  static constexpr std::uint64_t kRegion = 2ull << 30;
  void AddRegion(std::uint64_t size) {
    const std::uint64_t base = next_region_;
    next_region_ += size + kRegion;
    regions_[base] = size;
    Insert(base, size);
    Event e;
    e.type = EventType::kRegionReserve;
    e.address = base;
    e.size = size;
    events_->push_back(e);
  }
  std::uint64_t RegionOf(std::uint64_t address) const { return std::prev(regions_.upper_bound(address))->first; }
  void Insert(std::uint64_t address, std::uint64_t size) {
    free_[address] = size;
    by_size_.insert({size, address});
  }
  void Erase(std::uint64_t address) {
    by_size_.erase({free_[address], address});
    free_.erase(address);
  }

  std::vector<Event>* events_;
  std::map<std::uint64_t, std::uint64_t> free_;  // address -> size
  std::set<std::pair<std::uint64_t, std::uint64_t>> by_size_;
  std::map<std::uint64_t, std::uint64_t> regions_;
  std::uint64_t next_region_ = 0x7f2a40000000ull;
};

struct Stream {
  std::vector<Event> events;
  std::vector<std::string> tags;
};

Stream Churn(std::size_t count) {
  Stream s;
  for (int i = 0; i < 300; ++i) s.tags.push_back("model.layer" + std::to_string(i / 6) + ".op" + std::to_string(i % 6));
  BestFit heap(&s.events);
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(64.0 * 1024 * 1024));
  struct Live {
    std::uint64_t address, size, rounded, region, id;
    TagId tag;
  };
  std::vector<Live> live;
  std::uint64_t id = 0;
  std::uint64_t time = 1'000'000'000;
  while (s.events.size() < count) {
    time += 200 + rng() % 3000;
    Event e;
    e.time_ns = time;
    if (rng() % 100 == 0) {
      e.type = EventType::kMarker;
      e.tag = static_cast<TagId>(1 + rng() % 300);
    } else if (live.size() < 200 || (live.size() < 2000 && rng() % 2 == 0)) {
      e.type = EventType::kAlloc;
      e.size = static_cast<std::uint64_t>(std::exp(log_size(rng)));
      e.tag = static_cast<TagId>(1 + rng() % 300);
      e.address = heap.Allocate(e.size, e.tag, &e.rounded, &e.region);
      e.alloc_id = ++id;
      live.push_back({e.address, e.size, e.rounded, e.region, e.alloc_id, e.tag});
    } else {
      // Mostly recent allocations (temporaries), sometimes long-lived ones.
      const std::size_t k = rng() % 3 == 0 ? rng() % live.size() : live.size() - 1 - rng() % std::min<std::size_t>(16, live.size());
      const Live a = live[k];
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      heap.Free(a.address, a.rounded);
      e.type = EventType::kFree;
      e.address = a.address;
      e.size = a.size;
      e.rounded = a.rounded;
      e.region = a.region;
      e.alloc_id = a.id;
      e.tag = a.tag;
    }
    s.events.push_back(e);
  }
  s.events.resize(count);
  return s;
}

Stream Training(std::size_t count) {
  Stream s;
  constexpr int kLayers = 50;
  for (int i = 0; i < kLayers; ++i) {
    for (const char* what : {"weight", "activation", "grad", "workspace", "momentum", "output"}) {
      s.tags.push_back("layer" + std::to_string(i) + "." + what);
    }
  }
  s.tags.push_back("step begin");
  s.tags.push_back("backward");
  BestFit heap(&s.events);
  std::mt19937_64 rng(2);
  std::uniform_real_distribution<double> log_size(std::log(4096.0), std::log(32.0 * 1024 * 1024));
  std::vector<std::uint64_t> act_size(kLayers), ws_size(kLayers);
  for (int i = 0; i < kLayers; ++i) {
    act_size[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(std::exp(log_size(rng)));
    ws_size[static_cast<std::size_t>(i)] = static_cast<std::uint64_t>(std::exp(log_size(rng))) / 4;
  }
  std::uint64_t id = 0;
  std::uint64_t time = 1'000'000'000;
  auto alloc = [&](std::uint64_t size, TagId tag) {
    Event e;
    e.type = EventType::kAlloc;
    e.time_ns = time += 500 + rng() % 20000;
    e.size = size;
    e.tag = tag;
    e.address = heap.Allocate(size, tag, &e.rounded, &e.region);
    e.alloc_id = ++id;
    s.events.push_back(e);
    return e;
  };
  auto free = [&](const Event& a) {
    heap.Free(a.address, a.rounded);
    Event e = a;
    e.type = EventType::kFree;
    e.time_ns = time += 300 + rng() % 5000;
    s.events.push_back(e);
  };
  auto marker = [&](TagId tag) {
    Event e;
    e.type = EventType::kMarker;
    e.tag = tag;
    e.time_ns = time += 100;
    s.events.push_back(e);
  };
  const auto tag = [](int layer, int what) { return static_cast<TagId>(1 + layer * 6 + what); };
  while (s.events.size() < count) {
    marker(kLayers * 6 + 1);
    std::vector<Event> acts;
    for (int l = 0; l < kLayers; ++l) {
      const Event ws = alloc(ws_size[static_cast<std::size_t>(l)], tag(l, 3));
      acts.push_back(alloc(act_size[static_cast<std::size_t>(l)], tag(l, 1)));
      free(ws);
    }
    marker(kLayers * 6 + 2);
    for (int l = kLayers - 1; l >= 0; --l) {
      const Event grad = alloc(act_size[static_cast<std::size_t>(l)], tag(l, 2));
      const Event ws = alloc(ws_size[static_cast<std::size_t>(l)], tag(l, 3));
      free(ws);
      free(acts[static_cast<std::size_t>(l)]);
      free(grad);
    }
  }
  s.events.resize(count);
  return s;
}

const Stream& GetStream(int which) {
  static const Stream churn = Churn(1'000'000);
  static const Stream training = Training(1'000'000);
  return which == 0 ? churn : training;
}

std::string TempPath(const char* name) {
  return (std::filesystem::temp_directory_path() / (std::string("fragscope-bench-") + name + "-" +
                                                     std::to_string(::getpid()) + ".fst"))
      .string();
}

class NoopSink final : public EventSink {
 public:
  void Record(Event& event) override { event.seq = seq_++; }
  TagId Intern(std::string_view) override { return 1; }

 private:
  std::uint64_t seq_ = 0;
};

// The recording loop both sinks run: copy an event from the stream (as an allocator builds one)
// and hand it over.
void RecordLoop(benchmark::State& state, EventSink& sink_ref, const Stream& stream) {
  EventSink* sink = &sink_ref;
  benchmark::DoNotOptimize(sink);  // a virtual call, as from the allocator
  std::size_t i = 0;
  for (auto _ : state) {
    Event e = stream.events[i];
    sink->Record(e);
    benchmark::DoNotOptimize(e.seq);
    if (++i == stream.events.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Record_NoopSink(benchmark::State& state) {
  NoopSink sink;
  RecordLoop(state, sink, GetStream(0));
}
BENCHMARK(BM_Record_NoopSink);

void BM_Record_TraceWriter(benchmark::State& state) {
  const bool background = state.range(0) != 0;
  const std::string path = TempPath("record");
  const Stream& stream = GetStream(static_cast<int>(state.range(1)));
  std::uint64_t events = 0;
  std::uint64_t bytes = 0;
  {
    TraceWriter writer(path, TraceHeader{}, {.background = background});
    for (const auto& tag : stream.tags) writer.Intern(tag);
    RecordLoop(state, writer, stream);
    writer.Close();
    events = writer.events_written();
    bytes = writer.bytes_written();
  }
  std::filesystem::remove(path);
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / static_cast<double>(events);
}
BENCHMARK(BM_Record_TraceWriter)->ArgNames({"background", "stream"})->Args({1, 0})->Args({0, 0})->Args({1, 1});

// Record() alone when the writer thread keeps up: the clock stops while Flush() drains the
// writer every 16k events, so no Record call waits for the writer thread.
void BM_Record_TraceWriter_WriterKeepsUp(benchmark::State& state) {
  const std::string path = TempPath("keepsup");
  const Stream& stream = GetStream(0);
  {
    TraceWriter writer(path, TraceHeader{});
    for (const auto& tag : stream.tags) writer.Intern(tag);
    EventSink* sink = &writer;
    benchmark::DoNotOptimize(sink);
    std::size_t i = 0;
    std::size_t n = 0;
    for (auto _ : state) {
      Event e = stream.events[i];
      sink->Record(e);
      benchmark::DoNotOptimize(e.seq);
      if (++i == stream.events.size()) i = 0;
      if (++n % 16384 == 0) {
        state.PauseTiming();
        writer.Flush();
        state.ResumeTiming();
      }
    }
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Record_TraceWriter_WriterKeepsUp);

// Some work between events, as in an allocator: measures the recording cost when the writer
// thread keeps up. Compare with the NoopSink variant.
void Work(std::uint64_t* x) {
  for (int k = 0; k < 100; ++k) *x = *x * 6364136223846793005ull + 1442695040888963407ull;
  benchmark::DoNotOptimize(*x);
}

void BM_RecordWithWork_NoopSink(benchmark::State& state) {
  NoopSink sink;
  const Stream& stream = GetStream(0);
  std::uint64_t x = 1;
  std::size_t i = 0;
  for (auto _ : state) {
    Work(&x);
    Event e = stream.events[i];
    sink.Record(e);
    benchmark::DoNotOptimize(e.seq);
    if (++i == stream.events.size()) i = 0;
  }
}
BENCHMARK(BM_RecordWithWork_NoopSink);

void BM_RecordWithWork_TraceWriter(benchmark::State& state) {
  const std::string path = TempPath("work");
  const Stream& stream = GetStream(0);
  {
    TraceWriter writer(path, TraceHeader{});
    for (const auto& tag : stream.tags) writer.Intern(tag);
    std::uint64_t x = 1;
    std::size_t i = 0;
    for (auto _ : state) {
      Work(&x);
      Event e = stream.events[i];
      writer.Record(e);
      benchmark::DoNotOptimize(e.seq);
      if (++i == stream.events.size()) i = 0;
    }
  }
  std::filesystem::remove(path);
}
BENCHMARK(BM_RecordWithWork_TraceWriter);

// The writer thread's work per event: encode, compress, write (foreground writer, whole stream).
void BM_Encode(benchmark::State& state) {
  const Stream& stream = GetStream(static_cast<int>(state.range(0)));
  const std::string path = TempPath("encode");
  double bytes_per_event = 0;
  for (auto _ : state) {
    TraceWriter writer(path, TraceHeader{}, {.compression_level = static_cast<int>(state.range(1)), .background = false});
    for (const auto& tag : stream.tags) writer.Intern(tag);
    for (const Event& event : stream.events) writer.Append(event);
    writer.Close();
    bytes_per_event = static_cast<double>(writer.bytes_written()) / static_cast<double>(stream.events.size());
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(stream.events.size()));
  state.counters["bytes_per_event"] = bytes_per_event;
}
BENCHMARK(BM_Encode)->ArgNames({"stream", "level"})->Args({0, 3})->Args({1, 3})->Args({0, 1})->Args({0, 9})
    ->Unit(benchmark::kMillisecond);

void BM_Read(benchmark::State& state) {
  const Stream& stream = GetStream(static_cast<int>(state.range(0)));
  const std::string path = TempPath("read");
  {
    TraceWriter writer(path, TraceHeader{});
    for (const auto& tag : stream.tags) writer.Intern(tag);
    for (const Event& event : stream.events) writer.Append(event);
  }
  std::vector<Event> events;
  for (auto _ : state) {
    TraceReader reader(path);
    std::size_t n = 0;
    while (reader.NextBlock(&events)) n += events.size();
    benchmark::DoNotOptimize(n);
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(stream.events.size()));
}
BENCHMARK(BM_Read)->ArgNames({"stream"})->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fragscope::traces

BENCHMARK_MAIN();
