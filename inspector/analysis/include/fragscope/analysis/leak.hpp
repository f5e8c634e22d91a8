// A leak, read from a trace's step markers: memory live between steps that grows at every step
// end means something keeps a tensor from every step alive. fragscope-train applies the same rule
// to its live allocator (trainer/src/trainer.cpp); this one works on any trace with markers named
// "step N end" (ours; others' where they mark steps that way).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fragscope/traces/event.hpp"

namespace fragscope::analysis {

struct LeakFinding {
  std::uint64_t first_step = 0, last_step = 0;   // the step ends compared (the first one skipped)
  std::uint64_t steps = 0;                       // last_step's index - first_step's index
  std::uint64_t live_first = 0, live_last = 0;   // live requested bytes then, all devices
  std::string tag;                               // the tag whose live bytes grew the most
  std::uint64_t tag_growth = 0;
  std::string explanation;                       // one sentence, plain words
};

class LeakDetector {
 public:
  LeakDetector() = default;
  // Live chunks point into live_by_tag_: not copyable.
  LeakDetector(const LeakDetector&) = delete;
  LeakDetector& operator=(const LeakDetector&) = delete;
  // `tags`: tag names by id - 1, at least those of the events given so far.
  void Add(const traces::Event& event, const std::vector<std::string>& tags);
  // A leak when at least three step ends after the first show live memory growing at each one.
  std::optional<LeakFinding> Finish() const;

 private:
  struct Live {
    std::uint64_t size = 0;
    std::uint64_t* tag_bytes = nullptr;  // its tag's total in live_by_tag_ (nodes do not move)
  };
  struct Key {
    std::uint32_t device;
    std::uint64_t address;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return std::hash<std::uint64_t>()(k.address ^ (std::uint64_t{k.device} << 56)); }
  };
  void StepEnd(std::uint64_t step, const std::vector<std::string>& tags);

  std::unordered_map<Key, Live, KeyHash> live_;
  std::unordered_map<traces::TagId, std::uint64_t> live_by_tag_;
  // The last alloc's tag and its total: runs of one tag need no lookup (a free needs none at all).
  traces::TagId last_tag_ = traces::kNoTag;
  std::uint64_t* last_tag_bytes_ = nullptr;
  std::uint64_t live_total_ = 0;
  std::optional<std::uint64_t> last_step_;  // devices mark the same step end one after another
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ends_;  // (step, live) after the first end
  std::unordered_map<std::string, std::uint64_t> first_by_tag_, last_by_tag_;
  bool skipped_first_ = false;
};

}  // namespace fragscope::analysis
