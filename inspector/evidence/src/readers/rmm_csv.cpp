// RAPIDS RMM logging_resource_adaptor CSV logs, read whole by traces::ParseRmmCsv
// (docs/importers.md).
#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/rmm_csv.hpp"

namespace fragscope::evidence::readers {

Reader RmmCsvReader() {
  return {
      .name = "RMM log (CSV)",
      .description = "RMM CSV log (RAPIDS logging_resource_adaptor)",
      .sniff = [](std::string_view head) { return traces::LooksLikeRmmCsv(head); },
      .open = [](const Source& source, const traces::ReadLimits& limits) {
        return InputFromTrace(traces::ParseRmmCsv(source.bytes(), source.name(), limits));
      },
  };
}

}  // namespace fragscope::evidence::readers
