// TensorFlow / XLA / JAX BFC allocator OOM dumps, found anywhere in a console log, read whole by
// traces::ParseTfBfcLogToTrace (docs/importers.md).
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/tf_bfc_log.hpp"

namespace fragscope::evidence::readers {

Reader TfBfcLogReader() {
  return {
      .name = "TensorFlow BFC log",
      .description = "TensorFlow BFC OOM log (TensorFlow / XLA / JAX console output)",
      .sniff = [](std::string_view head) { return traces::LooksLikeTfBfcLog(head); },
      // One line or more per event (a dump's chunks; its frees of the dump before): never more
      // events than bytes. The event cap is checked as the blocks are read. A number the dump
      // cannot be read without is an error naming its line.
      .open = [](const Source& source, const traces::ReadLimits&) {
        return InputFromTrace(traces::ParseTfBfcLogToTrace(source.bytes(), source.name()));
      },
  };
}

}  // namespace fragscope::evidence::readers
