// fragscope-train as a user runs it: exit codes, --json, --trace, the environment variable.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "fragscope/allocator/backing.hpp"
#include "fragscope/allocator/size.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

using testing::TempPath;

struct Result {
  int code = -1;
  std::string out;  // stdout and stderr
};

Result RunTrain(const std::string& args, const std::string& env = "") {
  const std::string command = env + " " + FRAGSCOPE_TRAIN + " " + args + " 2>&1";
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.out.append(buffer, n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

nlohmann::json Json(const Result& r) {
  // --json: one document on stdout; nothing else is printed on success.
  const auto start = r.out.find('{');
  EXPECT_NE(start, std::string::npos) << r.out;
  return nlohmann::json::parse(r.out.substr(start));
}

TEST(TrainCli, Help) {
  const Result r = RunTrain("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* word : {"--backend", "--alloc-conf", "--trace", "--scenario", "fragmentation", "--json"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word;
  }
}

TEST(TrainCli, BadUsageExits2WithTheReason) {
  EXPECT_EQ(RunTrain("--model vgg").code, 2);
  EXPECT_EQ(RunTrain("--batch 0").code, 2);
  const Result conf = RunTrain("--alloc-conf colour=blue --steps 1");
  EXPECT_EQ(conf.code, 2);
  EXPECT_NE(conf.out.find("colour"), std::string::npos) << conf.out;
  const Result backing = RunTrain("--alloc-conf backing=sim --steps 1");
  EXPECT_EQ(backing.code, 2);
  EXPECT_NE(backing.out.find("backing=host"), std::string::npos) << backing.out;
  const Result data = RunTrain("--data /nonexistent/data_batch_1.bin --steps 1");
  EXPECT_EQ(data.code, 2);
  EXPECT_NE(data.out.find("/nonexistent/data_batch_1.bin"), std::string::npos) << data.out;
}

TEST(TrainCli, CudaBackendWithoutGpuExits2WithTheReason) {
  std::string why;
  if (CudaDeviceAvailable(&why)) GTEST_SKIP() << "a GPU is present: the cuda backend runs here";
  const Result r = RunTrain("--backend cuda --steps 1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("error: "), std::string::npos) << r.out;
  EXPECT_TRUE(r.out.find("needs a GPU") != std::string::npos || r.out.find("not in this build") != std::string::npos)
      << r.out;
}

TEST(TrainCli, JsonSummary) {
  const Result r = RunTrain("--model tiny --batch 8 --steps 3 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = Json(r);
  ASSERT_EQ(doc["steps"].size(), 3u);
  for (const char* key : {"step", "loss", "accuracy", "step_ms", "in_use", "reserved"}) {
    EXPECT_TRUE(doc["steps"][0].contains(key)) << key;
  }
  EXPECT_EQ(doc["steps"][2]["step"], 2);
  EXPECT_TRUE(doc["final_loss"].is_number());
  EXPECT_GT(doc["peak_reserved"].get<std::uint64_t>(), 0u);
  EXPECT_TRUE(doc["oom"].is_null());
  EXPECT_NE(doc["alloc_conf"].get<std::string>().find("backing=host"), std::string::npos);
}

// DESIGN.md's metrics in the summary: peak LOAD as the trace's own live requested bytes peak,
// overhead = peak reserved / peak LOAD, and external fragmentation per step.
TEST(TrainCli, JsonSummaryHasPeakLoadOverheadAndFragmentation) {
  const std::string trace = TempPath("metrics.fst");
  const Result r = RunTrain("--model tiny --backend sim --batch 8 --steps 3 --json --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto doc = Json(r);
  std::uint64_t live = 0, peak = 0;
  for (const auto& event : traces::ReadTrace(trace).events) {
    if (event.type == traces::EventType::kAlloc) live += event.size;
    if (event.type == traces::EventType::kFree) live -= event.size;
    peak = std::max(peak, live);
  }
  ASSERT_GT(peak, 0u);
  EXPECT_EQ(doc["peak_load"].get<std::uint64_t>(), peak);
  EXPECT_DOUBLE_EQ(doc["overhead"].get<double>(),
                   static_cast<double>(doc["peak_reserved"].get<std::uint64_t>()) / static_cast<double>(peak));
  for (const auto& step : doc["steps"]) {
    const double frag = step["external_fragmentation"].get<double>();
    EXPECT_GE(frag, 0.0);
    EXPECT_LT(frag, 1.0);
  }
  const Result text = RunTrain("--model tiny --backend sim --batch 8 --steps 3");
  EXPECT_NE(text.out.find("  frag 0."), std::string::npos) << text.out;
  EXPECT_NE(text.out.find(fmt::format("peak LOAD {} (overhead {:.2f})", FormatBytes(peak), doc["overhead"].get<double>())),
            std::string::npos) << text.out;
  std::filesystem::remove(trace);
}

TEST(TrainCli, ScenarioExits1WithReportAndCompleteTrace) {
  const std::string trace = TempPath("capacity.fst");
  const Result r = RunTrain("--scenario capacity --backend sim --json --trace " + trace);
  ASSERT_EQ(r.code, 1) << r.out;
  const auto doc = Json(r);
  EXPECT_EQ(doc["oom"]["cause"], "capacity");
  EXPECT_EQ(doc["oom"]["step"], 4);
  EXPECT_EQ(doc["oom"]["phase"], "forward");
  EXPECT_FALSE(doc["oom"]["explanation"].get<std::string>().empty());
  EXPECT_EQ(doc["steps"].size(), 4u);
  const traces::Trace read = traces::ReadTrace(trace);
  EXPECT_TRUE(read.warnings.empty());
  EXPECT_EQ(read.events.size(), doc["trace_events"].get<std::size_t>());
  std::filesystem::remove(trace);

  const Result text = RunTrain("--scenario leak --backend sim");
  EXPECT_EQ(text.code, 1);
  EXPECT_NE(text.out.find("out of memory at step 17"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("leak: memory live between steps grew"), std::string::npos) << text.out;
}

TEST(TrainCli, EnvironmentChoosesThePolicy) {
  const Result r = RunTrain("--backend sim --batch 64 --steps 2 --json", "FRAGSCOPE_ALLOC_CONF=limit=4MiB");
  ASSERT_EQ(r.code, 1) << r.out;
  const auto doc = Json(r);
  EXPECT_NE(doc["alloc_conf"].get<std::string>().find("limit=4MiB"), std::string::npos);
  EXPECT_EQ(doc["oom"]["limit"], 4u * 1024 * 1024);
  // --alloc-conf wins over the environment.
  EXPECT_EQ(RunTrain("--backend sim --batch 64 --steps 2", "FRAGSCOPE_ALLOC_CONF=limit=4MiB").code, 1);
  EXPECT_EQ(RunTrain("--backend sim --batch 64 --steps 2 --alloc-conf limit=1GiB", "FRAGSCOPE_ALLOC_CONF=limit=4MiB").code, 0);
}

// Issue 13: every bad number names its flag and exits 2; CLI11 alone took nan, inf and a negative
// seed (as 2^64 - 5).
TEST(TrainCli, SgdNumbersAndTheSeedAreChecked) {
  const std::pair<const char*, const char*> bad[] = {
      {"--lr nan", "--lr: 'nan' is not a learning rate"},
      {"--lr inf", "--lr: 'inf' is not a learning rate"},
      {"--lr 0", "--lr: '0' is not a learning rate"},
      {"--lr -0.1", "--lr: '-0.1' is not a learning rate"},
      {"--momentum -5", "--momentum: '-5' is not a momentum"},
      {"--momentum 1", "--momentum: '1' is not a momentum"},
      {"--momentum nan", "--momentum: 'nan' is not a momentum"},
      {"--weight-decay nan", "--weight-decay: 'nan' is not a weight decay"},
      {"--weight-decay -1", "--weight-decay: '-1' is not a weight decay"},
      {"--seed -5", "--seed: '-5' is not a seed"},
      {"--seed 18446744073709551616", "--seed: '18446744073709551616' is not a seed"},
  };
  for (const auto& [args, message] : bad) {
    const Result r = RunTrain(std::string(args) + " --backend sim --steps 0");
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind(std::string("error: ") + message, 0), 0u) << args << ": " << r.out;  // the first line
  }
  // Whole numbers say what they are, not only their range.
  for (const auto& [args, message] : std::vector<std::pair<const char*, const char*>>{
           {"--batch abc", "error: --batch: 'abc' is not a batch size: expected a whole number from 1 to 1048576"},
           {"--steps 1.5", "error: --steps: '1.5' is not a step count"},
           {"--batch-schedule 8,x", "error: --batch-schedule: 'x' is not a batch size"}}) {
    const Result r = RunTrain(std::string(args) + " --backend sim");
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind(message, 0), 0u) << args << ": " << r.out;
  }
  for (const char* args : {"--lr 0.1 --momentum 0 --weight-decay 0 --seed 0",
                           "--momentum 0.99 --seed 18446744073709551615"}) {
    EXPECT_EQ(RunTrain(std::string(args) + " --backend sim --steps 0").code, 0) << args;
  }
}

// Issue 13: an error in FRAGSCOPE_ALLOC_CONF says so and quotes the variable as the user wrote it
// (not with the backend's backing in front), and positions count in it.
TEST(TrainCli, EnvironmentConfErrorsNameTheVariableAndQuoteItsText) {
  Result r = RunTrain("--steps 0", "FRAGSCOPE_ALLOC_CONF='growth=on,,gc=on'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out,
            "error: FRAGSCOPE_ALLOC_CONF: empty item at position 2 (character 11) of allocator "
            "configuration 'growth=on,,gc=on': expected key=value pairs separated by single commas\n");
  r = RunTrain("--steps 0", "FRAGSCOPE_ALLOC_CONF=growth=maybe");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out, "error: FRAGSCOPE_ALLOC_CONF: bad value 'maybe' for key 'growth': expected on or off\n");
  r = RunTrain("--steps 0", "FRAGSCOPE_ALLOC_CONF='gc=on,gc=off'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out,
            "error: FRAGSCOPE_ALLOC_CONF: key 'gc' is given twice in allocator configuration "
            "'gc=on,gc=off' (positions 1 and 2)\n");
  // How the keys combine with the backing the backend adds: the message says where it came from.
  r = RunTrain("--backend cuda --steps 0", "FRAGSCOPE_ALLOC_CONF=external_use=1GiB");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("error: FRAGSCOPE_ALLOC_CONF: external_use=1GiB needs backing sim or host", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("backing=cuda is the cuda backend's own"), std::string::npos) << r.out;
  // From --alloc-conf: the same text, the flag named (as fragscope's commands name it).
  r = RunTrain("--steps 0 --alloc-conf 'growth=on,,gc=on'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(r.out.rfind("error: --alloc-conf: empty item at position 2 (character 11) of allocator configuration "
                        "'growth=on,,gc=on'", 0),
            0u)
      << r.out;
}

// Issue 13: a blank configuration is the defaults (with the backend's backing), not an error.
TEST(TrainCli, BlankAllocConfMeansTheDefaults) {
  Result r = RunTrain("--backend sim --steps 1 --json --alloc-conf '   '");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(Json(r)["alloc_conf"].get<std::string>().rfind("backing=sim,", 0), 0u);
  r = RunTrain("--backend sim --steps 1 --json", "FRAGSCOPE_ALLOC_CONF='  '");
  ASSERT_EQ(r.code, 0) << r.out;
  // A blank --alloc-conf counts as not given: the environment applies.
  r = RunTrain("--backend sim --batch 64 --steps 2 --json --alloc-conf ' '", "FRAGSCOPE_ALLOC_CONF=limit=4MiB");
  ASSERT_EQ(r.code, 1) << r.out;
  EXPECT_EQ(Json(r)["oom"]["limit"], 4u * 1024 * 1024);
}

// Issue 13: a batch too big for the host went to std::vector before the allocator ("error:
// std::bad_alloc"); the allocator now sees it first and its OOM report explains it.
TEST(TrainCli, HugeBatchIsTheAllocatorsOomNotBadAlloc) {
  const Result r = RunTrain("--batch 1048576 --image-size 256 --classes 2 --alloc-conf limit=64MiB --steps 1 --json");
  ASSERT_EQ(r.code, 1) << r.out;
  const auto doc = Json(r);
  EXPECT_EQ(doc["oom"]["tag"], "input/images");
  EXPECT_EQ(doc["oom"]["request"], 1048576ull * 3 * 256 * 256 * 4);
  // Host memory the allocator does not serve: a clear error naming the flags and the bytes.
  const Result host = RunTrain("--classes 1048576 --image-size 4096 --steps 1");
  EXPECT_EQ(host.code, 2) << host.out;
  EXPECT_NE(host.out.find("error: out of host memory outside the allocator: --classes 1048576 with "
                          "--image-size 4096 needs 192.00 TiB"),
            std::string::npos)
      << host.out;
}

// --steps, --model and --batch given next to --scenario replace the scenario's (as --alloc-conf's
// keys do); they were dropped without a word, so "a larger limit only moves the OOM later" could not
// be tried.
TEST(TrainCli, FlagsNextToAScenarioReplaceItsOwn) {
  Result r = RunTrain("--scenario leak --backend sim --alloc-conf limit=64MiB --steps 200 --json");
  EXPECT_EQ(r.code, 1) << r.out;
  nlohmann::json doc = Json(r);
  EXPECT_EQ(doc["oom"]["step"], 60) << "the 64 MiB limit moves the leak's OOM from step 17 to step 60";
  EXPECT_EQ(doc["oom"]["diagnosis"], "leak");
  r = RunTrain("--scenario capacity --backend sim --model resnet18 --batch 4 --steps 1 --json");
  EXPECT_EQ(r.code, 0) << r.out;
  doc = Json(r);
  EXPECT_EQ(doc["model"], "resnet18");
  ASSERT_EQ(doc["steps"].size(), 1u);
  EXPECT_EQ(doc["steps"][0]["batch"], 4);
  // White space around a key still replaces the scenario's key (it was "given twice").
  r = RunTrain("--scenario leak --backend sim --alloc-conf ' limit = 64MiB' --steps 2 --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(Json(r)["alloc_conf"].get<std::string>().find("limit=64MiB"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fragscope::trainer
