// `fragscope report`: the ReportView for people: the header lines, the table of devices, what was
// live before recording, leaks, and every OOM explained.
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

void PrintReportText(const ReportView& view) {
  const traces::TraceHeader& header = *view.header;
  const std::vector<std::uint32_t>& devices = view.devices;
  const std::vector<analysis::DeviceMetrics>& metrics = view.metrics;
  const std::vector<std::vector<analysis::OomDiagnosis>>& ooms = view.ooms;
  const std::optional<analysis::LeakFinding>& leak = view.leak;
  // A state has no events: the records the reader made of it are not a count worth showing.
  if (view.kind == traces::EvidenceKind::kState) {
    fmt::print("trace      {} ({})\n", DisplayName(view.trace), view.format);
  } else {
    fmt::print("trace      {} ({}, {} events)\n", DisplayName(view.trace), view.format, view.events);
  }
  if (!header.producer.empty()) fmt::print("producer   {}\n", header.producer);
  if (!header.alloc_conf.empty()) fmt::print("allocator  {}\n", header.alloc_conf);
  if (const nlohmann::json settings = SourceSettings(header); !settings.empty()) {
    std::string line;
    for (const auto& [key, value] : settings.items()) {
      line += fmt::format("{}{}={}", line.empty() ? "" : ", ", key, value.get<std::string>());
    }
    fmt::print("settings   {}\n", line);
  }
  if (view.kind == traces::EvidenceKind::kState) {
    PrintStateText(view);
    std::vector<analysis::OomDiagnosis> all;
    for (const auto& list : ooms) all.insert(all.end(), list.begin(), list.end());
    fmt::print("{}", DescribeOoms(all, 20, /*state=*/true));
    PrintMessagesBesideStateText(view.messages);
    return;
  }
  fmt::print("\n");
  std::vector<std::vector<std::string>> rows = {{"device", "peak LOAD", "peak in use", "peak reserved",
                                                 "overhead", "util@peak", "frag@peak", "OOMs"}};
  for (const auto& m : metrics) {
    // Evidence that records allocations but no reserved memory (profiler and RMM logs) has no
    // overhead or utilization to give: "-", not a ratio to 0.
    // Nor does a device with no allocation (an empty or truncated trace): no ratio to a 0.
    const bool reserved_known = m.peak_reserved > 0 || m.peak_load == 0;
    // Nor does a device with no allocation during recording (a snapshot's device with an empty trace
    // list): its ratios would describe the state recording started from, not a history.
    const bool ratios = m.peak_reserved > 0 && m.peak_load > 0 && !NothingAllocatedWhileRecording(header, m);
    rows.push_back({std::to_string(m.device), FormatBytes(m.peak_load), FormatBytes(m.peak_in_use),
                    reserved_known ? FormatBytes(m.peak_reserved) : "-",
                    ratios ? FormatRatio(m.overhead()) : "-",
                    ratios ? FormatRatio(m.utilization_at_peak) : "-",
                    ratios ? FormatRatio(m.fragmentation_at_peak) : "-", std::to_string(m.ooms)});
  }
  fmt::print("{}", FormatTable(rows));
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto* d = header.Device(devices[i]);
    if (d != nullptr && traces::IsForeignHostMemory(*d)) {
      // Only a number in the table: say it is host RAM, not a GPU (a profiler trace's CPU device).
      fmt::print("device {}: {}, {}: not GPU memory (replay, compare and min-limit leave it out)\n", d->index,
                 d->name, d->backing);
      continue;
    }
    if (d != nullptr && (d->capacity > 0 || d->limit > 0)) {
      fmt::print("device {}: {} ({}), capacity {}, limit {}\n", d->index, d->name, d->backing,
                 d->capacity > 0 ? FormatBytes(d->capacity) : "unknown",
                 d->limit > 0 ? FormatBytes(d->limit) : "none recorded");
    }
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto before = analysis::BeforeRecordingOf(header, devices[i]);
    if (!before || before->blocks == 0) continue;
    const analysis::DeviceMetrics& m = metrics[i];
    // "in 31 blocks"; nothing where the evidence gives bytes only (torch.profiler's totals).
    const std::string blocks =
        before->blocks_known ? fmt::format(" in {} block{}", before->blocks, before->blocks == 1 ? "" : "s") : "";
    if (m.peak_load <= before->requested) {
      fmt::print("device {}: all {}{} were live before recording started (no allocation "
                 "during recording adds to them)\n", devices[i], FormatBytes(before->bytes), blocks);
      continue;
    }
    if (m.peak_reserved == 0) {  // no reserved memory recorded: no overhead to give
      fmt::print("device {}: {}{} were live before recording started (counted in peak LOAD and in use; "
                 "peak LOAD less them: {})\n",
                 devices[i], FormatBytes(before->bytes), blocks, FormatBytes(m.peak_load - before->requested));
      continue;
    }
    fmt::print("device {}: {}{} were live before recording started; without them, the "
               "recorded window's peak reserved is {} for a peak LOAD of {}: overhead {} (like for like)\n",
               devices[i], FormatBytes(before->bytes), blocks,
               FormatBytes(m.peak_reserved > before->bytes ? m.peak_reserved - before->bytes : 0),
               FormatBytes(m.peak_load > before->requested ? m.peak_load - before->requested : 0),
               FormatRatio(before->LikeForLikeOverhead(m.peak_reserved, m.peak_load)));
  }
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i >= view.fragmentation.size() || !view.fragmentation[i] || metrics[i].peak_reserved == 0) continue;
    const analysis::FragmentationSummary& f = *view.fragmentation[i];
    if (!f.had_free) continue;
    if (f.most_stranded == 0) {
      fmt::print("device {}: fragmentation over time: none; the free memory was one hole after every event\n",
                 devices[i]);
      continue;
    }
    fmt::print("device {}: fragmentation over time: up to {} free outside the largest hole (after event {}: {} "
               "free, the largest hole {}); the highest ratio {} after event {} ({} free, the largest hole {})\n",
               devices[i], FormatBytes(f.most_stranded), f.stranded_event, FormatBytes(f.stranded_free),
               FormatBytes(f.stranded_largest), FormatRatio(f.highest), f.highest_event,
               FormatBytes(f.highest_free), FormatBytes(f.highest_largest));
  }
  if (leak) fmt::print("{}\n", leak->explanation);
  std::vector<analysis::OomDiagnosis> all;
  for (const auto& list : ooms) all.insert(all.end(), list.begin(), list.end());
  fmt::print("{}", DescribeOoms(all));
}

}  // namespace fragscope::cli
