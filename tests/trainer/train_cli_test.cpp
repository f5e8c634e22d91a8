// fragscope-train as a user runs it: exit codes, --json, --trace, the environment variable.
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "fragscope/allocator/backing.hpp"
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
  EXPECT_NE(text.out.find("out of memory at step 11"), std::string::npos) << text.out;
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

}  // namespace
}  // namespace fragscope::trainer
