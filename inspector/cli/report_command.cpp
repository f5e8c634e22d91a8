// fragscope report TRACE [--device N] [--json]: what a trace recorded, per device: peaks, overhead,
// utilization and fragmentation at peak, and every OOM explained. This file runs the diagnosis
// pipeline and fills a ReportView; report_json.cpp and report_text.cpp print it.
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/analysis/diagnosis.hpp"
#include "fragscope/evidence/readers.hpp"
#include "report_message.hpp"
#include "report_view.hpp"

namespace fragscope::cli {
namespace {

struct ReportOptions {
  std::string trace;
  std::optional<std::uint32_t> device;
  bool json = false;
  bool min_limit = true;
};

// Diagnose replays the allocation sequence only for a trace with OOMs that recorded a fragscope
// configuration without virtual devices (the advice checked, the minimal limit).
bool NeedsSequence(const analysis::AnalysisContext& context) {
  const auto& conf = context.recorded_conf();
  if (!conf || !conf->virtual_devices.empty()) return false;
  for (std::uint32_t device : context.model().devices()) {
    if (context.model().Metrics(device).ooms > 0) return true;
  }
  return false;
}

int RunReport(const ReportOptions& options) {
  auto input = evidence::EvidenceInput::Open(options.trace);
  // Error messages have numbers, no events: each is explained on its own (report_message.cpp).
  if (input->header().kind == traces::EvidenceKind::kMessage) {
    return RunMessageReport(options.trace, *input, options.json, options.device);
  }
  std::unique_ptr<analysis::AnalysisContext> context;
  {
    ProgressBar reading("reading", input->bytes_total());
    analysis::ContextOptions context_options;
    context_options.tags = &input->tags();
    context_options.source_warnings = &input->warnings();
    context_options.expected_events = [&input] { return input->ExpectedEvents(); };
    // One pass: the model and the leak check from the same blocks. The allocation sequence (32
    // bytes an event, growing: 0.5 GB of the peak on 10 M events) is needed only by a trace with
    // OOMs, so the input is read a second time for it below (standard input and pipes from the
    // copy EvidenceInput::Open kept).
    context_options.build_sequence = false;
    context = analysis::AnalysisContext::Read(
        input->header(),
        [&](const analysis::BlockObserver& observer) {
          return input->Blocks([&](std::uint64_t done, std::uint64_t total) { reading.Update(done, total); },
                               observer);
        },
        context_options);
  }
  if (context->sequence() == nullptr && NeedsSequence(*context)) {
    auto again = evidence::EvidenceInput::Open(options.trace);
    ProgressBar reading("reading the allocations again", again->bytes_total());
    context = analysis::AnalysisContext::WithSequence(
        *context, analysis::BuildAllocationSequence(
                      again->header(),
                      again->Blocks([&](std::uint64_t done, std::uint64_t total) { reading.Update(done, total); }),
                      &again->tags()));
  }
  const analysis::TimelineModel* model = &context->model();
  if (!context->recorded_conf_error().empty()) {
    // Not a fragscope configuration (an imported trace): no policy advice, no minimal limit.
    spdlog::info("{}: no policy advice: the recorded configuration '{}' is not fragscope's ({})",
                 options.trace, model->header().alloc_conf, context->recorded_conf_error());
  }
  analysis::DiagnosisOptions diagnosis_options;
  diagnosis_options.device = options.device;
  diagnosis_options.min_limit = options.min_limit;
  analysis::Diagnosis diagnosis;
  try {
    diagnosis = analysis::Diagnose(*context, diagnosis_options);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());  // --device names no device of the trace
  }
  const std::optional<analysis::LeakFinding>& leak = diagnosis.leak;
  const bool any_oom = diagnosis.any_oom;
  std::vector<std::uint32_t> devices;
  std::vector<analysis::DeviceMetrics> metrics;
  std::vector<std::vector<analysis::OomDiagnosis>> ooms;
  std::vector<std::optional<analysis::FragmentationSummary>> fragmentation;
  for (const analysis::DeviceDiagnosis& d : diagnosis.devices) {
    devices.push_back(d.device);
    metrics.push_back(d.metrics);
    ooms.push_back(d.ooms);
    fragmentation.push_back(d.fragmentation);
  }
  for (const std::string& warning : diagnosis.warnings) spdlog::warn("{}", warning);

  ReportView view;
  view.trace = options.trace;
  view.format = input->format();
  view.header = &model->header();
  view.events = model->event_count();
  view.warnings = model->warnings();
  view.devices = std::move(devices);
  view.metrics = std::move(metrics);
  view.ooms = std::move(ooms);
  view.fragmentation = std::move(fragmentation);
  view.leak = leak;
  view.kind = diagnosis.kind;
  view.states = std::move(diagnosis.states);
  // A state's log may hold the error too (a memory summary printed after it): explained beside it.
  view.messages = MessagesBesideState(input->messages(), view.states, options.device);
  if (options.json) {
    PrintReportJson(view);
  } else {
    PrintReportText(view);
  }
  // A state's own OOM count (a memory summary's "CUDA OOMs: 2") records failures as much as an OOM
  // event does.
  bool counted_oom = !view.messages.empty();
  for (const analysis::StateFindings& s : view.states) counted_oom |= s.oom_count.value_or(0) > 0;
  return any_oom || counted_oom ? kOom : kOk;
}

}  // namespace

Command AddReport(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "What a trace recorded: peaks, overhead, "
                                               "fragmentation, and every OOM explained");
  sub->add_option("trace", options->trace, evidence::TraceArgumentHelp())->required();
  sub->add_option("--device", options->device, "only this device");
  sub->add_flag("--json", options->json, "print one JSON document on stdout");
  sub->add_flag("!--no-min-limit", options->min_limit,
                "do not search the smallest limit that would have run a trace with OOMs");
  return {sub, [options] { return RunReport(*options); }};
}

}  // namespace fragscope::cli
