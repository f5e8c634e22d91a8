// `fragscope convert` and `synth` as a user runs them: round trips that keep the report, other
// tools' formats read by content and written, states never written as histories, seeded and
// configured synthetic traces.
//
//
// Golden files live in tests/golden/; after an intended change of the output, regenerate them with
//   FRAGSCOPE_UPDATE_GOLDEN=1 ctest -R Cli
// and review the diff.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_commands.hpp"

namespace {

// An error message converts to nothing (its numbers are in report's diagnosis, not in events):
// refused, as replay refuses it, instead of an empty trace and exit 0.
TEST_F(Cli, ConvertRefusesAnErrorMessage) {
  {
    std::ofstream log(Path("oom.log"));
    log << "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; "
           "1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\n";
  }
  const Result r = Run({"convert", Path("oom.log"), Path("oom.jsonl")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("holds numbers, not allocations: there is nothing to convert"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Path("oom.jsonl")));
}

TEST_F(Cli, ConvertRoundTripKeepsTheReport) {
  ASSERT_EQ(Run({"convert", Sample("synth-small.fst"), Path("t.jsonl")}).code, 0);
  ASSERT_EQ(Run({"convert", Path("t.jsonl"), Path("t.fst"), "--to", "fst"}).code, 0);
  auto original = nlohmann::json::parse(Run({"report", Sample("synth-small.fst"), "--json"}).out);
  auto via_jsonl = nlohmann::json::parse(Run({"report", Path("t.jsonl"), "--json"}).out);
  auto back = nlohmann::json::parse(Run({"report", Path("t.fst"), "--json"}).out);
  for (auto* json : {&original, &via_jsonl, &back}) {
    json->erase("trace");
    json->erase("format");
  }
  EXPECT_EQ(original["devices"], via_jsonl["devices"]);
  EXPECT_EQ(original["devices"], back["devices"]);
  EXPECT_EQ(original["events"], back["events"]);
  // One JSON object per line, the header first.
  std::istringstream lines(Slurp(Path("t.jsonl")));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(nlohmann::json::parse(line)["type"], "header");
  std::getline(lines, line);
  EXPECT_TRUE(nlohmann::json::parse(line).contains("seq"));
}

TEST_F(Cli, ConvertsToRmmCsvAndChromeTrace) {
  ASSERT_EQ(Run({"convert", Sample("synth-small.fst"), Path("t.csv")}).code, 0);
  ASSERT_EQ(Run({"convert", Sample("synth-small.fst"), Path("t.json")}).code, 0);
  // The RMM log reads back as a trace with the same allocation sequence: same peak LOAD.
  const auto original = nlohmann::json::parse(Run({"report", Sample("synth-small.fst"), "--json"}).out);
  const Result from_csv = Run({"report", Path("t.csv"), "--json"});
  ASSERT_EQ(from_csv.code, 0) << from_csv.err;
  const auto csv = nlohmann::json::parse(from_csv.out);
  EXPECT_EQ(csv["format"], "RMM log (CSV)");
  EXPECT_EQ(csv["devices"][0]["peak_load"], original["devices"][0]["peak_load"]);
  // The Chrome trace is one JSON document with counter events.
  const auto chrome = nlohmann::json::parse(Slurp(Path("t.json")));
  const auto& events = chrome.is_array() ? chrome : chrome["traceEvents"];
  ASSERT_FALSE(events.empty());
  bool counter = false;
  for (const auto& event : events) counter |= event.value("ph", "") == "C";
  EXPECT_TRUE(counter);
}

// A contract review: convert of a state (one moment: a TensorFlow dump, a snapshot without trace
// events) to an RMM log or a Chrome trace wrote an invented history (min-limit then answered on the
// RMM log; the Chrome counters rose over 635 us). Refused; .fst and .jsonl keep it a state.
TEST_F(Cli, ConvertRefusesToWriteAStateAsAHistory) {
  std::vector<std::string> states = {std::string(FRAGSCOPE_SOURCE_DIR) + "/tests/hostile/inputs/tf_clean.log"};
  const std::string flexgen = std::string(FRAGSCOPE_SOURCE_DIR) + "/../shared/data/torch/pt_flexgen_opt_oom_state.pickle";
  if (fs::exists(flexgen)) states.push_back(flexgen);
  for (const std::string& state : states) {
    for (const auto& [out, to] : std::vector<std::pair<std::string, std::string>>{
             {"x.csv", ""}, {"x.json", ""}, {"x.fst", "rmm-csv"}, {"y.jsonl", "chrome"}}) {
      std::vector<std::string> args = {"convert", state, Path(out)};
      if (!to.empty()) args.insert(args.end(), {"--to", to});
      const Result r = Run(args);
      EXPECT_EQ(r.code, 2) << state << " -> " << out << " " << to;
      EXPECT_EQ(r.err.rfind("error: " + state + ": a state (", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(to == "chrome" || out == "x.json" ? "a Chrome trace holds only a history"
                                                             : "an RMM CSV log holds only a history"),
                std::string::npos) << r.err;
      EXPECT_NE(r.err.find("A fragscope trace (.fst, --to fst) or JSON Lines (.jsonl, --to jsonl) keeps it as a state"),
                std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(Path(out))) << out;
    }
    // The formats that can hold a state keep it one, with the same numbers.
    const auto original = nlohmann::json::parse(Run({"report", state, "--json"}).out);
    for (const char* out : {"s.fst", "s.jsonl"}) {
      ASSERT_EQ(Run({"convert", state, Path(out)}).code, 0) << out;
      const auto back = nlohmann::json::parse(Run({"report", Path(out), "--json"}).out);
      ASSERT_EQ(back["devices"].size(), original["devices"].size());
      for (std::size_t i = 0; i < back["devices"].size(); ++i) {
        EXPECT_EQ(back["devices"][i]["kind"], "state") << out;
        EXPECT_EQ(back["devices"][i]["in_use"], original["devices"][i]["in_use"]) << out;
        EXPECT_EQ(back["devices"][i]["reserved"], original["devices"][i]["reserved"]) << out;
      }
      fs::remove(Path(out));
    }
  }
}

TEST_F(Cli, ReadsOtherToolsFilesByContent) {
  const fs::path data = fs::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data";
  if (!fs::exists(data)) GTEST_SKIP() << data << " is absent: no third-party traces to read";
  // The extension says nothing: a copy named .bin is still recognized.
  fs::copy_file(data / "torch" / "pt_linear_grad_tiny.pickle", Path("snapshot.bin"));
  Result r = Run({"report", Path("snapshot.bin"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["format"], "PyTorch memory snapshot");
  r = Run({"report", (data / "tf" / "01_voletiv-IIIT-deep-learning-course-2017-summer_Assignment2-Readme.log").string(),
           "--json", "--no-min-limit"});
  EXPECT_EQ(r.code, 1) << r.err;  // the log is an OOM
  const auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["format"], "TensorFlow BFC log");
  EXPECT_EQ(json["devices"][0]["ooms"][0]["cause"], "request-too-large");
}

TEST_F(Cli, SynthIsSeeded) {
  ASSERT_EQ(Run({"synth", "--events", "5000", "--seed", "9", "--out", Path("a.fst")}).code, 0);
  ASSERT_EQ(Run({"synth", "--events", "5000", "--seed", "9", "--out", Path("b.fst")}).code, 0);
  ASSERT_EQ(Run({"synth", "--events", "5000", "--seed", "10", "--out", Path("c.fst")}).code, 0);
  auto report = [&](const std::string& name) {
    auto json = nlohmann::json::parse(Run({"report", Path(name), "--json"}).out);
    json.erase("trace");
    return json;
  };
  EXPECT_EQ(report("a.fst"), report("b.fst"));
  EXPECT_NE(report("a.fst")["devices"], report("c.fst")["devices"]);
  EXPECT_GE(report("a.fst")["events"].get<std::uint64_t>(), 5000u);
}

// A contract review: synth ignored FRAGSCOPE_ALLOC_CONF, which applies to every command without
// --alloc-conf. It runs the workload under it now; --alloc-conf still comes first.
TEST_F(Cli, SynthHonoursTheEnvironmentsConfiguration) {
  const std::vector<std::string> synth = {"synth", "--events", "2000", "--seed", "1", "--out"};
  const auto run = [&](const char* env, std::vector<std::string> args) {
    if (env != nullptr) setenv("FRAGSCOPE_ALLOC_CONF", env, 1);
    const Result r = Run(args);
    unsetenv("FRAGSCOPE_ALLOC_CONF");
    return r;
  };
  auto with = [&](const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = synth;
    args.push_back(Path(out));
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  ASSERT_EQ(run("limit=1GiB", with("env.fst")).code, 0);
  ASSERT_EQ(run(nullptr, with("flag.fst", {"--alloc-conf", "limit=1GiB"})).code, 0);
  ASSERT_EQ(run(nullptr, with("plain.fst")).code, 0);
  ASSERT_EQ(run("  ", with("blank.fst")).code, 0);
  ASSERT_EQ(run("limit=1GiB", with("both.fst", {"--alloc-conf", "growth=on"})).code, 0);
  EXPECT_EQ(Slurp(Path("env.fst")), Slurp(Path("flag.fst"))) << "the variable is the same as the flag";
  EXPECT_EQ(Slurp(Path("blank.fst")), Slurp(Path("plain.fst"))) << "a blank variable is not set";
  const auto report = [&](const std::string& name) {
    return nlohmann::json::parse(Run({"report", Path(name), "--json", "--no-min-limit"}).out);
  };
  const auto env = report("env.fst");
  EXPECT_NE(env["alloc_conf"].get<std::string>().find("limit=1GiB"), std::string::npos) << env["alloc_conf"];
  EXPECT_EQ(env["devices"][0]["limit"], 1u << 30);
  EXPECT_EQ(env["devices"][0]["oom_count"], 88) << "the workload ran out of memory under the 1 GiB limit";
  for (const char* name : {"plain.fst", "both.fst"}) {
    const auto other = report(name);
    EXPECT_EQ(other["alloc_conf"].get<std::string>().find("limit="), std::string::npos) << name;
    EXPECT_EQ(other["devices"][0]["limit"], 80ull << 30) << name;
    EXPECT_EQ(other["devices"][0]["oom_count"], 0) << name;
  }
  // A bad variable is named as such, and nothing is written.
  const Result bad = run("grwoth=on", with("bad.fst"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.rfind("error: FRAGSCOPE_ALLOC_CONF: unknown key 'grwoth' in allocator configuration", 0), 0u) << bad.err;
  EXPECT_FALSE(fs::exists(Path("bad.fst")));
  const Result flag = run(nullptr, with("bad.fst", {"--alloc-conf", "grwoth=on"}));
  EXPECT_EQ(flag.code, 2);
  EXPECT_EQ(flag.err.rfind("error: --alloc-conf: unknown key 'grwoth'", 0), 0u) << flag.err;
  const Result help = Run({"synth", "--help"});
  EXPECT_NE(help.out.find("(default: FRAGSCOPE_ALLOC_CONF, else backing=sim,capacity=80GiB)"), std::string::npos) << help.out;
}

}  // namespace
