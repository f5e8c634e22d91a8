// TensorFlow / XLA BFC OOM logs: the five real logs in ../shared/data/tf (skipped when absent)
// with the counts and totals the logs themselves justify, and synthetic logs for each format era,
// several dumps, disagreements that must become warnings, and the OOM causes. Numbers the reader
// cannot take (hostile input) are in tf_bfc_hostile_test.cpp.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::Count;
using testing::Counts;
using testing::FindOom;
using testing::HasWarning;

const std::string kDataDir = FRAGSCOPE_SOURCE_DIR "/../shared/data/tf/";

#define REQUIRE_SHARED_LOG(path)                                                                   \
  if (!std::filesystem::exists(path))                                                              \
  GTEST_SKIP() << "shared data not found: " << (path)                                              \
               << " (third-party logs live in ../shared/data next to the project)"

TEST(TfBfcLogShared, Log01Tf12RequestLargerThanLimit) {
  const std::string path = kDataDir + "01_voletiv-IIIT-deep-learning-course-2017-summer_Assignment2-Readme.log";
  REQUIRE_SHARED_LOG(path);
  const auto dumps = ParseTfBfcLog(testing::ReadText(path), path);
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.allocator, "GPU_0_bfc");
  EXPECT_EQ(d.in_use_chunks, 43u);  // 43 "Chunk at"
  EXPECT_EQ(d.free_chunks, 1u);     // 1 "Free at"
  EXPECT_EQ(d.bins.size(), 21u);
  EXPECT_EQ(d.stats.fields, 5);
  EXPECT_EQ(*d.stats.limit, 160432128u);
  // The in-use chunks add up to Stats InUse; with the free chunk they tile one region as large as
  // the limit.
  EXPECT_EQ(d.in_use, 21853696u);
  EXPECT_EQ(d.largest_free, 138578432u);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0].address, 0xb05e40000u);
  EXPECT_EQ(d.reserved, 160432128u);
  EXPECT_EQ(d.request, 286u << 20);  // "286.00MiB"
  EXPECT_FALSE(d.request_exact);
  EXPECT_EQ(d.occupancy.size(), 100u);

  const Trace t = ReadTfBfcLog(path);
  EXPECT_EQ(t.header.source_format, "tensorflow-bfc-log");
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].index, 0u);
  EXPECT_EQ(t.header.devices[0].limit, 160432128u);
  const Counts c = Count(t);
  EXPECT_EQ(c.alloc, 43u);
  EXPECT_EQ(c.reserve, 1u);
  EXPECT_EQ(c.oom, 1u);
  EXPECT_EQ(c.marker, 1u);
  EXPECT_EQ(t.TagName(t.events[0].tag), "tf dump 1 at line 4");
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.cause, OomCause::kRequestTooLarge);
  EXPECT_EQ(oom->oom.limit, 160432128u);
  EXPECT_EQ(oom->oom.in_use, 21853696u);
  EXPECT_EQ(oom->oom.free_in_regions, 138578432u);
  EXPECT_EQ(oom->oom.headroom, 0u);
  EXPECT_EQ(oom->oom.chunk_count, 44u);
  EXPECT_TRUE(HasWarning(t.warnings, "known only as printed"));
  EXPECT_FALSE(HasWarning(t.warnings, "disagree"));
}

TEST(TfBfcLogShared, Log06Tf115MemoryExhausted) {
  const std::string path = kDataDir + "06_Chingfood-chi1_predict_Resnet_cov.e.log";
  REQUIRE_SHARED_LOG(path);
  const auto dumps = ParseTfBfcLog(testing::ReadText(path), path);
  // Line 37 ("... not a failure") is a warning without a dump: only line 38's dump counts.
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.line, 38u);
  EXPECT_EQ(d.in_use_chunks, 1033u);
  EXPECT_EQ(d.free_chunks, 4u);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_TRUE(d.regions[0].size_printed);
  EXPECT_EQ(d.regions[0].chunk_count, 1037u);
  // Every total the log prints agrees with the chunks: no warning at all.
  EXPECT_EQ(d.reserved, 12092604416u);  // "Next region of size", total_region_allocated_bytes_
  EXPECT_EQ(d.in_use, 12085207808u);    // Stats InUse
  EXPECT_EQ(d.free_in_regions, 269056u + 10496u + 147456u + 6969600u);
  EXPECT_EQ(d.largest_free, 6969600u);
  EXPECT_EQ(d.rounded, 27878400u);
  EXPECT_EQ(d.request, 27878400u);  // shape[1,330,330,64,1] float
  EXPECT_TRUE(d.request_exact);
  EXPECT_TRUE(d.warnings.empty()) << d.warnings.front();

  const Trace t = ReadTfBfcLog(path);
  const Counts c = Count(t);
  EXPECT_EQ(c.alloc, 1033u);
  EXPECT_EQ(c.reserve, 1u);
  EXPECT_EQ(c.oom, 1u);
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.cause, OomCause::kCapacity);  // in use + request > limit
  EXPECT_EQ(oom->oom.limit, 12092604416u);
  EXPECT_EQ(t.TagName(oom->tag), "shape[1,330,330,64,1] float");
  std::uint64_t rounded = 0;
  for (const Event& e : t.events)
    if (e.type == EventType::kAlloc) rounded += e.rounded;
  EXPECT_EQ(rounded, 12085207808u);
}

TEST(TfBfcLogShared, Log09InterleavedFragment) {
  const std::string path = kDataDir + "09_tensorflow-tensorflow_issue22586_fragment-chunks.log";
  REQUIRE_SHARED_LOG(path);
  const Trace t = ReadTfBfcLog(path);
  const Counts c = Count(t);
  EXPECT_EQ(c.alloc, 8u);   // 8 "Chunk at"
  EXPECT_EQ(c.reserve, 1u); // 11 contiguous chunks: one region
  EXPECT_EQ(c.oom, 0u);     // no header, no request
  const auto dumps = ParseTfBfcLog(testing::ReadText(path), path);
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].free_chunks, 3u);
  EXPECT_EQ(dumps[0].in_use, 156188672u);
  EXPECT_EQ(dumps[0].reserved, 156188672u + 917504u + 139264u + 819200u);
  EXPECT_EQ(dumps[0].largest_free, 917504u);
  EXPECT_TRUE(HasWarning(t.warnings, "no \"ran out of memory\" header"));
}

TEST(TfBfcLogShared, Log12Tf24InUseLines) {
  const std::string path = kDataDir + "12_tensorflow-tensorflow_issue47820_fragment.log";
  REQUIRE_SHARED_LOG(path);
  const auto dumps = ParseTfBfcLog(testing::ReadText(path), path);
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.in_use_chunks, 8u);
  EXPECT_EQ(d.chunks.front().address, 0xf00950000u);
  EXPECT_EQ(d.in_use, 1280u + 7u * 256u);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0].size, 1048576u);  // the printed region size, not the chunks' 3 KiB
  EXPECT_TRUE(HasWarning(d.warnings, "cover 3072 of its 1048576 bytes"));
  EXPECT_EQ(Count(ReadTfBfcLog(path)).alloc, 8u);
}

TEST(TfBfcLogShared, Log13JaxHeaderAndBarOnly) {
  const std::string path = kDataDir + "13_TheDingodile-ML_final_outputs-v32test-Markdown-v32test_0.log";
  REQUIRE_SHARED_LOG(path);
  const Trace t = ReadTfBfcLog(path);
  const Counts c = Count(t);
  EXPECT_EQ(c.alloc, 0u);
  EXPECT_EQ(c.reserve, 0u);
  EXPECT_EQ(c.oom, 1u);
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.request, 2110783616u);  // XLA's exact "... allocate 2110783616 bytes."
  EXPECT_EQ(oom->oom.rounded, 2110783744u);
  EXPECT_TRUE(HasWarning(t.warnings, "chunk detail missing"));
  EXPECT_TRUE(HasWarning(t.warnings, "93 of 100 cells in use"));
  EXPECT_TRUE(HasWarning(t.warnings, "cause cannot be determined"));
  // No byte count of the memory survived: each of those numbers is absent, never a 0.
  for (const OomField field : {kOomReserved, kOomInUse, kOomLiveRequested, kOomFreeInRegions, kOomLargestFree,
                               kOomHeadroom, kOomChunkCount, kOomRegionCount, kOomLimit}) {
    EXPECT_FALSE(oom->oom.Has(field)) << "field bit " << field;
  }
  EXPECT_TRUE(oom->oom.Has(kOomRequest));
}

// A TF 2.x dump: "Current allocation summary follows." twice, tabs after Bin, two regions,
// "InUse at P of size M next N", upper-case pointers, an 8-field Stats block with
// LargestFreeBlock 0, inside a log with a progress bar.
std::string Tf2Dump(const std::string& allocator, std::uint64_t limit, std::uint64_t request,
                    const std::string& stats_in_use) {
  std::string s;
  s += "Epoch 1/3\r 10/100 [==>....]\r 20/100 [====>...]\n";
  s += "2021-03-15 17:16:57.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:456] Allocator (" +
       allocator + ") ran out of memory trying to allocate 1.00MiB (rounded to " + std::to_string(request) +
       ")requested by op MatMul\n";
  s += "If the cause is memory fragmentation maybe the environment variable 'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. \n";
  s += "Current allocation summary follows.\nCurrent allocation summary follows.\n";
  s += "2021-03-15 17:16:57.000002: I bfc_allocator.cc:991] BFCAllocator dump for " + allocator + "\n";
  s += "2021-03-15 17:16:57.000003: I bfc_allocator.cc:998] Bin (256): \tTotal Chunks: 2, Chunks in use: 1. 512B allocated for chunks. 256B in use in bin. 200B client-requested in use in bin.\n";
  s += "2021-03-15 17:16:57.000003: I bfc_allocator.cc:998] Bin (524288): \tTotal Chunks: 2, Chunks in use: 1. 1.00MiB allocated for chunks. 512.0KiB in use in bin. 512.0KiB client-requested in use in bin.\n";
  s += "2021-03-15 17:16:57.000004: I bfc_allocator.cc:1011] Next region of size 1048832\n";
  s += "2021-03-15 17:16:57.000005: I bfc_allocator.cc:1031] InUse at 00000007FF000000 of size 256 next 1\n";
  s += "2021-03-15 17:16:57.000005: I bfc_allocator.cc:1031] Free  at 00000007FF000100 of size 524288 next 2\n";
  s += "2021-03-15 17:16:57.000005: I bfc_allocator.cc:1031] InUse at 00000007FF080100 of size 524288 next 18446744073709551615\n";
  s += "unrelated line: loss=0.25\n";
  s += "2021-03-15 17:16:57.000006: I bfc_allocator.cc:1011] Next region of size 256\n";
  s += "2021-03-15 17:16:57.000007: I bfc_allocator.cc:1031] Free  at 0x900000000 of size 256 next 18446744073709551615\n";
  s += "2021-03-15 17:16:57.000008: I bfc_allocator.cc:1036]      Summary of in-use Chunks by size: \n";
  s += "2021-03-15 17:16:57.000009: I bfc_allocator.cc:1046] total_region_allocated_bytes_: 1049088 memory_limit_: " +
       std::to_string(limit) + " available bytes: 0 curr_region_allocation_bytes_: 2097152\n";
  s += "2021-03-15 17:16:57.000010: I bfc_allocator.cc:1052] Stats: \n";
  s += "Limit:                        " + std::to_string(limit) + "\n";
  s += "InUse:                        " + stats_in_use + "\n";
  s += "MaxInUse:                     524544\nNumAllocs:                         7\nMaxAllocSize:                 524288\n";
  s += "Reserved:                           0\nPeakReserved:                       0\nLargestFreeBlock:                   0\n\n";
  s += "2021-03-15 17:16:57.000011: W bfc_allocator.cc:467] ***********************************************_____________________________________________________\n";
  s += "2021-03-15 17:16:57.000012: W tensorflow/core/framework/op_kernel.cc:1763] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with shape[1024,256] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator " + allocator + "\n";
  return s;
}

TEST(TfBfcLog, Tf2DumpEveryField) {
  // 1 MiB request, limit = reserved: in use (524544) + 1 MiB > 1049088: capacity.
  const std::string text = Tf2Dump("GPU_1_bfc", 1049088, 1048576, "524544");
  const auto dumps = ParseTfBfcLog(text, "tf2.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.allocator, "GPU_1_bfc");
  EXPECT_EQ(d.regions.size(), 2u);
  EXPECT_EQ(d.reserved, 1049088u);
  EXPECT_EQ(d.in_use, 524544u);
  EXPECT_EQ(d.largest_free, 524288u);
  EXPECT_EQ(d.stats.fields, 8);
  EXPECT_EQ(d.op, "MatMul");
  EXPECT_EQ(d.request, 1048576u);  // shape[1024,256] float
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.cause, OomCause::kCapacity);
  EXPECT_TRUE(HasWarning(d.warnings, "LargestFreeBlock is printed as 0"));
  EXPECT_FALSE(HasWarning(d.warnings, "bin line"));
  EXPECT_FALSE(HasWarning(d.warnings, "Stats InUse"));

  const Trace t = TfBfcDumpsToTrace(dumps, "tf2.log");
  ASSERT_EQ(t.header.devices.size(), 1u);
  EXPECT_EQ(t.header.devices[0].index, 1u);
  EXPECT_EQ(t.events.front().device, 1u);
  // The state: TF 2.x prints Reserved and LargestFreeBlock as 0 whatever they are, so reserved is
  // total_region_allocated_bytes_ and the largest free is left to the layout, never a 0.
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& state = t.header.source.states[0];
  EXPECT_EQ(state.reserved, std::optional<std::uint64_t>(1049088u));
  EXPECT_EQ(state.largest_free, std::nullopt);
  EXPECT_EQ(state.in_use, std::optional<std::uint64_t>(524544u));
}

TEST(TfBfcLog, CauseRules) {
  // limit 2 MiB: in use + request fit, the headroom (2 MiB - 1049088) does not: fragmentation.
  {
    const auto d = ParseTfBfcLog(Tf2Dump("GPU_0_bfc", 2u << 20, 1048576, "524544"), "x");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].cause, OomCause::kFragmentation);
  }
  // limit 4 MiB: the headroom alone would hold the request: the backing refused.
  {
    const auto d = ParseTfBfcLog(Tf2Dump("GPU_0_bfc", 4u << 20, 1048576, "524544"), "x");
    EXPECT_EQ(d[0].cause, OomCause::kBacking);
    EXPECT_EQ(d[0].ToOomRecord().headroom, (4u << 20) - 1049088u);
  }
  // request above the limit.
  {
    const auto d = ParseTfBfcLog(Tf2Dump("GPU_0_bfc", 1049088, 2u << 20, "524544"), "x");
    EXPECT_EQ(d[0].cause, OomCause::kRequestTooLarge);
  }
}

TEST(TfBfcLog, DisagreementsBecomeWarnings) {
  std::string text = Tf2Dump("GPU_0_bfc", 1049088, 1048576, "999");
  // The 256 B bin counts one chunk fewer than the list holds in its size class: they disagree.
  const std::string from = "Bin (256): \tTotal Chunks: 2, Chunks in use: 1.";
  std::string fewer = text;
  fewer.replace(fewer.find(from), from.size(), "Bin (256): \tTotal Chunks: 1, Chunks in use: 1.");
  const auto dumps = ParseTfBfcLog(fewer, "bad.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "Stats InUse is 999 but the in-use chunks add up to 524544"));
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "bin 256 (line"));
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "bad.log:"));
  // One more in-use chunk than listed: a chunk the list lacks (tf_unlisted_test.cpp), not a disagreement;
  // its bytes (the line still says 256B in use) at least half the bin size.
  std::string more = text;
  more.replace(more.find(from), from.size(), "Bin (256): \tTotal Chunks: 3, Chunks in use: 2.");
  const auto cut = ParseTfBfcLog(more, "cut.log");
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_FALSE(HasWarning(cut[0].warnings, "bin 256 (line"));
  EXPECT_TRUE(HasWarning(cut[0].warnings, "1 in-use chunk(s) of 128 bytes that the chunk list lacks"));
  EXPECT_EQ(cut[0].unlisted_in_use_chunks, 1u);
}

TEST(TfBfcLog, SeveralDumpsReplaceTheState) {
  const std::string text = Tf2Dump("GPU_0_bfc", 1049088, 1048576, "524544") +
                           "some training output\n" + Tf2Dump("GPU_0_bfc", 1049088, 1048576, "524544") +
                           Tf2Dump("GPU_1_bfc", 1049088, 1048576, "524544");
  const auto dumps = ParseTfBfcLog(text, "many.log");
  ASSERT_EQ(dumps.size(), 3u);
  const Trace t = TfBfcDumpsToTrace(dumps, "many.log");
  const Counts c = Count(t);
  EXPECT_EQ(c.marker, 3u);
  EXPECT_EQ(c.oom, 3u);
  EXPECT_EQ(c.alloc, 6u);
  EXPECT_EQ(c.free, 2u);     // the first GPU_0 dump's allocations end before the second
  EXPECT_EQ(c.release, 2u);
  EXPECT_EQ(t.header.devices.size(), 2u);
  for (std::size_t i = 0; i < t.events.size(); ++i) EXPECT_EQ(t.events[i].seq, i);
}

TEST(TfBfcLog, OldEraSeparateLoopsAndNoDoubleDump) {
  const std::string text =
      "2017-06-20 20:25:42.825757: W bfc_allocator.cc:273] Allocator (GPU_0_bfc) ran out of memory "
      "trying to allocate 768B.  Current allocation summary follows.\n"
      "2017-06-20 20:25:42.825808: I bfc_allocator.cc:643] Bin (256):\tTotal Chunks: 1, Chunks in use: 0 256B allocated for chunks. 0B client-requested for chunks.\n"
      "2017-06-20 20:25:42.826064: I bfc_allocator.cc:678] Chunk at 0x7f0000000000 of size 1024\n"
      "2017-06-20 20:25:42.826064: I bfc_allocator.cc:678] Chunk at 0x7f0000000500 of size 512\n"
      "2017-06-20 20:25:42.826440: I bfc_allocator.cc:687] Free at 0x7f0000000400 of size 256\n"
      "2017-06-20 20:25:42.826575: I bfc_allocator.cc:702] Stats: \n"
      "Limit:  1792\nInUse:  1536\nMaxInUse: 1536\nNumAllocs: 2\nMaxAllocSize: 1024\n";
  const auto dumps = ParseTfBfcLog(text, "old.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.reserved, 1792u);
  EXPECT_EQ(d.request, 768u);
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.cause, OomCause::kCapacity);  // 1536 + 768 > 1792
  EXPECT_FALSE(HasWarning(d.warnings, "disagree"));
  EXPECT_FALSE(HasWarning(d.warnings, "Stats"));
}

TEST(TfBfcLog, DetectionAndErrors) {
  EXPECT_TRUE(LooksLikeTfBfcLog("x\nW bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1B\n"));
  EXPECT_TRUE(LooksLikeTfBfcLog("I] InUse at 7f00 of size 256 next 1\n"));
  EXPECT_FALSE(LooksLikeTfBfcLog("Thread,Time,Action,Pointer,Size,Stream\n"));
  EXPECT_FALSE(LooksLikeTfBfcLog(std::string_view("\x80\x04\x95\0\0", 5)));
  EXPECT_TRUE(ParseTfBfcLog("", "empty").empty());
  testing::TempDir dir;
  const std::string path = dir.File("none.log");
  std::ofstream(path) << "nothing to see\n";
  EXPECT_THROW(ReadTfBfcLog(path), TraceError);
  EXPECT_THROW(ReadTfBfcLog(dir.File("missing.log")), TraceError);
}

// TensorFlow's "ran out of memory … The caller indicates that this is not a failure" warning has no
// dump after it and is no error: a log of such warnings alone is no BFC log (the OOM message reader
// says that it records no failure), and where a program asks for a dump in it, the error says why.
TEST(TfBfcLog, NotAFailureWarningsAloneAreNoDump) {
  const std::string warning =
      "2021-03-01 10:00:00.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:246] Allocator (GPU_0_bfc) ran "
      "out of memory trying to allocate 1.50GiB with freed_by_count=0. The caller indicates that this is not a "
      "failure, but may mean that there could be performance gains if more memory were available.\n";
  EXPECT_FALSE(LooksLikeTfBfcLog(warning + warning));
  EXPECT_TRUE(ParseTfBfcLog(warning, "x").empty());
  try {
    ParseTfBfcLogToTrace(warning, "w.log");
    ADD_FAILURE() << "no dump: must throw";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("warnings that TensorFlow marks \"not a failure\""), std::string::npos)
        << e.what();
  }
  // A header without those words, anywhere among them, is a dump's (a header-only one here).
  EXPECT_TRUE(LooksLikeTfBfcLog(warning + "W bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to "
                                          "allocate 2.00GiB with freed_by_count=0.\n" + warning));
}

}  // namespace
// Live requested bytes come only from requested sizes the dump printed: most TensorFlow versions
// print chunk sizes alone, and the chunks standing in for them read as a measured "no waste".
TEST(TfBfcLog, LiveRequestedOnlyWhereRequestedSizesWerePrinted) {
  const auto without = ParseTfBfcLog(Tf2Dump("GPU_0_bfc", 2u << 20, 1048576, "524544"), "x");
  ASSERT_EQ(without.size(), 1u);
  EXPECT_FALSE(without[0].requested_listed);
  EXPECT_FALSE(without[0].ToOomRecord().Has(kOomLiveRequested));
  EXPECT_TRUE(without[0].ToOomRecord().Has(kOomInUse));
  std::string text = Tf2Dump("GPU_0_bfc", 2u << 20, 1048576, "524544");
  const std::string chunk = "InUse at 00000007FF000000 of size 256 ";
  const auto at = text.find(chunk);
  ASSERT_NE(at, std::string::npos) << text;
  text.insert(at + chunk.size(), "requested size 200 ");
  const auto with = ParseTfBfcLog(text, "x");
  ASSERT_EQ(with.size(), 1u);
  EXPECT_TRUE(with[0].requested_listed);
  EXPECT_TRUE(with[0].ToOomRecord().Has(kOomLiveRequested));
  EXPECT_EQ(with[0].ToOomRecord().live_requested, 200u + 524288u);  // the other chunk stands for itself
}

}  // namespace fragscope::traces
