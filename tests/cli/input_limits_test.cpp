// How the command line opens its inputs and refuses those out of proportion to their size (issue 13,
// items 4 and 8): directories, standard input of every format, pickle memo references counted each
// time, .fst files of repeated blocks, too many devices, synthetic workloads, out of host memory.
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
#include "support/shell.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::testing::Quote;
using fragscope::testing::Slurp;

using Result = fragscope::testing::CliResult;

class InputLimits : public fragscope::testing::CliTest {};

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

TEST_F(InputLimits, ADirectoryIsSaidToBeOne) {
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

TEST_F(InputLimits, StandardInputReadsEveryFormat) {
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
  // Standard input is named as the docs say, in JSON as in the text report.
  EXPECT_EQ(nlohmann::json::parse(twice.out)["trace"], "<stdin>");
  const Result text = run_shell("cat " + Quote(Sample("synth-small.fst")) + " | " + cli + " report -");
  EXPECT_EQ(text.out.rfind("trace      <stdin> (", 0), 0u) << text.out;
  const Result compare = run_shell("cat " + Quote(Path("oom.jsonl")) + " | " + cli +
                                   " compare - --alloc-conf growth=on --json");
  EXPECT_EQ(compare.code, 0) << compare.err;
  EXPECT_EQ(nlohmann::json::parse(compare.out)["configurations"].size(), 1u);
  const Result empty = run_shell(cli + " report - </dev/null");
  EXPECT_EQ(empty.code, 2);
  EXPECT_EQ(FirstLine(empty.err), "error: <stdin>: at byte 0: the file is empty");
}

TEST_F(InputLimits, PickleMemoReferencesCountEachTime) {
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

TEST_F(InputLimits, TraceOfRepeatedBlocksIsRefusedBeforeItIsRead) {
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

TEST_F(InputLimits, ManyDevicesAreRefusedAtTheLineThatNamesOneTooMany) {
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

TEST_F(InputLimits, SynthEventsAreBounded) {
  const Result r = Run({"synth", "--events", "1000000000000", "--out", Path("x.fst")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(FirstLine(r.err).find("--events"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1000000000"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(Path("x.fst")));
  EXPECT_EQ(Run({"synth", "--help"}).out.find("--max-events"), std::string::npos);
  EXPECT_NE(Run({"report", "--help"}).out.find("--max-events"), std::string::npos);
}

TEST_F(InputLimits, OutOfHostMemoryNamesTheFileAndWhatItDescribes) {
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
