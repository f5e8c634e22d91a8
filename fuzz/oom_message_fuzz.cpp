// libFuzzer target: out-of-memory error messages (traces::FindOomMessages) and their diagnosis
// (analysis::DiagnoseMessage, compiled in from inspector/analysis) over arbitrary text. Checks what
// the parser promises: messages in order of their lines, each failure once (its repeats after it,
// in order), every size within the 4 EiB cap, a bounded text per message; and that every message
// gets a cause and an explanation. Built by
// `fuzz/run.sh oom_message`. Any exception, sanitizer report, hang or runaway memory is a finding.
#include <cstdint>
#include <string_view>

#include "fragscope/analysis/message_diagnosis.hpp"  // compiled in by fuzz/run.sh, instrumented
#include "fragscope/traces/byte_math.hpp"
#include "fragscope/traces/oom_message.hpp"
#include "fuzz_check.hpp"

using fragscope::fuzz::Check;

namespace {

void CheckSize(const std::optional<fragscope::traces::PrintedSize>& size) {
  if (size) Check(fragscope::traces::IsRepresentableSize(size->bytes));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const bool looks = LooksLikeOomMessage(text);
  const OomMessageScan scan = ScanOomMessages(text);
  const std::vector<OomMessage>& messages = scan.messages;
  Check(looks == (!messages.empty()) || text.find('\0') != std::string_view::npos);
  for (const TfNotAFailure& w : scan.not_failures) {
    Check(w.line >= 1);
    CheckSize(w.request);
  }
  if (!scan.not_failures.empty()) Check(HoldsTfNotAFailure(text));
  std::size_t last_line = 0;
  for (const OomMessage& m : messages) {
    Check(m.line >= 1 && m.line <= m.end_line);
    Check(m.line >= last_line);
    Check(m.offset <= size);
    Check(m.text.size() <= 8192 + 1);
    last_line = m.line;
    std::size_t repeat = m.line;
    for (std::size_t line : m.repeat_lines) {
      Check(line >= repeat);  // the same line too: a log whose newlines were lost
      repeat = line;
    }
    for (const auto* s : {&m.request, &m.total, &m.free, &m.allocated, &m.reserved, &m.unallocated,
                          &m.process_total, &m.allowed, &m.device_limit, &m.limit_available, &m.memory_limit,
                          &m.other_allocations, &m.private_pools}) {
      CheckSize(*s);
    }
    for (const auto& p : m.other_processes) Check(IsRepresentableSize(p.size.bytes));
    for (const auto& a : m.attempts) Check(IsRepresentableSize(a.bytes));
    const fragscope::analysis::MessageDiagnosis d = fragscope::analysis::DiagnoseMessage(m);
    Check(IsKnownCause(d.cause));
    Check(!d.explanation.empty());
  }
  return 0;
}
