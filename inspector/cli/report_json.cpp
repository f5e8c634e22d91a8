// `fragscope report --json`: the ReportView as one JSON document, in the shape docs/cli.md fixes.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "fragscope/allocator/size.hpp"
#include "fragscope/analysis/metrics.hpp"
#include "report_view.hpp"

namespace fragscope::cli {

// The source allocator's own settings, where a reader found them (PyTorch's allocator_settings):
// shown so a user sees what PyTorch ran with.
bool NothingAllocatedWhileRecording(const traces::TraceHeader& header, const analysis::DeviceMetrics& metrics) {
  const auto before = analysis::BeforeRecordingOf(header, metrics.device);
  return before && before->blocks_known && before->blocks > 0 && metrics.allocations <= before->blocks;
}

nlohmann::json SourceSettings(const traces::TraceHeader& header) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : header.source.settings) {
    if (!value.empty()) out[key] = value;
  }
  return out;
}

void PrintReportJson(const ReportView& view) {
  const traces::TraceHeader& header = *view.header;
  const std::vector<std::uint32_t>& devices = view.devices;
  const std::vector<analysis::DeviceMetrics>& metrics = view.metrics;
  const std::vector<std::vector<analysis::OomDiagnosis>>& ooms = view.ooms;
  const std::optional<analysis::LeakFinding>& leak = view.leak;
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < devices.size(); ++i) {
    nlohmann::json device = DeviceJson(metrics[i], ooms[i]);
    device["kind"] = traces::ToString(view.kind);
    const bool state = view.kind == traces::EvidenceKind::kState;
    if (metrics[i].peak_reserved == 0 && metrics[i].peak_load > 0) {
      // The evidence records allocations but no reserved memory (profiler and RMM logs).
      device["reserved_known"] = false;
      device["peak_reserved"] = nullptr;
      device["overhead"] = nullptr;
      device["utilization_at_peak"] = nullptr;
      device["fragmentation_at_peak"] = nullptr;
    }
    if (const auto* description = header.Device(devices[i])) {
      device["name"] = description->name;
      // 0 in a device description is "not given" (a log that names no device size): null.
      device["capacity"] = description->capacity > 0 ? nlohmann::json(description->capacity) : nlohmann::json(nullptr);
      device["limit"] = description->limit > 0 ? nlohmann::json(description->limit) : nlohmann::json(nullptr);
    }
    if (state) {
      // No metric that needs time, and nothing "before recording" (there was no recording); the
      // state's own numbers instead, the last moment's at the top (its limit, null when unknown,
      // replaces the device's 0).
      for (const char* key : {"peak_load", "peak_in_use", "peak_reserved", "overhead", "utilization_at_peak",
                              "fragmentation_at_peak", "peak_internal_waste", "allocations"}) {
        device.erase(key);
      }
      // A state has no events: the positions the reader gave its records are not the evidence's.
      for (auto& oom : device["ooms"]) {
        oom["seq"] = nullptr;
        oom["event"] = nullptr;
      }
      nlohmann::json states = nlohmann::json::array();
      for (const analysis::StateFindings& s : view.states) {
        if (s.device == devices[i]) states.push_back(StateJson(s));
      }
      if (!states.empty()) {
        for (const auto& [key, value] : states.back().items()) device[key] = value;
        if (states.size() > 1) device["states"] = std::move(states);
      }
    }
    if (const auto before = analysis::BeforeRecordingOf(header, devices[i]); before && !state) {
      if (NothingAllocatedWhileRecording(header, metrics[i])) {
        // A snapshot's device with an empty trace list: the ratios would describe the state
        // recording started from, not a history (as in the text).
        device["overhead"] = nullptr;
        device["utilization_at_peak"] = nullptr;
        device["fragmentation_at_peak"] = nullptr;
      }
      // blocks: null where the evidence gives bytes only (torch.profiler's Total Allocated).
      device["before_recording"] = {
          {"blocks", before->blocks_known ? nlohmann::json(before->blocks) : nlohmann::json(nullptr)},
          {"bytes", before->bytes}, {"requested", before->requested}};
      if (metrics[i].peak_load > before->requested && metrics[i].peak_reserved > 0) {
        device["before_recording"]["overhead_like_for_like"] =
            before->LikeForLikeOverhead(metrics[i].peak_reserved, metrics[i].peak_load);
      }
    }
    // Over time (metrics.hpp): the moments of the most stranded bytes and of the highest ratio.
    // null where the evidence has no reserved memory (no holes to measure); absent for a state.
    if (!state && i < view.fragmentation.size() && view.fragmentation[i]) {
      const analysis::FragmentationSummary& f = *view.fragmentation[i];
      device["fragmentation_over_time"] =
          metrics[i].peak_reserved == 0 || std::isnan(metrics[i].fragmentation_at_peak)
              ? nlohmann::json(nullptr)
              : nlohmann::json{{"highest", f.highest},
                               {"highest_event", f.highest_event},
                               {"highest_free", f.highest_free},
                               {"highest_largest_free", f.highest_largest},
                               {"most_stranded", f.most_stranded},
                               {"stranded_event", f.stranded_event},
                               {"stranded_free", f.stranded_free},
                               {"stranded_largest_free", f.stranded_largest}};
    }
    list.push_back(std::move(device));
  }
  const nlohmann::json warnings = view.warnings;  // the source's first
  nlohmann::json out = {{"trace", DisplayName(view.trace)},
                              {"format", view.format},
                              {"producer", header.producer},
                              {"alloc_conf", header.alloc_conf},
                              {"events", view.events},
                              {"devices", list},
                              {"warnings", warnings}};
  if (nlohmann::json settings = SourceSettings(header); !settings.empty()) out["settings"] = std::move(settings);
  if (view.kind == traces::EvidenceKind::kState) out["messages"] = MessagesBesideStateJson(view.messages);
  if (leak) {
    out["leak"] = {{"first_step", leak->first_step}, {"last_step", leak->last_step},
                   {"live_first", leak->live_first}, {"live_last", leak->live_last},
                   {"tag", leak->tag}, {"tag_growth", leak->tag_growth},
                   {"explanation", leak->explanation}};
  }
  fmt::print("{}\n", out.dump(2));
}

}  // namespace fragscope::cli
