// An event sink that keeps a run's events in memory, for the benchmarks that replay a synth run.
#pragma once

#include <string_view>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::bench {

class VectorSink final : public traces::EventSink {
 public:
  void Record(traces::Event& event) override {
    event.seq = events.size();
    events.push_back(event);
  }
  traces::TagId Intern(std::string_view) override { return traces::kNoTag; }
  std::vector<traces::Event> events;
};

}  // namespace fragscope::bench
