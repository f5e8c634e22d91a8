// The PyTorch snapshot importer on small snapshots pickled here (import/pickle_writer.hpp):
// several devices, expandable segments, addresses above 2^63, oom, torch 2.0 block history,
// inconsistencies and malformed input.
#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fragscope/traces/pytorch_snapshot.hpp"
#include "import/pickle_writer.hpp"
#include "torch_profiler_fixtures.hpp"

namespace fragscope::traces {
namespace {

using namespace fragscope::testing::pickle_writer;

Trace Import(const Py& root) { return ReadPytorchSnapshot(Pickle(root), "synthetic.pickle"); }

Py Frames() {
  return L({D({{"filename", S("/env/site-packages/torch/nn/functional.py")}, {"line", I(10)}, {"name", S("relu")}}),
            D({{"filename", S("/home/u/train.py")}, {"line", I(42)}, {"name", S("forward")}})});
}

Py Ev(const char* action, std::uint64_t addr, std::uint64_t size, std::uint64_t time_us) {
  return D({{"action", S(action)}, {"addr", I(addr)}, {"size", I(size)}, {"stream", I(0)},
            {"time_us", I(time_us)}, {"frames", Frames()}});
}

Py Block(std::uint64_t address, std::uint64_t size, std::uint64_t requested, const char* state) {
  return D({{"address", I(address)}, {"size", I(size)}, {"requested_size", I(requested)},
            {"state", S(state)}, {"frames", L({})}});
}

constexpr std::uint64_t kMiB = 1 << 20;
constexpr std::uint64_t kA = 0x7f0000000000;
constexpr std::uint64_t kHigh = (std::uint64_t{1} << 63) + 0x200000;  // above 2^63

// Device 0: one 2 MiB segment from before recording, a block allocated before recording and
// never freed, one freed during the trace, one made in the trace. Device 1: an expandable
// segment above 2^63 mapped in two pieces, a 3 MiB block, then an oom.
Py TwoDevices() {
  Py seg0 = D({{"device", I(0)}, {"address", I(kA)}, {"total_size", I(2 * kMiB)},
               {"stream", I(0)}, {"is_expandable", B(false)},
               {"blocks", L({Block(kA, 1024, 1000, "active_allocated"),
                             Block(kA + 1024, 512, 300, "active_allocated"),
                             Block(kA + 1536, 2 * kMiB - 1536, 0, "inactive")})}});
  Py seg1 = D({{"device", I(1)}, {"address", I(kHigh)}, {"total_size", I(4 * kMiB)},
               {"stream", I(0)}, {"is_expandable", B(true)},
               {"blocks", L({Block(kHigh, 3 * kMiB, 3 * kMiB, "active_allocated"),
                             Block(kHigh + 3 * kMiB, kMiB, 0, "inactive")})}});
  Py oom = D({{"action", S("oom")}, {"addr", I(0)}, {"device_free", I(kMiB)},
              {"size", I(2 * kMiB)}, {"stream", I(0)}, {"time_us", I(60)}, {"frames", Frames()}});
  return D({{"segments", L({seg0, seg1})},
            {"device_traces",
             L({L({Ev("free_requested", kA + 4096, 100, 10), Ev("free_completed", kA + 4096, 100, 11),
                   Ev("alloc", kA + 1024, 300, 30)}),
                L({Ev("segment_map", kHigh, 2 * kMiB, 20), Ev("segment_map", kHigh + 2 * kMiB, 2 * kMiB, 21),
                   Ev("alloc", kHigh, 3 * kMiB, 40), oom})})},
            {"allocator_settings", D({{"expandable_segments", B(true)}})}});
}

TEST(PytorchSynthetic, TwoDevicesExpandableOom) {
  const Trace t = Import(TwoDevices());
  EXPECT_TRUE(t.warnings.empty()) << (t.warnings.empty() ? "" : t.warnings[0]);
  ASSERT_EQ(t.header.devices.size(), 2u);
  EXPECT_EQ(t.header.devices[1].name, "cuda:1");
  // Start state (device 0: its segment, the never-freed block and the block freed at t=11;
  // device 1: the address range of its expandable segment, nothing mapped yet), then the 7 traced
  // events merged by time. The expandable segment's pieces are map events inside that range.
  std::vector<std::pair<EventType, std::uint32_t>> kinds;
  for (const Event& e : t.events) kinds.emplace_back(e.type, e.device);
  const std::vector<std::pair<EventType, std::uint32_t>> expected = {
      {EventType::kRegionReserve, 0}, {EventType::kAlloc, 0}, {EventType::kAlloc, 0},
      {EventType::kAddressReserve, 1}, {EventType::kMarker, 0}, {EventType::kFree, 0}, {EventType::kMap, 1},
      {EventType::kMap, 1}, {EventType::kAlloc, 0}, {EventType::kAlloc, 1},
      {EventType::kOom, 1}};
  EXPECT_EQ(kinds, expected);
  // The range: the hull of the pieces the snapshot and its trace name (4 MiB at kHigh).
  EXPECT_EQ(t.events[3].address, kHigh);
  EXPECT_EQ(t.events[3].size, 4 * kMiB);
  EXPECT_EQ(t.events[7].address, kHigh + 2 * kMiB);
  EXPECT_EQ(t.events[7].size, 2 * kMiB);
  EXPECT_EQ(t.TagName(t.events[1].tag), "(allocated before recording)");
  EXPECT_EQ(t.events[2].address, kA + 4096);
  EXPECT_EQ(t.events[2].rounded, 512u);  // not in the final state: rounded as PyTorch does
  EXPECT_EQ(t.events[5].alloc_id, t.events[2].alloc_id);  // the free matches it
  EXPECT_EQ(t.TagName(t.events[4].tag), "free_requested");
  EXPECT_EQ(t.events[8].rounded, 512u);  // the block's size from the final state
  EXPECT_EQ(t.TagName(t.events[8].tag), "train.py:42:forward");
  EXPECT_EQ(t.events[9].address, kHigh);
  EXPECT_EQ(t.events[9].region, kHigh);
  EXPECT_EQ(t.events[0].time_ns, 10'000u);  // the state takes the first timestamp
  EXPECT_EQ(t.events[10].time_ns, 60'000u);
  // The oom: 4 MiB reserved, 3 MiB in use, 1 MiB free on the device, 2 MiB asked: limit 5 MiB
  // would hold it, no contiguous 2 MiB: fragmentation.
  const OomRecord& o = t.events[10].oom;
  EXPECT_EQ(o.rounded, 2 * kMiB);
  EXPECT_EQ(o.reserved, 4 * kMiB);
  EXPECT_EQ(o.in_use, 3 * kMiB);
  EXPECT_EQ(o.limit, 5 * kMiB);
  EXPECT_EQ(o.headroom, kMiB);
  EXPECT_EQ(o.free_in_regions, kMiB);
  EXPECT_EQ(o.largest_free, kMiB);
  EXPECT_EQ(o.region_count, 2u);
  EXPECT_EQ(o.cause, OomCause::kFragmentation);
  ASSERT_EQ(t.event_stacks.size(), t.events.size());
  EXPECT_EQ(t.event_stacks[1], 0u);  // no frames
  ASSERT_NE(t.event_stacks[8], 0u);
  EXPECT_EQ(t.stacks[t.event_stacks[8] - 1],
            "/env/site-packages/torch/nn/functional.py:10:relu\n/home/u/train.py:42:forward");
  EXPECT_EQ(t.stacks.size(), 1u);  // deduplicated
}

TEST(PytorchSynthetic, Torch20BlockHistory) {
  Py hist = L({D({{"addr", I(kA)}, {"real_size", I(1000)}, {"frames", Frames()}})});
  Py seg = D({{"device", I(0)}, {"address", I(kA)}, {"total_size", I(4096)},
              {"blocks", L({D({{"size", I(1024)}, {"requested_size", I(1000)},
                               {"state", S("inactive")}}),
                            D({{"size", I(2048)}, {"requested_size", I(2000)},
                               {"state", S("active_allocated")}, {"history", hist}}),
                            D({{"size", I(1024)}, {"requested_size", I(0)}, {"state", S("inactive")}})})}});
  const Trace t = Import(D({{"segments", L({seg})}}));
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].address, kA + 1024);  // the segment address plus the block before
  EXPECT_EQ(t.events[1].size, 2000u);
  EXPECT_EQ(t.events[1].rounded, 2048u);
  // The history's addr (kA) disagrees with the tiling: a warning that names the file.
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0].rfind("synthetic.pickle: ", 0), 0u) << t.warnings[0];
  EXPECT_EQ(t.TagName(t.events[1].tag), "train.py:42:forward");
}

TEST(PytorchSynthetic, InconsistenciesAreWarnings) {
  // A double free: the trace and the final state cannot both be right.
  Py seg = D({{"device", I(0)}, {"address", I(kA)}, {"total_size", I(2 * kMiB)},
              {"blocks", L({Block(kA, 2 * kMiB, 0, "inactive")})}});
  const Trace t = Import(D({{"segments", L({seg})},
                            {"device_traces", L({L({Ev("alloc", kA, 100, 1), Ev("free_completed", kA, 100, 2),
                                                     Ev("free_completed", kA, 100, 3)})})}}));
  std::string all;
  for (const auto& w : t.warnings) all += w + "\n";
  EXPECT_NE(all.find("free_completed at 0x7f0000000000, but the block is live"), std::string::npos) << all;
  EXPECT_NE(all.find("of no live block"), std::string::npos) << all;
}

TEST(PytorchSynthetic, MalformedInputIsATraceError) {
  auto error_of = [](const Py& root) {
    try {
      (void)Import(root);
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_of(L({})).find("a list, not a dict"), std::string::npos);
  EXPECT_NE(error_of(D({{"x", I(1)}})).find("neither 'segments' nor 'device_traces'"), std::string::npos);
  Py big = D({{"segments", L({D({{"address", Py{Py::K::kBigInt, 5, {}, {}, {}}}, {"total_size", I(1)}})})}});
  const std::string message = error_of(big);
  EXPECT_NE(message.find("segment 0: 'address' does not fit in 64 bits"), std::string::npos) << message;
  EXPECT_NE(message.find("synthetic.pickle"), std::string::npos) << message;
  // Code in a pickle is refused before anything is read.
  const std::vector<std::uint8_t> global = {0x80, 4, 'c', 'o', 's', '\n', 'x', '\n', 0x2e};
  try {
    (void)ReadPytorchSnapshot(global, "evil.pickle");
    FAIL() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.offset(), 2u);
    EXPECT_NE(std::string(e.what()).find("GLOBAL"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)ReadPytorchSnapshot("/nonexistent/x.pickle"), TraceError);
}

// torch.cuda.memory._snapshot() saved with json.dump (one line, or indented) instead of
// _dump_snapshot's pickle, and either one gzipped: the same trace as the pickle.
TEST(PytorchSynthetic, SavedAsJsonOrGzippedReadsAsThePickle) {
  const Py root = TwoDevices();
  std::vector<std::uint8_t> pickle = {0x80, 4};
  root.Encode(pickle);
  pickle.push_back(0x2e);
  const Trace expected = ReadPytorchSnapshot(pickle, "s");
  std::string line, indented;
  root.Json(line);
  root.Json(indented, " ");
  const std::string pickled(pickle.begin(), pickle.end());
  for (const std::string& form : {line, indented, profiler_fixtures::Gzip(pickled), profiler_fixtures::Gzip(line)}) {
    SCOPED_TRACE(form.substr(0, 20));
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(form.data()), form.size());
    EXPECT_TRUE(LooksLikePytorchSnapshot(bytes));
    const Trace t = ReadPytorchSnapshot(bytes, "s");
    EXPECT_EQ(t.header, expected.header);
    EXPECT_EQ(t.tags, expected.tags);
    EXPECT_EQ(t.warnings, expected.warnings);
    ASSERT_EQ(t.events.size(), expected.events.size());
    for (std::size_t n = 0; n < t.events.size(); ++n) {
      const Event& a = t.events[n];
      const Event& b = expected.events[n];
      EXPECT_EQ(std::tie(a.type, a.device, a.address, a.size, a.rounded, a.alloc_id, a.time_ns, a.tag),
                std::tie(b.type, b.device, b.address, b.size, b.rounded, b.alloc_id, b.time_ns, b.tag))
          << n;
    }
  }
  EXPECT_EQ(line.substr(0, 14), "{\"segments\": [");
  // Other JSON objects are not snapshots; a broken JSON snapshot is an error naming the byte.
  const auto sniff = [](std::string_view text) {
    return LooksLikePytorchSnapshot(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
  };
  EXPECT_FALSE(sniff(R"({"traceEvents": [], "segments": []})"));
  EXPECT_FALSE(sniff(R"({"type": "header", "producer": "p"})"));
  const std::string broken = R"({"segments": [{"device": 0,}]})";
  try {
    (void)ReadPytorchSnapshot(std::span(reinterpret_cast<const std::uint8_t*>(broken.data()), broken.size()), "s.json");
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json: at byte 27: JSON: "), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fragscope::traces
