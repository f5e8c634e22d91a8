// JSON Lines: every event type and field through WriteJsonl/ReadJsonl, the exact shape of the
// lines, the streaming writer, hand-edited files, and errors that name the file and line.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/jsonl.hpp"
#include "fragscope/traces/trace_reader.hpp"
#include "fragscope/traces/trace_writer.hpp"
#include "trace_test_support.hpp"

namespace fragscope::traces {
namespace {

using testing::Describe;
using testing::TempDir;

std::string ToJsonl(const Trace& trace) {
  std::ostringstream out;
  WriteJsonl(trace, out);
  return out.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(Jsonl, RoundTripEveryTypeEveryField) {
  TempDir dir;
  for (const bool wellformed : {true, false}) {
    Trace trace = testing::RandomTrace(wellformed ? 1 : 2, 2000, wellformed);
    trace.header.alloc_conf = "backing=sim,limit=6GiB";
    trace.header.devices = {{0, "NVIDIA H200", "cuda", 150'000'000'000ull, UINT64_MAX}, {7, "ünïcödé", "sim", 0, 1}};
    trace.header.created_unix_ns = UINT64_MAX;
    trace.header.metadata = {{"a", "1"}, {"a", "2"}, {"emoji", "🔥"}};
    const std::string path = dir.File("trace.jsonl");
    WriteText(path, ToJsonl(trace));
    const Trace back = ReadJsonl(path);
    EXPECT_EQ(back.header, trace.header);
    EXPECT_EQ(Describe(back), Describe(trace));  // tags compared by name
    // And back out: the same text.
    EXPECT_EQ(ToJsonl(back), ToJsonl(trace));
  }
}

TEST(Jsonl, StreamingWriterMatchesInMemoryWriter) {
  TempDir dir;
  const Trace trace = testing::AllocatorLikeTrace(5, 20'000);
  const std::string path = dir.File("trace.fst");
  WriteTrace(trace, path, {.block_events = 777});
  TraceReader reader(path);
  std::ostringstream streamed;
  WriteJsonl(reader, streamed);
  EXPECT_EQ(streamed.str(), ToJsonl(ReadTrace(path)));
  EXPECT_EQ(streamed.str(), ToJsonl(trace));
}

TEST(Jsonl, LinesCarryOnlyTheFieldsTheirTypeUses) {
  Trace trace;
  trace.header.producer = "p";
  trace.tags = {"conv1.weight", "step 1 begin"};
  Event alloc;
  alloc.type = EventType::kAlloc;
  alloc.seq = 0;
  alloc.time_ns = 10;
  alloc.address = 0x7f0000000000;
  alloc.size = 1000;
  alloc.rounded = 1024;
  alloc.region = 0x7f0000000000;
  alloc.alloc_id = 1;
  alloc.tag = 1;
  Event free = alloc;
  free.type = EventType::kFree;
  free.seq = 1;
  free.stream = 0;
  free.tag = kNoTag;
  free.region = 0;
  Event oom;
  oom.type = EventType::kOom;
  oom.seq = 2;
  oom.device = 1;
  oom.oom = OomRecord{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, OomCause::kFragmentation};
  Event marker;
  marker.type = EventType::kMarker;
  marker.seq = 3;
  marker.tag = 2;
  Event region;
  region.type = EventType::kRegionReserve;
  region.seq = 4;
  region.address = 4096;
  region.size = 1 << 20;
  region.thread = 3;  // not a region field, but not zero: written too
  trace.events = {alloc, free, oom, marker, region};
  const std::string text = ToJsonl(trace);
  std::istringstream lines(text);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_EQ(got[0],
            R"({"type":"header","producer":"p","source_format":"","alloc_conf":"","devices":[],"created_unix_ns":0,"metadata":[]})");
  EXPECT_EQ(got[1],
            R"({"type":"alloc","seq":0,"time_ns":10,"device":0,"stream":0,"address":139637976727552,"size":1000,)"
            R"("rounded":1024,"region":139637976727552,"tag":"conv1.weight","thread":0,"alloc_id":1})");
  EXPECT_EQ(got[2],
            R"({"type":"free","seq":1,"time_ns":10,"device":0,"address":139637976727552,"size":1000,"rounded":1024,)"
            R"("alloc_id":1})");
  EXPECT_EQ(got[3],
            R"({"type":"oom","seq":2,"time_ns":0,"device":1,"stream":0,"tag":"","oom":{"request":1,"rounded":2,)"
            R"("limit":3,"reserved":4,"in_use":5,"live_requested":6,"free_in_regions":7,"largest_free":8,)"
            R"("headroom":9,"chunk_count":10,"region_count":11,"cause":"fragmentation"}})");
  EXPECT_EQ(got[4], R"({"type":"marker","seq":3,"time_ns":0,"device":0,"tag":"step 1 begin"})");
  EXPECT_EQ(got[5], R"({"type":"region_reserve","seq":4,"time_ns":0,"device":0,"address":4096,"size":1048576,"thread":3})");
  for (const auto& line : got) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
}

TEST(Jsonl, HandWrittenFileReads) {
  TempDir dir;
  const std::string path = dir.File("hand.jsonl");
  WriteText(path,
            "{\"type\":\"header\",\"producer\":\"me\",\"metadata\":{\"note\":\"edited\"}}\r\n"
            "\n"
            "{\"type\":\"alloc\",\"seq\":5,\"size\":100,\"tag\":\"weights\"}\n"
            "   \n"
            "{\"type\":\"oom\",\"seq\":6,\"oom\":{\"request\":7,\"cause\":\"request-too-large\"}}\n"
            "{\"type\":\"free\",\"seq\":7,\"size\":100,\"tag\":null}\n"
            "{\"type\":\"marker\",\"seq\":8,\"tag\":\"weights\"}\n");
  const Trace trace = ReadJsonl(path);
  EXPECT_EQ(trace.header.producer, "me");
  ASSERT_EQ(trace.header.metadata.size(), 1u);
  EXPECT_EQ(trace.header.metadata[0].second, "edited");
  ASSERT_EQ(trace.events.size(), 4u);
  EXPECT_EQ(trace.events[0].seq, 5u);
  EXPECT_EQ(trace.TagName(trace.events[0].tag), "weights");
  EXPECT_EQ(trace.events[1].oom.cause, OomCause::kRequestTooLarge);
  EXPECT_EQ(trace.events[1].oom.request, 7u);
  EXPECT_EQ(trace.events[2].tag, kNoTag);
  EXPECT_EQ(trace.events[3].tag, trace.events[0].tag);
  EXPECT_EQ(trace.tags, std::vector<std::string>{"weights"});
}

void ExpectJsonlError(const std::string& text, int line, const std::string& part) {
  TempDir dir;
  const std::string path = dir.File("bad.jsonl");
  WriteText(path, text);
  try {
    (void)ReadJsonl(path);
    FAIL() << "expected a TraceError for line " << line;
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find(fmt::format("line {}: ", line)), std::string::npos) << what;
    EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

TEST(Jsonl, ErrorsNameTheFileAndLine) {
  const std::string header = "{\"type\":\"header\"}\n";
  ExpectJsonlError(header + "{\"type\":\"alloc\",\"seq\":1,\"sise\":3}\n", 2,
                   "unknown key \"sise\" in a alloc event; valid keys: type, seq");
  ExpectJsonlError(header + "\n{\"type\":\"alloc\",\"seq\":1}\n{\"type\":\"allocate\",\"seq\":2}\n", 4,
                   "unknown event type \"allocate\"");
  ExpectJsonlError(header + "{\"type\":\"alloc\",\"seq\":-1}\n", 2, "\"seq\" must be an integer from 0 to");
  ExpectJsonlError(header + "{\"type\":\"alloc\",\"seq\":1,\"device\":4294967296}\n", 2, "\"device\" must be");
  ExpectJsonlError(header + "{\"type\":\"alloc\",\"seq\":1,\"tag\":7}\n", 2, "\"tag\" must be a string");
  ExpectJsonlError(header + "{\"type\":\"alloc\"}\n", 2, "missing \"seq\"");
  ExpectJsonlError(header + "{\"type\":\"alloc\",\"seq\":1\n", 2, "invalid JSON: column");
  ExpectJsonlError(header + "[1,2]\n", 2, "must be a JSON object");
  ExpectJsonlError(header + header, 2, "a second header line");
  ExpectJsonlError("{\"type\":\"alloc\",\"seq\":1}\n", 1, "the first line must be the header");
  ExpectJsonlError("{\"type\":\"header\",\"prodcer\":\"x\"}\n", 1, "unknown header key \"prodcer\"");
  ExpectJsonlError(header + "{\"type\":\"oom\",\"seq\":1,\"oom\":{\"cause\":\"bad luck\"}}\n", 2,
                   "unknown oom cause \"bad luck\"; valid causes: capacity, fragmentation");
  ExpectJsonlError(header + "{\"type\":\"marker\",\"seq\":1,\"oom\":{}}\n", 2, "unknown key \"oom\" in a marker event");
}

TEST(Jsonl, MissingAndEmptyFiles) {
  TempDir dir;
  EXPECT_THROW((void)ReadJsonl(dir.File("missing.jsonl")), TraceError);
  WriteText(dir.File("empty.jsonl"), "");
  try {
    (void)ReadJsonl(dir.File("empty.jsonl"));
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("no header line"), std::string::npos) << e.what();
  }
}

TEST(Jsonl, InvalidUtf8InTagsBecomesReplacementCharacters) {
  Trace trace;
  trace.tags = {std::string("bad \xff\xfe bytes")};
  Event e;
  e.type = EventType::kMarker;
  e.tag = 1;
  trace.events = {e};
  const std::string text = ToJsonl(trace);
  EXPECT_NE(text.find("bad \xef\xbf\xbd\xef\xbf\xbd bytes"), std::string::npos) << text;
}

}  // namespace
}  // namespace fragscope::traces
