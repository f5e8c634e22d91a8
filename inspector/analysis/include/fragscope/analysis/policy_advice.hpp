// The allocator's policy advice for a fragmentation OOM ("turn gc on", "try expandable=on"),
// checked by replay before anyone is told: a switch is suggested only when the whole trace under
// it meets fewer OOMs than it did. A live allocator cannot know that; a trace can.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/oom_diagnosis.hpp"

namespace fragscope::analysis {

struct CheckedAdvice {
  PolicyFacts facts;        // for AddPolicyAdvice: a switch that did not help counts as on already
  std::string note;         // what the replays found, one sentence; empty when nothing was checked
  std::uint64_t ooms_as_recorded = 0;
  std::uint64_t ooms_with_gc = 0, ooms_with_expandable = 0;  // when checked
  bool checked_gc = false, checked_expandable = false;
};

// Replays `sequence` under `conf` with gc=on (if it was off) and with expandable=on (if it was off
// and the user's backing can grow in place), counting OOMs against `ooms_as_recorded`.
CheckedAdvice CheckPolicyAdvice(const AllocationSequence& sequence, const AllocConf& conf,
                                bool backing_can_expand, std::uint64_t ooms_as_recorded);

// AddPolicyAdvice with checked facts, and the note appended to the suggestion where a switch was
// dropped.
void ApplyCheckedAdvice(std::vector<OomDiagnosis>& ooms, const CheckedAdvice& advice);
// The same for reports that already carry the live allocator's unchecked advice (a replay's): the
// suggestion is first made again from the numbers alone.
void ReplaceWithCheckedAdvice(std::vector<OomDiagnosis>& ooms, const CheckedAdvice& advice);

}  // namespace fragscope::analysis
