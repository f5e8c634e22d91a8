// TensorFlow / XLA BFC logs made by the project's own script, one per format era and edge case:
// tests/tools/make_tf_fixtures.py invents each allocator state, computes its facts by ClassifyOom's documented
// rules (not with this reader), prints it as that era's log and writes expected.json. Here the C++
// reader must find exactly those facts. Regenerate with
//   python3 tests/tools/make_tf_fixtures.py tests/import/fixtures/tf
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fragscope/traces/tf_bfc_log.hpp"
#include "import/tf_test_support.hpp"
#include "traces/trace_test_support.hpp"

namespace fragscope::traces {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf";

using testing::HasWarning;

nlohmann::json Expected() {
  std::ifstream in(kFixtures / "expected.json");
  return nlohmann::json::parse(in);
}

TEST(TfFixtures, EveryEraGivesTheFactsOfItsState) {
  const nlohmann::json files = Expected();
  std::size_t whole = 0;
  for (const auto& file : files) {
    // Dumps of which only a part survived: tests/import/tf_partial_test.cpp.
    if (file["dumps"][0].contains("partial")) continue;
    ++whole;
    const std::string name = file["file"];
    SCOPED_TRACE(name);
    const auto dumps = ParseTfBfcLog(testing::ReadText((kFixtures / name).string()), name);
    ASSERT_EQ(dumps.size(), file["dumps"].size());
    for (std::size_t i = 0; i < dumps.size(); ++i) {
      const TfBfcDump& d = dumps[i];
      const nlohmann::json& x = file["dumps"][i];
      SCOPED_TRACE(i);
      EXPECT_EQ(d.allocator, x["allocator"].get<std::string>());
      EXPECT_EQ(d.rounded, x["rounded"].get<std::uint64_t>());
      EXPECT_EQ(d.request_exact, x["request_exact"].get<bool>());
      if (d.request_exact) {
        EXPECT_EQ(d.request, x["request"].get<std::uint64_t>());
      } else {  // printed as a human size: never above the rounded size
        EXPECT_LE(d.request, d.rounded);
      }
      EXPECT_EQ(d.chunks.size(), x["chunks"].get<std::size_t>());
      EXPECT_EQ(d.regions.size(), x["regions"].get<std::size_t>());
      if (x.contains("header_only")) {
        EXPECT_TRUE(HasWarning(d.warnings, "chunk detail missing"));
        EXPECT_TRUE(HasWarning(d.warnings, fmt::format("{} of 100 cells in use", x["bar_in_use_cells"].get<int>())));
        EXPECT_FALSE(d.cause_known);
        EXPECT_EQ(d.cause, OomCause::kUnknown) << "no limit in the dump: no invented cause";
        if (d.limit == 0) {  // the record says the limit and the headroom are absent, not 0
          EXPECT_FALSE(d.ToOomRecord().Has(kOomLimit));
          EXPECT_FALSE(d.ToOomRecord().Has(kOomHeadroom));
          EXPECT_TRUE(d.ToOomRecord().Has(kOomRequest | kOomRounded));
        }
        continue;
      }
      EXPECT_EQ(d.reserved, x["reserved"].get<std::uint64_t>());
      EXPECT_EQ(d.in_use, x["in_use"].get<std::uint64_t>());
      EXPECT_EQ(d.in_use_chunks, x["in_use_chunks"].get<std::uint64_t>());
      EXPECT_EQ(d.free_chunks, x["free_chunks"].get<std::uint64_t>());
      EXPECT_EQ(d.largest_free, x["largest_free"].get<std::uint64_t>());
      EXPECT_EQ(d.free_in_regions, x["free_in_regions"].get<std::uint64_t>());
      EXPECT_EQ(d.limit, x["limit"].get<std::uint64_t>());
      EXPECT_EQ(d.stats.fields, x["stats_fields"].get<int>());
      EXPECT_TRUE(d.cause_known);
      EXPECT_EQ(ToString(d.cause), x["cause"].get<std::string>());
      // Chunks, Stats and bin lines agree in a well-formed dump: no cross-check may complain.
      EXPECT_FALSE(HasWarning(d.warnings, "disagree")) << ::testing::PrintToString(d.warnings);
      EXPECT_FALSE(HasWarning(d.warnings, "Stats InUse")) << ::testing::PrintToString(d.warnings);
      EXPECT_FALSE(HasWarning(d.warnings, "do not follow")) << ::testing::PrintToString(d.warnings);
    }
    // And the whole log maps to a trace with one OOM event per dump.
    const Trace trace = TfBfcDumpsToTrace(dumps, name);
    const auto ooms = std::count_if(trace.events.begin(), trace.events.end(),
                                    [](const Event& e) { return e.type == EventType::kOom; });
    EXPECT_EQ(static_cast<std::size_t>(ooms), dumps.size());
  }
  EXPECT_EQ(whole, 6u);
}

}  // namespace
}  // namespace fragscope::traces
