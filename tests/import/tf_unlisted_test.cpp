// Dumps whose bin lines or "Chunk State" table show chunks that the chunk list lacks (a list cut by
// the log or by whoever pasted it): the layout is incomplete, the free bytes are at least what those
// lines show, and a single chunk they show is a largest free chunk at least. The fixtures are made
// up in the style of TensorFlow 1.6 / 2.8 and XLA 2025 output.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::FindOom;
using testing::HasWarning;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
using testing::Join;

// TF 1.6: no "ran out of memory" line survived, two bins count a free chunk each that the three
// listed chunks ("Chunk at": in use) do not hold; the Chunk State table names the larger one.
const char* const kTf16 =
    "2018-03-01 10:00:00.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:630] Bin (1048576): \tTotal "
    "Chunks: 2, Chunks in use: 1. 2.75MiB allocated for chunks. 1.25MiB in use in bin. 1.25MiB client-requested in "
    "use in bin.\n"
    "2018-03-01 10:00:00.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:630] Bin (2097152): \tTotal "
    "Chunks: 1, Chunks in use: 0. 2.50MiB allocated for chunks. 0B in use in bin. 0B client-requested in use in "
    "bin.\n"
    "2018-03-01 10:00:00.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:646] Bin for 3.50MiB was "
    "2.00MiB, Chunk State: \n"
    "2018-03-01 10:00:00.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:652]   Size: 2.50MiB | Requested "
    "Size: 1.0KiB | in_use: 0, prev:   Size: 256B | Requested Size: 4B | in_use: 1, next:   Size: 1.25MiB | "
    "Requested Size: 1.25MiB | in_use: 1\n"
    "2018-03-01 10:00:00.000003: I tensorflow/core/common_runtime/bfc_allocator.cc:665] Chunk at 0x10000000000 of "
    "size 1310720\n"
    "2018-03-01 10:00:00.000003: I tensorflow/core/common_runtime/bfc_allocator.cc:665] Chunk at 0x10000140000 of "
    "size 256\n";

TEST(TfUnlisted, BinLinesAndChunkStateShowFreeChunksTheListLacks) {
  const auto dumps = ParseTfBfcLog(kTf16, "tf16.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  ASSERT_EQ(d.bins.size(), 2u);
  EXPECT_EQ(d.bins[0].bytes_in_bin, 2 * kMiB + 3 * kMiB / 4);
  EXPECT_EQ(d.bins[0].bytes_in_use, kMiB + kMiB / 4);
  EXPECT_EQ(d.bin_for_bin, 2 * kMiB);
  ASSERT_EQ(d.chunk_state.size(), 1u);  // the free chunk; its neighbours in use are not the table's
  EXPECT_EQ(d.chunk_state[0].size, 2 * kMiB + kMiB / 2);
  EXPECT_EQ(d.listed_in_use, 1310976u);
  // 1.50 MiB (bin 1 MiB: 2.75 - 1.25) and 2.50 MiB (the Chunk State table, nearer than its bin line).
  EXPECT_EQ(d.unlisted_free_chunks, 2u);
  EXPECT_EQ(d.unlisted_free_bytes, 4 * kMiB);
  EXPECT_EQ(d.unlisted_in_use_chunks, 0u);
  EXPECT_EQ(d.unlisted_largest_free, 2 * kMiB + kMiB / 2);
  EXPECT_GT(d.unlisted_margin, 0u);
  // The OOM's numbers: at least that much free, the largest free chunk at least the single one.
  EXPECT_TRUE(d.from_stats);
  EXPECT_EQ(d.in_use, 1310976u);
  EXPECT_EQ(d.free_in_regions, 4 * kMiB);
  EXPECT_EQ(d.reserved, 1310976u + 4 * kMiB);  // at least: no count printed
  EXPECT_EQ(d.largest_free, 2 * kMiB + kMiB / 2);
  EXPECT_EQ(d.request, 3 * kMiB + kMiB / 2);  // "Bin for 3.50MiB"
  EXPECT_EQ(d.cause, OomCause::kUnknown);     // no limit
  EXPECT_TRUE(HasWarning(d.warnings, "tf16.log:1: the bin lines and the Chunk State table count 2 free chunk(s) of "
                                     "about 4194304 bytes that the chunk list lacks (the largest free one about "
                                     "2621440 bytes): the layout is incomplete"))
      << Join(d.warnings);
  EXPECT_FALSE(HasWarning(d.warnings, "disagree with the chunks")) << Join(d.warnings);

  const Trace t = TfBfcDumpsToTrace(dumps, "tf16.log");
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.largest_free, 2 * kMiB + kMiB / 2);
  EXPECT_EQ(oom->oom.free_in_regions, 4 * kMiB);
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& s = t.header.source.states[0];
  EXPECT_FALSE(s.layout_complete);
  EXPECT_EQ(s.free_at_least, 4 * kMiB);
  EXPECT_EQ(s.largest_free, 2 * kMiB + kMiB / 2);
  EXPECT_FALSE(s.in_use_at_least);
  EXPECT_NE(s.missing.find("its bin lines and Chunk State table show 2 free chunks of about 4.00 MiB that the chunk "
                           "list lacks"),
            std::string::npos)
      << s.missing;
}

// XLA 2025: the region is printed in bytes, its one listed chunk in use; the missing free chunk
// (bin line and Chunk State, 2 decimals) fills the rest of the region, whose bytes are exact.
TEST(TfUnlisted, ThePrintedRegionGivesTheMissingChunkExactly) {
  const std::string text =
      "2025-07-16 10:00:00.000001: I external/xla/xla/tsl/framework/bfc_allocator.cc:1056] Bin (268435456):     "
      "Total Chunks: 2, Chunks in use: 1. 4.00GiB allocated for chunks. 3.00GiB in use in bin. 3.00GiB "
      "client-requested in use in bin.\n"
      "2025-07-16 10:00:00.000002: I external/xla/xla/tsl/framework/bfc_allocator.cc:1072] Bin for 3.50GiB was "
      "256.00MiB, Chunk State:\n"
      "2025-07-16 10:00:00.000002: I external/xla/xla/tsl/framework/bfc_allocator.cc:1078]   Size: 1023.00MiB | "
      "Requested Size: 0B | in_use: 0 | bin_num: 20, prev:   Size: 3.00GiB | Requested Size: 3.00GiB | in_use: 1 | "
      "bin_num: -1\n"
      "2025-07-16 10:00:00.000003: I external/xla/xla/tsl/framework/bfc_allocator.cc:1085] Next region of size "
      "4293918976\n"
      "2025-07-16 10:00:00.000003: I external/xla/xla/tsl/framework/bfc_allocator.cc:1105] InUse at 7f0000000000 of "
      "size 3221225472 next 1\n";
  const auto dumps = ParseTfBfcLog(text, "xla.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_EQ(d.unlisted_free_chunks, 1u);
  EXPECT_EQ(d.unlisted_free_bytes, 1072693504u);  // 4293918976 - 3221225472, not 1023.00 MiB
  EXPECT_EQ(d.unlisted_margin, 0u);
  EXPECT_EQ(d.unlisted_largest_free, 1072693504u);
  EXPECT_EQ(d.reserved, 4293918976u);
  EXPECT_EQ(d.in_use, 3221225472u);
  EXPECT_EQ(d.free_in_regions, 1072693504u);
  EXPECT_EQ(d.largest_free, 1072693504u);
  EXPECT_TRUE(HasWarning(d.warnings, "count 1 free chunk(s) of 1072693504 bytes that the chunk list lacks (the "
                                     "largest free one 1072693504 bytes)"))
      << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "xla.log");
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->oom.largest_free, 1072693504u);
  ASSERT_EQ(t.header.source.states.size(), 1u);
  EXPECT_EQ(t.header.source.states[0].largest_free, 1072693504u);
  EXPECT_EQ(t.header.source.states[0].free_at_least, 1072693504u);
}

// TF 2.8: the bins count in-use chunks the list lacks, and no Stats block says how much is in use:
// in use is at least what the list and the bins hold.
TEST(TfUnlisted, BinsCountInUseChunksTheListLacks) {
  const std::string text =
      "2022-05-11 02:33:29.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:1017] Bin (33554432): \tTotal "
      "Chunks: 3, Chunks in use: 2. 120.00MiB allocated for chunks. 70.00MiB in use in bin. 70.00MiB "
      "client-requested in use in bin.\n"
      "2022-05-11 02:33:29.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:1066] InUse at b06900700 of size "
      "256 next 141\n";
  const auto dumps = ParseTfBfcLog(text, "tf28.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.unlisted_in_use_chunks, 2u);
  EXPECT_EQ(d.unlisted_in_use_bytes, 70 * kMiB);
  EXPECT_EQ(d.unlisted_free_chunks, 1u);
  EXPECT_EQ(d.unlisted_free_bytes, 50 * kMiB);
  EXPECT_EQ(d.unlisted_largest_free, 50 * kMiB);  // one chunk
  EXPECT_EQ(d.in_use, 256 + 70 * kMiB);
  EXPECT_TRUE(HasWarning(d.warnings, "the bin lines count 1 free chunk(s) of about 52428800 bytes and 2 in-use "
                                     "chunk(s) of about 73400320 bytes that the chunk list lacks"))
      << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "tf28.log");
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& s = t.header.source.states[0];
  EXPECT_EQ(s.in_use, 256 + 70 * kMiB);
  EXPECT_TRUE(s.in_use_at_least);
  EXPECT_EQ(s.free_at_least, 50 * kMiB);
  EXPECT_FALSE(s.layout_complete);

  // The same bin line with every chunk listed: nothing is missing, nothing disagrees.
  const std::string whole =
      "I bfc_allocator.cc:1017] Bin (33554432): \tTotal Chunks: 3, Chunks in use: 2. 120.00MiB allocated for chunks. "
      "70.00MiB in use in bin. 70.00MiB client-requested in use in bin.\n"
      "I bfc_allocator.cc:1066] InUse at 7f0000000000 of size 33554432 next 1\n"
      "I bfc_allocator.cc:1066] Free  at 7f0002000000 of size 52428800 next 2\n"
      "I bfc_allocator.cc:1066] InUse at 7f0005200000 of size 39845888 next 3\n";
  const auto complete = ParseTfBfcLog(whole, "whole.log");
  ASSERT_EQ(complete.size(), 1u);
  EXPECT_EQ(complete[0].unlisted_free_chunks, 0u);
  EXPECT_EQ(complete[0].unlisted_in_use_chunks, 0u);
  EXPECT_FALSE(complete[0].from_stats);
  EXPECT_FALSE(HasWarning(complete[0].warnings, "lacks")) << Join(complete[0].warnings);
  EXPECT_FALSE(HasWarning(complete[0].warnings, "disagree")) << Join(complete[0].warnings);
  const Trace ct = TfBfcDumpsToTrace(complete, "whole.log");
  EXPECT_TRUE(ct.header.source.states[0].layout_complete);
  EXPECT_EQ(ct.header.source.states[0].free_at_least, std::nullopt);
}

// TF 0.6 files a chunk under the smallest bin not below its size: its "Bin for 512.00MiB was
// 512.00MiB" table lists a free 288 MiB chunk. That chunk is what is free, not the bin's size.
TEST(TfUnlisted, TheChunkStateTableOfTf06) {
  const std::string text =
      "I tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc:366] Bin (536870912): \tTotal Chunks: 1, Chunks in "
      "use: 0 288.00MiB allocated for chunks. 128.00MiB client-requested for chunks. 0B in use in bin. 0B "
      "client-requested in use in bin.\n"
      "I tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc:385] Bin for 512.00MiB was 512.00MiB, Chunk State: \n"
      "I tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc:390]   Size: 288.00MiB | Requested Size: 128.00MiB | "
      "in_use: 0, prev:   Size: 512.00MiB | Requested Size: 512.00MiB | in_use: 1, next:   Size: 129.01MiB | "
      "Requested Size: 128.00MiB | in_use: 1\n"
      "I tensorflow/core/common_runtime/gpu/gpu_bfc_allocator.cc:400] Chunk at 0x3a60e2a00 of size 135274496\n";
  const auto dumps = ParseTfBfcLog(text, "tf06.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.unlisted_free_chunks, 1u);
  EXPECT_EQ(d.unlisted_free_bytes, 288 * kMiB);
  EXPECT_EQ(d.unlisted_largest_free, 288 * kMiB);
  EXPECT_EQ(d.largest_free, 288 * kMiB);
  EXPECT_EQ(d.free_in_regions, 288 * kMiB);
}

// TF 2.2, its chunk list cut by its author: after the one "Next region of size" line that
// survived, two chunks lie far outside that region (their own region's line was cut). They are
// kept, outside every listed region, and the region is not credited with them.
const char* const kStray =
    "2020-06-23 19:38:17.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:419] Allocator (GPU_0_bfc) ran "
    "out of memory trying to allocate 128.0KiB (rounded to 131072).  Current allocation summary follows.\n"
    "2020-06-23 19:38:17.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:898] Next region of size 1048576\n"
    "2020-06-23 19:38:17.000003: I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 0000000700000000 "
    "next 1 of size 1280\n"
    "2020-06-23 19:38:17.000003: I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 0000000700000500 "
    "next 2 of size 256\n"
    ".... many lines cut here\n"
    "2020-06-23 19:38:18.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 0000000733000000 "
    "next 77 of size 256\n"
    "2020-06-23 19:38:18.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:905] InUse at 0000000733000100 "
    "next 18446744073709551615 of size 4096\n"
    "2020-06-23 19:38:18.000002: I tensorflow/core/common_runtime/bfc_allocator.cc:923] total_region_allocated_bytes_: "
    "3145728 memory_limit_: 3145728 available bytes: 0 curr_region_allocation_bytes_: 4194304\n"
    "2020-06-23 19:38:18.000003: I tensorflow/core/common_runtime/bfc_allocator.cc:929] Stats:\n"
    "Limit:                     3145728\n"
    "InUse:                     3080192\n"
    "MaxInUse:                  3080192\n"
    "NumAllocs:                     77\n"
    "MaxAllocSize:              1048576\n";

TEST(TfUnlisted, ChunksOutsideTheRegionPrintedBeforeThemAreKept) {
  const auto dumps = ParseTfBfcLog(kStray, "stray.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  ASSERT_EQ(d.chunks.size(), 4u);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0].address, 0x700000000u);
  EXPECT_EQ(d.regions[0].size, 1048576u);
  EXPECT_EQ(d.regions[0].chunk_count, 2u);
  EXPECT_EQ(d.listed_in_use, 1280u + 256 + 256 + 4096);  // the stray chunks are in use all the same
  EXPECT_TRUE(HasWarning(d.warnings, "stray.log:6: 2 chunks listed after the region at 0x700000000 (line 2) lie "
                                     "outside its 1048576 bytes, the first at 0x733000000: kept outside every listed "
                                     "region"))
      << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "cover 1536 of its 1048576 bytes")) << Join(d.warnings);
  EXPECT_FALSE(HasWarning(d.warnings, "do not follow each other")) << Join(d.warnings);
  EXPECT_EQ(d.in_use, 3080192u);  // Stats InUse: the list is cut
  EXPECT_EQ(d.cause, OomCause::kCapacity);  // 3080192 + 131072 > 3145728

  const Trace t = TfBfcDumpsToTrace(dumps, "stray.log");
  std::size_t allocs = 0, outside = 0;
  for (const Event& e : t.events) {
    if (e.type != EventType::kAlloc) continue;
    ++allocs;
    if (e.region == 0) {
      ++outside;
      EXPECT_GE(e.address, 0x733000000u);
    }
  }
  EXPECT_EQ(allocs, 4u);
  EXPECT_EQ(outside, 2u);
  const Event* oom = FindOom(t);
  ASSERT_NE(oom, nullptr);
  EXPECT_FALSE(oom->oom.Has(kOomLargestFree));  // no free chunk listed: unknown, not the unlisted range
  const StateSummary& s = t.header.source.states[0];
  EXPECT_FALSE(s.layout_complete);
  EXPECT_EQ(s.largest_free, std::nullopt);
  EXPECT_NE(s.missing.find("2 of the chunks it lists lie outside every listed region"), std::string::npos) << s.missing;
}

}  // namespace
}  // namespace fragscope::traces
