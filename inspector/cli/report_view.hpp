// What `fragscope report` presents, and its two presentations (report_json.cpp, report_text.cpp).
// report_command.cpp runs the diagnosis pipeline (analysis/diagnosis.hpp) and fills a ReportView;
// the presentations only print it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fragscope/analysis/diagnosis.hpp"

namespace fragscope::cli {

struct ReportView {
  std::string trace;   // the path as given
  std::string format;  // the reader's name
  const traces::TraceHeader* header = nullptr;
  std::uint64_t events = 0;
  std::vector<std::string> warnings;  // the source's first
  // Per device shown, same order.
  std::vector<std::uint32_t> devices;
  std::vector<analysis::DeviceMetrics> metrics;
  std::vector<std::vector<analysis::OomDiagnosis>> ooms;
  std::optional<analysis::LeakFinding> leak;
};

// The source allocator's own settings, where an importer found them (PyTorch's
// allocator_settings), without the prefix.
nlohmann::json SourceSettings(const traces::TraceHeader& header);

void PrintReportJson(const ReportView& view);  // one JSON document (docs/cli.md, "report")
void PrintReportText(const ReportView& view);  // the table and every OOM explained

}  // namespace fragscope::cli
