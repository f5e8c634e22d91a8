// A timeline model built from events in memory, fed in blocks as a trace reader feeds them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "fragscope/analysis/timeline.hpp"

namespace fragscope::testing {

// `block`: events per block (777 straddles the model's 64- and 4096-event blocks).
inline std::unique_ptr<analysis::TimelineModel> ModelOf(const traces::TraceHeader& header,
                                                        const std::vector<traces::Event>& events,
                                                        const std::vector<std::string>* tags = nullptr,
                                                        std::size_t block = 777) {
  std::size_t next = 0;
  analysis::BlockSource source = [&](std::vector<traces::Event>* out) {
    if (next >= events.size()) return false;
    const std::size_t end = std::min(events.size(), next + block);
    out->assign(events.begin() + static_cast<std::ptrdiff_t>(next), events.begin() + static_cast<std::ptrdiff_t>(end));
    next = end;
    return true;
  };
  analysis::TimelineOptions options;
  options.tags = tags;
  return analysis::TimelineModel::Build(header, source, options);
}

}  // namespace fragscope::testing
