// An EventSink that keeps every event in memory, for tests.
#pragma once

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::testing {

class RecordingSink : public traces::EventSink {
 public:
  void Record(traces::Event& event) override {
    std::lock_guard lock(mutex_);
    event.seq = events_.size();
    events_.push_back(event);
  }
  traces::TagId Intern(std::string_view text) override {
    if (text.empty()) return traces::kNoTag;
    std::lock_guard lock(mutex_);
    auto [it, inserted] = ids_.emplace(std::string(text), static_cast<traces::TagId>(names_.size() + 1));
    if (inserted) names_.emplace_back(text);
    return it->second;
  }
  std::vector<traces::Event> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }
  // Every interned name, by id - 1 (the shape of a trace's tag list).
  std::vector<std::string> Names() const {
    std::lock_guard lock(mutex_);
    return names_;
  }
  std::string Name(traces::TagId id) const {
    std::lock_guard lock(mutex_);
    return id == traces::kNoTag ? std::string() : names_.at(id - 1);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<traces::Event> events_;
  std::unordered_map<std::string, traces::TagId> ids_;
  std::vector<std::string> names_;
};

}  // namespace fragscope::testing
