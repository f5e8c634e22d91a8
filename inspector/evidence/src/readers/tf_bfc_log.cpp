// TensorFlow / XLA / JAX BFC allocator OOM dumps, found anywhere in a console log, read whole by
// traces::ParseTfBfcLogToTrace (docs/importers.md).
#include <fmt/format.h>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"
#include "message_input.hpp"

namespace fragscope::evidence::readers {
namespace {

// The dump takes the whole file, so an OOM message of another framework in the same log (a paste
// of two runs, a wrapper script's output) would go unread without a word: each one is named.
void WarnOfOtherFrameworksMessages(const Source& source, const std::vector<traces::OomMessage>& messages,
                                   traces::Trace& trace) {
  for (const traces::OomMessage& m : messages) {
    if (m.framework == "tensorflow" || m.framework == "jax") continue;  // the dump's own lines
    trace.warnings.push_back(fmt::format(
        "{}:{}: a {} out-of-memory message that is not part of the TensorFlow dump is not read here "
        "(the dump takes the file): give it to `fragscope report` alone to have it explained",
        source.name(), m.line, m.framework));
  }
}

// Whether the dumps gave no layout and no count: the trace holds nothing but their OOM events.
bool KeptNoByteCount(const traces::Trace& trace) {
  for (const traces::Event& e : trace.events) {
    if (e.type != traces::EventType::kOom && e.type != traces::EventType::kMarker) return false;
  }
  for (const traces::StateSummary& s : trace.header.source.states) {
    if (s.in_use || s.reserved || s.largest_free) return false;
  }
  return true;
}

bool HasXlaStatistics(const std::vector<traces::OomMessage>& messages) {
  for (const traces::OomMessage& m : messages) {
    if (m.xla) return true;
  }
  return false;
}

bool HasJaxMessage(const std::vector<traces::OomMessage>& messages) {
  for (const traces::OomMessage& m : messages) {
    if (m.framework == "jax") return true;
  }
  return false;
}

// Whether a dump printed its occupancy bar: the shares of the pool in use and free, which no
// message gives (parsed again: only on the rare path of a dump without byte counts).
bool HasOccupancyBar(const Source& source) {
  for (const traces::TfBfcDump& d : traces::ParseTfBfcLog(source.bytes(), source.name())) {
    if (!d.occupancy.empty()) return true;
  }
  return false;
}

}  // namespace

Reader TfBfcLogReader() {
  return {
      .name = "TensorFlow BFC log",
      .description = "TensorFlow BFC OOM log (TensorFlow / XLA / JAX console output)",
      .sniff = [](std::string_view head) { return traces::LooksLikeTfBfcLog(head); },
      // One line or more per event (a dump's chunks; its frees of the dump before): never more
      // events than bytes. The event cap is checked as the blocks are read. A number the dump
      // cannot be read without is an error naming its line.
      .open = [](const Source& source, const traces::ReadLimits&) -> std::unique_ptr<EvidenceInput> {
        traces::Trace trace = traces::ParseTfBfcLogToTrace(source.bytes(), source.name());
        std::vector<traces::OomMessage> messages = traces::FindOomMessages(source.bytes());
        // JAX's usual OOM log: the BFC header and occupancy bar (no byte count), then XLA's
        // BufferAssignment statistics, which decide more than the bar: read as a message. Without
        // statistics, JAX's own error (PJRT's "Failed to allocate request for …") after the allocator's
        // warning line alone (no bar) says as much as that line and is JAX's: read as a message too,
        // so that its explanation and advice are JAX's (XLA_PYTHON_CLIENT_*), not TensorFlow's.
        if (KeptNoByteCount(trace) &&
            (HasXlaStatistics(messages) || (HasJaxMessage(messages) && !HasOccupancyBar(source)))) {
          std::vector<std::string> warnings = {
              HasXlaStatistics(messages)
                  ? fmt::format("{}: the allocator dump kept no byte count (only its header and occupancy bar); "
                                "XLA's memory statistics in the same log say more, so the log is read as an "
                                "out-of-memory message", source.name())
                  : fmt::format("{}: the allocator dump kept no byte count (only its header line); JAX's "
                                "out-of-memory error in the same log says as much and names the failure, so the "
                                "log is read as an out-of-memory message", source.name())};
          return MessagesInput(source, std::move(messages), std::move(warnings));
        }
        WarnOfOtherFrameworksMessages(source, messages, trace);
        return InputFromTrace(std::move(trace));
      },
  };
}

}  // namespace fragscope::evidence::readers
