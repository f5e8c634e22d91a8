// The fixture of the command-line tests (tests/cli/): a fresh directory per test for the files it
// writes and the program's output, and Run to start `fragscope` (FRAGSCOPE_CLI) there.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "support/cli_runner.hpp"

namespace fragscope::testing {

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    // Suite, process and test in the name: ctest -j runs every test case as a process of its own.
    dir_ = std::filesystem::temp_directory_path() /
           ("fragscope_" + std::string(test->test_suite_name()) + "_" + std::to_string(::getpid()) + "_" +
            test->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs fragscope with `args` (each quoted); `stdin_path`, when given, becomes its standard input.
  CliResult Run(const std::vector<std::string>& args, const std::string& stdin_path = {}) {
    return RunProgram(FRAGSCOPE_CLI, args, dir_, stdin_path);
  }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  // A committed sample trace (traces/samples/NAME).
  static std::string Sample(const std::string& name) {
    return (std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "traces" / "samples" / name).string();
  }

  std::filesystem::path dir_;
};

}  // namespace fragscope::testing
