// Chrome trace-event export: the output parses as JSON, the counters of a hand-built two-device
// trace have the right values at chosen times, markers and OOMs are instant events, and traces
// without times use the event index.
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/chrome_trace.hpp"

namespace fragscope::traces {
namespace {

using nlohmann::json;

struct Builder {
  Trace trace;
  Event& Add(EventType type, std::uint32_t device, std::uint64_t time_ns) {
    Event& e = trace.events.emplace_back();
    e.type = type;
    e.device = device;
    e.seq = trace.events.size() - 1;
    e.time_ns = time_ns;
    return e;
  }
  void Alloc(std::uint32_t device, std::uint64_t t, std::uint64_t address, std::uint64_t size,
             std::uint64_t rounded, std::uint64_t id) {
    Event& e = Add(EventType::kAlloc, device, t);
    e.address = address;
    e.size = size;
    e.rounded = rounded;
    e.alloc_id = id;
  }
  void Region(EventType type, std::uint32_t device, std::uint64_t t, std::uint64_t address, std::uint64_t size) {
    Event& e = Add(type, device, t);
    e.address = address;
    e.size = size;
  }
};

json Export(const Trace& trace) {
  std::ostringstream out;
  WriteChromeTrace(trace, out);
  return json::parse(out.str());
}

// The value of counter `name` of process `pid` at time `ts`: the last sample at or before it.
std::int64_t CounterAt(const json& doc, int pid, const std::string& name, double ts) {
  std::int64_t value = -1;
  double best = -1;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] != "C" || e["pid"] != pid || e["name"] != name) continue;
    const double t = e["ts"].get<double>();
    if (t <= ts && t >= best) {
      best = t;
      value = e["args"]["bytes"].get<std::int64_t>();
    }
  }
  return value;
}

Trace HandBuilt() {
  Builder b;
  b.trace.header.devices = {{0, "GPU_0_bfc", "tensorflow", 0, 0}, {3, "sim", "sim", 0, 0}};
  auto marker = [&](std::uint32_t device, std::uint64_t t, const std::string& name) {
    b.trace.tags.push_back(name);
    b.Add(EventType::kMarker, device, t).tag = static_cast<TagId>(b.trace.tags.size());
  };
  const std::uint64_t base = 1'000'000'000'000;  // times start far from 0: ts counts from the first
  marker(0, base, "step 1 begin");
  b.Region(EventType::kRegionReserve, 0, base + 1000, 0x1000000, 1 << 20);   // ts 1
  b.Alloc(0, base + 2000, 0x1000000, 1000, 1024, 1);                         // ts 2
  b.Alloc(0, base + 3000, 0x1000400, 5000, 5120, 2);                         // ts 3
  b.Region(EventType::kRegionReserve, 3, base + 3500, 0x9000000, 4096);      // ts 3.5
  b.Alloc(3, base + 3600, 0x9000000, 100, 256, 3);                           // ts 3.6
  Event& f = b.Add(EventType::kFree, 0, base + 4000);                        // ts 4
  f.address = 0x1000000;
  f.alloc_id = 1;  // sizes left 0: taken from the allocation
  Event& oom = b.Add(EventType::kOom, 0, base + 5000);                       // ts 5
  oom.oom.request = 2 << 20;
  oom.oom.cause = OomCause::kRequestTooLarge;
  b.Region(EventType::kRegionRelease, 3, base + 6000, 0x9000000, 0);         // ts 6
  return b.trace;
}

TEST(ChromeTrace, CountersAtChosenTimes) {
  const json doc = Export(HandBuilt());
  ASSERT_TRUE(doc.contains("traceEvents"));
  EXPECT_EQ(CounterAt(doc, 0, "reserved", 0.5), 0);
  EXPECT_EQ(CounterAt(doc, 0, "reserved", 1.0), 1 << 20);
  EXPECT_EQ(CounterAt(doc, 0, "in use", 2.0), 1024);
  EXPECT_EQ(CounterAt(doc, 0, "live requested", 2.0), 1000);
  EXPECT_EQ(CounterAt(doc, 0, "in use", 3.9), 1024 + 5120);
  EXPECT_EQ(CounterAt(doc, 0, "live requested", 3.9), 6000);
  EXPECT_EQ(CounterAt(doc, 0, "in use", 4.0), 5120);
  EXPECT_EQ(CounterAt(doc, 0, "live requested", 10), 5000);
  EXPECT_EQ(CounterAt(doc, 3, "in use", 3.6), 256);
  EXPECT_EQ(CounterAt(doc, 3, "reserved", 5.9), 4096);
  EXPECT_EQ(CounterAt(doc, 3, "reserved", 6.0), 0);  // released by address, size taken from the reserve
  // Device 0's counters never see device 3's bytes.
  EXPECT_EQ(CounterAt(doc, 0, "reserved", 10), 1 << 20);

  int markers = 0, ooms = 0, names = 0;
  for (const json& e : doc["traceEvents"]) {
    if (e["ph"] == "M") ++names;
    if (e["ph"] == "i" && e["cat"] == "marker") {
      ++markers;
      EXPECT_EQ(e["name"], "step 1 begin");
      EXPECT_EQ(e["ts"].get<double>(), 0.0);
    }
    if (e["ph"] == "i" && e["cat"] == "oom") {
      ++ooms;
      EXPECT_EQ(e["ts"].get<double>(), 5.0);
      EXPECT_EQ(e["args"]["cause"], "request-too-large");
      EXPECT_EQ(e["args"]["request"], 2 << 20);
    }
  }
  EXPECT_EQ(markers, 1);
  EXPECT_EQ(ooms, 1);
  EXPECT_EQ(names, 2);
}

TEST(ChromeTrace, UntimedTracesUseTheEventIndex) {
  Trace trace = HandBuilt();
  for (Event& e : trace.events) e.time_ns = 0;
  const json doc = Export(trace);
  // Event 2 is the first allocation, event 6 the free.
  EXPECT_EQ(CounterAt(doc, 0, "in use", 2), 1024);
  EXPECT_EQ(CounterAt(doc, 0, "in use", 5.5), 1024 + 5120);
  EXPECT_EQ(CounterAt(doc, 0, "in use", 6), 5120);
}

TEST(ChromeTrace, EmptyTraceIsValidJson) {
  const json doc = Export(Trace{});
  EXPECT_TRUE(doc["traceEvents"].is_array());
  EXPECT_TRUE(doc["traceEvents"].empty());
}

}  // namespace
}  // namespace fragscope::traces
