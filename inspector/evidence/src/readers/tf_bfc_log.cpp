// TensorFlow / XLA / JAX BFC allocator OOM dumps, found anywhere in a console log, read whole by
// traces::ParseTfBfcLogToTrace (docs/importers.md).
#include <fmt/format.h>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::evidence::readers {
namespace {

// The dump takes the whole file, so an OOM message of another framework in the same log (a paste
// of two runs, a wrapper script's output) would go unread without a word: each one is named.
void WarnOfOtherFrameworksMessages(const Source& source, traces::Trace& trace) {
  for (const traces::OomMessage& m : traces::FindOomMessages(source.bytes())) {
    if (m.framework == "tensorflow" || m.framework == "jax") continue;  // the dump's own lines
    trace.warnings.push_back(fmt::format(
        "{}:{}: a {} out-of-memory message that is not part of the TensorFlow dump is not read here "
        "(the dump takes the file): give it to `fragscope report` alone to have it explained",
        source.name(), m.line, m.framework));
  }
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
      .open = [](const Source& source, const traces::ReadLimits&) {
        traces::Trace trace = traces::ParseTfBfcLogToTrace(source.bytes(), source.name());
        WarnOfOtherFrameworksMessages(source, trace);
        return InputFromTrace(std::move(trace));
      },
  };
}

}  // namespace fragscope::evidence::readers
