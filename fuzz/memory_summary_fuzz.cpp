// libFuzzer target: torch.cuda.memory_summary() tables (traces::ScanMemorySummaries and
// ParseMemorySummaryToTrace) over arbitrary text. Checks what the reader promises: tables in the
// order of their lines, every size within the 4 EiB cap, one marker and one state per table with
// the state's sequence number its marker's, errors only as TraceError at an offset inside the text,
// and the sniff accepting nothing the scan finds no table in. Built by `fuzz/run.sh memory_summary`.
// Any other exception, sanitizer report, hang or runaway memory is a finding.
#include <cstdint>
#include <string_view>

#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/pytorch_memory_summary.hpp"
#include "fuzz_check.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const MemorySummaryScan scan = ScanMemorySummaries(text);
  if (LooksLikeMemorySummary(text)) Check(!scan.summaries.empty());
  std::size_t last = 0;
  for (const MemorySummary& s : scan.summaries) {
    Check(s.line >= 1 && s.line <= s.end_line && s.line >= last && s.offset <= size);
    last = s.end_line;
    for (const SummaryMetric& m : s.metrics)
      for (const auto* row : {&m.all, &m.large_pool, &m.small_pool})
        if (*row)
          for (const auto& cell : (*row)->cells) Check(!cell || cell->unit >= 1);
    for (std::size_t i = 0; i < 5; ++i)  // the sizes
      if (s.metrics[i].all)
        for (const auto& cell : s.metrics[i].all->cells) Check(!cell || IsRepresentableSize(cell->value));
  }
  Trace trace;
  try {
    trace = ParseMemorySummaryToTrace(text, "fuzz.log");
  } catch (const TraceError& e) {
    Check(e.offset() <= size);
    return 0;
  }
  Check(trace.header.kind == EvidenceKind::kState);
  Check(trace.events.size() == trace.header.source.states.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    Check(trace.header.source.states[i].at_seq == trace.events[i].seq);
    Check(trace.header.Device(trace.header.source.states[i].device) != nullptr);
  }
  return 0;
}
