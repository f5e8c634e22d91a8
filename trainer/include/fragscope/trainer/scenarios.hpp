// Scenarios that run out of memory on purpose, one per cause, deterministically under the limit
// each documents, on `sim` and on `cpu` (docs/scenarios.md walks through each).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/trainer/trainer.hpp"

namespace fragscope::trainer {

struct Scenario {
  std::string name;            // capacity, fragmentation, leak, request-too-large
  std::string summary;         // one line
  ModelSpec model;
  std::vector<int> batches;    // the batch of step i is batches[i % size]
  int steps = 0;
  std::string alloc_conf;      // without backing: the trainer adds the backend's
  bool keep_inputs = false;
  int oom_step = 0;            // where it runs out of memory
  std::string oom_phase;       // forward, backward, optimizer
  OomCause cause = OomCause::kCapacity;
  std::string diagnosis;       // the loop's diagnosis beyond the cause ("leak" or "")
  std::string fix;             // an --alloc-conf (or a change) that makes it fit
};

const std::vector<Scenario>& Scenarios();
// nullptr for an unknown name.
const Scenario* FindScenario(std::string_view name);

// Applies the scenario to `options` (model, batches, steps, keep_inputs) and returns its
// configuration merged with `user_conf`: keys in `user_conf` replace the scenario's.
std::string ApplyScenario(const Scenario& scenario, const std::string& user_conf, TrainOptions* options);

// "a=1,b=2" + "b=3,c=4" -> "a=1,b=3,c=4" (keys of `over` replace those of `base`).
std::string MergeConf(const std::string& base, const std::string& over);

}  // namespace fragscope::trainer
