// RMM logs of other versions than the logging_resource_adaptor rows of rmm_csv_test.cpp: the
// form RMM's documentation shows (Time in seconds since the epoch, the action "deallocate"), and
// RMM 0.x's own csv_log (Event Type, Device ID, …, Location), with its devices, its null-address
// failures, its frees without a size, its Total Memory as the device's capacity, and the errors
// that name the line and the column. Short logs in the formats' shape, written here.
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/rmm_csv.hpp"

namespace fragscope::traces {
namespace {

std::string ErrorOf(const std::string& text) {
  try {
    ParseRmmCsv(text, "bad.csv");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "no error";
}

bool Has(const std::vector<std::string>& warnings, const std::string& text) {
  for (const std::string& w : warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

std::string Metadata(const Trace& t, const std::string& key) {
  for (const auto& [k, v] : t.header.metadata)
    if (k == key) return v;
  return "";
}

TEST(RmmCsvVersions, EpochSecondsAndDeallocateAsRmmsDocumentationShowsThem) {
  const Trace t = ParseRmmCsv(
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "7,1700000000.000100,allocate,0x7f0000000000,1000,0x0\n"
      "7,1700000000.000350,allocate,0x7f0000000400,2048,0x5\n"
      "7,1700000000.001000,deallocate,0x7f0000000000,1000,0x0\n"
      "7,1700000000.002000,allocate failure,0x0,4096,0x0\n",
      "doc.csv");
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[0].time_ns, 0u);
  EXPECT_EQ(t.events[1].time_ns, 250'000u);
  EXPECT_EQ(t.events[1].stream, 5u);
  const Event& free = t.events[2];
  EXPECT_EQ(free.type, EventType::kFree);
  EXPECT_EQ(free.alloc_id, t.events[0].alloc_id);
  EXPECT_EQ(free.size, 1000u);
  EXPECT_EQ(free.time_ns, 900'000u);
  const Event& oom = t.events[3];
  EXPECT_EQ(oom.type, EventType::kOom);
  EXPECT_EQ(oom.time_ns, 1'900'000u);
  EXPECT_EQ(oom.oom.request, 4096u);
  EXPECT_EQ(oom.oom.in_use, 2048u);
  EXPECT_EQ(oom.oom.cause, OomCause::kUnknown);
  EXPECT_EQ(Metadata(t, "rmm.first_time"), "1700000000.000100");
  // A time that is neither is still an error naming the line.
  EXPECT_NE(ErrorOf("Thread,Time,Action,Pointer,Size,Stream\n7,17000x,allocate,0x100,256,0x0\n")
                .find("line 2: bad time \"17000x\" (expected HH:MM:SS.ffffff or seconds since the epoch)"),
            std::string::npos);
}

// rmm.csv_log() printed at the end of a script, between the script's own output: two devices, a
// free with no size, a path with a comma, and an Alloc that threw (a null Address with a Size).
const char* const kV0 =
    "loading model\n"
    "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed,"
    "Location\n"
    "Alloc,0,0x7f0000000000,0,1000,15000000000,16000000000,1,1.5,1.50002,2e-05,/app/model.py:10\n"
    "Alloc,1,0x7f1000000000,0x55d0c0a0,4096,0,0,2,1.6,1.60001,1e-05,/app/model.py:11\n"
    "Free,0,0x7f0000000000,0,0,0,0,1,2.25,2.25001,1e-05,/app/model.py:12\n"
    "Alloc,0,0,0,20000000000,900000000,16000000000,2,3,3.00004,4e-05,/app/model, v2.py:13\n"
    ">>> done\n";

TEST(RmmCsvVersions, Rmm0xCsvLog) {
  EXPECT_TRUE(LooksLikeRmmCsv(kV0));
  const Trace t = ParseRmmCsv(kV0, "v0.csv");
  EXPECT_EQ(t.header.source_format, "rmm-csv");
  EXPECT_EQ(t.header.producer, "RAPIDS RMM 0.x rmm::Logger (csv_log)");
  ASSERT_EQ(t.header.devices.size(), 2u);
  EXPECT_EQ(t.header.devices[0].name, "RMM device 0");
  EXPECT_EQ(t.header.devices[0].capacity, 16000000000u);  // its Total Memory
  EXPECT_EQ(t.header.devices[1].index, 1u);
  EXPECT_EQ(t.header.devices[1].capacity, 0u);  // never measured: unknown
  ASSERT_EQ(t.events.size(), 4u);
  const Event& a = t.events[0];
  EXPECT_EQ(a.type, EventType::kAlloc);
  EXPECT_EQ(a.device, 0u);
  EXPECT_EQ(a.size, 1000u);
  EXPECT_EQ(a.rounded, 1024u);
  EXPECT_EQ(a.time_ns, 0u);  // End, from the first row
  ASSERT_NE(a.tag, kNoTag);
  EXPECT_EQ(t.tags[a.tag - 1], "/app/model.py:10");
  const Event& b = t.events[1];
  EXPECT_EQ(b.device, 1u);
  EXPECT_EQ(b.stream, 0x55d0c0a0u);
  EXPECT_EQ(b.time_ns, 99'990'000u);  // 1.60001 - 1.50002 s
  const Event& f = t.events[2];
  EXPECT_EQ(f.type, EventType::kFree);
  EXPECT_EQ(f.alloc_id, a.alloc_id);
  EXPECT_EQ(f.size, 1000u);  // logged as 0: the allocation's size
  EXPECT_EQ(f.time_ns, 749'990'000u);
  const Event& oom = t.events[3];
  EXPECT_EQ(oom.type, EventType::kOom);
  EXPECT_EQ(oom.device, 0u);
  EXPECT_EQ(oom.oom.request, 20000000000u);
  EXPECT_EQ(oom.oom.in_use, 0u);
  EXPECT_EQ(oom.oom.present, kOomRequest | kOomRounded | kOomInUse | kOomLiveRequested | kOomLimit);
  EXPECT_EQ(oom.oom.limit, 16000000000u);
  EXPECT_EQ(oom.oom.cause, OomCause::kRequestTooLarge);  // 20 GB on a 16 GB device
  EXPECT_EQ(t.tags[oom.tag - 1], "/app/model, v2.py:13");
  EXPECT_TRUE(Has(t.warnings, "v0.csv: 1 lines before the RMM 0.x log skipped (other output; the first on line 1)"));
  EXPECT_TRUE(Has(t.warnings, "v0.csv: 1 lines after the RMM 0.x log not read (the first on line 7)"));
  // What the writer makes of it reads back with the same events (sizes of frees filled in).
  std::ostringstream out;
  WriteRmmCsv(t, out);
  const Trace again = ParseRmmCsv(out.str(), "again.csv");
  ASSERT_EQ(again.events.size(), 4u);
  EXPECT_EQ(again.events[2].size, 1000u);
  EXPECT_EQ(again.events[3].oom.request, 20000000000u);
}

// The first 0.x versions print no Location; usage logging off (the default) leaves the memory
// columns 0: no capacity, and a failure's cause unknown. With Total Memory, a failure that fits in
// it is unknown too (another process, the pool, fragmentation), one that does not is capacity.
TEST(RmmCsvVersions, Rmm0xWithoutLocationAndTheCauseOfItsFailures) {
  const std::string head =
      "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed\n";
  Trace t = ParseRmmCsv(head +
                            "Alloc,0,0x7f0000000000,0,6000,0,0,1,0.5,0.5,0\n"
                            "Alloc,0,0,0,8192,0,0,1,0.75,0.75,0\n",
                        "old.csv");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.header.devices[0].capacity, 0u);
  EXPECT_EQ(t.events[1].oom.present, kOomRequest | kOomRounded | kOomInUse | kOomLiveRequested);
  EXPECT_EQ(t.events[1].oom.in_use, 6144u);
  EXPECT_EQ(t.events[1].oom.cause, OomCause::kUnknown);
  EXPECT_TRUE(Has(t.warnings, "old.csv:3: allocate failure: an RMM log has no limit"));

  t = ParseRmmCsv(head +
                      "Alloc,0,0x7f0000000000,0,6000,10000,16384,1,0.5,0.5,0\n"
                      "Alloc,0,0,0,8192,2000,16384,1,0.75,0.75,0\n"
                      "Alloc,0,0,0,12288,2000,16384,1,0.8,0.8,0\n",
                  "total.csv");
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_EQ(t.events[1].oom.cause, OomCause::kUnknown);  // 6144 + 8192 <= 16384
  EXPECT_TRUE(Has(t.warnings, "total.csv:3: allocation failure: the live allocations (6144 bytes) and the request "
                              "(8192 bytes) fit in the device's 16384 bytes of total memory (2000 free when RMM "
                              "measured it after the failure): another process, the pool's own reserve or "
                              "fragmentation, which the log cannot tell apart (cause unknown)"));
  EXPECT_EQ(t.events[2].oom.cause, OomCause::kCapacity);  // 6144 + 12288 > 16384
}

// rmm 0.x's realloc logs the new block only: at the same address it replaces that block; elsewhere
// the block it replaced is unknown (a warning).
TEST(RmmCsvVersions, Rmm0xRealloc) {
  const Trace t = ParseRmmCsv(
      "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed\n"
      "Alloc,0,0x1000,0,256,0,0,1,0,0,0\n"
      "Realloc,0,0x1000,0,512,0,0,1,0,0,0\n"
      "Realloc,0,0x9000,0,1024,0,0,1,0,0,0\n",
      "re.csv");
  ASSERT_EQ(t.events.size(), 4u);
  EXPECT_EQ(t.events[1].type, EventType::kFree);
  EXPECT_EQ(t.events[1].alloc_id, t.events[0].alloc_id);
  EXPECT_EQ(t.events[1].size, 256u);
  EXPECT_EQ(t.events[2].type, EventType::kAlloc);
  EXPECT_EQ(t.events[2].size, 512u);
  EXPECT_EQ(t.events[3].size, 1024u);
  EXPECT_TRUE(Has(t.warnings, "re.csv:4: a Realloc row names only the new block"));
}

TEST(RmmCsvVersions, Rmm0xErrorsNameTheLineAndTheColumn) {
  const std::string head =
      "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,Elapsed\n";
  EXPECT_NE(ErrorOf("Event Type,Device ID,Pointer,Size (bytes)\nAlloc,0,0x1,1\n")
                .find("bad.csv: at byte 0: line 1: column 3 of the RMM 0.x header: unknown column \"Pointer\""),
            std::string::npos)
      << ErrorOf("Event Type,Device ID,Pointer,Size (bytes)\n");
  EXPECT_NE(ErrorOf("Event Type,Address\nAlloc,0x1\n").find("line 1: the RMM 0.x header has no \"Size (bytes)\" column"),
            std::string::npos);
  const std::string bad_size = head + "Alloc,0,0x1000,0,12x,0,0,1,0,0,0\n";
  EXPECT_NE(ErrorOf(bad_size).find("line 2: column 5 (Size (bytes)): \"12x\" is not a decimal number"),
            std::string::npos)
      << ErrorOf(bad_size);
  EXPECT_NE(ErrorOf(head + "Alloc,0,0x1000,0,256,0,0,1,0,soon,0\n")
                .find("line 2: column 10 (End): \"soon\" is not a number of seconds"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "Resize,0,0x1000,0,256,0,0,1,0,0,0\n")
                .find("line 2: column 1 (Event Type): \"Resize\" is not an event type (Alloc, Free or Realloc)"),
            std::string::npos);
  EXPECT_NE(ErrorOf(head + "Alloc,0,0x1000,0,256\n").find("line 2: 5 fields, expected 11 (the header's columns)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("output\n" + head).find("bad.csv: at byte 7: line 2: the RMM 0.x header is followed by no row"),
            std::string::npos)
      << ErrorOf("output\n" + head);
  // A cut last line (no line end: the print was cut) is left out with a warning.
  const Trace t = ParseRmmCsv(head + "Alloc,0,0x1000,0,256,0,0,1,0,0,0\nFree,0,0x10", "cut.csv");
  EXPECT_EQ(t.events.size(), 1u);
  EXPECT_TRUE(Has(t.warnings, "cut.csv:3: the last line is cut short (\"Free,0,0x10\": 3 fields, expected 11"));
}

}  // namespace
}  // namespace fragscope::traces
