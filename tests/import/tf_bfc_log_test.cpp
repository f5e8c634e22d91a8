// TensorFlow / XLA BFC OOM logs: the five real logs in ../shared/data/tf (skipped when absent)
// with the counts and totals the logs themselves justify, and synthetic logs for each format era,
// several dumps, disagreements that must become warnings, and the OOM causes.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

const std::string kDataDir = FRAGSCOPE_SOURCE_DIR "/../shared/data/tf/";

#define REQUIRE_SHARED_LOG(path)                                                                   \
  if (!std::filesystem::exists(path))                                                              \
  GTEST_SKIP() << "shared data not found: " << (path)                                              \
               << " (third-party logs live in ../shared/data next to the project)"

struct Counts {
  std::size_t alloc = 0, free = 0, reserve = 0, release = 0, oom = 0, marker = 0;
};

Counts Count(const Trace& t) {
  Counts c;
  for (const Event& e : t.events) {
    switch (e.type) {
      case EventType::kAlloc: ++c.alloc; break;
      case EventType::kFree: ++c.free; break;
      case EventType::kRegionReserve: ++c.reserve; break;
      case EventType::kRegionRelease: ++c.release; break;
      case EventType::kOom: ++c.oom; break;
      case EventType::kMarker: ++c.marker; break;
    }
  }
  return c;
}

const Event* FindOom(const Trace& t) {
  for (const Event& e : t.events)
    if (e.type == EventType::kOom) return &e;
  return nullptr;
}

bool HasWarning(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

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
  // One more in-use chunk claimed by the 256 B bin.
  const std::string from = "Bin (256): \tTotal Chunks: 2, Chunks in use: 1.";
  text.replace(text.find(from), from.size(), "Bin (256): \tTotal Chunks: 3, Chunks in use: 2.");
  const auto dumps = ParseTfBfcLog(text, "bad.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "Stats InUse is 999 but the in-use chunks add up to 524544"));
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "bin 256 (line"));
  EXPECT_TRUE(HasWarning(dumps[0].warnings, "bad.log:"));
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

// Hostile numbers (issue 13): every size the reader takes is checked where it is parsed. A small
// TF 2.x dump, every line numbered, that reads without a warning; each test changes one line.
//   capacity: in use 1536 + the 1024-byte request > the 2048-byte limit.
std::vector<std::string> HostileBase() {
  return {
      /* 1 */ "2021-03-15 17:16:57.000001: W bfc_allocator.cc:456] Allocator (GPU_0_bfc) ran out of memory "
              "trying to allocate 1.00KiB (rounded to 1024)requested by op MatMul",
      /* 2 */ "I bfc_allocator.cc:998] Bin (512): \tTotal Chunks: 3, Chunks in use: 2. 2.00KiB allocated for "
              "chunks. 1.50KiB in use in bin. 1.50KiB client-requested in use in bin.",
      /* 3 */ "I bfc_allocator.cc:1011] Next region of size 2048",
      /* 4 */ "I bfc_allocator.cc:1031] InUse at 0x7f0000000000 of size 768 next 1",
      /* 5 */ "I bfc_allocator.cc:1031] Free  at 0x7f0000000300 of size 512 next 2",
      /* 6 */ "I bfc_allocator.cc:1031] InUse at 0x7f0000000500 of size 768 next 3",
      /* 7 */ "I bfc_allocator.cc:1046] total_region_allocated_bytes_: 2048 memory_limit_: 2048 available bytes: 0",
      /* 8 */ "I bfc_allocator.cc:1052] Stats: ",
      /* 9 */ "Limit:                        2048",
      /* 10 */ "InUse:                        1536",
      /* 11 */ "MaxInUse:                     1536",
      /* 12 */ "NumAllocs:                       2",
      /* 13 */ "MaxAllocSize:                  768",
      /* 14 */ "Reserved:                     2048",
      /* 15 */ "PeakReserved:                 2048",
      /* 16 */ "LargestFreeBlock:              512",
      /* 17 */ "W bfc_allocator.cc:467] ***************************************************************************_________________________",
      /* 18 */ "W op_kernel.cc:1763] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with "
               "shape[256] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
  };
}

// The base with line `line` (1-based) replaced by `text`.
std::string Hostile(std::size_t line, const std::string& text) {
  std::vector<std::string> lines = HostileBase();
  if (line > 0) lines.at(line - 1) = text;
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

std::string JoinWarnings(const std::vector<std::string>& warnings) {
  std::string out;
  for (const std::string& w : warnings) out += w + "\n";
  return out;
}

// Every event a trace holds can be replayed (the check every reader makes, event.hpp).
void ExpectEventsRepresentable(const Trace& t) {
  for (const Event& e : t.events) EXPECT_EQ(EventSizeProblem(e), nullptr) << e.size << " at " << e.address;
}

TEST(TfBfcLogHostile, TheBaseReadsCleanly) {
  const auto dumps = ParseTfBfcLog(Hostile(0, ""), "h.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_TRUE(d.warnings.empty()) << JoinWarnings(d.warnings);
  EXPECT_EQ(d.reserved, 2048u);
  EXPECT_EQ(d.in_use, 1536u);
  EXPECT_EQ(d.limit, 2048u);
  EXPECT_EQ(d.request, 1024u);
  EXPECT_TRUE(d.request_exact);
  EXPECT_EQ(d.cause, OomCause::kCapacity);
  EXPECT_NO_THROW(ParseTfBfcLogToTrace(Hostile(0, ""), "h.log"));
}

struct HostileCase {
  std::size_t line;
  std::string text;
  std::string error;  // what the error says after "line N: "
};

// Sizes of 2^63..2^64, 4 EiB + 1, 2^64 and more, negative sizes and pointers of more than 64 bits
// where the state is built from them (chunks, regions, Stats, the region totals): an error that
// names the file and the line, never a size that ends in replay, never a line dropped silently.
TEST(TfBfcLogHostile, ImpossibleSizesOfTheStateAreErrorsNamingTheLine) {
  const std::vector<HostileCase> cases = {
      {3, "I] Next region of size 9223372036854775808",
       "region size (\"Next region of size\"): 9223372036854775808 bytes is more than 4 EiB "
       "(4611686018427387904 bytes), the largest size fragscope represents"},
      // Item 3: the chunks of a region of 2^64-1 bytes were dropped silently.
      {3, "I] Next region of size 18446744073709551615",
       "region size (\"Next region of size\"): 18446744073709551615 bytes is more than 4 EiB"},
      {3, "I] Next region of size 18446744073709551616",
       "region size (\"Next region of size\"): 18446744073709551616 does not fit in 64 bits"},
      {3, "I] Next region of size -2048", "region size (\"Next region of size\"): -2048 is negative, not a size"},
      {4, "I] InUse at 0x7f0000000000 of size 9223372036854775808 next 1",
       "the size of the chunk at 0x7f0000000000: 9223372036854775808 bytes is more than 4 EiB"},
      {4, "I] InUse at 0x7f0000000000 of size 4611686018427387905 next 1",
       "the size of the chunk at 0x7f0000000000: 4611686018427387905 bytes is more than 4 EiB"},
      {5, "I] Free  at 0x7f0000000300 of size 99999999999999999999 next 2",
       "the size of the chunk at 0x7f0000000300: 99999999999999999999 does not fit in 64 bits"},
      {6, "I] InUse at 0x7f0000000500 of size -768 next 3",
       "the size of the chunk at 0x7f0000000500: -768 is negative, not a size"},
      // Item 2: a pointer of 19 hex digits was dropped silently.
      {4, "I] InUse at 0x1234567890123456789 of size 768 next 1",
       "chunk address 0x1234567890123456789 does not fit in 64 bits"},
      {6, "I] InUse at FFFFFFFFFFFFFF00 of size 768 next 3",
       "the chunk at FFFFFFFFFFFFFF00 of 768 bytes runs past the end of the 64-bit address space"},
      {7, "I] total_region_allocated_bytes_: 9223372036854775808 memory_limit_: 2048",
       "total_region_allocated_bytes_: 9223372036854775808 bytes is more than 4 EiB"},
      {7, "I] total_region_allocated_bytes_: 2048 memory_limit_: 18446744073709551615",
       "memory_limit_: 18446744073709551615 bytes is more than 4 EiB"},
      // Item 4: "Limit: -5" was accepted or dropped silently.
      {9, "Limit:                        -5", "Stats Limit: -5 is negative, not a size"},
      {9, "Limit:                        9223372036854775808", "Stats Limit: 9223372036854775808 bytes is more than 4 EiB"},
      {10, "InUse:                        18446744073709551615", "Stats InUse: 18446744073709551615 bytes is more than 4 EiB"},
      {11, "MaxInUse:                     -1", "Stats MaxInUse: -1 is negative, not a size"},
      {12, "NumAllocs:                    -2", "Stats NumAllocs: -2 is negative, not a count"},
      {12, "NumAllocs:                    18446744073709551616", "Stats NumAllocs: 18446744073709551616 does not fit in 64 bits"},
      {13, "MaxAllocSize:                 9223372036854775808", "Stats MaxAllocSize: 9223372036854775808 bytes is more than 4 EiB"},
      {14, "Reserved:                     9223372036854775808", "Stats Reserved: 9223372036854775808 bytes is more than 4 EiB"},
      {15, "PeakReserved:                 4611686018427387905", "Stats PeakReserved: 4611686018427387905 bytes is more than 4 EiB"},
      {16, "LargestFreeBlock:             -512", "Stats LargestFreeBlock: -512 is negative, not a size"},
  };
  testing::TempDir dir;
  for (const HostileCase& c : cases) {
    SCOPED_TRACE(c.text);
    const std::string text = Hostile(c.line, c.text);
    const auto dumps = ParseTfBfcLog(text, "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_EQ(dumps[0].errors.size(), 1u);
    EXPECT_EQ(dumps[0].errors[0].line, c.line);
    EXPECT_NE(dumps[0].errors[0].message.find(c.error), std::string::npos) << dumps[0].errors[0].message;
    // What the dump keeps never holds the impossible number.
    const Trace kept = TfBfcDumpsToTrace(dumps, "h.log");
    ExpectEventsRepresentable(kept);
    EXPECT_TRUE(HasWarning(kept.warnings, fmt::format("h.log:{}: error: {}", c.line, c.error)));
    // The readers refuse the log, naming the file and the line.
    try {
      ParseTfBfcLogToTrace(text, "h.log");
      ADD_FAILURE() << "no error";
    } catch (const TraceError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("h.log: ", 0), 0u) << what;
      EXPECT_NE(what.find(fmt::format("line {}: {}", c.line, c.error)), std::string::npos) << what;
    }
  }
  // From a file: the path, the byte offset of the line, the line.
  const std::string path = dir.File("limit.log");
  std::ofstream(path) << Hostile(9, "Limit: -5");
  std::size_t offset = 0;
  for (std::size_t i = 0; i < 8; ++i) offset += HostileBase()[i].size() + 1;
  try {
    ReadTfBfcLog(path);
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.offset(), offset);
    EXPECT_EQ(std::string(e.what()), fmt::format("{}: at byte {}: line 9: Stats Limit: -5 is negative, not a size",
                                                 path, offset));
  }
}

TEST(TfBfcLogHostile, SumsOfChunksAboveFourEiBAreErrors) {
  // A printed region whose chunks add up to 2^63: each chunk is representable, their sum is not.
  {
    const std::string text =
        "Next region of size 4611686018427387904\n"
        "InUse at 0x0 of size 4611686018427387904 next 1\n"
        "InUse at 0x4000000000000000 of size 4611686018427387904 next 2\n";
    const auto dumps = ParseTfBfcLog(text, "sum.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_FALSE(dumps[0].errors.empty());  // then: the in-use chunks add up to more than 4 EiB
    EXPECT_EQ(dumps[0].errors[0].line, 2u);
    EXPECT_EQ(dumps[0].errors[0].message,
              "the chunks listed for the region at 0x0 (line 1) add up to 9223372036854775808 bytes: more "
              "than 4 EiB (4611686018427387904 bytes), the largest size fragscope represents");
    ExpectEventsRepresentable(TfBfcDumpsToTrace(dumps, "sum.log"));
    EXPECT_THROW(ParseTfBfcLogToTrace(text, "sum.log"), TraceError);
  }
  // The same chunks without region lines: touching, they form one inferred region of 2^63.
  {
    const std::string text =
        "InUse at 0x0 of size 4611686018427387904 next 1\n"
        "InUse at 0x4000000000000000 of size 4611686018427387904 next 2\n";
    const auto dumps = ParseTfBfcLog(text, "sum.log");
    ASSERT_EQ(dumps.size(), 1u);
    ASSERT_FALSE(dumps[0].errors.empty());
    EXPECT_EQ(dumps[0].errors[0].line, 1u);
    EXPECT_NE(dumps[0].errors[0].message.find("the chunks that touch from the one at 0x0: 9223372036854775808 "
                                              "bytes is more than 4 EiB"),
              std::string::npos)
        << dumps[0].errors[0].message;
    ExpectEventsRepresentable(TfBfcDumpsToTrace(dumps, "sum.log"));
  }
  // Exactly 4 EiB is representable: read, with the right totals.
  {
    const std::string text = "InUse at 0x0 of size 4611686018427387904 next 1\n";
    const Trace t = ParseTfBfcLogToTrace(text, "max.log");
    const auto dumps = ParseTfBfcLog(text, "max.log");
    EXPECT_EQ(dumps[0].in_use, kMaxBytes);
    EXPECT_EQ(dumps[0].reserved, kMaxBytes);
    EXPECT_EQ(Count(t).alloc, 1u);
    ExpectEventsRepresentable(t);
  }
}

TEST(TfBfcLogHostile, PointersOf64BitsWithLeadingZerosAreRead) {
  // 19 digits, 64 bits of value: an address like any other.
  const auto dumps = ParseTfBfcLog(Hostile(4, "I] InUse at 0x00000007f0000000000 of size 768 next 1"), "h.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_TRUE(dumps[0].errors.empty());
  EXPECT_TRUE(dumps[0].warnings.empty()) << JoinWarnings(dumps[0].warnings);
  EXPECT_EQ(dumps[0].chunks.front().address, 0x7f0000000000u);
  EXPECT_EQ(dumps[0].in_use, 1536u);
}

// Item 5 and the header: a rounded size or request that is no size is a warning naming the line;
// the rest of the dump stands.
TEST(TfBfcLogHostile, HeaderSizesThatAreNoSizesAreWarnings) {
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB (rounded to -1024)"),
        "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(d.errors.empty());
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:1: the rounded size (\"rounded to\"): -1024 is negative, not a "
                                       "size: left out (the request rounded up to 256 B stands for it)"))
        << JoinWarnings(d.warnings);
    // The shape line gives the exact request; rounded from it.
    EXPECT_EQ(d.request, 1024u);
    EXPECT_TRUE(d.request_exact);
    EXPECT_EQ(d.rounded, 1024u);
    EXPECT_EQ(d.cause, OomCause::kCapacity);
  }
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00KiB (rounded to "
                   "99999999999999999999)"),
        "h.log");
    EXPECT_TRUE(HasWarning(dumps[0].warnings, "h.log:1: the rounded size (\"rounded to\"): 99999999999999999999 "
                                              "does not fit in 64 bits: left out"))
        << JoinWarnings(dumps[0].warnings);
    EXPECT_EQ(dumps[0].rounded, 1024u);
  }
  {
    const auto dumps = ParseTfBfcLog(
        Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate -1.00KiB (rounded to 1024)"),
        "h.log");
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:1: the request after \"trying to allocate\" is -1.00KiB, "
                                       "negative, not a size: the request is unknown"))
        << JoinWarnings(d.warnings);
    EXPECT_EQ(d.request, 1024u);  // from the shape line
    EXPECT_EQ(d.rounded, 1024u);
  }
}

// A request above 4 EiB is what TF prints for a negative or overflowed size: the OOM is kept,
// with a warning, as request-too-large (no device holds it), even where the limit is unknown.
TEST(TfBfcLogHostile, RequestsAboveFourEiBAreRequestTooLarge) {
  {
    // Without the shape line (its 1024 bytes would disagree with the header).
    std::string no_shape = Hostile(1, "W] Allocator (GPU_0_bfc) ran out of memory trying to allocate 16.00EiB "
                                      "(rounded to 18446744073709551360)requested by op Fill");
    no_shape.resize(no_shape.find("W op_kernel.cc"));
    const auto d = ParseTfBfcLog(no_shape, "h.log");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:1: the request (16.00EiB, which does not fit in 64 bits, rounded to "
                                          "18446744073709551360) is more than 4 EiB"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].request, 18446744073709551360u);
    EXPECT_EQ(d[0].rounded, 18446744073709551360u);
    EXPECT_EQ(d[0].cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(d[0].in_use, 1536u);
    const Trace t = ParseTfBfcLogToTrace(no_shape, "h.log");
    const Event* oom = FindOom(t);
    ASSERT_NE(oom, nullptr);
    EXPECT_EQ(oom->oom.cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(oom->oom.request, 18446744073709551360u);
    ExpectEventsRepresentable(t);
  }
  {
    // A header only, no limit: still request-too-large.
    const std::string text =
        "E0528 12:00:00.000000 1 bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to "
        "allocate 8.00EiB (rounded to 9223372036854775808).\n";
    const auto d = ParseTfBfcLog(text, "jax.log");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(HasWarning(d[0].warnings, "jax.log:1: the request (8.00EiB, rounded to 9223372036854775808) "
                                          "is more than 4 EiB"))
        << JoinWarnings(d[0].warnings);
    EXPECT_TRUE(d[0].cause_known);
    EXPECT_EQ(d[0].cause, OomCause::kRequestTooLarge);
    EXPECT_EQ(d[0].request, 9223372036854775808u);
  }
}

// Item 6: tensor shapes that give no size are warnings naming the line; the header's request stands.
TEST(TfBfcLogHostile, TensorShapesThatGiveNoSizeAreWarnings) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"shape[-1,3] and type float", "the tensor shape [-1,3] of type float: a negative dimension (-1): not "
                                     "taken as the request"},
      {"shape[4294967296,4294967296,2] and type float",
       "the tensor shape [4294967296,4294967296,2] of type float: more than 2^64 bytes: not taken"},
      {"shape[4611686018427387904] and type float",
       "the tensor shape [4611686018427387904] of type float: more than 2^64 bytes: not taken"},
      {"shape[1152921504606846977] and type float",
       "the tensor shape [1152921504606846977] of type float: 4611686018427387908 bytes is more than 4 EiB"},
      {"shape[99999999999999999999,1] and type half",
       "the tensor shape [99999999999999999999,1] of type half: a dimension of more than 64 bits "
       "(99999999999999999999): not taken"},
      {"shape[256,?] and type float", "the tensor shape [256,?] of type float: a dimension that is not a number"},
      {"shape[256] and type int4", "the tensor shape [256] of type int4: no known element size for the type"},
  };
  for (const auto& [shape, warning] : cases) {
    SCOPED_TRACE(shape);
    const auto dumps = ParseTfBfcLog(
        Hostile(18, "W] OP_REQUIRES failed : Resource exhausted: OOM when allocating tensor with " + shape +
                        " on /job:localhost/replica:0/task:0/device:GPU:0"),
        "h.log");
    ASSERT_EQ(dumps.size(), 1u);
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(d.errors.empty());
    EXPECT_TRUE(HasWarning(d.warnings, "h.log:18: " + warning)) << JoinWarnings(d.warnings);
    // The header's numbers: "1.00KiB (rounded to 1024)".
    EXPECT_EQ(d.request, 1024u);
    EXPECT_FALSE(d.request_exact);
    EXPECT_EQ(d.rounded, 1024u);
    EXPECT_EQ(d.cause, OomCause::kCapacity);
  }
  // A zero dimension makes an overflowing product empty; a scalar is one element.
  {
    const auto d = ParseTfBfcLog(
        Hostile(18, "W] OOM when allocating tensor with shape[4294967296,4294967296,0] and type float"), "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:18: the tensor shape of the OOM line gives 0 bytes, which "
                                          "disagrees with the header"))
        << JoinWarnings(d[0].warnings);
  }
  // XLA's byte count.
  for (const auto& [bytes, warning] :
       std::vector<std::pair<std::string, std::string>>{
           {"-1024", "-1024 is negative, not a size: not taken as the request"},
           {"9223372036854775808", "9223372036854775808 bytes is more than 4 EiB"},
           {"18446744073709551616", "18446744073709551616 does not fit in 64 bits: not taken"}}) {
    const auto d = ParseTfBfcLog(
        Hostile(18, "jax.errors.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate " +
                        bytes + " bytes."),
        "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:18: XLA's \"Out of memory while trying to allocate N "
                                          "bytes\": " + warning))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].request, 1024u);
    EXPECT_FALSE(d[0].request_exact);
  }
}

// Bin lines and requested sizes are cross-checks: a number that is no size leaves them out, with
// a warning naming the line.
TEST(TfBfcLogHostile, BinLinesAndRequestedSizesThatAreNoSizesAreWarnings) {
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (-512): \tTotal Chunks: 3, Chunks in use: 2. 2.00KiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: bin size -512 is negative, not a size: left out"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].in_use, 1536u);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (512): \tTotal Chunks: 3, Chunks in use: -2. 2.00KiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: Chunks in use -2 is negative, not a count: left out"))
        << JoinWarnings(d[0].warnings);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(2, "I] Bin (512): \tTotal Chunks: 3, Chunks in use: 2. 16.00EiB allocated for chunks."), "h.log");
    EXPECT_TRUE(d[0].bins.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:2: bin line: bytes allocated for chunks: 16.00EiB does not fit "
                                          "in 64 bits: left out"))
        << JoinWarnings(d[0].warnings);
  }
  {
    const auto d = ParseTfBfcLog(
        Hostile(4, "I] InUse at 0x7f0000000000 of size 768 requested size 4096 next 1"), "h.log");
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:4: the requested size of the chunk at 0x7f0000000000: 4096 is "
                                          "more than the chunk's 768 bytes: left out"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].live_requested, 1536u);
  }
  {
    // A chunk or region line whose number is missing: a warning, the rest stands.
    const auto d = ParseTfBfcLog(Hostile(4, "I] InUse at 0xZZ of size 768 next 1"), "h.log");
    EXPECT_TRUE(d[0].errors.empty());
    EXPECT_TRUE(HasWarning(d[0].warnings, "h.log:4: a chunk line whose address is not hexadecimal: left out"))
        << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].in_use, 768u);
    const auto r = ParseTfBfcLog(Hostile(3, "I] Next region of size many"), "h.log");
    EXPECT_TRUE(HasWarning(r[0].warnings, "h.log:3: region size (\"Next region of size\") is not followed by a "
                                          "number: left out"))
        << JoinWarnings(r[0].warnings);
    EXPECT_EQ(r[0].reserved, 2048u);  // inferred from the chunks
  }
  {
    const auto d = ParseTfBfcLog(Hostile(4, "I] InUse at 0x7f0000000000 of size 768 requested size 700 next 1"), "h.log");
    EXPECT_TRUE(d[0].warnings.empty()) << JoinWarnings(d[0].warnings);
    EXPECT_EQ(d[0].live_requested, 700u + 768u);
  }
}

}  // namespace
}  // namespace fragscope::traces
