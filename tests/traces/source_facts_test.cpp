// The evidence kind and the typed source facts of a trace header survive .fst and JSON Lines, and
// traces converted before they existed (facts as "allocator_settings." and
// "pytorch.cuda:N.before_recording." metadata keys) read back as the same typed facts.
#include <sstream>

#include <gtest/gtest.h>

#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::TempDir;

TraceHeader StateHeader() {
  TraceHeader h;
  h.producer = "TensorFlow BFC allocator log";
  h.source_format = "tensorflow-bfc-log";
  h.devices = {{0, "GPU_0_bfc", "tensorflow", 0, 3'500'000'000}};
  h.metadata = {{"source", "dump.log"}};
  h.kind = EvidenceKind::kState;
  h.source.allocator = "TensorFlow BFC allocator";
  h.source.settings = {{"allow_growth", "true"}, {"allow_growth", "repeated"}};
  h.source.rounding = 256;
  h.source.reconstructed_events = 34;
  h.source.before_recording = {{3, 31, 8'781'824, 8'771'952}, {4, 2, 1'000'000, 1'000'000, false}};
  h.source.reserved_without_layout = {4, 7};
  StateSummary s;
  s.device = 0;
  s.moment = "at the OOM on line 412";
  s.at_seq = 17;
  s.in_use = 568'350'976;
  s.limit = 568'351'129;
  s.largest_free = 0;
  s.in_use_at_least = true;
  s.free_at_least = 1'047'040;
  s.layout_complete = false;
  s.requested_known = false;
  s.missing = "the chunk list was cut after 12 chunks";
  StateSummary t;
  t.device = 1;
  t.moment = "when the snapshot was taken";
  h.source.states = {s, t};
  return h;
}

TEST(SourceFacts, SurviveFstAndJsonLines) {
  TempDir dir;
  Trace trace;
  trace.header = StateHeader();
  const std::string fst = dir.File("state.fst");
  WriteTrace(trace, fst);
  const Trace back = ReadTrace(fst);
  EXPECT_EQ(back.header, trace.header);
  EXPECT_EQ(back.header.source.states[0].requested, std::nullopt);  // absent stays absent
  EXPECT_EQ(back.header.source.states[0].largest_free, std::optional<std::uint64_t>(0));  // 0 is a number
  EXPECT_TRUE(back.header.source.states[0].in_use_at_least);
  EXPECT_EQ(back.header.source.states[0].free_at_least, std::optional<std::uint64_t>(1'047'040));
  EXPECT_FALSE(back.header.source.states[1].in_use_at_least);
  EXPECT_EQ(back.header.source.states[1].free_at_least, std::nullopt);
  EXPECT_FALSE(back.header.source.states[0].requested_known);  // written only when false
  EXPECT_TRUE(back.header.source.states[1].requested_known);

  std::ostringstream jsonl;
  WriteJsonl(trace, jsonl);
  const Trace from_jsonl = ParseJsonl(jsonl.str(), "state.jsonl");
  EXPECT_EQ(from_jsonl.header, trace.header);
}

TEST(SourceFacts, NativeHistoryHeaderIsWrittenAsBefore) {
  // A fragscope trace has no source facts and is a history: its header JSON has no new keys.
  Trace trace;
  trace.header.producer = "p";
  std::ostringstream jsonl;
  WriteJsonl(trace, jsonl);
  EXPECT_EQ(jsonl.str().find("\"kind\""), std::string::npos) << jsonl.str();
  EXPECT_EQ(jsonl.str().find("\"source\""), std::string::npos) << jsonl.str();
}

TEST(SourceFacts, LegacyMetadataBecomesTypedFacts) {
  const std::string text =
      R"({"type":"header","producer":"PyTorch memory snapshot","source_format":"pytorch-snapshot",)"
      R"("metadata":[["allocator_settings.expandable_segments","True"],["pytorch.block_format","torch 2.0 block history"],)"
      R"(["pytorch.cuda:0.before_recording.blocks","31"],["pytorch.cuda:0.before_recording.bytes","8781824"],)"
      R"(["pytorch.cuda:0.before_recording.requested","8771952"],["pytorch.cuda:2.before_recording.blocks","x"]]})"
      "\n";
  const Trace trace = ParseJsonl(text, "old.jsonl");
  const SourceFacts& facts = trace.header.source;
  EXPECT_EQ(facts.allocator, "PyTorch CUDA caching allocator");
  ASSERT_NE(facts.Setting("expandable_segments"), nullptr);
  EXPECT_EQ(*facts.Setting("expandable_segments"), "True");
  ASSERT_NE(facts.BeforeRecording(0), nullptr);
  EXPECT_EQ(*facts.BeforeRecording(0), (BlocksBeforeRecording{0, 31, 8'781'824, 8'771'952}));
  EXPECT_EQ(facts.BeforeRecording(2), nullptr);
  // Keys that are not facts, or do not parse, stay metadata for people.
  const std::vector<std::pair<std::string, std::string>> kept = {
      {"pytorch.block_format", "torch 2.0 block history"}, {"pytorch.cuda:2.before_recording.blocks", "x"}};
  EXPECT_EQ(trace.header.metadata, kept);
}

TEST(SourceFacts, BadValuesNameTheKey) {
  const auto error = [](const std::string& header) -> std::string {
    try {
      (void)ParseJsonl(R"({"type":"header",)" + header + "}\n", "bad.jsonl");
    } catch (const TraceError& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error(R"("kind":"moment")").find("\"kind\" must be \"history\", \"state\" or \"message\""),
            std::string::npos);
  EXPECT_NE(error(R"("source":[])").find("\"source\" must be an object"), std::string::npos);
  EXPECT_NE(error(R"("source":{"states":[{"in_use":-1}]})").find("\"in_use\" must be an integer"),
            std::string::npos);
  EXPECT_NE(error(R"("source":{"states":[{"layout_complete":"yes"}]})").find("\"layout_complete\" must be true or false"),
            std::string::npos);
  EXPECT_NE(error(R"("source":{"states":[{"requested_known":1}]})")
                .find("header: source: state: \"requested_known\" must be true or false"),
            std::string::npos);
  // JSON Lines is edited by hand: a misspelt key is refused, not ignored.
  EXPECT_NE(error(R"("source":{"rouding":1})").find("unknown key \"rouding\"; valid keys: allocator, settings, rounding"),
            std::string::npos);
}

}  // namespace
}  // namespace fragscope::traces
