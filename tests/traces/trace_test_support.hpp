// Helpers shared by the trace tests: temporary files, random events with extreme values, and a
// printable form of events for comparisons that show what differs.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"

namespace fragscope::traces::testing {

// A directory for one test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::path(::testing::TempDir()) /
            fmt::format("fragscope-{}-{}-{}", info->test_suite_name(), info->name(), ::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string File(const std::string& name) const { return (path_ / name).string(); }
  // The one ".partial" file that a writer of `name` killed before Close left (AtomicFile), or ""
  // when there is none or more than one.
  std::string PartialOf(const std::string& name) const {
    std::string found;
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path_)) {
      const std::string file = entry.path().filename().string();
      if (file.rfind(name + ".", 0) == 0 && file.size() > 8 &&
          file.compare(file.size() - 8, 8, ".partial") == 0) {
        found = entry.path().string();
        ++count;
      }
    }
    return count == 1 ? found : std::string();
  }

 private:
  std::filesystem::path path_;
};

inline std::vector<std::uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void WriteBytes(const std::string& path, const std::vector<std::uint8_t>& bytes, std::size_t n) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(n));
}

inline std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every field of an event, tags by name: EXPECT_EQ on these shows the difference.
inline std::string Describe(const Event& e, const std::string& tag) {
  std::string text = fmt::format(
      "{}(type {}) seq={} time={} device={} stream={} address={:#x} size={} rounded={} region={:#x} alloc_id={} "
      "thread={} tag='{}'",
      ToString(e.type), static_cast<int>(e.type), e.seq, e.time_ns, e.device, e.stream, e.address, e.size, e.rounded,
      e.region, e.alloc_id, e.thread, tag);
  if (e.type == EventType::kOom) {
    const OomRecord& o = e.oom;
    text += fmt::format(" oom={{{} {} {} {} {} {} {} {} {} {} {} cause={}}}", o.request, o.rounded, o.limit,
                        o.reserved, o.in_use, o.live_requested, o.free_in_regions, o.largest_free, o.headroom,
                        o.chunk_count, o.region_count, static_cast<int>(o.cause));
  }
  return text;
}

inline std::vector<std::string> Describe(const Trace& trace) {
  std::vector<std::string> out;
  out.reserve(trace.events.size());
  for (const Event& e : trace.events) out.push_back(Describe(e, trace.TagName(e.tag)));
  return out;
}

inline std::vector<std::string> Describe(const std::vector<Event>& events, const std::vector<std::string>& tags) {
  std::vector<std::string> out;
  for (const Event& e : events) {
    out.push_back(Describe(e, e.tag == kNoTag || e.tag > tags.size() ? std::string() : tags[e.tag - 1]));
  }
  return out;
}

// Values that stress varints, deltas and rounding: zero, one, the 256 boundaries, 2^63 and up,
// 2^64 - 1, and plain random numbers of every width.
inline std::uint64_t ExtremeValue(std::mt19937_64& rng) {
  static constexpr std::uint64_t kSpecial[] = {0,
                                               1,
                                               255,
                                               256,
                                               257,
                                               0x7FFFFFFFFFFFFFFFull,
                                               0x8000000000000000ull,
                                               0x8000000000000100ull,
                                               0xFFFFFFFFFFFFFF00ull,
                                               0xFFFFFFFFFFFFFF01ull,
                                               0xFFFFFFFFFFFFFFFFull};
  switch (rng() % 4) {
    case 0: return kSpecial[rng() % std::size(kSpecial)];
    case 1: return rng();
    case 2: return rng() >> (rng() % 64);
    default: return rng() % 100000;
  }
}

inline const std::vector<std::string>& SampleTagNames() {
  static const std::vector<std::string> names = {
      "conv1.weight", "layer1.0.bn1", "backward", "step 12 begin", "αβγ/δ", "层/权重", "🔥 activation", "a\"quote\\",
      "tab\tnew\nline", std::string(300, 'x'), "workspace", "optimizer.momentum"};
  return names;
}

// Random events of every type. `wellformed`: only the fields each type uses are set (what the
// allocator emits); otherwise every field of every event is random (the extra-field path).
inline Trace RandomTrace(std::uint64_t seed, std::size_t count, bool wellformed, std::uint32_t devices = 1000) {
  std::mt19937_64 rng(seed);
  Trace trace;
  trace.header.producer = "fragscope tests";
  trace.header.source_format = "fragscope";
  trace.tags = SampleTagNames();
  std::uint64_t time = rng();
  for (std::size_t i = 0; i < count; ++i) {
    Event e;
    e.type = static_cast<EventType>(1 + rng() % 6);
    e.seq = i;
    time += rng() % 3 == 0 ? ExtremeValue(rng) : rng() % 5000;
    e.time_ns = time;
    e.device = rng() % 3 == 0 ? static_cast<std::uint32_t>(rng()) : static_cast<std::uint32_t>(rng() % devices);
    e.thread = static_cast<std::uint32_t>(rng() % 2 == 0 ? rng() % 8 : rng());
    const auto tag = static_cast<TagId>(rng() % (trace.tags.size() + 1));
    const bool all = !wellformed;
    const auto type = e.type;
    const bool chunk = type == EventType::kAlloc || type == EventType::kFree;
    const bool region = type == EventType::kRegionReserve || type == EventType::kRegionRelease;
    if (all || chunk || type == EventType::kOom) e.stream = ExtremeValue(rng);
    if (all || chunk || region) e.address = ExtremeValue(rng);
    if (all || chunk || region || type == EventType::kOom) e.size = ExtremeValue(rng);
    if (all || chunk || type == EventType::kOom) e.rounded = rng() % 2 == 0 ? (e.size + 255) & ~0xFFull : ExtremeValue(rng);
    if (all || chunk) e.region = rng() % 2 == 0 ? e.address - rng() % 4096 : ExtremeValue(rng);
    if (all || chunk) e.alloc_id = ExtremeValue(rng);
    if (all || chunk || type == EventType::kOom || type == EventType::kMarker) e.tag = tag;
    if (chunk || region) {
      // Readers refuse sizes over 4 EiB and ranges past 2^64 (EventSizeProblem): keep the
      // extremes inside what they take.
      if (e.size > kMaxBytes) e.size >>= 2;
      if (e.rounded > kMaxBytes) e.rounded >>= 2;
      if (!CheckedAdd(e.address, std::max(e.size, e.rounded))) e.address >>= 1;
    }
    if (type == EventType::kOom) {
      for (std::uint64_t* v : {&e.oom.request, &e.oom.rounded, &e.oom.limit, &e.oom.reserved, &e.oom.in_use,
                               &e.oom.live_requested, &e.oom.free_in_regions, &e.oom.largest_free, &e.oom.headroom,
                               &e.oom.chunk_count, &e.oom.region_count}) {
        *v = ExtremeValue(rng);
      }
      e.oom.cause = static_cast<OomCause>(1 + rng() % 4);
    }
    trace.events.push_back(e);
  }
  return trace;
}

// An allocator-like stream: allocs with log-uniform sizes at best-fit-like addresses, frees of
// live allocations (most in the same block), region events, markers, an oom now and then.
inline Trace AllocatorLikeTrace(std::uint64_t seed, std::size_t count, std::uint32_t devices = 2) {
  std::mt19937_64 rng(seed);
  Trace trace;
  trace.header.producer = "fragscope tests";
  for (int i = 0; i < 50; ++i) trace.tags.push_back(fmt::format("layer{}.tensor", i));
  struct Live {
    std::uint64_t address, size, rounded, id, stream;
    TagId tag;
  };
  std::vector<std::vector<Live>> live(devices);
  std::vector<std::uint64_t> next(devices, 0x7f0000000000ull), ids(devices, 0);
  std::uniform_real_distribution<double> log_size(8.0, 26.0);
  std::uint64_t time = 1'000'000;
  for (std::size_t i = 0; i < count; ++i) {
    Event e;
    e.seq = i;
    time += 50 + rng() % 2000;
    e.time_ns = time;
    e.device = static_cast<std::uint32_t>(rng() % devices);
    e.thread = e.device;
    auto& mine = live[e.device];
    const std::uint64_t r = rng() % 100;
    if (r < 2) {
      e.type = EventType::kMarker;
      e.tag = static_cast<TagId>(1 + rng() % 50);
    } else if (r < 3) {
      e.type = EventType::kRegionReserve;
      e.address = next[e.device];
      e.size = 1ull << 26;
    } else if (r < 52 || mine.empty()) {
      e.type = EventType::kAlloc;
      e.size = static_cast<std::uint64_t>(std::exp2(log_size(rng)));
      e.rounded = (e.size + 255) & ~0xFFull;
      e.address = rng() % 4 == 0 && !mine.empty() ? mine[rng() % mine.size()].address + (1 << 20) : next[e.device];
      next[e.device] = e.address + e.rounded;
      e.region = e.address & ~((1ull << 26) - 1);
      e.stream = rng() % 3;
      e.alloc_id = ++ids[e.device];
      e.tag = static_cast<TagId>(rng() % 51);
      mine.push_back({e.address, e.size, e.rounded, e.alloc_id, e.stream, e.tag});
    } else if (r < 99) {
      e.type = EventType::kFree;
      // Mostly recent allocations (matched in the block), sometimes old ones.
      const std::size_t k = rng() % 4 == 0 ? rng() % mine.size() : mine.size() - 1 - rng() % std::min<std::size_t>(mine.size(), 8);
      const Live a = mine[k];
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(k));
      e.address = a.address;
      e.size = a.size;
      e.rounded = a.rounded;
      e.alloc_id = a.id;
      e.stream = a.stream;   // the allocator records the chunk's fields on frees too
      e.region = a.address & ~((1ull << 26) - 1);
      e.tag = a.tag;
    } else {
      e.type = EventType::kOom;
      e.stream = 1;
      e.size = 1ull << 33;
      e.rounded = 1ull << 33;
      e.tag = 3;
      e.oom = OomRecord{1ull << 33, 1ull << 33, 1ull << 34, 1ull << 34, 1ull << 33, 1ull << 32, 1ull << 33,
                        1ull << 30, 0, 1234, 7, OomCause::kFragmentation};
    }
    trace.events.push_back(e);
  }
  return trace;
}

}  // namespace fragscope::traces::testing
