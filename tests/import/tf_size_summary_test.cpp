// TensorFlow's "Summary of in-use Chunks by size" ("7499 Chunks of size 2048 totalling 14.65MiB"),
// pasted alone (quoted with "> ", with or without the log prefix) or inside a dump: a fragment of a
// dump whose in-use bytes are at least the listed sum (exactly it where its "Sum Total" line agrees),
// with no layout; inside a dump, a cross-check of the chunk list. The fixtures are made up in the
// style of TensorFlow 0.11 - 2.x output.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::HasWarning;
using testing::Join;

// 40 x 256 + 3210 x 4096 + 7 x 1 MiB = 20,498,432 bytes in 3,257 chunks.
std::string Summary(const std::string& quote) {
  const std::string p = quote + "I tensorflow/core/common_runtime/bfc_allocator.cc:692] ";
  return quote + "I tensorflow/core/common_runtime/bfc_allocator.cc:689]      Summary of in-use Chunks by size: \n" +
         p + "40 Chunks of size 256 totalling 10.0KiB\n" + p + "3210 Chunks of size 4096 totalling 12.54MiB\n" + p +
         "7 Chunks of size 1048576 totalling 7.00MiB\n";
}

TEST(TfSizeSummary, APasteOfTheSummaryAloneIsAFragment) {
  for (const std::string quote : {"> ", "", "2016-10-25 10:00:00.000001: "}) {
    SCOPED_TRACE(quote);
    const std::string text = Summary(quote);
    EXPECT_TRUE(LooksLikeTfBfcLog(text));
    const auto dumps = ParseTfBfcLog(text, "s.log");
    ASSERT_EQ(dumps.size(), 1u);
    const TfBfcDump& d = dumps[0];
    EXPECT_TRUE(d.errors.empty());
    EXPECT_FALSE(d.has_header);
    EXPECT_EQ(d.line, 2u);
    EXPECT_EQ(d.summary_lines, 3u);
    EXPECT_EQ(d.summary_chunks, 3257u);
    EXPECT_EQ(d.summary_in_use, 20498432u);
    EXPECT_EQ(d.in_use, 20498432u);
    EXPECT_TRUE(d.chunks.empty());
    EXPECT_TRUE(HasWarning(d.warnings, "only the summary of in-use chunks by size survived")) << Join(d.warnings);
    const Trace t = ParseTfBfcLogToTrace(text, "s.log");  // not refused
    EXPECT_EQ(t.header.kind, EvidenceKind::kState);
    ASSERT_EQ(t.header.source.states.size(), 1u);
    const StateSummary& s = t.header.source.states[0];
    EXPECT_EQ(s.in_use, 20498432u);
    EXPECT_TRUE(s.in_use_at_least);  // the paste may be cut
    EXPECT_FALSE(s.layout_complete);
    EXPECT_EQ(s.reserved, std::nullopt);
    EXPECT_EQ(s.largest_free, std::nullopt);
    EXPECT_NE(s.missing.find("only its summary of in-use chunks by size counts 3257 chunks in 3 sizes, 19.55 MiB in "
                             "use at least (no \"Sum Total\" line says the list is whole)"),
              std::string::npos)
        << s.missing;
    for (const Event& e : t.events) EXPECT_NE(e.type, EventType::kOom);
  }
}

// Its "Sum Total" line agrees (to its 2 decimals): the list is whole and in use is exact.
TEST(TfSizeSummary, AnAgreeingSumTotalMakesItWhole) {
  const std::string text =
      Summary("") + "I tensorflow/core/common_runtime/bfc_allocator.cc:695] Sum Total of in-use chunks: 19.55MiB\n";
  const auto dumps = ParseTfBfcLog(text, "s.log");
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].summary_total, 20499661u);  // 19.55 MiB as printed
  EXPECT_EQ(dumps[0].in_use, 20498432u);
  const Trace t = TfBfcDumpsToTrace(dumps, "s.log");
  const StateSummary& s = t.header.source.states[0];
  EXPECT_EQ(s.in_use, 20498432u);
  EXPECT_FALSE(s.in_use_at_least);
  EXPECT_NE(s.missing.find("(its \"Sum Total\" agrees: all of them)"), std::string::npos) << s.missing;
  // A total that says more: the paste was cut.
  const std::string cut = Summary("") + "I bfc_allocator.cc:695] Sum Total of in-use chunks: 6.66GiB\n";
  const Trace ct = ParseTfBfcLogToTrace(cut, "c.log");
  EXPECT_TRUE(ct.header.source.states[0].in_use_at_least);
  EXPECT_NE(ct.header.source.states[0].missing.find("(its \"Sum Total\" says 6.66 GiB: the list is cut)"),
            std::string::npos)
      << ct.header.source.states[0].missing;
}

// Inside a dump whose chunk list was cut (no Stats block): the summary counts more in use than the
// chunks listed, so in use is at least the summary's sum and the layout is incomplete.
TEST(TfSizeSummary, ASummaryBeyondTheChunkListMeansTheListIsCut) {
  const std::string text =
      "I bfc_allocator.cc:1031] InUse at 7f0000000000 of size 256 next 1\n"
      "I bfc_allocator.cc:1036]      Summary of in-use Chunks by size: \n"
      "I bfc_allocator.cc:1039] 2 Chunks of size 256 totalling 512B\n"
      "I bfc_allocator.cc:1039] 1 Chunks of size 1048576 totalling 1.00MiB\n";
  const auto dumps = ParseTfBfcLog(text, "cut.log");
  ASSERT_EQ(dumps.size(), 1u);
  const TfBfcDump& d = dumps[0];
  EXPECT_EQ(d.listed_in_use, 256u);
  EXPECT_EQ(d.summary_in_use, 1049088u);
  EXPECT_TRUE(d.from_stats);
  EXPECT_EQ(d.in_use, 1049088u);
  EXPECT_TRUE(HasWarning(d.warnings, "1049088 in use in its summary by size")) << Join(d.warnings);
  const Trace t = TfBfcDumpsToTrace(dumps, "cut.log");
  const StateSummary& s = t.header.source.states[0];
  EXPECT_EQ(s.in_use, 1049088u);
  EXPECT_TRUE(s.in_use_at_least);
  EXPECT_FALSE(s.layout_complete);

  // A whole dump's summary agrees with its chunks and Stats: nothing to say.
  const std::string whole =
      "I bfc_allocator.cc:1031] InUse at 7f0000000000 of size 256 next 1\n"
      "I bfc_allocator.cc:1031] InUse at 7f0000000100 of size 1048576 next 2\n"
      "I bfc_allocator.cc:1039] 1 Chunks of size 256 totalling 256B\n"
      "I bfc_allocator.cc:1039] 1 Chunks of size 1048576 totalling 1.00MiB\n"
      "I bfc_allocator.cc:1040] Sum Total of in-use chunks: 1.00MiB\n"
      "I bfc_allocator.cc:1045] Stats: \n"
      "Limit:                  2097152\n"
      "InUse:                  1048832\n";
  const auto w = ParseTfBfcLog(whole, "whole.log");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_FALSE(w[0].from_stats);
  EXPECT_FALSE(HasWarning(w[0].warnings, "summary")) << Join(w[0].warnings);
  // One that says more than Stats InUse disagrees.
  std::string more = whole;
  const std::string in_use = "InUse:                  1048832";
  more.replace(more.find(in_use), in_use.size(), "InUse:                  1000");
  const auto m = ParseTfBfcLog(more, "more.log");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(HasWarning(m[0].warnings, "the \"Chunks of size\" summary lines add up to 1048832 in use but Stats "
                                        "InUse is 1000"))
      << Join(m[0].warnings);
}

TEST(TfSizeSummary, ImpossibleLinesAndSizesListedTwice) {
  // A count or size that cannot be taken leaves the line out, with a warning.
  const auto bad = ParseTfBfcLog("I x.cc:692] -5 Chunks of size 256 totalling 1.2KiB\n"
                                 "I x.cc:692] 2 Chunks of size 4611686018427387904 totalling 8.00EiB\n"
                                 "I x.cc:692] 3 Chunks of size 512 totalling 1.5KiB\n",
                                 "bad.log");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].errors.empty());
  EXPECT_TRUE(HasWarning(bad[0].warnings, "bad.log:1: a \"Chunks of size\" summary line: the count -5 is negative, not "
                                          "a count: left out"))
      << Join(bad[0].warnings);
  EXPECT_TRUE(HasWarning(bad[0].warnings, "bad.log:2: a \"Chunks of size\" summary line: 2 chunks of "
                                          "4611686018427387904 bytes: 9223372036854775808 bytes is more than 4 EiB"))
      << Join(bad[0].warnings);
  EXPECT_EQ(bad[0].summary_in_use, 1536u);
  // Lines that each fit but add up to more than 4 EiB: the state would be meaningless.
  const std::string sum = "I x.cc:692] 1 Chunks of size 4611686018427387904 totalling 4.00EiB\n"
                          "I x.cc:692] 1 Chunks of size 256 totalling 256B\n";
  const auto over = ParseTfBfcLog(sum, "sum.log");
  ASSERT_EQ(over.size(), 1u);
  ASSERT_EQ(over[0].errors.size(), 1u);
  EXPECT_NE(over[0].errors[0].message.find("the \"Chunks of size\" summary lines add up to more than 4 EiB"),
            std::string::npos);
  EXPECT_THROW(ParseTfBfcLogToTrace(sum, "sum.log"), TraceError);
  // The same size twice: the summaries of two dumps.
  const auto twice = ParseTfBfcLog(Summary("") + Summary(""), "twice.log");
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_EQ(twice[0].summary_in_use, 20498432u);
  EXPECT_EQ(twice[1].summary_in_use, 20498432u);
}

}  // namespace
}  // namespace fragscope::traces
