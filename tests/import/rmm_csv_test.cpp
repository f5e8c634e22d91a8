// RAPIDS RMM logging_resource_adaptor CSV: both pointer styles (fmt "0x..." and printf "%llx"),
// allocate failure as an OOM with the state at the failure, frees of unknown pointers, midnight,
// errors that name file and line, detection, and the writer's round trip.
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/traces/rmm_csv.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

const char* const kLog =
    "Thread,Time,Action,Pointer,Size,Stream\n"
    "139872551270208,23:59:59.999000,allocate,0x7f2c4c000000,1000,0x0\n"
    "139872551270208,23:59:59.999500,allocate,7f2c4c000400,4096,5586a8e0\n"
    "42,00:00:00.000250,free,0x7f2c4c000000,1000,0x0\n"
    "42,00:00:00.001000,allocate failure,0x0,99999999999,0x0\n"
    "42,00:00:00.002000,free,0x7f2c4c100000,512,0x0\n";

TEST(RmmCsv, ReadsEveryActionAndPointerStyle) {
  const Trace t = ParseRmmCsv(kLog, "log.csv");
  EXPECT_EQ(t.header.source_format, "rmm-csv");
  ASSERT_EQ(t.events.size(), 5u);
  const Event& a = t.events[0];
  EXPECT_EQ(a.type, EventType::kAlloc);
  EXPECT_EQ(a.address, 0x7f2c4c000000u);
  EXPECT_EQ(a.size, 1000u);
  EXPECT_EQ(a.rounded, 1024u);
  EXPECT_EQ(a.time_ns, 0u);
  EXPECT_EQ(a.thread, static_cast<std::uint32_t>(139872551270208ull));
  EXPECT_EQ(t.events[1].address, 0x7f2c4c000400u);
  EXPECT_EQ(t.events[1].stream, 0x5586a8e0u);
  EXPECT_EQ(t.events[1].time_ns, 500'000u);
  const Event& f = t.events[2];
  EXPECT_EQ(f.type, EventType::kFree);
  EXPECT_EQ(f.alloc_id, a.alloc_id);
  EXPECT_EQ(f.time_ns, 1'250'000u);  // past midnight: the clock wrapped
  const Event& oom = t.events[3];
  EXPECT_EQ(oom.type, EventType::kOom);
  EXPECT_EQ(oom.oom.request, 99999999999u);
  EXPECT_EQ(oom.oom.rounded, 100000000000u);  // 99999999999 rounded up to 256
  EXPECT_EQ(oom.oom.in_use, 4096u);
  EXPECT_EQ(oom.oom.live_requested, 4096u);
  // Only what the log gives: the request and the live allocations; no limit, no pool.
  EXPECT_EQ(oom.oom.present, kOomRequest | kOomRounded | kOomInUse | kOomLiveRequested);
  EXPECT_FALSE(oom.oom.Has(kOomLimit));
  EXPECT_EQ(oom.oom.chunk_count, 0u);
  // An RMM log has no limit: the cause is unknown, not an invented capacity.
  EXPECT_EQ(oom.oom.cause, OomCause::kUnknown);
  EXPECT_NE(t.warnings[0].find("cause unknown"), std::string::npos) << t.warnings[0];
  EXPECT_EQ(t.events[4].alloc_id, 0u);
  ASSERT_EQ(t.warnings.size(), 2u);
  EXPECT_NE(t.warnings[0].find("log.csv:5: allocate failure"), std::string::npos);
  EXPECT_NE(t.warnings[1].find("log.csv:6: free of 0x7f2c4c100000"), std::string::npos);
  for (std::size_t i = 0; i < t.events.size(); ++i) EXPECT_EQ(t.events[i].seq, i);
}

TEST(RmmCsv, ErrorsNameFileAndLine) {
  const std::string head = "Thread,Time,Action,Pointer,Size,Stream\n1,00:00:00.000001,allocate,0x100,256,0x0\n";
  auto message = [&](const std::string& text) {
    try {
      ParseRmmCsv(text, "bad.csv");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("Thread,Time\n").find("bad.csv: at byte 0: not an RMM log: no \"Thread,Time,Action,Pointer,Size,"
                                         "Stream\" header line first and no row anywhere"),
            std::string::npos)
      << message("Thread,Time\n");
  EXPECT_NE(message(head + "1,00:00:00.1,resize,0x1,1,0x0\n").find("line 3: unknown action \"resize\""),
            std::string::npos);
  EXPECT_NE(message(head + "1,00:00:00.1,free,0x1,1\n").find("line 3: 5 fields"), std::string::npos);
  EXPECT_NE(message(head + "1,00:00:00.1,free,0xZZ,1,0x0\n").find("bad pointer"), std::string::npos);
  EXPECT_NE(message(head + "1,noon,free,0x1,1,0x0\n").find("bad time"), std::string::npos);
  EXPECT_NE(message(head + "1,00:00:00.1,free,0x1,-5,0x0\n").find("bad size"), std::string::npos);
  EXPECT_NE(message("").find("bad.csv"), std::string::npos);
  EXPECT_THROW(ReadRmmCsv(FRAGSCOPE_SOURCE_DIR "/no/such/file.csv"), TraceError);
}

// A crash loses the buffered tail of the log: the last line, cut short with no line end, is left
// out with a warning. Only the last: a short line in the middle (or one with its end) is an error.
TEST(RmmCsv, ALastLineCutShortIsLeftOut) {
  const std::string log =
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "2342727,15:47:02.841961,allocate,0x10012400000,1048576,0\n"
      "2342727,15:47:02.841977,allocate,0x10012500000,2097152,0\n";
  const Trace t = ParseRmmCsv(log + "2342727,15:47:02.8419", "cut.csv");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[1].size, 2097152u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], "cut.csv:4: the last line is cut short (\"2342727,15:47:02.8419\": 2 fields, expected 6 "
                           "(Thread,Time,Action,Pointer,Size,Stream); the log ends there, as when the process died "
                           "while writing it): left out");
  // Cut inside the size: five fields.
  EXPECT_EQ(ParseRmmCsv(log + "2342727,15:47:02.841990,free,0x10012400000,10", "cut.csv").events.size(), 2u);
  // Complete lines that are broken stay errors, in the middle or at the end.
  const auto error = [](const std::string& text) {
    try {
      (void)ParseRmmCsv(text, "bad.csv");
    } catch (const TraceError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(log + "2342727,15:47:02.8419\n").find("line 4: 2 fields, expected 6"), std::string::npos);
  EXPECT_NE(error("Thread,Time,Action,Pointer,Size,Stream\n1,15:47:02.8419\n" + log.substr(log.find('\n') + 1))
                .find("line 2: 2 fields, expected 6"),
            std::string::npos);
}

// spark-rapids documents zero-size allocations with a null pointer in real logs (mem_debug.md:
// "filter out null pointers and zero size allocations"); `(nil)` is glibc's %p of a null pointer.
TEST(RmmCsv, ZeroSizeNullAllocationsAreNoEvents) {
  for (const std::string null : {"0x0", "(nil)", "0"}) {
    SCOPED_TRACE(null);
    const Trace t = ParseRmmCsv("Thread,Time,Action,Pointer,Size,Stream\n"
                                "1979932,14:21:19.998533,allocate,0x30a000000,256,0x2\n"
                                "1979932,14:21:19.998540,allocate," + null + ",0,0x2\n"
                                "1979932,14:21:19.998551,allocate," + null + ",0,0x2\n"
                                "1979932,14:21:19.998555,free," + null + ",0,0x2\n"
                                "1979932,14:21:19.998601,allocate failure," + null + ",85899345920,0x2\n"
                                "1980043,14:21:32.661875,free,0x30a000000,256,0x2\n",
                                "null.csv");
    std::vector<EventType> types;
    for (const Event& e : t.events) types.push_back(e.type);
    EXPECT_EQ(types, (std::vector<EventType>{EventType::kAlloc, EventType::kOom, EventType::kFree}));
    EXPECT_EQ(t.events[1].oom.in_use, 256u);  // the one real allocation
    EXPECT_EQ(t.events[1].oom.request, 85899345920u);
    EXPECT_EQ(t.events[2].alloc_id, t.events[0].alloc_id);
    ASSERT_EQ(t.warnings.size(), 1u);  // the failure's unknown cause; nothing about the null rows
    EXPECT_NE(t.warnings[0].find("null.csv:6: allocate failure"), std::string::npos) << t.warnings[0];
  }
}

// spark.rapids.memory.gpu.debug=STDOUT prints the rows without the header; =STDERR mixes them into
// the executor's log. Rows are read wherever they are; other lines are skipped and counted.
TEST(RmmCsv, RowsWithoutTheHeaderAndInsideOtherLogOutput) {
  const std::string rows =
      "1979932,14:21:19.998533,allocate,0x30a000000,256,0x2\n"
      "1980043,14:21:32.661875,free,0x30a000000,256,0x2\n";
  EXPECT_TRUE(LooksLikeRmmCsv(rows));
  const Trace bare = ParseRmmCsv(rows, "rows.csv");
  ASSERT_EQ(bare.events.size(), 2u);
  EXPECT_EQ(bare.events[1].alloc_id, bare.events[0].alloc_id);
  EXPECT_EQ(bare.events[1].time_ns, 12'663'342'000u);
  EXPECT_TRUE(bare.warnings.empty());

  const std::string mixed =
      "24/01/02 10:00:00 INFO GpuDeviceManager: Initializing RMM ARENA pool size = 30720.0 MB on gpuId 0\n"
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "1979932,14:21:19.998533,allocate,0x30a000000,256,0x2\n"
      "24/01/02 10:00:01 INFO Executor: Running task 0.0 in stage 0.0 (TID 0)\n"
      "1980043,14:21:32.661875,free,0x30a000000,256,0x2\n";
  EXPECT_TRUE(LooksLikeRmmCsv(mixed));
  const Trace t = ParseRmmCsv(mixed, "executor.log");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].size, 256u);
  ASSERT_EQ(t.warnings.size(), 1u);
  EXPECT_EQ(t.warnings[0], "executor.log: 2 lines that are no RMM rows skipped (other log output; the first on line 1)");

  // A row that means to be one (an RMM action in its third field) but is broken is an error there too.
  try {
    (void)ParseRmmCsv(mixed + "1980043,noon,free,0x30a000000,256,0x2\nmore log\n", "executor.log");
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("line 6: bad time \"noon\""), std::string::npos) << e.what();
  }
  EXPECT_FALSE(LooksLikeRmmCsv("24/01/02 10:00:00 INFO Executor: nothing here\nfree,0x1\n"));
}

TEST(RmmCsv, Detection) {
  EXPECT_TRUE(LooksLikeRmmCsv("Thread,Time,Action,Pointer,Size,Stream\r\n1,..."));
  EXPECT_TRUE(LooksLikeRmmCsv("\xEF\xBB\xBFThread,Time,Action,Pointer,Size,Stream\n"));
  EXPECT_FALSE(LooksLikeRmmCsv("Thread,Time,Action\n"));
  EXPECT_FALSE(LooksLikeRmmCsv("{\"type\":\"header\"}\n"));
}

TEST(RmmCsv, WriterRoundTrip) {
  Trace trace;
  trace.header.devices.push_back({0, "dev", "sim", 0, 0});
  auto add = [&](EventType type, std::uint64_t time_ns, std::uint64_t address, std::uint64_t size,
                 std::uint64_t alloc_id) {
    Event e;
    e.type = type;
    e.seq = trace.events.size();
    e.time_ns = time_ns;
    e.address = address;
    e.size = size;
    e.rounded = (size + 255) / 256 * 256;
    e.alloc_id = alloc_id;
    e.thread = 7;
    e.stream = 0x5586a8e0;
    trace.events.push_back(e);
    return &trace.events.back();
  };
  add(EventType::kAlloc, 0, 0x7f0000000000, 1000, 1);
  add(EventType::kRegionReserve, 1000, 0x7f0000000000, 1 << 20, 0);  // no RMM form: left out
  add(EventType::kAlloc, 3'600'000'001'000, 0x7f0000000400, 300, 2);   // 01:00:00.000001
  add(EventType::kFree, 3'600'000'002'000, 0x7f0000000000, 0, 1);      // size from the alloc
  Event* oom = add(EventType::kOom, 3'600'000'003'000, 0, 0, 0);
  oom->oom.request = 5000;
  oom->address = 0;

  std::ostringstream out;
  WriteRmmCsv(trace, out);
  const std::string csv = out.str();
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "Thread,Time,Action,Pointer,Size,Stream");
  EXPECT_NE(csv.find("7,01:00:00.000002,free,0x7f0000000000,1000,0x5586a8e0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",allocate failure,0x0,5000,"), std::string::npos);

  testing::TempDir dir;
  const std::string path = dir.File("round.csv");
  std::ofstream(path, std::ios::binary) << csv;
  const Trace back = ReadRmmCsv(path);
  ASSERT_EQ(back.events.size(), 4u);
  const std::size_t original[] = {0, 2, 3, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    const Event& a = trace.events[original[i]];
    const Event& b = back.events[i];
    EXPECT_EQ(b.type, a.type) << i;
    EXPECT_EQ(b.time_ns, a.time_ns) << i;
    EXPECT_EQ(b.address, a.address) << i;
    EXPECT_EQ(b.thread, a.thread) << i;
    EXPECT_EQ(b.stream, a.stream) << i;
    if (a.type == EventType::kAlloc) {
      EXPECT_EQ(b.rounded, a.rounded) << i;
    }
  }
  EXPECT_EQ(back.events[0].size, 1000u);
  EXPECT_EQ(back.events[2].size, 1000u);
  EXPECT_EQ(back.events[2].alloc_id, back.events[0].alloc_id);
  EXPECT_EQ(back.events[3].oom.request, 5000u);
  EXPECT_EQ(back.events[3].oom.in_use, 512u);  // the 300-byte allocation, rounded
  // Writing what was read gives the same text.
  std::ostringstream again;
  WriteRmmCsv(back, again);
  EXPECT_EQ(again.str(), csv);
  EXPECT_EQ(back.warnings.size(), 1u);  // the allocate failure's undetermined cause
}

}  // namespace
}  // namespace fragscope::traces
