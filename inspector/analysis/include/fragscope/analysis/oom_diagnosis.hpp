// The diagnosis of one OOM, recorded in a trace or met in a replay: the allocator's report (cause,
// explanation, suggestion) plus what only a trace can tell: the free holes nearest in size to the
// request at that moment, and the smallest limit at which the same policy runs the whole trace.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/analysis/framework_advice.hpp"

namespace fragscope::analysis {

struct Hole {
  std::uint64_t address = 0;
  std::uint64_t size = 0;
};

struct OomDiagnosis {
  std::uint64_t seq = 0;            // sequence number of the oom event (in the trace or replay)
  std::uint64_t event_index = 0;    // index in the trace's event order
  std::uint64_t op_index = 0;       // replay only: index of the failing op in the AllocationSequence;
                                    // seq and event_index then name the request's event in the
                                    // replayed trace (its alloc, or its oom event)
  OomReport report;                 // device, numbers, cause, explanation, suggestion
  std::vector<Hole> nearest_holes;  // up to 5 free holes closest in size to the request, largest first
  std::optional<std::uint64_t> min_limit;  // smallest limit that runs the trace (when computed)
  // What to change in the framework the evidence came from (PyTorch, TensorFlow, RMM): the first
  // line of advice; report.suggestion (a limit, a fragscope policy) is the second. Empty for
  // fragscope's own traces.
  FrameworkAdvice framework_advice;
};

}  // namespace fragscope::analysis
