// `fragscope report` of a PyTorch snapshot that ends in an OOM: the cause by the segment-size rule
// (docs/importers.md) and its words in PyTorch's terms — which cached blocks could serve the request
// (its stream, its pool), how much more free memory the segment PyTorch asks for needs, and no claim
// about a device capacity the snapshot does not record. Also a device with nothing recorded, and
// snapshots with nothing allocated. The snapshots are written here (import/snapshot_oom_cases.hpp).
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "import/snapshot_oom_cases.hpp"
#include "support/cli_fixture.hpp"

namespace {

using namespace fragscope::testing::snapshot_oom_cases;
using fragscope::testing::CliResult;

// Whether the JSON string `text` begins with `prefix`, saying what it holds when not.
::testing::AssertionResult StartsWith(const nlohmann::json& text, const std::string& prefix) {
  if (text.get<std::string>().rfind(prefix, 0) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << text << " does not start with \"" << prefix << "\"";
}

class SnapshotOomReport : public fragscope::testing::CliTest {
 protected:
  std::string Write(const std::string& name, const Py& root) {
    const std::vector<std::uint8_t> bytes = Pickle(root);
    std::ofstream(Path(name), std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                      static_cast<std::streamsize>(bytes.size()));
    return Path(name);
  }
  // The report's JSON; its one OOM in `oom`.
  nlohmann::json Report(const std::string& name, const Py& root, nlohmann::json* oom) {
    const CliResult r = Run({"report", Write(name, root), "--json"});
    EXPECT_EQ(r.code, 1) << r.err;  // an OOM reported
    nlohmann::json doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["devices"].size(), 1u);
    EXPECT_EQ(doc["devices"][0]["ooms"].size(), 1u);
    *oom = doc["devices"][0]["ooms"][0];
    return doc;
  }
};

TEST_F(SnapshotOomReport, FreeBlockOnAnotherStreamIsNoHelp) {
  nlohmann::json oom;
  Report("cross_stream.pickle", CrossStream(), &oom);
  EXPECT_EQ(oom["cause"], "fragmentation");
  EXPECT_EQ(oom["request"], 20 * kMiB);
  EXPECT_EQ(oom["headroom"], kMiB);
  EXPECT_EQ(oom["explanation"],
            "30.00 MiB are cached free inside PyTorch's segments and 1.00 MiB free on the device, together enough "
            "for the request of 20.00 MiB, but none of the cached memory can serve it: 30.00 MiB is cached on the "
            "default stream, and PyTorch serves a request only from blocks cached on its own stream (this one ran "
            "on stream 0x55aa00001000); and the fresh 20.00 MiB segment it then needs does not fit in the 1.00 MiB "
            "free");
  EXPECT_EQ(oom["suggestion"],
            "19.00 MiB more free on the device would have let PyTorch allocate that segment (a request of 10 MiB or "
            "more gets a segment of its size rounded up to 2 MiB); or free tensors so that a cached block of 20.00 "
            "MiB comes free");
  EXPECT_NE(oom["framework_advice"]["advice"].get<std::string>().find("allocate and free these tensors on one stream"),
            std::string::npos)
      << oom.dump();
}

TEST_F(SnapshotOomReport, LargePoolBlockIsNoHelpToASmallRequest) {
  nlohmann::json oom;
  Report("small_pool.pickle", SmallPool(), &oom);
  EXPECT_EQ(oom["cause"], "fragmentation");
  const std::string explanation = oom["explanation"];
  EXPECT_NE(explanation.find("none of the cached memory can serve it: 30.00 MiB is in large-pool segments, and a "
                             "request of at most 1 MiB is served only from small-pool (2 MiB) segments; and the "
                             "fresh 2.00 MiB segment it then needs does not fit in the 0 B free"),
            std::string::npos)
      << explanation;
  EXPECT_EQ(explanation.find("less than the request"), std::string::npos) << explanation;
}

TEST_F(SnapshotOomReport, LargestUsableBlockTooSmall) {
  nlohmann::json oom;
  Report("mid.pickle", MidRequest(), &oom);
  EXPECT_EQ(oom["cause"], "fragmentation");
  EXPECT_NE(oom["explanation"].get<std::string>().find(
                "the largest cached block it could use (on the default stream, in the large pool) is 4.00 MiB, less "
                "than the request of 5.00 MiB (4.00 MiB free in such blocks)"),
            std::string::npos)
      << oom["explanation"];
}

// How much more free memory: the segment PyTorch asks for less what was free, not the request less
// the free memory (512 KiB asked: a 2 MiB small-pool segment; 5 MiB asked: a 20 MiB one).
TEST_F(SnapshotOomReport, MoreNeededFollowsTheSegmentSize) {
  struct Case {
    const char* file;
    Py snapshot;
    const char* suggestion;
  };
  for (const Case& c :
       {Case{"small_pool.pickle", SmallPool(),
             "2.00 MiB more free on the device would have let PyTorch allocate that segment (a request of at most 1 "
             "MiB gets a 2 MiB small-pool segment)"},
        Case{"mid.pickle", MidRequest(),
             "19.00 MiB more free on the device would have let PyTorch allocate that segment (a request between 1 and "
             "10 MiB gets a 20 MiB segment)"},
        Case{"nothing_cached.pickle", NothingCached(), "14.00 MiB more free on the device"}}) {
    nlohmann::json oom;
    Report(c.file, c.snapshot, &oom);
    EXPECT_TRUE(StartsWith(oom["suggestion"], c.suggestion)) << c.file;
  }
}

TEST_F(SnapshotOomReport, RequestFitsInFreeButItsSegmentDoesNot) {
  nlohmann::json oom;
  Report("nothing_cached.pickle", NothingCached(), &oom);
  EXPECT_EQ(oom["cause"], "fragmentation");
  EXPECT_EQ(oom["explanation"],
            "the request of 5.00 MiB fits in the 6.00 MiB free on the device, but with no cached block for it "
            "PyTorch asks the driver for a 20.00 MiB segment (a request between 1 and 10 MiB gets a 20 MiB "
            "segment), which does not fit");
}

TEST_F(SnapshotOomReport, CapacityWithoutAKnownDeviceSize) {
  nlohmann::json oom;
  const nlohmann::json doc = Report("capacity.pickle", Capacity(), &oom);
  EXPECT_EQ(doc["devices"][0]["device"], 1);
  EXPECT_TRUE(doc["devices"][0]["capacity"].is_null());
  EXPECT_EQ(oom["cause"], "capacity");
  EXPECT_EQ(oom["explanation"],
            "the request of 64.00 MiB is more than the device's free memory (1.00 MiB) and PyTorch's cached free "
            "blocks (10.00 MiB) together (11.00 MiB); 30.00 MiB are in live tensors. A snapshot does not record the "
            "device's capacity, so whether the request could ever fit is not known");
  EXPECT_NE(oom["suggestion"].get<std::string>().find("PyTorch needs a fresh 64.00 MiB segment for it (a request of "
                                                      "10 MiB or more gets a segment of its size rounded up to 2 "
                                                      "MiB): 63.00 MiB more free on the device"),
            std::string::npos)
      << oom["suggestion"];
  const CliResult text = Run({"report", Path("capacity.pickle")});
  EXPECT_EQ(text.out.find("can ever give"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("request-too-large"), std::string::npos) << text.out;
}

// 512 MiB free and a 20 MiB segment needed: not an out-of-memory by the numbers; a per-process
// memory fraction is the likely reason, and it allowed less than reserved + S = 40 MiB.
TEST_F(SnapshotOomReport, SegmentThatFitsInFreeIsInconsistent) {
  nlohmann::json oom;
  Report("fraction.pickle", MidRequestWithFree(512 * kMiB), &oom);
  EXPECT_EQ(oom["cause"], "unknown");
  const std::string explanation = oom["explanation"];
  EXPECT_TRUE(StartsWith(oom["explanation"],
                         "inconsistent numbers: the 20.00 MiB segment this request needs (a request between 1 and 10 "
                         "MiB gets a 20 MiB segment) fits in the 512.00 MiB the device reported free at the failure"));
  EXPECT_NE(explanation.find("per-process memory fraction"), std::string::npos) << explanation;
  EXPECT_EQ(explanation.find("another process"), std::string::npos) << explanation;
  EXPECT_NE(oom["suggestion"].get<std::string>().find("it allowed less than 40.00 MiB on this device (the 20.00 MiB "
                                                      "reserved plus the 20.00 MiB segment)"),
            std::string::npos)
      << oom["suggestion"];
  EXPECT_NE(oom["framework_advice"]["advice"].get<std::string>().find("torch.cuda.set_per_process_memory_fraction"),
            std::string::npos)
      << oom.dump();
}

// Device 1's trace list is empty while device 0's is not: its one block predates recording, so it has
// no history ratios (overhead 2 MiB / 4 KiB = 512 would describe the state recording started from).
TEST_F(SnapshotOomReport, DeviceWithNothingRecordedHasNoRatios) {
  constexpr std::uint64_t kB = 0x7f9000000000;
  const Py root = D({{"segments", L({Segment(0, kA, 20 * kMiB,
                                             {Block(kA, 4 * kMiB, "active_allocated"),
                                              Block(kA + 4 * kMiB, 16 * kMiB, "inactive")}),
                                     Segment(1, kB, 2 * kMiB,
                                             {Block(kB, 4096, "active_allocated"),
                                              Block(kB + 4096, 2 * kMiB - 4096, "inactive")},
                                             "small")})},
                     {"device_traces", L({L({Event("segment_alloc", kA, 20 * kMiB, 1), Event("alloc", kA, 4 * kMiB, 2)}),
                                          L({})})}});
  const CliResult r = Run({"report", Write("two.pickle", root), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["devices"].size(), 2u);
  EXPECT_DOUBLE_EQ(doc["devices"][0]["overhead"].get<double>(), 5.0);  // 20 MiB for 4 MiB
  const nlohmann::json& quiet = doc["devices"][1];
  EXPECT_EQ(quiet["peak_load"], 4096);
  EXPECT_EQ(quiet["peak_reserved"], 2 * kMiB);
  EXPECT_TRUE(quiet["overhead"].is_null());
  EXPECT_TRUE(quiet["utilization_at_peak"].is_null());
  EXPECT_TRUE(quiet["fragmentation_at_peak"].is_null());
  const CliResult text = Run({"report", Path("two.pickle")});
  EXPECT_EQ(text.out.find("512.00"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("device 1: all 4.00 KiB in 1 block were live before recording started"),
            std::string::npos)
      << text.out;
}

// Nothing allocated: in use and reserved are a known 0; no trace list at all names no device.
TEST_F(SnapshotOomReport, NothingAllocated) {
  const CliResult one = Run({"report", Write("nothing.pickle", D({{"segments", L({})}, {"device_traces", L({L({})})}})),
                             "--json"});
  ASSERT_EQ(one.code, 0) << one.err;
  const nlohmann::json doc = nlohmann::json::parse(one.out);
  ASSERT_EQ(doc["devices"].size(), 1u);
  EXPECT_EQ(doc["devices"][0]["in_use"], 0);
  EXPECT_EQ(doc["devices"][0]["reserved"], 0);
  EXPECT_TRUE(doc["devices"][0]["layout_complete"].get<bool>());
  EXPECT_EQ(doc["devices"][0]["free_in_regions"], 0);  // a whole listing of nothing: 0, not unknown
  EXPECT_EQ(doc["devices"][0]["holes"], 0);
  const CliResult text = Run({"report", Path("nothing.pickle")});
  EXPECT_NE(text.out.find("in use 0 B (its own count), reserved 0 B (its own count)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("nothing reserved: the evidence lists no segments, and its listing is whole"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("no layout"), std::string::npos) << text.out;

  const CliResult none =
      Run({"report", Write("empty.pickle", D({{"segments", L({})}, {"device_traces", L({})}})), "--json"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(nlohmann::json::parse(none.out)["devices"].size(), 0u);
  EXPECT_NE(Run({"report", Path("empty.pickle")}).out.find("no device: the evidence describes none"), std::string::npos);
}

}  // namespace
