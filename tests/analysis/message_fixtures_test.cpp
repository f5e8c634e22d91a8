// The diagnosis of the hand-made out-of-memory messages of tests/import/fixtures/oom_messages:
// analysis::DiagnoseMessage must give, for every message, the cause that
// tests/tools/make_oom_message_fixtures.py computed with its own arithmetic (the decision rule of
// ../shared/data/oom_messages/SOURCES.md, in the order of docs/importers.md). What the parser reads
// is checked in tests/import/oom_message_fixtures_test.cpp. Every entry of expected.json is tested,
// so a fixture the script adds needs no change here; one marked "known_disagreement" is skipped with
// its reason.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>  

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/oom.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "support/message_lines.hpp"
#include "support/shell.hpp"

namespace fragscope::analysis {
namespace {

const std::filesystem::path kFixtures =
    std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "oom_messages";

// The whole file (support/shell.hpp).
std::string ReadText(const std::filesystem::path& path) { return fragscope::testing::Slurp(path); }

TEST(MessageFixtures, EveryMessageGetsTheCauseTheScriptComputed) {
  ASSERT_TRUE(std::filesystem::is_regular_file(kFixtures / "expected.json"))
      << "run tests/tools/make_oom_message_fixtures.py " << kFixtures.string();
  std::ifstream in(kFixtures / "expected.json");
  const nlohmann::json files = nlohmann::json::parse(in);
  std::map<std::string, int> causes;
  std::size_t checked = 0;
  for (const auto& file : files) {
    const std::string name = file["file"];
    SCOPED_TRACE(name + " (" + file["family"].get<std::string>() + ")");
    const auto messages = traces::FindOomMessages(ReadText(kFixtures / name));
    ASSERT_EQ(messages.size(), file["messages"].size());
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const nlohmann::json& x = file["messages"][i];
      if (x.contains("known_disagreement")) {
        std::cout << "[ SKIPPED  ] " << name << " message " << i + 1 << ": known disagreement: "
                  << x["known_disagreement"].get<std::string>() << "\n";
        continue;
      }
      const MessageDiagnosis d = DiagnoseMessage(messages[i]);
      EXPECT_FALSE(fragscope::testing::PrintsANegativeFigure(d)) << "message " << i + 1 << ": a negative figure";
      const std::string want = x["cause"];
      EXPECT_EQ(traces::ToString(d.cause), want)
          << "message " << i + 1 << ": the script's arithmetic: " << x["why"].get<std::string>()
          << "\n  fragscope: " << d.explanation;
      ++causes[want];
      ++checked;
    }
  }
  EXPECT_GT(checked, 0u);
  for (const char* cause : {"capacity", "fragmentation", "backing", "request-too-large", "unknown"}) {
    EXPECT_GT(causes[cause], 0) << "no fixture checked with cause " << cause;
  }
}

}  // namespace
}  // namespace fragscope::analysis
