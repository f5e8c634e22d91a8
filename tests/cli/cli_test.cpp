// The `fragscope` command line as a user runs it: exit codes, error messages, JSON shapes, golden
// reports of the committed sample traces, determinism of replay, and the min-limit contract.
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

#include "support/cli_fixture.hpp"
#include "support/golden.hpp"
#include "support/shell.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::ExpectGolden;
using fragscope::testing::Quote;
using fragscope::testing::Slurp;

using Result = fragscope::testing::CliResult;

class Cli : public fragscope::testing::CliTest {
 protected:
  static std::string Sample(const std::string& name) {
    return (fs::path(FRAGSCOPE_SOURCE_DIR) / "traces" / "samples" / name).string();
  }
};

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
  r = Run({"replay", Sample("synth-small.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--alloc-conf"), std::string::npos) << r.err;
  r = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "grwoth=on"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown key 'grwoth'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'growth'"), std::string::npos) << r.err;
  r = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--capacity", "lots"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--capacity: 'lots' is not a size"), std::string::npos) << r.err;
  r = Run({"synth", "--events", "0", "--out", Path("x.fst")});
  EXPECT_EQ(r.code, 2);
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

TEST_F(Cli, ReplayIsDeterministicAndRecordsATrace) {
  const std::vector<std::string> args = {"replay", Sample("synth-small.fst"), "--alloc-conf",
                                         "growth=off,gc=on", "--json"};
  auto first = nlohmann::json::parse(Run(args).out);
  auto second = nlohmann::json::parse(Run(args).out);
  first.erase("seconds");
  second.erase("seconds");
  EXPECT_EQ(first, second);

  const Result recorded = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "growth=off",
                               "--out", Path("replay.fst")});
  ASSERT_EQ(recorded.code, 0) << recorded.err;
  const auto replayed = nlohmann::json::parse(Run({"report", Path("replay.fst"), "--json"}).out);
  // The report of the recorded replay shows the peaks the replay measured.
  EXPECT_EQ(replayed["devices"][0]["peak_reserved"], first["devices"][0]["peak_reserved"]);
  EXPECT_EQ(replayed["devices"][0]["peak_load"], first["devices"][0]["peak_load"]);

  // Every allocation keeps its tag name in the recorded replay.
  ASSERT_EQ(Run({"convert", Sample("synth-small.fst"), Path("original.jsonl")}).code, 0);
  ASSERT_EQ(Run({"convert", Path("replay.fst"), Path("replay.jsonl")}).code, 0);
  const auto alloc_tags = [](const std::string& path) {
    std::map<std::string, int> counts;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      const auto event = nlohmann::json::parse(line);
      if (event["type"] == "alloc") ++counts[event.value("tag", "")];
    }
    return counts;
  };
  const std::map<std::string, int> original = alloc_tags(Path("original.jsonl"));
  EXPECT_GT(original.size(), 1u);
  EXPECT_EQ(original.count(""), 0u);
  EXPECT_EQ(alloc_tags(Path("replay.jsonl")), original);
}

TEST_F(Cli, MinLimitRunsAndOneMebibyteLessRunsOutOfMemory) {
  const Result r = Run({"min-limit", Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  const auto limit = json["min_limit"].get<std::uint64_t>();
  EXPECT_GE(limit, json["peak_load"].get<std::uint64_t>());
  const std::string at = "growth=on,limit=" + std::to_string(limit);
  const std::string below = "growth=on,limit=" + std::to_string(limit - (1u << 20));
  EXPECT_EQ(Run({"replay", Sample("synth-small.fst"), "--alloc-conf", at}).code, 0);
  const Result fails = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", below, "--json"});
  EXPECT_EQ(fails.code, 1);
  EXPECT_FALSE(nlohmann::json::parse(fails.out)["devices"][0]["ooms"].empty());
}

TEST_F(Cli, CompareHasOneRowPerConfiguration) {
  const Result r = Run({"compare", Sample("synth-small.fst"), "--alloc-conf", "growth=on",
                        "--alloc-conf", "growth=off", "--alloc-conf", "expandable=on", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json["configurations"].size(), 3u);
  // The trace's own figures come first, for reference: synth ran growth=on, as the first replay.
  EXPECT_EQ(json["recorded"]["peak_reserved"], json["configurations"][0]["peak_reserved"]);
  EXPECT_EQ(json["recorded"]["peak_load"], json["configurations"][0]["peak_load"]);
  for (const auto& row : json["configurations"]) {
    EXPECT_GE(row["overhead"].get<double>(), 1.0);
    EXPECT_EQ(row["peak_load"], json["configurations"][0]["peak_load"]) << "same sequence, same LOAD";
  }
  const Result text = Run({"compare", Sample("synth-small.fst"), "--alloc-conf", "growth=on",
                           "--alloc-conf", "expandable=on"});
  EXPECT_NE(text.out.find("peak reserved"), std::string::npos);
  EXPECT_NE(text.out.find("expandable=on"), std::string::npos);
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

// The importer issue's target on real PyTorch sequences: with the best policy, overhead at most
// 1.05 and never above what PyTorch reserved for the same sequence (docs/performance.md).
TEST_F(Cli, PolicyBeatsPytorchOnItsOwnSnapshots) {
  const fs::path torch = fs::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "torch";
  if (!fs::exists(torch)) GTEST_SKIP() << torch << " is absent: no PyTorch snapshots";
  const std::vector<std::pair<std::string, std::string>> best = {
      {"pt_cs336_lm_ctx128_forward.pickle", "expandable=on"},
      {"pt_eor_cnn_counterfactuals.pickle", "limit=108MiB,growth=on,gc=on"},
      {"pt_linear_grad_tiny.pickle", "growth=off"},
  };
  for (const auto& [file, conf] : best) {
    SCOPED_TRACE(file);
    const Result r = Run({"compare", (torch / file).string(), "--alloc-conf", conf, "--alloc-conf", "growth=on", "--json"});
    ASSERT_EQ(r.code, 0) << r.err;
    const auto json = nlohmann::json::parse(r.out);
    const auto& ours = json["configurations"][0];
    EXPECT_EQ(ours["ooms"], 0);
    EXPECT_LE(ours["overhead"].get<double>(), 1.05);
    EXPECT_LE(ours["peak_reserved"].get<std::uint64_t>(), json["recorded"]["peak_reserved"].get<std::uint64_t>());
    if (json.contains("before_recording")) {  // the recorded window alone, both sides alike
      EXPECT_LE(ours["overhead_like_for_like"].get<double>(), json["recorded"]["overhead_like_for_like"].get<double>());
    }
  }
  // The report states what was live before recording and PyTorch's own settings.
  Result r = Run({"report", (torch / "pt_eor_cnn_counterfactuals.pickle").string(), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto json = nlohmann::json::parse(r.out);
  EXPECT_EQ(json["devices"][0]["peak_reserved"], 128u << 20);
  EXPECT_EQ(json["devices"][0]["before_recording"]["blocks"], 31);
  EXPECT_EQ(json["devices"][0]["before_recording"]["requested"], 8771952);
  r = Run({"report", (torch / "pt_linear_grad_tiny.pickle").string()});
  EXPECT_NE(r.out.find("settings   expandable_segments=False"), std::string::npos) << r.out;
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

// Issue 13: --capacity 0 meant "the default" without a word; every command that takes it refuses it.
TEST_F(Cli, CapacityZeroIsRefused) {
  for (const char* command : {"replay", "compare", "min-limit"}) {
    for (const char* capacity : {"0", "0GiB"}) {
      const Result r = Run({command, Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--capacity", capacity});
      EXPECT_EQ(r.code, 2) << command << " " << capacity;
      EXPECT_EQ(r.err.substr(0, r.err.find('\n')),
                "error: --capacity: '" + std::string(capacity) +
                    "' is no device size: the capacity must be more than 0")
          << command;
    }
  }
  const Result big = Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--capacity", "8EiB"});
  EXPECT_EQ(big.code, 2);
  EXPECT_EQ(big.err.rfind("error: --capacity: '8EiB' is too large", 0), 0u) << big.err;
  EXPECT_EQ(Run({"replay", Sample("synth-small.fst"), "--alloc-conf", "growth=on", "--capacity", "8GiB"}).code, 0);
}

// Issue 13: compare with one --alloc-conf compares it against the trace as recorded (documented in
// docs/cli.md); a blank configuration is the defaults.
TEST_F(Cli, CompareWithOneConfigurationComparesAgainstTheRecordedRun) {
  Result r = Run({"compare", Sample("synth-small.fst"), "--alloc-conf", "expandable=on", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto json = nlohmann::json::parse(r.out);
  ASSERT_EQ(json["configurations"].size(), 1u);
  EXPECT_NE(json["configurations"][0]["alloc_conf"].get<std::string>().find("expandable=on"), std::string::npos);
  EXPECT_TRUE(json["recorded"].contains("producer"));
  r = Run({"compare", Sample("synth-small.fst"), "--alloc-conf", "expandable=on"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("as recorded"), std::string::npos) << r.out;
  r = Run({"compare", Sample("synth-small.fst"), "--alloc-conf", "   ", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["configurations"][0]["alloc_conf"],
            "backing=sim,device=0,external_use=0,growth=on,preallocate=off,gc=on,expandable=off,passthrough=off");
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

// ---- Issue 13, items 4 and 8: how inputs are opened, and inputs out of proportion to their size.

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// A PyTorch snapshot in which every device's trace is the same list and every entry of that list
// the same event dict, through pickle memo references: `devices` x `events` events in a few bytes
// per event and device.
std::string MemoPickle(std::size_t devices, std::size_t events) {
  auto text = [](const std::string& s) { return std::string("\x8c") + static_cast<char>(s.size()) + s; };
  auto binint = [](std::int32_t v) {
    std::string out = "J";
    for (int i = 0; i < 4; ++i) out += static_cast<char>((static_cast<std::uint32_t>(v) >> (8 * i)) & 0xff);
    return out;
  };
  std::string out = std::string("\x80\x04}\x94(", 5) + text("segments") + "]" + text("device_traces") + "]\x94(";
  // memo 1: device_traces; memo 2: the list of events; memo 3: the event dict
  out += "]\x94(";
  out += "}\x94(" + text("action") + text("alloc") + text("addr") + binint(4096) + text("size") + binint(512) +
         text("stream") + binint(0) + text("time_us") + binint(1) + "u";
  for (std::size_t i = 1; i < events; ++i) out += "h\x03";
  out += "e";
  for (std::size_t d = 1; d < devices; ++d) out += "h\x02";
  out += "eu.";
  return out;
}

void Write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// A fragscope trace of `blocks` copies of one block of 65536 identical markers (each block is
// self-contained, so the copies read as more events): a few hundred bytes per 65536 events.
std::string RepeatedBlockTrace(const std::string& one_block_fst, std::size_t blocks) {
  const auto le16 = [&](std::size_t at) {
    return static_cast<std::size_t>(static_cast<unsigned char>(one_block_fst[at])) |
           static_cast<std::size_t>(static_cast<unsigned char>(one_block_fst[at + 1])) << 8;
  };
  const auto le32 = [&](std::size_t at) { return le16(at) | le16(at + 2) << 16; };
  const std::size_t header_end = 16 + le32(12) + 4;
  const std::size_t block_size = le16(header_end + 8) + le32(header_end + 12);
  std::string out = one_block_fst.substr(0, header_end);
  for (std::size_t i = 0; i < blocks; ++i) out += one_block_fst.substr(header_end, block_size);
  return out;
}

TEST_F(Cli, ADirectoryIsSaidToBeOne) {
  fs::create_directories(Path("traces"));
  for (const char* command : {"report", "replay", "convert"}) {
    std::vector<std::string> args = {command, Path("traces")};
    if (std::string(command) == "replay") args.insert(args.end(), {"--alloc-conf", "growth=on"});
    if (std::string(command) == "convert") args.push_back(Path("out.jsonl"));
    const Result r = Run(args);
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_EQ(FirstLine(r.err), "error: " + Path("traces") + ": is a directory") << command;
  }
}

TEST_F(Cli, StandardInputReadsEveryFormat) {
  // Each format as a file, then through `-` and /dev/stdin, from a redirected file and a pipe.
  ASSERT_EQ(Run({"convert", Sample("synth-oom.fst"), Path("oom.jsonl")}).code, 0);
  Write(Path("tiny.pickle"), MemoPickle(2, 3));
  Write(Path("log.csv"),
        "Thread,Time,Action,Pointer,Size,Stream\n"
        "1,14:02:11.123456,allocate,0x7f2c4c000000,4096,0x0\n"
        "1,14:02:11.123470,allocate,0x7f2c4c001000,8192,0x0\n"
        "1,14:02:11.123480,free,0x7f2c4c000000,4096,0x0\n");
  std::vector<std::string> inputs = {Sample("synth-small.fst"), Sample("synth-oom.fst"), Path("oom.jsonl"),
                                     Path("tiny.pickle"), Path("log.csv")};
  for (const char* tf : {"tf12_separate_loops.log", "two_dumps_two_devices.log", "xla_header_only.log"}) {
    inputs.push_back((fs::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "import" / "fixtures" / "tf" / tf).string());
  }
  const fs::path torch = fs::path(FRAGSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "torch" / "pt_linear_grad_tiny.pickle";
  if (fs::exists(torch)) inputs.push_back(torch.string());
  const auto run_shell = [&](const std::string& shell) {
    const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    const int status = std::system((shell + " >" + Quote(out.string()) + " 2>" + Quote(err.string())).c_str());
    return Result{WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(out), Slurp(err)};
  };
  for (const std::string& input : inputs) {
    const Result file = Run({"report", input, "--json", "--no-min-limit"});
    ASSERT_TRUE(file.code == 0 || file.code == 1) << input << ": " << file.err;
    // The same report but for the name (in "trace" and in the warnings).
    const auto without_name = [](nlohmann::json report) {
      report.erase("trace");
      report["warnings"] = report["warnings"].size();
      return report;
    };
    const auto expected = without_name(nlohmann::json::parse(file.out));
    const std::string cli = Quote(FRAGSCOPE_CLI);
    for (const std::string& shell :
         {cli + " report - --json --no-min-limit <" + Quote(input),
          cli + " report /dev/stdin --json --no-min-limit <" + Quote(input),
          "cat " + Quote(input) + " | " + cli + " report - --json --no-min-limit",
          "cat " + Quote(input) + " | " + cli + " report /dev/stdin --json --no-min-limit"}) {
      const Result piped = run_shell(shell);
      EXPECT_EQ(piped.code, file.code) << shell << ": " << piped.err;
      if (piped.code != file.code) continue;
      EXPECT_EQ(without_name(nlohmann::json::parse(piped.out)), expected) << shell;
    }
  }
  // Commands that read their trace twice (report with an OOM replays it; compare) read the copy.
  const std::string cli = Quote(FRAGSCOPE_CLI);
  const Result twice = run_shell("cat " + Quote(Sample("synth-oom.fst")) + " | " + cli + " report - --json");
  EXPECT_EQ(twice.code, 1) << twice.err;
  const Result compare = run_shell("cat " + Quote(Path("oom.jsonl")) + " | " + cli +
                                   " compare - --alloc-conf growth=on --json");
  EXPECT_EQ(compare.code, 0) << compare.err;
  EXPECT_EQ(nlohmann::json::parse(compare.out)["configurations"].size(), 1u);
  const Result empty = run_shell(cli + " report - </dev/null");
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(FirstLine(empty.err), "error: <stdin>: at byte 0: the file is empty");
}

TEST_F(Cli, PickleMemoReferencesCountEachTime) {
  // 1000 devices x 1000 events in 4 KB: refused before anything is expanded.
  Write(Path("memo.pickle"), MemoPickle(1000, 1000));
  ASSERT_LT(fs::file_size(Path("memo.pickle")), 5000u);
  Result r = Run({"report", Path("memo.pickle")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(FirstLine(r.err).rfind("error: " + Path("memo.pickle") + ": the input describes 1000000 events (", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("every pickle memo reference counted again"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of proportion to its size"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-events 1000000"), std::string::npos) << r.err;
  // A thousand devices is under --max-devices; over it, that is what is said.
  r = Run({"replay", Path("memo.pickle"), "--alloc-conf", "growth=on", "--max-devices", "999"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(FirstLine(r.err),
            "error: " + Path("memo.pickle") + ": the input describes 1000 devices (in 'segments' and "
            "'device_traces'), more than --max-devices 999 allows; if it is a real trace, raise the cap: "
            "--max-devices 1000");
  // A billion events (1000 devices x a million references, 2 MB): over --max-events itself.
  Write(Path("billion.pickle"), MemoPickle(1000, 1000000));
  r = Run({"min-limit", Path("billion.pickle"), "--alloc-conf", "growth=on", "--max-events", "500000000"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(FirstLine(r.err).rfind("error: " + Path("billion.pickle") + ": the input describes 1000000000 events (", 0),
            0u)
      << r.err;
  EXPECT_NE(r.err.find("more than --max-events 500000000 allows"), std::string::npos) << r.err;
  // Raising the cap reads what the user asked for (a small case: 20 devices x 10,000 events).
  Write(Path("raised.pickle"), MemoPickle(20, 10000));
  r = Run({"report", Path("raised.pickle"), "--json", "--no-min-limit"});
  EXPECT_EQ(r.code, 2);
  r = Run({"report", Path("raised.pickle"), "--json", "--no-min-limit", "--max-events", "200000"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"].size(), 20u);
}

TEST_F(Cli, TraceOfRepeatedBlocksIsRefusedBeforeItIsRead) {
  std::string jsonl =
      R"({"type":"header","producer":"x","source_format":"x","alloc_conf":"","devices":[],"created_unix_ns":0,"metadata":[]})"
      "\n";
  for (int i = 0; i < 65536; ++i) jsonl += R"({"type":"marker","seq":)" + std::to_string(i) + R"(,"time_ns":0,"device":0})" "\n";
  Write(Path("markers.jsonl"), jsonl);
  ASSERT_EQ(Run({"convert", Path("markers.jsonl"), Path("one.fst")}).code, 0);
  const std::string one = Slurp(Path("one.fst"));
  // A billion events in about 1.5 MB: over --max-events, said from the block headers alone.
  Write(Path("billion.fst"), RepeatedBlockTrace(one, 15259));
  Result r = Run({"report", Path("billion.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(FirstLine(r.err).rfind("error: " + Path("billion.fst") + ": at byte ", 0), 0u) << r.err;
  EXPECT_NE(FirstLine(r.err).find("the input describes 1000013824 events (in 15259 blocks), more than --max-events "
                                  "100000000 allows; if it is a real trace, raise the cap: --max-events 1000013824"),
            std::string::npos)
      << r.err;
  // Two million events in a few kilobytes: under the cap, but out of proportion to the file
  // (converting it wrote 1.66 GB of JSON Lines); nothing is written.
  Write(Path("small.fst"), RepeatedBlockTrace(one, 32));
  ASSERT_LT(fs::file_size(Path("small.fst")), 32768u);
  r = Run({"convert", Path("small.fst"), Path("out.jsonl")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(FirstLine(r.err).find("the input describes 2097152 events (in 32 blocks) in "), std::string::npos) << r.err;
  EXPECT_NE(FirstLine(r.err).find("refused as out of proportion to its size; if it is a real trace, read it with "
                                  "--max-events 2097152"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(Path("out.jsonl")));
  // Asking for it by --max-events reads it.
  r = Run({"report", Path("small.fst"), "--json", "--max-events", "2097152"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["events"], 2097152);
}

TEST_F(Cli, ManyDevicesAreRefusedAtTheLineThatNamesOneTooMany) {
  std::string jsonl =
      R"({"type":"header","producer":"x","source_format":"x","alloc_conf":"","devices":[],"created_unix_ns":0,"metadata":[]})"
      "\n";
  for (int i = 0; i < 5000; ++i) {
    jsonl += R"({"type":"alloc","seq":)" + std::to_string(i) + R"(,"time_ns":0,"device":)" + std::to_string(i) +
             R"(,"address":4096,"size":512,"rounded":512})" "\n";
  }
  Write(Path("devices.jsonl"), jsonl);
  for (const char* command : {"report", "replay", "compare", "convert"}) {
    std::vector<std::string> args = {command, Path("devices.jsonl")};
    if (std::string(command) == "replay" || std::string(command) == "compare") {
      args.insert(args.end(), {"--alloc-conf", "growth=on"});
    }
    if (std::string(command) == "convert") args.push_back(Path("out.fst"));
    const Result r = Run(args);
    EXPECT_EQ(r.code, 2) << command;
    EXPECT_EQ(FirstLine(r.err).rfind("error: " + Path("devices.jsonl") + ": at byte ", 0), 0u) << r.err;
    EXPECT_NE(FirstLine(r.err).find(": line 4098: the input describes 4097 devices (device 4096 is one more), more "
                                    "than --max-devices 4096 allows; if it is a real trace, raise the cap: "
                                    "--max-devices 4097"),
              std::string::npos)
        << r.err;
  }
  // Raised, it is read; a device with one event costs the analysis next to nothing.
  const Result r = Run({"report", Path("devices.jsonl"), "--json", "--max-devices", "5000"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["devices"].size(), 5000u);
  // In a .fst the devices are counted as the blocks are read.
  ASSERT_EQ(Run({"convert", Path("devices.jsonl"), Path("devices.fst"), "--max-devices", "5000"}).code, 0);
  const Result fst = Run({"report", Path("devices.fst"), "--max-devices", "100"});
  EXPECT_EQ(fst.code, 2);
  EXPECT_EQ(FirstLine(fst.err), "error: " + Path("devices.fst") + ": the input describes 101 devices (device 100 at "
                                "event 100 is one more), more than --max-devices 100 allows; if it is a real trace, "
                                "raise the cap: --max-devices 101");
}

TEST_F(Cli, SynthEventsAreBounded) {
  const Result r = Run({"synth", "--events", "1000000000000", "--out", Path("x.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(FirstLine(r.err).find("--events"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1000000000"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Path("x.fst")));
  EXPECT_EQ(Run({"synth", "--help"}).out.find("--max-events"), std::string::npos);
  EXPECT_NE(Run({"report", "--help"}).out.find("--max-events"), std::string::npos);
}

TEST_F(Cli, OutOfHostMemoryNamesTheFileAndWhatItDescribes) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's shadow memory does not fit under ulimit -v";
#endif
  // 1000 devices x 1000 events, with the caps raised: about 330 MB; under a 200 MB address-space
  // limit the import runs out of memory, and says while reading what.
  Write(Path("memo.pickle"), MemoPickle(1000, 1000));
  const fs::path out = dir_ / "stdout", err = dir_ / "stderr";
  const std::string command = "ulimit -v 200000; " + Quote(FRAGSCOPE_CLI) + " report " + Quote(Path("memo.pickle")) +
                              " --max-events 1000000 --no-min-limit >" + Quote(out.string()) + " 2>" +
                              Quote(err.string());
  const int status = std::system(("sh -c " + Quote(command)).c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(FirstLine(Slurp(err)), "error: out of host memory while reading " + Path("memo.pickle") +
                                       " (the input describes a PyTorch memory snapshot of 4105 bytes; limit it "
                                       "with --max-events)");
}

}  // namespace
