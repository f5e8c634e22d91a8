// JSON Lines, one event per line (`fragscope convert --to jsonl`), read whole by
// traces::ParseJsonl (docs/trace-format.md).
#include <cctype>
#include <string_view>

#include "fragscope/evidence/readers.hpp"
#include "fragscope/traces/jsonl.hpp"

namespace fragscope::evidence::readers {
namespace {

// Whether `line` holds the member "type": "header" (white space allowed around the colon).
bool HasHeaderType(std::string_view line) {
  constexpr std::string_view kKey = "\"type\"", kValue = "\"header\"";
  for (std::size_t at = line.find(kKey); at != std::string_view::npos; at = line.find(kKey, at + 1)) {
    std::size_t p = at + kKey.size();
    const auto skip_space = [&] {
      while (p < line.size() && std::isspace(static_cast<unsigned char>(line[p]))) ++p;
    };
    skip_space();
    if (p >= line.size() || line[p] != ':') continue;
    ++p;
    skip_space();
    if (line.substr(p, kValue.size()) == kValue) return true;
  }
  return false;
}

}  // namespace

Reader JsonlReader() {
  return {
      .name = "JSON Lines",
      .description = "JSON Lines (fragscope convert --to jsonl)",
      // The first line is a JSON object with "type": "header" (in any key order). An object alone is
      // not enough: structured logs (one JSON object a line, an OOM message inside) and other JSON
      // files start with one too, and belong to the readers after this one.
      .sniff = [](std::string_view head) {
        std::size_t first = 0;
        while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
        if (first >= head.size() || head[first] != '{') return false;
        const std::size_t end = head.find('\n', first);
        // A first line longer than the sniffed bytes cannot be told apart: it is taken as ours.
        if (end == std::string_view::npos && head.size() >= kSniffBytes) return true;
        return HasHeaderType(head.substr(first, end == std::string_view::npos ? head.size() - first : end - first));
      },
      .open = [](const Source& source, const traces::ReadLimits& limits) {
        return InputFromTrace(traces::ParseJsonl(source.bytes(), source.name(), limits));
      },
  };
}

}  // namespace fragscope::evidence::readers
