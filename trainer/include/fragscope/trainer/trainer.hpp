// The training loop: builds the allocators from one configuration, one model replica per
// (virtual) device, and trains data-parallel (each device takes its share of the batch; gradients
// are averaged across devices before the optimizer step). Markers in the trace: "step N begin",
// "forward", "backward", "optimizer", "step N end".
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/allocator/config.hpp"
#include "fragscope/allocator/oom_report.hpp"
#include "fragscope/trainer/backend.hpp"
#include "fragscope/trainer/model.hpp"

namespace fragscope::trainer {

struct TrainOptions {
  BackendKind backend = BackendKind::kCpu;
  ModelSpec model;
  int batch = 32;                  // global batch (split over devices)
  std::vector<int> batch_schedule; // when set, step i uses batch_schedule[i % size] instead
  int steps = 40;
  double lr = 0.005, momentum = 0.9, weight_decay = 5e-4;
  std::uint64_t seed = 1;
  AllocConf alloc_conf;            // its backing must suit the backend (see CheckBacking)
  std::string trace_path;          // empty: no trace
  std::string data_path;           // empty: synthetic data
  // The leak scenario's mistake: the input batch of every step is kept in a list.
  bool keep_inputs = false;
};

struct StepRecord {
  int step = 0;
  int batch = 0;
  double loss = 0.0;       // NaN on sim (nothing computed)
  double accuracy = 0.0;   // NaN on sim
  double step_ms = 0.0;
  double images_per_s = 0.0;
  std::uint64_t in_use = 0;    // summed over devices, at the end of the step
  std::uint64_t reserved = 0;
  // 1 - largest free chunk / free bytes in regions, at the end of the step (DESIGN.md's metric):
  // the worst device's.
  double external_fragmentation = 0.0;
};

// What the loop found when it ran out of memory, beyond the allocator's report.
struct OomContext {
  int step = 0;
  std::string phase;       // "setup", "forward", "backward", "optimizer"
  std::string tag;         // the tag of the failed request ("layer3.1.conv2/activation")
  // "leak" when memory live between steps grew at every step before the OOM, else "".
  std::string diagnosis;
  std::string diagnosis_text;
};

struct TrainResult {
  std::vector<StepRecord> steps;
  std::optional<OomReport> oom;
  OomContext oom_context;
  std::uint64_t peak_reserved = 0;  // summed over devices
  std::uint64_t peak_in_use = 0;
  std::uint64_t peak_load = 0;      // peak live requested bytes, summed over devices
  // peak reserved / peak LOAD (1.00 is perfect); 0 when nothing was allocated.
  double overhead() const {
    return peak_load == 0 ? 0.0 : static_cast<double>(peak_reserved) / static_cast<double>(peak_load);
  }
  std::uint64_t trace_events = 0;
  std::string allocator;            // MemorySystem::Describe()
  std::string data;                 // what the data was
  std::uint64_t param_count = 0;
  double final_loss() const { return steps.empty() ? 0.0 : steps.back().loss; }
};

// Throws std::invalid_argument when the backing of `conf` cannot serve `backend` (cpu needs host
// memory; cuda a CUDA backing).
void CheckBacking(BackendKind backend, const AllocConf& conf);

// `backing=...` added to `text` for the backend when `text` names none: host for cpu, sim for sim,
// cuda for cuda.
std::string WithDefaultBacking(BackendKind backend, const std::string& text);

// Runs the loop. Throws std::invalid_argument (bad options), DataError, ConfigError, BackingError,
// traces::TraceError; an OOM is not thrown but reported in the result. `on_step` (optional) is
// called after every step.
TrainResult Train(const TrainOptions& options,
                  const std::function<void(const StepRecord&)>& on_step = nullptr);

}  // namespace fragscope::trainer
