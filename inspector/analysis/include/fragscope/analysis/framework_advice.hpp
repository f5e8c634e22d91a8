// Advice in the terms of the framework the evidence came from (DESIGN.md: "Advice is given in the
// framework's own terms ... and fragscope's policies as a second line"). An OOM recorded in a
// PyTorch snapshot, a TensorFlow dump or an RMM log gets what to change in that framework; the
// allocator's own suggestion (a limit, a fragscope policy) stays the second line.
#pragma once

#include <string>
#include <string_view>

#include "fragscope/traces/event.hpp"
#include "fragscope/traces/trace_header.hpp"

namespace fragscope::analysis {

struct FrameworkAdvice {
  std::string framework;  // "PyTorch", "TensorFlow", "JAX", "RMM"; empty: no framework's terms apply
  std::string advice;     // one line
  bool empty() const { return advice.empty(); }
};

// For evidence whose header.source_format is "pytorch-snapshot", "torch-profiler",
// "tensorflow-bfc-log" (JAX's where its source allocator is traces::kJaxBfcAllocator) or "rmm-csv"
// (fragscope's own traces and unknown causes get none). The
// settings the evidence recorded (header.source.settings) decide between alternatives: a PyTorch run
// that had expandable_segments on is not told to turn it on.
FrameworkAdvice AdviceInFrameworkTerms(const traces::TraceHeader& header, traces::OomCause cause);

}  // namespace fragscope::analysis
