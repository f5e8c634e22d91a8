// What the TensorFlow BFC log tests share: counting a trace's events by type, its first OOM, and
// whether a warning says something, the warnings as one text.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces::testing {

struct Counts {
  std::size_t alloc = 0, free = 0, reserve = 0, release = 0, oom = 0, marker = 0;
};

inline Counts Count(const Trace& t) {
  Counts c;
  for (const Event& e : t.events) {
    switch (e.type) {
      case EventType::kAlloc: ++c.alloc; break;
      case EventType::kFree: ++c.free; break;
      case EventType::kRegionReserve: ++c.reserve; break;
      case EventType::kRegionRelease: ++c.release; break;
      case EventType::kOom: ++c.oom; break;
      case EventType::kMarker: ++c.marker; break;
      // TensorFlow's BFC has no paging regions: a TF import never yields these.
      case EventType::kAddressReserve:
      case EventType::kAddressRelease:
      case EventType::kMap:
      case EventType::kUnmap: ADD_FAILURE() << "paging event in a TensorFlow import"; break;
    }
  }
  return c;
}

inline const Event* FindOom(const Trace& t) {
  for (const Event& e : t.events)
    if (e.type == EventType::kOom) return &e;
  return nullptr;
}

inline bool HasWarning(const std::vector<std::string>& warnings, const std::string& text) {
  return std::any_of(warnings.begin(), warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// The warnings one per line, for a failure message that shows them all.
inline std::string Join(const std::vector<std::string>& warnings) {
  std::string out;
  for (const std::string& w : warnings) out += w + "\n";
  return out;
}

}  // namespace fragscope::traces::testing
