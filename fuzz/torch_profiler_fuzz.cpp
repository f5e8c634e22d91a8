// libFuzzer target: the torch.profiler trace reader over arbitrary bytes (JSON, gzip or not).
// Either a TraceError, or a trace that keeps the reader's promises: one global order of events,
// times that never go back, every free ending a live allocation of its device with its size, no
// address live twice, tags in range, every event on a described device, OOMs without invented causes.
// Built by `fuzz/run.sh torch_profiler`. Any other exception, sanitizer report, hang or runaway
// memory is a finding.
#include <cstdint>
#include <map>
#include <string_view>

#include "fragscope/traces/torch_profiler.hpp"
#include "fuzz_check.hpp"
#include "trace_checks.hpp"

using fragscope::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace fragscope::traces;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)LooksLikeTorchProfilerTrace(bytes);
  ReadLimits limits;
  limits.max_events = 100'000;
  Trace trace;
  try {
    trace = ParseTorchProfilerTrace(bytes, "fuzz.json", limits);
  } catch (const TraceError&) {
    return 0;
  }
  fragscope::fuzz::CheckEventOrder(trace);
  std::map<std::pair<std::uint32_t, std::uint64_t>, Event> live;  // by device and address
  for (const Event& e : trace.events) {
    if (e.type == EventType::kAlloc) {
      // Ranges at different addresses may overlap in hostile evidence (the timeline counts that);
      // one address is never live twice.
      Check(e.size > 0 && e.address + e.size > e.address);
      Check(live.count({e.device, e.address}) == 0);
      live[{e.device, e.address}] = e;
    } else if (e.type == EventType::kFree) {
      const auto it = live.find({e.device, e.address});
      Check(it != live.end());
      Check(it->second.alloc_id == e.alloc_id && it->second.size == e.size);
      live.erase(it);
    } else if (e.type == EventType::kOom) {
      // "[OutOfMemory]" gives no limit: no cause but what a request above 4 EiB decides alone, and
      // a reserved count never below the bytes in use.
      Check(e.oom.cause == OomCause::kUnknown || e.oom.cause == OomCause::kRequestTooLarge);
      Check(!e.oom.Has(kOomReserved | kOomInUse) || e.oom.reserved >= e.oom.in_use);
    }
  }
  return 0;
}
