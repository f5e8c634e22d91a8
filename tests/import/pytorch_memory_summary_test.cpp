// torch.cuda.memory_summary() tables read as states (traces/pytorch_memory_summary.hpp): exact
// numbers of a recent and an older table, several tables in one log (devices, one per step), a
// table without its title, an abbreviated one, tables cut short, numbers that cannot be read, and
// numbers no allocator prints. The tables are written by the tests (support/memory_summary_text.hpp).
#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/pytorch_memory_summary.hpp"
#include "support/memory_summary_text.hpp"

namespace {

using namespace fragscope::traces;
namespace summary = fragscope::testing::summary;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
constexpr std::uint64_t kKiB = std::uint64_t{1} << 10;

bool Mentions(const std::string& text, const std::string& needle) { return text.find(needle) != std::string::npos; }

TEST(MemorySummary, RecentTableGivesEveryCounterOfTheMoment) {
  const Trace trace = ParseMemorySummaryToTrace("step 10\n" + summary::NewTable(0, 0, 0), "run.log");
  EXPECT_EQ(trace.header.kind, EvidenceKind::kState);
  EXPECT_EQ(trace.header.source_format, "pytorch-memory-summary");
  EXPECT_EQ(trace.header.source.allocator, "PyTorch CUDA caching allocator");
  ASSERT_EQ(trace.header.devices.size(), 1u);
  EXPECT_EQ(trace.header.devices[0].name, "cuda:0");
  EXPECT_EQ(trace.header.devices[0].limit, 0u);  // a summary gives no capacity
  // No layout is invented: one marker for the moment, nothing else.
  ASSERT_EQ(trace.events.size(), 1u);
  EXPECT_EQ(trace.events[0].type, EventType::kMarker);
  EXPECT_TRUE(trace.warnings.empty());
  ASSERT_EQ(trace.header.source.states.size(), 1u);
  const StateSummary& s = trace.header.source.states[0];
  EXPECT_EQ(s.line, 3u);  // the title (line 2 is the rule above it)
  EXPECT_EQ(s.moment, "in the memory summary on line 3");
  EXPECT_EQ(s.in_use, 14324 * kMiB);
  EXPECT_EQ(s.requested, 14320 * kMiB);
  EXPECT_EQ(s.reserved, 14586 * kMiB);
  EXPECT_EQ(s.max_in_use, 14400 * kMiB);
  EXPECT_EQ(s.max_reserved, 14600 * kMiB);
  EXPECT_EQ(s.non_releasable, 267624 * kKiB);
  EXPECT_EQ(s.oom_count, 0u);
  EXPECT_EQ(s.alloc_retries, 0u);
  EXPECT_FALSE(s.limit.has_value());
  ASSERT_TRUE(s.large_pool && s.small_pool);
  EXPECT_EQ(*s.large_pool, (StateSummary::Pool{14300 * kMiB, 14560 * kMiB, 266112 * kKiB}));
  EXPECT_EQ(*s.small_pool, (StateSummary::Pool{24 * kMiB, 26 * kMiB, 1512 * kKiB}));
  EXPECT_EQ(s.size_margin, kMiB);  // MiB is the largest unit of those sizes
  EXPECT_FALSE(s.layout_complete);
  EXPECT_TRUE(Mentions(s.missing, "no segment or block list")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "rounded down to whole units, up to MiB")) << s.missing;
  EXPECT_FALSE(Mentions(s.missing, "cut")) << s.missing;
  EXPECT_FALSE(Mentions(s.missing, "Requested")) << s.missing;
}

TEST(MemorySummary, OlderTableInKilobytesWithoutTheRequestedRow) {
  const Trace trace = ParseMemorySummaryToTrace(summary::OldTable(3, 1, 1), "old.log");
  ASSERT_EQ(trace.header.source.states.size(), 1u);
  const StateSummary& s = trace.header.source.states[0];
  EXPECT_EQ(s.device, 3u);
  EXPECT_EQ(trace.header.devices[0].name, "cuda:3");
  EXPECT_EQ(s.in_use, 1062 * kMiB);  // PyTorch's "MB" is 1024-based
  EXPECT_EQ(s.reserved, 12420 * kMiB);
  EXPECT_EQ(s.non_releasable, 11357 * kMiB);
  EXPECT_EQ(s.max_in_use, 4877 * kMiB);
  EXPECT_FALSE(s.requested.has_value());
  EXPECT_EQ(s.oom_count, 1u);
  EXPECT_EQ(s.alloc_retries, 1u);
  EXPECT_EQ(s.small_pool->non_releasable, 1972 * kKiB);
  EXPECT_TRUE(Mentions(s.missing, "no Requested memory row (older PyTorch versions do not print it)")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "up to MB")) << s.missing;
}

TEST(MemorySummary, SeveralTablesAreMomentsInOrderOnePerDeviceAndStep) {
  const std::string log = summary::NewTable(0, 0, 0) + "epoch 1 done\n" + summary::OldTable(1, 2, 5) +
                          "epoch 2 done\n" + summary::NewTable(0, 1, 3);
  const Trace trace = ParseMemorySummaryToTrace(log, "steps.log");
  ASSERT_EQ(trace.header.source.states.size(), 3u);
  ASSERT_EQ(trace.header.devices.size(), 2u);
  EXPECT_EQ(trace.header.source.states[0].device, 0u);
  EXPECT_EQ(trace.header.source.states[1].device, 1u);
  EXPECT_EQ(trace.header.source.states[2].device, 0u);
  EXPECT_EQ(trace.header.source.states[1].alloc_retries, 5u);
  EXPECT_EQ(trace.header.source.states[2].oom_count, 1u);
  EXPECT_LT(trace.header.source.states[0].line, trace.header.source.states[1].line);
  EXPECT_LT(trace.header.source.states[1].line, trace.header.source.states[2].line);
  ASSERT_EQ(trace.events.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(trace.header.source.states[i].at_seq, trace.events[i].seq);
}

TEST(MemorySummary, TableWithoutItsTitleIsReadAndSaysSo) {
  // A paste that starts at the rows (the title scrolled away), each line behind a logger's prefix.
  std::string table = summary::NewTable(0, 0, 0);
  table = table.substr(table.find("|        Metric"));
  std::string prefixed;
  for (std::size_t begin = 0; begin < table.size();) {
    const std::size_t end = table.find('\n', begin);
    prefixed += "[rank0]: " + table.substr(begin, end + 1 - begin);
    begin = end + 1;
  }
  const Trace trace = ParseMemorySummaryToTrace(prefixed, "paste.txt");
  ASSERT_EQ(trace.header.source.states.size(), 1u);
  const StateSummary& s = trace.header.source.states[0];
  EXPECT_EQ(s.device, 0u);
  EXPECT_EQ(trace.header.devices[0].name, "a device its table does not name");
  EXPECT_EQ(s.in_use, 14324 * kMiB);
  EXPECT_FALSE(s.oom_count.has_value());  // its counters line went with the title
  EXPECT_TRUE(Mentions(s.missing, "its title line is not in the log")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "no OOMs / malloc retries line")) << s.missing;
}

TEST(MemorySummary, AbbreviatedTableHasNoPoolSplit) {
  std::string table = summary::NewTable(0, 0, 0);
  std::string abbreviated;
  for (std::size_t begin = 0; begin < table.size();) {
    const std::size_t end = table.find('\n', begin);
    const std::string line = table.substr(begin, end + 1 - begin);
    if (!Mentions(line, "from large pool") && !Mentions(line, "from small pool")) abbreviated += line;
    begin = end + 1;
  }
  const StateSummary s = ParseMemorySummaryToTrace(abbreviated, "a.log").header.source.states.at(0);
  EXPECT_EQ(s.reserved, 14586 * kMiB);
  EXPECT_FALSE(s.large_pool.has_value());
  EXPECT_FALSE(s.small_pool.has_value());
  EXPECT_TRUE(Mentions(s.missing, "no split by pool (an abbreviated summary)")) << s.missing;
}

TEST(MemorySummary, TableCutAfterItsFirstRowsKeepsWhatItHasAndNamesTheRest) {
  std::string table = summary::NewTable(0, 0, 0);
  table = table.substr(0, table.find("| Requested memory"));
  const Trace trace = ParseMemorySummaryToTrace(table + "Traceback (most recent call last):\n", "cut.log");
  const StateSummary& s = trace.header.source.states.at(0);
  EXPECT_EQ(s.in_use, 14324 * kMiB);
  EXPECT_FALSE(s.reserved.has_value());  // unknown, never 0
  EXPECT_FALSE(s.non_releasable.has_value());
  EXPECT_TRUE(Mentions(s.missing, "the table is cut after its Active memory row (no closing line)")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "no GPU reserved memory row")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "no Non-releasable memory row")) << s.missing;
}

TEST(MemorySummary, RowCutInTheMiddleOfACellAtTheEndOfThePaste) {
  std::string table = summary::NewTable(0, 0, 0);
  const std::size_t row = table.find("| GPU reserved memory");
  table = table.substr(0, table.find("|", table.find("|", row + 1) + 1) + 5);  // "... |  14586 MiB | 14"
  const Trace trace = ParseMemorySummaryToTrace(table, "cut.txt");
  const StateSummary& s = trace.header.source.states.at(0);
  EXPECT_EQ(s.reserved, 14586 * kMiB);
  EXPECT_FALSE(s.max_reserved.has_value());
  EXPECT_TRUE(Mentions(s.missing, "its GPU reserved memory row on line")) << s.missing;
  EXPECT_TRUE(Mentions(s.missing, "is cut after Cur Usage")) << s.missing;
}

TEST(MemorySummary, UnreadableNumberIsAnErrorNamingItsLineAndColumn) {
  std::string table = summary::NewTable(0, 0, 0);
  const std::size_t at = table.find("14586 MiB");
  table.replace(at, 9, "14x86 MiB");
  try {
    ParseMemorySummaryToTrace(table, "bad.log");
    FAIL() << "an unreadable number must be refused";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(Mentions(what, "GPU reserved memory, Cur Usage: \"14x86 MiB\" is not a size")) << what;
    EXPECT_TRUE(Mentions(what, "line 20:")) << what;
    EXPECT_EQ(e.offset(), table.rfind('\n', at) + 1);
  }
}

TEST(MemorySummary, NegativeAndOversizeNumbersAreErrors) {
  const std::string head = summary::Head(0, 0, 0) + summary::Rule('-');
  EXPECT_THROW(ParseMemorySummaryToTrace(head + summary::Row("Allocated memory", "-5 B", "0 B", "0 B", "0 B"), "n"),
               TraceError);
  try {
    ParseMemorySummaryToTrace(head + summary::Row("Allocated memory", "5000000 PiB", "0 B", "0 B", "0 B"), "o");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_TRUE(Mentions(e.what(), "size over 4 EiB")) << e.what();
  }
  EXPECT_THROW(ParseMemorySummaryToTrace(head + summary::Row("Allocations", "12 X", "0", "0", "0"), "c"), TraceError);
}

TEST(MemorySummary, NumbersNoAllocatorPrintsAreWarned) {
  std::string table = summary::NewTable(0, 0, 0);
  table.replace(table.find("267624 KiB"), 10, "967624 KiB");  // more than reserved less allocated
  const Trace trace = ParseMemorySummaryToTrace(table, "odd.log");
  ASSERT_EQ(trace.warnings.size(), 1u);
  EXPECT_TRUE(Mentions(trace.warnings[0], "odd.log:2: the memory summary's Non-releasable memory (944.95 MiB) is "
                                          "above its reserved memory less Allocated memory (262.00 MiB)"))
      << trace.warnings[0];
}

TEST(MemorySummary, OtherBackendsWordsAreTaken) {
  std::string table = summary::Head(2, 0, 0, "NPU") + summary::Rule('-') +
                      summary::Row("Allocated memory", "100 MiB", "100 MiB", "100 MiB", "0 B") + summary::Rule('-') +
                      summary::Row("NPU reserved memory", "120 MiB", "120 MiB", "120 MiB", "0 B") + summary::Rule('=');
  const Trace trace = ParseMemorySummaryToTrace(table, "npu.log");
  EXPECT_EQ(trace.header.source.allocator, "PyTorch NPU caching allocator");
  EXPECT_EQ(trace.header.devices.at(0).name, "npu:2");
  EXPECT_EQ(trace.header.source.states.at(0).reserved, 120 * kMiB);
}

TEST(MemorySummary, RecognizedOnlyWithATableRow) {
  EXPECT_TRUE(LooksLikeMemorySummary("noise\n" + summary::NewTable(0, 0, 0)));
  EXPECT_TRUE(LooksLikeMemorySummary(summary::Row("Allocated memory", "1 B", "1 B", "1 B", "0 B")));
  // A log that only mentions one, or a markdown table with other rows, is none.
  EXPECT_FALSE(LooksLikeMemorySummary("print(torch.cuda.memory_summary()) # PyTorch CUDA memory summary, device ID 0\n"));
  EXPECT_FALSE(LooksLikeMemorySummary("| Allocations | per step |\n| 12 | 3 |\n"));
  EXPECT_FALSE(LooksLikeMemorySummary(std::string("| Allocated memory |\0", 21)));
  EXPECT_THROW(ParseMemorySummaryToTrace("nothing here\n", "empty.log"), TraceError);
}

}  // namespace
