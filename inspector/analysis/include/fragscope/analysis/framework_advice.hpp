// Advice in the terms of the framework the evidence came from (DESIGN.md: "Advice is given in the
// framework's own terms ... and fragscope's policies as a second line"). An OOM recorded in a
// PyTorch snapshot, a TensorFlow dump or an RMM log gets what to change in that framework; the
// allocator's own suggestion (a limit, a fragscope policy) stays the second line.
#pragma once

#include <string>
#include <string_view>

#include "fragscope/traces/event.hpp"

namespace fragscope::analysis {

struct FrameworkAdvice {
  std::string framework;  // "PyTorch", "TensorFlow", "RMM"; empty: no framework's terms apply
  std::string advice;     // one line
  bool empty() const { return advice.empty(); }
};

// For evidence of `source_format` (TraceHeader::source_format: "pytorch-snapshot", "torch-profiler",
// "tensorflow-bfc-log", "rmm-csv"; fragscope's own traces and unknown causes get none).
FrameworkAdvice AdviceInFrameworkTerms(std::string_view source_format, traces::OomCause cause);

}  // namespace fragscope::analysis
