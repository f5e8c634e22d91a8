// The PyTorch entry points of libfragscope_torch.so, called as PyTorch calls them (dlopen, the
// documented signatures) by torch_shim_child on the host backing; the traces it leaves at exit are
// read back here.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fragscope/traces/trace_reader.hpp"

namespace {

namespace fs = std::filesystem;
using fragscope::traces::EventType;

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class TorchShim : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fragscope_torch_shim_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the child with the given environment; returns its exit status.
  int RunChild(const std::string& env, const std::string& mode) {
    const std::string command = env + " '" FRAGSCOPE_TORCH_CHILD "' '" FRAGSCOPE_TORCH_LIB "' " +
                                mode + " >'" + (dir_ / "stdout").string() + "' 2>'" +
                                (dir_ / "stderr").string() + "'";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  fs::path dir_;
};

std::map<EventType, int> Count(const fragscope::traces::Trace& trace) {
  std::map<EventType, int> counts;
  for (const auto& event : trace.events) ++counts[event.type];
  return counts;
}

TEST_F(TorchShim, AllocatesTracesAndFlushesAtExit) {
  const fs::path trace = dir_ / "run.fst";
  ASSERT_EQ(RunChild("FRAGSCOPE_ALLOC_CONF=backing=host,limit=32MiB,growth=off FRAGSCOPE_TRACE='" +
                         trace.string() + "'",
                     "normal"),
            0)
      << Slurp(dir_ / "stderr");
  const std::string log = Slurp(dir_ / "stderr");
  EXPECT_NE(log.find("fragscope: device 0: host"), std::string::npos) << log;
  // The OOM is thrown with fragscope's report in it, in PyTorch's words first.
  EXPECT_NE(log.find("caught: CUDA out of memory (fragscope). out of memory on device 0: request-too-large"),
            std::string::npos) << log;
  EXPECT_NE(log.find("suggestion:"), std::string::npos) << log;
  EXPECT_NE(log.find("caught: fragscope: device 999 is out of range"), std::string::npos) << log;
  EXPECT_NE(log.find("caught: fragscope: malloc of a negative size (-5) refused"), std::string::npos) << log;
  EXPECT_NE(log.find("fragscope: device 0: invalid free of"), std::string::npos) << log;  // the foreign pointer
  EXPECT_NE(log.find("on device 7 ignored: fragscope allocated nothing on that device"), std::string::npos) << log;
  EXPECT_EQ(log.find("fragscope: device 7:"), std::string::npos) << log;  // no allocator was built for it

  // Device 0: 400 allocations and frees from the threads, the kept one, one OOM, one marker.
  const auto zero = fragscope::traces::ReadTrace(trace.string());
  EXPECT_TRUE(zero.warnings.empty());
  EXPECT_NE(zero.header.alloc_conf.find("backing=host"), std::string::npos);
  EXPECT_NE(zero.header.alloc_conf.find("limit=32MiB"), std::string::npos);
  auto counts = Count(zero);
  EXPECT_EQ(counts[EventType::kAlloc], 401);
  EXPECT_EQ(counts[EventType::kFree], 400);
  EXPECT_EQ(counts[EventType::kOom], 1);
  EXPECT_EQ(counts[EventType::kMarker], 1);
  EXPECT_GE(counts[EventType::kRegionReserve], 1);
  for (std::size_t i = 0; i < zero.events.size(); ++i) {
    const auto& event = zero.events[i];
    // One global order from several threads, nothing lost or repeated.
    EXPECT_EQ(event.seq, zero.events.front().seq + i);
    if (event.type == EventType::kOom) {
      EXPECT_EQ(event.oom.request, 64u << 20);
      EXPECT_EQ(event.oom.cause, fragscope::traces::OomCause::kRequestTooLarge);
    }
    if (event.type == EventType::kMarker) {
      EXPECT_EQ(zero.TagName(event.tag), "step 1");
    }
    if (event.type == EventType::kAlloc) {
      EXPECT_EQ(event.stream, 0x1234u);
    }
  }

  // Device 1 has its own allocator and trace: run.dev1.fst.
  const auto one = fragscope::traces::ReadTrace((dir_ / "run.dev1.fst").string());
  // Named by its CUDA ordinal, as the log line and the trace's events say.
  ASSERT_EQ(one.header.devices.size(), 1u);
  EXPECT_EQ(one.header.devices[0].index, 1u);
  EXPECT_NE(log.find("fragscope: device 1: host"), std::string::npos) << log;
  for (const auto& event : one.events) EXPECT_EQ(event.device, 1u);
  counts = Count(one);
  EXPECT_EQ(counts[EventType::kAlloc], 3);
  EXPECT_EQ(counts[EventType::kFree], 3);
  EXPECT_EQ(counts[EventType::kOom], 0);
}

TEST_F(TorchShim, WithoutTraceNoFileIsWritten) {
  ASSERT_EQ(RunChild("FRAGSCOPE_ALLOC_CONF=backing=host,limit=32MiB FRAGSCOPE_TRACE=", "normal"), 0)
      << Slurp(dir_ / "stderr");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.path().extension() == ".fst";
  EXPECT_EQ(files, 0);
}

TEST_F(TorchShim, BadConfigurationThrowsAndSaysWhyOnce) {
  ASSERT_EQ(RunChild("FRAGSCOPE_ALLOC_CONF=backing=host,grwoth=on", "badconf"), 0)
      << Slurp(dir_ / "stderr");
  const std::string log = Slurp(dir_ / "stderr");
  // The library logs the reason once (its lines start "fragscope: "); the exceptions carry it too.
  const std::string logged = "\nfragscope: cannot create the allocator of device 0";
  const auto first = ("\n" + log).find(logged);
  ASSERT_NE(first, std::string::npos) << log;
  EXPECT_EQ(("\n" + log).find(logged, first + 1), std::string::npos) << log;  // once
  EXPECT_NE(log.find("grwoth"), std::string::npos) << log;
  // Both requests threw: the first with the reason, the second pointing to it.
  EXPECT_NE(log.find("caught: fragscope: cannot create the allocator of device 0"), std::string::npos) << log;
  EXPECT_NE(log.find(": see the first error"), std::string::npos) << log;
}

TEST_F(TorchShim, WithNoBackingNamedTheShimUsesTheGpuNotSim) {
  // No GPU here: the vmm backing cannot open, and the reason says so; with a GPU it would page.
  ASSERT_EQ(RunChild("FRAGSCOPE_ALLOC_CONF=limit=32MiB", "badconf"), 0) << Slurp(dir_ / "stderr");
  const std::string log = Slurp(dir_ / "stderr");
  EXPECT_NE(log.find("caught: fragscope: cannot create the allocator of device 0 (FRAGSCOPE_ALLOC_CONF=limit=32MiB, so backing=vmm,limit=32MiB): "),
            std::string::npos) << log;
  EXPECT_EQ(log.find("backing=sim"), std::string::npos) << log;
}

}  // namespace
