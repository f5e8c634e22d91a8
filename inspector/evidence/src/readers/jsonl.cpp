// JSON Lines, one event per line (`fragscope convert --to jsonl`), read whole by
// traces::ParseJsonl (docs/trace-format.md).
#include <cctype>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/jsonl.hpp"

namespace fragscope::evidence::readers {

Reader JsonlReader() {
  return {
      .name = "JSON Lines",
      .description = "JSON Lines (fragscope convert --to jsonl)",
      // The first thing after white space opens a JSON object.
      .sniff = [](std::string_view head) {
        std::size_t first = 0;
        while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
        return first < head.size() && head[first] == '{';
      },
      .open = [](const Source& source, const traces::ReadLimits& limits) {
        return InputFromTrace(traces::ParseJsonl(source.bytes(), source.name(), limits));
      },
  };
}

}  // namespace fragscope::evidence::readers
