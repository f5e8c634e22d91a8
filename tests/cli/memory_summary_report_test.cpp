// `fragscope report` of torch.cuda.memory_summary() tables (a state: one moment, no layout): a
// summary printed after the OOM error it goes with (golden text and JSON: the message's failure,
// the summary's state, the message's numbers checked against it), a summary alone (exit 0, its
// counters in JSON), a summary that contradicts the message, and an unreadable number (exit 2).
//
// After an intended change of the output, regenerate the golden files with
//   FRAGSCOPE_UPDATE_GOLDEN=1 ctest -R MemorySummaryReport
// and review the diff.
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/cli_fixture.hpp"
#include "support/golden.hpp"
#include "support/memory_summary_text.hpp"

namespace {

using fragscope::testing::CliResult;
using fragscope::testing::ExpectGolden;
namespace summary = fragscope::testing::summary;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

class MemorySummaryReport : public fragscope::testing::CliTest {
 protected:
  // The path, relative to the test's folder, as the golden files show it.
  std::string Write(const std::string& name, const std::string& text) {
    std::ofstream(Path(name)) << text;
    return name;
  }
  CliResult RunHere(std::vector<std::string> args) {
    for (std::string& a : args)
      if (a.find(".log") != std::string::npos) a = Path(a);
    return Run(args);
  }
  // Output with this test's folder taken out, for the golden files.
  std::string Relative(std::string text) const {
    const std::string dir = Path("");
    for (std::size_t at = text.find(dir); at != std::string::npos; at = text.find(dir)) text.erase(at, dir.size());
    return text;
  }
};

// PyTorch's pre-2.0 wording, this test's own numbers, agreeing with summary::OldTable.
const char kOldMessage[] =
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 1.04 GiB "
    "already allocated; 1.20 GiB free; 12.13 GiB reserved in total by PyTorch)\n";

TEST_F(MemorySummaryReport, SummaryAfterItsErrorShowsBothAndChecksTheNumbers) {
  const std::string log = Write("oom.log", "epoch 3\n" + std::string(kOldMessage) + summary::OldTable(0, 1, 1));
  const CliResult text = RunHere({"report", log});
  EXPECT_EQ(text.code, 1) << "a summary beside an OOM message reports an OOM; " << text.err;
  EXPECT_NE(text.out.find("non-releasable: 11.09 GiB of the 12.13 GiB reserved is free inside segments that also "
                          "hold live blocks"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the allocator had raised 1 out-of-memory error by then"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("checked against the memory summary on line 4:"), std::string::npos) << text.out;
  ExpectGolden("report-memory-summary-oom.txt", Relative(text.out));

  const CliResult json = RunHere({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  ExpectGolden("report-memory-summary-oom.json", Relative(json.out));
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["format"], "PyTorch memory summary");
  ASSERT_EQ(j["devices"].size(), 1u);
  const auto& d = j["devices"][0];
  EXPECT_EQ(d["kind"], "state");
  EXPECT_EQ(d["in_use"], 1062 * kMiB);
  EXPECT_EQ(d["reserved"], 12420 * kMiB);
  EXPECT_EQ(d["non_releasable"], 11357 * kMiB);
  EXPECT_EQ(d["free_in_regions"], (12420 - 1062) * kMiB);
  EXPECT_EQ(d["oom_count"], 1);
  EXPECT_EQ(d["alloc_retries"], 1);
  EXPECT_EQ(d["size_margin"], kMiB);
  EXPECT_TRUE(d["limit"].is_null());
  EXPECT_TRUE(d["holes"].is_null());  // no layout: unknown, never 0
  EXPECT_TRUE(d["requested"].is_null() || !d.contains("requested"));
  ASSERT_EQ(j["messages"].size(), 1u);
  const auto& m = j["messages"][0];
  EXPECT_EQ(m["line"], 2);
  EXPECT_EQ(m["device"], 0);
  EXPECT_EQ(m["summary_check"]["summary_line"], 4);
  EXPECT_TRUE(m["summary_check"]["agrees"].get<bool>());
  EXPECT_EQ(m["summary_check"]["checks"].size(), 3u);  // A, Rv (this wording gives no U), non-releasable
}

TEST_F(MemorySummaryReport, SummaryAloneIsAStateWithItsCounters) {
  const std::string log = Write("step.log", summary::NewTable(0, 0, 0));
  const CliResult json = RunHere({"report", log, "--json"});
  ASSERT_EQ(json.code, 0) << "no OOM counted, no message: " << json.err;
  const auto j = nlohmann::json::parse(json.out);
  const auto& d = j["devices"].at(0);
  EXPECT_EQ(d["max_reserved"], 14600 * kMiB);
  EXPECT_EQ(d["max_in_use"], 14400 * kMiB);
  EXPECT_EQ(d["pools"]["large"]["reserved"], 14560 * kMiB);
  EXPECT_EQ(d["pools"]["small"]["non_releasable"], 1512 * 1024);
  EXPECT_EQ(d["oom_count"], 0);
  EXPECT_TRUE(j["messages"].empty());
  const CliResult text = RunHere({"report", log});
  EXPECT_NE(text.out.find("reserved but unallocated: 262.00 MiB (reserved less in use, by its own counts"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("the allocator had raised no out-of-memory error by then"), std::string::npos) << text.out;
}

TEST_F(MemorySummaryReport, SummaryThatContradictsTheMessageSaysSo) {
  // The summary of an earlier step: far less reserved than the error says.
  const std::string log = Write("two.log", summary::NewTable(0, 0, 0) + kOldMessage);
  const CliResult json = RunHere({"report", log, "--json"});
  ASSERT_EQ(json.code, 1) << json.err;
  const auto check = nlohmann::json::parse(json.out)["messages"].at(0)["summary_check"];
  EXPECT_FALSE(check["agrees"].get<bool>());
  EXPECT_EQ(check["checks"].back(), "the summary was printed before the error, at another moment");
}

TEST_F(MemorySummaryReport, UnreadableNumberExitsTwoNamingTheLine) {
  std::string table = summary::OldTable(0, 0, 0);
  table.replace(table.find("12420 MB"), 8, "12420 XB");
  const std::string log = Write("bad.log", table);
  const CliResult r = RunHere({"report", log});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("line 16: GPU reserved memory, Cur Usage: \"12420 XB\" is not a size"), std::string::npos)
      << r.err;
}

}  // namespace
