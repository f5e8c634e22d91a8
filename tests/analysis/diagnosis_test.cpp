// The diagnosis pipeline: AnalysisContext reads the evidence once, and Diagnose gives the metrics,
// the OOMs with checked advice, the minimal limit and leaks from what that one pass kept.
#include "fragscope/analysis/diagnosis.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "support/recording_sink.hpp"

namespace fragscope::analysis {
namespace {

struct Recorded {
  traces::TraceHeader header;
  std::vector<traces::Event> events;
};

// 16 allocations of 4 MiB, every other one freed, then a request of 8 MiB. Under growth=off,
// gc=off and a 64 MiB limit no hole fits it: a fragmentation OOM (32 MiB free in 4 MiB holes).
Recorded FragmentedRun(const std::string& conf_text) {
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::err);
  auto system = MemorySystem::Create(ParseAllocConf(conf_text));
  testing::RecordingSink sink;
  system->SetSink(&sink);
  DeviceAllocator& allocator = system->device(0);
  std::vector<void*> live;
  for (int i = 0; i < 16; ++i) live.push_back(allocator.Allocate(4 * MiB));
  for (int i = 0; i < 16; i += 2) allocator.Free(live[static_cast<std::size_t>(i)]);
  OomReport report;
  if (void* big = allocator.TryAllocate(8 * MiB, {}, &report)) live.push_back(big);  // fits: no OOM
  for (std::size_t i = 1; i < live.size(); i += i < 15 ? 2 : 1) allocator.Free(live[i]);
  spdlog::set_level(level);
  Recorded recorded{system->MakeTraceHeader("diagnosis_test"), sink.events()};
  system->SetSink(nullptr);
  return recorded;
}

// A block source that can be read once only: a second pass fails the test.
class OnePass {
 public:
  explicit OnePass(std::vector<traces::Event> events) : events_(std::move(events)) {}
  ObservedBlocks Blocks() {
    return [this](const BlockObserver& observer) -> BlockSource {
      ++passes_;
      return [this, observer](std::vector<traces::Event>* out) {
        if (next_ >= events_.size()) return false;
        const std::size_t end = std::min(events_.size(), next_ + 7);
        out->assign(events_.begin() + static_cast<std::ptrdiff_t>(next_), events_.begin() + static_cast<std::ptrdiff_t>(end));
        next_ = end;
        if (observer) observer(*out);
        return true;
      };
    };
  }
  int passes() const { return passes_; }

 private:
  std::vector<traces::Event> events_;
  std::size_t next_ = 0;
  int passes_ = 0;
};

TEST(Diagnosis, OnePassGivesTheOomsTheCheckedAdviceAndTheMinimalLimit) {
  const Recorded run = FragmentedRun("backing=sim,capacity=1GiB,limit=64MiB,growth=off,gc=off");
  OnePass source(run.events);
  const auto context = AnalysisContext::Read(run.header, source.Blocks());
  EXPECT_EQ(source.passes(), 1);
  ASSERT_TRUE(context->recorded_conf().has_value());
  ASSERT_NE(context->sequence(), nullptr) << "a trace with an OOM under fragscope's policy keeps its sequence";
  EXPECT_EQ(context->sequence()->recorded_ooms, 1u);

  const Diagnosis diagnosis = Diagnose(*context);
  EXPECT_EQ(source.passes(), 1) << "Diagnose must not read the evidence again";
  ASSERT_EQ(diagnosis.devices.size(), 1u);
  EXPECT_TRUE(diagnosis.any_oom);
  const DeviceDiagnosis& device = diagnosis.devices[0];
  EXPECT_EQ(device.metrics.peak_load, 64 * MiB);
  ASSERT_EQ(device.ooms.size(), 1u);
  EXPECT_EQ(device.ooms[0].report.cause(), OomCause::kFragmentation);
  // The minimal limit under the recorded policy, found by bisection over the kept sequence: the
  // 64 MiB of the peak plus a region for the 8 MiB request.
  ASSERT_TRUE(diagnosis.min_limit.has_value());
  EXPECT_TRUE(diagnosis.min_limit->fits_at_all);
  EXPECT_EQ(diagnosis.min_limit->min_limit, 72 * MiB);
  EXPECT_EQ(device.ooms[0].min_limit, 72 * MiB);
  // gc=off was recorded; with growth=off every 4 MiB allocation had a region of its own, so the
  // eight freed ones left eight empty regions that gc would release: the replay with gc=on meets no
  // OOM, and the advice is given.
  EXPECT_EQ(device.ooms[0].report.suggestion.rfind("turn gc on", 0), 0u) << device.ooms[0].report.suggestion;
}

// The inspector's load builds no sequence (its first frame waits for the model only); its job
// reads the sequence again and attaches it: the same diagnosis as the one-pass context gives.
TEST(Diagnosis, ASequenceReadAgainGivesTheSameDiagnosis) {
  const Recorded run = FragmentedRun("backing=sim,capacity=1GiB,limit=64MiB,growth=off,gc=off");
  OnePass source(run.events);
  ContextOptions options;
  options.build_sequence = false;
  const auto context = AnalysisContext::Read(run.header, source.Blocks(), options);
  EXPECT_EQ(context->sequence(), nullptr);
  const Diagnosis without = Diagnose(*context);
  EXPECT_FALSE(without.min_limit.has_value()) << "nothing to replay";

  OnePass again(run.events);
  const auto attached = AnalysisContext::WithSequence(*context, BuildAllocationSequence(run.header, again.Blocks()({})));
  ASSERT_NE(attached->sequence(), nullptr);
  EXPECT_EQ(&attached->model(), &context->model()) << "the model is shared, not rebuilt";
  const Diagnosis diagnosis = Diagnose(*attached);
  ASSERT_TRUE(diagnosis.min_limit.has_value());
  EXPECT_EQ(diagnosis.min_limit->min_limit, 72 * MiB);
  ASSERT_EQ(diagnosis.devices.size(), 1u);
  ASSERT_EQ(diagnosis.devices[0].ooms.size(), 1u);
  EXPECT_EQ(diagnosis.devices[0].ooms[0].min_limit, 72 * MiB);
  EXPECT_EQ(diagnosis.devices[0].ooms[0].report.suggestion.rfind("turn gc on", 0), 0u);
}

TEST(Diagnosis, WithoutAnOomNoSequenceIsKeptAndNothingIsReplayed) {
  Recorded run = FragmentedRun("backing=sim,capacity=1GiB,limit=1GiB,growth=off");
  OnePass source(run.events);
  const auto context = AnalysisContext::Read(run.header, source.Blocks());
  EXPECT_EQ(context->sequence(), nullptr);
  const Diagnosis diagnosis = Diagnose(*context);
  EXPECT_FALSE(diagnosis.any_oom);
  EXPECT_FALSE(diagnosis.min_limit.has_value());
}

TEST(Diagnosis, EvidenceWithoutAFragscopeConfigurationGetsNoMadeUpPolicy) {
  Recorded run = FragmentedRun("backing=sim,capacity=1GiB,limit=64MiB,growth=off,gc=off");
  for (const std::string conf : {"", "expandable_segments:True"}) {
    SCOPED_TRACE(conf);
    run.header.alloc_conf = conf;
    OnePass source(run.events);
    const auto context = AnalysisContext::Read(run.header, source.Blocks());
    EXPECT_FALSE(context->recorded_conf().has_value());
    EXPECT_EQ(context->recorded_conf_error().empty(), conf.empty());
    EXPECT_EQ(context->sequence(), nullptr);
    const Diagnosis diagnosis = Diagnose(*context);
    EXPECT_TRUE(diagnosis.any_oom);
    EXPECT_FALSE(diagnosis.min_limit.has_value()) << "no policy was recorded: no limit can be searched";
  }
}

TEST(Diagnosis, ADeviceThatIsNotThereIsAnError) {
  const Recorded run = FragmentedRun("backing=sim,capacity=1GiB,limit=64MiB,growth=off");
  OnePass source(run.events);
  const auto context = AnalysisContext::Read(run.header, source.Blocks());
  DiagnosisOptions options;
  options.device = 7;
  EXPECT_THROW(Diagnose(*context, options), std::invalid_argument);
  options.device = 0;
  EXPECT_EQ(Diagnose(*context, options).devices.size(), 1u);
}

}  // namespace
}  // namespace fragscope::analysis
