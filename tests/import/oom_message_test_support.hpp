// What the OOM message reader tests share: the one failure a text holds.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "fragscope/traces/oom_message.hpp"

namespace fragscope::traces::testing {

// The one failure in `text`; a test failure (and an empty message) when it holds none or several.
inline OomMessage One(const std::string& text) {
  const auto messages = FindOomMessages(text);
  EXPECT_EQ(messages.size(), 1u) << text;
  return messages.empty() ? OomMessage{} : messages[0];
}

}  // namespace fragscope::traces::testing
