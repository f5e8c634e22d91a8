// XLA 2026 prints the BFC Stats block in human-readable units ("Limit: 89.77GiB", "Reserved: 0B")
// where TensorFlow printed bytes: every field is read with its unit, known to its printed digits
// (a margin of half the last digit), and replaced by the exact number where the dump gives it
// elsewhere (memory_limit_ in bytes, the listed chunks). The fixtures are made up in the style of
// XLA's output.
#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::HasWarning;

constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;
using testing::Join;

// An XLA 2026 Stats block (absl log prefix), sizes in human-readable units; `limit` and `in_use`
// as printed.
std::string HumanStats(const std::string& limit = "12.34GiB", const std::string& in_use = "10.50GiB") {
  return "I0000 00:00:1700000000.000002    4242 bfc_allocator.cc:1128] Stats: \n"
         "Limit:                        " + limit + "\n"
         "InUse:                        " + in_use + "\n"
         "MaxInUse:                     11.25GiB\n"
         "NumAllocs:                          17\n"
         "MaxAllocSize:                  3.50GiB\n"
         "Reserved:                           0B\n"
         "PeakReserved:                       0B\n"
         "LargestFreeBlock:                   0B\n"
         "\n"
         "W0000 00:00:1700000000.000003    4242 bfc_allocator.cc:513] "
         "*****************************************************************************************___________\n";
}

TEST(TfHumanUnits, StatsInHumanUnitsAreReadWithTheirUnit) {
  const auto dumps = ParseTfBfcLog(HumanStats(), "xla.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  const TfBfcStats& s = d.stats;
  EXPECT_EQ(s.fields, 8);
  EXPECT_EQ(s.limit, 13249974108u);  // 12.34 GiB to the nearest byte, not 12
  EXPECT_EQ(s.in_use, 10 * kGiB + kGiB / 2);
  EXPECT_EQ(s.max_in_use, 11 * kGiB + kGiB / 4);
  EXPECT_EQ(s.num_allocs, 17u);  // a count stays a count
  EXPECT_EQ(s.max_alloc_size, 3 * kGiB + kGiB / 2);
  EXPECT_EQ(s.reserved, 0u);
  EXPECT_EQ(s.largest_free_block, 0u);
  // Two decimals of GiB: within 0.005 GiB, and the MiB TF's integer division may have dropped.
  EXPECT_EQ(s.limit_margin, 6417285u);
  EXPECT_EQ(s.in_use_margin, 6417285u);
  EXPECT_EQ(s.reserved_margin, 0u);  // "0B" is exact
  EXPECT_TRUE(s.approximate());
  EXPECT_EQ(d.limit, 13249974108u);
  EXPECT_EQ(d.in_use, 10 * kGiB + kGiB / 2);
  // No largest free is invented: Stats prints 0 (unknown), and the bar's free run is no chunk.
  const Trace t = TfBfcDumpsToTrace(dumps, "xla.log");
  ASSERT_EQ(t.header.source.states.size(), 1u);
  const StateSummary& state = t.header.source.states[0];
  EXPECT_EQ(state.in_use, 10 * kGiB + kGiB / 2);
  EXPECT_EQ(state.limit, 13249974108u);
  EXPECT_EQ(state.max_in_use, 11 * kGiB + kGiB / 4);
  EXPECT_EQ(state.reserved, std::nullopt);  // "Reserved: 0B": not kept up to date by the allocator
  EXPECT_EQ(state.largest_free, std::nullopt);
  EXPECT_NE(state.missing.find("exact byte counts: it prints human-readable sizes (Limit 13249974108 "
                               "(give or take 6417285 bytes), InUse 11274289152"),
            std::string::npos)
      << state.missing;
  EXPECT_TRUE(HasWarning(d.warnings, "xla.log:1: the dump prints sizes in human-readable units and nothing else in "
                                     "it gives them exactly: Limit 13249974108 (give or take 6417285 bytes)"))
      << Join(d.warnings);
}

TEST(TfHumanUnits, DecimalAndSmallUnits) {
  const auto dumps = ParseTfBfcLog(HumanStats("1.5GB", "768B"), "xla.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].stats.limit, 1500000000u);  // GB is 1000^3, as in fragscope's own sizes
  EXPECT_EQ(dumps[0].stats.limit_margin, 50000000u);
  EXPECT_EQ(dumps[0].stats.in_use, 768u);
  EXPECT_EQ(dumps[0].stats.in_use_margin, 0u);
  const auto kib = ParseTfBfcLog(HumanStats("2.25MiB", "1.5KiB"), "xla.log");
  ASSERT_EQ(kib.size(), 1u);
  EXPECT_EQ(kib[0].stats.limit, 2359296u);
  EXPECT_EQ(kib[0].stats.limit_margin, 6266u);  // 0.005 MiB, and a KiB TF's integer division drops
  EXPECT_EQ(kib[0].stats.in_use, 1536u);
  EXPECT_EQ(kib[0].stats.in_use_margin, 51u);  // one decimal of KiB
}

// Where the dump prints the same number exactly, the exact one is taken.
TEST(TfHumanUnits, ExactNumbersElsewhereWin) {
  // memory_limit_ in bytes, within 0.005 GiB of "12.34GiB".
  const std::string pool =
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1119] total_region_allocated_bytes_: 13249973248 "
      "memory_limit_: 13249974016 available bytes: 768 curr_region_allocation_bytes_: 26499946496\n";
  const auto dumps = ParseTfBfcLog(pool + HumanStats(), "xla.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.stats.limit, 13249974016u);
  EXPECT_EQ(d.stats.limit_margin, 0u);
  EXPECT_EQ(d.limit, 13249974016u);
  EXPECT_EQ(d.reserved, 13249973248u);
  EXPECT_FALSE(HasWarning(d.warnings, "Stats Limit is")) << Join(d.warnings);
  EXPECT_FALSE(HasWarning(d.warnings, "Limit 13249974108")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "InUse 11274289152 (give or take 6417285 bytes)")) << Join(d.warnings);

  // A whole dump: the listed chunks give InUse and the largest free chunk exactly; nothing is cut.
  const std::string dump =
      "W0000 00:00:1700000000.000001    4242 bfc_allocator.cc:501] Allocator (GPU_0_bfc) ran out of memory trying "
      "to allocate 1.0KiB (rounded to 1024)requested by op \n"
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1085] Next region of size 2048\n"
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1105] InUse at 7f0000000000 of size 768 next 1\n"
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1105] Free  at 7f0000000300 of size 512 next 2\n"
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1105] InUse at 7f0000000500 of size 768 next 3\n"
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1119] total_region_allocated_bytes_: 2048 "
      "memory_limit_: 2048 available bytes: 0 curr_region_allocation_bytes_: 4096\n"
      "I0000 00:00:1700000000.000002    4242 bfc_allocator.cc:1128] Stats: \n"
      "Limit:                         2.0KiB\n"
      "InUse:                         1.5KiB\n"
      "MaxInUse:                      1.5KiB\n"
      "NumAllocs:                          2\n"
      "MaxAllocSize:                    768B\n"
      "Reserved:                      2.0KiB\n"
      "PeakReserved:                  2.0KiB\n"
      "LargestFreeBlock:                512B\n";
  const auto whole = ParseTfBfcLog(dump, "whole.log");
  ASSERT_EQ(whole.size(), 1u);
  const TfBfcDump& w = whole[0];
  EXPECT_TRUE(w.errors.empty());
  EXPECT_EQ(w.stats.in_use, 1536u);
  EXPECT_EQ(w.stats.in_use_margin, 0u);
  EXPECT_EQ(w.stats.reserved, 2048u);
  EXPECT_EQ(w.stats.reserved_margin, 0u);
  EXPECT_EQ(w.limit, 2048u);
  EXPECT_FALSE(w.from_stats);
  EXPECT_EQ(w.in_use, 1536u);
  EXPECT_EQ(w.largest_free, 512u);
  EXPECT_EQ(w.cause, OomCause::kCapacity);  // 1536 + 1024 > 2048
  EXPECT_FALSE(HasWarning(w.warnings, "Stats InUse")) << Join(w.warnings);
  EXPECT_FALSE(HasWarning(w.warnings, "incomplete")) << Join(w.warnings);
  // MaxInUse has nothing exact to take: it alone stays approximate.
  EXPECT_TRUE(HasWarning(w.warnings, "are known only to their printed digits")) << Join(w.warnings);
  // (InUse, Limit and Reserved are exact now; PeakReserved has nothing exact either.)
  EXPECT_TRUE(HasWarning(w.warnings, "gives them exactly: MaxInUse 1536 (give or take 51 bytes), PeakReserved 2048 "
                                     "(give or take 51 bytes) are known"))
      << Join(w.warnings);
}

// Numbers that cannot be taken stay errors, with their units.
TEST(TfHumanUnits, ImpossibleHumanSizesAreErrors) {
  const auto negative = ParseTfBfcLog(HumanStats("-5.00GiB"), "h.log");
  ASSERT_EQ(negative.size(), 1u);
  ASSERT_EQ(negative[0].errors.size(), 1u);
  EXPECT_EQ(negative[0].errors[0].line, 2u);
  EXPECT_EQ(negative[0].errors[0].message, "Stats Limit: -5.00GiB is negative, not a size");
  const auto huge = ParseTfBfcLog(HumanStats("12.34GiB", "5.00EiB"), "h.log");
  ASSERT_EQ(huge.size(), 1u);
  ASSERT_EQ(huge[0].errors.size(), 1u);
  EXPECT_NE(huge[0].errors[0].message.find("Stats InUse: 5764607523034234880 bytes is more than 4 EiB"),
            std::string::npos)
      << huge[0].errors[0].message;
  const auto too_long = ParseTfBfcLog(HumanStats("99999999999EiB"), "h.log");
  ASSERT_EQ(too_long.size(), 1u);
  ASSERT_EQ(too_long[0].errors.size(), 1u);
  EXPECT_EQ(too_long[0].errors[0].message, "Stats Limit: 99999999999EiB does not fit in 64 bits");
  EXPECT_THROW(ParseTfBfcLogToTrace(HumanStats("-5.00GiB"), "h.log"), TraceError);
}


// The pool line of TF >= 2.13 and XLA ("Total bytes in pool: N memory_limit_: L available bytes:
// A") gives the reserved bytes as TF 1.15 - 2.12's total_region_allocated_bytes_ did: a dump whose
// chunk list was cut keeps its reserved total, and memory_limit_ is the limit when Stats has none.
TEST(TfPoolLine, TotalBytesInPoolIsTheReservedCount) {
  const std::string cut =
      "2024-07-12 14:40:46.000001: W tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory "
      "trying to allocate 1.00MiB (rounded to 1048576)requested by op Conv2D\n"
      "2024-07-12 14:40:46.000002: I tsl/framework/bfc_allocator.cc:1080] Next region of size 1048576\n"
      "2024-07-12 14:40:46.000003: I tsl/framework/bfc_allocator.cc:1100] InUse at 7f2a00000000 of size 786432 next 1\n"
      "2024-07-12 14:40:46.000003: I tsl/framework/bfc_allocator.cc:1100] Free  at 7f2a000c0000 of size 262144 next 2\n"
      "2024-07-12 14:40:46.000004: I tsl/framework/bfc_allocator.cc:1109] Total bytes in pool: 4194304 memory_limit_: "
      "4194560 available bytes: 256 curr_region_allocation_bytes_: 8388608\n"
      "2024-07-12 14:40:46.000005: I tsl/framework/bfc_allocator.cc:1114] Stats: \n"
      "Limit:                         4194560\n"
      "InUse:                         3145728\n"
      "MaxInUse:                      3145728\n"
      "NumAllocs:                          9\n"
      "MaxAllocSize:                  1048576\n"
      "Reserved:                            0\n"
      "PeakReserved:                        0\n"
      "LargestFreeBlock:                    0\n";
  const auto dumps = ParseTfBfcLog(cut, "tf213.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_EQ(d.total_region_allocated, 4194304u);
  EXPECT_EQ(d.memory_limit, 4194560u);
  EXPECT_EQ(d.available, 256u);
  EXPECT_TRUE(d.from_stats);  // three of the four regions are not listed
  EXPECT_EQ(d.listed_reserved, 1048576u);
  EXPECT_EQ(d.reserved, 4194304u);  // the printed count, not a bound
  EXPECT_EQ(d.in_use, 3145728u);
  EXPECT_EQ(d.free_in_regions, 1048576u);
  EXPECT_EQ(d.limit, 4194560u);
  // 3 MiB in use + 1 MiB > 4 MiB + 256 B? No: 4194304 <= 4194560; the headroom (256 B) cannot hold
  // it and 1 MiB is free in the regions: fragmentation.
  EXPECT_EQ(d.cause, OomCause::kFragmentation);
  EXPECT_TRUE(HasWarning(d.warnings, "the dump counts InUse 3145728, Total bytes in pool 4194304")) << Join(d.warnings);
  EXPECT_FALSE(HasWarning(d.warnings, "(not printed: free in regions and headroom unknown)")) << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "tf213.log");
  ASSERT_EQ(t.header.source.states.size(), 1u);
  EXPECT_EQ(t.header.source.states[0].reserved, 4194304u);
  EXPECT_NE(t.header.source.states[0].missing.find("the regions listed hold 1.00 MiB where it counts 4.00 MiB reserved"),
            std::string::npos)
      << t.header.source.states[0].missing;

  // Only the pool line and the bar: memory_limit_ is the limit (no Stats block).
  const std::string bare =
      "W bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00MiB (rounded to "
      "1048576)requested by op Conv2D\n"
      "I bfc_allocator.cc:1109] Total bytes in pool: 4194304 memory_limit_: 4194560 available bytes: 256\n"
      "W bfc_allocator.cc:491] "
      "***************************************************************************_________________________\n";
  const auto only = ParseTfBfcLog(bare, "bare.log");
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].limit, 4194560u);
  EXPECT_EQ(only[0].reserved, 4194304u);
  EXPECT_EQ(only[0].in_use, 3145728u);  // 75 of 100 cells of the pool
  EXPECT_TRUE(only[0].cause_known);
}

// XLA 2026: "Total size in pool: 12.34GiB memory_limit_: 12.34GiB available size: 768B". The two
// sizes are rounded alike; the bytes available between them are exact.
TEST(TfPoolLine, XlaTotalSizeInPoolInHumanUnits) {
  const std::string pool =
      "I0000 00:00:1700000000.000001    4242 bfc_allocator.cc:1119] Total size in pool: 12.34GiB memory_limit_: "
      "12.34GiB available size: 768B curr_region_allocation_bytes_: 24.68GiB\n";
  const auto dumps = ParseTfBfcLog(pool + HumanStats(), "xla.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_TRUE(d.errors.empty());
  EXPECT_EQ(d.memory_limit, 13249974108u);
  EXPECT_EQ(d.available, 768u);
  EXPECT_EQ(d.total_region_allocated, 13249974108u - 768);
  EXPECT_EQ(d.limit, 13249974108u);
  EXPECT_EQ(d.reserved, 13249974108u - 768);
  EXPECT_EQ(d.in_use, 10 * kGiB + kGiB / 2);
  EXPECT_EQ(d.free_in_regions, 13249974108u - 768 - (10 * kGiB + kGiB / 2));
  EXPECT_FALSE(HasWarning(d.warnings, "reserved bytes not printed")) << Join(d.warnings);
  EXPECT_FALSE(HasWarning(d.warnings, "Stats Limit is")) << Join(d.warnings);
  EXPECT_TRUE(HasWarning(d.warnings, "Total size in pool 13249973340 (give or take 6417285 bytes)")) << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "xla.log");
  ASSERT_EQ(t.header.source.states.size(), 1u);
  EXPECT_EQ(t.header.source.states[0].reserved, 13249974108u - 768);
  EXPECT_EQ(t.header.source.states[0].in_use, 10 * kGiB + kGiB / 2);
  EXPECT_EQ(t.header.source.states[0].largest_free, std::nullopt);
}

}  // namespace
}  // namespace fragscope::traces
