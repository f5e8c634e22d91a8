// Histories from other tools, end to end through `fragscope report`: a torch.profiler window
// profiled mid-run (Total Allocated / Total Reserved: absolute peaks, what was live before, reserved
// memory and its ratios, no invented fragmentation), RMM logs as crashes and Spark leave them (a
// cut last line, zero-size null allocations, rows inside an executor log), RMM 0.x's csv_log, and a
// PyTorch snapshot saved as JSON.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "import/torch_profiler_fixtures.hpp"
#include "support/cli_fixture.hpp"

namespace {

using fragscope::testing::CliResult;
using fragscope::traces::profiler_fixtures::MemoryEvent;
using fragscope::traces::profiler_fixtures::Totals;

class Cli : public fragscope::testing::CliTest {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name), std::ios::binary) << text;
    return Path(name);
  }
};

constexpr std::int64_t kMiB = 1 << 20;

// cuda:0: 3 MiB live before the window (a 1 MiB block it frees, 2 MiB it never touches) in 8 MiB
// reserved; peak 7 MiB live in 12 MiB reserved; empty_cache brings reserved to 6 MiB.
std::string Window() {
  const auto cuda = [](double ts, std::int64_t bytes, std::uint64_t addr, std::int64_t allocated, std::int64_t reserved) {
    return MemoryEvent(ts, bytes, 1, 0, addr, "7",
                       Totals{static_cast<std::uint64_t>(allocated), static_cast<std::uint64_t>(reserved)});
  };
  return fragscope::traces::profiler_fixtures::Trace(
      {cuda(10, kMiB, 0x100000, 4 * kMiB, 8 * kMiB), MemoryEvent(15, 256, 0, -1, 0x9000, "7", Totals{1256, 0}),
       cuda(20, -kMiB, 0x700000, 3 * kMiB, 8 * kMiB), cuda(30, 4 * kMiB, 0x200000, 7 * kMiB, 12 * kMiB),
       cuda(40, -kMiB, 0x100000, 6 * kMiB, 12 * kMiB), cuda(50, -4 * kMiB, 0x200000, 2 * kMiB, 6 * kMiB),
       cuda(60, 512, 0x300000, 2 * kMiB + 512, 6 * kMiB)},
      R"("schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100", "totalGlobalMem": 85000000000}])");
}

TEST_F(Cli, ProfilerWindowReportsAbsolutePeaksAndRecordedReservedMemory) {
  const std::string trace = Write("window.json", Window());
  const CliResult json = Run({"report", trace, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_TRUE(doc["warnings"].empty()) << doc["warnings"];  // no "allocation outside any region"
  const auto& gpu = doc["devices"][0];
  EXPECT_EQ(gpu["device"], 0);
  EXPECT_EQ(gpu["peak_load"], 7 * kMiB);  // the most Total Allocated, not the window's 4 MiB
  EXPECT_EQ(gpu["peak_in_use"], 7 * kMiB);
  EXPECT_EQ(gpu["peak_reserved"], 12 * kMiB);  // the most Total Reserved
  EXPECT_DOUBLE_EQ(gpu["overhead"].get<double>(), 12.0 / 7.0);
  EXPECT_DOUBLE_EQ(gpu["utilization_at_peak"].get<double>(), 7.0 / 12.0);
  // Where reserved memory lies the profiler does not say: no fragmentation is invented.
  EXPECT_TRUE(gpu["fragmentation_at_peak"].is_null()) << gpu;
  EXPECT_TRUE(gpu["fragmentation_over_time"].is_null()) << gpu;
  EXPECT_FALSE(gpu.contains("reserved_known"));
  EXPECT_TRUE(gpu["before_recording"]["blocks"].is_null());  // bytes, not blocks
  EXPECT_EQ(gpu["before_recording"]["bytes"], 3 * kMiB);
  EXPECT_DOUBLE_EQ(gpu["before_recording"]["overhead_like_for_like"].get<double>(), 9.0 / 4.0);
  const auto& cpu = doc["devices"][1];
  EXPECT_EQ(cpu["device"], 1000000);
  EXPECT_EQ(cpu["peak_load"], 1256);
  EXPECT_EQ(cpu["reserved_known"], false);  // Total Reserved 0: the CPU allocator caches nothing
  EXPECT_TRUE(cpu["peak_reserved"].is_null());
  EXPECT_EQ(cpu["before_recording"]["bytes"], 1000);

  const CliResult text = Run({"report", trace});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("0         7.00 MiB     7.00 MiB      12.00 MiB      1.71       0.58          -     0"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device 0: 3.00 MiB were live before recording started; without them, the recorded "
                          "window's peak reserved is 9.00 MiB for a peak LOAD of 4.00 MiB: overhead 2.25 (like for like)"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device 1000000: 1000 B were live before recording started (counted in peak LOAD and in "
                          "use; peak LOAD less them: 256 B)"),
            std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("fragmentation over time"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device 1000000: cpu (host memory), pytorch host memory: not GPU memory (replay, "
                          "compare and min-limit leave it out)"),
            std::string::npos) << text.out;
}

// An allocation that failed while the profiler ran ("[OutOfMemory]"): an OOM of the history, with
// the request and the totals the event gives, and no limit (the cause is unknown); exit code 1.
TEST_F(Cli, ProfilerOutOfMemoryEventIsAnOom) {
  using fragscope::traces::profiler_fixtures::OomEvent;
  const std::string trace = Write(
      "oom.json", fragscope::traces::profiler_fixtures::Trace(
                      {MemoryEvent(1000, 20 * kMiB, 1, 0, 0x1000, "7", Totals{20 * kMiB, 40 * kMiB}),
                       OomEvent(1005, 64 * kMiB, 1, 0, Totals{20 * kMiB, 40 * kMiB})}));
  const CliResult json = Run({"report", trace, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& gpu = doc["devices"][0];
  ASSERT_EQ(gpu["ooms"].size(), 1u) << gpu;
  const auto& oom = gpu["ooms"][0];
  EXPECT_EQ(oom["device"], 0);
  EXPECT_EQ(oom["request"], 64 * kMiB);
  EXPECT_EQ(oom["rounded"], 64 * kMiB);
  EXPECT_EQ(oom["in_use"], 20 * kMiB);
  EXPECT_EQ(oom["reserved"], 40 * kMiB);
  EXPECT_EQ(oom["free_in_regions"], 20 * kMiB);
  for (const char* key : {"limit", "headroom", "largest_free", "live_requested"}) {
    EXPECT_TRUE(oom[key].is_null()) << key << oom;
  }
  EXPECT_EQ(oom["cause"], "unknown");
  EXPECT_EQ(oom["explanation"], "a request of 64.00 MiB failed with 20.00 MiB in use; the evidence gives no limit, "
                                "so capacity and fragmentation cannot be told apart");

  const CliResult text = Run({"report", trace});
  ASSERT_EQ(text.code, 1) << text.err;
  EXPECT_NE(text.out.find("0       20.00 MiB    20.00 MiB      40.00 MiB      2.00       0.50          -     1"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  OOM at event 2 (seq 2), device 0: 64.00 MiB of 64.00 MiB requested\n"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("holes nearest"), std::string::npos) << text.out;  // its reserved regions are invented
}

// The profiler's CPU device is PyTorch's host memory: replays of GPU policies leave it out (before,
// it ran on an 80 GiB simulated GPU, and compare's rows summed it in), and say so.
TEST_F(Cli, ReplaysLeaveAProfilersHostMemoryOut) {
  const std::string trace = Write("window.json", Window());
  const CliResult replay = Run({"replay", trace, "--json"});
  ASSERT_EQ(replay.code, 0) << replay.err;
  const auto devices = nlohmann::json::parse(replay.out)["devices"];
  ASSERT_EQ(devices.size(), 1u) << devices;
  EXPECT_EQ(devices[0]["device"], 0);
  EXPECT_NE(replay.err.find("window.json: device 1000000 (cpu (host memory)) holds host memory, not GPU memory: "
                            "the replays leave it out"),
            std::string::npos)
      << replay.err;
  const CliResult compare = Run({"compare", trace, "--json", "--alloc-conf", "growth=off,preallocate=1"});
  ASSERT_EQ(compare.code, 0) << compare.err;
  const auto table = nlohmann::json::parse(compare.out);
  EXPECT_EQ(table["recorded"]["peak_reserved"], 12 * kMiB) << "cuda:0's Total Reserved alone";
  // The whole of cuda:0 (85 GB), not that plus an 80 GiB host device.
  EXPECT_EQ(table["configurations"][0]["peak_reserved"], 85000000000u) << table;

  // Host memory only: nothing for a GPU allocator to replay, said as such.
  const std::string host = Write("host.json", fragscope::traces::profiler_fixtures::Trace(
                                                  {MemoryEvent(15, 256, 0, -1, 0x9000), MemoryEvent(16, -256, 0, -1, 0x9000)},
                                                  R"("schemaVersion": 1)"));
  const CliResult none = Run({"replay", host});
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("host.json: every allocation is of host memory"), std::string::npos) << none.err;
}

TEST_F(Cli, RmmLogsAsCrashesAndSparkLeaveThem) {
  const std::string head =
      "Thread,Time,Action,Pointer,Size,Stream\n"
      "2342727,15:47:02.841961,allocate,0x10012400000,1048576,0\n"
      "2342727,15:47:02.841977,allocate,0x10012500000,2097152,0\n";
  CliResult r = Run({"report", Write("cut.csv", head + "2342727,15:47:02.8419"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("cut.csv:4: the last line is cut short"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"][0]["peak_load"], 3 * kMiB);
  r = Run({"report", Write("middle.csv", "Thread,Time,Action,Pointer,Size,Stream\n2342727,15:47:02.8419\n" +
                                             head.substr(head.find('\n') + 1))});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("middle.csv: at byte 39: line 2: 2 fields, expected 6"), std::string::npos) << r.err;

  r = Run({"report",
           Write("nil.csv", "Thread,Time,Action,Pointer,Size,Stream\n"
                            "1979932,14:21:19.998533,allocate,0x30a000000,256,0x2\n"
                            "1979932,14:21:19.998540,allocate,(nil),0,0x2\n"
                            "1979932,14:21:19.998551,allocate,0x0,0,0x2\n"
                            "1980043,14:21:32.661875,free,0x30a000000,256,0x2\n"),
           "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto nil = nlohmann::json::parse(r.out);
  EXPECT_EQ(nil["devices"][0]["peak_in_use"], 256);
  EXPECT_EQ(nil["events"], 2);
  EXPECT_TRUE(nil["warnings"].empty()) << nil["warnings"];

  r = Run({"report",
           Write("executor.log", "24/01/02 10:00:00 INFO GpuDeviceManager: Initializing RMM ARENA pool\n"
                                 "1979932,14:21:19.998533,allocate,0x30a000000,256,0x2\n"
                                 "24/01/02 10:00:01 INFO Executor: Running task 0.0 in stage 0.0 (TID 0)\n"
                                 "1980043,14:21:32.661875,free,0x30a000000,256,0x2\n"),
           "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto mixed = nlohmann::json::parse(r.out);
  EXPECT_EQ(mixed["format"], "RMM log (CSV)");
  EXPECT_EQ(mixed["events"], 2);
  EXPECT_EQ(mixed["devices"][0]["peak_load"], 256);
}

// RMM 0.x's csv_log as a Python script printed it: two devices, the first with its total memory
// (the capacity, and the limit of its failure: 20 GB on a 16 GB device is request-too-large).
TEST_F(Cli, Rmm0xCsvLogOfTwoDevices) {
  const CliResult r = Run(
      {"report",
       Write("v0.log",
             "Event Type,Device ID,Address,Stream,Size (bytes),Free Memory,Total Memory,Current Allocs,Start,End,"
             "Elapsed,Location\n"
             "Alloc,0,0x7f0000000000,0,1048576,15000000000,16000000000,1,1.5,1.50002,2e-05,/app/model.py:10\n"
             "Alloc,1,0x7f1000000000,0,2097152,0,0,2,1.6,1.60001,1e-05,/app/model.py:11\n"
             "Alloc,0,0,0,20000000000,900000000,16000000000,2,3,3.00004,4e-05,/app/model.py:13\n"),
       "--json"});
  ASSERT_EQ(r.code, 1) << r.err;  // an OOM
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "RMM log (CSV)");
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_EQ(doc["devices"][0]["capacity"], 16000000000ull);
  EXPECT_TRUE(doc["devices"][1]["capacity"].is_null());
  EXPECT_EQ(doc["devices"][1]["peak_load"], 2 * kMiB);
  const auto& oom = doc["devices"][0]["ooms"][0];
  EXPECT_EQ(oom["request"], 20000000000ull);
  EXPECT_EQ(oom["limit"], 16000000000ull);
  EXPECT_EQ(oom["in_use"], kMiB);
  EXPECT_EQ(oom["cause"], "request-too-large");
}

// A snapshot saved with json.dump (one line of JSON) went to the JSON Lines reader ("line 1: the
// first line must be the header"); it is a PyTorch snapshot, read as the pickle would be.
TEST_F(Cli, SnapshotSavedAsJsonIsReadAsASnapshot) {
  const std::string snapshot = Write(
      "snapshot.json",
      R"({"segments": [{"device": 0, "address": 1048576, "total_size": 2097152, "stream": 0, "segment_type": "large", )"
      R"("is_expandable": false, "blocks": [{"address": 1048576, "size": 1024, "requested_size": 1000, )"
      R"("state": "active_allocated", "frames": []}, {"address": 1049600, "size": 2096128, "requested_size": 0, )"
      R"("state": "inactive", "frames": []}]}], "device_traces": [[{"action": "alloc", "addr": 1048576, )"
      R"("size": 1000, "stream": 0, "time_us": 5, "frames": [{"filename": "train.py", "line": 3, "name": "main"}]}]]})");
  const CliResult r = Run({"report", snapshot, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "PyTorch memory snapshot");
  EXPECT_EQ(doc["devices"][0]["peak_reserved"], 2097152);
  EXPECT_EQ(doc["devices"][0]["peak_load"], 1000);
}

}  // namespace
