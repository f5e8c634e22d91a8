// torch.profiler traces with memory events: the shared 2021 ResNet-50 trace (no addresses: frees
// paired by size), a current-format trace written here (Addr: exact pairing), gzip and not, the
// operator tags, step markers, devices kept apart, and errors that name the problem.
#include "fragscope/traces/torch_profiler.hpp"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/shell.hpp"
#include "torch_profiler_fixtures.hpp"

namespace fragscope::traces {
namespace {

namespace fs = std::filesystem;

const std::string kShared =
    (fs::path(FRAGSCOPE_SOURCE_DIR).parent_path() / "shared" / "data" / "torch_profiler" /
     "kineto_resnet50_train_memevents.pt.trace.json.gz").string();

using profiler_fixtures::Gzip;
using profiler_fixtures::MemoryEvent;
using profiler_fixtures::Span;

// Addresses without the running totals: one step; aten::empty (inside aten::conv) allocates 1 MiB
// at 0x1000 on cuda:1; aten::add allocates 512 B on the CPU; the conv block is freed by address; a
// free of memory from before profiling is left out (without "Total Allocated" nothing says what
// was live before; torch_profiler_totals_test.cpp has the traces that say it).
std::string CurrentFormat() {
  std::vector<std::string> events = {
      Span("ProfilerStep#3", 100, 100, "user_annotation"),
      Span("aten::conv", 110, 20),
      Span("aten::empty", 112, 5),
      MemoryEvent(113, 1 << 20, 1, 1, 0x1000),
      Span("aten::add", 140, 10),
      MemoryEvent(141, 512, 0, -1, 0x9000),
      MemoryEvent(150.5, -(1 << 20), 1, 1, 0x1000),
      MemoryEvent(160, -4096, 1, 1, 0x777000),
  };
  std::string joined;
  for (const auto& e : events) joined += (joined.empty() ? "" : ",\n") + e;
  return R"({"schemaVersion": 1, "deviceProperties": [{"id": 1, "name": "NVIDIA H100", "totalGlobalMem": 85000000000}],
"traceEvents": [)" + joined + "]}";
}

TEST(TorchProfiler, CurrentFormatPairsByAddressWithTagsStepsAndDevices) {
  for (const bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    const std::string text = gz ? Gzip(CurrentFormat()) : CurrentFormat();
    EXPECT_TRUE(LooksLikeTorchProfilerTrace(text));
    const Trace t = ParseTorchProfilerTrace(text, "now.json");
    ASSERT_EQ(t.header.devices.size(), 2u);
    EXPECT_EQ(t.header.devices[0].index, 1u);
    EXPECT_EQ(t.header.devices[0].name, "cuda:1 (NVIDIA H100)");
    EXPECT_EQ(t.header.devices[0].capacity, 85000000000u);
    EXPECT_EQ(t.header.devices[1].index, 1000000u);
    EXPECT_EQ(t.header.devices[1].name, "cpu (host memory)");
    EXPECT_EQ(t.header.kind, EvidenceKind::kHistory);
    // step begin (2 devices), alloc, alloc, free, step end (2 devices).
    std::vector<std::string> seen;
    for (const Event& e : t.events) {
      seen.push_back(fmt::format("{} {} {:#x} {} {}", ToString(e.type), e.device, e.address, e.size, t.TagName(e.tag)));
    }
    const std::vector<std::string> expected = {
        "marker 1 0x0 0 step 3 begin",  "marker 1000000 0x0 0 step 3 begin",
        "alloc 1 0x1000 1048576 aten::empty", "alloc 1000000 0x9000 512 aten::add",
        "free 1 0x1000 1048576 ",        "marker 1 0x0 0 step 3 end", "marker 1000000 0x0 0 step 3 end"};
    EXPECT_EQ(seen, expected);
    EXPECT_EQ(t.events[4].alloc_id, t.events[2].alloc_id);
    EXPECT_EQ(t.events[4].time_ns, 50'500u);  // 150.5 µs after the step began at 100 µs
    ASSERT_EQ(t.warnings.size(), 1u);
    EXPECT_EQ(t.warnings[0], "now.json: 1 frees (4.00 KiB) of memory allocated before profiling started: left out");
  }
}

TEST(TorchProfiler, OldFormatPairsBySizeMostRecentFirst) {
  const std::string text = R"({"traceEvents": [)" + MemoryEvent(1, 100, 1, 0, std::nullopt) + "," +
                           MemoryEvent(2, 100, 1, 0, std::nullopt) + "," + MemoryEvent(3, -100, 1, 0, std::nullopt) +
                           R"(, {"ph": "X", "name": "PyTorch Profiler", "ts": 0, "dur": 9}]})";
  const Trace t = ParseTorchProfilerTrace(text, "old.json");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[2].type, EventType::kFree);
  EXPECT_EQ(t.events[2].alloc_id, t.events[1].alloc_id);  // the younger one
  EXPECT_EQ(t.events[2].address, t.events[1].address);
  EXPECT_EQ(t.events[1].address, t.events[0].address + 512);  // invented, never reused
  ASSERT_FALSE(t.warnings.empty());
  EXPECT_NE(t.warnings[0].find("no addresses"), std::string::npos);
}

TEST(TorchProfiler, AnAllocationWhereOneIsLiveEndsTheEarlierOne) {
  // Found by the fuzzer: two allocations at one address with no free between (a lost event).
  const std::string text = R"({"traceEvents": [)" + MemoryEvent(1, 512, 1, 0, 4096) + "," +
                           MemoryEvent(2, 1024, 1, 0, 4096) + "," + MemoryEvent(3, -1024, 1, 0, 4096) + "]}";
  const Trace t = ParseTorchProfilerTrace(text, "lost.json");
  std::vector<std::string> seen;
  for (const Event& e : t.events) seen.push_back(fmt::format("{} {} {}", ToString(e.type), e.size, e.alloc_id));
  EXPECT_EQ(seen, (std::vector<std::string>{"alloc 512 1", "free 512 1", "alloc 1024 2", "free 1024 2"}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], "lost.json: 1 allocations at an address still live (the free before them is missing): "
                           "the earlier allocation is taken as freed there");
}

TEST(TorchProfiler, SharedResnet50Trace) {
  if (!fs::exists(kShared)) GTEST_SKIP() << kShared << " is absent (../shared/data is not beside the project)";
  const Trace t = ParseTorchProfilerTrace(testing::Slurp(kShared), kShared);
  // 12,838 memory events (8,220 on cuda:0, 4,618 on the CPU): every free pairs with an allocation.
  std::map<std::pair<std::uint32_t, EventType>, std::uint64_t> counts;
  const auto count = [&](std::uint32_t device, EventType type) { return counts[{device, type}]; };
  std::map<std::uint32_t, std::uint64_t> live, peak;
  for (const Event& e : t.events) {
    ++counts[{e.device, e.type}];
    if (e.type == EventType::kAlloc) peak[e.device] = std::max(peak[e.device], live[e.device] += e.size);
    if (e.type == EventType::kFree) live[e.device] -= e.size;
  }
  EXPECT_EQ(count(0, EventType::kAlloc) + count(0, EventType::kFree), 8220u);
  EXPECT_EQ(count(1000000, EventType::kAlloc) + count(1000000, EventType::kFree), 4618u);
  EXPECT_EQ(count(0, EventType::kAlloc), 4110u);
  EXPECT_EQ(count(1000000, EventType::kAlloc), 2310u);
  EXPECT_EQ(peak[0], 2791636480u);
  EXPECT_EQ(peak[1000000], 57803264u);
  EXPECT_EQ(count(0, EventType::kMarker), 12u);  // ProfilerStep#5..#10, begin and end
  ASSERT_EQ(t.header.devices.size(), 2u);
  EXPECT_EQ(t.header.devices[0].name, "cuda:0 (Tesla V100-DGXS-32GB)");
  EXPECT_EQ(t.header.devices[0].capacity, 34084028416u);
  // The first allocation on the GPU is made inside aten::empty_strided; a convolution's output
  // inside aten::cudnn_convolution.
  std::vector<std::string> tags;
  for (const Event& e : t.events) {
    if (e.type == EventType::kAlloc && e.device == 0 && tags.size() < 3) tags.push_back(t.TagName(e.tag));
  }
  EXPECT_EQ(tags, (std::vector<std::string>{"aten::empty_strided", "aten::empty_strided", "aten::cudnn_convolution"}));
  ASSERT_EQ(t.warnings.size(), 1u);  // no addresses; no unmatched free
}

// Against facts computed independently of this reader: tests/tools/torch_profiler_facts.py (Python's
// json and gzip) wrote tests/import/torch_profiler_facts.json from ../shared/data/torch_profiler.
TEST(TorchProfiler, ReaderAgreesWithPythonFacts) {
  const fs::path data = fs::path(FRAGSCOPE_SOURCE_DIR).parent_path() / "shared" / "data" / "torch_profiler";
  if (!fs::exists(data)) GTEST_SKIP() << data << " is absent: no profiler traces to check";
  std::ifstream file(fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "torch_profiler_facts.json");
  const nlohmann::json facts = nlohmann::json::parse(file);
  ASSERT_FALSE(facts.empty());
  for (const auto& expected : facts) {
    const std::string name = expected["file"];
    SCOPED_TRACE(name);
    const Trace t = ParseTorchProfilerTrace(testing::Slurp(data / name), name);
    // Device names as the script writes them: "cuda:N", "cpu".
    const auto key = [&](std::uint32_t device) {
      const DeviceDescription* d = t.header.Device(device);
      return d->name.rfind("cpu", 0) == 0 ? std::string("cpu") : d->name.substr(0, d->name.find(' '));
    };
    std::map<std::string, std::uint64_t> allocs, frees, live, peak;
    for (const Event& e : t.events) {
      if (e.type == EventType::kAlloc) {
        ++allocs[key(e.device)];
        peak[key(e.device)] = std::max(peak[key(e.device)], live[key(e.device)] += e.size);
      } else if (e.type == EventType::kFree) {
        ++frees[key(e.device)];
        live[key(e.device)] -= e.size;
      }
    }
    for (const auto& [device, count] : expected["memory_events"].items()) {
      // Every memory event is an allocation or a free, but for frees of memory from before profiling.
      if (expected["unmatched_frees"].get<std::uint64_t>() == 0) {
        EXPECT_EQ(allocs[device] + frees[device], count.get<std::uint64_t>()) << device;
      }
      EXPECT_EQ(allocs[device], expected["allocations"][device].get<std::uint64_t>()) << device;
      EXPECT_EQ(frees[device], expected["frees"][device].get<std::uint64_t>()) << device;
      EXPECT_EQ(peak[device], expected["peak_live_bytes"][device].get<std::uint64_t>()) << device;
    }
  }
}

TEST(TorchProfiler, ErrorsNameTheProblem) {
  const auto error = [](const std::string& text) -> std::string {
    try {
      (void)ParseTorchProfilerTrace(text, "p.json");
    } catch (const TraceError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error(R"({"traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1, "dur": 2}]})")
                .find("p.json: a torch.profiler trace without memory events: profile with "
                      "torch.profiler.profile(profile_memory=True)"),
            std::string::npos);
  EXPECT_NE(error(R"({"traceEvents": [{"ph": "i", "name": "[memory]", "ts": 1, "args": {"Bytes": 1.5}}]})")
                .find("\"Bytes\" 1.5 is not a whole number"),
            std::string::npos);
  EXPECT_NE(error(R"({"traceEvents": [)").find("p.json: at byte 17: the trace breaks off before its JSON is complete"),
            std::string::npos);
  EXPECT_NE(error(R"({"traceEvents": [}})").find("p.json: at byte 17: not a Chrome trace JSON"), std::string::npos);
  EXPECT_NE(error(R"({"traceEvents": [)" + MemoryEvent(1, INT64_MAX, 1, 0, 16) + "]}").find("more than 4 EiB"),
            std::string::npos);
  // A damaged gzip stream (a cut one is read up to the cut: torch_profiler_damage_test.cpp).
  std::string gz = Gzip(CurrentFormat());
  gz[gz.size() / 2] = static_cast<char>(gz[gz.size() / 2] ^ 0x55);
  EXPECT_NE(error(gz).find("gzip data is damaged"), std::string::npos) << error(gz);
}

TEST(TorchProfiler, SniffTakesProfilerTracesOnly) {
  EXPECT_TRUE(LooksLikeTorchProfilerTrace(CurrentFormat()));
  EXPECT_FALSE(LooksLikeTorchProfilerTrace(R"({"type":"header","producer":"p"})"));  // JSON Lines
  EXPECT_FALSE(LooksLikeTorchProfilerTrace(R"({"traceEvents": [{"ph": "C", "name": "in use"}]})"));  // another tool's
  EXPECT_FALSE(LooksLikeTorchProfilerTrace(std::string("\x1f\x8b", 2)));
}

}  // namespace
}  // namespace fragscope::traces
