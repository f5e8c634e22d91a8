// torch.cuda.memory_summary() tables, found anywhere in log text, read whole by
// traces::ParseMemorySummaryToTrace (docs/importers.md, "PyTorch memory summaries"): a state, one
// moment per table. The out-of-memory messages of the same log are handed out beside it
// (EvidenceInput::messages()), so that `fragscope report` explains the failure the message records
// and checks its numbers against the table.
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fragscope/traces/pytorch_memory_summary.hpp"

namespace fragscope::evidence::readers {

Reader PytorchMemorySummaryReader() {
  return {
      .name = "PyTorch memory summary",
      .description = "PyTorch torch.cuda.memory_summary() tables (anywhere in log text)",
      .sniff = [](std::string_view head) { return traces::LooksLikeMemorySummary(head); },
      // One marker event per table: never more events than lines. A number of a table row that
      // cannot be read is an error naming its line.
      .open = [](const Source& source, const traces::ReadLimits&) -> std::unique_ptr<EvidenceInput> {
        traces::Trace trace = traces::ParseMemorySummaryToTrace(source.bytes(), source.name());
        traces::OomMessageScan scan = traces::ScanOomMessages(source.bytes());
        for (const traces::OomMessage& m : scan.messages)
          for (const std::string& problem : m.problems) trace.warnings.push_back(source.name() + ": " + problem);
        return InputFromTrace(std::move(trace), std::move(scan.messages));
      },
  };
}

}  // namespace fragscope::evidence::readers
