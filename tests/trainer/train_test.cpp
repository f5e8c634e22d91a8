// The training loop: tiny learns on the cpu, the trace of a run is complete, data parallel on two
// virtual devices equals one device on the same global batch, data files are read or refused.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/trainer/data.hpp"
#include "fragscope/trainer/trainer.hpp"
#include "trainer_test_util.hpp"

namespace fragscope::trainer {
namespace {

using testing::TempPath;

TrainOptions CpuOptions(const std::string& model, int batch, int steps) {
  TrainOptions options;
  options.backend = BackendKind::kCpu;
  options.model.name = model;
  options.batch = batch;
  options.steps = steps;
  options.alloc_conf = ParseAllocConf("backing=host");
  return options;
}

double MeanLoss(const TrainResult& r, std::size_t from, std::size_t to) {
  double sum = 0.0;
  for (std::size_t i = from; i < to; ++i) sum += r.steps[i].loss;
  return sum / static_cast<double>(to - from);
}

// The documented promise (docs/trainer.md): tiny, batch 32, seed 1, default SGD (lr 0.005,
// momentum 0.9): the mean loss of steps 35-39 is below 35% of that of steps 0-4.
TEST(Train, TinyLearnsOnCpu) {
  const TrainResult r = Train(CpuOptions("tiny", 32, 40));
  ASSERT_FALSE(r.oom);
  ASSERT_EQ(r.steps.size(), 40u);
  const double first = MeanLoss(r, 0, 5), last = MeanLoss(r, 35, 40);
  EXPECT_GT(first, 2.0);  // about log(10) and above at the start
  EXPECT_LT(last, 0.35 * first) << "first " << first << " last " << last;
  double accuracy = 0.0;
  for (std::size_t i = 35; i < 40; ++i) accuracy += r.steps[i].accuracy / 5.0;
  EXPECT_GT(accuracy, 0.8);
  EXPECT_EQ(r.param_count, 3u * 16 * 9 + 16 * 2 + 16 * 32 * 9 + 32 * 2 + 2048 * 10 + 10);
}

TEST(Train, SameSeedSameLosses) {
  const TrainResult a = Train(CpuOptions("tiny", 8, 3));
  const TrainResult b = Train(CpuOptions("tiny", 8, 3));
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(a.steps[i].loss, b.steps[i].loss);
}

TEST(Train, TraceIsCompleteWithMarkersAndTags) {
  TrainOptions options = CpuOptions("tiny", 4, 2);
  options.trace_path = TempPath("run.fst");
  const TrainResult r = Train(options);
  const traces::Trace trace = traces::ReadTrace(options.trace_path);
  EXPECT_TRUE(trace.warnings.empty());
  EXPECT_EQ(trace.events.size(), r.trace_events);
  EXPECT_EQ(trace.header.producer, "fragscope-train 0.1.0");
  std::vector<std::string> markers;
  std::size_t allocs = 0, frees = 0;
  std::set<std::string> tags;
  for (const auto& e : trace.events) {
    if (e.type == traces::EventType::kMarker) markers.push_back(trace.TagName(e.tag));
    if (e.type == traces::EventType::kAlloc) {
      ++allocs;
      tags.insert(trace.TagName(e.tag));
    }
    if (e.type == traces::EventType::kFree) ++frees;
  }
  EXPECT_EQ(allocs, frees) << "every tensor is freed by the end of the run";
  const std::vector<std::string> expected = {"setup", "step 0 begin", "forward", "backward", "optimizer",
                                             "step 0 end", "step 1 begin", "forward", "backward",
                                             "optimizer", "step 1 end"};
  EXPECT_EQ(markers, expected);
  for (const char* tag : {"block1.conv/weight", "block1.conv/activation", "block1.conv/workspace",
                          "block1.conv/weight_grad", "block1.conv/weight_momentum", "block1.bn/saved_mean",
                          "block2.pool/activation_grad", "fc/bias_grad", "input/images", "input/labels",
                          "loss/logits_grad"}) {
    EXPECT_TRUE(tags.count(tag)) << tag;
  }
  std::filesystem::remove(options.trace_path);
}

// tiny-nobn: without batch norm the mean of the per-device gradients is the gradient of the whole
// batch, so two virtual devices on 16 samples must follow one device on the same 16.
TEST(Train, DataParallelEqualsSingleDevice) {
  TrainOptions single = CpuOptions("tiny-nobn", 16, 4);
  TrainOptions dual = single;
  dual.alloc_conf = ParseAllocConf("backing=host,virtual_devices=256MiB+256MiB");
  const TrainResult a = Train(single), b = Train(dual);
  ASSERT_FALSE(a.oom);
  ASSERT_FALSE(b.oom);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(a.steps[i].loss, b.steps[i].loss, 1e-4 * std::max(1.0, std::abs(a.steps[i].loss))) << i;
    EXPECT_EQ(a.steps[i].accuracy, b.steps[i].accuracy) << i;
  }
  EXPECT_GT(b.steps[3].reserved, 0u);
}

// A data-parallel run whose device 1 runs out: the "oom at step" marker is on device 1 only (it was
// on every device, so the inspector drew device 1's OOM on device 0's timeline too).
TEST(Train, TheOomMarkerIsOnTheDeviceThatRanOut) {
  TrainOptions options = CpuOptions("tiny", 16, 2);
  options.alloc_conf = ParseAllocConf("backing=host,virtual_devices=256MiB+2MiB");
  options.trace_path = TempPath("dp_oom.fst");
  const TrainResult r = Train(options);
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom->device, 1u);
  const traces::Trace trace = traces::ReadTrace(options.trace_path);
  std::vector<std::pair<std::uint32_t, std::string>> oom_markers;
  std::size_t step_begins = 0;
  for (const auto& e : trace.events) {
    if (e.type != traces::EventType::kMarker) continue;
    const std::string name = trace.TagName(e.tag);
    if (name.starts_with("oom at step")) oom_markers.emplace_back(e.device, name);
    step_begins += name == "step 0 begin";
  }
  EXPECT_EQ(step_begins, 2u) << "the step markers stay on both devices";
  const std::vector<std::pair<std::uint32_t, std::string>> expected = {
      {1u, "oom at step " + std::to_string(r.oom_context.step) + " (" + r.oom_context.phase + ")"}};
  EXPECT_EQ(oom_markers, expected);
  std::filesystem::remove(options.trace_path);
}

TEST(Train, CpuBackendRefusesSimBacking) {
  TrainOptions options = CpuOptions("tiny", 4, 1);
  options.alloc_conf = ParseAllocConf("backing=sim");
  EXPECT_THROW(Train(options), std::invalid_argument);
  EXPECT_EQ(WithDefaultBacking(BackendKind::kCpu, "limit=1GiB"), "backing=host,limit=1GiB");
  EXPECT_EQ(WithDefaultBacking(BackendKind::kSim, ""), "backing=sim");
  EXPECT_EQ(WithDefaultBacking(BackendKind::kSim, "backing=host"), "backing=host");
  // Blank is the defaults; a key that merely contains the word is not the backing key.
  EXPECT_EQ(WithDefaultBacking(BackendKind::kCpu, "   "), "backing=host");
  EXPECT_EQ(WithDefaultBacking(BackendKind::kSim, " backing = host ,gc=on"), " backing = host ,gc=on");
  EXPECT_EQ(WithDefaultBacking(BackendKind::kSim, "nobacking=1"), "backing=sim,nobacking=1");
}

// Issue 13: Train refuses SGD numbers the command line refuses (a program may call it directly).
TEST(Train, RefusesSgdNumbersOutOfRange) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const double lr : {nan, inf, 0.0, -0.1}) {
    TrainOptions options = CpuOptions("tiny", 4, 1);
    options.lr = lr;
    EXPECT_THROW(Train(options), std::invalid_argument) << lr;
  }
  for (const double momentum : {nan, -5.0, 1.0}) {
    TrainOptions options = CpuOptions("tiny", 4, 1);
    options.momentum = momentum;
    EXPECT_THROW(Train(options), std::invalid_argument) << momentum;
  }
  for (const double decay : {nan, inf, -1.0}) {
    TrainOptions options = CpuOptions("tiny", 4, 1);
    options.weight_decay = decay;
    EXPECT_THROW(Train(options), std::invalid_argument) << decay;
  }
}

// The cpu backend writes each batch straight into allocator memory: the same samples as a batch
// read into host vectors.
TEST(Data, NextIntoGivesTheSamplesOfNext) {
  auto a = MakeSyntheticData(3, 8, 10, 5);
  auto b = MakeSyntheticData(3, 8, 10, 5);
  Batch whole;
  a->Next(7, &whole);
  std::vector<float> images(7 * 3 * 8 * 8);
  std::vector<std::int32_t> labels(7);
  b->NextInto(3, images.data(), labels.data());  // in two shares, as over two devices
  b->NextInto(4, images.data() + 3 * 3 * 8 * 8, labels.data() + 3);
  EXPECT_EQ(whole.images, images);
  EXPECT_EQ(whole.labels, labels);
}

void WriteFile(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

TEST(Data, MissingAndMalformedFilesAreRefusedWithTheirName) {
  try {
    OpenDataFiles("/nonexistent/cifar.bin");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/cifar.bin"), std::string::npos);
  }
  const std::string bad = TempPath("bad.bin");
  WriteFile(bad, std::vector<std::uint8_t>(3000, 1));
  try {
    OpenDataFiles(bad);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("not a whole number of CIFAR-10 records"), std::string::npos) << e.what();
  }
  std::vector<std::uint8_t> bad_label(3073, 0);
  bad_label[0] = 11;
  WriteFile(bad, bad_label);
  EXPECT_THROW(OpenDataFiles(bad), DataError);
  std::filesystem::remove(bad);
}

TEST(Data, CifarBinaryTrains) {
  std::vector<std::uint8_t> bytes;
  for (int i = 0; i < 20; ++i) {
    bytes.push_back(static_cast<std::uint8_t>(i % 10));
    for (int j = 0; j < 3072; ++j) bytes.push_back(static_cast<std::uint8_t>((i * 7 + j) % 256));
  }
  const std::string path = TempPath("data_batch_1.bin");
  WriteFile(path, bytes);
  auto data = OpenDataFiles(path);
  EXPECT_EQ(data->channels(), 3);
  EXPECT_EQ(data->image_size(), 32);
  Batch batch;
  data->Next(25, &batch);  // wraps around the 20 records
  EXPECT_EQ(batch.labels[0], 0);
  EXPECT_EQ(batch.labels[21], 1);
  TrainOptions options = CpuOptions("tiny", 8, 2);
  options.data_path = path;
  const TrainResult r = Train(options);
  EXPECT_FALSE(r.oom);
  EXPECT_TRUE(std::isfinite(r.final_loss()));
  std::filesystem::remove(path);
}

TEST(Data, MnistIdxIsPaddedTo32) {
  const std::string dir = TempPath("mnist");
  std::filesystem::create_directories(dir);
  std::vector<std::uint8_t> images = {0, 0, 8, 3, 0, 0, 0, 4, 0, 0, 0, 28, 0, 0, 0, 28};
  for (int i = 0; i < 4 * 28 * 28; ++i) images.push_back(static_cast<std::uint8_t>(i % 251));
  std::vector<std::uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, 4, 3, 1, 4, 1};
  WriteFile(dir + "/train-images-idx3-ubyte", images);
  EXPECT_THROW(OpenDataFiles(dir), DataError);  // labels missing
  WriteFile(dir + "/train-labels-idx1-ubyte", labels);
  auto data = OpenDataFiles(dir);
  EXPECT_EQ(data->channels(), 1);
  EXPECT_EQ(data->image_size(), 32);
  Batch batch;
  data->Next(4, &batch);
  EXPECT_EQ(batch.labels, (std::vector<std::int32_t>{3, 1, 4, 1}));
  EXPECT_EQ(batch.images[0], batch.images[1]);  // the 2-pixel border is padding
  TrainOptions options = CpuOptions("tiny", 4, 1);
  options.data_path = dir;
  EXPECT_FALSE(Train(options).oom);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fragscope::trainer
