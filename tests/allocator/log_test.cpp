// The libraries log through their own "fragscope" logger: to stderr, so that a host program's
// stdout stays its own (the C ABI and the PyTorch shim run inside other programs), at the level
// $FRAGSCOPE_LOG_LEVEL names.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include "fragscope/allocator/memory_system.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/log.hpp"

namespace fragscope {
namespace {

// One OOM (a request above the limit), whose summary the allocator logs at info.
void MeetOneOom() {
  auto system = MemorySystem::Create(ParseAllocConf("backing=sim,capacity=1GiB,limit=64MiB"));
  OomReport report;
  EXPECT_EQ(system->device(0).TryAllocate(65 * MiB, {}, &report), nullptr);
}

constexpr const char* kSummary = "out of memory on device 0: request-too-large";

TEST(Log, OomSummaryGoesToStderrNotStdout) {
  Log().set_level(spdlog::level::info);  // whatever $FRAGSCOPE_LOG_LEVEL the run has
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  MeetOneOom();
  const std::string out = testing::internal::GetCapturedStdout();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(out, "");
  EXPECT_NE(err.find(kSummary), std::string::npos) << err;
  EXPECT_NE(err.find("[fragscope]"), std::string::npos) << err;  // the logger's name
}

// The level is read when the logger is first made, so each case runs in a fresh process (the
// threadsafe death-test style re-executes this binary) and answers through its exit code.
int StderrOfOneOomContains(const char* level, const char* text) {
  setenv(kLogLevelEnv, level, 1);
  testing::internal::CaptureStderr();
  MeetOneOom();
  const std::string err = testing::internal::GetCapturedStderr();
  return err.find(text) != std::string::npos ? 0 : 1;
}

TEST(Log, LevelFromEnvironmentSilencesInfo) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(StderrOfOneOomContains("error", kSummary) == 0 ? 1 : 0),
              testing::ExitedWithCode(0), "");
  EXPECT_EXIT(std::_Exit(StderrOfOneOomContains("debug", kSummary)), testing::ExitedWithCode(0),
              "");
}

TEST(Log, UnknownLevelIsNamedAndIgnored) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(StderrOfOneOomContains("loud", "FRAGSCOPE_LOG_LEVEL='loud' is not a level")),
              testing::ExitedWithCode(0), "");
  EXPECT_EXIT(std::_Exit(StderrOfOneOomContains("loud", kSummary)), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace fragscope
