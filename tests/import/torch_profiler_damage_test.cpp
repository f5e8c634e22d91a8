// torch.profiler traces that are not strictly valid JSON, as real exporters leave them: a raw
// control character in a name (pytorch/pytorch#130622), a byte that is not UTF-8 (pytorch/kineto#80),
// a trailing comma, a file cut while it was written (plain or gzip). Each costs a warning that names
// the byte, never the trace; malformed JSON elsewhere stays an error naming its byte. And a trace
// that had memory profiling on but no allocation in its window says so.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/torch_profiler.hpp"
#include "torch_profiler_fixtures.hpp"

namespace fragscope::traces {
namespace {

using profiler_fixtures::MemoryEvent;
using profiler_fixtures::Span;

// aten::empty allocates 1 MiB at 0x1000 on cuda:0, aten::add 512 B at 0x2000; the first is freed.
std::string Good(const std::string& empty_name = "aten::empty") {
  return profiler_fixtures::Trace({Span(empty_name, 100, 10), MemoryEvent(101, 1 << 20, 1, 0, 0x1000),
                                   Span("aten::add", 120, 10), MemoryEvent(121, 512, 1, 0, 0x2000),
                                   MemoryEvent(130, -(1 << 20), 1, 0, 0x1000)});
}

std::string Error(const std::string& text) {
  try {
    (void)ParseTorchProfilerTrace(text, "p.json");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

std::vector<std::string> Tags(const Trace& t) {
  std::vector<std::string> tags;
  for (const Event& e : t.events) {
    if (e.type == EventType::kAlloc) tags.push_back(t.TagName(e.tag));
  }
  return tags;
}

TEST(TorchProfilerDamage, RawControlCharacterInANameIsReplacedWithASpace) {
  const std::string text = Good("aten::\tempty");
  const std::size_t tab = text.find('\t');
  const Trace t = ParseTorchProfilerTrace(text, "tab.json");
  EXPECT_EQ(Tags(t), (std::vector<std::string>{"aten:: empty", "aten::add"}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], fmt::format("tab.json: the JSON is not strictly valid; to read it, 1 byte was replaced (1 raw "
                                       "control character in a string; the first at byte {}): names with them read "
                                       "differently", tab));
}

TEST(TorchProfilerDamage, BytesThatAreNotUtf8AndBadEscapesAreReplaced) {
  // Latin-1 "é" (0xE9) and a cut UTF-8 sequence (0xE2 0x82 without its last byte), then "\q".
  const Trace t = ParseTorchProfilerTrace(Good("caf\xE9::\xE2\x82::\\q"), "latin1.json");
  EXPECT_EQ(Tags(t), (std::vector<std::string>{"caf?::??::?q", "aten::add"}));
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("4 bytes were replaced (3 bytes that are not UTF-8, 1 backslash that starts no valid "
                               "escape; the first at byte"),
            std::string::npos)
      << t.warnings[0];
  // Well-formed UTF-8 and escapes stay as they are.
  const Trace ok = ParseTorchProfilerTrace(Good("\xC3\xA9\\u00e9\\ud83d\\ude00\\t"), "ok.json");
  EXPECT_EQ(Tags(ok)[0], "\xC3\xA9\xC3\xA9\xF0\x9F\x98\x80\t");
  EXPECT_TRUE(ok.warnings.empty());
}

TEST(TorchProfilerDamage, TrailingCommasAreDropped) {
  std::string text = Good();
  text.replace(text.rfind("\n  ]"), 0, ",");  // },\n  ]
  const Trace t = ParseTorchProfilerTrace(text, "comma.json");
  EXPECT_EQ(t.events.size(), 3u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find("1 trailing comma;"), std::string::npos) << t.warnings[0];
}

TEST(TorchProfilerDamage, ACutTraceKeepsTheEventsBeforeTheCut) {
  const std::string text = Good();
  // Cut inside the free (the last event): the two allocations are read.
  const std::size_t cut = text.find("\"Bytes\": -");
  const Trace t = ParseTorchProfilerTrace(text.substr(0, cut), "cut.json");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].address, 0x2000u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], fmt::format("cut.json: the JSON breaks off at byte {0} of {0} before it is complete (cut "
                                       "while it was written?): the 2 memory events before the cut are read, any "
                                       "after it are lost", cut));
  // A file the writer had made longer than what it wrote: zero bytes after the cut.
  const Trace padded = ParseTorchProfilerTrace(text.substr(0, cut) + std::string(4096, '\0'), "padded.json");
  EXPECT_EQ(padded.events.size(), 2u);
  ASSERT_EQ(padded.warnings.size(), 1u);
  EXPECT_NE(padded.warnings[0].find(fmt::format("breaks off at byte {} of {}", cut, cut + 4096)), std::string::npos)
      << padded.warnings[0];
  // Every cut: an error naming the byte where nothing was read yet, else the events before it.
  for (std::size_t n = 0; n < text.size(); ++n) {
    try {
      const Trace part = ParseTorchProfilerTrace(text.substr(0, n), "cut.json");
      EXPECT_LE(part.events.size(), 3u) << n;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("cut.json"), std::string::npos) << n;
    }
  }
}

TEST(TorchProfilerDamage, ACutGzipTraceKeepsTheEventsBeforeTheCut) {
  std::string big;
  std::vector<std::string> events;
  for (int i = 0; i < 2000; ++i) events.push_back(MemoryEvent(i, 512, 1, 0, 0x1000 + 512 * static_cast<std::uint64_t>(i)));
  const std::string gz = profiler_fixtures::Gzip(profiler_fixtures::Trace(events));
  const Trace t = ParseTorchProfilerTrace(gz.substr(0, gz.size() / 2), "cut.json.gz");
  EXPECT_GT(t.events.size(), 100u);
  EXPECT_LT(t.events.size(), 2000u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_NE(t.warnings[0].find(fmt::format("cut.json.gz: the gzip data ends after {} compressed bytes; the JSON breaks "
                                           "off at byte", gz.size() / 2)),
            std::string::npos)
      << t.warnings[0];
}

TEST(TorchProfilerDamage, MalformedJsonBeforeTheEndStaysAnErrorNamingTheByte) {
  std::string text = Good();
  const std::size_t at = text.find("\"ph\"", text.find("aten::add"));
  text.insert(at, "@");
  EXPECT_NE(Error(text).find(fmt::format("p.json: at byte {}: not a Chrome trace JSON", at)), std::string::npos)
      << Error(text);
  EXPECT_NE(Error("").find("p.json"), std::string::npos);
  EXPECT_NE(Error(std::string(100, '\0')).find("not a Chrome trace JSON"), std::string::npos);
}

TEST(TorchProfilerDamage, MemoryProfilingOnButNoAllocationInTheWindow) {
  const std::string on = profiler_fixtures::Trace({Span("aten::mm", 1, 2)}, R"("schemaVersion": 1, "profile_memory": 1)");
  EXPECT_NE(Error(on).find("p.json: memory profiling was on (profile_memory=True) but no allocation or free happened "
                           "inside the profiled window"),
            std::string::npos)
      << Error(on);
  const std::string in_args = profiler_fixtures::Trace(
      {R"({"ph": "X", "name": "PyTorch Profiler", "ts": 0, "dur": 9, "args": {"profile_memory": true}})"});
  EXPECT_NE(Error(in_args).find("memory profiling was on"), std::string::npos) << Error(in_args);
  const std::string off = profiler_fixtures::Trace({Span("aten::mm", 1, 2)}, R"("schemaVersion": 1, "profile_memory": 0)");
  EXPECT_NE(Error(off).find("profile with torch.profiler.profile(profile_memory=True)"), std::string::npos) << Error(off);
}

}  // namespace
}  // namespace fragscope::traces
