// torch.profiler traces with memory events (Chrome trace JSON, gzip or not), read whole by
// traces::ParseTorchProfilerTrace (docs/importers.md, "torch.profiler traces").
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/torch_profiler.hpp"

namespace fragscope::evidence::readers {

Reader TorchProfilerReader() {
  return {
      .name = "torch.profiler trace",
      .description = "torch.profiler trace with memory events (profile_memory=True; .json or .json.gz)",
      // Before JSON Lines, whose sniff takes any text that opens a JSON object.
      .sniff = [](std::string_view head) { return traces::LooksLikeTorchProfilerTrace(head); },
      // The memory-event cap is checked as the JSON is read, before any event is built.
      .open = [](const Source& source, const traces::ReadLimits& limits) {
        return InputFromTrace(traces::ParseTorchProfilerTrace(source.bytes(), source.name(), limits));
      },
  };
}

}  // namespace fragscope::evidence::readers
