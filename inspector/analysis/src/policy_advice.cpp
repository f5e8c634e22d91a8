#include "fragscope/analysis/policy_advice.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/analysis/replay.hpp"

namespace fragscope::analysis {
namespace {

// OOMs of the whole trace under `conf`; nullopt when the configuration cannot run it at all.
std::optional<std::uint64_t> CountOoms(const AllocationSequence& sequence, const AllocConf& conf) {
  ReplayOptions options;
  options.conf = conf;
  options.continue_past_oom = true;
  options.max_diagnoses = 0;  // counts are enough
  try {
    const ReplayResult result = Replay(sequence, options);
    std::uint64_t ooms = 0;
    for (const auto& device : result.devices) ooms += device.metrics.ooms;
    return ooms;
  } catch (const ConfigError&) {
    return std::nullopt;  // e.g. expandable with preallocate: not a switch to suggest
  }
}

}  // namespace

CheckedAdvice CheckPolicyAdvice(const AllocationSequence& sequence, const AllocConf& conf,
                                bool backing_can_expand, std::uint64_t ooms_as_recorded) {
  CheckedAdvice advice;
  advice.ooms_as_recorded = ooms_as_recorded;
  advice.facts = PolicyFacts{conf.gc, conf.Paging(), backing_can_expand && !conf.passthrough};
  std::vector<std::string> dropped;
  if (!conf.gc) {
    AllocConf with = conf;
    with.gc = true;
    const auto ooms = CountOoms(sequence, with);
    advice.checked_gc = ooms.has_value();
    advice.ooms_with_gc = ooms.value_or(0);
    if (!ooms || *ooms >= ooms_as_recorded) {
      advice.facts.gc = true;
      if (ooms) dropped.push_back(fmt::format("gc=on meets {}", *ooms));
    }
  }
  if (!conf.Paging() && advice.facts.backing_can_expand) {
    AllocConf with = conf;
    with.expandable = true;
    const auto ooms = CountOoms(sequence, with);
    advice.checked_expandable = ooms.has_value();
    advice.ooms_with_expandable = ooms.value_or(0);
    if (!ooms || *ooms >= ooms_as_recorded) {
      advice.facts.backing_can_expand = false;
      if (ooms) dropped.push_back(fmt::format("expandable=on meets {}", *ooms));
    }
  }
  if (!dropped.empty()) {
    const bool one = dropped.size() == 1;
    advice.note = fmt::format("checked by replay: on this trace {} OOMs, {} without {}, so {} not suggested",
                              fmt::join(dropped, " and "), ooms_as_recorded, one ? "it" : "them",
                              one ? "it is" : "they are");
  }
  return advice;
}

void ApplyCheckedAdvice(std::vector<OomDiagnosis>& ooms, const CheckedAdvice& advice) {
  for (OomDiagnosis& oom : ooms) {
    AddPolicyAdvice(oom.report, advice.facts);
    if (!advice.note.empty() && oom.report.cause() == traces::OomCause::kFragmentation) {
      oom.report.suggestion += "; " + advice.note;
    }
  }
}

void ReplaceWithCheckedAdvice(std::vector<OomDiagnosis>& ooms, const CheckedAdvice& advice) {
  for (OomDiagnosis& oom : ooms) {
    const traces::OomRecord& n = oom.report.numbers;
    oom.report.suggestion =
        DiagnoseOom(oom.report.device, n, n.cause == traces::OomCause::kBacking).suggestion;
  }
  ApplyCheckedAdvice(ooms, advice);
}

}  // namespace fragscope::analysis
