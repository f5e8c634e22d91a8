#include "fragscope/analysis/metrics.hpp"

#include <charconv>
#include <string>

#include <fmt/format.h>

namespace fragscope::analysis {

std::optional<BeforeRecording> BeforeRecordingOf(const traces::TraceHeader& header, std::uint32_t device) {
  const std::string prefix = fmt::format("pytorch.cuda:{}.before_recording.", device);
  BeforeRecording out;
  int found = 0;
  for (const auto& [key, value] : header.metadata) {
    if (key.size() <= prefix.size() || key.compare(0, prefix.size(), prefix) != 0) continue;
    std::uint64_t number = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc() || end != value.data() + value.size()) continue;  // not ours: ignored
    const std::string_view field = std::string_view(key).substr(prefix.size());
    if (field == "blocks") out.blocks = number, ++found;
    else if (field == "bytes") out.bytes = number, ++found;
    else if (field == "requested") out.requested = number, ++found;
  }
  if (found == 0) return std::nullopt;
  return out;
}

}  // namespace fragscope::analysis
