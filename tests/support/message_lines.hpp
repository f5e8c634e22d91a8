// What a message diagnosis prints (analysis::MessageDiagnosis), as the tests of the message rules
// search it: every line, and whether any figure in them is below zero.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fragscope/analysis/message_diagnosis.hpp"
#include "fragscope/traces/oom_message.hpp"

namespace fragscope::testing {

// Every line a report prints of the diagnosis: arithmetic, explanation, notes, advice.
inline std::vector<std::string> MessageLines(const analysis::MessageDiagnosis& d) {
  std::vector<std::string> all = d.arithmetic;
  all.push_back(d.explanation);
  all.insert(all.end(), d.notes.begin(), d.notes.end());
  all.insert(all.end(), d.advice.begin(), d.advice.end());
  all.insert(all.end(), d.fragscope_advice.begin(), d.fragscope_advice.end());
  return all;
}

// A figure printed below zero: "−" (U+2212) right before a digit ("= −2.00 MiB", "by −5.09 MiB").
// The same sign between figures ("T − F") is an operator.
inline bool PrintsANegativeFigure(const analysis::MessageDiagnosis& d) {
  static const std::string kMinus = "−";
  for (const std::string& line : MessageLines(d)) {
    for (std::size_t at = line.find(kMinus); at != std::string::npos; at = line.find(kMinus, at + 1)) {
      const std::size_t next = at + kMinus.size();
      if (next < line.size() && line[next] >= '0' && line[next] <= '9') return true;
    }
  }
  return false;
}

// The diagnosis of the one message in `text` (a test failure if it holds none or several).
inline analysis::MessageDiagnosis DiagnoseText(const std::string& text) {
  const auto messages = traces::FindOomMessages(text);
  EXPECT_EQ(messages.size(), 1u) << text;
  return messages.empty() ? analysis::MessageDiagnosis{} : analysis::DiagnoseMessage(messages[0]);
}

// Whether any of `lines` contains `needle`.
inline bool Mentions(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& line : lines) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace fragscope::testing
