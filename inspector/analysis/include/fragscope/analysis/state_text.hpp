// A state's findings in sentences, in the source framework's words: what `fragscope report` prints
// for each moment, and what the inspector shows where a history would have its timeline. One text
// for both, so that the window never says "free" of a range the report calls unknown.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/analysis/state_findings.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

struct StateText {
  std::string title;               // "device 0 (GPU_0_bfc), at the OOM on line 38"
  std::vector<std::string> lines;  // "in use 11.26 GiB (its own count), reserved ...", ...
};

StateText DescribeState(const traces::TraceHeader& header, const StateFindings& s);

// Reserved less in use where the evidence's own counts give both exactly (in use not a lower
// bound); nullopt otherwise.
std::optional<std::uint64_t> FreeByOwnCounts(const StateFindings& s);

}  // namespace fragscope::analysis
