// min-limit (the smallest limit that runs a sequence, to the MiB) and the policy advice that is
// checked by replaying: over in-memory events, no trace files.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/device_allocator.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/synth.hpp"
#include "replay_fixtures.hpp"

namespace fragscope::analysis {
namespace {

using namespace replay_fixtures;  // NOLINT: the fixtures are this file's vocabulary

// --- min-limit ---

TEST(MinLimit, FindsTheSmallestLimitToTheMiB) {
  QuietOoms quiet;
  const Trace trace = SynthTrace(20000);
  for (const char* conf : {"", "growth=off,gc=off", "expandable=on"}) {
    SCOPED_TRACE(conf);
    const ReplayOptions options = Options(conf);
    const MinLimitResult found = FindMinLimit(trace.sequence, options);
    ASSERT_TRUE(found.fits_at_all);
    EXPECT_EQ(found.peak_load, PeaksOf(trace.events, 0).load);
    EXPECT_GE(found.min_limit, found.peak_load);
    EXPECT_GT(found.replays, 2u);
    EXPECT_LT(found.replays, 25u);
    ReplayOptions at = options;
    at.conf.limit = found.min_limit;
    EXPECT_FALSE(Replay(trace.sequence, at).stopped_at_oom);
    at.conf.limit = found.min_limit - MiB;
    EXPECT_TRUE(Replay(trace.sequence, at).stopped_at_oom);
  }
}

// Under paging a limit of less than one page is refused when the allocator is made: the search
// counts it as a limit that does not run the trace, and a small trace's smallest limit is one page.
TEST(MinLimit, ASmallTraceUnderPagingNeedsOnePage) {
  const std::vector<Event> events = {Alloc(0, 0x1000, 300 * 1024, 1, 1), Alloc(0, 0x100000, 200 * 1024, 2, 2),
                                     Free(0, 0x1000, 1, 3), Free(0, 0x100000, 2, 4)};
  const AllocationSequence sequence = Build({}, events);
  const MinLimitResult paging = FindMinLimit(sequence, Options(""));
  ASSERT_TRUE(paging.fits_at_all);
  EXPECT_EQ(paging.min_limit, 2 * MiB) << "one 2 MiB page holds both";
  const MinLimitResult regions = FindMinLimit(sequence, Options("growth=on"));
  ASSERT_TRUE(regions.fits_at_all);
  EXPECT_EQ(regions.min_limit, MiB) << "the region model has no pages";
}

TEST(MinLimit, SaysWhenNothingFitsAndRefusesVirtualDevices) {
  QuietOoms quiet;
  const Trace trace = SynthTrace(20000);
  ReplayOptions options = Options("");
  options.capacity = 256 * MiB;
  const MinLimitResult none = FindMinLimit(trace.sequence, options);
  EXPECT_FALSE(none.fits_at_all);
  EXPECT_EQ(none.replays, 1u);
  try {
    FindMinLimit(trace.sequence, Options("capacity=16GiB,virtual_devices=8GiB+8GiB"));
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_EQ(error.key(), "virtual_devices");
  }
}

// Policy advice is checked by replay: a switch that helps is suggested, one that does not is not.
ReplayResult ReplayUnder(const AllocationSequence& sequence, const AllocConf& conf) {
  ReplayOptions options;
  options.conf = conf;
  return Replay(sequence, options);
}

TEST(PolicyAdvice, GcThatHelpsIsSuggested) {
  // Two 4 MiB blocks fill two regions under an 8 MiB limit; both are freed; a 6 MiB request then
  // needs the empty regions released (gc), which gc=off will not do.
  std::vector<Event> events = {Alloc(0, 0x100000, 4 * MiB, 1, 0), Alloc(0, 0x600000, 4 * MiB, 2, 1),
                               Free(0, 0x100000, 1, 2), Free(0, 0x600000, 2, 3),
                               Alloc(0, 0xb00000, 6 * MiB, 3, 4)};
  const AllocationSequence sequence = Build({}, events);
  QuietOoms quiet;
  const AllocConf conf = ParseAllocConf("backing=sim,limit=8MiB,growth=off,gc=off");
  ReplayResult result = ReplayUnder(sequence, conf);
  ASSERT_EQ(result.devices.at(0).ooms.size(), 1u);
  const CheckedAdvice advice = CheckPolicyAdvice(sequence, conf, true, 1);
  EXPECT_TRUE(advice.checked_gc);
  EXPECT_EQ(advice.ooms_with_gc, 0u);
  EXPECT_FALSE(advice.facts.gc);  // still off: the advice will say "turn gc on"
  EXPECT_TRUE(advice.note.empty());
  ReplaceWithCheckedAdvice(result.devices[0].ooms, advice);
  EXPECT_EQ(result.devices[0].ooms[0].report.suggestion.rfind("turn gc on (gc=on)", 0), 0u)
      << result.devices[0].ooms[0].report.suggestion;
}

TEST(PolicyAdvice, SwitchesThatDoNotHelpAreNotSuggested) {
  // Four 1 MiB holes between live blocks (see FragmentationOomNamesTheHolesThatAlmostFit): no
  // region is empty (gc cannot help) and one expandable region strands the same holes.
  const AllocationSequence sequence = Build({}, FourMebibyteHolesThenOneAndAHalf());
  QuietOoms quiet;
  const AllocConf conf = ParseAllocConf("backing=sim,limit=8MiB,growth=off,gc=off");
  ReplayResult result = ReplayUnder(sequence, conf);
  ASSERT_EQ(result.devices.at(0).ooms.size(), 1u);
  const CheckedAdvice advice = CheckPolicyAdvice(sequence, conf, true, 1);
  EXPECT_TRUE(advice.checked_gc);
  EXPECT_TRUE(advice.checked_expandable);
  EXPECT_EQ(advice.ooms_with_gc, 1u);
  EXPECT_EQ(advice.ooms_with_expandable, 1u);
  EXPECT_EQ(advice.note, "checked by replay: on this trace gc=on meets 1 and expandable=on meets 1 OOMs, 1 "
                         "without them, so they are not suggested");
  // A replay's own report carries the live allocator's unchecked advice: replaced.
  ReplaceWithCheckedAdvice(result.devices[0].ooms, advice);
  const std::string& suggestion = result.devices[0].ooms[0].report.suggestion;
  EXPECT_EQ(suggestion.find("gc=on:"), std::string::npos) << suggestion;
  EXPECT_EQ(suggestion.rfind("raise the limit", 0), 0u) << suggestion;
  // A backing that cannot grow in place is never offered expandable=on, checked or not.
  EXPECT_FALSE(CheckPolicyAdvice(sequence, conf, false, 1).checked_expandable);
}

}  // namespace
}  // namespace fragscope::analysis
