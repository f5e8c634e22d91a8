#include "fragscope/trainer/scenarios.hpp"

#include <utility>

namespace fragscope::trainer {
namespace {

std::vector<std::pair<std::string, std::string>> SplitConf(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const std::size_t eq = item.find('=');
    // White space around a key or value is not part of it (ParseAllocConf ignores it too), so " limit"
    // replaces the scenario's "limit".
    const auto trim = [](std::string t) {
      const auto first = t.find_first_not_of(" \t");
      if (first == std::string::npos) return std::string();
      return t.substr(first, t.find_last_not_of(" \t") - first + 1);
    };
    if (!trim(item).empty()) {
      pairs.emplace_back(trim(item.substr(0, eq)), eq == std::string::npos ? "" : trim(item.substr(eq + 1)));
    }
    start = end + 1;
  }
  return pairs;
}

}  // namespace

std::string MergeConf(const std::string& base, const std::string& over) {
  auto pairs = SplitConf(base);
  for (auto& [key, value] : SplitConf(over)) {
    bool replaced = false;
    for (auto& pair : pairs) {
      if (pair.first == key) {
        pair.second = value;
        replaced = true;
      }
    }
    if (!replaced) pairs.emplace_back(key, value);
  }
  std::string out;
  for (const auto& [key, value] : pairs) {
    if (!out.empty()) out += ',';
    out += key + "=" + value;
  }
  return out;
}

const std::vector<Scenario>& Scenarios() {
  static const std::vector<Scenario> scenarios = [] {
    std::vector<Scenario> list;
    {
      Scenario s;
      s.name = "capacity";
      s.summary = "the batch grows step by step until step 4 (batch 1024) needs more than the 128 MiB limit";
      s.model = ModelSpec{"tiny", 3, 32, 10};
      s.batches = {32, 64, 128, 256, 1024};
      s.steps = 5;
      s.alloc_conf = "limit=128MiB";
      s.oom_step = 4;
      s.oom_phase = "forward";
      s.cause = OomCause::kCapacity;
      s.fix = "keep the batch at 256 (or split 1024 into gradient-accumulation steps), or a limit of 512MiB";
      list.push_back(s);
    }
    {
      Scenario s;
      s.name = "fragmentation";
      s.summary = "batch sizes vary step to step (8, 16, ... 64, then 160) under TensorFlow-like "
                  "growing regions: the regions grown for small batches hold free holes too small "
                  "for the large one";
      s.model = ModelSpec{"tiny", 3, 32, 10};
      s.batches = {8, 16, 24, 32, 40, 48, 56, 64, 160};
      s.steps = 9;
      s.alloc_conf = "limit=50MiB,growth=on";
      s.oom_step = 8;
      s.oom_phase = "backward";
      s.cause = OomCause::kFragmentation;
      // gc=on cannot help: every region holds a weight or a momentum buffer. Regions need a 64 MiB
      // limit for this run; paging fits it in 50 MiB.
      s.fix = "--alloc-conf expandable=on (the default policy: pages under live data only, so holes "
              "between regions strand nothing)";
      list.push_back(s);
    }
    {
      Scenario s;
      s.name = "leak";
      s.summary = "the input batch of every step is kept in a list, so live memory grows each "
                  "step until the 32 MiB limit runs out at step 17";
      s.model = ModelSpec{"tiny", 3, 32, 10};
      s.batches = {64};
      s.steps = 40;
      s.alloc_conf = "limit=32MiB,expandable=on";
      s.keep_inputs = true;
      s.oom_step = 17;
      s.oom_phase = "backward";
      // The allocator sees the kept inputs as pins in partly used pages; the loop sees live memory
      // growing at every step and says leak.
      s.cause = OomCause::kFragmentation;
      s.diagnosis = "leak";
      s.fix = "drop the reference (no fix in the configuration: a larger limit only delays the OOM)";
      list.push_back(s);
    }
    {
      Scenario s;
      s.name = "request-too-large";
      s.summary = "step 2 runs batch 1024, whose first activation (64 MiB) is larger than the whole "
                  "32 MiB limit: no allocator and no policy can serve one request above the limit";
      s.model = ModelSpec{"tiny", 3, 32, 10};
      s.batches = {32, 64, 1024};
      s.steps = 3;
      s.alloc_conf = "limit=32MiB";
      s.oom_step = 2;
      s.oom_phase = "forward";
      s.cause = OomCause::kRequestTooLarge;
      s.fix = "a batch of at most 96 (split 1024 into gradient-accumulation steps of 64), or a limit of "
              "320MiB (the whole step of batch 1024 peaks at 284 MiB live)";
      list.push_back(s);
    }
    return list;
  }();
  return scenarios;
}

const Scenario* FindScenario(std::string_view name) {
  for (const Scenario& s : Scenarios()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string ApplyScenario(const Scenario& scenario, const std::string& user_conf, TrainOptions* options) {
  options->model = scenario.model;
  options->batch_schedule = scenario.batches;
  options->batch = scenario.batches.front();
  options->steps = scenario.steps;
  options->keep_inputs = scenario.keep_inputs;
  return MergeConf(scenario.alloc_conf, user_conf);
}

}  // namespace fragscope::trainer
