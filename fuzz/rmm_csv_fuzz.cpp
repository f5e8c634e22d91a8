// libFuzzer target: the RAPIDS RMM CSV log reader and writer over arbitrary text. Anything but a
// TraceError escaping, a broken invariant of the imported trace, a round trip through WriteRmmCsv
// that changes an action, pointer or size, a sanitizer report, a hang or runaway memory is a
// finding. Built by `fuzz/run.sh rmm_csv`.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>

#include "fragscope/traces/rmm_csv.hpp"
#include "fuzz_check.hpp"
#include "trace_checks.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)LooksLikeRmmCsv(text);
  Trace trace;
  try {
    trace = ParseRmmCsv(text, "fuzz.csv");
  } catch (const TraceError& e) {
    Check(e.offset() <= size);
    return 0;
  }
  // Every event's device is declared (RMM 0.x logs name theirs; later ones are device 0).
  Check(!trace.header.devices.empty());
  fragscope::fuzz::CheckEventOrder(trace);
  for (const Event& e : trace.events) {
    Check(trace.header.Device(e.device) != nullptr);
    Check(e.type == EventType::kAlloc || e.type == EventType::kFree || e.type == EventType::kOom);
    if (e.type == EventType::kAlloc) Check(e.rounded >= e.size || e.rounded < 256);  // wraps only near 2^64
  }
  // What the writer makes of it reads back as the same sequence of actions, pointers and sizes.
  std::ostringstream out;
  WriteRmmCsv(trace, out);
  const Trace again = ParseRmmCsv(out.str(), "fuzz-roundtrip.csv");
  Check(again.events.size() == trace.events.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const Event& a = trace.events[i];
    const Event& b = again.events[i];
    Check(a.type == b.type);
    if (a.type == EventType::kOom) {
      Check(a.oom.request == b.oom.request);
    } else {
      Check(a.address == b.address);
      // A free logged with size 0 is written with its allocation's size (RMM's replay wants one).
      if (a.type == EventType::kAlloc || a.size != 0) Check(a.size == b.size);
    }
    Check(a.stream == b.stream);
  }
  return 0;
}
