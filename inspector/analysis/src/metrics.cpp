#include "fragscope/analysis/metrics.hpp"

namespace fragscope::analysis {

std::optional<BeforeRecording> BeforeRecordingOf(const traces::TraceHeader& header, std::uint32_t device) {
  const traces::BlocksBeforeRecording* before = header.source.BeforeRecording(device);
  if (before == nullptr) return std::nullopt;
  return BeforeRecording{before->blocks, before->bytes, before->requested, before->blocks_known};
}

}  // namespace fragscope::analysis
