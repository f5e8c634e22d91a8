// `fragscope report` of a state (one moment: a PyTorch snapshot without trace events, a TensorFlow
// dump): said to be one ("kind": "state"), its own numbers and what its layout shows, nothing that
// needs time — on the shared real snapshot, on the project's TF fixtures (golden text), and after
// a conversion to .fst, which keeps the kind and the facts.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli_fixture.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::CliResult;

const std::string kSharedData = fs::path(FRAGSCOPE_SOURCE_DIR).parent_path().string() + "/shared/data";

class StateReport : public fragscope::testing::CliTest {
 protected:
  static std::string Fixture(const std::string& name) {
    return (fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf" / name).string();
  }
};

// The shared FlexGen snapshot was taken at an OOM with recording off: 176 segments, 460 blocks.
void ExpectFlexgenState(const nlohmann::json& device) {
  EXPECT_EQ(device["kind"], "state");
  EXPECT_EQ(device["moment"], "when the snapshot was taken");
  EXPECT_EQ(device["regions"], 176);
  EXPECT_EQ(device["chunks"], 460);
  EXPECT_EQ(device["in_use"], 11840159744ull);
  EXPECT_EQ(device["reserved"], 11844714496ull);
  EXPECT_EQ(device["free_in_regions"], 4554752);
  EXPECT_EQ(device["holes"], 3);
  EXPECT_EQ(device["largest_hole"], 2080768);
  EXPECT_EQ(device["empty_regions"], 0);
  EXPECT_TRUE(device["limit"].is_null());  // the snapshot does not say
  EXPECT_TRUE(device["max_in_use"].is_null());
  EXPECT_TRUE(device["layout_complete"].get<bool>());
  // Nothing that needs time, and no "before recording" (there was no recording).
  for (const char* key : {"overhead", "peak_load", "peak_reserved", "utilization_at_peak", "before_recording"}) {
    EXPECT_FALSE(device.contains(key)) << key;
  }
}

TEST_F(StateReport, PytorchSnapshotWithoutTraceEvents) {
  const std::string snapshot = kSharedData + "/torch/pt_flexgen_opt_oom_state.pickle";
  if (!fs::exists(snapshot)) GTEST_SKIP() << snapshot << " is absent (../shared/data is not beside the project)";
  const CliResult json = Run({"report", snapshot, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc["devices"].size(), 1u);
  ExpectFlexgenState(doc["devices"][0]);

  const CliResult text = Run({"report", snapshot});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("kind       state: one moment, not a history"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("reserved but unallocated: 4.34 MiB in 3 free holes, the largest 1.98 MiB"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("what torch.cuda.empty_cache() would return"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("util@peak"), std::string::npos) << text.out;  // no table of time metrics
  // All of it is allocated: no free whole page, so no expandable_segments advice.
  EXPECT_EQ(text.out.find("expandable_segments"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("no free whole page inside segments in use"), std::string::npos) << text.out;

  // Converted to .fst, it is still a state with the same findings.
  const std::string fst = Path("flexgen.fst");
  ASSERT_EQ(Run({"convert", snapshot, fst}).code, 0);
  const CliResult again = Run({"report", fst, "--json"});
  ASSERT_EQ(again.code, 0) << again.err;
  ExpectFlexgenState(nlohmann::json::parse(again.out)["devices"][0]);
}

// A hand-built fragmented PyTorch state (JSON Lines): a 100 MiB segment with blocks at [0, 10) and
// [70, 100) MiB holds the whole 20 MiB pages [20, 40) and [40, 60) in its hole; an empty 40 MiB
// segment is what empty_cache() returns.
TEST_F(StateReport, FragmentedPytorchStateGetsExpandableSegmentsAdviceWithTheBytes) {
  const std::string path = Path("fragmented.jsonl");
  std::ofstream(path) << R"({"type":"header","producer":"hand","source_format":"pytorch-snapshot","kind":"state",)"
                         R"("devices":[{"index":0,"name":"cuda:0","backing":"pytorch"}],)"
                         R"("source":{"allocator":"PyTorch CUDA caching allocator","settings":[["expandable_segments","False"]],)"
                         R"("states":[{"device":0,"moment":"when the snapshot was taken","at_seq":3,"layout_complete":true}]}})"
                         "\n"
                         R"({"type":"region_reserve","seq":0,"device":0,"address":536870912,"size":104857600})"
                         "\n"
                         R"({"type":"alloc","seq":1,"device":0,"address":536870912,"size":10485760,"rounded":10485760,"region":536870912,"alloc_id":1})"
                         "\n"
                         R"({"type":"alloc","seq":2,"device":0,"address":610271232,"size":31457280,"rounded":31457280,"region":536870912,"alloc_id":2})"
                         "\n"
                         R"({"type":"region_reserve","seq":3,"device":0,"address":1073741824,"size":41943040})"
                         "\n";
  const CliResult text = Run({"report", path});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("40.00 MiB in 2 free whole pages inside segments in use (pages of 2.00 MiB in segments of "
                          "2.00 MiB, 20.00 MiB in larger ones): PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("40.00 MiB in 1 segment with nothing allocated: what torch.cuda.empty_cache() would return"),
            std::string::npos) << text.out;
  const CliResult json = Run({"report", path, "--json"});
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_EQ(device["free_page_bytes"], 40 * 1048576);
  EXPECT_EQ(device["free_pages"], 2);
  EXPECT_EQ(device["empty_region_bytes"], 40 * 1048576);
  EXPECT_EQ(device["free_in_regions"], 100 * 1048576);  // 60 MiB hole + the empty 40 MiB segment
}

TEST_F(StateReport, TensorflowDumpsGoldenText) {
  const CliResult r = Run({"report", Fixture("two_dumps_two_devices.log")});
  EXPECT_EQ(r.code, 1) << r.err;  // the dumps hold OOMs
  const fs::path golden = fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "golden" / "report-tf-two-dumps.txt";
  // The trace line names the path as given; the golden file has it relative to the sources.
  std::string text = r.out;
  const std::string given = Fixture("two_dumps_two_devices.log");
  if (const auto at = text.find(given); at != std::string::npos) {
    text.replace(at, given.size(), "tests/import/fixtures/tf/two_dumps_two_devices.log");
  }
  if (std::getenv("FRAGSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << text;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with FRAGSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(text, fragscope::testing::Slurp(golden)) << "output differs from " << golden;
}

TEST_F(StateReport, TensorflowDumpJsonHasTheStatsAndNoTimeMetrics) {
  const CliResult r = Run({"report", Fixture("two_dumps_two_devices.log"), "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["devices"].size(), 2u);
  const auto& d1 = doc["devices"][1];
  EXPECT_EQ(d1["kind"], "state");
  EXPECT_EQ(d1["moment"], "at the OOM on line 48");
  EXPECT_EQ(d1["in_use"], 114176);     // its Stats: InUse 111.50 KiB
  EXPECT_EQ(d1["limit"], 1178368);     // its Stats: Limit 1178368
  EXPECT_EQ(d1["regions"], 2);
  EXPECT_EQ(d1["chunks"], 15);
  EXPECT_FALSE(d1.contains("overhead"));
  EXPECT_FALSE(doc.contains("min_limit"));
  ASSERT_EQ(d1["ooms"].size(), 1u);
  EXPECT_TRUE(d1["ooms"][0]["min_limit"].is_null());  // no minimal limit for a state
  // A state has no events: no event position, and no live requested bytes the dump did not print.
  EXPECT_TRUE(d1["ooms"][0]["seq"].is_null());
  EXPECT_TRUE(d1["ooms"][0]["event"].is_null());
  EXPECT_TRUE(d1["ooms"][0]["live_requested"].is_null());
  EXPECT_EQ(d1["ooms"][0]["in_use"], 114176);
}

// A dump of which only the header and the occupancy bar survived: its OOM's byte counts are null
// (not 0), and the suggestion does not send the user to a replay that refuses a state. With XLA's
// BufferAssignment statistics after it (JAX's usual log), the log is read as that message instead.
TEST_F(StateReport, AHeaderOnlyDumpHasNoNumbersAndNoReplayAdvice) {
  const std::string log = kSharedData + "/tf/13_TheDingodile-ML_final_outputs-v32test-Markdown-v32test_0.log";
  if (!fs::exists(log)) GTEST_SKIP() << log << " is absent (../shared/data is not beside the project)";
  const std::string whole = fragscope::testing::Slurp(log);
  // The header and the bar alone: the first 13 lines.
  std::size_t cut = 0;
  for (int line = 0; line < 13; ++line) cut = whole.find('\n', cut) + 1;
  const std::string bare = Path("bare.log");
  std::ofstream(bare, std::ios::binary) << whole.substr(0, cut);
  CliResult r = Run({"report", bare, "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "TensorFlow BFC log");
  const auto& oom = doc["devices"][0]["ooms"][0];
  EXPECT_EQ(oom["cause"], "unknown");
  for (const char* key : {"in_use", "reserved", "live_requested", "free_in_regions", "largest_free", "chunk_count",
                          "region_count", "limit", "headroom"}) {
    EXPECT_TRUE(oom[key].is_null()) << key << " = " << oom[key];
  }
  EXPECT_EQ(oom["suggestion"].get<std::string>().find("fragscope replay"), std::string::npos) << oom["suggestion"];

  // The whole log: XLA's statistics decide (capacity), and a warning says why the dump is not used.
  r = Run({"report", log});
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("(OOM error message, 1 message)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cause: capacity: the compiled program alone needs 7.88GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the allocator dump kept no byte count"), std::string::npos) << r.err;
}

// A fragment whose chunk list is cut: what it lists is a lower bound, and the bytes no listed chunk
// covers are not called free.
TEST_F(StateReport, ACutChunkListGivesLowerBoundsAndNoFreeHoles) {
  const std::string log = kSharedData + "/tf/12_tensorflow-tensorflow_issue47820_fragment.log";
  if (!fs::exists(log)) GTEST_SKIP() << log << " is absent (../shared/data is not beside the project)";
  const CliResult r = Run({"report", log});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("in use at least 3.00 KiB, reserved at least 1.00 MiB, limit unknown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not covered by a listed chunk: 1021.00 KiB in 1 range, the largest 1021.00 KiB (the chunk "
                       "list is cut: not known to be free)"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("free hole"), std::string::npos) << r.out;
  // The JSON says what the text says: the listed in use is a lower bound (it said false).
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_EQ(device["in_use"], 3072);
  EXPECT_TRUE(device["in_use_at_least"].get<bool>());
  EXPECT_TRUE(device["free_in_regions"].is_null());
  EXPECT_EQ(device["uncovered_bytes"], 1045504);
}

// A TF 1.6 fragment whose bin lines and Chunk State table show two free chunks (1.50 and 2.50 MiB)
// that its three listed chunks do not hold: at least that much is free, the largest at least the
// single one the table names, and the layout is incomplete.
TEST_F(StateReport, FreeChunksOnlyTheBinLinesShowAreFreeAtLeast) {
  const std::string log = Path("tf16.log");
  std::ofstream(log) << "I bfc_allocator.cc:630] Bin (1048576): \tTotal Chunks: 2, Chunks in use: 1. 2.75MiB allocated "
                        "for chunks. 1.25MiB in use in bin. 1.25MiB client-requested in use in bin.\n"
                        "I bfc_allocator.cc:630] Bin (2097152): \tTotal Chunks: 1, Chunks in use: 0. 2.50MiB allocated "
                        "for chunks. 0B in use in bin. 0B client-requested in use in bin.\n"
                        "I bfc_allocator.cc:646] Bin for 3.50MiB was 2.00MiB, Chunk State: \n"
                        "I bfc_allocator.cc:652]   Size: 2.50MiB | Requested Size: 1.0KiB | in_use: 0, prev:   Size: "
                        "256B | Requested Size: 4B | in_use: 1\n"
                        "I bfc_allocator.cc:665] Chunk at 0x10000000000 of size 1310720\n"
                        "I bfc_allocator.cc:665] Chunk at 0x10000140000 of size 256\n";
  const CliResult text = Run({"report", log});
  ASSERT_EQ(text.code, 1) << text.err;  // "Bin for": TF dumps only at an OOM
  EXPECT_NE(text.out.find("in use at least 1.25 MiB, reserved at least 5.25 MiB, limit unknown"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("free at least 4.00 MiB inside its regions (the free chunks it shows, listed or only in "
                          "its own summary lines), the largest at least 2.50 MiB"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("its bin lines and Chunk State table show 2 free chunks of about 4.00 MiB that the chunk "
                          "list lacks"),
            std::string::npos)
      << text.out;
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_FALSE(device["layout_complete"].get<bool>());
  EXPECT_TRUE(device["in_use_at_least"].get<bool>());  // as the text's "in use at least 1.25 MiB"
  EXPECT_EQ(device["free_at_least"], 4194304);
  EXPECT_EQ(device["largest_free"], 2621440);
  const auto& oom = device["ooms"][0];
  EXPECT_EQ(oom["largest_free"], 2621440);
  // No reserved count: the 4 MiB are free at least (the device's free_at_least), not the OOM's free
  // in regions, which is unknown with the reserved bytes and the headroom.
  EXPECT_TRUE(oom["free_in_regions"].is_null()) << oom;
  EXPECT_TRUE(oom["reserved"].is_null()) << oom;
}

// TF 1.8, its chunk list cut after one 50 MiB chunk (and a 10 MiB free one), no reserved count:
// Stats InUse 100 MiB of a 200 MiB limit, 64 MiB asked. The regions hold at least 110 MiB, said once
// and alike in every line; the OOM's reserved, free and headroom are unknown, and so is the cause
// (the regions past the cut may fill the limit: fragmentation; or not: the device refused one).
TEST_F(StateReport, ACutListWithoutAReservedCountLeavesTheCauseUnknown) {
  const std::string log = Path("tf18_cut.log");
  std::ofstream(log) << "W bfc_allocator.cc:275] Allocator (GPU_1_bfc) ran out of memory trying to allocate 64.00MiB.  "
                        "Current allocation summary follows.\n"
                        "I bfc_allocator.cc:665] Chunk at 0x10600000000 of size 52428800\n"
                        "I bfc_allocator.cc:665] Free at 0x10603200000 of size 10485760\n"
                        "I bfc_allocator.cc:680] Stats: \n"
                        "Limit:                    209715200\n"
                        "InUse:                    104857600\n"
                        "MaxInUse:                 157286400\n"
                        "NumAllocs:                      900\n"
                        "MaxAllocSize:              52428800\n";
  const CliResult text = Run({"report", log});
  ASSERT_EQ(text.code, 1) << text.err;
  EXPECT_NE(text.out.find("in use 100.00 MiB (its own count), reserved at least 110.00 MiB, limit 200.00 MiB"),
            std::string::npos) << text.out;
  EXPECT_NE(text.out.find("its regions hold at least 110.00 MiB"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("at least 60.00 MiB"), std::string::npos) << text.out;  // the listed region alone
  EXPECT_NE(text.out.find("cause: unknown: a request of 64.00 MiB failed with 100.00 MiB in use, within the limit of "
                          "200.00 MiB; the evidence gives no reserved bytes"),
            std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("another process"), std::string::npos) << text.out;
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_TRUE(device["reserved"].is_null());
  EXPECT_EQ(device["free_at_least"], 10485760);
  const auto& oom = device["ooms"][0];
  EXPECT_EQ(oom["cause"], "unknown");
  EXPECT_EQ(oom["in_use"], 104857600);
  EXPECT_EQ(oom["limit"], 209715200);
  for (const char* key : {"reserved", "free_in_regions", "headroom"}) EXPECT_TRUE(oom[key].is_null()) << key << oom;
  EXPECT_TRUE(oom["framework_advice"].is_null()) << oom;
}

// A full dump followed by jaxlib's exception is JAX's: its advice is JAX's environment variables,
// not TensorFlow's mixed precision and RunOptions.
TEST_F(StateReport, AJaxDumpGetsJaxsAdvice) {
  const std::string log = Path("jax.log");
  std::ofstream(log) << "W external/tsl/tsl/framework/bfc_allocator.cc:485] Allocator (GPU_0_bfc) ran out of memory "
                        "trying to allocate 3.00GiB (rounded to 3221225472)requested by op \n"
                        "I external/tsl/tsl/framework/bfc_allocator.cc:1075] Next region of size 8589934592\n"
                        "I external/tsl/tsl/framework/bfc_allocator.cc:1095] InUse at 7f9e00000000 of size 6442450944 "
                        "next 1\n"
                        "I external/tsl/tsl/framework/bfc_allocator.cc:1095] Free  at 7f9f80000000 of size 2147483648 "
                        "next 18446744073709551615\n"
                        "I external/tsl/tsl/framework/bfc_allocator.cc:1114] Stats: \n"
                        "Limit:                      8589934592\n"
                        "InUse:                      6442450944\n"
                        "MaxInUse:                   6442450944\n"
                        "NumAllocs:                         321\n"
                        "MaxAllocSize:               6442450944\n\n"
                        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
                        "allocate 3221225472 bytes.\n";
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  EXPECT_EQ(doc["producer"], "XLA BFC allocator log (JAX)");
  const auto& oom = doc["devices"][0]["ooms"][0];
  EXPECT_EQ(oom["cause"], "capacity");
  EXPECT_EQ(oom["framework_advice"]["framework"], "JAX");
  const std::string advice = oom["framework_advice"]["advice"];
  EXPECT_NE(advice.find("XLA_PYTHON_CLIENT_MEM_FRACTION"), std::string::npos) << advice;
  EXPECT_EQ(advice.find("tf."), std::string::npos) << advice;
  const CliResult text = Run({"report", log});
  EXPECT_NE(text.out.find("    in JAX: the live arrays need more than JAX's pool holds"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("RunOptions"), std::string::npos) << text.out;
}

// A paste of TF's "Summary of in-use Chunks by size" alone (quoted, as in an issue) is a fragment
// of a dump, not an unknown format: in use at least its sum, no layout, nothing invented.
TEST_F(StateReport, ASummaryBySizeAloneIsAFragmentOfADump) {
  const std::string log = Path("summary.log");
  std::ofstream(log) << "> I tensorflow/core/common_runtime/bfc_allocator.cc:689]      Summary of in-use Chunks by size: \n"
                        "> I tensorflow/core/common_runtime/bfc_allocator.cc:692] 40 Chunks of size 256 totalling 10.0KiB\n"
                        "> I tensorflow/core/common_runtime/bfc_allocator.cc:692] 3210 Chunks of size 4096 totalling 12.54MiB\n";
  const CliResult text = Run({"report", log});
  ASSERT_EQ(text.code, 0) << text.err;  // a state: no OOM in it
  EXPECT_NE(text.out.find("(TensorFlow BFC log)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("in use at least 12.55 MiB, reserved unknown, limit unknown"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("only its summary of in-use chunks by size counts 3250 chunks in 2 sizes, 12.55 MiB in use at "
                          "least"),
            std::string::npos)
      << text.out;
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_EQ(device["in_use"], 13158400);
  EXPECT_TRUE(device["in_use_at_least"].get<bool>());
  EXPECT_TRUE(device["reserved"].is_null());
  EXPECT_TRUE(device["largest_free"].is_null());
  EXPECT_EQ(device["ooms"].size(), 0u);
}

// What the evidence does not give is null in --json and in a conversion, never 0; what follows
// from two numbers it gives is computed: a TF 2.10 Stats block with its pool line (reserved
// 4 MiB, in use 3 MiB: 1 MiB free in regions), and a TF 0.8 Stats-only OOM (no reserved count).
TEST_F(StateReport, UnknownNumbersAreNullAndKnownOnesAreComputed) {
  const std::string stats = Path("stats.log");
  std::ofstream(stats) << "I bfc_allocator.cc:1103] total_region_allocated_bytes_: 4194304 memory_limit_: 4194304 "
                          "available bytes: 0 curr_region_allocation_bytes_: 8388608\n"
                          "I bfc_allocator.cc:1109] Stats: \n"
                          "Limit:                      4194304\n"
                          "InUse:                      3145728\n"
                          "MaxInUse:                   3145984\n"
                          "NumAllocs:                       12\n"
                          "MaxAllocSize:               1048576\n"
                          "Reserved:                         0\n"
                          "PeakReserved:                     0\n"
                          "LargestFreeBlock:                 0\n";
  CliResult r = Run({"report", stats, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto device = nlohmann::json::parse(r.out)["devices"][0];
  EXPECT_EQ(device["free_in_regions"], 1048576);  // reserved - in use, both its own counts
  for (const char* key : {"largest_free", "holes", "largest_hole", "free_pages", "free_page_bytes", "empty_regions",
                          "empty_region_bytes", "free_at_least"})
    EXPECT_TRUE(device[key].is_null()) << key << " = " << device[key];
  r = Run({"report", stats});
  EXPECT_NE(r.out.find("reserved but unallocated: 1.00 MiB (reserved less in use, by its own counts; where, it does "
                       "not say)"),
            std::string::npos)
      << r.out;

  const std::string oom = Path("tf08.log");
  std::ofstream(oom) << "I bfc_allocator.cc:694] Stats: \n"
                        "Limit:                  4194304\n"
                        "InUse:                  3145728\n"
                        "MaxInUse:               3145728\n"
                        "NumAllocs:                   42\n"
                        "MaxAllocSize:           1048576\n"
                        "\n"
                        "W bfc_allocator.cc:270] "
                        "****************************************************************************************************\n"
                        "W bfc_allocator.cc:271] Ran out of memory trying to allocate 1.50MiB.  See logs for memory state.\n";
  r = Run({"report", oom, "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  device = nlohmann::json::parse(r.out)["devices"][0];
  EXPECT_TRUE(device["free_in_regions"].is_null());
  EXPECT_TRUE(device["reserved"].is_null());
  const auto& record = device["ooms"][0];
  EXPECT_EQ(record["cause"], "capacity");
  EXPECT_EQ(record["in_use"], 3145728);
  for (const char* key : {"reserved", "free_in_regions", "largest_free", "headroom", "chunk_count", "region_count"})
    EXPECT_TRUE(record[key].is_null()) << key << " = " << record[key];
  const std::string jsonl = Path("tf08.jsonl");
  ASSERT_EQ(Run({"convert", oom, jsonl}).code, 0);
  const std::string converted = fragscope::testing::Slurp(jsonl);
  EXPECT_NE(converted.find("\"reserved\":null"), std::string::npos) << converted;
  EXPECT_NE(converted.find("\"largest_free\":null"), std::string::npos) << converted;
  EXPECT_NE(converted.find("\"headroom\":null"), std::string::npos) << converted;
}

// TF >= 2.10's Stats block and bar without their header, then "RESOURCE_EXHAUSTED: failed to
// allocate memory": an OOM (exit 1) whose request is unknown (null, "request unknown"), its cause
// too, with the Stats block's limit and bytes in use.
TEST_F(StateReport, AnOomLineWithoutASizeAfterAStatsFragment) {
  const std::string log = Path("tf210.log");
  std::ofstream(log) << "I bfc_allocator.cc:1103] total_region_allocated_bytes_: 6000000000 memory_limit_: 6000000000 "
                        "available bytes: 0 curr_region_allocation_bytes_: 12000000000\n"
                        "I bfc_allocator.cc:1109] Stats: \n"
                        "Limit:                      6000000000\n"
                        "InUse:                      5368709120\n"
                        "MaxInUse:                   5368709376\n"
                        "NumAllocs:                        1200\n"
                        "MaxAllocSize:                536870912\n"
                        "Reserved:                            0\n"
                        "PeakReserved:                        0\n"
                        "LargestFreeBlock:                    0\n"
                        "\n"
                        "W bfc_allocator.cc:491] "
                        "****************************************************************************************************\n"
                        "W op_kernel.cc:1768] RESOURCE_EXHAUSTED: failed to allocate memory\n";
  CliResult r = Run({"report", log, "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["format"], "TensorFlow BFC log");
  const auto& record = doc["devices"][0]["ooms"][0];
  EXPECT_TRUE(record["request"].is_null()) << record;
  EXPECT_TRUE(record["rounded"].is_null()) << record;
  EXPECT_EQ(record["cause"], "unknown");
  EXPECT_EQ(record["limit"], 6000000000ull);
  EXPECT_EQ(record["in_use"], 5368709120ull);
  r = Run({"report", log});
  EXPECT_NE(r.out.find("OOM on device 0: request unknown\n    cause: unknown: a request of unknown size failed (the "
                       "evidence does not give it) with 5.00 GiB in use of the 5.59 GiB limit: a request above the "
                       "602.05 MiB left is capacity, a smaller one fragmentation (the regions already fill the limit)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("suggestion: find the size of the failed request"), std::string::npos) << r.out;
}

// A cut TF 2.2 list: two chunks lie outside the one region printed before them, and most of that
// region is not covered by a listed chunk. The chunks are counted (outside every listed region);
// the uncovered range is no free hole: not in the OOM's nearest holes, not a largest free.
TEST_F(StateReport, AnUncoveredRangeOfACutListIsNoHole) {
  const std::string log = Path("stray.log");
  std::ofstream(log) << "W bfc_allocator.cc:419] Allocator (GPU_0_bfc) ran out of memory trying to allocate 128.0KiB "
                        "(rounded to 131072).  Current allocation summary follows.\n"
                        "I bfc_allocator.cc:898] Next region of size 1048576\n"
                        "I bfc_allocator.cc:905] InUse at 0000000700000000 next 1 of size 1280\n"
                        "I bfc_allocator.cc:905] InUse at 0000000700000500 next 2 of size 256\n"
                        "I bfc_allocator.cc:905] InUse at 0000000733000000 next 77 of size 256\n"
                        "I bfc_allocator.cc:905] InUse at 0000000733000100 next 78 of size 4096\n"
                        "I bfc_allocator.cc:923] total_region_allocated_bytes_: 3145728 memory_limit_: 3145728 "
                        "available bytes: 0\n"
                        "I bfc_allocator.cc:929] Stats:\n"
                        "Limit:                     3145728\n"
                        "InUse:                     3080192\n";
  const CliResult text = Run({"report", log});
  ASSERT_EQ(text.code, 1) << text.err;
  EXPECT_NE(text.out.find("1 region of 1.00 MiB, 4 live chunks of 5.75 KiB (2 of them outside every listed region)"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("holes nearest in size"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("free whole page"), std::string::npos) << text.out;
  const CliResult json = Run({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto device = nlohmann::json::parse(json.out)["devices"][0];
  EXPECT_EQ(device["chunks"], 4);
  EXPECT_EQ(device["chunks_outside_regions"], 2);
  EXPECT_EQ(device["uncovered_bytes"], 1048576 - 1536);
  EXPECT_TRUE(device["holes"].is_null());
  EXPECT_TRUE(device["largest_free"].is_null());
  EXPECT_EQ(device["free_in_regions"], 65536);  // its own counts: reserved 3145728 - in use 3080192
  EXPECT_TRUE(device["ooms"][0]["nearest_holes"].empty());
  EXPECT_TRUE(device["ooms"][0]["largest_free"].is_null());
}

TEST_F(StateReport, ReplayCompareAndMinLimitRefuseAStateUnlessAskedToAssumeAnOrder) {
  const std::string dump = Fixture("two_dumps_two_devices.log");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"replay", dump, "--alloc-conf", "growth=on"},
        std::vector<std::string>{"compare", dump, "--alloc-conf", "growth=on"},
        std::vector<std::string>{"min-limit", dump, "--alloc-conf", "growth=on"}}) {
    SCOPED_TRACE(args[0]);
    const CliResult refused = Run(args);
    EXPECT_EQ(refused.code, 2);
    EXPECT_NE(refused.err.find(dump + ": a state (TensorFlow BFC log): one moment of memory, not a history"),
              std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("Add --as-sequence"), std::string::npos) << refused.err;
    std::vector<std::string> asked = args;
    asked.push_back("--as-sequence");
    const CliResult replayed = Run(asked);
    EXPECT_NE(replayed.code, 2) << replayed.err;
    EXPECT_NE(replayed.err.find("--as-sequence: a state replayed as its live chunks allocated in address order"),
              std::string::npos) << replayed.err;
  }
}

}  // namespace
