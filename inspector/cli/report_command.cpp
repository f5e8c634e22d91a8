// fragscope report TRACE [--device N] [--json]: what a trace recorded, per device: peaks, overhead,
// utilization and fragmentation at peak, and every OOM explained.
#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cli_support.hpp"
#include "commands.hpp"
#include "fragscope/allocator/errors.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/diagnosis.hpp"
#include "fragscope/analysis/leak.hpp"
#include "fragscope/analysis/metrics.hpp"
#include "fragscope/analysis/policy_advice.hpp"
#include "fragscope/analysis/replay.hpp"
#include "fragscope/analysis/timeline.hpp"
#include "fragscope/evidence/readers.hpp"

namespace fragscope::cli {
namespace {

struct ReportOptions {
  std::string trace;
  std::optional<std::uint32_t> device;
  bool json = false;
  bool min_limit = true;
};

// The source allocator's own settings, where an importer found them (PyTorch's
// allocator_settings), without the prefix: shown so a user sees what PyTorch ran with.
nlohmann::json SourceSettings(const traces::TraceHeader& header) {
  constexpr std::string_view kPrefix = "allocator_settings.";
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : header.metadata) {
    if (key.size() > kPrefix.size() && key.compare(0, kPrefix.size(), kPrefix) == 0 && !value.empty()) {
      out[key.substr(kPrefix.size())] = value;
    }
  }
  return out;
}

int RunReport(const ReportOptions& options) {
  auto input = evidence::EvidenceInput::Open(options.trace);
  std::unique_ptr<analysis::AnalysisContext> context;
  {
    ProgressBar reading("reading", input->bytes_total());
    analysis::ContextOptions context_options;
    context_options.tags = &input->tags();
    context_options.source_warnings = &input->warnings();
    // One pass: the model, the allocation sequence and the leak check from the same blocks.
    context = analysis::AnalysisContext::Read(
        input->header(),
        [&](const analysis::BlockObserver& observer) {
          return input->Blocks([&](std::uint64_t done, std::uint64_t total) { reading.Update(done, total); },
                               observer);
        },
        context_options);
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
  for (const analysis::DeviceDiagnosis& d : diagnosis.devices) {
    devices.push_back(d.device);
    metrics.push_back(d.metrics);
    ooms.push_back(d.ooms);
  }
  for (const std::string& warning : diagnosis.warnings) spdlog::warn("{}", warning);

  const traces::TraceHeader& header = model->header();
  if (options.json) {
    nlohmann::json list = nlohmann::json::array();
    for (std::size_t i = 0; i < devices.size(); ++i) {
      nlohmann::json device = DeviceJson(metrics[i], ooms[i]);
      if (const auto* description = header.Device(devices[i])) {
        device["name"] = description->name;
        device["capacity"] = description->capacity;
        device["limit"] = description->limit;
      }
      if (const auto before = analysis::BeforeRecordingOf(header, devices[i])) {
        device["before_recording"] = {
            {"blocks", before->blocks}, {"bytes", before->bytes}, {"requested", before->requested}};
        if (metrics[i].peak_load > before->requested) {
          device["before_recording"]["overhead_like_for_like"] =
              before->LikeForLikeOverhead(metrics[i].peak_reserved, metrics[i].peak_load);
        }
      }
      list.push_back(std::move(device));
    }
    const nlohmann::json warnings = model->warnings();  // the source's first
    nlohmann::json out = {{"trace", options.trace},
                                {"format", input->format()},
                                {"producer", header.producer},
                                {"alloc_conf", header.alloc_conf},
                                {"events", model->event_count()},
                                {"devices", list},
                                {"warnings", warnings}};
    if (nlohmann::json settings = SourceSettings(header); !settings.empty()) out["settings"] = std::move(settings);
    if (leak) {
      out["leak"] = {{"first_step", leak->first_step}, {"last_step", leak->last_step},
                     {"live_first", leak->live_first}, {"live_last", leak->live_last},
                     {"tag", leak->tag}, {"tag_growth", leak->tag_growth},
                     {"explanation", leak->explanation}};
    }
    fmt::print("{}\n", out.dump(2));
    return any_oom ? kOom : kOk;
  }

  fmt::print("trace      {} ({}, {} events)\n", options.trace, input->format(), model->event_count());
  if (!header.producer.empty()) fmt::print("producer   {}\n", header.producer);
  if (!header.alloc_conf.empty()) fmt::print("allocator  {}\n", header.alloc_conf);
  if (const nlohmann::json settings = SourceSettings(header); !settings.empty()) {
    std::string line;
    for (const auto& [key, value] : settings.items()) {
      line += fmt::format("{}{}={}", line.empty() ? "" : ", ", key, value.get<std::string>());
    }
    fmt::print("settings   {}\n", line);
  }
  fmt::print("\n");
  std::vector<std::vector<std::string>> rows = {{"device", "peak LOAD", "peak in use", "peak reserved",
                                                 "overhead", "util@peak", "frag@peak", "OOMs"}};
  for (const auto& m : metrics) {
    rows.push_back({std::to_string(m.device), FormatBytes(m.peak_load), FormatBytes(m.peak_in_use),
                    FormatBytes(m.peak_reserved), FormatRatio(m.overhead()),
                    FormatRatio(m.utilization_at_peak), FormatRatio(m.fragmentation_at_peak),
                    std::to_string(m.ooms)});
  }
  fmt::print("{}", FormatTable(rows));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (const auto* d = header.Device(devices[i]); d != nullptr && (d->capacity > 0 || d->limit > 0)) {
      fmt::print("device {}: {} ({}), capacity {}, limit {}\n", d->index, d->name, d->backing,
                 FormatBytes(d->capacity), FormatBytes(d->limit));
    }
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto before = analysis::BeforeRecordingOf(header, devices[i]);
    if (!before || before->blocks == 0) continue;
    const analysis::DeviceMetrics& m = metrics[i];
    if (m.peak_load <= before->requested) {
      fmt::print("device {}: all {} in {} blocks were live before recording started (no allocation "
                 "during recording adds to them)\n", devices[i], FormatBytes(before->bytes), before->blocks);
      continue;
    }
    fmt::print("device {}: {} in {} blocks were live before recording started; without them, the "
               "recorded window's peak reserved is {} for a peak LOAD of {}: overhead {} (like for like)\n",
               devices[i], FormatBytes(before->bytes), before->blocks,
               FormatBytes(m.peak_reserved > before->bytes ? m.peak_reserved - before->bytes : 0),
               FormatBytes(m.peak_load > before->requested ? m.peak_load - before->requested : 0),
               FormatRatio(before->LikeForLikeOverhead(m.peak_reserved, m.peak_load)));
  }
  if (leak) fmt::print("{}\n", leak->explanation);
  std::vector<analysis::OomDiagnosis> all;
  for (const auto& list : ooms) all.insert(all.end(), list.begin(), list.end());
  fmt::print("{}", DescribeOoms(all));
  return any_oom ? kOom : kOk;
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
