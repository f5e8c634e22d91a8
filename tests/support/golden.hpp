// Golden files (tests/golden/): a test's output compared with the committed text, or rewritten
// when FRAGSCOPE_UPDATE_GOLDEN is set after an intended change of the output.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "support/shell.hpp"

namespace fragscope::testing {

// Compares `actual` with tests/golden/NAME, or rewrites it when FRAGSCOPE_UPDATE_GOLDEN is set.
inline void ExpectGolden(const std::string& name, const std::string& actual) {
  const std::filesystem::path path = std::filesystem::path(FRAGSCOPE_SOURCE_DIR) / "tests" / "golden" / name;
  if (std::getenv("FRAGSCOPE_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << actual;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; run with FRAGSCOPE_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, Slurp(path)) << "output differs from " << path;
}

}  // namespace fragscope::testing
