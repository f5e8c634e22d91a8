// The one diagnosis pipeline. An AnalysisContext reads the evidence once — the timeline model, the
// allocation sequence and the leak check all from the same pass over the blocks — and keeps what
// the later steps need; Diagnose(context) then gives, per device, the metrics and every OOM
// explained, the policy advice checked by replay, the smallest limit that runs the trace, and
// leaks. `fragscope report` prints a Diagnosis; the inspector draws one. Neither orchestrates the
// steps itself. docs/architecture.md, "The analysis context".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fragscope/allocator/config.hpp"
#include "fragscope/analysis/allocation_sequence.hpp"
#include "fragscope/analysis/leak.hpp"
#include "fragscope/analysis/metrics.hpp"
#include "fragscope/analysis/oom_diagnosis.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/state_findings.hpp"
#include "fragscope/analysis/timeline.hpp"

namespace fragscope::analysis {

// Sees every block on the thread that reads it, before the model does (a reader that interns tag
// names as it reads makes them consistent there).
using BlockObserver = std::function<void(const std::vector<traces::Event>&)>;
// The evidence's blocks with an observer attached (e.g. evidence::EvidenceInput::Blocks(progress, observer)).
using ObservedBlocks = std::function<BlockSource(const BlockObserver&)>;

struct ContextOptions {
  // Names by id - 1 and the source's warnings, read after the last block (see TimelineOptions).
  const std::vector<std::string>* tags = nullptr;
  const std::vector<std::string>* source_warnings = nullptr;
  Progress index_progress;  // while the read events are indexed
  // The source's guess of its event count (TimelineOptions::expected_events): given, the model
  // indexes each block while the source reads the next.
  std::function<std::uint64_t()> expected_events;
  // Keep the allocation sequence whatever the trace holds (the inspector's compare replays it).
  bool always_keep_sequence = false;
  // Build no allocation sequence during the read (the inspector: its first frame should not wait
  // for one; its minimal-limit job reads the file again when it needs it, see WithSequence).
  bool build_sequence = true;
};

class AnalysisContext {
 public:
  // Reads `blocks` to the end once. The allocation sequence is kept only when the trace's
  // recorded configuration is fragscope's (the advice and the minimal limit replay under it) and
  // the trace has an OOM (nothing needs it otherwise): it is built during the pass and dropped after.
  static std::unique_ptr<AnalysisContext> Read(const traces::TraceHeader& header, const ObservedBlocks& blocks,
                                               const ContextOptions& options = {});

  const TimelineModel& model() const { return *model_; }
  // The same model, for a holder that may outlive the context (the inspector's document).
  const std::shared_ptr<const TimelineModel>& shared_model() const { return model_; }
  // The trace's allocation sequence, or nullptr where it was not kept (see Read).
  const AllocationSequence* sequence() const { return sequence_.get(); }
  // The configuration the trace recorded, when it is fragscope's; else why not (empty when the
  // trace recorded none).
  const std::optional<AllocConf>& recorded_conf() const { return recorded_conf_; }
  const std::string& recorded_conf_error() const { return recorded_conf_error_; }
  const std::optional<LeakFinding>& leak() const { return leak_; }
  // The same context with `sequence` (read again from the file) as its allocation sequence.
  static std::unique_ptr<AnalysisContext> WithSequence(const AnalysisContext& base, AllocationSequence sequence);

 private:
  AnalysisContext() = default;
  std::shared_ptr<const TimelineModel> model_;
  std::unique_ptr<AllocationSequence> sequence_;
  std::optional<AllocConf> recorded_conf_;
  std::string recorded_conf_error_;
  std::optional<LeakFinding> leak_;
};

struct DiagnosisOptions {
  std::optional<std::uint32_t> device;  // only this device (it must exist: std::invalid_argument)
  bool check_advice = true;             // replay under the free switches before advising them
  bool min_limit = true;                // bisect the smallest limit for a trace with OOMs
  // Fragmentation over time: a pass over every event (TimelineModel::Fragmentation); the inspector
  // leaves it to a background job instead of its first frame.
  bool fragmentation = true;
  Progress min_limit_progress;          // (replays done, replays expected)
};

struct DeviceDiagnosis {
  std::uint32_t device = 0;
  DeviceMetrics metrics;
  std::vector<OomDiagnosis> ooms;  // with advice (checked where a replay could) and min_limit
  std::optional<BeforeRecording> before_recording;
  // External fragmentation over time (histories only: a state has one moment, metrics need time).
  std::optional<FragmentationSummary> fragmentation;
};

struct Diagnosis {
  // History, state or message: what the evidence is decides what means anything (a state gets
  // its findings and no advice checked by replay, no minimal limit).
  traces::EvidenceKind kind = traces::EvidenceKind::kHistory;
  std::vector<DeviceDiagnosis> devices;
  std::vector<StateFindings> states;        // for a state: one per moment and device shown
  bool any_oom = false;
  std::optional<MinLimitResult> min_limit;  // when searched
  std::optional<LeakFinding> leak;
  std::vector<std::string> warnings;        // the source's first, then the model's
};

Diagnosis Diagnose(const AnalysisContext& context, const DiagnosisOptions& options = {});

}  // namespace fragscope::analysis
