// Every scenario runs out of memory at its documented step with its documented cause, on sim and
// on cpu, and leaves a complete, readable trace that ends with the OOM and everything freed.
#include <gtest/gtest.h>

#include "fragscope/analysis/leak.hpp"
#include "fragscope/trainer/scenarios.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

using testing::TempPath;

class ScenarioTest : public ::testing::TestWithParam<std::tuple<std::string, BackendKind>> {};

TEST_P(ScenarioTest, OomsAtItsStepWithItsCause) {
  const auto& [name, backend] = GetParam();
  const Scenario* scenario = FindScenario(name);
  ASSERT_NE(scenario, nullptr);
  TrainOptions options;
  options.backend = backend;
  options.alloc_conf = ParseAllocConf(WithDefaultBacking(backend, ApplyScenario(*scenario, "", &options)));
  options.trace_path = TempPath("scenario.fst");
  const TrainResult r = Train(options);
  ASSERT_TRUE(r.oom.has_value()) << name;
  EXPECT_EQ(r.oom_context.step, scenario->oom_step);
  EXPECT_EQ(r.oom_context.phase, scenario->oom_phase);
  EXPECT_EQ(r.oom->cause(), scenario->cause) << r.oom->Summary();
  EXPECT_EQ(r.oom_context.diagnosis, scenario->diagnosis) << r.oom_context.diagnosis_text;
  EXPECT_EQ(r.steps.size(), static_cast<std::size_t>(scenario->oom_step));
  if (scenario->diagnosis == "leak") {
    EXPECT_NE(r.oom_context.diagnosis_text.find("'input/images'"), std::string::npos) << r.oom_context.diagnosis_text;
  }

  const traces::Trace trace = traces::ReadTrace(options.trace_path);
  EXPECT_TRUE(trace.warnings.empty());
  std::size_t ooms = 0, allocs = 0, frees = 0;
  std::string last_marker;
  for (const auto& e : trace.events) {
    if (e.type == traces::EventType::kOom) {
      ++ooms;
      EXPECT_EQ(e.oom.cause, scenario->cause);
      EXPECT_EQ(e.oom.request, r.oom->numbers.request);
    }
    allocs += e.type == traces::EventType::kAlloc;
    frees += e.type == traces::EventType::kFree;
    if (e.type == traces::EventType::kMarker) last_marker = trace.TagName(e.tag);
  }
  EXPECT_EQ(ooms, 1u);
  EXPECT_EQ(allocs, frees);
  // The trace alone tells the leak (fragscope report's LeakDetector), and only for the leak.
  analysis::LeakDetector leaks;
  for (const auto& e : trace.events) leaks.Add(e, trace.tags);
  const auto leak = leaks.Finish();
  EXPECT_EQ(leak.has_value(), scenario->diagnosis == "leak");
  if (leak) {
    EXPECT_EQ(leak->tag, "input/images");
  }
  EXPECT_EQ(last_marker, "oom at step " + std::to_string(scenario->oom_step) + " (" + r.oom_context.phase + ")");
  std::filesystem::remove(options.trace_path);
}

INSTANTIATE_TEST_SUITE_P(
    All, ScenarioTest,
    ::testing::Combine(::testing::Values("capacity", "fragmentation", "leak", "request-too-large"),
                       ::testing::Values(BackendKind::kSim, BackendKind::kCpu)),
    [](const auto& param_info) {
      std::string name = std::get<0>(param_info.param);
      for (char& c : name) c = c == '-' ? '_' : c;  // a test name is an identifier
      return name + "_" + std::string(ToString(std::get<1>(param_info.param)));
    });

// The fix each scenario documents makes it fit (on sim: the schedule is the same as cpu's).
TEST(Scenario, DocumentedFixesFit) {
  struct Fix {
    const char* name;
    const char* conf;
  };
  for (const Fix& fix : {Fix{"capacity", "limit=512MiB"}, Fix{"fragmentation", "expandable=on"},
                         Fix{"request-too-large", "limit=320MiB"}}) {
    TrainOptions options;
    options.backend = BackendKind::kSim;
    const Scenario* scenario = FindScenario(fix.name);
    options.alloc_conf = ParseAllocConf(WithDefaultBacking(BackendKind::kSim, ApplyScenario(*scenario, fix.conf, &options)));
    const TrainResult r = Train(options);
    EXPECT_FALSE(r.oom) << fix.name << ": " << (r.oom ? r.oom->Summary() : "");
  }
  {
    // request-too-large's other fix: batches of at most 96 under the same 32 MiB.
    TrainOptions options;
    options.backend = BackendKind::kSim;
    options.alloc_conf = ParseAllocConf(WithDefaultBacking(
        BackendKind::kSim, ApplyScenario(*FindScenario("request-too-large"), "", &options)));
    options.batch_schedule = {32, 64, 96};
    EXPECT_FALSE(Train(options).oom);
  }
  TrainOptions options;
  options.backend = BackendKind::kSim;
  ApplyScenario(*FindScenario("leak"), "", &options);
  options.keep_inputs = false;  // the real fix: drop the reference
  options.alloc_conf = ParseAllocConf("backing=sim,limit=32MiB,expandable=on");
  EXPECT_FALSE(Train(options).oom);
}

TEST(Scenario, MergeConfReplacesKeys) {
  EXPECT_EQ(MergeConf("limit=48MiB,gc=off", "gc=on,expandable=on"), "limit=48MiB,gc=on,expandable=on");
  EXPECT_EQ(MergeConf("limit=1GiB", ""), "limit=1GiB");
  EXPECT_EQ(MergeConf("", "backing=host"), "backing=host");
}

}  // namespace
}  // namespace fragscope::trainer
