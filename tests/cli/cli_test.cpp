// The `fragscope` command line as a user runs it, what every command shares: help, exit codes,
// error messages, JSON shapes, golden reports of the committed sample traces, outputs that never
// damage an input. Replay, compare and min-limit are in cli_replay_test.cpp; convert and synth in
// cli_convert_synth_test.cpp.
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

TEST_F(Cli, HelpListsEverySubcommand) {
  const Result r = Run({"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* sub : {"report", "replay", "compare", "min-limit", "convert", "synth"}) {
    EXPECT_NE(r.out.find(sub), std::string::npos) << sub;
  }
  for (const char* sub : {"report", "replay", "compare", "min-limit", "convert", "synth"}) {
    const Result help = Run({sub, "--help"});
    EXPECT_EQ(help.code, 0) << sub;
    EXPECT_NE(help.out.find("--"), std::string::npos) << sub;
  }
}

TEST_F(Cli, UsageErrorsExitTwoAndSayWhy) {
  Result r = Run({});
  EXPECT_EQ(r.code, 2);
  r = Run({"frobnicate"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: unknown command 'frobnicate'; the commands are report, replay, compare, min-limit, "
                        "convert, synth", 0), 0u) << r.err;
  r = Run({"reprot", Sample("synth-small.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("(did you mean 'report'?)"), std::string::npos) << r.err;
  // CLI11's own usage errors read like the program's.
  r = Run({"report", "--bogus", Sample("synth-small.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  // The program's own options may follow the command.
  EXPECT_EQ(Run({"report", Sample("synth-small.fst"), "--log-level", "error"}).code, 0);
  r = Run({"replay"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("trace"), std::string::npos) << r.err;
  r = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "grwoth=on"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown key 'grwoth'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'growth'"), std::string::npos) << r.err;
  r = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--capacity", "lots"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--capacity: 'lots' is not a size"), std::string::npos) << r.err;
  r = Run({"synth", "--events", "0", "--out", Path("x.fst")});
  EXPECT_EQ(r.code, 2);
  // `-` reads standard input; as an output it is refused, not written as a file named "-".
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"convert", Sample("synth-small.fst"), "-", "--to", "jsonl"},
        std::vector<std::string>{"replay", Sample("synth-small.fst"), "--out", "-"},
        std::vector<std::string>{"synth", "--events", "10", "--out", "-"}}) {
    r = Run(args);
    EXPECT_EQ(r.code, 2) << args[0];
    EXPECT_NE(r.err.find("'-' (standard output) is not an output here"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "-")) << args[0];
  }
}

// Numbers the evidence does not give are null in the JSON, never 0: min-limit when nothing fits,
// and the reserved figures of evidence that records no reserved memory.
TEST_F(Cli, UnknownNumbersAreNullInJson) {
  const Result r = Run({"min-limit", Sample("synth-small.fst"), "--capacity", "4MiB", "--json"});
  ASSERT_EQ(r.code, 1) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["fits"], false);
  EXPECT_TRUE(doc["min_limit"].is_null()) << doc;
  EXPECT_TRUE(doc["overhead"].is_null()) << doc;
  const std::string profile = std::string(FRAGSCOPE_SOURCE_DIR) +
                              "/../shared/data/torch_profiler/kineto_resnet50_train_memevents.pt.trace.json.gz";
  if (!fs::exists(profile)) GTEST_SKIP() << profile << " is absent (../shared/data is not beside the project)";
  const Result p = Run({"report", profile, "--json"});
  ASSERT_EQ(p.code, 0) << p.err;
  for (const auto& device : nlohmann::json::parse(p.out)["devices"]) {
    EXPECT_EQ(device["reserved_known"], false) << device["device"];
    EXPECT_TRUE(device["peak_reserved"].is_null()) << device["device"];
    EXPECT_TRUE(device["limit"].is_null()) << device["device"];
  }
}

TEST_F(Cli, MissingAndMalformedFilesNameTheFile) {
  Result r = Run({"report", Path("missing.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("missing.fst"), std::string::npos) << r.err;
  std::ofstream(Path("garbage.fst"), std::ios::binary) << "this is not a trace at all, just text\n";
  r = Run({"report", Path("garbage.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("garbage.fst"), std::string::npos) << r.err;
  std::ofstream(Path("empty.fst"), std::ios::binary).flush();
  r = Run({"report", Path("empty.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("empty"), std::string::npos) << r.err;
  std::ofstream(Path("bad.jsonl"), std::ios::binary) << "{\"type\": \"header\"}\n{not json\n";
  r = Run({"report", Path("bad.jsonl")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("bad.jsonl"), std::string::npos) << r.err;
}

TEST_F(Cli, GoldenReportsOfTheSamples) {
  for (const std::string name : {"synth-small", "synth-oom"}) {
    SCOPED_TRACE(name);
    Result text = Run({"report", Sample(name + ".fst")});
    Result json = Run({"report", Sample(name + ".fst"), "--json"});
    const int expected = name == "synth-oom" ? 1 : 0;
    EXPECT_EQ(text.code, expected) << text.err;
    EXPECT_EQ(json.code, expected) << json.err;
    // The path in the output depends on the checkout: show it relative.
    auto relative = [&](std::string s) {
      const std::string absolute = Sample(name + ".fst");
      for (auto at = s.find(absolute); at != std::string::npos; at = s.find(absolute)) {
        s.replace(at, absolute.size(), "traces/samples/" + name + ".fst");
      }
      return s;
    };
    ExpectGolden("report-" + name + ".txt", relative(text.out));
    ExpectGolden("report-" + name + ".json", relative(json.out));
  }
}

// report reads the allocation sequence only when a trace has OOMs, in a second read of the input
// (the first keeps the model alone): from a file, and from standard input's kept copy, the minimal
// limit is the same.
TEST_F(Cli, ReportReadsTheSequenceAgainForTheMinimalLimit) {
  const Result file = Run({"report", Sample("synth-oom.fst"), "--json"});
  const Result piped = Run({"report", "-", "--json"}, Sample("synth-oom.fst"));
  ASSERT_EQ(file.code, 1) << file.err;
  ASSERT_EQ(piped.code, 1) << piped.err;
  const auto from_file = nlohmann::json::parse(file.out)["devices"][0]["ooms"][0];
  const auto from_stdin = nlohmann::json::parse(piped.out)["devices"][0]["ooms"][0];
  EXPECT_EQ(from_file["min_limit"], 2434793472u);
  EXPECT_EQ(from_stdin["min_limit"], from_file["min_limit"]);
  EXPECT_EQ(from_stdin["suggestion"], from_file["suggestion"]);
  // Without OOMs nothing is replayed: no second read, no minimal limit.
  const auto small = nlohmann::json::parse(Run({"report", "-", "--json"}, Sample("synth-small.fst")).out);
  EXPECT_TRUE(small["devices"][0]["ooms"].empty());
}

TEST_F(Cli, ReportJsonHasTheDocumentedShape) {
  const Result r = Run({"report", Sample("synth-oom.fst"), "--json"});
  const auto json = nlohmann::json::parse(r.out);
  ASSERT_TRUE(json.contains("events"));
  ASSERT_TRUE(json["devices"].is_array());
  const auto& device = json["devices"][0];
  for (const char* key : {"device", "peak_load", "peak_in_use", "peak_reserved", "overhead",
                          "utilization_at_peak", "ooms"}) {
    EXPECT_TRUE(device.contains(key)) << key;
  }
  ASSERT_FALSE(device["ooms"].empty());
  const auto& oom = device["ooms"][0];
  for (const char* key : {"seq", "request", "rounded", "limit", "reserved", "in_use", "free_in_regions",
                          "largest_free", "cause", "explanation"}) {
    EXPECT_TRUE(oom.contains(key)) << key;
  }
  EXPECT_GE(device["peak_reserved"].get<std::uint64_t>(), device["peak_load"].get<std::uint64_t>());
}

// Outputs never destroy inputs, and a write that fails is an error, not "written to".
TEST_F(Cli, OutputsNeverReplaceAnInputOrHideAWriteError) {
  ASSERT_EQ(Run({"synth", "--events", "3000", "--seed", "4", "--out", Path("in.fst")}).code, 0);
  const std::string original = Slurp(Path("in.fst"));
  fs::create_symlink(Path("in.fst"), Path("link.fst"));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"convert", Path("in.fst"), Path("in.fst")},
        std::vector<std::string>{"convert", Path("in.fst"), Path("link.fst")},
        std::vector<std::string>{"convert", Path("link.fst"), Path("in.fst"), "--to", "jsonl"},
        std::vector<std::string>{"replay", Path("in.fst"), "--alloc-conf", "growth=off", "--out",
                                 Path("link.fst")}}) {
    const Result r = Run(args);
    EXPECT_EQ(r.code, 2) << args[0] << " " << args[2];
    EXPECT_NE(r.err.find("the output is the input"), std::string::npos) << r.err;
    EXPECT_EQ(Slurp(Path("in.fst")), original) << "the input was changed";
  }
  if (fs::exists("/dev/full")) {
    for (const char* to : {"fst", "jsonl"}) {
      const Result r = Run({"convert", Path("in.fst"), "/dev/full", "--to", to});
      EXPECT_EQ(r.code, 2) << to;
      EXPECT_NE(r.err.find("/dev/full"), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("written to"), std::string::npos) << r.err;
    }
  }
  // A folder that does not exist: named, exit 2, nothing left behind.
  const Result r = Run({"convert", Path("in.fst"), Path("nowhere/out.jsonl")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nowhere/out.jsonl"), std::string::npos) << r.err;
  // A successful convert leaves exactly its output (no .partial file).
  ASSERT_EQ(Run({"convert", Path("in.fst"), Path("out.jsonl")}).code, 0);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().string().find(".partial"), std::string::npos) << entry.path();
  }
}

// Issue 13: a headless view drew a bad --alloc-conf into its PNG and exited 0; it is bad input.
TEST_F(Cli, HeadlessViewWithABadConfigurationExitsTwo) {
  if (Run({"--help"}).out.find("view") == std::string::npos) GTEST_SKIP() << "built without the inspector";
  const Result r = Run({"view", Sample("synth-small.fst"), "--screenshot", Path("shot.png"), "--alloc-conf",
                        "bad=1", "--alloc-conf", "growth=on"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("error: --alloc-conf: unknown key 'bad' in allocator configuration", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(Path("shot.png")));
}

// A report that cannot be written (a full disk, /dev/full) is an error, not an exit 0 with nothing
// printed.
TEST_F(Cli, AReportThatCannotBeWrittenExitsTwo) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  auto to_full = [&](const std::string& args) {
    const fs::path err = dir_ / "stderr";
    const int status = std::system((Quote(FRAGSCOPE_CLI) + " " + args + " >/dev/full 2>" + Quote(err.string())).c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(err));
  };
  const std::string trace = Quote(Sample("synth-small.fst"));
  for (const std::string& args : {"report " + trace, "report --json " + trace, "compare " + trace,
                                  "min-limit " + trace}) {
    const auto [code, err] = to_full(args);
    EXPECT_EQ(code, 2) << args;
    EXPECT_EQ(err.rfind("error: <stdout>: write failed", 0), 0u) << args << ": " << err;
  }
  // The same commands to a file that takes the output exit as before.
  EXPECT_EQ(Run({"report", Sample("synth-small.fst")}).code, 0);
}

// Issue 13: fragscope-alloc-demo exited with CLI11's own codes (105, 109) on bad flags.
TEST_F(Cli, AllocDemoExitCodesAreTheProjects) {
  auto demo = [&](const std::string& args) {
    const fs::path err = dir_ / "demo_stderr";
    const int status = std::system((Quote(FRAGSCOPE_ALLOC_DEMO) + " " + args + " >/dev/null 2>" + Quote(err.string())).c_str());
    return std::make_pair(WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(err));
  };
  EXPECT_EQ(demo("--help").first, 0);
  EXPECT_EQ(demo("--no-such-flag").first, 2);
  EXPECT_EQ(demo("--steps 0").first, 2);
  EXPECT_EQ(demo("--steps").first, 2);
  const auto [code, err] = demo("--seed -5");
  EXPECT_EQ(code, 2);
  EXPECT_EQ(err.rfind("--seed: '-5' is not a seed", 0), 0u) << err;
  const auto [conf_code, conf_err] = demo("--alloc-conf colour=blue");
  EXPECT_EQ(conf_code, 2);
  EXPECT_NE(conf_err.find("unknown key 'colour'"), std::string::npos) << conf_err;
  EXPECT_EQ(demo("--steps 2 --alloc-conf '   '").first, 0);
}

}  // namespace
