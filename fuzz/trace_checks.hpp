// What every reader that yields a trace promises about its events, checked the same way by each
// fuzz target: one global order (seq = position), times that never go back, tags in range, and
// every event on a device the header describes.
#pragma once

#include <cstddef>

#include "fragscope/traces/trace_reader.hpp"
#include "fuzz_check.hpp"

namespace fragscope::fuzz {

inline void CheckEventOrder(const traces::Trace& trace) {
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const traces::Event& e = trace.events[i];
    Check(e.seq == i);
    Check(e.tag <= trace.tags.size());
    Check(trace.header.Device(e.device) != nullptr);
    if (i > 0) Check(trace.events[i - 1].time_ns <= e.time_ns);
  }
}

}  // namespace fragscope::fuzz
