// The diagnosis pipeline (diagnosis.hpp): one pass to read, then the steps in the order a user
// needs them.
#include "fragscope/analysis/diagnosis.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/policy.hpp"
#include "fragscope/analysis/policy_advice.hpp"

namespace fragscope::analysis {
namespace {

// A device that the evidence names as pinned (page-locked) host memory (TensorFlow's
// cuda_host_bfc / gpu_host_bfc pool): its OOM is of host RAM, not GPU memory, and the advice is
// that pool's own knob.
void NoteHostMemory(const traces::TraceHeader& header, std::uint32_t device, std::vector<OomDiagnosis>& ooms) {
  const traces::DeviceDescription* d = header.Device(device);
  if (d == nullptr || d->backing.find("pinned host") == std::string::npos) return;
  std::string name = d->name;
  if (const auto p = name.find(" (pinned host memory)"); p != std::string::npos) name.resize(p);
  for (OomDiagnosis& oom : ooms) {
    oom.report.explanation =
        fmt::format("pinned (page-locked) host memory, not GPU memory: {}", oom.report.explanation);
    oom.report.suggestion = fmt::format(
        "{} is TensorFlow's pinned host memory pool, not GPU memory: TF_CUDA_HOST_MEM_LIMIT_IN_MB sets its "
        "limit (raise it where the host has the RAM), or stage less through pinned memory (smaller "
        "input-pipeline prefetch and host-side buffers); GPU settings (memory growth, a GPU memory limit) do "
        "not change it",
        name);
  }
}

}  // namespace

std::unique_ptr<AnalysisContext> AnalysisContext::Read(const traces::TraceHeader& header,
                                                       const ObservedBlocks& blocks,
                                                       const ContextOptions& options) {
  std::unique_ptr<AnalysisContext> context(new AnalysisContext());
  if (!header.alloc_conf.empty()) {
    try {
      context->recorded_conf_ = ParseAllocConf(header.alloc_conf);
    } catch (const ConfigError& error) {
      context->recorded_conf_error_ = error.what();  // an imported trace: another allocator's words
    }
  }
  std::optional<AllocationSequenceBuilder> sequence;
  if ((context->recorded_conf_ || options.always_keep_sequence) && options.build_sequence) sequence.emplace(header);
  LeakDetector leaks;
  static const std::vector<std::string> kNoTags;
  const std::vector<std::string>& tags = options.tags != nullptr ? *options.tags : kNoTags;
  TimelineOptions timeline;
  timeline.tags = options.tags;
  timeline.source_warnings = options.source_warnings;
  timeline.progress = options.index_progress;
  timeline.expected_events = options.expected_events;
  context->model_ = TimelineModel::Build(
      header,
      blocks([&](const std::vector<traces::Event>& block) {
        if (sequence) sequence->Add(block);
        for (const traces::Event& e : block) leaks.Add(e, tags);
      }),
      timeline);
  context->leak_ = leaks.Finish();
  if (sequence) {
    bool any_oom = false;
    for (std::uint32_t device : context->model_->devices()) any_oom |= context->model_->Metrics(device).ooms > 0;
    if (any_oom || options.always_keep_sequence) {
      context->sequence_ = std::make_unique<AllocationSequence>(sequence->Finish(options.tags));
    }
  }
  return context;
}

std::unique_ptr<AnalysisContext> AnalysisContext::WithSequence(const AnalysisContext& base, AllocationSequence sequence) {
  std::unique_ptr<AnalysisContext> context(new AnalysisContext());
  context->model_ = base.model_;
  context->recorded_conf_ = base.recorded_conf_;
  context->recorded_conf_error_ = base.recorded_conf_error_;
  context->leak_ = base.leak_;
  context->sequence_ = std::make_unique<AllocationSequence>(std::move(sequence));
  return context;
}

Diagnosis Diagnose(const AnalysisContext& context, const DiagnosisOptions& options) {
  const TimelineModel& model = context.model();
  std::vector<std::uint32_t> devices = model.devices();
  if (options.device) {
    if (std::find(devices.begin(), devices.end(), *options.device) == devices.end()) {
      throw std::invalid_argument(fmt::format("--device {}: the trace has no such device (devices: {})",
                                              *options.device, fmt::join(devices, ", ")));
    }
    devices = {*options.device};
  }
  Diagnosis diagnosis;
  diagnosis.leak = context.leak();
  diagnosis.warnings = model.warnings();
  for (std::uint32_t device : devices) {
    DeviceDiagnosis& d = diagnosis.devices.emplace_back();
    d.device = device;
    d.metrics = model.Metrics(device);
    d.ooms = model.Ooms(device);
    NoteHostMemory(model.header(), device, d.ooms);
    d.before_recording = BeforeRecordingOf(model.header(), device);
    diagnosis.any_oom |= !d.ooms.empty();
  }
  diagnosis.kind = model.header().kind;
  if (diagnosis.kind == traces::EvidenceKind::kState) {
    // One moment: what its layout and summary show; nothing that needs time (no replay of an
    // invented order, no minimal limit).
    diagnosis.states = FindStates(model, devices);
    if (model.header().source.states.size() > kMaxStates) {
      diagnosis.warnings.push_back(fmt::format("the header lists {} moments; the first {} are examined",
                                               model.header().source.states.size(), kMaxStates));
    }
    return diagnosis;
  }
  if (options.fragmentation) {
    for (DeviceDiagnosis& d : diagnosis.devices) d.fragmentation = model.Fragmentation(d.device);
  }
  const std::optional<AllocConf>& conf = context.recorded_conf();
  if (!diagnosis.any_oom || !conf) return diagnosis;

  if (!conf->virtual_devices.empty() || context.sequence() == nullptr) {
    // Virtual devices share one backing: a per-device replay cannot check the advice; give it as
    // the live allocator does, from the policy that ran.
    if (const auto& advise = PolicyOf(*conf).advise) {
      for (DeviceDiagnosis& d : diagnosis.devices) {
        for (OomDiagnosis& oom : d.ooms) advise(oom.report, *conf);
      }
    }
    return diagnosis;
  }
  const AllocationSequence& sequence = *context.sequence();
  if (options.check_advice) {
    // The advice the recorded policy could take for free (gc, expandable), checked by replay
    // against what the whole trace met.
    std::uint64_t recorded_ooms = 0;
    for (std::uint32_t device : model.devices()) recorded_ooms += model.Metrics(device).ooms;
    const CheckedAdvice advice =
        CheckPolicyAdvice(sequence, *conf, TraitsOf(conf->backing).grows_in_place, recorded_ooms);
    for (DeviceDiagnosis& d : diagnosis.devices) ApplyCheckedAdvice(d.ooms, advice);
  }
  if (options.min_limit) {
    ReplayOptions replay;
    replay.conf = *conf;
    replay.progress = options.min_limit_progress;
    diagnosis.min_limit = FindMinLimit(sequence, replay);
    if (diagnosis.min_limit->fits_at_all) {
      for (DeviceDiagnosis& d : diagnosis.devices) {
        for (OomDiagnosis& oom : d.ooms) oom.min_limit = diagnosis.min_limit->min_limit;
      }
    }
  }
  return diagnosis;
}

}  // namespace fragscope::analysis
