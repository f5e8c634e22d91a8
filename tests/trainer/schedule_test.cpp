// sim reproduces the allocation schedule of cpu exactly: the same sizes, in the same order, with
// the same tags (workspaces included, since sim asks for the cpu backend's im2col workspaces).
#include <gtest/gtest.h>

#include "fragscope/trainer/trainer.hpp"
#include "fragscope/allocator/size.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

using testing::Schedule;
using testing::ScheduleEntry;
using testing::TempPath;

std::vector<ScheduleEntry> RunSchedule(BackendKind backend, const std::string& model, int image_size,
                                       int batch, int steps, const std::string& file) {
  TrainOptions options;
  options.backend = backend;
  options.model.name = model;
  options.model.image_size = image_size;
  options.batch = batch;
  options.steps = steps;
  options.alloc_conf = ParseAllocConf(WithDefaultBacking(backend, ""));
  options.trace_path = TempPath(file);
  const TrainResult r = Train(options);
  EXPECT_FALSE(r.oom);
  auto schedule = Schedule(traces::ReadTrace(options.trace_path));
  std::filesystem::remove(options.trace_path);
  return schedule;
}

void ExpectSameSchedule(const std::vector<ScheduleEntry>& cpu, const std::vector<ScheduleEntry>& sim) {
  ASSERT_EQ(cpu.size(), sim.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(cpu[i], sim[i]) << "first difference at entry " << i << ": cpu " << cpu[i].tag << " "
                              << cpu[i].size << ", sim " << sim[i].tag << " " << sim[i].size;
  }
}

TEST(Schedule, SimEqualsCpuTiny) {
  const auto cpu = RunSchedule(BackendKind::kCpu, "tiny", 32, 8, 2, "cpu.fst");
  const auto sim = RunSchedule(BackendKind::kSim, "tiny", 32, 8, 2, "sim.fst");
  EXPECT_GT(cpu.size(), 100u);
  ExpectSameSchedule(cpu, sim);
}

TEST(Schedule, SimEqualsCpuResNet18) {
  const auto cpu = RunSchedule(BackendKind::kCpu, "resnet18", 32, 2, 1, "cpu.fst");
  const auto sim = RunSchedule(BackendKind::kSim, "resnet18", 32, 2, 1, "sim.fst");
  ExpectSameSchedule(cpu, sim);
  // The residual graph is in it: tags of a block's second conv and its downsample.
  bool conv2 = false, downsample = false;
  for (const auto& e : cpu) {
    conv2 |= e.tag == "layer3.1.conv2/activation";
    downsample |= e.tag == "layer2.0.downsample.0/activation";
  }
  EXPECT_TRUE(conv2);
  EXPECT_TRUE(downsample);
}

// Every activation of the forward pass is freed by the end of the same step's backward: what is
// live between steps is parameters, momentum and running statistics only.
TEST(Schedule, OnlyStateSurvivesAStep) {
  TrainOptions options;
  options.backend = BackendKind::kSim;
  options.model.name = "resnet50";
  options.model.image_size = 224;
  options.model.classes = 1000;
  options.batch = 256;
  options.steps = 2;
  options.alloc_conf = ParseAllocConf("backing=sim,capacity=80GiB");
  const TrainResult r = Train(options);
  ASSERT_FALSE(r.oom);
  EXPECT_EQ(r.param_count, 25557032u);  // torchvision's resnet50
  const std::uint64_t params_bytes = r.param_count * 4;
  // in use between steps: weights + momentum + running stats (+ rounding), not a single activation
  EXPECT_GE(r.steps[1].in_use, 2 * params_bytes);
  EXPECT_LT(r.steps[1].in_use, 2 * params_bytes + 2 * fragscope::MiB);
  EXPECT_GT(r.peak_in_use, 15 * fragscope::GiB);  // activations of batch 256 at 224x224
}

}  // namespace
}  // namespace fragscope::trainer
