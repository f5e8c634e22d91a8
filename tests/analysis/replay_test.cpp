// Allocation sequences and replay: over in-memory events (synth output and hand-made traces), no
// trace files. min-limit and the policy advice it checks are in min_limit_test.cpp.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/synth.hpp"
#include "replay_fixtures.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis {
namespace {

using namespace replay_fixtures;  // NOLINT: the fixtures are this file's vocabulary

auto Fields(const Event& e) {
  return std::tuple(e.type, e.device, e.seq, e.time_ns, e.address, e.size, e.rounded, e.region,
                    e.alloc_id, e.thread, e.tag, e.oom.request, e.oom.cause);
}

// --- allocation sequences ---

TEST(AllocationSequence, MatchesFreesByDeviceAndAddress) {
  const std::vector<Event> events = {
      Alloc(0, 0x1000, 100, 1, 0),   // allocation 0
      Alloc(0, 0x2000, 300, 2, 1),   // allocation 1
      Alloc(1, 0x1000, 700, 1, 2),   // allocation 2: same address, other device
      Free(0, 0x1000, 1, 3),         // ends 0
      Free(0, 0x9000, 0, 4),         // unknown: allocated before recording started
      Free(1, 0x1000, 1, 5),         // ends 2
      Alloc(0, 0x1000, 50, 3, 6),    // allocation 3, reusing the address
      Free(0, 0x1000, 0, 7),         // ends 3 (no alloc_id: matched by address)
      Free(0, 0x1000, 3, 8),         // nothing live there any more
  };
  const AllocationSequence s = Build({}, events, nullptr, 2);
  ASSERT_EQ(s.ops.size(), 7u);
  EXPECT_EQ(s.allocations, 4u);
  EXPECT_EQ(s.unmatched_frees, 2u);
  EXPECT_EQ(s.never_freed, 1u);
  EXPECT_EQ(s.devices, (std::vector<std::uint32_t>{0, 1}));
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_NE(s.warnings[0].find("2 free event(s)"), std::string::npos) << s.warnings[0];

  const std::vector<std::tuple<bool, std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t>>
      expected = {{false, 0, 0, 100, 0}, {false, 1, 0, 300, 1}, {false, 2, 1, 700, 2},
                  {true, 0, 0, 100, 3},  {true, 2, 1, 700, 5},  {false, 3, 0, 50, 6},
                  {true, 3, 0, 50, 7}};
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const AllocationOp& op = s.ops[i];
    EXPECT_EQ(std::tuple(op.is_free, op.allocation, op.device, op.size, op.seq), expected[i]) << i;
  }
  EXPECT_EQ(PeakLoadByDevice(s), (std::vector<std::uint64_t>{400, 700}));
}

// A device left out (a profiler trace's host memory): its ops, markers and failed requests go, the
// rest keep their order and markers their place, allocation indices renumbered densely.
TEST(AllocationSequence, WithoutDevicesRenumbersWhatIsLeft) {
  Event oom = Make(EventType::kOom, 7, 0, 5000, 0, 4);
  oom.oom.request = 5000;
  Event marker = Make(EventType::kMarker, 7, 0, 0, 0, 5);
  marker.tag = 1;
  Event kept_marker = Make(EventType::kMarker, 0, 0, 0, 0, 6);
  kept_marker.tag = 1;
  const std::vector<Event> events = {
      Alloc(7, 0x9000, 64, 1, 0),     // allocation 0: host
      Alloc(0, 0x1000, 100, 2, 1),    // allocation 1 -> 0
      Alloc(7, 0xa000, 32, 3, 2),     // allocation 2: host, never freed
      Free(7, 0x9000, 1, 3),
      oom,                            // a failed host request
      marker,
      kept_marker,                    // before the next kept op
      Alloc(0, 0x2000, 300, 4, 7),    // allocation 3 -> 1, never freed
      Free(0, 0x1000, 2, 8),
  };
  const std::vector<std::string> tags = {"step 0 begin"};
  const AllocationSequence all = Build({}, events, &tags);
  ASSERT_EQ(all.allocations, 4u);
  ASSERT_EQ(all.recorded_ooms, 1u);
  ASSERT_EQ(all.markers.size(), 2u);
  const AllocationSequence gpu = WithoutDevices(all, {7});
  EXPECT_EQ(gpu.devices, std::vector<std::uint32_t>{0});
  EXPECT_EQ(gpu.allocations, 2u);
  EXPECT_EQ(gpu.never_freed, 1u);
  EXPECT_EQ(gpu.recorded_ooms, 0u);
  std::vector<std::tuple<bool, std::uint32_t, std::uint64_t, std::uint64_t>> ops;
  for (const AllocationOp& op : gpu.ops) ops.emplace_back(op.is_free, op.allocation, op.size, op.seq);
  EXPECT_EQ(ops, (std::vector<std::tuple<bool, std::uint32_t, std::uint64_t, std::uint64_t>>{
                     {false, 0, 100, 1}, {false, 1, 300, 7}, {true, 0, 100, 8}}));
  ASSERT_EQ(gpu.markers.size(), 1u);
  EXPECT_EQ(std::tuple(gpu.markers[0].device, gpu.markers[0].before_op, gpu.markers[0].seq), std::tuple(0u, 1u, 6u));
  EXPECT_EQ(PeakLoadByDevice(gpu), std::vector<std::uint64_t>{400});
  // Nothing of those devices: the same sequence.
  const AllocationSequence same = WithoutDevices(all, {3});
  EXPECT_EQ(same.ops.size(), all.ops.size());
  EXPECT_EQ(same.allocations, all.allocations);
}

TEST(AllocationSequence, OomsAllocIdMismatchesAndLostFrees) {
  Event oom = Make(EventType::kOom, 0, 0, 5000, 0, 3);
  oom.oom.request = 5000;
  const std::vector<Event> events = {
      Alloc(0, 0x1000, 100, 1, 0),
      Alloc(0, 0x1000, 200, 2, 1),  // the free of the first was lost
      Free(0, 0x1000, 9, 2),        // alloc_id disagrees: still the allocation at 0x1000
      oom,
  };
  const AllocationSequence s = Build({}, events);
  EXPECT_EQ(s.implicit_frees, 1u);
  EXPECT_EQ(s.alloc_id_mismatches, 1u);
  EXPECT_EQ(s.recorded_ooms, 1u);
  EXPECT_EQ(s.warnings.size(), 2u);
  ASSERT_EQ(s.ops.size(), 5u);
  EXPECT_TRUE(s.ops[1].is_free);
  EXPECT_EQ(s.ops[1].allocation, 0u);
  EXPECT_EQ(s.ops[3].allocation, 1u);
  EXPECT_EQ(s.ops[4].allocation, AllocationOp::kNoAllocation);
  EXPECT_EQ(s.ops[4].size, 5000u);
  EXPECT_EQ(PeakLoadByDevice(s), (std::vector<std::uint64_t>{5000}));
  ASSERT_EQ(s.time_ns.size(), s.ops.size());
}

TEST(AllocationSequence, SynthTraceIsFullyMatched) {
  const Trace trace = SynthTrace(20000);
  const AllocationSequence& s = trace.sequence;
  EXPECT_EQ(s.unmatched_frees, 0u);
  EXPECT_TRUE(s.warnings.empty());
  EXPECT_EQ(s.ops.size(), 20000u);
  EXPECT_FALSE(s.tags.empty());
  std::vector<bool> seen(s.allocations, false);
  for (const AllocationOp& op : s.ops) {
    ASSERT_LT(op.allocation, s.allocations);
    if (!op.is_free) {
      EXPECT_FALSE(seen[op.allocation]) << "indices are dense and used once";
      seen[op.allocation] = true;
    }
  }
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  EXPECT_EQ(PeakLoadByDevice(s).at(0), PeaksOf(trace.events, 0).load);
}

// --- replay ---

// A contract review: `replay --out` dropped every marker, so the replayed trace had no step lines
// in `report` and no step markers in the inspector. Markers keep their place among the ops (a
// marker on a device with no allocation has none in a replay and is left out).
TEST(Replay, RecordsTheTracesMarkersAtTheirPlace) {
  const std::vector<std::string> tags = {"step 0 begin", "orphan", "step 0 end", "late"};
  const auto marker = [](std::uint32_t device, traces::TagId tag, std::uint64_t seq, std::uint64_t time) {
    Event e;
    e.type = EventType::kMarker;
    e.device = device;
    e.tag = tag;
    e.seq = seq;
    e.time_ns = time;
    return e;
  };
  const auto at = [](Event e, std::uint64_t time) {
    e.time_ns = time;
    return e;
  };
  const std::vector<Event> events = {
      marker(0, 1, 0, 10),          at(Alloc(0, 0x1000, 1000, 1, 1), 20), marker(1, 2, 2, 25),
      at(Alloc(0, 0x2000, 2000, 2, 3), 30), marker(0, 3, 4, 35),     at(Free(0, 0x1000, 1, 5), 40),
      at(Free(0, 0x2000, 2, 6), 50),        marker(0, 4, 7, 60)};
  traces::TraceHeader header;
  const AllocationSequence sequence = Build(header, events, &tags);
  ASSERT_EQ(sequence.markers.size(), 3u) << "the marker of device 1, which has no allocation, is left out";
  EXPECT_EQ(std::tuple(sequence.markers[0].before_op, sequence.markers[0].tag, sequence.markers[0].seq), std::tuple(0u, 1u, 0u));
  EXPECT_EQ(std::tuple(sequence.markers[1].before_op, sequence.markers[1].tag, sequence.markers[1].seq), std::tuple(2u, 3u, 4u));
  EXPECT_EQ(std::tuple(sequence.markers[2].before_op, sequence.markers[2].tag, sequence.markers[2].seq), std::tuple(4u, 4u, 7u));

  RecordingSink sink;
  std::vector<std::uint64_t> source_seq;
  ReplayOptions options = Options("growth=on,expandable=off");
  options.record = &sink;
  options.record_source_seq = &source_seq;
  Replay(sequence, options);
  // What the replay recorded, region events left out: the allocations, frees and markers in the
  // trace's order, markers by name at their timestamps (the first not before the replay's first event).
  std::vector<std::string> recorded;
  for (const Event& e : sink.events()) {
    if (e.type == EventType::kMarker) {
      recorded.push_back(fmt::format("{} {}@{}", sink.Name(e.tag), e.device, e.time_ns));
    } else if (e.type == EventType::kAlloc || e.type == EventType::kFree) {
      recorded.push_back(fmt::format("{} {}@{}", ToString(e.type), e.size, e.time_ns));
    }
  }
  EXPECT_EQ(recorded, (std::vector<std::string>{"step 0 begin 0@20", "alloc 1000@20", "alloc 2000@30",
                                                "step 0 end 0@35", "free 1000@40", "free 2000@50", "late 0@60"}));
  EXPECT_EQ(source_seq.size(), sink.events().size());
  EXPECT_TRUE(std::is_sorted(source_seq.begin(), source_seq.end()));
  // A replay that stops at an OOM records no marker past it.
  {
    QuietOoms quiet;
    RecordingSink stopped;
    ReplayOptions tight = Options("growth=on,expandable=off,limit=2MiB,capacity=2MiB");
    AllocationSequence big = sequence;
    big.ops[1].size = 3 * MiB;  // the second allocation fails
    tight.record = &stopped;
    ASSERT_TRUE(Replay(big, tight).stopped_at_oom);
    std::vector<std::string> names;
    for (const Event& e : stopped.events()) {
      if (e.type == EventType::kMarker) names.push_back(stopped.Name(e.tag));
    }
    EXPECT_EQ(names, std::vector<std::string>{"step 0 begin"});
  }

  // --recorded-only keeps them before the same ops: the first allocation (seq 1) was live before
  // recording started, and goes with its free.
  AllocationSequence with_blocks = sequence;
  with_blocks.header.source.reconstructed_events = 2;
  const AllocationSequence window = RecordedWindow(with_blocks);
  ASSERT_EQ(window.ops.size(), 2u);
  ASSERT_EQ(window.markers.size(), 3u);
  EXPECT_EQ(window.markers[0].before_op, 0u);
  EXPECT_EQ(window.markers[1].before_op, 1u) << "after the kept alloc of seq 3";
  EXPECT_EQ(window.markers[2].before_op, 2u);
}

TEST(Replay, IsDeterministic) {
  const Trace trace = SynthTrace(30000);
  RecordingSink first, second;
  ReplayOptions options = Options("growth=on,gc=on");
  options.record = &first;
  const ReplayResult a = Replay(trace.sequence, options);
  options.record = &second;
  const ReplayResult b = Replay(trace.sequence, options);
  ASSERT_EQ(a.devices.size(), 1u);
  const DeviceMetrics& ma = a.devices[0].metrics;
  const DeviceMetrics& mb = b.devices[0].metrics;
  EXPECT_EQ(std::tuple(ma.peak_load, ma.peak_in_use, ma.peak_reserved, ma.utilization_at_peak,
                       ma.fragmentation_at_peak, ma.peak_internal_waste, ma.allocations, ma.ooms),
            std::tuple(mb.peak_load, mb.peak_in_use, mb.peak_reserved, mb.utilization_at_peak,
                       mb.fragmentation_at_peak, mb.peak_internal_waste, mb.allocations, mb.ooms));
  const std::vector<Event> ea = first.events(), eb = second.events();
  ASSERT_EQ(ea.size(), eb.size());
  EXPECT_TRUE(std::equal(ea.begin(), ea.end(), eb.begin(),
                         [](const Event& x, const Event& y) { return Fields(x) == Fields(y); }));
  EXPECT_EQ(first.Names(), second.Names());
  EXPECT_EQ(a.ops_replayed, trace.sequence.ops.size());
  EXPECT_FALSE(a.stopped_at_oom);

  // The recorded replay is a trace of its own: same requests, same tags, same timestamps.
  const std::vector<std::string> tags = first.Names();
  const AllocationSequence again = Build(a.header, ea, &tags);
  ASSERT_EQ(again.ops.size(), trace.sequence.ops.size());
  for (std::size_t i = 0; i < again.ops.size(); ++i) {
    const AllocationOp& x = again.ops[i];
    const AllocationOp& y = trace.sequence.ops[i];
    ASSERT_EQ(std::tuple(x.is_free, x.size, x.allocation, x.device), std::tuple(y.is_free, y.size, y.allocation, y.device)) << i;
    ASSERT_EQ(again.tags.at(x.tag - 1), trace.sequence.tags.at(y.tag - 1)) << i;
    ASSERT_EQ(again.time_ns[i], trace.sequence.time_ns[i]) << i;
  }
  EXPECT_EQ(Replay(again, options).devices[0].metrics.peak_reserved, ma.peak_reserved);

  // The header is known before the replay runs.
  const traces::TraceHeader header = ReplayTraceHeader(trace.sequence, options);
  EXPECT_EQ(header.producer, a.header.producer);
  EXPECT_EQ(header.alloc_conf, a.header.alloc_conf);
  ASSERT_EQ(header.devices.size(), 1u);
  EXPECT_EQ(header.devices[0].capacity, 80 * GiB);
  EXPECT_EQ(header.devices[0].backing, "sim");
}

class SameConf : public ::testing::TestWithParam<const char*> {};

// Synth under conf X, replay under conf X: the same allocator sees the same requests, so the
// recorded peaks come back exactly; and the metrics agree with peaks computed from the events.
TEST_P(SameConf, ReproducesTheRecordedPeaks) {
  const std::string conf = GetParam();
  const Trace trace = SynthTrace(40000, conf);
  const Peaks recorded = PeaksOf(trace.events, 0);
  RecordingSink sink;
  ReplayOptions options;
  options.conf = ParseAllocConf(trace.header.alloc_conf);
  options.record = &sink;
  const ReplayResult result = Replay(trace.sequence, options);
  ASSERT_FALSE(result.stopped_at_oom);
  const DeviceReplay& device = *result.Device(0);
  const DeviceMetrics& m = device.metrics;
  EXPECT_EQ(m.peak_reserved, recorded.reserved);
  EXPECT_EQ(m.peak_in_use, recorded.in_use);
  EXPECT_EQ(m.peak_load, recorded.load);
  EXPECT_EQ(m.peak_internal_waste, recorded.waste);
  EXPECT_DOUBLE_EQ(m.utilization_at_peak, recorded.utilization);
  EXPECT_GE(m.fragmentation_at_peak, 0.0);
  EXPECT_LT(m.fragmentation_at_peak, 1.0);
  EXPECT_GE(m.overhead(), 1.0);
  EXPECT_EQ(device.final_stats.total_allocs, m.allocations);
  const Peaks replayed = PeaksOf(sink.events(), 0);
  EXPECT_EQ(replayed.reserved, m.peak_reserved);
  EXPECT_DOUBLE_EQ(replayed.utilization, m.utilization_at_peak);
  EXPECT_EQ(result.header.alloc_conf, trace.header.alloc_conf);
}

INSTANTIATE_TEST_SUITE_P(Policies, SameConf,
                         ::testing::Values("backing=sim,capacity=80GiB",
                                           "backing=sim,capacity=24GiB,growth=off,gc=off",
                                           "backing=sim,capacity=16GiB,expandable=on",
                                           "backing=sim,capacity=16GiB,preallocate=0.5",
                                           "backing=sim,capacity=16GiB,passthrough=on"));

TEST(Replay, StopsAtTheFirstOomWithADiagnosis) {
  QuietOoms quiet;
  const Trace trace = SynthTrace(30000);
  RecordingSink sink;
  ReplayOptions options = Options("limit=1GiB");
  options.record = &sink;
  const ReplayResult result = Replay(trace.sequence, options);
  EXPECT_TRUE(result.stopped_at_oom);
  EXPECT_LT(result.ops_replayed, trace.sequence.ops.size());
  const DeviceReplay& device = result.devices.at(0);
  EXPECT_EQ(device.metrics.ooms, 1u);
  ASSERT_EQ(device.ooms.size(), 1u);
  const OomDiagnosis& oom = device.ooms[0];
  EXPECT_EQ(oom.op_index + 1, result.ops_replayed);
  const AllocationOp& op = trace.sequence.ops.at(oom.op_index);
  EXPECT_FALSE(op.is_free);
  EXPECT_EQ(oom.seq, op.seq);
  EXPECT_EQ(trace.events.at(oom.seq).type, EventType::kAlloc) << "seq names the trace's event";
  EXPECT_EQ(oom.report.numbers.request, op.size);
  EXPECT_EQ(oom.report.numbers.limit, 1 * GiB);
  EXPECT_TRUE(oom.report.cause() == OomCause::kCapacity || oom.report.cause() == OomCause::kFragmentation);
  EXPECT_FALSE(oom.report.explanation.empty());
  EXPECT_LE(oom.nearest_holes.size(), 5u);
  EXPECT_TRUE(std::is_sorted(oom.nearest_holes.begin(), oom.nearest_holes.end(),
                             [](const Hole& a, const Hole& b) { return a.size > b.size; }));
  const std::vector<Event> replayed = sink.events();
  ASSERT_FALSE(replayed.empty());
  EXPECT_EQ(replayed.back().type, EventType::kOom);
}

TEST(Replay, FragmentationOomNamesTheHolesThatAlmostFit) {
  const AllocationSequence sequence = Build({}, FourMebibyteHolesThenOneAndAHalf());
  QuietOoms quiet;
  const ReplayResult result = Replay(sequence, Options("limit=8MiB,growth=off,gc=off"));
  ASSERT_TRUE(result.stopped_at_oom);
  const OomDiagnosis& oom = result.devices.at(0).ooms.at(0);
  EXPECT_EQ(oom.report.cause(), OomCause::kFragmentation);
  EXPECT_EQ(oom.seq, 12u);
  ASSERT_EQ(oom.nearest_holes.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(oom.nearest_holes[i].size, MiB);
    if (i > 0) {
      EXPECT_LT(oom.nearest_holes[i - 1].address, oom.nearest_holes[i].address);
    }
  }
}

TEST(Replay, ContinuesPastOoms) {
  QuietOoms quiet;
  const Trace trace = SynthTrace(30000);
  ReplayOptions options = Options("limit=1GiB");
  options.continue_past_oom = true;
  options.max_diagnoses = 3;
  const ReplayResult result = Replay(trace.sequence, options);
  EXPECT_FALSE(result.stopped_at_oom);
  EXPECT_EQ(result.ops_replayed, trace.sequence.ops.size());
  const DeviceReplay& device = result.devices.at(0);
  EXPECT_GT(device.metrics.ooms, 3u);
  EXPECT_EQ(device.ooms.size(), 3u);
  EXPECT_EQ(device.final_stats.total_ooms, device.metrics.ooms);
  EXPECT_GT(device.skipped_frees, 0u);
  EXPECT_LT(device.ooms[0].op_index, device.ooms[1].op_index);
  EXPECT_LE(device.metrics.peak_reserved, 1 * GiB);
}

TEST(Replay, RecordedOomsAreAskedAgain) {
  QuietOoms quiet;
  const Trace trace = SynthTrace(20000, "backing=sim,capacity=80GiB,limit=768MiB");
  ASSERT_GT(trace.sequence.recorded_ooms, 0u);
  // Under the recording's own configuration the first OOM comes back at the same event.
  ReplayOptions options = Options(trace.header.alloc_conf);
  const ReplayResult same = Replay(trace.sequence, options);
  ASSERT_TRUE(same.stopped_at_oom);
  const auto first_oom = std::find_if(trace.events.begin(), trace.events.end(),
                                      [](const Event& e) { return e.type == EventType::kOom; });
  EXPECT_EQ(same.devices[0].ooms.at(0).seq, first_oom->seq);
  // With room, every request fits.
  const ReplayResult roomy = Replay(trace.sequence, Options("capacity=80GiB"));
  EXPECT_FALSE(roomy.stopped_at_oom);
}

TEST(Replay, OneSimulatedDevicePerTraceDevice) {
  const Trace trace = SynthTrace(20000, "backing=sim,capacity=80GiB", 2);
  ASSERT_EQ(trace.sequence.devices.size(), 2u);
  RecordingSink sink;
  ReplayOptions options = Options("capacity=40GiB");
  options.record = &sink;
  const ReplayResult result = Replay(trace.sequence, options);
  ASSERT_EQ(result.devices.size(), 2u);
  ASSERT_EQ(result.header.devices.size(), 2u);
  EXPECT_EQ(result.header.devices[1].index, 1u);
  EXPECT_EQ(result.header.devices[1].capacity, 40 * GiB);
  for (std::uint32_t d = 0; d < 2; ++d) {
    EXPECT_EQ(result.Device(d)->metrics.peak_reserved, PeaksOf(sink.events(), d).reserved);
    EXPECT_EQ(result.Device(d)->metrics.peak_reserved, PeaksOf(trace.events, d).reserved);
  }
}

// PyTorch keeps its cached blocks per stream: a block freed on one stream does not serve another.
// The sequence keeps each allocation's stream, so preset=pytorch replays a two-stream trace with
// two segments where one stream needs one; fragscope's own policy shares its chunks.
TEST(Replay, StreamsAreKeptForPerStreamPools) {
  constexpr std::uint64_t kStreamA = 0x7f00aa, kStreamB = 0x7f00bb;
  const auto on = [](Event e, std::uint64_t stream) {
    e.stream = stream;
    return e;
  };
  const std::vector<Event> two_streams = {
      on(Alloc(0, 0x1000000, 100 * KiB, 1, 0), kStreamA), on(Free(0, 0x1000000, 1, 1), kStreamA),
      on(Alloc(0, 0x2000000, 100 * KiB, 2, 2), kStreamB), on(Free(0, 0x2000000, 2, 3), kStreamB),
      on(Alloc(0, 0x1000000, 100 * KiB, 3, 4), kStreamA)};
  const traces::TraceHeader header;
  const AllocationSequence sequence = Build(header, two_streams);
  ASSERT_EQ(sequence.streams, (std::vector<std::uint64_t>{0, kStreamA, kStreamB}));
  ASSERT_EQ(sequence.ops.size(), 5u);
  EXPECT_EQ(sequence.ops[0].stream, 1u);
  EXPECT_EQ(sequence.ops[1].stream, 1u) << "a free keeps its allocation's stream";
  EXPECT_EQ(sequence.ops[2].stream, 2u);
  EXPECT_EQ(sequence.ops[4].stream, 1u);

  RecordingSink sink;
  ReplayOptions options = Options("preset=pytorch");
  options.record = &sink;
  ReplayResult result = Replay(sequence, options);
  EXPECT_EQ(result.devices[0].metrics.peak_reserved, 4 * MiB) << "one 2 MiB small segment per stream";
  std::vector<std::uint64_t> recorded_streams;
  for (const Event& e : sink.events()) {
    if (e.type == EventType::kAlloc) recorded_streams.push_back(e.stream);
  }
  EXPECT_EQ(recorded_streams, (std::vector<std::uint64_t>{kStreamA, kStreamB, kStreamA}));

  std::vector<Event> one_stream = two_streams;
  for (Event& e : one_stream) e.stream = kStreamA;
  result = Replay(Build(header, one_stream), Options("preset=pytorch"));
  EXPECT_EQ(result.devices[0].metrics.peak_reserved, 2 * MiB) << "the freed block serves the next request";
}

TEST(Replay, VirtualDevices) {
  const std::string conf = "backing=sim,capacity=32GiB,virtual_devices=16GiB+16GiB";
  const Trace trace = SynthTrace(20000, conf, 2);
  const ReplayResult result = Replay(trace.sequence, Options(conf));
  ASSERT_EQ(result.devices.size(), 2u);
  EXPECT_FALSE(result.stopped_at_oom);
  for (std::uint32_t d = 0; d < 2; ++d) {
    EXPECT_EQ(result.Device(d)->metrics.peak_reserved, PeaksOf(trace.events, d).reserved);
    EXPECT_EQ(result.Device(d)->final_stats.limit, 16 * GiB);
  }
  // A two-device trace does not fit one virtual device.
  try {
    Replay(trace.sequence, Options("capacity=32GiB,virtual_devices=16GiB"));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "virtual_devices");
  }
}

TEST(Replay, AnyBackingRunsOnSimWithAWarning) {
  const Trace trace = SynthTrace(5000);
  const ReplayResult result = Replay(trace.sequence, Options("backing=host,capacity=16GiB"));
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("backing=host"), std::string::npos);
  EXPECT_FALSE(result.stopped_at_oom);
  EXPECT_EQ(result.header.devices.at(0).backing, "sim");
}

TEST(Replay, ReportsProgressAndRejectsAConfigThatDoesNotFit) {
  const Trace trace = SynthTrace(5000);
  ReplayOptions options = Options("");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  options.progress = [&](std::uint64_t done, std::uint64_t total) { calls.emplace_back(done, total); };
  Replay(trace.sequence, options);
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.back().first, 5000u);
  EXPECT_EQ(calls.back().second, 5000u);
  options.capacity = 4 * GiB;
  options.conf.limit = 8 * GiB;
  EXPECT_THROW(Replay(trace.sequence, options), ConfigError);
}

// --- speed (prints; asserts nothing about the machine) ---

void MeasureThroughput(std::uint64_t events) {
  const auto now = [] { return std::chrono::steady_clock::now(); };
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  SynthOptions synth;
  synth.events = events;
  RecordingSink sink;
  const auto t0 = now();
  const traces::TraceHeader header = Synthesize(synth, sink);
  const auto t1 = now();
  const std::vector<Event> recorded = sink.events();
  const auto t2 = now();
  const AllocationSequence sequence = Build(header, recorded, nullptr, 65536);
  const auto t3 = now();
  const ReplayResult result = Replay(sequence, Options(""));
  const double ops = static_cast<double>(result.ops_replayed);
  std::printf("synth into a RecordingSink: %llu events in %.3f s; copy out %.3f s\n",
              static_cast<unsigned long long>(recorded.size()), seconds(t0, t1), seconds(t1, t2));
  std::printf("build sequence: %.3f s = %.2f M events/s\n", seconds(t2, t3),
              static_cast<double>(recorded.size()) / seconds(t2, t3) / 1e6);
  std::printf("replay, default conf: %.0f ops in %.3f s = %.2f M ops/s; peak LOAD %.2f GiB, "
              "peak reserved %.2f GiB\n",
              ops, result.seconds, ops / result.seconds / 1e6,
              static_cast<double>(result.devices[0].metrics.peak_load) / static_cast<double>(GiB),
              static_cast<double>(result.devices[0].metrics.peak_reserved) / static_cast<double>(GiB));
  EXPECT_FALSE(result.stopped_at_oom);
}

TEST(ReplaySpeed, OneMillionOps) { MeasureThroughput(1000000); }

// Run by hand: replay_test --gtest_also_run_disabled_tests --gtest_filter='*TenMillion*'
TEST(ReplaySpeed, DISABLED_TenMillionOps) { MeasureThroughput(10000000); }

}  // namespace
}  // namespace fragscope::analysis
