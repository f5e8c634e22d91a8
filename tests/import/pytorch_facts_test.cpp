// The PyTorch snapshot reader against facts computed independently of it: Python's own unpickler
// (restricted: nothing executed) in tests/tools/pytorch_snapshot_facts.py wrote
// tests/import/pytorch_facts.json from the files in ../shared/data/torch/.
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/pytorch_snapshot.hpp"

namespace fragscope::traces {
namespace {

namespace fs = std::filesystem;

TEST(PytorchFacts, ReaderAgreesWithPythonsUnpickler) {
  const fs::path data = fs::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "torch";
  if (!fs::exists(data)) GTEST_SKIP() << data << " is absent: no PyTorch snapshots to check";
  std::ifstream facts_file(fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "pytorch_facts.json");
  const nlohmann::json facts = nlohmann::json::parse(facts_file);
  ASSERT_EQ(facts.size(), 4u);
  for (const auto& expected : facts) {
    const std::string file = expected["file"];
    SCOPED_TRACE(file);
    const Trace trace = ReadPytorchSnapshot((data / file).string());
    EXPECT_TRUE(trace.warnings.empty()) << trace.warnings.front();

    std::map<std::string, std::uint64_t> markers;
    std::uint64_t frees = 0;
    std::map<std::uint64_t, std::uint64_t> regions;          // address -> size
    std::map<std::uint64_t, std::uint64_t> live_requested;   // address -> requested
    for (const Event& e : trace.events) {
      switch (e.type) {
        case EventType::kMarker: ++markers[trace.TagName(e.tag)]; break;
        case EventType::kFree: ++frees; live_requested.erase(e.address); break;
        case EventType::kAlloc: live_requested[e.address] = e.size; break;
        case EventType::kRegionReserve: regions[e.address] = e.size; break;
        case EventType::kRegionRelease: regions.erase(e.address); break;
        default: break;
      }
    }
    const auto count = [&](const char* action) -> std::uint64_t {
      const std::string key = std::string("0:") + action;
      return expected["actions"].contains(key) ? expected["actions"][key].get<std::uint64_t>() : 0;
    };
    EXPECT_EQ(frees, count("free_completed"));
    EXPECT_EQ(markers["free_requested"], count("free_requested"));
    EXPECT_EQ(markers["snapshot"], count("snapshot"));
    std::uint64_t reserved = 0, requested = 0;
    for (const auto& [address, size] : regions) reserved += size;
    for (const auto& [address, size] : live_requested) requested += size;
    EXPECT_EQ(regions.size(), expected["segments"].get<std::uint64_t>());
    EXPECT_EQ(reserved, expected["reserved"].get<std::uint64_t>());
    EXPECT_EQ(live_requested.size(), expected["live_blocks_at_end"].get<std::uint64_t>());
    EXPECT_EQ(requested, expected["live_requested_at_end"].get<std::uint64_t>());
    // The blocks live before recording, as the header states them for like-for-like comparisons.
    const BlocksBeforeRecording* before = trace.header.source.BeforeRecording(0);
    ASSERT_NE(before, nullptr);
    EXPECT_EQ(before->blocks, expected["before_recording_blocks"].get<std::uint64_t>());
    EXPECT_EQ(before->requested, expected["before_recording_requested"].get<std::uint64_t>());
  }
}

}  // namespace
}  // namespace fragscope::traces
