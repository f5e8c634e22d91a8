// `fragscope replay` and `compare` reproduce an OOM where it happened: a configuration that sets no
// limit (nor virtual devices) runs under the limit the trace recorded, as the inspector's compare
// does. Before, synth-oom (29 OOMs under limit=2GiB) replayed with 0 OOMs under every policy on its
// 16 GiB simulated device; --no-recorded-limit keeps that measurement of reserved memory.
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_commands.hpp"

namespace {

TEST_F(Cli, ReplayKeepsTheRecordedLimit) {
  Result r = Run({"replay", Sample("synth-oom.fst"), "--alloc-conf", "growth=on", "--no-min-limit", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;  // the OOM is reproduced
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["limit_as_recorded"], true);
  EXPECT_NE(json["alloc_conf"].get<std::string>().find("limit=2GiB"), std::string::npos) << json["alloc_conf"];
  EXPECT_EQ(json["stopped_at_oom"], true);
  ASSERT_EQ(json["devices"][0]["ooms"].size(), 1u);
  EXPECT_EQ(json["devices"][0]["ooms"][0]["request"], 330u << 20);
  EXPECT_EQ(json["devices"][0]["ooms"][0]["limit"], 2048u << 20);

  r = Run({"replay", Sample("synth-oom.fst"), "--alloc-conf", "growth=on", "--no-min-limit"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("\n           limit 2.00 GiB as recorded (--no-recorded-limit replays without it)\n"),
            std::string::npos) << r.out;

  // Without it: the whole simulated device, no OOM (what each policy reserves, unconstrained).
  r = Run({"replay", Sample("synth-oom.fst"), "--alloc-conf", "growth=on", "--no-recorded-limit", "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["limit_as_recorded"], false);
  EXPECT_EQ(json["alloc_conf"].get<std::string>().find("limit="), std::string::npos) << json["alloc_conf"];
  EXPECT_TRUE(json["devices"][0]["ooms"].empty());
  EXPECT_EQ(json["devices"][0]["peak_reserved"], 2466250752u);  // 2.30 GiB: more than the 2 GiB it had

  // A limit of its own stands.
  r = Run({"replay", Sample("synth-oom.fst"), "--alloc-conf", "growth=on,limit=4GiB", "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["limit_as_recorded"], false);
  EXPECT_NE(json["alloc_conf"].get<std::string>().find("limit=4GiB"), std::string::npos) << json["alloc_conf"];

  // A trace recorded without a limit has none to keep.
  r = Run({"replay", Sample("synth-small.fst"), "--json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["limit_as_recorded"], false);
}

// The default rows of compare under the recorded 2 GiB: fragscope's default policy fits, the
// frameworks' allocators run out (the counts are each replay's, past every OOM).
TEST_F(Cli, CompareKeepsTheRecordedLimit) {
  Result r = Run({"compare", Sample("synth-oom.fst"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  const auto& rows = json["configurations"];
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& row : rows) {
    EXPECT_EQ(row["limit_as_recorded"], true) << row;
    EXPECT_LE(row["peak_reserved"].get<std::uint64_t>(), 2048u << 20) << row;
  }
  EXPECT_EQ(rows[0]["ooms"], 0);  // the default policy
  EXPECT_EQ(rows[0]["fits"], true);
  EXPECT_EQ(rows[1]["ooms"], 197);  // preset=tensorflow
  EXPECT_EQ(rows[2]["ooms"], 164);  // preset=tensorflow,growth=off
  EXPECT_EQ(rows[3]["ooms"], 50);   // preset=pytorch
  EXPECT_EQ(rows[4]["ooms"], 14);   // preset=pytorch,expandable_segments=on
  EXPECT_FALSE(json["recorded"].contains("limit_as_recorded"));

  r = Run({"compare", Sample("synth-oom.fst"), "--alloc-conf", "growth=on"});
  EXPECT_NE(r.out.find("\ngrowth=on (limit 2.00 GiB as recorded) "), std::string::npos) << r.out;

  r = Run({"compare", Sample("synth-oom.fst"), "--no-recorded-limit", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  json = nlohmann::json::parse(r.out);
  for (const auto& row : json["configurations"]) {
    EXPECT_EQ(row["limit_as_recorded"], false) << row;
    EXPECT_EQ(row["ooms"], 0) << row;
  }
  // min-limit searches the limit itself: no such flag there.
  EXPECT_EQ(Run({"min-limit", Sample("synth-oom.fst"), "--no-recorded-limit"}).code, 2);
}

}  // namespace
