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
#include "fragscope/analysis/message_diagnosis.hpp"

namespace fragscope::cli {

// An out-of-memory message found beside a state (a PyTorch memory summary printed after the error):
// its diagnosis, and its numbers checked against the state of its device nearest to it.
struct MessageBesideState {
  const traces::OomMessage* message = nullptr;
  analysis::MessageDiagnosis diagnosis;
  const analysis::StateFindings* state = nullptr;  // nullptr: no state of its device
  std::vector<std::string> checks;                 // each number compared, in words
  bool agrees = true;                              // no number contradicts the state
};

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
  std::vector<std::optional<analysis::FragmentationSummary>> fragmentation;  // histories only
  std::optional<analysis::LeakFinding> leak;
  traces::EvidenceKind kind = traces::EvidenceKind::kHistory;
  std::vector<analysis::StateFindings> states;  // a state's findings (kind kState)
  std::vector<MessageBesideState> messages;     // OOM messages beside a state (report_state_messages.cpp)
};

// The source allocator's own settings, where an importer found them (PyTorch's
// allocator_settings), without the prefix.
nlohmann::json SourceSettings(const traces::TraceHeader& header);

// Whether every allocation of `metrics.device` lays out what was live before recording started (a
// PyTorch snapshot's device whose trace list is empty): its overhead, utilization and fragmentation
// at peak would describe that start, not a history, and are not given.
bool NothingAllocatedWhileRecording(const traces::TraceHeader& header, const analysis::DeviceMetrics& metrics);

void PrintReportJson(const ReportView& view);  // one JSON document (docs/cli.md, "report")
void PrintReportText(const ReportView& view);  // the table and every OOM explained
// A state's findings for people (report_state.cpp): the evidence's numbers, what its layout
// shows, what it lacks, in the source framework's words.
void PrintStateText(const ReportView& view);
// A state's per-device keys (DESIGN.md: "A state adds in_use, reserved, limit, max_in_use").
nlohmann::json StateJson(const analysis::StateFindings& state);

// The messages of a state's log (of `device` only, where given), each checked against `states`
// (report_state_messages.cpp); printed after the state, and as the JSON report's "messages".
std::vector<MessageBesideState> MessagesBesideState(const std::vector<traces::OomMessage>& messages,
                                                    const std::vector<analysis::StateFindings>& states,
                                                    std::optional<std::uint32_t> device);
void PrintMessagesBesideStateText(const std::vector<MessageBesideState>& items);
nlohmann::json MessagesBesideStateJson(const std::vector<MessageBesideState>& items);

}  // namespace fragscope::cli
