// The one way an importer lays evidence out as events: tags interned once (ids in first-use
// order), sequence numbers in append order, and a call stack per event where the source has them.
// Used by every reader that builds a traces::Trace (PyTorch snapshots, TensorFlow dumps, RMM logs,
// torch.profiler traces).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "fragscope/traces/trace_reader.hpp"

namespace fragscope::traces {

class TraceBuilder {
 public:
  // `with_stacks`: keep Trace::event_stacks in step with the events (Append's `stack`).
  explicit TraceBuilder(Trace& trace, bool with_stacks = false) : trace_(trace), with_stacks_(with_stacks) {}

  // The id of `text`, interned on first use; kNoTag for the empty string.
  TagId Intern(std::string_view text) {
    if (text.empty()) return kNoTag;
    const auto [it, added] = ids_.try_emplace(std::string(text), static_cast<TagId>(trace_.tags.size() + 1));
    if (added) trace_.tags.emplace_back(text);
    return it->second;
  }

  // A new event of `type` on `device` at `time_ns`, with the next sequence number. The reference
  // holds until the next Add or Append.
  Event& Add(EventType type, std::uint32_t device, std::uint64_t time_ns, std::uint32_t stack = 0) {
    Event e;
    e.type = type;
    e.device = device;
    e.time_ns = time_ns;
    return Append(e, stack);
  }

  // `event` as it is, with the next sequence number; `stack` is its index + 1 into Trace::stacks
  // (0: none) when the builder keeps stacks.
  Event& Append(Event event, std::uint32_t stack = 0) {
    event.seq = trace_.events.size();
    if (with_stacks_) trace_.event_stacks.push_back(stack);
    return trace_.events.emplace_back(std::move(event));
  }

 private:
  Trace& trace_;
  bool with_stacks_;
  std::unordered_map<std::string, TagId> ids_;
};

}  // namespace fragscope::traces
