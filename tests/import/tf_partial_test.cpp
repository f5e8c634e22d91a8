// TensorFlow dumps of which only a part survived (issue #16 item 4), made by the project's script
// (tests/tools/make_tf_fixtures.py, entries with "partial" in expected.json): a chunk list cut by
// its author (the Stats block is the truth), TF 0.x's OOM line after the dump, a fragment whose
// request is its "Bin for" line, a Stats-only fragment, the occupancy bar alone, and TensorFlow's
// pinned host memory pool. Every number is asserted exactly against the script's facts.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf";

using testing::HasWarning;
using testing::Join;

// The facts of the one dump of fixture `name`, and its dumps as read.
struct Case {
  nlohmann::json x;
  std::vector<TfBfcDump> dumps;
  Trace trace;
};

Case Read(const std::string& name) {
  std::ifstream in(kFixtures / "expected.json");
  const nlohmann::json files = nlohmann::json::parse(in);
  Case c;
  for (const auto& file : files)
    if (file["file"] == name) c.x = file["dumps"][0];
  EXPECT_FALSE(c.x.is_null()) << name << " is not in expected.json: run tests/tools/make_tf_fixtures.py";
  c.dumps = ParseTfBfcLog(testing::ReadText((kFixtures / name).string()), name);
  c.trace = TfBfcDumpsToTrace(c.dumps, name);
  return c;
}

std::uint64_t U(const nlohmann::json& x, const char* key) { return x[key].get<std::uint64_t>(); }

std::size_t CountType(const Trace& t, EventType type) {
  std::size_t n = 0;
  for (const Event& e : t.events) n += e.type == type;
  return n;
}

const Event* Oom(const Trace& t) {
  for (const Event& e : t.events)
    if (e.type == EventType::kOom) return &e;
  return nullptr;
}

// TF 2.2, chunk list cut after the first region: the Stats block's InUse is the truth, the cause
// is capacity (the chunks alone would say backing: the limit far above the one region listed).
TEST(TfPartial, CutChunkListTakesTheStatsBlock) {
  const Case c = Read("tf22_cut_chunk_list.log");
  ASSERT_EQ(c.x["partial"], "cut-chunk-list");
  ASSERT_EQ(c.dumps.size(), 1u);
  const TfBfcDump& d = c.dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_EQ(d.chunks.size(), c.x["chunks"].get<std::size_t>());
  EXPECT_EQ(d.regions.size(), c.x["regions"].get<std::size_t>());
  EXPECT_EQ(d.listed_in_use, U(c.x, "listed_in_use"));
  EXPECT_EQ(d.listed_reserved, U(c.x, "listed_reserved"));
  EXPECT_TRUE(d.from_stats);
  EXPECT_EQ(d.in_use, U(c.x, "in_use"));
  EXPECT_EQ(d.reserved, U(c.x, "reserved"));
  EXPECT_EQ(d.free_in_regions, U(c.x, "free_in_regions"));
  EXPECT_EQ(d.largest_free, U(c.x, "largest_free"));
  EXPECT_EQ(d.live_requested, U(c.x, "live_requested"));
  EXPECT_EQ(d.limit, U(c.x, "limit"));
  EXPECT_EQ(d.rounded, U(c.x, "rounded"));
  EXPECT_EQ(ToString(d.cause), c.x["cause"].get<std::string>());
  EXPECT_NE(c.x["cause_if_chunks_only"].get<std::string>(), c.x["cause"].get<std::string>());
  EXPECT_TRUE(HasWarning(d.warnings, "the chunk list is incomplete")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "(not printed: free in regions and headroom unknown)")) << Join(d.warnings);
  // A cut list is not a disagreement of Stats and chunks.
  EXPECT_FALSE(HasWarning(d.warnings, "Stats InUse is")) << Join(d.warnings);
  // ClassifyOom's invariants.
  const OomRecord r = d.ToOomRecord();
  EXPECT_GE(r.reserved, r.in_use);
  EXPECT_GE(r.free_in_regions, r.largest_free);
  EXPECT_EQ(r.reserved, r.in_use + r.free_in_regions);
  EXPECT_LE(r.live_requested, r.in_use);
  EXPECT_EQ(r.headroom, U(c.x, "limit") - U(c.x, "reserved"));
  // The trace's oom event carries the Stats numbers; the state summary says what is missing.
  const Event* oom = Oom(c.trace);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.in_use, U(c.x, "in_use"));
  EXPECT_EQ(oom->oom.cause, OomCause::kCapacity);
  ASSERT_EQ(c.trace.header.source.states.size(), 1u);
  const StateSummary& s = c.trace.header.source.states[0];
  EXPECT_EQ(s.in_use, U(c.x, "in_use"));
  EXPECT_FALSE(s.layout_complete);
  EXPECT_NE(s.missing.find("the chunks listed hold"), std::string::npos) << s.missing;
  // The layout drawn is what was listed: one alloc per listed chunk.
  EXPECT_EQ(CountType(c.trace, EventType::kAlloc), c.x["chunks"].get<std::size_t>());
}

// TF 0.8 prints its OOM line after the Stats block and the bar: it is that dump's OOM.
TEST(TfPartial, OomLineAfterTheDumpIsItsOom) {
  const Case c = Read("tf08_oom_after_stats.log");
  ASSERT_EQ(c.dumps.size(), 1u);
  const TfBfcDump& d = c.dumps[0];
  EXPECT_TRUE(d.has_header);
  EXPECT_EQ(d.allocator, "");
  EXPECT_EQ(d.line, 1u);
  EXPECT_FALSE(d.request_exact);
  EXPECT_EQ(d.request, U(c.x, "request"));  // printed exactly with two decimals
  EXPECT_EQ(d.rounded, U(c.x, "rounded"));
  EXPECT_EQ(d.limit, U(c.x, "limit"));
  EXPECT_EQ(d.reserved, U(c.x, "reserved"));
  EXPECT_EQ(d.in_use, U(c.x, "in_use"));
  EXPECT_EQ(d.in_use_chunks, U(c.x, "in_use_chunks"));
  EXPECT_EQ(d.free_chunks, U(c.x, "free_chunks"));
  EXPECT_EQ(d.largest_free, U(c.x, "largest_free"));
  EXPECT_EQ(d.free_in_regions, U(c.x, "free_in_regions"));
  EXPECT_FALSE(d.from_stats);
  EXPECT_FALSE(d.occupancy.empty());
  EXPECT_TRUE(d.cause_known);
  EXPECT_EQ(ToString(d.cause), c.x["cause"].get<std::string>());
  EXPECT_FALSE(HasWarning(d.warnings, "no \"ran out of memory\" header")) << Join(d.warnings);
  EXPECT_EQ(CountType(c.trace, EventType::kOom), 1u);
  // A second dump after the OOM line starts a new dump: the line does not reach back.
  const std::string text = testing::ReadText((kFixtures / "tf08_oom_after_stats.log").string());
  const auto twice = ParseTfBfcLog(text + text, "twice.log");
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_TRUE(twice[0].has_header);
  EXPECT_TRUE(twice[1].has_header);
  EXPECT_EQ(twice[1].in_use, U(c.x, "in_use"));
  // The line alone, with no dump before it: an OOM with nothing else.
  const auto alone = ParseTfBfcLog("W x.cc:271] Ran out of memory trying to allocate 29.91MiB.  See logs for memory state.\n", "a.log");
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_TRUE(alone[0].has_header);
  EXPECT_EQ(alone[0].request, 29ull * 1048576 + 954204);  // 0.91 MiB to the nearest byte
  EXPECT_EQ(alone[0].cause, OomCause::kUnknown);
}

// A fragment whose "ran out of memory" line is lost: "Bin for 8.49GiB" is the request.
TEST(TfPartial, BinForGivesTheRequestOfAFragment) {
  const Case c = Read("bin_for_fragment.log");
  ASSERT_EQ(c.dumps.size(), 1u);
  const TfBfcDump& d = c.dumps[0];
  EXPECT_TRUE(d.has_header);
  EXPECT_EQ(d.request, U(c.x, "request"));
  EXPECT_EQ(d.request, 9116068086u);
  EXPECT_EQ(d.rounded, U(c.x, "rounded"));
  EXPECT_FALSE(d.request_exact);
  EXPECT_EQ(d.in_use, U(c.x, "in_use"));
  EXPECT_EQ(d.reserved, U(c.x, "reserved"));
  EXPECT_EQ(d.chunks.size(), c.x["chunks"].get<std::size_t>());
  EXPECT_EQ(d.limit, 0u) << "the pasted regions are not the limit";
  EXPECT_EQ(d.cause, OomCause::kUnknown);
  EXPECT_TRUE(HasWarning(d.warnings, "the request is taken from \"Bin for\"")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "known only as printed (rounded to 2 decimals): 9116068086 bytes"))
      << Join(d.warnings);
  const Event* oom = Oom(c.trace);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.request, 9116068086u);
  EXPECT_FALSE(oom->oom.Has(kOomLimit));
}

// Only the Stats block survived: its numbers, not 0.
TEST(TfPartial, StatsOnlyFragmentReportsItsStats) {
  const Case c = Read("stats_only_fragment.log");
  ASSERT_EQ(c.dumps.size(), 1u);
  const TfBfcDump& d = c.dumps[0];
  EXPECT_FALSE(d.has_header);
  EXPECT_EQ(d.stats.fields, 8);
  EXPECT_EQ(d.in_use, U(c.x, "in_use"));
  EXPECT_EQ(d.limit, U(c.x, "limit"));
  EXPECT_EQ(d.reserved, U(c.x, "reserved"));
  EXPECT_EQ(d.largest_free, U(c.x, "largest_free"));
  EXPECT_EQ(d.free_in_regions, U(c.x, "free_in_regions"));
  EXPECT_TRUE(HasWarning(d.warnings, "chunk detail missing: only the Stats block survived")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "(the limit is the dump's own)")) << Join(d.warnings);
  EXPECT_EQ(CountType(c.trace, EventType::kOom), 0u);
  ASSERT_EQ(c.trace.header.source.states.size(), 1u);
  const StateSummary& s = c.trace.header.source.states[0];
  EXPECT_EQ(s.in_use, U(c.x, "in_use"));
  EXPECT_EQ(s.limit, U(c.x, "limit"));
  EXPECT_EQ(s.reserved, U(c.x, "reserved"));
  EXPECT_EQ(s.largest_free, U(c.x, "largest_free"));
  EXPECT_EQ(s.max_in_use, U(c.x, "max_in_use"));
  // Five fields (TF 1.x): in use and limit; reserved at least in use, with a warning.
  const auto five = ParseTfBfcLog("Stats: \nLimit:  1000000\nInUse:  600000\nMaxInUse: 700000\nNumAllocs: 5\nMaxAllocSize: 4096\n", "5.log");
  ASSERT_EQ(five.size(), 1u);
  EXPECT_EQ(five[0].in_use, 600000u);
  EXPECT_EQ(five[0].limit, 1000000u);
  EXPECT_EQ(five[0].reserved, 600000u);
  EXPECT_TRUE(HasWarning(five[0].warnings, "reserved bytes not printed: taken as at least the bytes in use"))
      << Join(five[0].warnings);
}

// The Stats block and the bar pasted without their header, then TensorFlow's OOM line ("OP_REQUIRES
// failed … OOM when allocating tensor with shape[…] … by allocator GPU_0_bfc"): the line is the
// fragment's OOM, its shape × dtype the exact request, its allocator the device.
TEST(TfPartial, OomTensorLineAfterAStatsFragmentIsItsOom) {
  const std::string stats =
      "2019-05-02 11:00:00.000100: I tensorflow/core/common_runtime/bfc_allocator.cc:680] Stats: \n"
      "Limit:                  8000000000\n"
      "InUse:                  5000000000\n"
      "MaxInUse:               5200000000\n"
      "NumAllocs:                     120\n"
      "MaxAllocSize:           2000000000\n"
      "\n"
      "2019-05-02 11:00:00.000200: W tensorflow/core/common_runtime/bfc_allocator.cc:279] "
      "*****************************************************************_________________________________\n";
  const std::string oom_line =
      "2019-05-02 11:00:00.000300: W tensorflow/core/framework/op_kernel.cc:1202] OP_REQUIRES failed at "
      "tile_ops.cc:123 : Resource exhausted: OOM when allocating tensor with shape[8,1000,1000,100] and type float on "
      "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc\n";
  // 8 × 1000 × 1000 × 100 × 4 B = 3.2 GB > Limit − InUse = 3.0 GB: capacity.
  const auto dumps = ParseTfBfcLog(stats + oom_line, "s.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.has_header);
  EXPECT_TRUE(d.oom_from_line);
  EXPECT_EQ(d.allocator, "GPU_1_bfc");
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.request, 3200000000u);
  EXPECT_EQ(d.limit, 8000000000u);
  EXPECT_EQ(d.in_use, 5000000000u);
  EXPECT_TRUE(d.cause_known);
  EXPECT_EQ(d.cause, OomCause::kCapacity);
  EXPECT_TRUE(HasWarning(d.warnings, "the OOM line after the dump")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "only the OOM line, the Stats block")) << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "s.log");
  EXPECT_EQ(CountType(t, EventType::kOom), 1u);
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].index, 1u);
  // A smaller tensor that fits in what is left: not capacity.
  std::string small = oom_line;
  small.replace(small.find("shape[8,1000,1000,100]"), 22, "shape[1,1000,1000,100]");
  const auto fits = ParseTfBfcLog(stats + small, "f.log");
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_NE(fits[0].cause, OomCause::kCapacity);
  // The OOM line of another allocator than the fragment names does not reach into it.
  const auto other = ParseTfBfcLog("I bfc_allocator.cc:1] BFCAllocator dump for GPU_0_bfc\n" + stats + oom_line, "o.log");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_FALSE(other[0].has_header);
}

// TF 0.8: the summary, the Stats block (no reserved count), the bar and the OOM line after them.
// Reserved is not printed and no region is listed: the OOM record leaves reserved, free in regions,
// headroom and largest free out (null), not the limit and 0 the bar was read over.
TEST(TfPartial, AStatsOnlyOomKeepsWhatItDoesNotKnowOut) {
  auto log = [](const std::string& request) {
    return "I tensorflow/core/common_runtime/bfc_allocator.cc:688] 3 Chunks of size 1048576 totalling 3.00MiB\n"
           "I tensorflow/core/common_runtime/bfc_allocator.cc:694] Stats: \n"
           "Limit:                  4194304\n"
           "InUse:                  3145728\n"
           "MaxInUse:               3145728\n"
           "NumAllocs:                   42\n"
           "MaxAllocSize:           1048576\n"
           "\n"
           "W tensorflow/core/common_runtime/bfc_allocator.cc:270] "
           "****************************************************************************************************\n"
           "W tensorflow/core/common_runtime/bfc_allocator.cc:271] Ran out of memory trying to allocate " +
           request + ".  See logs for memory state.\n";
  };
  const auto dumps = ParseTfBfcLog(log("1.50MiB"), "tf08.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_FALSE(d.reserved_known);
  EXPECT_TRUE(d.in_use_known);
  EXPECT_FALSE(d.largest_free_known);
  EXPECT_EQ(d.cause, OomCause::kCapacity);  // 3 MiB in use + 1.5 MiB > 4 MiB: no reserved count needed
  const OomRecord r = d.ToOomRecord();
  EXPECT_TRUE(r.Has(kOomInUse | kOomLimit | kOomRequest | kOomRounded));
  EXPECT_EQ(r.in_use, 3145728u);
  for (const OomField f : {kOomReserved, kOomFreeInRegions, kOomHeadroom, kOomLargestFree, kOomChunkCount,
                           kOomRegionCount, kOomLiveRequested})
    EXPECT_FALSE(r.Has(f)) << f;
  // Within the limit, backing and fragmentation are told apart by the reserved bytes alone.
  const auto within = ParseTfBfcLog(log("512.0KiB"), "tf08.log");
  ASSERT_EQ(within.size(), 1u);
  EXPECT_EQ(within[0].cause, OomCause::kUnknown);
  EXPECT_TRUE(HasWarning(within[0].warnings, "a device that refused a new region (backing) and fragmentation cannot "
                                             "be told apart: cause unknown"))
      << Join(within[0].warnings);
  const Trace t = TfBfcDumpsToTrace(within, "tf08.log");
  const Event* oom = Oom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.cause, OomCause::kUnknown);
  EXPECT_FALSE(oom->oom.Has(kOomReserved));
}

// Nothing but the header and the bar: the bar's fractions, free included, in the warning and the
// state summary (no bytes to scale them by).
TEST(TfPartial, BarAloneGivesItsFractions) {
  const auto dumps = ParseTfBfcLog(testing::ReadText((kFixtures / "xla_header_only.log").string()), "x.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "60 of 100 cells in use, 60 of them requested bytes; 40 free, the "
                                            "longest free run 40"))
      << Join(dumps[0].warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "x.log");
  ASSERT_EQ(t.header.source.states.size(), 1u);
  EXPECT_NE(t.header.source.states[0].missing.find("60% in use, 40% free (the longest free run 40%)"),
            std::string::npos)
      << t.header.source.states[0].missing;
}

// TensorFlow's pinned host pool: named as host memory, not a GPU.
TEST(TfPartial, HostAllocatorIsPinnedHostMemory) {
  const Case c = Read("cuda_host_bfc.log");
  ASSERT_EQ(c.dumps.size(), 1u);
  const TfBfcDump& d = c.dumps[0];
  EXPECT_EQ(d.allocator, "cuda_host_bfc");
  EXPECT_TRUE(d.host_memory);
  EXPECT_EQ(d.in_use, U(c.x, "in_use"));
  EXPECT_EQ(d.reserved, U(c.x, "reserved"));
  EXPECT_EQ(d.limit, U(c.x, "limit"));
  EXPECT_EQ(ToString(d.cause), c.x["cause"].get<std::string>());
  ASSERT_EQ(c.trace.header.devices.size(), 1u);
  EXPECT_EQ(c.trace.header.devices[0].name, "cuda_host_bfc (pinned host memory)");
  EXPECT_EQ(c.trace.header.devices[0].backing, "tensorflow pinned host memory");
  for (const char* name : {"gpu_host_bfc", "GPU_0_host_bfc", "cuda_host_bfc", "pinned_host"})
    EXPECT_TRUE(TfHostAllocator(name)) << name;
  for (const char* name : {"GPU_0_bfc", "gpu_1_bfc", "cpu", ""}) EXPECT_FALSE(TfHostAllocator(name)) << name;
}

// Most TensorFlow versions print chunk sizes only: the state then says its requested sizes are
// unknown (the layout's allocations carry the chunk sizes, which are no measure of LOAD); one chunk
// line with its requested size makes them known.
TEST(TfPartial, AStateSaysWhetherItGaveRequestedSizes) {
  const auto state_of = [](const std::string& second_chunk) {
    const std::string text = "I bfc_allocator.cc:1011] Next region of size 1048576\n"
                             "I bfc_allocator.cc:1031] InUse at f00950000 of size 1280 next 1\n"
                             "I bfc_allocator.cc:1031] InUse at f00950500 of size 256 " + second_chunk + "next 2\n";
    const Trace trace = TfBfcDumpsToTrace(ParseTfBfcLog(text, "cut.log"), "cut.log");
    EXPECT_EQ(trace.header.source.states.size(), 1u);
    return trace.header.source.states.at(0);
  };
  const StateSummary without = state_of("");
  EXPECT_FALSE(without.requested_known);
  EXPECT_FALSE(without.layout_complete);  // 1.50 KiB of the 1 MiB region listed
  EXPECT_TRUE(state_of("requested size 200 ").requested_known);
}

}  // namespace
}  // namespace fragscope::traces
